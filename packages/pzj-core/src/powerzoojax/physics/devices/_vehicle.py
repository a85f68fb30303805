"""Electric vehicle: commute events plus a home charger.

Units: energy MWh, power MW (positive = discharge to the grid), times of day in hours.
Trips are arrays of length ≤ 8 (unused: departure = arrival = ∞, energy 0).
"""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from powerzoojax.physics.devices._battery import battery_limits, battery_soc_update


def _in_window(tod: Float[Array, ""], start: Float[Array, " n_trips"], dt: Float[ArrayLike, ""]) -> Bool[Array, " n_trips"]:
    # Wrap-aware [start, start + dt) on a 24 h clock; ∞ (unused trips) never matches.
    return jnp.isfinite(start) & (jnp.mod(tod - jnp.where(jnp.isfinite(start), start, 0.0), 24.0) < dt)


def vehicle_commute(
    soc: Float[Array, ""],
    is_home: Bool[Array, ""],
    time_of_day: Float[Array, ""],
    departure_h: Float[Array, " n_trips"],
    arrival_h: Float[Array, " n_trips"],
    trip_mwh: Float[Array, " n_trips"],
    e_mwh: Float[ArrayLike, ""],
    soc_min: Float[ArrayLike, ""],
    soc_departure_min: Float[ArrayLike, ""],
    dt: Float[ArrayLike, ""],
) -> tuple[Float[Array, ""], Bool[Array, ""], Float[Array, ""]]:
    """At most one commute event this step.

    Departure if at home and `tod ∈ [dep, dep + Δt)` of some trip: shortfall
    `max(0, soc_dep_min − soc)`, `soc = max(soc_min, soc − E_trip/E)`, away. Otherwise
    arrival if away and `tod ∈ [arr, arr + Δt)` of some trip.

    **Arguments:**

    - `soc`: state of charge [fraction].
    - `is_home`: whether the vehicle is at home.
    - `time_of_day`: hour of day.
    - `departure_h`, `arrival_h`: `(n_trips,)` trip times [hours].
    - `trip_mwh`: `(n_trips,)` energy of each trip [MWh].
    - `e_mwh`: battery capacity [MWh].
    - `soc_min`: SOC floor [fraction].
    - `soc_departure_min`: SOC wanted at departure [fraction].
    - `dt`: step length [hours].

    **Returns:**

    `(soc', is_home', departure_shortfall)`, the shortfall in SOC [fraction].
    """
    dep_hit = _in_window(time_of_day, departure_h, dt)
    arr_hit = _in_window(time_of_day, arrival_h, dt)
    departs = is_home & jnp.any(dep_hit)
    arrives = (~is_home) & jnp.any(arr_hit)
    trips = jnp.where(dep_hit, trip_mwh, 0.0)
    trip_energy = jnp.sum(trips * (jnp.cumsum(dep_hit) == 1).astype(trips.dtype))
    shortfall = jnp.where(departs, jnp.maximum(soc_departure_min - soc, 0.0), 0.0)
    soc = jnp.where(departs, jnp.maximum(soc_min, soc - trip_energy / e_mwh), soc)
    is_home = jnp.where(departs, False, jnp.where(arrives, True, is_home))
    return soc, is_home, shortfall


def vehicle_charge(
    soc: Float[Array, ""],
    is_home: Bool[Array, ""],
    action: Float[ArrayLike, ""],
    e_mwh: Float[ArrayLike, ""],
    p_charge_mw: Float[ArrayLike, ""],
    p_discharge_mw: Float[ArrayLike, ""],
    eta_c: Float[ArrayLike, ""],
    eta_d: Float[ArrayLike, ""],
    soc_min: Float[ArrayLike, ""],
    soc_max: Float[ArrayLike, ""],
    dt: Float[ArrayLike, ""],
) -> tuple[Float[Array, ""], Float[Array, ""], Float[Array, ""], Float[Array, ""]]:
    """Home charger step: `a ≥ 0 → a·P_dis_max`, else `a·P_chg_max` (a clipped to [-1, 1]);
    both limits are zero while away.

    **Arguments:**

    - `soc`: state of charge [fraction].
    - `is_home`: whether the vehicle is plugged in.
    - `action`: charger action `a`.
    - `e_mwh`: battery capacity [MWh].
    - `p_charge_mw`, `p_discharge_mw`: charger ratings [MW].
    - `eta_c`, `eta_d`: one-way efficiencies.
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `dt`: step length [hours].

    **Returns:**

    `(p_mw, soc', p_dis_max, p_chg_max)`, `p_mw` positive when discharging.
    """
    p_dis_max, p_chg_max = battery_limits(
        soc, e_mwh, p_discharge_mw, eta_c, eta_d, soc_min, soc_max, dt, p_chg_rated=p_charge_mw
    )
    home = is_home.astype(jnp.float32)
    p_dis_max, p_chg_max = p_dis_max * home, p_chg_max * home
    a = jnp.clip(action, -1.0, 1.0)
    p = jnp.where(a >= 0.0, a * p_dis_max, a * p_chg_max)
    return p, battery_soc_update(soc, p, e_mwh, eta_c, eta_d, soc_min, soc_max, dt), p_dis_max, p_chg_max
