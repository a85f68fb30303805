"""TSO task: security-constrained unit commitment on case118.

Env [`UnitCommitmentEnv`][powerzoojax.grid.UnitCommitmentEnv] (DC-OPF dispatch, 48 × 30 min, 5 % reserve,
4-step load preview: obs 410, action 108 on case118). Net load per bus =
`clip(load − 0.7·wind − 0.5·solar, 0.05, 1) · load_d_max` with each signal divided by
its max over the 48-step window. Data: the shipped SimBench EHV 2016 series (load, wind,
solar availability; `powerzoojax.data`), because the GB NESO files the reference uses are
not shipped; a `DataLoader`/`source` argument reads GB files when present. Splits:
`train` / `iid` (the dataset's frozen windows), `load_stress` (iid × 1.15),
`line_tightening` (iid, ratings × 0.85).

Case data: the benchmark tables of cases 118 and 14 carry their own unit-commitment
columns (ramps, minimum up/down times, start-up and no-load costs, initial state and keep
time), which [`make_uc_params`][powerzoojax.grid.make_uc_params] reads; a case without them gets the
case14 defaults (`CASE14_UC_DEFAULTS`: ramp 0.5 p_max/h, min up/down 2 steps, start-up
$1000, no-load $100/h, all on for 10 steps, initial output p_min). case118 gets the
benchmark line ratings `base_mva · deg2rad(8°) / |x|`.
"""

import math
from typing import Any
from functools import lru_cache

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from powerzoojax.case import CaseData, load_case
from powerzoojax.core._task import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.grid.transmission import UCParams, UCState, UnitCommitmentEnv, make_uc_params

TSO_SPLITS = ("train", "iid", "load_stress", "line_tightening")
LOAD_STRESS_FACTOR = 1.15
LINE_TIGHTENING_FACTOR = 0.85
WIND_FRAC, SOLAR_FRAC = 0.7, 0.5
BENCHMARK_ANGLE_DEG = 8.0
WINDOW_STEPS = 48
# The frozen benchmark's perfect load preview: obs 4G + L + 4 + 4 = 410 on
# case118. The case factories keep the reference's default 0 (obs 406); the ED / UC / SCUC
# variants, the presets and `TSOTask` build the benchmark env, so they default to it.
TSO_FORECAST_HORIZON = 4
_VIOLATION_TOL = 1e-6


# ----------------------------------------------------------------------------- profiles


def make_tso_net_load_profiles(
    n_steps: int = 48,
    wind_frac: float = WIND_FRAC,
    solar_frac: float = SOLAR_FRAC,
    load_d_max: Any = None,
    gross_demand_mw: Any = None,
    wind_mw: Any = None,
    solar_mw: Any = None,
    delta_t_hours: float = 0.5,
) -> np.ndarray:
    """Net-load profile from given or synthetic demand, wind and solar series.

    Given series are divided by their own max (at least 1); missing ones are the
    reference's synthetic shapes (`h = k·Δt`): demand `0.75 + 0.25 sin(2π(h−3)/24)`, wind
    `0.3 + 0.2 sin(2π(h−2)/24 + π)`, solar `0.4 max(cos(2π(h−12)/24), 0)` for
    `|h mod 24 − 12| < 6`. `net = clip(demand − wind_frac·wind − solar_frac·solar, 0.05, 1)`.

    **Arguments:**

    - `n_steps`: number of steps `T`.
    - `wind_frac`, `solar_frac`: weights of wind and solar in the net load.
    - `load_d_max`: `(D,)` peak loads [MW]; `None` returns shape factors.
    - `gross_demand_mw`, `wind_mw`, `solar_mw`: `(T,)` series [MW], or `None`.
    - `delta_t_hours`: step length [hours].

    **Returns:**

    A `(T, D)` NumPy array [MW], or `(T, 1)` shape factors when `load_d_max` is `None`.
    """
    if int(n_steps) <= 0:
        raise ValueError(f"make_tso_net_load_profiles: n_steps must be a positive integer, got {n_steps!r}")
    h = np.arange(int(n_steps)) * float(delta_t_hours)

    def given(name, series, synthetic):
        if series is None:
            return synthetic
        arr = np.asarray(series, np.float64)
        if arr.shape != (int(n_steps),) or not np.all(np.isfinite(arr)):
            raise ValueError(f"make_tso_net_load_profiles: {name} must be finite with shape ({n_steps},), got {arr.shape}")
        return arr / max(float(arr.max()), 1.0)

    demand = given("gross_demand_mw", gross_demand_mw, 0.75 + 0.25 * np.sin(2 * np.pi * (h - 3) / 24))
    wind = given("wind_mw", wind_mw, 0.3 + 0.2 * np.sin(2 * np.pi * (h - 2) / 24 + np.pi))
    solar_syn = np.where(np.abs(np.mod(h, 24) - 12) < 6, 0.4 * np.maximum(np.cos(2 * np.pi * (h - 12) / 24), 0.0), 0.0)
    solar = given("solar_mw", solar_mw, solar_syn)
    net = np.clip(demand - wind_frac * wind - solar_frac * solar, 0.05, 1.0)
    if load_d_max is None:
        return net[:, None]
    return net[:, None] * np.asarray(load_d_max, np.float64)[None, :]


@lru_cache(maxsize=8)
def _real_net_shape(split: str, source: str) -> np.ndarray:
    from powerzoojax.data import LOAD_ACTUAL_MW, SOLAR_AVAILABLE_PU, WIND_AVAILABLE_PU, DataLoader

    frame = DataLoader().load_signals(
        [LOAD_ACTUAL_MW, WIND_AVAILABLE_PU, SOLAR_AVAILABLE_PU], source=source, split=split, resample="30min"
    )
    return _window_net_shape(np.asarray(frame.values, np.float64))


def _window_net_shape(values: np.ndarray) -> np.ndarray:
    """`(T, 3)` load/wind/solar → `(T', )` net shape, each signal ÷ its 48-step window max."""
    n_win = values.shape[0] // WINDOW_STEPS
    if n_win < 1:
        raise ValueError(f"TSO profiles need at least {WINDOW_STEPS} rows of data, got {values.shape[0]}")
    win = values[: n_win * WINDOW_STEPS].reshape(n_win, WINDOW_STEPS, 3)
    win = win / np.maximum(win.max(axis=1, keepdims=True), 1e-9)
    net = np.clip(win[..., 0] - WIND_FRAC * win[..., 1] - SOLAR_FRAC * win[..., 2], 0.05, 1.0)
    return net.reshape(-1)


def tso_net_load_shape(split: str = "train", *, source: str = "simbench", data_loader=None) -> np.ndarray:
    """Real net-load shape for a data split, from `powerzoojax.data`.

    **Arguments:**

    - `split`: `train` or `iid` (the OOD splits use `iid`).
    - `source`: dataset.
    - `data_loader`: a [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.

    **Returns:**

    A `(T,)` NumPy array in [0.05, 1].
    """
    if split not in TSO_SPLITS:
        raise ValueError(f"unknown TSO split {split!r}; valid: {TSO_SPLITS}")
    data_split = "train" if split == "train" else "iid"
    if data_loader is None:
        return _real_net_shape(data_split, source)
    from powerzoojax.data import LOAD_ACTUAL_MW, SOLAR_AVAILABLE_PU, WIND_AVAILABLE_PU

    frame = data_loader.load_signals(
        [LOAD_ACTUAL_MW, WIND_AVAILABLE_PU, SOLAR_AVAILABLE_PU], source=source, split=data_split, resample="30min"
    )
    return _window_net_shape(np.asarray(frame.values, np.float64))


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


# ----------------------------------------------------------------------------- params


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


def _net_load_signals(source: str) -> tuple[str, str, str]:
    from powerzoojax.data import (
        LOAD_ACTUAL_MW,
        SOLAR_AVAILABLE_MW,
        SOLAR_AVAILABLE_PU,
        WIND_AVAILABLE_MW,
        WIND_AVAILABLE_PU,
    )

    if source == "gb":
        return LOAD_ACTUAL_MW, WIND_AVAILABLE_MW, SOLAR_AVAILABLE_MW
    return LOAD_ACTUAL_MW, WIND_AVAILABLE_PU, SOLAR_AVAILABLE_PU


def make_tso_net_load_profiles_from_data(
    data_loader,
    case: CaseData,
    split: str = "train",
    episode_start_idx: int = 0,
    n_steps: int = 48,
    wind_frac: float = WIND_FRAC,
    solar_frac: float = SOLAR_FRAC,
    allow_synthetic_fallback: bool = False,
    *,
    source: str | None = None,
) -> Float[Array, "n_steps n_loads"]:
    """Net-load profiles from data, scaled by `case.load_d_max`.

    Rows `episode_start_idx` .. `+ n_steps` of the `split` window (`train` / `iid`; OOD
    splits read `iid`) of load, wind and solar, each divided by its own max over those
    rows, composed as
    [`make_tso_net_load_profiles`][powerzoojax.grid.tasks.tso.make_tso_net_load_profiles].

    **Arguments:**

    - `data_loader`: a [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.
    - `case`: the case whose `load_d_max` scales the profile.
    - `split`: data split.
    - `episode_start_idx`: first row.
    - `n_steps`: number of rows.
    - `wind_frac`, `solar_frac`: weights of wind and solar in the net load.
    - `allow_synthetic_fallback`: on a failed load, warn and use the synthetic profiles
      instead of raising `RuntimeError`.
    - `source`: `"gb"` when the loader has the GB files, else the shipped SimBench EHV
      series (the default when the loader has no GB source).

    **Returns:**

    A `(n_steps, n_loads)` float32 array [MW].
    """
    d_max = np.asarray(case.load_d_max, np.float64)
    factor = _data_net_factor(
        data_loader, split, episode_start_idx, n_steps, wind_frac, solar_frac, source, allow_synthetic_fallback
    )
    return jnp.asarray(factor[:, None] * d_max[None, :], jnp.float32)


def _data_net_factor(
    data_loader, split: str, start: int, n_steps: int, wind_frac: float, solar_frac: float, source: str | None,
    allow_synthetic_fallback: bool,
) -> np.ndarray:
    """`(n_steps,)` net-load factor from rows `start` .. `start + n_steps` of a split."""
    import warnings

    from powerzoojax.data import DataLoader

    if split not in TSO_SPLITS:
        raise ValueError(f"unknown TSO split {split!r}; valid: {TSO_SPLITS}")
    loader = DataLoader() if data_loader is None else data_loader
    if source is None:
        source = "gb" if "gb" in loader.list_sources() else "simbench"
    start, n = int(start), int(n_steps)
    try:
        frame = loader.load_signals(
            list(_net_load_signals(source)), source=source, split="train" if split == "train" else "iid",
            resample="30min",
        )
        values = np.asarray(frame.values, np.float64)[max(start, 0) : start + n]
        if values.shape[0] != n or start < 0:
            raise ValueError(
                f"rows {start}..{start + n} are outside the {split!r} window ({frame.values.shape[0]} rows)"
            )
    except (FileNotFoundError, ImportError, ValueError) as err:
        if not allow_synthetic_fallback:
            raise RuntimeError(f"TSO net-load data could not be loaded ({source!r}, split {split!r}): {err}") from err
        warnings.warn(f"TSO net-load data unavailable ({err}); using SYNTHETIC profiles", UserWarning, stacklevel=3)
        return make_tso_net_load_profiles(n, wind_frac, solar_frac)[:, 0]
    scaled = values / np.maximum(np.nanmax(values, axis=0, keepdims=True), 1e-9)
    return make_tso_net_load_profiles(
        n, wind_frac, solar_frac, gross_demand_mw=scaled[:, 0], wind_mw=scaled[:, 1], solar_mw=scaled[:, 2]
    )[:, 0]


# Unit-commitment defaults the reference gives case14 when its table lacks them: ramp 0.5
# p_max/h, min up/down 2 steps, start-up $1000, no-load $100/h, all on for 10 steps, p_min.
CASE14_UC_DEFAULTS = dict(
    unit_ramp_up=0.5, unit_ramp_down=0.5, unit_min_up_time=2.0, unit_min_down_time=2.0, unit_startup_cost=1000.0,
    unit_no_load_cost=100.0, unit_init_state=1.0, unit_keep_time=10.0,
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


# ----------------------------------------------------------------------------- baselines


def tso_all_on_policy(params: UCParams):
    """Commit everything (+1), neutral dispatch preference (0).

    **Arguments:**

    - `params`: the episode's params.

    **Returns:**

    `policy(obs, state, key) -> action`.
    """
    n = params.case.n_units
    action = jnp.concatenate([jnp.ones((n,), jnp.float32), jnp.zeros((n,), jnp.float32)])
    return lambda obs, state, key: action


def tso_merit_order_policy(params: UCParams):
    """Commit units by ascending marginal cost at half output until
    `Σ p_max ≥ load·(1 + margin)` for the load of the step being decided; neutral dispatch
    preference.

    **Arguments:**

    - `params`: the episode's params.

    **Returns:**

    `policy(obs, state, key) -> action`.
    """
    n = params.case.n_units
    order = jnp.argsort(unit_merit_cost(params.case))
    cum_before = jnp.cumsum(params.case.unit_p_max[order]) - params.case.unit_p_max[order]
    zeros = jnp.zeros((n,), jnp.float32)

    def policy(obs, state: UCState, key):
        row = jnp.minimum(state.episode_start_idx + state.time_step, params.total_load_mw.shape[0] - 1)
        target = params.total_load_mw[row] * (1.0 + params.reserve_margin_frac)
        commit_sorted = cum_before < target
        commit = jnp.zeros((n,), bool).at[order].set(commit_sorted)
        return jnp.concatenate([jnp.where(commit, 1.0, -1.0).astype(jnp.float32), zeros])

    return policy


def unit_merit_cost(case: CaseData) -> Float[Array, " n_units"]:
    """Marginal cost of each unit at half its `p_max` (the merit-order key).

    **Arguments:**

    - `case`: the case.

    **Returns:**

    `(n_units,)` [$/MWh].
    """
    half = 0.5 * case.unit_p_max
    return (case.unit_cost_a * half + case.unit_cost_b) * half + case.unit_cost_c


_BASELINES = {"all_on": tso_all_on_policy, "merit_order": tso_merit_order_policy}


def _rollout_dict(env, params, key, policy) -> dict[str, Array]:
    """One episode as `{info key: (T,) array}` plus `reward` (the reference's rollout
    record; [`compute_tso_metrics`][powerzoojax.grid.tasks.tso.compute_tso_metrics] reads it)."""
    trace = episode_rollout(env, params, key, policy)
    return {**dict(trace.info), "reward": trace.reward}


def tso_all_on_rollout(env: UnitCommitmentEnv, params: UCParams, key) -> dict[str, Array]:
    """Reference baseline: every unit committed, neutral dispatch preference (the DC-OPF
    dispatches).

    **Arguments:**

    - `env`: the [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv].
    - `params`: its params.
    - `key`: PRNG key.

    **Returns:**

    `{info key: (max_steps,) array, "reward": (max_steps,) array}`.
    """
    return _rollout_dict(env, params, key, tso_all_on_policy(params))


def _fixed_count_policy(params: UCParams, n_commit: int):
    n = params.case.n_units
    if not 1 <= int(n_commit) <= n:
        raise ValueError(f"tso_merit_order_rollout: n_commit must be in 1..{n}, got {n_commit!r}")
    order = np.argsort(np.asarray(unit_merit_cost(params.case)), kind="stable")
    commit = np.full(n, -1.0, np.float32)
    commit[order[: int(n_commit)]] = 1.0
    action = jnp.concatenate([jnp.asarray(commit), jnp.zeros((n,), jnp.float32)])
    return lambda obs, state, key: action


def tso_merit_order_rollout(env: UnitCommitmentEnv, params: UCParams, key, n_commit: int | None = None) -> dict[str, Array]:
    """Priority-list baseline (see
    [`tso_merit_order_policy`][powerzoojax.grid.tasks.tso.tso_merit_order_policy]).

    Per step, the cheapest units until `Σ p_max ≥ load·(1 + margin)`, or with `n_commit`
    always that many cheapest units.

    **Arguments:**

    - `env`: the [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv].
    - `params`: its params.
    - `key`: PRNG key.
    - `n_commit`: fixed number of committed units; `None` follows the load.

    **Returns:**

    `{info key: (max_steps,) array, "reward": (max_steps,) array}`.
    """
    policy = tso_merit_order_policy(params) if n_commit is None else _fixed_count_policy(params, n_commit)
    return _rollout_dict(env, params, key, policy)


# ----------------------------------------------------------------------------- metrics


def _episode_mean(x: np.ndarray) -> float:
    """Sum over the time axis (last), mean over any leading (episode) axes."""
    return float(np.asarray(x, np.float64).sum(-1).mean())


def _record(rollout) -> dict[str, np.ndarray]:
    """Info arrays (and `reward`) of an `EpisodeTrace` or a rollout dict, as NumPy."""
    if isinstance(rollout, EpisodeTrace):
        rollout = {**dict(rollout.info), "reward": rollout.reward}
    return {k: np.asarray(v) for k, v in jax.tree.map(np.asarray, dict(rollout)).items()}


def _operating_cost(r: dict[str, np.ndarray]) -> np.ndarray:
    return r["gen_cost"] + r["startup_cost"] + r["no_load_cost"]


def compute_tso_metrics(rollout_results, baseline_results=None, merit_order=None) -> dict[str, float]:
    """Episode metrics of a TSO rollout.

    `total_operating_cost` = Σ (gen + start-up + no-load) [$]; `*_rate` = fraction of
    steps with the quantity above 1e-6 (reserve: the tracked shortfall, charged or not);
    `feasibility_rate` = fraction of safe steps. With `baseline_results`:
    `cost_vs_baseline_pct` = 100·(C − C_base)/C_base; with `merit_order` as well:
    `norm_score = (C_all_on − C)/(C_all_on − C_merit)`.

    **Arguments:**

    - `rollout_results`: an `EpisodeTrace` or the dict of
      [`tso_all_on_rollout`][powerzoojax.grid.tasks.tso.tso_all_on_rollout] (time on the
      last axis; leading episode axes averaged).
    - `baseline_results`: the same for a baseline (e.g. the all-on rollout), or `None`.
    - `merit_order`: the same for the merit-order baseline, or `None`.

    **Returns:**

    A dict of metric name to float.
    """
    r = _record(rollout_results)
    op_cost = _operating_cost(r)
    reserve = r["reserve_shortfall"]
    thermal = r["cost_thermal_overload"]
    out = {
        "total_operating_cost": _episode_mean(op_cost),
        "total_gen_cost": _episode_mean(r["gen_cost"]),
        "total_startup_cost": _episode_mean(r["startup_cost"]),
        "total_no_load_cost": _episode_mean(r["no_load_cost"]),
        "total_reward": _episode_mean(r["reward"]) if "reward" in r else float("nan"),
        "mean_reserve_shortfall": float(np.mean(reserve)),
        "total_reserve_shortfall": _episode_mean(reserve),
        "reserve_shortfall_rate": float((reserve > _VIOLATION_TOL).mean()),
        "mean_thermal_cost": float(np.mean(thermal)),
        "total_thermal_cost": _episode_mean(thermal),
        "total_thermal_overload": _episode_mean(thermal),
        "thermal_violation_rate": float((thermal > _VIOLATION_TOL).mean()),
        "total_commitment_switches": _episode_mean(r["commitment_switches"]),
        "commitment_switching_frequency": float(np.asarray(r["commitment_switches"], np.float64).mean()),
        "feasibility_rate": float(np.asarray(r["is_safe"], np.float64).mean()),
        "total_cost_violations": _episode_mean(r["cost_sum"]),
        "opf_convergence_rate": float(np.asarray(r["opf_converged"], np.float64).mean()),
    }
    if baseline_results is not None:
        base = _episode_mean(_operating_cost(_record(baseline_results)))
        if base > 0:
            out["cost_vs_baseline_pct"] = 100.0 * (out["total_operating_cost"] - base) / base
        if merit_order is not None:
            c_mer = _episode_mean(_operating_cost(_record(merit_order)))
            denom = base - c_mer
            out["norm_score"] = (base - out["total_operating_cost"]) / denom if abs(denom) > 1e-9 else float("nan")
    for k, v in out.items():
        if not math.isfinite(v):
            out[k] = float("nan")
    return out


# ----------------------------------------------------------------------------- comparison recipe


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


# ----------------------------------------------------------------------------- task


class TSOTask:
    """The TSO benchmark task (implements [`TaskSpec`][powerzoojax.core.TaskSpec]).

    **Arguments:**

    - `case_id`: `"118"` (the benchmark) or `"14"`.
    - `max_steps`: episode length [steps].
    - `forecast_horizon_steps`: load preview [steps].
    - `reserve_margin_frac`: reserve requirement [fraction of load].
    - `dcopf_max_iter`, `dcopf_tol`: DC-OPF iteration budget and tolerance.
    - `source`: dataset of the net-load profiles.
    - `data_loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the
      shipped data.
    - `synthetic`: use the synthetic net-load profile instead of data.
    """

    task_name = "tso"
    default_splits = TSO_SPLITS

    def __init__(
        self,
        case_id: str = "118",
        *,
        max_steps: int = 48,
        forecast_horizon_steps: int = TSO_FORECAST_HORIZON,
        reserve_margin_frac: float = 0.05,
        dcopf_max_iter: int = 30,
        dcopf_tol: float = 1e-3,
        source: str = "simbench",
        data_loader=None,
        synthetic: bool = False,
    ):
        self.case_id = str(case_id)
        self.max_steps = int(max_steps)
        self.synthetic = bool(synthetic)
        self._kwargs: dict[str, Any] = dict(
            forecast_horizon_steps=forecast_horizon_steps, reserve_margin_frac=reserve_margin_frac,
            dcopf_max_iter=dcopf_max_iter, dcopf_tol=dcopf_tol, source=source, data_loader=data_loader,
        )
        self._cache: dict[tuple[str, int], UCParams] = {}

    def _shape(self, split: str) -> np.ndarray:
        if self.synthetic:
            return np.tile(make_tso_net_load_profiles(WINDOW_STEPS)[:, 0], 2)
        return tso_net_load_shape(split, source=self._kwargs["source"], data_loader=self._kwargs["data_loader"])

    def make_params(self, split: str = "train", start: int = 0, *, max_steps: int | None = None) -> UCParams:
        """Params over the whole split pool, episodes starting at row `start`.

        **Arguments:**

        - `split`: data split.
        - `start`: first row of the episode (a traced leaf: changing it does not retrace).
        - `max_steps`: episode length [steps]; `None` takes the task's.

        **Returns:**

        [`UCParams`][powerzoojax.grid.transmission.UCParams].
        """
        n = self.max_steps if max_steps is None else int(max_steps)
        if (split, n) not in self._cache:
            self._cache[(split, n)] = _tso_params(
                self.case_id, self._shape(split), max_steps=n, split=split, **self._kwargs
            )
        params = self._cache[(split, n)]
        n_rows = params.load_profiles.shape[0]
        if not 0 <= int(start) <= n_rows - n:
            raise ValueError(f"TSOTask: start {start} outside 0..{n_rows - n} for split {split!r}")
        return eqx.tree_at(lambda p: p.fixed_episode_start_idx, params, jnp.asarray(int(start), jnp.int32))

    def make_env(self, split: str = "train") -> UnitCommitmentEnv:
        return UnitCommitmentEnv()

    def episode_params(
        self, split: str, episode_idx: int, n_episodes: int, max_steps: int, *, strategy: str = "uniform", seed: int = 0
    ) -> UCParams:
        n_rows = self._shape(split).shape[0]
        span = max(n_rows - int(max_steps), 0)
        if strategy == "uniform":
            start = int(round(episode_idx * span / max(n_episodes - 1, 1))) if n_episodes > 1 else 0
        elif strategy == "seeded":
            start = int(np.random.default_rng(seed * 997 + episode_idx).integers(0, span + 1))
        else:
            raise ValueError(f"TSOTask.episode_params: strategy must be 'uniform' or 'seeded', got {strategy!r}")
        return self.make_params(split, start, max_steps=max_steps)

    def rollout(self, env, params, key, policy_fn) -> EpisodeTrace:
        return episode_rollout(env, params, key, policy_fn)

    def baseline_names(self) -> tuple[str, ...]:
        return ("all_on", "merit_order", "no_control")

    def baseline_policy(self, name: str, params: UCParams):
        """The policy of a named baseline.

        **Arguments:**

        - `name`: one of `baseline_names()`.
        - `params`: the episode's params.

        **Returns:**

        `policy(obs, state, key) -> action (2 * n_units,)`.
        """
        if name == "no_control":
            name = "all_on"  # the reference point: commit everything, no dispatch bias
        if name not in _BASELINES:
            raise ValueError(f"TSOTask: unknown baseline {name!r}; valid: {self.baseline_names()}")
        return _BASELINES[name](params)

    def baseline_rollout(self, env, params, key, name: str) -> EpisodeTrace:
        return episode_rollout(env, params, key, self.baseline_policy(name, params))

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout=None) -> dict[str, float]:
        """`baseline_rollout`: None, one trace (its operating-cost gap is reported), or a
        dict with `all_on` and `merit_order` traces (adds `norm_score`)."""
        if isinstance(baseline_rollout, dict) and "all_on" in baseline_rollout:
            return compute_tso_metrics(agent_rollout, baseline_rollout["all_on"], baseline_rollout.get("merit_order"))
        out = compute_tso_metrics(agent_rollout)
        if baseline_rollout is not None:
            base = compute_tso_metrics(baseline_rollout)["total_operating_cost"]
            out["cost_reduction_pct"] = 100.0 * (base - out["total_operating_cost"]) / max(abs(base), 1e-9)
        return out

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("thermal_overload", "reserve_shortfall"), (0.0, 0.0), (1.0, 1.0))


__all__ = [
    "CASE14_UC_DEFAULTS", "LINE_TIGHTENING_FACTOR", "LOAD_STRESS_FACTOR",
    "TSO_COMPARISON_SCHEMA", "TSO_FORECAST_HORIZON", "TSO_SPLITS", "TSOTask",
    "compute_tso_metrics", "make_case14_with_uc_defaults", "make_comparison_tso_load_trace",
    "make_comparison_tso_params", "make_tso_case14_params", "make_tso_case118_params", "make_tso_ed_params",
    "make_tso_net_load_profiles", "make_tso_net_load_profiles_from_data", "make_tso_scuc_params",
    "make_tso_uc_params", "tso_all_on_policy", "tso_all_on_rollout", "tso_case", "tso_merit_order_policy",
    "tso_merit_order_rollout", "tso_net_load_shape", "unit_merit_cost",
]

