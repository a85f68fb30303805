"""Data-centre microgrid env: the data centre of [`DataCenterEnv`][powerzoojax.grid.microgrid.DataCenterEnv] supplied by a battery, PV,"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float

from powerzoojax.core import Box, Environment, EnvParams, EnvState, Invariant, make_box, stack_costs, time_features
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.grid.microgrid._datacenter import (
    DATACENTER_CONSTRAINT_NAMES,
    DataCenterParams,
    DataCenterState,
    cop_factor,
    datacenter_initial_state,
    datacenter_transition,
    make_datacenter_params,
    queue_features,
)
from powerzoojax.grid.microgrid._invariants import dc_microgrid_laws
from powerzoojax.grid.microgrid._zone_band import T_ZONE_MIN
from powerzoojax.physics.devices import (
    battery_limits,
    battery_step,
    compute_dg_emissions,
    compute_dg_fuel_cost,
    compute_dg_power,
    renewable_active_power,
    solar_bell_cf,
)

DCMG_CONSTRAINT_NAMES = (*DATACENTER_CONSTRAINT_NAMES, "power_deficit")
DCMG_OBS_DIM = 24
DCMG_ACTION_DIM = 5
# Price look-ahead of observation 16: 6 h of 5-minute steps.
PRICE_PREVIEW_STEPS = 72
_SIGNED_OBS = (4, 12, 20, 22, 23)


class DCMicrogridState(EnvState):
    """Microgrid state: the data centre, battery SOC and last step's powers [MW].

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `dc`: the [`DataCenterState`][powerzoojax.grid.microgrid.DataCenterState].
    - `soc`: battery state of charge [fraction].
    - `p_batt_mw`, `p_pv_mw`, `p_dg_mw`, `p_load_mw`: last step's battery (positive when
      discharging), PV, diesel and load power [MW].
    - `last_action`: `(5,)` the applied action.
    """

    dc: DataCenterState
    soc: Float[Array, ""]
    p_batt_mw: Float[Array, ""]
    p_pv_mw: Float[Array, ""]
    p_dg_mw: Float[Array, ""]
    p_load_mw: Float[Array, ""]
    last_action: Float[Array, "5"]


class DCMicrogridParams(EnvParams):
    """Params of [`DataCenterMicrogridEnv`][powerzoojax.grid.microgrid.DataCenterMicrogridEnv];
    build with [`make_dcmicrogrid_params`][powerzoojax.grid.microgrid.make_dcmicrogrid_params].

    **Arguments:**

    - `dc`: the data centre's [`DataCenterParams`][powerzoojax.grid.microgrid.DataCenterParams].
    - `batt_e_mwh`, `batt_p_mw`: battery capacity [MWh] and rating [MW].
    - `batt_eta_c`, `batt_eta_d`: one-way efficiencies.
    - `batt_soc_min`, `batt_soc_max`, `batt_soc_init`: SOC window and initial SOC.
    - `pv_capacity_mw`: PV capacity [MW].
    - `pv_cf_profile`: `(T,)` PV capacity factor, row `t mod T`.
    - `dg_p_max_mw`: diesel rating [MW].
    - `dg_fuel_cost_per_mwh`: [$/MWh].
    - `dg_ef_kg_per_kwh`: diesel emission factor [kg/kWh].
    - `dg_p_min_norm`: diesel minimum stable load [fraction of rating].
    - `battery_deg_cost_per_mwh`: battery degradation cost [$/MWh].
    - `w_cost`, `w_carbon`: reward weights of cost and carbon.
    - `grid_import_p_max_mw`: grid import limit [MW] (0: islanded).
    - `grid_price_ref_per_mwh`: reference grid price [$/MWh].
    - `grid_carbon_kg_per_kwh`: grid emission factor [kg/kWh].
    - `terminal_soc_target`, `terminal_soc_penalty`: end-of-episode SOC target and the
      penalty per unit of shortfall.
    - `price_profile`: `(T,)` grid price [$/MWh], row `t mod T`.
    - `price_max_6h_profile`: `(T,)` the 6-hour look-ahead maximum of the price per row.
    - `price_observed`: whether the observation shows the price.
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `steps_per_day`: steps in one day (static).
    """

    dc: DataCenterParams
    batt_e_mwh: Float[Array, ""]
    batt_p_mw: Float[Array, ""]
    batt_eta_c: Float[Array, ""]
    batt_eta_d: Float[Array, ""]
    batt_soc_min: Float[Array, ""]
    batt_soc_max: Float[Array, ""]
    batt_soc_init: Float[Array, ""]
    pv_capacity_mw: Float[Array, ""]
    pv_cf_profile: Float[Array, " n_pv_rows"]
    dg_p_max_mw: Float[Array, ""]
    dg_fuel_cost_per_mwh: Float[Array, ""]
    dg_ef_kg_per_kwh: Float[Array, ""]
    dg_p_min_norm: Float[Array, ""]
    battery_deg_cost_per_mwh: Float[Array, ""]
    w_cost: Float[Array, ""]
    w_carbon: Float[Array, ""]
    grid_import_p_max_mw: Float[Array, ""]
    grid_price_ref_per_mwh: Float[Array, ""]
    grid_carbon_kg_per_kwh: Float[Array, ""]
    terminal_soc_target: Float[Array, ""]
    terminal_soc_penalty: Float[Array, ""]
    # $/MWh at row t mod T; the 6-h look-ahead maximum is precomputed per row.
    price_profile: Float[Array, " n_price_rows"]
    price_max_6h_profile: Float[Array, " n_price_rows"]
    price_observed: Bool[Array, ""]
    steps_per_day: int = eqx.field(static=True, default=288, kw_only=True)

    def with_profiles(
        self,
        *,
        cpu_profile: ArrayLike | None = None,
        outdoor_temp_profile: ArrayLike | None = None,
        pv_cf_profile: ArrayLike | None = None,
        price_profile: ArrayLike | None = None,
    ) -> "DCMicrogridParams":
        """These params with some profiles replaced (jit-safe; the price preview is recomputed).

        **Arguments:**

        - `cpu_profile`: `(T,)` inference fraction in [0, 1], or `None` to keep it.
        - `outdoor_temp_profile`: `(T,)` [°C], or `None`.
        - `pv_cf_profile`: `(T,)` PV capacity factor, or `None`.
        - `price_profile`: `(T,)` [$/MWh], or `None`.

        **Returns:**

        New [`DCMicrogridParams`][powerzoojax.grid.microgrid.DCMicrogridParams].
        """
        p = self
        f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
        if cpu_profile is not None:
            p = eqx.tree_at(lambda q: q.dc.infer_fraction_profile, p, f32(cpu_profile))
        if outdoor_temp_profile is not None:
            p = eqx.tree_at(lambda q: q.dc.outdoor_temp_profile, p, f32(outdoor_temp_profile))
        if pv_cf_profile is not None:
            p = eqx.tree_at(lambda q: q.pv_cf_profile, p, f32(pv_cf_profile))
        if price_profile is not None:
            price = f32(price_profile)
            p = eqx.tree_at(
                lambda q: (q.price_profile, q.price_max_6h_profile, q.price_observed),
                p,
                (price, price_lookahead_max(price), jnp.asarray(True)),
            )
        return p


def price_lookahead_max(price: Float[Array, " n"]) -> Float[Array, " n"]:
    """`max(price[t .. t + 71])` per row, cyclic."""
    n = price.shape[0]
    idx = (jnp.arange(n)[:, None] + jnp.arange(PRICE_PREVIEW_STEPS)[None, :]) % n
    return jnp.max(price[idx], axis=1)


def _profile(name: str, value: Any, *, low: float | None = None, high: float | None = None) -> np.ndarray:
    arr = np.asarray(value)
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"make_dcmicrogrid_params: {name} must be real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] < 1:
        raise ValueError(f"make_dcmicrogrid_params: {name} must be a 1-D array (T,) with T >= 1, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"make_dcmicrogrid_params: {name} must be finite; found {arr[i]} at row {i}")
    if (low is not None and arr.min() < low) or (high is not None and arr.max() > high):
        raise ValueError(
            f"make_dcmicrogrid_params: {name} must lie in [{low}, {high}], got range [{arr.min()}, {arr.max()}]"
        )
    return arr.astype(np.float64)


def make_dcmicrogrid_params(
    *,
    battery_e_mwh: float | int = 2.0,
    battery_p_mw: float | int = 0.5,
    battery_eta: float | int = 0.95,
    battery_soc_min: float | int = 0.1,
    battery_soc_max: float | int = 0.9,
    battery_soc_init: float | int = 0.5,
    pv_capacity_mw: float | int = 0.4,
    dg_p_max_mw: float | int = 0.6,
    dg_fuel_cost_per_mwh: float | int = 300.0,
    dg_ef_kg_per_kwh: float | int = 0.80,
    dg_p_min_norm: float | int = 0.0,
    battery_deg_cost_per_mwh: float | int = 5.0,
    w_cost: float | int = 0.5,
    w_carbon: float | int = 0.3,
    grid_import_p_max_mw: float | int = 0.0,
    grid_price_ref_per_mwh: float | int = 150.0,
    grid_carbon_kg_per_kwh: float | int = 0.18,
    terminal_soc_target: float | int = 0.5,
    terminal_soc_penalty: float | int = 0.0,
    cpu_profile: Any = None,
    outdoor_temp_profile: Any = None,
    pv_cf_profile: Any = None,
    price_profile: Any = None,
    max_steps: int = 288,
    steps_per_day: int = 288,
    delta_t_hours: float | int = 5.0 / 60.0,
    **datacenter_kwargs: Any,
) -> DCMicrogridParams:
    """Validate on the host and build [`DCMicrogridParams`][powerzoojax.grid.microgrid.DCMicrogridParams]
    (defaults: the reference's; islanded, `grid_import_p_max_mw = 0`).

    Each profile is read at row `t mod T`.

    **Arguments:**

    - `battery_e_mwh`, `battery_p_mw`: battery capacity [MWh] and rating [MW].
    - `battery_eta`: one-way efficiency.
    - `battery_soc_min`, `battery_soc_max`, `battery_soc_init`: SOC window and initial SOC.
    - `pv_capacity_mw`: PV capacity [MW].
    - `dg_p_max_mw`: diesel rating [MW].
    - `dg_fuel_cost_per_mwh`: [$/MWh].
    - `dg_ef_kg_per_kwh`: diesel emission factor [kg/kWh].
    - `dg_p_min_norm`: diesel minimum stable load [fraction of rating].
    - `battery_deg_cost_per_mwh`: [$/MWh].
    - `w_cost`, `w_carbon`: reward weights of cost and carbon.
    - `grid_import_p_max_mw`: grid import limit [MW].
    - `grid_price_ref_per_mwh`: reference grid price [$/MWh].
    - `grid_carbon_kg_per_kwh`: grid emission factor [kg/kWh].
    - `terminal_soc_target`, `terminal_soc_penalty`: end-of-episode SOC target and penalty.
    - `cpu_profile`: the data centre's inference fraction in [0, 1].
    - `outdoor_temp_profile`: [°C].
    - `pv_cf_profile`: PV capacity factor in [0, 1]; `None` takes the bell
      `clip(sin(π(h − 6)/12), 0, 1)` over one day.
    - `price_profile`: [$/MWh]; `None` takes a flat `grid_price_ref_per_mwh`, hidden from
      the observation.
    - `max_steps`: episode length [steps].
    - `steps_per_day`: steps in one day.
    - `delta_t_hours`: step length [hours].
    - `**datacenter_kwargs`: passed to
      [`make_datacenter_params`][powerzoojax.grid.microgrid.make_datacenter_params] (its
      `p_base_mw` defaults to 0.4 here).

    **Returns:**

    [`DCMicrogridParams`][powerzoojax.grid.microgrid.DCMicrogridParams]. Raises
    `ValueError` naming a bad value.
    """
    caller = "make_dcmicrogrid_params"
    max_steps = positive_int(caller, "max_steps", max_steps)
    steps_per_day = positive_int(caller, "steps_per_day", steps_per_day)
    fs = lambda name, v, **kw: finite_scalar(caller, name, v, **kw)  # noqa: E731
    values = {
        "batt_e_mwh": fs("battery_e_mwh", battery_e_mwh, positive=True),
        "batt_p_mw": fs("battery_p_mw", battery_p_mw, positive=True),
        "batt_soc_min": fs("battery_soc_min", battery_soc_min, non_negative=True),
        "batt_soc_max": fs("battery_soc_max", battery_soc_max, positive=True),
        "batt_soc_init": fs("battery_soc_init", battery_soc_init, non_negative=True),
        "pv_capacity_mw": fs("pv_capacity_mw", pv_capacity_mw, non_negative=True),
        "dg_p_max_mw": fs("dg_p_max_mw", dg_p_max_mw, positive=True),
        "dg_fuel_cost_per_mwh": fs("dg_fuel_cost_per_mwh", dg_fuel_cost_per_mwh, non_negative=True),
        "dg_ef_kg_per_kwh": fs("dg_ef_kg_per_kwh", dg_ef_kg_per_kwh, non_negative=True),
        "dg_p_min_norm": fs("dg_p_min_norm", dg_p_min_norm, non_negative=True),
        "battery_deg_cost_per_mwh": fs("battery_deg_cost_per_mwh", battery_deg_cost_per_mwh, non_negative=True),
        "w_cost": fs("w_cost", w_cost, non_negative=True),
        "w_carbon": fs("w_carbon", w_carbon, non_negative=True),
        "grid_import_p_max_mw": fs("grid_import_p_max_mw", grid_import_p_max_mw, non_negative=True),
        "grid_price_ref_per_mwh": fs("grid_price_ref_per_mwh", grid_price_ref_per_mwh, positive=True),
        "grid_carbon_kg_per_kwh": fs("grid_carbon_kg_per_kwh", grid_carbon_kg_per_kwh, non_negative=True),
        "terminal_soc_target": fs("terminal_soc_target", terminal_soc_target, non_negative=True),
        "terminal_soc_penalty": fs("terminal_soc_penalty", terminal_soc_penalty, non_negative=True),
    }
    eta = fs("battery_eta", battery_eta, positive=True)
    if eta > 1.0:
        raise ValueError(f"{caller}: battery_eta must lie in (0, 1], got {battery_eta}")
    if not values["batt_soc_min"] < values["batt_soc_max"] <= 1.0:
        raise ValueError(
            f"{caller}: need 0 <= battery_soc_min < battery_soc_max <= 1, got {battery_soc_min}, {battery_soc_max}"
        )
    for name in ("batt_soc_init", "terminal_soc_target"):
        if not values["batt_soc_min"] <= values[name] <= values["batt_soc_max"]:
            arg = "battery_soc_init" if name == "batt_soc_init" else name
            raise ValueError(
                f"{caller}: {arg} must lie in [battery_soc_min, battery_soc_max] = "
                f"[{battery_soc_min}, {battery_soc_max}], got {values[name]}"
            )
    if values["dg_p_min_norm"] > 1.0:
        raise ValueError(f"{caller}: dg_p_min_norm must lie in [0, 1], got {dg_p_min_norm}")
    datacenter_kwargs.setdefault("p_base_mw", 0.4)
    dc = make_datacenter_params(
        infer_fraction_profile=None if cpu_profile is None else _profile("cpu_profile", cpu_profile, low=0.0, high=1.0),
        outdoor_temp_profile=None if outdoor_temp_profile is None else _profile("outdoor_temp_profile", outdoor_temp_profile),
        delta_t_hours=delta_t_hours,
        steps_per_day=steps_per_day,
        max_steps=max_steps,
        **datacenter_kwargs,
    )
    if pv_cf_profile is None:
        pv = np.asarray(solar_bell_cf(24.0 * np.arange(steps_per_day) / steps_per_day), np.float64)
    else:
        pv = _profile("pv_cf_profile", pv_cf_profile, low=0.0, high=1.0)
    observed = price_profile is not None
    price = (
        _profile("price_profile", price_profile)
        if observed
        else np.full(steps_per_day, values["grid_price_ref_per_mwh"])
    )
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    price32 = f32(price)
    return DCMicrogridParams(
        dc=dc,
        **{k: f32(v) for k, v in values.items()},
        batt_eta_c=f32(eta),
        batt_eta_d=f32(eta),
        pv_cf_profile=f32(pv),
        price_profile=price32,
        price_max_6h_profile=price_lookahead_max(price32),
        price_observed=jnp.asarray(observed),
        max_steps=max_steps,
        delta_t_hours=dc.delta_t_hours,
        steps_per_day=steps_per_day,
    )


class DataCenterMicrogridEnv(Environment):
    """Data-centre microgrid: a data centre with a battery, PV, a diesel generator and
    (optionally) a capped grid import, over one day of 5-minute steps.

    Per step (`t` = step before the increment, `Δt` = 5/60 h by default):

    1. data-centre physics (`datacenter_transition`) with action `[0:3]`: `P_load = P_dc`;
    2. battery `P_des = clip(a3, −1, 1)·P_rated` clipped to its SOC-feasible range
       (positive = discharge), PV `P_pv = cap·CF[t mod T]` (no curtailment), diesel `P_dg`
       from `a4`; `residual = P_batt + P_pv + P_dg − P_load`; grid import
       `P_grid = min(max(−residual, 0), grid_cap)`; `r' = residual + P_grid`;
       `deficit = max(−r', 0)` (unserved load), `spill = max(r', 0)` (surplus thrown away),
       so `P_pv + P_dg + P_dis + P_grid + deficit = P_load + P_chg + spill` exactly;
    3. `grid_cost = P_grid Δt price_t`, `grid_carbon = P_grid Δt 1000 ef_grid`, on the
       terminal step `terminal = penalty·(soc − target)²`.

    Reward `r_energy + w_cost r_cost + w_carbon r_carbon` with `r_energy = −P_dc Δt` [MWh],
    `r_cost = −(fuel + grid_cost + |P_batt| Δt deg_cost + terminal)` [$],
    `r_carbon = −(carbon + grid_carbon)` [kg]; `info["reward_vector"]` holds the three
    terms. Costs `("sla", "overtemp", "power_deficit")`: the data centre's two channels and
    `deficit / max(P_load, 1e-6)`.

    Observation `(24,)` float32 (after the step, time index `t + 1`): 0 active GPUs/n ·
    1 inference GPUs/n · 2, 3 waiting training / fine-tune GPUs/n · 4 urgency ·
    5 `(T_zone − 15)/30` · 6 `(T_out − 10)/20` · 7 `(COP factor − 0.4)/0.8` · 8 PV CF now ·
    9 SOC · 10 `1 − P_dg/p_max` · 11 `clip(P_load/(P_b,max + P_dg,max + P_pv,max), 0, 1)` ·
    12 `clip((P_load − P_pv)/(P_b,max + P_dg,max), −1, 1)` (last step's load and PV) ·
    13, 14 SOC-feasible discharge / charge power ÷ rated · 15 `clip(price_t/price_ref, 0, 1)`
    · 16 the same for the maximum price of the next 6 h (cyclic; 15 and 16 are 0 without a
    price profile) · 17–21 previous clipped action · 22, 23 `sin φ, cos φ`. Entries without
    a sign are clipped to [0, 1].

    Action `(5,)`: `[train_sched, ft_sched, cooling_norm] ∈ [0, 1]`, `batt_norm ∈ [−1, 1]`
    (+ = discharge), `dg_norm ∈ [0, 1]`; each clipped. Termination after `max_steps` (288);
    auto-reset (the reset is deterministic).
    """
    def observation_space(self, params: DCMicrogridParams) -> Box:
        low = np.zeros(DCMG_OBS_DIM, np.float32)
        low[list(_SIGNED_OBS)] = -1.0
        return make_box(low, np.ones(DCMG_OBS_DIM, np.float32))

    def action_space(self, params: DCMicrogridParams) -> Box:
        return make_box(np.array([0, 0, 0, -1, 0], np.float32), np.ones(DCMG_ACTION_DIM, np.float32))

    def constraint_names(self, params: DCMicrogridParams) -> tuple[str, ...]:
        return DCMG_CONSTRAINT_NAMES

    def physics_invariants(self, params: DCMicrogridParams) -> tuple[Invariant, ...]:
        # The data centre's laws, the battery's, and balance and dispatch order at the PCC.
        return dc_microgrid_laws()

    def default_params(self) -> DCMicrogridParams:
        return make_dcmicrogrid_params()

    @staticmethod
    def _clip_action(action: Float[Array, "5"]) -> Float[Array, "5"]:
        low = jnp.array([0.0, 0.0, 0.0, -1.0, 0.0], jnp.float32)
        return jnp.clip(action, low, 1.0)

    def _obs(self, state: DCMicrogridState, params: DCMicrogridParams) -> Float[Array, "24"]:
        dc = state.dc
        t = state.time_step
        p = params
        p_dis_max, p_chg_max = battery_limits(
            state.soc, p.batt_e_mwh, p.batt_p_mw, p.batt_eta_c, p.batt_eta_d, p.batt_soc_min, p.batt_soc_max,
            p.delta_t_hours,
        )
        cf = p.pv_cf_profile[t % p.pv_cf_profile.shape[0]]
        row = t % p.price_profile.shape[0]
        shown = p.price_observed.astype(jnp.float32)
        supply = p.batt_p_mw + p.dg_p_max_mw + p.pv_capacity_mw
        unsigned = jnp.stack([
            (dc.t_zone - T_ZONE_MIN) / 30.0,
            (dc.t_outdoor - 10.0) / 20.0,
            (cop_factor(dc.t_outdoor, p.dc) - 0.4) / 0.8,
            cf,
            state.soc,
            1.0 - state.p_dg_mw / p.dg_p_max_mw,
            state.p_load_mw / supply,
        ])
        net = jnp.clip((state.p_load_mw - state.p_pv_mw) / (p.batt_p_mw + p.dg_p_max_mw), -1.0, 1.0)
        headroom = jnp.stack([
            p_dis_max / p.batt_p_mw,
            p_chg_max / p.batt_p_mw,
            shown * p.price_profile[row] / p.grid_price_ref_per_mwh,
            shown * p.price_max_6h_profile[row] / p.grid_price_ref_per_mwh,
        ])
        return jnp.concatenate([
            queue_features(dc, p.dc),
            jnp.clip(unsigned, 0.0, 1.0),
            net[None],
            jnp.clip(headroom, 0.0, 1.0),
            state.last_action,
            time_features(t, p.steps_per_day),
        ])

    def action_layout(self, params: DCMicrogridParams) -> str:
        return "[train_sched, ft_sched, cooling_norm, batt_norm, dg_norm]"

    def observe(self, state: DCMicrogridState, params: DCMicrogridParams) -> Float[Array, "24"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: DCMicrogridParams) -> tuple[Float[Array, "24"], DCMicrogridState]:
        dc = datacenter_initial_state(params.dc)
        zero = jnp.zeros((), jnp.float32)
        state = DCMicrogridState(
            time_step=dc.time_step,
            done=dc.done,
            dc=dc,
            soc=params.batt_soc_init,
            p_batt_mw=zero,
            p_pv_mw=zero,
            p_dg_mw=zero,
            p_load_mw=zero,
            last_action=jnp.zeros((DCMG_ACTION_DIM,), jnp.float32),
        )
        return self._obs(state, params), state

    def step_env(
        self, key: Key, state: DCMicrogridState, action: Float[Array | np.ndarray, " action_dim"], params: DCMicrogridParams
    ) -> tuple[Float[Array, "24"], DCMicrogridState, FloatScalar, Float[Array, "3"], Bool[Array, ""], Info]:
        return self.step_with_dg_autobalance(key, state, action, params, autobalance=False)

    def step_with_dg_autobalance(
        self,
        key: Key,
        state: DCMicrogridState,
        action: Float[Array | np.ndarray, " action_dim"],
        params: DCMicrogridParams,
        *,
        autobalance: bool,
    ) -> tuple[Float[Array, "24"], DCMicrogridState, FloatScalar, Float[Array, "3"], Bool[Array, ""], Info]:
        """[`step_env`][powerzoojax.core.Environment.step_env], optionally with the diesel
        set-point balanced: the transition alone, on a checked action and without
        auto-reset (`step` adds both).

        With `autobalance` the diesel set-point `a4` is replaced by `clip(D / p_max, 0, 1)`,
        `D` = the unserved load of this same step with the diesel off (the data centre,
        battery and PV do not depend on `a4`, so `D` comes from the one transition). The
        applied `a4` is `info["dg_autobalance_norm"]` and the stored last action. Used by
        [`DCMicrogridShapingWrapper`][powerzoojax.grid.microgrid.DCMicrogridShapingWrapper].

        **Arguments:**

        - `key`, `state`, `action`, `params`: as for `step_env`; `action` is `(5,)`.
        - `autobalance`: balance the diesel set-point (static).

        **Returns:**

        `(obs (24,), state, reward, costs (3,), done, info)`, as `step_env`.
        """
        p = params
        dt = p.delta_t_hours
        a = self._clip_action(jnp.asarray(action, jnp.float32))
        t = state.time_step
        dc, out = datacenter_transition(key, state.dc, a[:3], p.dc)
        p_load = out.p_dc_mw

        p_batt, soc = battery_step(
            state.soc, a[3] * p.batt_p_mw, p.batt_e_mwh, p.batt_p_mw, p.batt_eta_c, p.batt_eta_d,
            p.batt_soc_min, p.batt_soc_max, dt,
        )
        p_pv = renewable_active_power(p.pv_capacity_mw, p.pv_cf_profile[t % p.pv_cf_profile.shape[0]], 0.0)
        if autobalance:
            # Unserved load with the diesel off: what is left after battery, PV and grid import.
            raw_off = p_batt + p_pv - p_load
            deficit_off = jnp.maximum(-(raw_off + jnp.minimum(jnp.maximum(-raw_off, 0.0), p.grid_import_p_max_mw)), 0.0)
            a = a.at[4].set(jnp.clip(deficit_off / p.dg_p_max_mw, 0.0, 1.0))
        p_dg = compute_dg_power(a[4], p.dg_p_max_mw, p.dg_p_min_norm)
        fuel = compute_dg_fuel_cost(p_dg, dt, p.dg_fuel_cost_per_mwh)
        carbon = compute_dg_emissions(p_dg, dt, p.dg_ef_kg_per_kwh)

        raw_residual = p_batt + p_pv + p_dg - p_load
        p_grid = jnp.minimum(jnp.maximum(-raw_residual, 0.0), p.grid_import_p_max_mw)
        residual = raw_residual + p_grid
        deficit = jnp.maximum(-residual, 0.0)
        spill = jnp.maximum(residual, 0.0)

        price = p.price_profile[t % p.price_profile.shape[0]]
        grid_cost = p_grid * dt * price
        grid_carbon = p_grid * dt * 1000.0 * p.grid_carbon_kg_per_kwh
        done = dc.done
        terminal = jnp.where(done, p.terminal_soc_penalty * (soc - p.terminal_soc_target) ** 2, 0.0)
        r_energy = -p_load * dt
        r_cost = -(fuel + grid_cost + jnp.abs(p_batt) * dt * p.battery_deg_cost_per_mwh + terminal)
        r_carbon = -(carbon + grid_carbon)
        reward = r_energy + p.w_cost * r_cost + p.w_carbon * r_carbon

        cost_deficit = deficit / jnp.maximum(p_load, 1e-6)
        costs = stack_costs(out.cost_sla, out.cost_overtemp, cost_deficit)
        new_state = DCMicrogridState(
            time_step=dc.time_step,
            done=done,
            dc=dc,
            soc=soc,
            p_batt_mw=p_batt,
            p_pv_mw=p_pv,
            p_dg_mw=p_dg,
            p_load_mw=p_load,
            last_action=a,
        )
        info = {
            "cost_sla": out.cost_sla,
            "cost_overtemp": out.cost_overtemp,
            "cost_power_deficit": cost_deficit,
            "cost_sum": out.cost_sla + out.cost_overtemp + cost_deficit,
            "p_load_mw": p_load,
            "p_pv_mw": p_pv,
            "p_dg_mw": p_dg,
            "p_batt_mw": p_batt,
            "p_grid_import_mw": p_grid,
            "power_deficit": deficit,
            "power_spill": spill,
            "residual": residual,
            "raw_residual": raw_residual,
            "fuel_cost": fuel,
            "grid_cost": grid_cost,
            "grid_price_per_mwh": price,
            "terminal_soc_cost": terminal,
            "carbon_kg": carbon,
            "grid_carbon_kg": grid_carbon,
            "n_expired": out.n_expired,
            "n_dropped": out.n_dropped,
            "p_dc_mw": out.p_dc_mw,
            "p_it_mw": out.p_it_mw,
            "p_cool_mw": out.p_cool_mw,
            "t_zone": dc.t_zone,
            "soc": soc,
            "reward_vector": jnp.stack([r_energy, r_cost, r_carbon]),
        }
        if autobalance:
            info["dg_autobalance_norm"] = a[4]
        return self._obs(new_state, p), new_state, reward, costs, done, info
