"""Electric vehicle with commute trips, standalone only. Physics:"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float

from powerzoojax.core import Box, Environment, Invariant, make_box, stack_costs, time_features
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.core._validation import finite_scalar
from powerzoojax.grid.resources._invariants import vehicle_env_laws
from powerzoojax.grid.resources._standalone import DeviceParams, DeviceState
from powerzoojax.physics.devices import vehicle_charge, vehicle_commute

MAX_TRIPS = 8


class VehicleState(DeviceState):
    """State of [`VehicleEnv`][powerzoojax.grid.resources.VehicleEnv].

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `current_p_mw`, `current_q_mvar`: last output [MW, MVAr], positive when discharging.
    - `soc`: state of charge [fraction].
    - `is_home`: whether the vehicle is plugged in.
    - `time_of_day`: hour of day.
    """
    soc: Float[Array, ""]
    is_home: Bool[Array, ""]
    time_of_day: Float[Array, ""]


class VehicleParams(DeviceParams):
    """Params of [`VehicleEnv`][powerzoojax.grid.resources.VehicleEnv]; build with
    [`make_vehicle_params`][powerzoojax.grid.resources.make_vehicle_params].

    **Arguments:**

    - `energy_mwh`: battery capacity [MWh].
    - `initial_soc`: SOC at reset [fraction].
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `soc_departure_min`: SOC wanted at departure [fraction].
    - `p_charge_mw`, `p_discharge_mw`: charger ratings [MW].
    - `eta_c`, `eta_d`: one-way efficiencies.
    - `departure_h`, `arrival_h`: `(max_trips,)` trip times [hours].
    - `trip_mwh`: `(max_trips,)` energy of each trip [MWh].
    - `initial_time_of_day`: hour of day at reset.
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `bus_id`: bus number, `-1` when standalone (static).
    - `steps_per_day`: steps in one day (static).
    """
    energy_mwh: Float[Array, ""]
    initial_soc: Float[Array, ""]
    soc_min: Float[Array, ""]
    soc_max: Float[Array, ""]
    soc_departure_min: Float[Array, ""]
    p_charge_mw: Float[Array, ""]
    p_discharge_mw: Float[Array, ""]
    eta_c: Float[Array, ""]
    eta_d: Float[Array, ""]
    departure_h: Float[Array, " max_trips"]
    arrival_h: Float[Array, " max_trips"]
    trip_mwh: Float[Array, " max_trips"]
    initial_time_of_day: Float[Array, ""]


def make_vehicle_params(
    energy_mwh: float = 0.060,
    initial_soc: float = 0.8,
    soc_min: float = 0.1,
    soc_max: float = 0.95,
    soc_departure_min: float = 0.8,
    p_charge_mw: float = 0.007,
    p_discharge_mw: float = 0.007,
    eta_c: float = 0.95,
    eta_d: float = 0.95,
    trips: tuple = ((8.0, 18.0, 0.015),),
    delta_t_hours: float = 0.25,
    steps_per_day: int | None = None,
    max_steps: int | None = None,
    initial_time_of_day: float = 0.0,
    bus_id: int = -1,
) -> VehicleParams:
    """Params of [`VehicleEnv`][powerzoojax.grid.resources.VehicleEnv].

    Defaults: 60 kWh, 7 kW both ways, one 08:00→18:00 trip of 15 kWh, Δt 15 min and
    `steps_per_day = max_steps = 24/Δt` (96).

    **Arguments:**

    - `energy_mwh`: battery capacity [MWh].
    - `initial_soc`: SOC at reset [fraction].
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `soc_departure_min`: SOC wanted at departure [fraction].
    - `p_charge_mw`, `p_discharge_mw`: charger ratings [MW].
    - `eta_c`, `eta_d`: one-way efficiencies.
    - `trips`: up to 8 `(departure_h, arrival_h, MWh)`.
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`, `max_steps`: `None` takes `24/Δt`.
    - `initial_time_of_day`: hour of day at reset.
    - `bus_id`: bus number, `-1` when standalone.

    **Returns:**

    [`VehicleParams`][powerzoojax.grid.resources.VehicleParams].
    """
    c = "make_vehicle_params"
    dt = finite_scalar(c, "delta_t_hours", delta_t_hours, positive=True)
    per_day = int(round(24.0 / dt))
    trips = tuple(trips)
    if len(trips) > MAX_TRIPS:
        raise ValueError(f"{c}: at most {MAX_TRIPS} trips, got {len(trips)}")
    dep = np.full(MAX_TRIPS, np.inf)
    arr = np.full(MAX_TRIPS, np.inf)
    mwh = np.zeros(MAX_TRIPS)
    for k, trip in enumerate(trips):
        if len(trip) != 3:
            raise ValueError(f"{c}: each trip must be (departure_h, arrival_h, energy_mwh), got {trip!r}")
        d, a, e = (finite_scalar(c, f"trips[{k}]", v) for v in trip)
        if not (0 <= d < 24 and 0 <= a < 24 and e >= 0):
            raise ValueError(f"{c}: trip {trip!r} needs hours in [0, 24) and energy >= 0")
        dep[k], arr[k], mwh[k] = d, a, e
    f = lambda name, v, **kw: jnp.asarray(finite_scalar(c, name, v, **kw), jnp.float32)  # noqa: E731
    lo, hi = finite_scalar(c, "soc_min", soc_min), finite_scalar(c, "soc_max", soc_max)
    if not 0 <= lo < hi <= 1:
        raise ValueError(f"{c}: need 0 <= soc_min < soc_max <= 1, got {soc_min}, {soc_max}")
    # The charger's limits and the SOC update assume a SOC inside the band: one above it
    # would be clipped away on the first step, energy lost with no power flowing.
    if not lo <= finite_scalar(c, "initial_soc", initial_soc) <= hi:
        raise ValueError(f"{c}: initial_soc={initial_soc} must lie in [soc_min, soc_max] = [{soc_min}, {soc_max}]")
    return VehicleParams(
        energy_mwh=f("energy_mwh", energy_mwh, positive=True),
        initial_soc=f("initial_soc", initial_soc, non_negative=True),
        soc_min=jnp.asarray(lo, jnp.float32),
        soc_max=jnp.asarray(hi, jnp.float32),
        soc_departure_min=f("soc_departure_min", soc_departure_min, non_negative=True),
        p_charge_mw=f("p_charge_mw", p_charge_mw, positive=True),
        p_discharge_mw=f("p_discharge_mw", p_discharge_mw, non_negative=True),
        eta_c=f("eta_c", eta_c, positive=True),
        eta_d=f("eta_d", eta_d, positive=True),
        departure_h=jnp.asarray(dep, jnp.float32),
        arrival_h=jnp.asarray(arr, jnp.float32),
        trip_mwh=jnp.asarray(mwh, jnp.float32),
        initial_time_of_day=f("initial_time_of_day", initial_time_of_day, non_negative=True),
        delta_t_hours=dt,
        steps_per_day=per_day if steps_per_day is None else int(steps_per_day),
        max_steps=per_day if max_steps is None else int(max_steps),
        bus_id=int(bus_id),
    )


def _hours_until(tod: Float[Array, ""], events: Float[Array, " max_trips"]) -> Float[Array, ""]:
    wait = jnp.where(jnp.isfinite(events), jnp.mod(jnp.where(jnp.isfinite(events), events, 0.0) - tod, 24.0), 24.0)
    return jnp.min(wait)


class VehicleEnv(Environment):
    """One EV with a home charger.

    `vehicle_commute` then `vehicle_charge`.

    Obs `(9,)`: `[soc, clip(P/max(P_chg, P_dis), ±1), is_home, soc ≥ soc_dep_min,
    min(t_to_departure/24, 1), min(t_to_arrival/24, 1) (0 at home), sin, cos, soc_dep_min]`;
    action `(1,)` in [-1, 1] (≥ 0 discharge share of `P_dis_max`, < 0 charge share of
    `P_chg_max`); reward 0; costs `(departure shortfall,)` named `departure_soc` [SOC].
    """
    def default_params(self) -> VehicleParams:
        return make_vehicle_params()

    def observation_space(self, params: VehicleParams) -> Box:
        return make_box(-1.0, 1.0, (9,))

    def action_space(self, params: VehicleParams) -> Box:
        return make_box(-1.0, 1.0, (1,))

    def constraint_names(self, params: VehicleParams) -> tuple[str, ...]:
        return ("departure_soc",)

    def physics_invariants(self, params: VehicleParams) -> tuple[Invariant, ...]:
        # SOC band, charger idle away and within its ratings, energy moved = SOC change.
        return vehicle_env_laws()

    def _obs(self, s: VehicleState, params: VehicleParams) -> Float[Array, "9"]:
        p_norm = jnp.clip(s.current_p_mw / jnp.maximum(params.p_charge_mw, params.p_discharge_mw), -1.0, 1.0)
        home = s.is_home.astype(jnp.float32)
        to_dep = jnp.minimum(_hours_until(s.time_of_day, params.departure_h) / 24.0, 1.0)
        to_arr = jnp.where(s.is_home, 0.0, jnp.minimum(_hours_until(s.time_of_day, params.arrival_h) / 24.0, 1.0))
        head = jnp.stack([s.soc, p_norm, home, (s.soc >= params.soc_departure_min).astype(jnp.float32), to_dep, to_arr])
        return jnp.concatenate([head, time_features(s.time_step, params.steps_per_day), params.soc_departure_min[None]])

    def observe(self, state: VehicleState, params: VehicleParams) -> Float[Array, "9"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: VehicleParams) -> tuple[Float[Array, "9"], VehicleState]:
        zero = jnp.zeros((), jnp.float32)
        s = VehicleState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False), current_p_mw=zero,
                         current_q_mvar=zero, soc=params.initial_soc, is_home=jnp.asarray(True),
                         time_of_day=params.initial_time_of_day)
        return self._obs(s, params), s

    def step_env(
        self, key: Key, state: VehicleState, action: Float[ArrayLike, "1"], params: VehicleParams
    ) -> tuple[Float[Array, "9"], VehicleState, FloatScalar, Float[Array, "1"], Bool[Array, ""], Info]:
        dt = params.delta_t_hours
        soc, is_home, shortfall = vehicle_commute(
            state.soc, state.is_home, state.time_of_day, params.departure_h, params.arrival_h, params.trip_mwh,
            params.energy_mwh, params.soc_min, params.soc_departure_min, dt,
        )
        a = jnp.asarray(action, jnp.float32).reshape(())
        p, soc, _, _ = vehicle_charge(soc, is_home, a, params.energy_mwh, params.p_charge_mw, params.p_discharge_mw,
                                      params.eta_c, params.eta_d, params.soc_min, params.soc_max, dt)
        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        nxt = VehicleState(time_step=time_step, done=done, current_p_mw=p, current_q_mvar=jnp.zeros((), jnp.float32),
                           soc=soc, is_home=is_home, time_of_day=jnp.mod(state.time_of_day + dt, 24.0))
        info = {"cost_departure_soc": shortfall, "cost_sum": shortfall, "p_mw": p, "soc": soc}
        return self._obs(nxt, params), nxt, jnp.zeros((), jnp.float32), stack_costs(shortfall), done, info
