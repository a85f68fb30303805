"""The fixed comparison recipe of the TSO task: its net-load trace, its params and the
schema that describes them.
"""

from typing import Any

import numpy as np

from powerzoojax.grid.tasks.tso._constants import SOLAR_FRAC, TSO_FORECAST_HORIZON, WIND_FRAC
from powerzoojax.grid.tasks.tso._params import make_tso_case118_params
from powerzoojax.grid.tasks.tso._profiles import _data_net_factor
from powerzoojax.grid.transmission import UCParams


def make_comparison_tso_load_trace(
    n_steps: int = 48,
    delta_t_hours: float = 0.5,
    *,
    split: str = "train",
    episode_start_idx: int = 0,
    wind_frac: float = WIND_FRAC,
    solar_frac: float = SOLAR_FRAC,
    data_loader=None,
) -> np.ndarray:
    """Net-load factor of the fixed comparison recipe.

    Load, wind and solar each ÷ its max over the rows,
    `clip(load − wind_frac·wind − solar_frac·solar, 0.05, 1)`; data as
    [`make_tso_net_load_profiles_from_data`][powerzoojax.grid.tasks.tso.make_tso_net_load_profiles_from_data]
    (errors are raised, not replaced).

    **Arguments:**

    - `n_steps`: number of rows.
    - `delta_t_hours`: step length [hours].
    - `split`: data split.
    - `episode_start_idx`: first row of the `split` window.
    - `wind_frac`, `solar_frac`: weights of wind and solar.
    - `data_loader`: a [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.

    **Returns:**

    A `(n_steps,)` float32 array in [0.05, 1].
    """
    del delta_t_hours  # the data fix the step (30 min); kept for the reference signature
    factor = _data_net_factor(data_loader, split, episode_start_idx, n_steps, wind_frac, solar_frac, None, False)
    return np.asarray(factor, np.float32)


def make_comparison_tso_params(
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    reserve_margin_frac: float = 0.05,
    *,
    split: str = "train",
    episode_start_idx: int = 0,
    data_loader=None,
) -> UCParams:
    """The fixed comparison recipe.

    Case118 (benchmark ratings), one agent, commitment and reserve on, load
    [`make_comparison_tso_load_trace`][powerzoojax.grid.tasks.tso.make_comparison_tso_load_trace]
    × `load_d_max`, reward scale 1e-4, DC-OPF dispatch, 4-step load preview (obs 410,
    action 108; see `TSO_COMPARISON_SCHEMA`).

    **Arguments:**

    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `reserve_margin_frac`: reserve requirement [fraction of load].
    - `split`: data split.
    - `episode_start_idx`: first row of the `split` window.
    - `data_loader`: a [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.

    **Returns:**

    [`UCParams`][powerzoojax.grid.transmission.UCParams].
    """
    trace = make_comparison_tso_load_trace(
        max_steps, delta_t_hours, split=split, episode_start_idx=episode_start_idx, data_loader=data_loader,
    )
    return make_tso_case118_params(
        load_profiles=trace, max_steps=max_steps, delta_t_hours=delta_t_hours,
        reserve_margin_frac=reserve_margin_frac, enable_uc=True, enable_reserve=True,
        forecast_horizon_steps=TSO_FORECAST_HORIZON, reward_scale=1e-4, solver_mode=1, split=split,
    )


TSO_COMPARISON_SCHEMA: dict[str, Any] = {
    "case_id": "case118",
    "n_units": 54,
    "n_agents": 1,
    "max_steps": 48,
    "delta_t_minutes": 30,
    "delta_t_hours": 0.5,
    "load_source": "GB files when the DataLoader has them, else the shipped SimBench EHV 2016 series",
    "load_signal_keys": "load.actual_mw, wind/solar availability via DataLoader; net factor from make_comparison_tso_load_trace",
    "enable_uc": True,
    "enable_reserve": True,
    "reserve_margin_frac": 0.05,
    "action_shape": (108,),
    "action_range": "[-1, 1]",
    "action_layout": "[commit_intent(54) | dispatch_preference(54)]",
    "action_semantics": "commit_intent > 0 -> unit ON (min up/down enforced); preference biases the DC-OPF in the ramp window",
    "solver_mode_jax": "dc_opf",
    "obs_shape_jax": (410,),
    "reward_components": ["gen_cost", "startup_cost", "no_load_cost"],
    "reward_scale": 1e-4,
    "cost_channels_jax": ["thermal_overload", "reserve_shortfall"],
}
