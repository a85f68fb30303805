"""Params factories of the DERs task's reference API: its device bundles, the env params
from explicit arguments or a data window, the 20-device scalability variant, and the
out-of-distribution stresses.
"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from powerzoojax.case import CaseData, load_case
from powerzoojax.grid.distribution import DistGridParams, make_dist_params
from powerzoojax.grid.resources import (
    BatteryBundle,
    FlexLoadBundle,
    RenewableBundle,
    make_battery_bundle,
    make_flexload_bundle,
    make_renewable_bundle,
)
from powerzoojax.grid.tasks.ders._constants import (
    DERS_BATTERY_BUSES,
    DERS_BATTERY_CONFIG,
    DERS_BENCHMARK_LOAD_CASE,
    DERS_FLEXLOAD_BUSES,
    DERS_FLEXLOAD_CONFIG,
    DERS_LARGE_BATTERY_BUSES,
    DERS_LARGE_FLEXLOAD_BUSES,
    DERS_LARGE_PV_BUSES,
    DERS_LARGE_V_MAX,
    DERS_LARGE_V_MIN,
    DERS_OOD_SCENARIOS,
    DERS_PV_BUSES,
    DERS_PV_CONFIG,
    DERS_V_MAX,
    DERS_V_MIN,
)
from powerzoojax.grid.tasks.ders._profiles import _window, load_ders_load_shape, load_ders_pv_profile


def _ders_case(case: CaseData | None) -> CaseData:
    return load_case(DERS_BENCHMARK_LOAD_CASE) if case is None else case


def make_ders_battery_bundle(
    case: CaseData, *, max_steps: int = 48, dt_hours: float = 0.5, bus_ids=DERS_BATTERY_BUSES
) -> BatteryBundle:
    """The DERs batteries (`DERS_BATTERY_CONFIG` at `bus_ids`; action `[P, Q]`).

    **Arguments:**

    - `case`: the feeder.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `bus_ids`: bus numbers of the batteries.

    **Returns:**

    A [`BatteryBundle`][powerzoojax.grid.resources.BatteryBundle].
    """
    del max_steps  # a battery has no profile
    c = DERS_BATTERY_CONFIG
    return make_battery_bundle(
        case, list(bus_ids), power_mw=c["power_mw"], energy_mwh=c["capacity_mwh"], s_rated_mva=c["s_rated_mva"],
        soc_min=c["soc_min"], soc_max=c["soc_max"], initial_soc=c["initial_soc"],
        enable_q_control=c["enable_q_control"], dt_hours=dt_hours,
    )


def make_ders_pv_bundle(
    case: CaseData, *, max_steps: int = 48, profiles: Any = None, dt_hours: float = 0.5, bus_ids=DERS_PV_BUSES,
    capacity_scale: float = 1.0,
) -> RenewableBundle:
    """The DERs PV (`DERS_PV_CONFIG` at `bus_ids`; action `[curtail, Q]`).

    **Arguments:**

    - `case`: the feeder.
    - `max_steps`: episode length [steps].
    - `profiles`: capacity factors `(T,)` or `(T, n)`; `None` takes the bell
      `clip(sin(π(h−6)/12), 0, 1)` over `max_steps`.
    - `dt_hours`: step length [hours].
    - `bus_ids`: bus numbers of the PV units.
    - `capacity_scale`: multiplier of the rated power only.

    **Returns:**

    A [`RenewableBundle`][powerzoojax.grid.resources.RenewableBundle].
    """
    c = DERS_PV_CONFIG
    n = len(bus_ids)
    if profiles is not None:
        profiles = np.asarray(profiles, np.float64)
        profiles = np.broadcast_to(profiles.reshape(profiles.shape[0], -1), (profiles.shape[0], n))
    return make_renewable_bundle(
        case, list(bus_ids), capacity_mw=c["capacity_mw"] * float(capacity_scale), s_rated_mva=c["s_rated_mva"],
        cf_profiles=profiles, curtail_cost=c["curtail_cost_per_mwh"], allow_curtailment=c["allow_curtailment"],
        enable_curtailment=True, enable_q_control=True, dt_hours=dt_hours, max_steps=max_steps,
    )


def make_ders_flexload_bundle(case: CaseData, *, dt_hours: float = 0.5, bus_ids=DERS_FLEXLOAD_BUSES) -> FlexLoadBundle:
    """The DERs flexible loads (`DERS_FLEXLOAD_CONFIG` at `bus_ids`; action `[curtail, shift]`).

    **Arguments:**

    - `case`: the feeder.
    - `dt_hours`: step length [hours].
    - `bus_ids`: bus numbers of the loads.

    **Returns:**

    A [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle].
    """
    c = DERS_FLEXLOAD_CONFIG
    return make_flexload_bundle(
        case, list(bus_ids), cap_curtail_mw=c["curtail_cap_mw"], cap_shift_mw=c["shift_cap_mw"],
        horizon=c["shift_horizon"], dt_hours=dt_hours,
    )


def make_ders_params(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    loss_penalty_weight: float = 0.1,
    pv_profiles: Any = None,
    load_profiles_p: Any = None,
    load_profiles_q: Any = None,
) -> DistGridParams:
    """DERs env params: 4 batteries, 4 PV and 4 flexible loads (in that bundle order), no
    per-bus DER actions, band `[v_min, v_max]`.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `pv_profiles`: PV capacity factors; `None` takes the bell.
    - `load_profiles_p`, `load_profiles_q`: `(T, N)` bus loads [p.u.]; either replaces
      its half of the case's static loads.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    case = _ders_case(case)
    bundles = (
        make_ders_battery_bundle(case, max_steps=max_steps, dt_hours=dt_hours),
        make_ders_pv_bundle(case, max_steps=max_steps, profiles=pv_profiles, dt_hours=dt_hours),
        make_ders_flexload_bundle(case, dt_hours=dt_hours),
    )
    params = make_dist_params(
        case, max_steps=max_steps, steps_per_day=48, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, resources=bundles, include_der=False, delta_t_hours=dt_hours,
    )
    if load_profiles_p is not None or load_profiles_q is not None:
        p = params.p_load_profiles if load_profiles_p is None else load_profiles_p
        q = params.q_load_profiles if load_profiles_q is None else load_profiles_q
        params = params.with_load_profiles(jnp.asarray(p), jnp.asarray(q))
    return params


def make_ders_params_with_profiles(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    loss_penalty_weight: float = 0.1,
    pv_profiles: Any = None,
    load_profiles_p: Any = None,
    load_profiles_q: Any = None,
) -> DistGridParams:
    """[`make_ders_params`][powerzoojax.grid.tasks.ders.make_ders_params] fed with external time
    series: the hook for user data.

    **Arguments:**

    - `case`, `max_steps`, `dt_hours`, `v_min`, `v_max`, `loss_penalty_weight`: as for
      `make_ders_params`.
    - `pv_profiles`: PV capacity factors `(T,)` or `(T, n_pv)`.
    - `load_profiles_p`, `load_profiles_q`: `(T, N)` bus loads [p.u.].

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    return make_ders_params(
        case, max_steps=max_steps, dt_hours=dt_hours, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, pv_profiles=pv_profiles, load_profiles_p=load_profiles_p,
        load_profiles_q=load_profiles_q,
    )


def make_ders_params_from_split(
    case: CaseData | None = None,
    *,
    role: str = "train",
    data_loader: Any = None,
    resample: str = "30min",
    episode_start: int = 0,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    loss_penalty_weight: float = 0.1,
    load_scale: float = 1.0,
    pv_scale: float = 1.0,
) -> DistGridParams:
    """DERs params on one data window.

    Rows `episode_start` .. `+ max_steps` (wrapping) of the role's load shape × the case's
    static loads × `load_scale`, and of its PV capacity factor.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `role`: split role.
    - `data_loader`: a `DataLoader(data_dir=...)` or a folder; `None` for the shipped data.
    - `resample`: step of the profiles.
    - `episode_start`: first row.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `load_scale`: multiplier of the loads.
    - `pv_scale`: multiplier of the PV rated power (capacity factors stay in [0, 1]).

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    load_shape = load_ders_load_shape(data_loader, role=role, resample=resample)
    pv = load_ders_pv_profile(data_loader, role=role, resample=resample)
    case = _ders_case(case)
    base = float(case.base_mva)
    shape = _window(load_shape, episode_start, max_steps)[:, None] * float(load_scale)
    params = make_ders_params(
        case, max_steps=max_steps, dt_hours=dt_hours, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, pv_profiles=_window(pv, episode_start, max_steps),
        load_profiles_p=shape * np.asarray(case.node_pd, np.float64)[None, :] / base,
        load_profiles_q=shape * np.asarray(case.node_qd, np.float64)[None, :] / base,
    )
    if float(pv_scale) != 1.0:
        params = _scale_pv(params, float(pv_scale))
    return params


def _scale_pv(params: DistGridParams, factor: float) -> DistGridParams:
    resources = tuple(
        eqx.tree_at(lambda b: b.capacity_mw, b, b.capacity_mw * factor) if isinstance(b, RenewableBundle) else b
        for b in params.resources
    )
    return eqx.tree_at(lambda p: p.resources, params, resources)


def make_ders_large_params(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_LARGE_V_MIN,
    v_max: float = DERS_LARGE_V_MAX,
    pv_profiles: Any = None,
) -> DistGridParams:
    """The 20-device scalability variant on case141: 7 batteries, 7 PV, 6 flexible loads
    (`DERS_LARGE_*_BUSES`, the DERs device ratings).

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `v_min`, `v_max`: voltage band [p.u.], [0.96, 1.04] by default.
    - `pv_profiles`: PV capacity factors; `None` takes the bell.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    case = _ders_case(case)
    bundles = (
        make_ders_battery_bundle(case, dt_hours=dt_hours, bus_ids=DERS_LARGE_BATTERY_BUSES),
        make_ders_pv_bundle(case, max_steps=max_steps, profiles=pv_profiles, dt_hours=dt_hours, bus_ids=DERS_LARGE_PV_BUSES),
        make_ders_flexload_bundle(case, dt_hours=dt_hours, bus_ids=DERS_LARGE_FLEXLOAD_BUSES),
    )
    return make_dist_params(
        case, max_steps=max_steps, steps_per_day=48, v_min=v_min, v_max=v_max, resources=bundles,
        include_der=False, delta_t_hours=dt_hours,
    )


def make_ders_ood_params(
    base_params: DistGridParams,
    *,
    scenario: str,
    pv_scale: float = 1.0,
    v_min: float | None = None,
    v_max: float | None = None,
) -> DistGridParams:
    """`base_params` under an OOD stress.

    `voltage_tightening`: band `[v_min, v_max]` (default [0.96, 1.04]);
    `pv_penetration_shift`: PV rated power × `pv_scale` (2 when left at 1);
    `load_stress`: P and Q loads × `pv_scale` (1.15 when left at 1; the factor shares the
    PV argument, as in the reference signature).

    **Arguments:**

    - `base_params`: the DERs params.
    - `scenario`: one of the three scenarios above.
    - `pv_scale`: the scenario's factor.
    - `v_min`, `v_max`: band of `voltage_tightening` [p.u.].

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    if scenario == "voltage_tightening":
        lo = DERS_LARGE_V_MIN if v_min is None else float(v_min)
        hi = DERS_LARGE_V_MAX if v_max is None else float(v_max)
        if not lo < hi:
            raise ValueError(f"voltage_tightening: v_min {lo} must be below v_max {hi}")
        f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
        return eqx.tree_at(lambda p: (p.v_min, p.v_max), base_params, (f32(lo), f32(hi)))
    if scenario == "pv_penetration_shift":
        return _scale_pv(base_params, float(pv_scale) if float(pv_scale) != 1.0 else 2.0)
    if scenario == "load_stress":
        factor = float(pv_scale) if float(pv_scale) != 1.0 else 1.15
        return base_params.with_load_profiles(base_params.p_load_profiles * factor, base_params.q_load_profiles * factor)
    raise ValueError(f"unknown DERs OOD scenario {scenario!r}; valid: {DERS_OOD_SCENARIOS}")
