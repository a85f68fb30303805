"""Security-constrained unit commitment env: the agent commits and biases dispatch."""

from typing import Any, overload

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import (
    Box,
    Environment,
    EnvParams,
    EnvState,
    Invariant,
    denormalize_action,
    make_box,
    stack_costs,
    time_features,
)
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.core._guard import checked_profiles
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.grid.transmission._invariants import unit_commitment_laws
from powerzoojax.physics._dc_opf import (  # noqa: F401
    DCOPF_OBJECTIVES,
    UNLIMITED_MW,
    DCOPFSetup,
    dc_opf,
    make_dc_opf_setup,
)
from powerzoojax.physics import (
    DCNetwork,
    dc_power_flow,
    dc_thermal_check,
    generation_cost,
    load_line_flows,
    make_dc_network,
    proportional_dispatch,
)
from powerzoojax.physics._status import SolverStatus, status_code
from powerzoojax.physics._working_dtype import working_float_dtype
from powerzoojax.core import _precision as hp

UC_CONSTRAINT_NAMES = ("thermal_overload", "reserve_shortfall", "min_updown")
_TIME_CAP = 1000  # time-in-state saturates here (only "long enough" matters)
_TIME_OBS_SCALE = 200.0
_LINE_COUNT_TOL_MW = 1e-2
# Rows of the screened dispatch LP (see `LineScreen`): on case118's TSO task under random
# commitments at most 15 lines could bind on a step, 1.5 on average (benchmarks/results/tso_uc.md).
DEFAULT_OPF_SCREEN_ROWS = 16
# `opf_screen_rows=None` screens only setups with at least this many times as many
# monitored lines (case118: 186; case14 and smaller keep the full LP).
_SCREEN_MIN_RATIO = 4
# A line enters the screened LP when its flow could come within this of a limit: covers
# the float32 rounding of the bound (sums of ~50 terms of at most a few GW).
_SCREEN_MARGIN_MW = 1.0


class LineScreen(eqx.Module):
    """Bounds on each monitored line's flow over the dispatches a step allows (see
    [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv]).

    For units `lo ≤ p ≤ hi` with `Σp = Σlo + room`, weak duality bounds the flow's unit
    part for every `λ`: `m·p ≤ m·lo + λ·room + Σ max(m − λ, 0)·(hi − lo)` (and the mirror
    image from below); the breakpoints `λ` are quantiles of the line's unit PTDFs `m`,
    so the bound is close to the exact one (a fractional knapsack) without sorting.

    **Arguments:**

    - `lam`: `(n_mon, n_lambda)` the breakpoints of each monitored line.
    - `above`, `below`: `(n_units, n_mon, n_lambda)` `max(m − λ, 0)` and `max(λ − m, 0)`.
    """

    lam: Float[Array, "n_mon n_lambda"]
    above: Float[Array, "n_units n_mon n_lambda"]
    below: Float[Array, "n_units n_mon n_lambda"]


_SCREEN_BREAKPOINTS = 8  # λ per line: on case118's TSO task as tight as the exact bound to 2 %


def make_line_screen(dcopf: DCOPFSetup) -> LineScreen:
    """The `LineScreen` of a DC-OPF setup's monitored lines (host)."""
    m_u = np.asarray(dcopf.mon_ptdf_units_t, np.float64)  # (G, n_mon)
    n_units = m_u.shape[0]
    ranks = np.unique(np.round(np.linspace(0, n_units - 1, _SCREEN_BREAKPOINTS)).astype(int))
    lam = np.sort(m_u, axis=0)[ranks].T  # (n_mon, n_lambda)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return LineScreen(
        lam=f32(lam),
        above=f32(np.maximum(m_u[:, :, None] - lam[None], 0.0)),
        below=f32(np.maximum(lam[None] - m_u[:, :, None], 0.0)),
    )


class UCState(EnvState):
    """State of [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv].

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `unit_power_mw`: `(n_units,)` realised output [MW].
    - `line_flow_mw`: `(n_lines,)` flows [MW].
    - `unit_status`: `(n_units,)` 1 on, 0 off.
    - `time_in_state`: `(n_units,)` steps in the current status.
    - `last_dispatch`: `(n_units,)` last output [MW] (the ramp reference).
    - `startup_cost_accum`: start-up cost of the episode so far [$].
    - `episode_start_idx`: first profile row of the episode.
    - `is_safe`: no limit violated on the last step.
    - `n_violations`: violated limits on the last step.
    - `total_cost`: operating cost of the last step [$].
    """
    unit_power_mw: Float[Array, " n_units"]
    line_flow_mw: Float[Array, " n_lines"]
    unit_status: Int[Array, " n_units"]
    time_in_state: Int[Array, " n_units"]
    last_dispatch: Float[Array, " n_units"]
    startup_cost_accum: Float[Array, ""]
    episode_start_idx: Int[Array, ""]
    is_safe: Bool[Array, ""]
    n_violations: Int[Array, ""]
    total_cost: Float[Array, ""]


class UCParams(EnvParams):
    """Params of [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv]; build
    with [`make_uc_params`][powerzoojax.grid.transmission.make_uc_params].

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `network`: its [`DCNetwork`][powerzoojax.physics.DCNetwork].
    - `dcopf`: its [`DCOPFSetup`][powerzoojax.physics.DCOPFSetup].
    - `load_profiles`: `(T, n_loads)` loads [MW].
    - `load_line_flow_mw`: `(T, n_lines)` flows caused by each row's loads [MW].
    - `total_load_mw`: `(T,)` total load per row [MW].
    - `ramp_up_mw`, `ramp_down_mw`: `(n_units,)` ramp limits per step [MW].
    - `min_up_steps`, `min_down_steps`: `(n_units,)` minimum up and down times [steps].
    - `startup_cost`: `(n_units,)` [$].
    - `no_load_cost_per_step`: `(n_units,)` [$ per step].
    - `init_status`: `(n_units,)` 1 on, 0 off at reset.
    - `init_time_in_state`: `(n_units,)` steps already spent in that state.
    - `init_dispatch`: `(n_units,)` output at reset [MW].
    - `fixed_episode_start_idx`: first profile row of an episode.
    - `reserve_margin_frac`: reserve requirement [fraction of load].
    - `reward_scale`: multiplier of the reward.
    - `cost_thermal_weight`: weight of the thermal overload in the reward.
    - `dispatch_preference_weight`: weight of the agent's dispatch preference in the OPF.
    - `inv_line_scale`, `inv_unit_scale`, `inv_total_capacity`: observation normalisers
      [1/MW].
    - `cost_obs`: `(n_units,)` normalised marginal cost at half output.
    - `invalid_load_profiles`: set by `with_load_profiles` when non-finite values given
      inside `jit` were replaced by 0.
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `steps_per_day`: steps in one day (static).
    - `forecast_horizon_steps`: steps of load preview in the observation (static).
    - `enable_uc`: the agent commits units (static).
    - `enable_reserve`: the reserve requirement is charged (static).
    - `solver_mode`: 0 agent dispatch, 1 DC-OPF dispatch (static).
    - `sample_start_on_reset`: draw the start row on reset (static).
    - `dcopf_max_iter`, `dcopf_tol`: DC-OPF iteration cap and tolerance (static).
    - `line_screen`: the `LineScreen` of the monitored lines, `None` when every monitored
      line enters the LP.
    - `opf_screen_rows`: rows of the screened LP (static; 0 without a screen).
    """

    case: CaseData
    network: DCNetwork
    dcopf: DCOPFSetup
    load_profiles: Float[Array, "n_profile_steps n_loads"]
    load_line_flow_mw: Float[Array, "n_profile_steps n_lines"]
    total_load_mw: Float[Array, " n_profile_steps"]
    ramp_up_mw: Float[Array, " n_units"]
    ramp_down_mw: Float[Array, " n_units"]
    min_up_steps: Int[Array, " n_units"]
    min_down_steps: Int[Array, " n_units"]
    startup_cost: Float[Array, " n_units"]
    no_load_cost_per_step: Float[Array, " n_units"]
    init_status: Int[Array, " n_units"]
    init_time_in_state: Int[Array, " n_units"]
    init_dispatch: Float[Array, " n_units"]
    fixed_episode_start_idx: Int[Array, ""]
    reserve_margin_frac: Float[Array, ""]
    reward_scale: Float[Array, ""]
    cost_thermal_weight: Float[Array, ""]
    dispatch_preference_weight: Float[Array, ""]
    inv_line_scale: Float[Array, " n_lines"]
    inv_unit_scale: Float[Array, " n_units"]
    inv_total_capacity: Float[Array, ""]
    # Marginal cost at half output, normalised (the reference shows cost_b, its linear
    # coefficient; ours is c + slope terms, so the comparable number is the MC).
    cost_obs: Float[Array, " n_units"]
    # Set by with_load_profiles: True when non-finite profile values given inside jit were
    # replaced by 0 (reported on every step as info["invalid_load_profiles"]).
    invalid_load_profiles: Bool[Array, ""] | None = eqx.field(default=None, kw_only=True)
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
    forecast_horizon_steps: int = eqx.field(static=True, default=0, kw_only=True)
    enable_uc: bool = eqx.field(static=True, default=True, kw_only=True)
    enable_reserve: bool = eqx.field(static=True, default=True, kw_only=True)
    solver_mode: int = eqx.field(static=True, default=1, kw_only=True)
    sample_start_on_reset: bool = eqx.field(static=True, default=False, kw_only=True)
    dcopf_max_iter: int = eqx.field(static=True, default=30, kw_only=True)
    dcopf_tol: float = eqx.field(static=True, default=1e-4, kw_only=True)
    line_screen: LineScreen | None = eqx.field(default=None, kw_only=True)
    opf_screen_rows: int = eqx.field(static=True, default=0, kw_only=True)

    def with_load_profiles(self, load_profiles: ArrayLike) -> "UCParams":
        """These params with new load profiles (usable inside `jit`/`vmap`).

        **Arguments:**

        - `load_profiles`: `(T', n_loads)` loads [MW]; keep `T' >= start + max_steps`.

        **Returns:**

        New [`UCParams`][powerzoojax.grid.transmission.UCParams]. A wrong shape raises
        `ValueError`; non-finite values raise outside `jit` and are replaced by 0 inside it,
        flagged as `info["invalid_load_profiles"]` on every step.
        """
        profiles, invalid = checked_profiles(
            "UCParams.with_load_profiles", "load_profiles", load_profiles, self.load_profiles.shape[1]
        )
        return eqx.tree_at(
            lambda p: (p.load_profiles, p.load_line_flow_mw, p.total_load_mw, p.invalid_load_profiles),
            self,
            (profiles, load_line_flows(self.network, profiles), jnp.sum(profiles, axis=-1), invalid),
            is_leaf=lambda x: x is None,
        )


@overload
def _unit_array(name: str, value: Any, n_units: int, default: np.ndarray, *, integer: bool = False) -> np.ndarray: ...


@overload
def _unit_array(name: str, value: Any, n_units: int, default: None, *, integer: bool = False) -> np.ndarray | None: ...


def _unit_array(name: str, value: Any, n_units: int, default: np.ndarray | None, *, integer: bool = False) -> np.ndarray | None:
    if value is None:
        return default
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = np.full(n_units, arr)
    if arr.shape != (n_units,):
        raise ValueError(f"make_uc_params: {name} must be a scalar or have shape (n_units,) = ({n_units},), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number) and arr.dtype != bool:
        raise ValueError(f"make_uc_params: {name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"make_uc_params: {name} must be finite, got {arr.tolist()}")
    if integer and not np.all(arr == np.round(arr)):
        raise ValueError(f"make_uc_params: {name} must hold whole numbers of steps, got {arr.tolist()}")
    return arr


def make_uc_params(
    case: CaseData,
    load_profiles: ArrayLike | None = None,
    max_steps: int = 48,
    delta_t_hours: float | int = 0.5,
    steps_per_day: int = 48,
    reserve_margin_frac: float | int = 0.05,
    enable_uc: bool = True,
    enable_reserve: bool = True,
    forecast_horizon_steps: int = 0,
    reward_scale: float | int = 1e-4,
    cost_thermal_weight: float | int = 1.0,
    solver_mode: int = 1,
    dcopf_max_iter: int = 30,
    dcopf_tol: float = 1e-4,
    sample_start_on_reset: bool = False,
    fixed_episode_start_idx: int = 0,
    dispatch_preference_weight: float | int = 0.01,
    *,
    opf_objective: str = "linear",
    ramp_up_frac: Any = None,
    ramp_down_frac: Any = None,
    min_up_steps: Any = None,
    min_down_steps: Any = None,
    startup_cost: Any = None,
    no_load_cost: Any = None,
    init_state: Any = None,
    keep_time: Any = None,
    init_power: Any = None,
    opf_screen_rows: int | None = None,
) -> UCParams:
    """Validate inputs on the host and build [`UCParams`][powerzoojax.grid.transmission.UCParams].

    Unit-commitment data come from the case's own columns (`unit_ramp_up`,
    `unit_min_up_time`, `unit_startup_cost`, ...: the benchmark tables of cases 14, 29gb
    and 118 carry them); an argument given here overrides the case's column, and a column
    the case lacks takes the default named below. Scalars broadcast to every unit.
    `enable_uc=False` ignores them: no start-up/no-load cost, min up/down 1, all on,
    dispatch `p_min`.

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `load_profiles`: `(T, n_loads)` loads [MW]; `None` takes the nominal
      `(d_max + d_min)/2` tiled over `fixed_episode_start_idx + max_steps` rows.
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `reserve_margin_frac`: reserve requirement [fraction of load].
    - `enable_uc`: the agent commits units.
    - `enable_reserve`: the reserve requirement is charged.
    - `forecast_horizon_steps`: steps of load preview in the observation.
    - `reward_scale`: multiplier of the reward.
    - `cost_thermal_weight`: weight of the thermal overload in the reward.
    - `solver_mode`: 0 agent dispatch, 1 DC-OPF dispatch.
    - `dcopf_max_iter`, `dcopf_tol`: DC-OPF iteration cap and tolerance.
    - `sample_start_on_reset`: draw the start row on reset.
    - `fixed_episode_start_idx`: first profile row when not drawn.
    - `dispatch_preference_weight`: weight of the agent's dispatch preference in the OPF.
    - `opf_objective`: `"linear"` `mc_c · p` or `"polynomial"` (see
      [`make_dc_opf_setup`][powerzoojax.physics.make_dc_opf_setup]).
    - `ramp_up_frac`, `ramp_down_frac`: ramp limits [fraction of `p_max` per hour]
      (absent: unlimited).
    - `min_up_steps`, `min_down_steps`: [steps] (absent: 1).
    - `startup_cost`: [$] (absent: 0).
    - `no_load_cost`: [$/h] (absent: 0).
    - `init_state`: 1/0 at reset (absent: all on).
    - `keep_time`: signed steps already spent in that state (absent: 200).
    - `init_power`: output at reset [MW] (absent: `p_min·status`).
    - `opf_screen_rows`: with more monitored lines than this, each step's DC-OPF takes
      only this many line rows, those whose flow could reach a limit (the answer is the
      same; see [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv]);
      `None` takes `DEFAULT_OPF_SCREEN_ROWS` (16) on cases with at least four times as
      many monitored lines, else 0; 0 always solves with every monitored line.

    **Returns:**

    [`UCParams`][powerzoojax.grid.transmission.UCParams].
    """
    fn = "make_uc_params"
    if not isinstance(case, CaseData):
        raise TypeError(f"{fn}: case must be a CaseData from powerzoojax.case.load_case, got {type(case).__name__}")
    max_steps = positive_int(fn, "max_steps", max_steps)
    steps_per_day = positive_int(fn, "steps_per_day", steps_per_day)
    dcopf_max_iter = positive_int(fn, "dcopf_max_iter", dcopf_max_iter)
    if opf_screen_rows is not None and (
        isinstance(opf_screen_rows, bool) or not isinstance(opf_screen_rows, (int, np.integer)) or opf_screen_rows < 0
    ):
        raise ValueError(f"{fn}: opf_screen_rows must be an int >= 0 or None, got {opf_screen_rows!r}")
    delta_t_hours = finite_scalar(fn, "delta_t_hours", delta_t_hours, positive=True)
    reserve_margin_frac = finite_scalar(fn, "reserve_margin_frac", reserve_margin_frac, non_negative=True)
    reward_scale = finite_scalar(fn, "reward_scale", reward_scale)
    cost_thermal_weight = finite_scalar(fn, "cost_thermal_weight", cost_thermal_weight, non_negative=True)
    dcopf_tol = finite_scalar(fn, "dcopf_tol", dcopf_tol, positive=True)
    dispatch_preference_weight = finite_scalar(fn, "dispatch_preference_weight", dispatch_preference_weight, non_negative=True)
    if isinstance(forecast_horizon_steps, bool) or not isinstance(forecast_horizon_steps, (int, np.integer)):
        raise TypeError(f"{fn}: forecast_horizon_steps must be an int, got {forecast_horizon_steps!r}")
    if forecast_horizon_steps < 0:
        raise ValueError(f"{fn}: forecast_horizon_steps must be >= 0, got {forecast_horizon_steps}")
    if opf_objective not in DCOPF_OBJECTIVES:
        raise ValueError(f"{fn}: opf_objective must be one of {DCOPF_OBJECTIVES}, got {opf_objective!r}")
    if solver_mode not in (0, 1) or isinstance(solver_mode, bool):
        raise ValueError(f"{fn}: solver_mode must be 0 (DC power flow) or 1 (DC-OPF), got {solver_mode!r}")
    if isinstance(fixed_episode_start_idx, bool) or not isinstance(fixed_episode_start_idx, (int, np.integer)):
        raise TypeError(f"{fn}: fixed_episode_start_idx must be an int, got {fixed_episode_start_idx!r}")
    if fixed_episode_start_idx < 0:
        raise ValueError(f"{fn}: fixed_episode_start_idx must be >= 0, got {fixed_episode_start_idx}")
    for flag_name, flag in (("enable_uc", enable_uc), ("enable_reserve", enable_reserve), ("sample_start_on_reset", sample_start_on_reset)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{fn}: {flag_name} must be a bool, got {flag!r}")

    n_units, n_loads = case.n_units, case.n_loads
    need_rows = int(fixed_episode_start_idx) + max_steps
    if load_profiles is None:
        nominal = 0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
        profiles = np.tile(nominal, (need_rows, 1))
    else:
        profiles = np.asarray(load_profiles)
        if profiles.ndim != 2 or profiles.shape[1] != n_loads:
            raise ValueError(f"{fn}: load_profiles must have shape (T, n_loads) = (T, {n_loads}), got shape {profiles.shape}")
        if not np.issubdtype(profiles.dtype, np.number):
            raise ValueError(f"{fn}: load_profiles must be numeric, got dtype {profiles.dtype}")
        if not np.all(np.isfinite(profiles)):
            t, d = (int(i) for i in np.argwhere(~np.isfinite(profiles))[0])
            raise ValueError(f"{fn}: load_profiles must be finite; found {profiles[t, d]} at row {t}, load {d}")
        if profiles.shape[0] < need_rows:
            raise ValueError(
                f"{fn}: load_profiles has {profiles.shape[0]} rows; UC load rows are not wrapped, so it needs at least "
                f"fixed_episode_start_idx + max_steps = {need_rows}"
            )
    profiles = profiles.astype(np.float64)

    p_min = np.asarray(case.unit_p_min, np.float64)
    p_max = np.asarray(case.unit_p_max, np.float64)
    ones = np.ones(n_units)

    def case_column(value: Any, field: str) -> Any:
        column = getattr(case, field)
        return np.asarray(column) if value is None and column is not None else value

    ramp_up_frac = case_column(ramp_up_frac, "unit_ramp_up")
    ramp_down_frac = case_column(ramp_down_frac, "unit_ramp_down")
    min_up_steps = case_column(min_up_steps, "unit_min_up_time")
    min_down_steps = case_column(min_down_steps, "unit_min_down_time")
    startup_cost = case_column(startup_cost, "unit_startup_cost")
    no_load_cost = case_column(no_load_cost, "unit_no_load_cost")
    init_state = case_column(init_state, "unit_init_state")
    keep_time = case_column(keep_time, "unit_keep_time")
    init_power = case_column(init_power, "unit_init_power")
    ramp_up = _unit_array("ramp_up_frac", ramp_up_frac, n_units, None)
    ramp_down = _unit_array("ramp_down_frac", ramp_down_frac, n_units, None)
    # Absent ramp data: a window of p_max per step, i.e. no ramp limit.
    ramp_up_mw = p_max.copy() if ramp_up is None else ramp_up * p_max * delta_t_hours
    ramp_down_mw = p_max.copy() if ramp_down is None else ramp_down * p_max * delta_t_hours
    if np.any(ramp_up_mw < 0) or np.any(ramp_down_mw < 0):
        raise ValueError(f"{fn}: ramp fractions must be >= 0")
    min_up = _unit_array("min_up_steps", min_up_steps, n_units, ones, integer=True)
    min_down = _unit_array("min_down_steps", min_down_steps, n_units, ones, integer=True)
    startup = _unit_array("startup_cost", startup_cost, n_units, np.zeros(n_units))
    no_load = _unit_array("no_load_cost", no_load_cost, n_units, np.zeros(n_units))
    status = _unit_array("init_state", init_state, n_units, ones)
    if not np.all(np.isin(status, (0.0, 1.0))):
        raise ValueError(f"{fn}: init_state must hold 0 (off) or 1 (on), got {status.tolist()}")
    keep = _unit_array("keep_time", keep_time, n_units, np.full(n_units, 200.0), integer=True)
    time_in_state = np.clip(np.abs(keep), 0, _TIME_CAP)
    dispatch0 = _unit_array("init_power", init_power, n_units, p_min * status)
    if not enable_uc:
        startup, no_load = np.zeros(n_units), np.zeros(n_units)
        min_up, min_down = ones, ones
        status, time_in_state, dispatch0 = ones, np.full(n_units, 200.0), p_min.copy()

    network = make_dc_network(case)
    half = 0.5 * p_max
    merit = (np.asarray(case.unit_cost_a, np.float64) * half + np.asarray(case.unit_cost_b, np.float64)) * half + np.asarray(
        case.unit_cost_c, np.float64
    )
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    i32 = lambda x: jnp.asarray(np.asarray(x).astype(np.int32))  # noqa: E731
    profiles32 = f32(profiles)
    dcopf = make_dc_opf_setup(case, objective=opf_objective)
    n_mon = dcopf.mon_idx.shape[0]
    if opf_screen_rows is None:
        # Screening pays where the full LP is several times the screened one.
        opf_screen_rows = DEFAULT_OPF_SCREEN_ROWS if n_mon >= _SCREEN_MIN_RATIO * DEFAULT_OPF_SCREEN_ROWS else 0
    screened = solver_mode == 1 and 0 < int(opf_screen_rows) < n_mon
    return UCParams(
        case=case,
        network=network,
        dcopf=dcopf,
        load_profiles=profiles32,
        load_line_flow_mw=load_line_flows(network, profiles32),
        total_load_mw=f32(profiles.sum(axis=1)),
        ramp_up_mw=f32(ramp_up_mw),
        ramp_down_mw=f32(ramp_down_mw),
        min_up_steps=i32(min_up),
        min_down_steps=i32(min_down),
        startup_cost=f32(startup),
        no_load_cost_per_step=f32(no_load * delta_t_hours),
        init_status=i32(status),
        init_time_in_state=i32(time_in_state),
        init_dispatch=f32(dispatch0),
        fixed_episode_start_idx=jnp.asarray(int(fixed_episode_start_idx), jnp.int32),
        reserve_margin_frac=f32(reserve_margin_frac),
        reward_scale=f32(reward_scale),
        cost_thermal_weight=f32(cost_thermal_weight),
        dispatch_preference_weight=f32(dispatch_preference_weight),
        inv_line_scale=f32(1.0 / np.maximum(np.abs(np.asarray(case.line_cap, np.float64)), 1.0)),
        inv_unit_scale=f32(1.0 / np.maximum(p_max, 1.0)),
        inv_total_capacity=f32(1.0 / max(float(p_max.sum()), 1.0)),
        cost_obs=f32(merit / max(float(np.max(np.abs(merit))) if n_units else 1.0, 1.0)),
        max_steps=max_steps,
        delta_t_hours=delta_t_hours,
        steps_per_day=steps_per_day,
        forecast_horizon_steps=int(forecast_horizon_steps),
        enable_uc=bool(enable_uc),
        enable_reserve=bool(enable_reserve),
        solver_mode=int(solver_mode),
        sample_start_on_reset=bool(sample_start_on_reset),
        dcopf_max_iter=dcopf_max_iter,
        dcopf_tol=dcopf_tol,
        line_screen=make_line_screen(dcopf) if screened else None,
        opf_screen_rows=int(opf_screen_rows) if screened else 0,
    )


class _Dispatch(eqx.Module):
    unit_power_mw: Array
    line_flow_mw: Array
    converged: Array
    status: Array
    n_iter: Array
    line_slack_mw: Array
    balance_gap_mw: Array
    full_lp: Array


def _opf_fields(opf: Any) -> tuple[Array, ...]:
    """What the env keeps of a `DCOPFResult`."""
    return opf.p_mw, opf.line_flow_mw, opf.converged, status_code(opf.status), opf.n_iter, opf.line_violation_mw


def _flow_bounds(
    params: UCParams, lo: Float[Array, " n_units"], hi: Float[Array, " n_units"], demand: Float[Array, ""],
    load_flow_mon: Float[Array, " n_mon"],
) -> tuple[Float[Array, " n_mon"], Float[Array, " n_mon"]]:
    """Upper and lower bounds [MW] on each monitored line's flow over every dispatch
    `lo ≤ p ≤ hi`, `Σp = clip(demand, Σlo, Σhi)` (see `LineScreen`)."""
    screen, setup = params.line_screen, params.dcopf
    if screen is None:
        raise ValueError("_flow_bounds: the params have no line screen (opf_screen_rows=0)")
    width = hi - lo
    room = jnp.clip(demand, jnp.sum(lo), jnp.sum(hi)) - jnp.sum(lo)
    base = hp.matmul(lo, setup.mon_ptdf_units_t) - load_flow_mon
    rise = jnp.min(screen.lam * room + hp.einsum("g,glr->lr", width, screen.above), axis=1)
    fall = jnp.max(screen.lam * room - hp.einsum("g,glr->lr", width, screen.below), axis=1)
    return base + rise, base + fall


def _screened_opf(
    params: UCParams,
    node_load: Float[Array, " n_nodes"],
    lo: Float[Array, " n_units"],
    hi: Float[Array, " n_units"],
    cost_c: Float[Array, " n_units"],
    load_flow: Float[Array, " n_lines"],
) -> tuple[tuple[Array, ...], Bool[Array, ""]]:
    """The DC-OPF with only the `opf_screen_rows` monitored lines nearest to binding as
    rows, and whether it had to be solved again with every monitored line.

    A line whose flow cannot reach a limit over every dispatch the step allows
    (`_flow_bounds`) cannot change the optimum: the LP without its row has the same
    feasible dispatches, so the same answer. When more lines than rows could reach a limit,
    or a line left out is over a limit at the answer, the full LP runs (a loop of zero or
    one trip: under `vmap` a batch pays for it only when one of its instances needs it).
    That fallback's answer carries no derivative.
    """
    setup, k = params.dcopf, params.opf_screen_rows
    sg = jax.lax.stop_gradient
    hi = jnp.maximum(hi, lo)
    mon = setup.mon_idx
    cap, floor = setup.line_cap[mon], setup.line_floor[mon]
    flow_max, flow_min = _flow_bounds(params, sg(lo), sg(hi), sg(jnp.sum(node_load)), sg(load_flow[mon]))
    excess = jnp.maximum(flow_max - cap, floor - flow_min)
    may_bind = excess > -_SCREEN_MARGIN_MW
    rows = jnp.sort(jax.lax.top_k(excess, k)[1])
    sub = eqx.tree_at(
        lambda s: (s.mon_idx, s.mon_ptdf_units_t, s.mon_ptdf_t),
        setup,
        (mon[rows], setup.mon_ptdf_units_t[:, rows], setup.mon_ptdf_t[:, rows]),
    )
    kwargs = dict(max_iter=params.dcopf_max_iter, tol=params.dcopf_tol)
    # Load outside the committed range: the dispatch is the violated bounds whatever the
    # LP does (`dc_opf`), so its rows are lifted and it starts optimal instead of pivoting
    # on lines no unit can relieve. The same test as `dc_opf`'s.
    demand, span = jnp.sum(node_load), jnp.maximum(jnp.max(hi - lo), 1.0)
    capacity_ok = (demand >= jnp.sum(lo) - 1e-6 * span) & (demand <= jnp.sum(hi) + 1e-6 * span)
    lifted = jnp.asarray(UNLIMITED_MW, setup.line_cap.dtype)
    opf = dc_opf(
        sub, node_load, p_min=lo, p_max=hi, cost_c=cost_c, load_flow_mw=load_flow,
        line_cap=jnp.where(capacity_ok, setup.line_cap, lifted),
        line_floor=jnp.where(capacity_ok, setup.line_floor, -lifted),
        **kwargs,
    )
    # Against the real limits (those of the LP may be lifted).
    violation = jnp.sum(
        jnp.maximum(opf.line_flow_mw - setup.line_cap, 0.0) + jnp.maximum(setup.line_floor - opf.line_flow_mw, 0.0)
    )
    opf = eqx.tree_at(lambda r: r.line_violation_mw, opf, violation)
    flows = opf.line_flow_mw[mon]
    left_out = jnp.ones(mon.shape, bool).at[rows].set(False)
    over = left_out & ((flows > cap) | (flows < floor))
    need_full = capacity_ok & ((jnp.sum(may_bind.astype(jnp.int32)) > k) | jnp.any(over))
    small = _opf_fields(opf)

    full_setup = jax.tree.map(sg, setup)  # the loop carries no tangents (no reverse mode through it)

    def solve_full(carry: tuple) -> tuple:
        # The inputs pass through the loop's flag: loop-invariant, XLA would hoist the
        # solve out of the loop and run it on every step.
        go, inputs, _ = carry
        load_c, lo_c, hi_c, cost_c_c, flow_c = jax.tree.map(lambda x: jnp.where(go, x, jnp.zeros_like(x)), inputs)
        full = dc_opf(full_setup, load_c, p_min=lo_c, p_max=hi_c, cost_c=cost_c_c, load_flow_mw=flow_c, **kwargs)
        return jnp.asarray(False), inputs, _opf_fields(full)

    inputs = jax.tree.map(sg, (node_load, lo, hi, cost_c, load_flow))
    _, _, full = jax.lax.while_loop(lambda c: c[0], solve_full, (need_full, inputs, jax.tree.map(sg, small)))
    return jax.tree.map(lambda f, s: jnp.where(need_full, f, s), full, small), need_full


class UnitCommitmentEnv(Environment):
    """Unit commitment + economic dispatch over a DC network.

    Action `(2G,)` in [-1, 1]: `[commit_intent | dispatch_preference]`. A unit is asked
    ON when its intent is > 0; minimum up/down times override the request (a unit that has
    not been ON for `min_up` steps stays ON, OFF for `min_down` stays OFF). Dispatch lies
    in the ramp window `[max(p_min, last − ramp_down), min(p_max, last + ramp_up)]` of the
    committed units: in `solver_mode=1` a DC-OPF picks it, its linear cost tilted by
    `−α · denorm(preference, lo, hi)` (α = `dispatch_preference_weight`); in
    `solver_mode=0` the preference is the set-point and a DC power flow balances it at
    the slack units.
    Observation `(4G + L + 4 + H,)`: unit status · time in state / 200 · last dispatch /
    `max(p_max, 1)` · marginal cost at half output `/ max(max MC, 1)` · line flows / `max(|cap|, 1)` ·
    total load / `max(Σp_max, 1)` · reserve ratio `(Σ p_max·status − load)/max(load, 1)`
    · sin, cos of the time of day · `H` future total loads (perfect forecast).
    Reward `−reward_scale · (TC(p) + start-up + no-load)` [$ per step].
    Costs `(thermal_overload, reserve_shortfall, min_updown)`: MW beyond line limits ×
    weight; `max(0, load·(1 + margin) − Σ p_max·commit)` [MW]; `min_updown` is always 0
    (the rule is enforced, not penalised; kept for the reference's channel layout).
    Info `opf_converged` is the solver's flag (met its tolerance, also on a best-effort
    answer to an infeasible step); `opf_status` says whether the step was feasible (the
    `status_code` of its `SolverStatus`; 1, `infeasible`: load outside the committed ramp
    windows — random commitments often are — or line limits unmeetable; the dispatch is then best-effort, `unserved_mw`
    and the reserve/thermal costs price it). The reference's ADMM flag also fails on infeasible
    steps, so its convergence rate corresponds to our fraction of OPTIMAL steps.
    Load rows are `episode_start_idx + t` (not wrapped): the profile must hold
    `start + max_steps` rows (checked on the host).
    With more monitored lines than `opf_screen_rows`, a step's DC-OPF takes as rows only
    the `opf_screen_rows` lines whose flow comes nearest to a limit over every dispatch
    the step's windows and load allow (a bound per line, `LineScreen`): a line that cannot
    reach a limit cannot change the optimum, so the answer is the full LP's. When more
    lines could reach a limit, or a line left out ends over one, the step solves the full
    LP instead (`info["opf_full_lp"]`).
    State, observation, reward and info take the params' floating dtype: float32 as
    `make_uc_params` builds them, float64 when a caller casts them under x64 (to check
    derivatives against finite differences, say). The cost vector is float32.
    """
    def action_dim(self, params: UCParams) -> int:
        """Length of the action vector.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        `2 · n_units`: commitment signals then dispatch preferences.
        """
        return 2 * params.case.n_units

    def obs_dim(self, params: UCParams) -> int:
        """Length of the observation vector.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        `4 · n_units + n_lines + 4 + forecast_horizon_steps`.
        """
        return 4 * params.case.n_units + params.case.n_lines + 4 + params.forecast_horizon_steps

    def observation_space(self, params: UCParams) -> Box:
        return make_box(-np.inf, np.inf, (self.obs_dim(params),))

    def action_space(self, params: UCParams) -> Box:
        return make_box(-1.0, 1.0, (self.action_dim(params),))

    def physics_invariants(self, params: UCParams) -> tuple[Invariant, ...]:
        # Off units idle; committed units within their limits when the dispatch is OPTIMAL.
        return unit_commitment_laws(params)

    def constraint_names(self, params: UCParams) -> tuple[str, ...]:
        return UC_CONSTRAINT_NAMES

    def iteration_count_keys(self, params: UCParams) -> tuple[str, ...]:
        # The DC-OPF interior point's count (solver_mode 1); solver_mode 0 reports a constant 0.
        return ("opf_iterations",) if params.solver_mode == 1 else ()

    def _row(self, state_start: Int[Array, ""], t: Int[Array, ""], params: UCParams) -> Int[Array, ""]:
        return jnp.minimum(state_start + t, params.load_profiles.shape[0] - 1)

    def _dispatch(
        self,
        params: UCParams,
        row: Int[Array, ""],
        commit: Float[Array, " n_units"],
        lo: Float[Array, " n_units"],
        hi: Float[Array, " n_units"],
        preference: Float[Array, " n_units"] | None,
    ) -> _Dispatch:
        load = params.load_profiles[row]
        load_flow = params.load_line_flow_mw[row]
        if params.solver_mode == 1:
            cost_c = params.case.unit_cost_c
            if preference is not None:
                # The preference tilts the linear cost toward its set-point in [lo, hi].
                cost_c = cost_c - params.dispatch_preference_weight * denormalize_action(preference, lo, hi)
            node_load = load if params.network.loads_are_nodes else hp.matmul(params.network.loads_to_nodes, load)
            if params.line_screen is None:
                opf = dc_opf(
                    params.dcopf, node_load, p_min=lo, p_max=hi, cost_c=cost_c, load_flow_mw=load_flow,
                    max_iter=params.dcopf_max_iter, tol=params.dcopf_tol,
                )
                fields, full = _opf_fields(opf), jnp.asarray(False)
            else:
                fields, full = _screened_opf(params, node_load, lo, hi, cost_c, load_flow)
            p_mw, flows, converged, status, n_iter, violation = fields
            # Load the committed units cannot cover stays unserved (reported, and priced by the
            # reserve channel) rather than landing on a slack unit that may be off.
            gap = params.total_load_mw[row] - jnp.sum(p_mw)
            return _Dispatch(p_mw, flows, converged, status, n_iter, violation, gap, full)
        case = params.case
        if preference is None:
            setpoint = proportional_dispatch(params.total_load_mw[row], case.unit_p_min * commit, case.unit_p_max * commit)
        else:
            setpoint = jnp.clip(denormalize_action(preference, case.unit_p_min, case.unit_p_max), lo, hi)
        flow = dc_power_flow(params.network, setpoint, load, load_flow)
        power = flow.unit_power_mw * commit
        # Zeroing an off slack unit unbalances the network: flows from the realised output.
        line_flow = hp.matmul(power, params.network.ptdf_units_t) - load_flow
        zero = jnp.zeros((), working_float_dtype(params.total_load_mw))
        return _Dispatch(
            power, line_flow, jnp.asarray(True), status_code(SolverStatus.successful), jnp.asarray(0, jnp.int32), zero,
            params.total_load_mw[row] - jnp.sum(power), jnp.asarray(False),
        )

    def _obs(self, state: UCState, params: UCParams) -> Float[Array, " obs_dim"]:
        case = params.case
        row = self._row(state.episode_start_idx, state.time_step, params)
        load = params.total_load_mw[row]
        dtype = working_float_dtype(params.total_load_mw)
        status = state.unit_status.astype(dtype)
        capacity = jnp.sum(case.unit_p_max * status)
        parts = [
            status,
            state.time_in_state.astype(dtype) / _TIME_OBS_SCALE,
            state.last_dispatch * params.inv_unit_scale,
            params.cost_obs,
            state.line_flow_mw * params.inv_line_scale,
            jnp.reshape(load * params.inv_total_capacity, (1,)),
            jnp.reshape((capacity - load) / jnp.maximum(load, 1.0), (1,)),
            time_features(state.time_step, params.steps_per_day).astype(dtype),
        ]
        horizon = params.forecast_horizon_steps
        if horizon:
            ahead = jnp.minimum(state.time_step + jnp.arange(1, horizon + 1, dtype=jnp.int32), params.max_steps - 1)
            rows = jnp.minimum(state.episode_start_idx + ahead, params.load_profiles.shape[0] - 1)
            parts.append(params.total_load_mw[rows] * params.inv_total_capacity)
        return jnp.concatenate(parts)

    def action_layout(self, params: UCParams) -> str:
        return "(2 * n_units,)"

    def observe(self, state: UCState, params: UCParams) -> Float[Array, " obs_dim"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: UCParams) -> tuple[Float[Array, " obs_dim"], UCState]:
        n_rows = params.load_profiles.shape[0]
        if params.sample_start_on_reset and n_rows > params.max_steps:
            start = jr.randint(key, (), 0, n_rows - params.max_steps + 1, dtype=jnp.int32)
        else:
            start = params.fixed_episode_start_idx
        case = params.case
        dtype = working_float_dtype(params.total_load_mw)
        commit = params.init_status.astype(dtype)
        dispatch = self._dispatch(params, start, commit, case.unit_p_min * commit, case.unit_p_max * commit, None)
        state = UCState(
            time_step=jnp.asarray(0, jnp.int32),
            done=jnp.asarray(False),
            unit_power_mw=dispatch.unit_power_mw,
            line_flow_mw=dispatch.line_flow_mw,
            unit_status=params.init_status,
            time_in_state=params.init_time_in_state,
            last_dispatch=dispatch.unit_power_mw,
            startup_cost_accum=jnp.asarray(0.0, dtype),
            episode_start_idx=jnp.asarray(start, jnp.int32),
            is_safe=jnp.asarray(True),
            n_violations=jnp.asarray(0, jnp.int32),
            total_cost=jnp.asarray(0.0, dtype),
        )
        return self._obs(state, params), state

    def step_env(
        self,
        key: Key,
        state: UCState,
        action: Float[Array | np.ndarray, " action_dim"],
        params: UCParams,
    ) -> tuple[Float[Array, " obs_dim"], UCState, FloatScalar, Float[Array, "3"], Bool[Array, ""], Info]:
        case = params.case
        n_units = case.n_units
        dtype = working_float_dtype(params.total_load_mw)
        action = jnp.clip(jnp.asarray(action, dtype), -1.0, 1.0)
        intent, preference = action[:n_units], action[n_units:]

        was_on = state.unit_status > 0
        if params.enable_uc:
            raw = intent > 0
            must_stay_on = was_on & (state.time_in_state < params.min_up_steps)
            must_stay_off = ~was_on & (state.time_in_state < params.min_down_steps)
            on = (raw | must_stay_on) & ~must_stay_off
        else:
            on = jnp.ones(n_units, bool)
        commit = on.astype(dtype)
        started = on & ~was_on
        startup = jnp.sum(jnp.where(started, params.startup_cost, 0.0))
        no_load = jnp.sum(params.no_load_cost_per_step * commit)

        lo = jnp.maximum(case.unit_p_min, state.last_dispatch - params.ramp_down_mw) * commit
        hi = jnp.minimum(case.unit_p_max, state.last_dispatch + params.ramp_up_mw) * commit
        row = self._row(state.episode_start_idx, state.time_step, params)
        dispatch = self._dispatch(params, row, commit, lo, hi, preference)

        thermal_mw, _ = dc_thermal_check(dispatch.line_flow_mw, params.network.line_cap, params.network.line_floor)
        # The OPF puts binding lines exactly on their limit: count a line as overloaded only
        # beyond 0.01 MW, so float32 noise cannot flip is_safe.
        over = jnp.maximum(dispatch.line_flow_mw - params.network.line_cap, 0.0) + jnp.maximum(
            params.network.line_floor - dispatch.line_flow_mw, 0.0
        )
        n_lines_over = jnp.sum(over > _LINE_COUNT_TOL_MW, dtype=jnp.int32)
        load_total = params.total_load_mw[row]
        shortfall = jnp.maximum(0.0, load_total * (1.0 + params.reserve_margin_frac) - jnp.sum(case.unit_p_max * commit))
        reserve_short = (shortfall > 1e-6) if params.enable_reserve else jnp.asarray(False)
        n_violations = n_lines_over + reserve_short.astype(jnp.int32)
        is_safe = n_violations == 0

        changed = on != was_on
        time_in_state = jnp.where(changed, 1, jnp.minimum(state.time_in_state + 1, _TIME_CAP)).astype(jnp.int32)
        switches = jnp.sum(changed, dtype=jnp.int32)

        gen_cost = generation_cost(dispatch.unit_power_mw, case.unit_cost_a, case.unit_cost_b, case.unit_cost_c)
        # TC [$/h] + start-up [$] + no-load [$/step], summed as the reference does.
        step_cost = gen_cost + startup + no_load
        reward = -params.reward_scale * step_cost
        zero = jnp.zeros((), dtype)
        thermal_cost = params.cost_thermal_weight * thermal_mw
        reserve_cost = shortfall if params.enable_reserve else zero
        costs = stack_costs(thermal_cost, reserve_cost, zero)

        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        next_state = UCState(
            time_step=time_step,
            done=done,
            unit_power_mw=dispatch.unit_power_mw,
            line_flow_mw=dispatch.line_flow_mw,
            unit_status=on.astype(jnp.int32),
            time_in_state=time_in_state,
            last_dispatch=dispatch.unit_power_mw,
            startup_cost_accum=state.startup_cost_accum + startup,
            episode_start_idx=state.episode_start_idx,
            is_safe=is_safe,
            n_violations=n_violations,
            total_cost=state.total_cost + step_cost,
        )
        # float32 summation noise (~1e-4 MW) is not a residual; report gaps above 0.01 MW.
        gap = jnp.where(jnp.abs(dispatch.balance_gap_mw) > 1e-2, dispatch.balance_gap_mw, 0.0)
        info = {
            "gen_cost": gen_cost,
            "startup_cost": startup,
            "no_load_cost": no_load,
            "reserve_shortfall": shortfall,
            "cost_thermal_overload": thermal_cost,
            "cost_reserve_shortfall": reserve_cost,
            "cost_min_updown": zero,
            "cost_sum": jnp.sum(costs),
            "commitment_switches": switches,
            "n_committed": jnp.sum(on, dtype=jnp.int32),
            "is_safe": is_safe,
            "n_violations": n_violations,
            "goal_met": is_safe,
            "opf_converged": dispatch.converged,
            "opf_status": dispatch.status,
            # The DC-OPF's iterations (0 in solver_mode 0, which solves no OPF).
            "opf_iterations": dispatch.n_iter,
            # The screened DC-OPF was solved again with every monitored line (see the class docstring).
            "opf_full_lp": dispatch.full_lp,
            # Σ MW outside the ramp/commitment window (the DC-PF slack in solver_mode 0).
            "opf_box_residual_mw": jnp.sum(jnp.maximum(dispatch.unit_power_mw - hi, 0.0) + jnp.maximum(lo - dispatch.unit_power_mw, 0.0)),
            "opf_line_residual_mw": dispatch.line_slack_mw,
            "opf_balance_residual_mw": jnp.abs(gap),
            "unserved_mw": jnp.maximum(gap, 0.0),
        }
        return self._obs(next_state, params), next_state, reward, costs, done, info
