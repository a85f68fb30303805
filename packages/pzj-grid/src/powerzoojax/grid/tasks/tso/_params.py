"""The TSO task's case and env params: case118 with the benchmark line ratings (or case14),
the unit-commitment defaults filled in, and the params factories of the benchmark and its
ED / UC / SCUC variants.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from powerzoojax.case import CaseData, load_case
from powerzoojax.grid.tasks.tso._constants import (
    BENCHMARK_ANGLE_DEG,
    CASE14_UC_DEFAULTS,
    LINE_TIGHTENING_FACTOR,
    LOAD_STRESS_FACTOR,
    TSO_FORECAST_HORIZON,
    TSO_SPLITS,
)
from powerzoojax.grid.tasks.tso._profiles import tso_net_load_shape
from powerzoojax.grid.transmission import UCParams, make_uc_params


def tso_case(case_id: str = "118", *, line_factor: float = 1.0) -> CaseData:
    """The TSO case: case118 with benchmark ratings (`base·deg2rad(8°)/|x|`), or case14.

    **Arguments:**

    - `case_id`: `"118"` or `"14"`.
    - `line_factor`: multiplier of every finite rating (`line_tightening`).

    **Returns:**

    A [`CaseData`][powerzoojax.case.CaseData].
    """
    case_id = str(case_id).lower().removeprefix("case")
    if case_id not in ("118", "14"):
        raise ValueError(f"TSO cases are '118' and '14', got {case_id!r}")
    case = load_case(case_id)
    cap = np.asarray(case.line_cap, np.float64)
    if case_id == "118":
        cap = float(case.base_mva) * np.deg2rad(BENCHMARK_ANGLE_DEG) / np.abs(np.asarray(case.line_x, np.float64))
    rated = cap < 1e5
    cap = np.where(rated, cap * float(line_factor), cap)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return eqx.tree_at(
        lambda c: (c.line_cap, c.line_floor, c.line_rate_a),
        case,
        (f32(cap), f32(-cap), f32(np.where(rated, cap, 0.0))),
    )


def _tso_params(
    case_id: str,
    load_profiles=None,
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    reserve_margin_frac: float = 0.05,
    enable_uc: bool = True,
    enable_reserve: bool = True,
    forecast_horizon_steps: int = 0,
    reward_scale: float = 1e-4,
    cost_thermal_weight: float = 1.0,
    solver_mode: int = 1,
    dcopf_max_iter: int = 30,
    dcopf_tol: float = 1e-3,
    sample_start_on_reset: bool = False,
    fixed_episode_start_idx: int = 0,
    data_loader=None,
    split: str = "train",
    source: str = "simbench",
    opf_screen_rows: int | None = None,
) -> UCParams:
    if split not in TSO_SPLITS:
        raise ValueError(f"unknown TSO split {split!r}; valid: {TSO_SPLITS}")
    case = tso_case(case_id, line_factor=LINE_TIGHTENING_FACTOR if split == "line_tightening" else 1.0)
    d_max = np.asarray(case.load_d_max, np.float64)
    if load_profiles is None:
        shape = tso_net_load_shape(split, source=source, data_loader=data_loader)
        load_profiles = shape[:, None] * d_max[None, :]
    else:
        load_profiles = np.asarray(load_profiles, np.float64)
        if load_profiles.ndim == 1 or (load_profiles.ndim == 2 and load_profiles.shape[1] == 1):
            load_profiles = load_profiles.reshape(-1, 1) * d_max[None, :]  # a shape factor
    if split == "load_stress":
        load_profiles = load_profiles * LOAD_STRESS_FACTOR
    return make_uc_params(
        make_case14_with_uc_defaults(case),
        load_profiles=load_profiles,
        max_steps=max_steps,
        delta_t_hours=delta_t_hours,
        steps_per_day=round(24 / delta_t_hours),
        reserve_margin_frac=reserve_margin_frac,
        enable_uc=enable_uc,
        enable_reserve=enable_reserve,
        forecast_horizon_steps=forecast_horizon_steps,
        reward_scale=reward_scale,
        cost_thermal_weight=cost_thermal_weight,
        solver_mode=solver_mode,
        dcopf_max_iter=dcopf_max_iter,
        dcopf_tol=dcopf_tol,
        sample_start_on_reset=sample_start_on_reset,
        fixed_episode_start_idx=fixed_episode_start_idx,
        opf_screen_rows=opf_screen_rows,
    )


def make_tso_case118_params(
    load_profiles=None,
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    reserve_margin_frac: float = 0.05,
    enable_uc: bool = True,
    enable_reserve: bool = True,
    forecast_horizon_steps: int = 0,
    reward_scale: float = 1e-4,
    cost_thermal_weight: float = 1.0,
    solver_mode: int = 1,
    dcopf_max_iter: int = 30,
    dcopf_tol: float = 1e-3,
    sample_start_on_reset: bool = False,
    fixed_episode_start_idx: int = 0,
    data_loader=None,
    split: str = "train",
    *,
    source: str = "simbench",
    opf_screen_rows: int | None = None,
) -> UCParams:
    """Unit-commitment params of the TSO task on case118 (benchmark ratings).

    The DC-OPF tolerance defaults to 1e-3 on the interior point's scaled KKT error: the
    TSO's dispatch is a linear-cost program with every line monitored, where float32
    iterates plateau near 1e-4, so a tighter tolerance would report optimal points as
    unconverged depending on round-off.

    **Arguments:**

    - `load_profiles`: `(T, 118)` loads [MW] or a `(T,)` shape factor × `load_d_max`;
      `None` takes the real net-load shape of `split`.
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `reserve_margin_frac`: spinning reserve requirement [fraction of load].
    - `enable_uc`: the agent commits units.
    - `enable_reserve`: the reserve requirement is charged.
    - `forecast_horizon_steps`: steps of load preview in the observation.
    - `reward_scale`: multiplier of the cost-based reward.
    - `cost_thermal_weight`: weight of the thermal overload in the reward.
    - `solver_mode`: 0 agent dispatch, 1 DC-OPF dispatch (see
      [`make_uc_params`][powerzoojax.grid.transmission.make_uc_params]).
    - `dcopf_max_iter`, `dcopf_tol`: DC-OPF iteration budget and tolerance.
    - `sample_start_on_reset`: draw the episode's start row on reset.
    - `fixed_episode_start_idx`: start row when not sampled.
    - `data_loader`: the [`DataLoader`][powerzoojax.data.DataLoader] of the net-load data;
      `None` uses the shipped `source` data.
    - `split`: data split of the default profile.
    - `source`: dataset of the default profile.
    - `opf_screen_rows`: rows of the screened DC-OPF (see
      [`make_uc_params`][powerzoojax.grid.transmission.make_uc_params]); 0 puts every
      rated line in every step's LP.

    **Returns:**

    [`UCParams`][powerzoojax.grid.transmission.UCParams].
    """
    return _tso_params(
        "118", load_profiles, max_steps=max_steps, delta_t_hours=delta_t_hours,
        reserve_margin_frac=reserve_margin_frac, enable_uc=enable_uc, enable_reserve=enable_reserve,
        forecast_horizon_steps=forecast_horizon_steps, reward_scale=reward_scale,
        cost_thermal_weight=cost_thermal_weight, solver_mode=solver_mode, dcopf_max_iter=dcopf_max_iter,
        dcopf_tol=dcopf_tol, sample_start_on_reset=sample_start_on_reset,
        fixed_episode_start_idx=fixed_episode_start_idx, data_loader=data_loader, split=split, source=source,
        opf_screen_rows=opf_screen_rows,
    )


def make_tso_case14_params(
    load_profiles=None,
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    reserve_margin_frac: float = 0.05,
    enable_uc: bool = True,
    enable_reserve: bool = True,
    forecast_horizon_steps: int = 0,
    reward_scale: float = 1e-4,
    solver_mode: int = 1,
    dcopf_max_iter: int = 30,
    dcopf_tol: float = 1e-3,
    *,
    cost_thermal_weight: float = 1.0,
    sample_start_on_reset: bool = False,
    fixed_episode_start_idx: int = 0,
    data_loader=None,
    split: str = "train",
    source: str = "simbench",
    opf_screen_rows: int | None = None,
) -> UCParams:
    """As [`make_tso_case118_params`][powerzoojax.grid.tasks.tso.make_tso_case118_params] on
    case14 (small sanity / debug task).

    **Arguments:**

    - `load_profiles`, `max_steps`, `delta_t_hours`, `reserve_margin_frac`, `enable_uc`,
      `enable_reserve`, `forecast_horizon_steps`, `reward_scale`, `solver_mode`,
      `dcopf_max_iter`, `dcopf_tol`, `cost_thermal_weight`, `sample_start_on_reset`,
      `fixed_episode_start_idx`, `data_loader`, `split`, `source`, `opf_screen_rows`: as for
      `make_tso_case118_params` (`load_profiles` of shape `(T, 14)` or `(T,)`).

    **Returns:**

    [`UCParams`][powerzoojax.grid.transmission.UCParams].
    """
    return _tso_params(
        "14", load_profiles, max_steps=max_steps, delta_t_hours=delta_t_hours,
        reserve_margin_frac=reserve_margin_frac, enable_uc=enable_uc, enable_reserve=enable_reserve,
        forecast_horizon_steps=forecast_horizon_steps, reward_scale=reward_scale,
        cost_thermal_weight=cost_thermal_weight, solver_mode=solver_mode, dcopf_max_iter=dcopf_max_iter,
        dcopf_tol=dcopf_tol, sample_start_on_reset=sample_start_on_reset,
        fixed_episode_start_idx=fixed_episode_start_idx, data_loader=data_loader, split=split, source=source,
        opf_screen_rows=opf_screen_rows,
    )


def make_tso_ed_params(
    case_id: str = "118",
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    *,
    forecast_horizon_steps: int = TSO_FORECAST_HORIZON,
    **kwargs,
) -> UCParams:
    """Economic dispatch variant: commitment and reserve off (DC-OPF dispatch).

    **Arguments:**

    - `case_id`: `"118"` or `"14"`.
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `forecast_horizon_steps`: load preview [steps]; the benchmark's 4 by default (obs 410
      on case118).
    - `**kwargs`: as [`make_tso_case118_params`][powerzoojax.grid.tasks.tso.make_tso_case118_params].

    **Returns:**

    [`UCParams`][powerzoojax.grid.transmission.UCParams].
    """
    return _tso_params(
        case_id, max_steps=max_steps, delta_t_hours=delta_t_hours, enable_uc=False, enable_reserve=False,
        forecast_horizon_steps=forecast_horizon_steps, **kwargs,
    )


def make_tso_uc_params(
    case_id: str = "118",
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    *,
    forecast_horizon_steps: int = TSO_FORECAST_HORIZON,
    **kwargs,
) -> UCParams:
    """Unit commitment without the reserve requirement; the shortfall is still reported in
    `info`.

    **Arguments:**

    - `case_id`: `"118"` or `"14"`.
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `forecast_horizon_steps`: load preview [steps], 4 by default.
    - `**kwargs`: as [`make_tso_case118_params`][powerzoojax.grid.tasks.tso.make_tso_case118_params].

    **Returns:**

    [`UCParams`][powerzoojax.grid.transmission.UCParams].
    """
    return _tso_params(
        case_id, max_steps=max_steps, delta_t_hours=delta_t_hours, enable_uc=True, enable_reserve=False,
        forecast_horizon_steps=forecast_horizon_steps, **kwargs,
    )


def make_tso_scuc_params(
    case_id: str = "118",
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    reserve_margin_frac: float = 0.05,
    *,
    forecast_horizon_steps: int = TSO_FORECAST_HORIZON,
    **kwargs,
) -> UCParams:
    """Security-constrained UC: commitment and reserve on; the frozen TSO benchmark env, obs
    410 / action 108 on case118.

    **Arguments:**

    - `case_id`: `"118"` or `"14"`.
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `reserve_margin_frac`: reserve requirement [fraction of load].
    - `forecast_horizon_steps`: load preview [steps], 4 by default.
    - `**kwargs`: as [`make_tso_case118_params`][powerzoojax.grid.tasks.tso.make_tso_case118_params].

    **Returns:**

    [`UCParams`][powerzoojax.grid.transmission.UCParams].
    """
    return _tso_params(
        case_id, max_steps=max_steps, delta_t_hours=delta_t_hours, enable_uc=True, enable_reserve=True,
        reserve_margin_frac=reserve_margin_frac, forecast_horizon_steps=forecast_horizon_steps, **kwargs,
    )


_INTEGER_UC_COLUMNS = ("unit_min_up_time", "unit_min_down_time", "unit_init_state", "unit_keep_time")


def make_case14_with_uc_defaults(base_case: CaseData) -> CaseData:
    """`base_case` with every missing unit-commitment column filled with the case14 defaults.

    The TSO factories apply it to every case they build.

    **Arguments:**

    - `base_case`: the case.

    **Returns:**

    A [`CaseData`][powerzoojax.case.CaseData] (`CASE14_UC_DEFAULTS`; initial output
    `p_min`); `base_case` unchanged when its UC columns are present.
    """
    import dataclasses

    wanted = [*CASE14_UC_DEFAULTS, "unit_init_power"]
    fill = {}
    for name in wanted:
        if getattr(base_case, name) is None:
            value = base_case.unit_p_min if name == "unit_init_power" else CASE14_UC_DEFAULTS[name]
            dtype = jnp.int32 if name in _INTEGER_UC_COLUMNS else jnp.float32
            fill[name] = jnp.broadcast_to(jnp.asarray(value, dtype), (base_case.n_units,))
    return dataclasses.replace(base_case, **fill) if fill else base_case
