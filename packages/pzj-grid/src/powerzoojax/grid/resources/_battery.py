"""Batteries: the standalone [`BatteryEnv`][powerzoojax.grid.resources.BatteryEnv] and the grid-attached [`BatteryBundle`][powerzoojax.grid.resources.BatteryBundle]"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import Box, Environment, Invariant, denormalize_action, make_box, stack_costs, time_features
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.grid.resources._bundle import (
    BundleCtx,
    ResourceBundle,
    device_array,
    n_devices_of,
    resolve_bus_ids,
)
from powerzoojax.grid.resources._invariants import battery_bundle_laws, battery_env_laws
from powerzoojax.grid.resources._standalone import DeviceParams, DeviceState
from powerzoojax.physics.devices import (
    battery_limits,
    battery_step,
    inverter_q_clip,
    one_way_efficiencies,
)

# ----------------------------------------------------------------------------- standalone


class BatteryState(DeviceState):
    """State of [`BatteryEnv`][powerzoojax.grid.resources.BatteryEnv].

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `current_p_mw`, `current_q_mvar`: last output [MW, MVAr], positive when discharging.
    - `soc`: state of charge [fraction].
    """
    soc: Float[Array, ""]


class BatteryParams(DeviceParams):
    """Params of [`BatteryEnv`][powerzoojax.grid.resources.BatteryEnv]; build with
    [`make_battery_params`][powerzoojax.grid.resources.make_battery_params].

    **Arguments:**

    - `energy_mwh`: capacity [MWh].
    - `power_mw`: power rating [MW].
    - `eta_c`, `eta_d`: one-way efficiencies.
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `initial_soc`: SOC at reset [fraction].
    - `cycle_cost`: throughput cost [$/MWh].
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `bus_id`: bus number, `-1` when standalone (static).
    - `steps_per_day`: steps in one day (static).
    """
    energy_mwh: Float[Array, ""]
    power_mw: Float[Array, ""]
    eta_c: Float[Array, ""]
    eta_d: Float[Array, ""]
    soc_min: Float[Array, ""]
    soc_max: Float[Array, ""]
    initial_soc: Float[Array, ""]
    cycle_cost: Float[Array, ""]


def make_battery_params(
    energy_mwh: float = 50.0,
    power_mw: float = 20.0,
    eta_c: float | None = None,
    eta_d: float | None = None,
    eta_roundtrip: float | None = None,
    soc_min: float = 0.1,
    soc_max: float = 0.9,
    initial_soc: float = 0.5,
    cycle_cost: float = 0.0,
    delta_t_hours: float = 0.5,
    steps_per_day: int = 48,
    max_steps: int = 48,
    bus_id: int = -1,
) -> BatteryParams:
    """Params of [`BatteryEnv`][powerzoojax.grid.resources.BatteryEnv].

    **Arguments:**

    - `energy_mwh`: capacity [MWh].
    - `power_mw`: power rating [MW].
    - `eta_c`, `eta_d`: one-way efficiencies; a missing one is `√eta_roundtrip` (0.95 when
      neither is given).
    - `eta_roundtrip`: round-trip efficiency.
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `initial_soc`: SOC at reset [fraction].
    - `cycle_cost`: throughput cost [$/MWh].
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `max_steps`: episode length [steps].
    - `bus_id`: bus number, `-1` when standalone.

    **Returns:**

    [`BatteryParams`][powerzoojax.grid.resources.BatteryParams].
    """
    c = "make_battery_params"
    eta_c, eta_d = one_way_efficiencies(eta_c, eta_d, eta_roundtrip)
    vals = {
        "energy_mwh": finite_scalar(c, "energy_mwh", energy_mwh, positive=True),
        "power_mw": finite_scalar(c, "power_mw", power_mw, positive=True),
        "eta_c": finite_scalar(c, "eta_c", eta_c, positive=True),
        "eta_d": finite_scalar(c, "eta_d", eta_d, positive=True),
        "soc_min": finite_scalar(c, "soc_min", soc_min, non_negative=True),
        "soc_max": finite_scalar(c, "soc_max", soc_max, positive=True),
        "initial_soc": finite_scalar(c, "initial_soc", initial_soc, non_negative=True),
        "cycle_cost": finite_scalar(c, "cycle_cost", cycle_cost, non_negative=True),
    }
    if not vals["soc_min"] < vals["soc_max"] <= 1.0:
        raise ValueError(f"{c}: need 0 <= soc_min < soc_max <= 1, got soc_min={soc_min}, soc_max={soc_max}")
    if not vals["soc_min"] <= vals["initial_soc"] <= vals["soc_max"]:
        raise ValueError(f"{c}: initial_soc={initial_soc} must lie in [soc_min, soc_max] = [{soc_min}, {soc_max}]")
    if vals["eta_c"] > 1 or vals["eta_d"] > 1:
        raise ValueError(f"{c}: efficiencies must be in (0, 1], got eta_c={eta_c}, eta_d={eta_d}")
    return BatteryParams(
        **{k: jnp.asarray(v, jnp.float32) for k, v in vals.items()},
        delta_t_hours=finite_scalar(c, "delta_t_hours", delta_t_hours, positive=True),
        steps_per_day=positive_int(c, "steps_per_day", steps_per_day),
        max_steps=positive_int(c, "max_steps", max_steps),
        bus_id=int(bus_id),
    )


class BatteryEnv(Environment):
    """Single battery.

    . Physics: [`powerzoojax.physics.devices`][powerzoojax.physics.devices] (`battery_step`).

    `BatteryEnv` — obs `(6,)`: `[soc, P/P_rated, P_dis_max/P_rated, P_chg_max/P_rated,
    sin, cos]` (limits for the next step); action `(1,)` in [-1, 1] → `P_des` on
    `[−P_rated, P_rated]` MW (positive = discharge); reward 0; costs
    `(cycle_cost·|P|·Δt,)` named `cycle_throughput`; `done` at `max_steps`.
    """
    def default_params(self) -> BatteryParams:
        return make_battery_params()

    def observation_space(self, params: BatteryParams) -> Box:
        return make_box(-1.0, 1.0, (6,))

    def action_space(self, params: BatteryParams) -> Box:
        return make_box(-1.0, 1.0, (1,))

    def constraint_names(self, params: BatteryParams) -> tuple[str, ...]:
        return ("cycle_throughput",)

    def physics_invariants(self, params: BatteryParams) -> tuple[Invariant, ...]:
        # SOC band, SOC change = energy moved by the delivered power, power within the rating.
        return battery_env_laws()

    def _obs(self, state: BatteryState, params: BatteryParams) -> Float[Array, "6"]:
        p_dis, p_chg = battery_limits(
            state.soc, params.energy_mwh, params.power_mw, params.eta_c, params.eta_d,
            params.soc_min, params.soc_max, params.delta_t_hours,
        )
        inv = 1.0 / params.power_mw
        head = jnp.stack([state.soc, state.current_p_mw * inv, p_dis * inv, p_chg * inv])
        return jnp.concatenate([head, time_features(state.time_step, params.steps_per_day)])

    def observe(self, state: BatteryState, params: BatteryParams) -> Float[Array, "6"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: BatteryParams) -> tuple[Float[Array, "6"], BatteryState]:
        zero = jnp.zeros((), jnp.float32)
        state = BatteryState(
            time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False),
            current_p_mw=zero, current_q_mvar=zero, soc=params.initial_soc,
        )
        return self._obs(state, params), state

    def step_env(
        self, key: Key, state: BatteryState, action: Float[ArrayLike, "1"], params: BatteryParams
    ) -> tuple[Float[Array, "6"], BatteryState, FloatScalar, Float[Array, "1"], Bool[Array, ""], Info]:
        a = jnp.asarray(action, jnp.float32).reshape(())
        p_des = denormalize_action(a, -params.power_mw, params.power_mw)
        p, soc = battery_step(
            state.soc, p_des, params.energy_mwh, params.power_mw, params.eta_c, params.eta_d,
            params.soc_min, params.soc_max, params.delta_t_hours,
        )
        cycle = params.cycle_cost * jnp.abs(p) * params.delta_t_hours
        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        nxt = BatteryState(time_step=time_step, done=done, current_p_mw=p,
                           current_q_mvar=jnp.zeros((), jnp.float32), soc=soc)
        info = {
            "cost_cycle_throughput": cycle,
            "cost_sum": cycle,
            "cost_action_clip": jnp.abs(p_des - p) / params.power_mw,
            "p_mw": p,
            "soc": soc,
        }
        return self._obs(nxt, params), nxt, jnp.zeros((), jnp.float32), stack_costs(cycle), done, info


# ----------------------------------------------------------------------------- bundle


class BatteryBundleState(eqx.Module):
    """State of a [`BatteryBundle`][powerzoojax.grid.resources.BatteryBundle].

    **Arguments:**

    - `soc`: `(n_devices,)` states of charge [fraction].
    """
    soc: Float[Array, " n_devices"]


class BatteryBundle(ResourceBundle):
    """N batteries on a grid; build with [`make_battery_bundle`][powerzoojax.grid.resources.make_battery_bundle].

    Action per device `[P]` or `[P, Q]` in [-1, 1]: `P_des = a·power_max` (clipped to SOC
    feasibility), `Q_des = q·s_rated` clipped into `P² + Q² ≤ s_rated²` (free of SOC). Obs
    per device `[soc, P/P_max(, Q/s_rated)]`, but
    [`observe`][powerzoojax.grid.resources.BatteryBundle.observe] reports zeros for P and Q
    (a quirk of the reference). cost_info: `cost_soc_clip` (Σ normalised clipping),
    `cost_cycle`, `cost_sum`.

    **Arguments:**

    - `bus_idx`: `(n,)` internal bus of each battery.
    - `power_max`: `(n,)` power rating [MW].
    - `energy_mwh`: `(n,)` capacity [MWh].
    - `s_rated`: `(n,)` inverter rating [MVA].
    - `eta_c`, `eta_d`: `(n,)` one-way efficiencies.
    - `soc_min`, `soc_max`: `(n,)` SOC window [fraction].
    - `initial_soc`: `(n,)` SOC at reset [fraction].
    - `cycle_cost`: `(n,)` throughput cost [$/MWh].
    - `n_devices`, `per_device_action_dim`, `per_device_obs_dim`: sizes (static).
    - `dt_hours`: step length [hours] (static).
    - `enable_q_control`: the action has a Q entry (static).
    - `randomize_initial_soc`: draw the initial SOC on reset (static).
    """

    bus_idx: Int[Array, " n_devices"]
    power_max: Float[Array, " n_devices"]
    energy_mwh: Float[Array, " n_devices"]
    s_rated: Float[Array, " n_devices"]
    eta_c: Float[Array, " n_devices"]
    eta_d: Float[Array, " n_devices"]
    soc_min: Float[Array, " n_devices"]
    soc_max: Float[Array, " n_devices"]
    initial_soc: Float[Array, " n_devices"]
    cycle_cost: Float[Array, " n_devices"]
    n_devices: int = eqx.field(static=True)
    per_device_action_dim: int = eqx.field(static=True)
    per_device_obs_dim: int = eqx.field(static=True)
    dt_hours: float = eqx.field(static=True)
    enable_q_control: bool = eqx.field(static=True)
    randomize_initial_soc: bool = eqx.field(static=True)

    def physics_invariants(self) -> tuple[Invariant, ...]:
        # SOC band; SOC change within what the rated power moves in one step.
        return battery_bundle_laws()

    def reset(self, key: Key) -> BatteryBundleState:
        if self.randomize_initial_soc:
            soc = jr.uniform(key, (self.n_devices,), jnp.float32, 0.3, 0.7)
            return BatteryBundleState(jnp.clip(soc, self.soc_min, self.soc_max))
        return BatteryBundleState(self.initial_soc)

    def _obs(self, soc, p, q) -> Float[Array, " obs_dim"]:
        cols = [soc, p / self.power_max] + ([q / self.s_rated] if self.enable_q_control else [])
        return jnp.stack(cols, axis=1).reshape(-1)

    def observe(self, bstate: BatteryBundleState, ctx: BundleCtx) -> Float[Array, " obs_dim"]:
        zero = jnp.zeros_like(bstate.soc)
        return self._obs(bstate.soc, zero, zero)

    def step(self, bstate: BatteryBundleState, action: Float[Array, " action_dim"], ctx: BundleCtx):
        a = jnp.clip(action.reshape(self.n_devices, self.per_device_action_dim), -1.0, 1.0)
        p_des = a[:, 0] * self.power_max
        p, soc = battery_step(
            bstate.soc, p_des, self.energy_mwh, self.power_max, self.eta_c, self.eta_d,
            self.soc_min, self.soc_max, self.dt_hours,
        )
        clip = jnp.sum(jnp.abs(p_des - p) / self.power_max)
        if self.enable_q_control:
            q_des = a[:, 1] * self.s_rated
            q = inverter_q_clip(q_des, p, self.s_rated)
            clip = clip + jnp.sum(jnp.abs(q_des - q) / self.s_rated)
        else:
            q = jnp.zeros_like(p)
        cycle = jnp.sum(self.cycle_cost * jnp.abs(p) * self.dt_hours)
        info = {"cost_soc_clip": clip, "cost_cycle": cycle, "cost_sum": clip + cycle}
        return BatteryBundleState(soc), p, q, self._obs(soc, p, q), info


def make_battery_bundle(
    case: CaseData | None = None,
    bus_ids: Any = None,
    n_devices: int | None = None,
    power_mw: Any = 20.0,
    energy_mwh: Any = 50.0,
    s_rated_mva: Any = None,
    soc_min: Any = 0.1,
    soc_max: Any = 0.9,
    eta_c: Any = 0.95,
    eta_d: Any = 0.95,
    initial_soc: Any = 0.5,
    cycle_cost: Any = 0.0,
    dt_hours: float = 0.5,
    enable_q_control: bool = False,
    randomize_initial_soc: bool = False,
) -> BatteryBundle:
    """Bundle of batteries at external `bus_ids` of `case` (or busless, `arange(n)`).

    Scalars broadcast over the devices.

    **Arguments:**

    - `case`: the grid; `None` for a busless bundle.
    - `bus_ids`: bus numbers of the batteries.
    - `n_devices`: number of batteries when `bus_ids` is `None`.
    - `power_mw`: power rating [MW].
    - `energy_mwh`: capacity [MWh].
    - `s_rated_mva`: inverter rating [MVA]; `None` takes `power_mw`.
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `eta_c`, `eta_d`: one-way efficiencies.
    - `initial_soc`: SOC at reset [fraction].
    - `cycle_cost`: throughput cost [$/MWh].
    - `dt_hours`: step length [hours].
    - `enable_q_control`: add a Q entry to each device's action.
    - `randomize_initial_soc`: draw the initial SOC on reset.

    **Returns:**

    A [`BatteryBundle`][powerzoojax.grid.resources.BatteryBundle].
    """
    c = "make_battery_bundle"
    n = n_devices_of(c, n_devices, bus_ids)
    bus_idx = resolve_bus_ids(c, None if case is None else case.node_ids, bus_ids, n)
    arr = lambda name, v, **kw: device_array(c, name, v, n, **kw)  # noqa: E731
    power = arr("power_mw", power_mw, positive=True)
    lo, hi, init = arr("soc_min", soc_min, non_negative=True), arr("soc_max", soc_max), arr("initial_soc", initial_soc)
    if bool(jnp.any(lo >= hi)) or bool(jnp.any(hi > 1)) or bool(jnp.any((init < lo) | (init > hi))):
        raise ValueError(
            f"{c}: need 0 <= soc_min <= initial_soc <= soc_max <= 1 with soc_min < soc_max, "
            f"got soc_min={soc_min}, initial_soc={initial_soc}, soc_max={soc_max}"
        )
    return BatteryBundle(
        bus_idx=jnp.asarray(bus_idx, jnp.int32),
        power_max=power,
        energy_mwh=arr("energy_mwh", energy_mwh, positive=True),
        s_rated=power if s_rated_mva is None else arr("s_rated_mva", s_rated_mva, positive=True),
        eta_c=arr("eta_c", eta_c, positive=True),
        eta_d=arr("eta_d", eta_d, positive=True),
        soc_min=lo,
        soc_max=hi,
        initial_soc=init,
        cycle_cost=arr("cycle_cost", cycle_cost, non_negative=True),
        n_devices=n,
        per_device_action_dim=2 if enable_q_control else 1,
        per_device_obs_dim=3 if enable_q_control else 2,
        dt_hours=finite_scalar(c, "dt_hours", dt_hours, positive=True),
        enable_q_control=bool(enable_q_control),
        randomize_initial_soc=bool(randomize_initial_soc),
    )
