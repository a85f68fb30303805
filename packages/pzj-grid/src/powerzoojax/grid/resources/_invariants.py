"""The laws the device models obey, as host-side checks on recorded rollouts (float64).

Each device kind states its laws once, as residual functions of arrays with a leading
time axis and optional trailing device axes; the standalone envs apply them to their
own state and a bundle to its slice of the parent's state (`bundle_laws`), so a
battery is held to the same state-of-charge band whether it runs alone, on a feeder or
behind a data centre. Residuals are reduced to one value per step: the worst device.
"""

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from powerzoojax.core import Invariant, Trajectory, not_terminal

# Tolerances: SOC is a float32 fraction near 1 (its rounding is below 1e-7), powers are
# float32 MW.
SOC_TOL = 1e-6
POWER_TOL = 1e-5


def _f64(x: Any) -> np.ndarray:
    return np.asarray(x, np.float64)


def per_step(x: Any) -> np.ndarray:
    """`(T, ...)` → `(T,)`: the largest entry of each step (devices, phases)."""
    arr = _f64(x)
    return arr.reshape(arr.shape[0], -1).max(axis=1, initial=0.0)


def outside(x: Any, low: Any, high: Any) -> np.ndarray:
    """How far each entry of `x` lies outside `[low, high]` (0 inside)."""
    x = _f64(x)
    return np.maximum(np.maximum(_f64(low) - x, x - _f64(high)), 0.0)


def soc_excess(soc: Any, soc_min: Any, soc_max: Any) -> np.ndarray:
    """Per step, how far the worst SOC lies outside its band [fraction of capacity]."""
    return per_step(outside(soc, soc_min, soc_max))


def stored_energy_error(
    soc_before: Any, soc_after: Any, p_mw: Any, e_mwh: Any, eta_c: Any, eta_d: Any, dt_hours: Any
) -> np.ndarray:
    """Per step, the worst gap between the SOC change and the energy the power moved
    [fraction of capacity]: `ΔSOC·E = −PΔt/η_d` discharging (P ≥ 0), `−PΔt·η_c` charging."""
    p = _f64(p_mw)
    moved = np.where(p >= 0.0, -p * _f64(dt_hours) / _f64(eta_d), -p * _f64(dt_hours) * _f64(eta_c))
    return per_step(np.abs((_f64(soc_after) - _f64(soc_before)) - moved / _f64(e_mwh)))


def soc_rate_excess(
    soc_before: Any, soc_after: Any, p_max_mw: Any, e_mwh: Any, eta_c: Any, eta_d: Any, dt_hours: Any
) -> np.ndarray:
    """Per step, how far the worst SOC change exceeds what the rated power can move in one
    step [fraction of capacity]: a drop of `P_max Δt/(η_d E)`, a rise of `P_max Δt η_c/E`."""
    delta = _f64(soc_after) - _f64(soc_before)
    max_drop = _f64(p_max_mw) * _f64(dt_hours) / (_f64(eta_d) * _f64(e_mwh))
    max_rise = _f64(p_max_mw) * _f64(dt_hours) * _f64(eta_c) / _f64(e_mwh)
    return per_step(np.maximum(np.maximum(-delta - max_drop, delta - max_rise), 0.0))


def deferred_energy_error(buffer_before: Any, buffer_after: Any, shift_out: Any, shift_in: Any) -> np.ndarray:
    """Per step, the worst gap in the flexible load's ledger [MW·steps]: the deferred load
    grows by what is shifted out and shrinks by what comes back, nothing else."""
    owed_before = _f64(buffer_before).sum(axis=-1)
    owed_after = _f64(buffer_after).sum(axis=-1)
    return per_step(np.abs(owed_after - owed_before - _f64(shift_out) + _f64(shift_in)))


def flexload_range_excess(curtail: Any, shift_out: Any, shift_in: Any, cap_curtail: Any, cap_shift: Any) -> np.ndarray:
    """Per step, how far curtailment and shifting leave `[0, cap]` (and returns go
    negative), relative to the device's caps."""
    return np.maximum.reduce([
        per_step(outside(curtail, 0.0, cap_curtail) / _f64(cap_curtail)),
        per_step(outside(shift_out, 0.0, cap_shift) / _f64(cap_shift)),
        per_step(np.maximum(-_f64(shift_in), 0.0) / _f64(cap_shift)),
    ])


def available_power_excess(p_mw: Any, available_mw: Any, capacity_mw: Any) -> np.ndarray:
    """Per step, how far renewable output leaves `[0, cap·CF]` (fraction of capacity)."""
    return per_step(outside(p_mw, 0.0, available_mw) / _f64(capacity_mw))


def inverter_excess(p_mw: Any, q_mvar: Any, s_rated_mva: Any) -> np.ndarray:
    """Per step, how far the worst inverter operates beyond its circle `P² + Q² ≤ S²`
    (fraction of its rating)."""
    s = np.hypot(_f64(p_mw), _f64(q_mvar))
    return per_step(np.maximum(s - _f64(s_rated_mva), 0.0) / _f64(s_rated_mva))


def diesel_range_excess(p_mw: Any, p_max_mw: Any, p_min_norm: Any) -> np.ndarray:
    """Per step, how far a generator's output leaves `{0} ∪ [p_min_norm·p_max, p_max]`
    (fraction of its rating): off, or at or above its minimum stable load."""
    p = _f64(p_mw)
    p_max = _f64(p_max_mw)
    on = p > POWER_TOL * np.maximum(p_max, 1.0)
    below = np.where(on, np.maximum(_f64(p_min_norm) * p_max - p, 0.0), np.maximum(-p, 0.0))
    return per_step(np.maximum(below, np.maximum(p - p_max, 0.0)) / p_max)


# ----------------------------------------------------------------------------- bundles


def battery_bundle_laws() -> tuple[Invariant, ...]:
    """A [`BatteryBundle`][powerzoojax.grid.resources.BatteryBundle]'s laws: every SOC inside its band
    and no SOC change beyond what the rated power moves in one step."""

    def band(traj: Trajectory, b: Any) -> np.ndarray:
        return soc_excess(traj.next_state.soc, b.soc_min, b.soc_max)

    def rate(traj: Trajectory, b: Any) -> np.ndarray:
        r = soc_rate_excess(traj.state.soc, traj.next_state.soc, b.power_max, b.energy_mwh, b.eta_c, b.eta_d, b.dt_hours)
        return not_terminal(traj, r)

    return (
        Invariant("battery_soc_bounds", band, SOC_TOL, "SOC within [soc_min, soc_max] (fraction)"),
        Invariant("battery_soc_rate", rate, SOC_TOL, "SOC change within what the rated power moves in one step (fraction)"),
    )


def renewable_bundle_laws() -> tuple[Invariant, ...]:
    """A [`RenewableBundle`][powerzoojax.grid.resources.RenewableBundle]'s laws: output within the
    available `cap·CF` of the profile row it stepped on, and inside the inverter circle."""

    def available(traj: Trajectory, b: Any) -> np.ndarray:
        cf = _f64(b.cf_profiles)
        rows = cf[np.asarray(traj.state.t) % cf.shape[0]]
        r = available_power_excess(traj.next_state.p_mw, _f64(b.capacity_mw) * rows, b.capacity_mw)
        return not_terminal(traj, r)

    def circle(traj: Trajectory, b: Any) -> np.ndarray:
        return inverter_excess(traj.next_state.p_mw, traj.next_state.q_mvar, b.s_rated)

    return (
        Invariant("renewable_within_available", available, POWER_TOL, "0 ≤ P ≤ cap·CF(t) (fraction of capacity)"),
        Invariant("inverter_capability", circle, POWER_TOL, "P² + Q² ≤ s_rated² (fraction of the rating)"),
    )


def flexload_bundle_laws() -> tuple[Invariant, ...]:
    """A [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle]'s laws: shifted load is owed
    until it comes back (no loss, no gain), and actions stay within the caps."""

    def ledger(traj: Trajectory, b: Any) -> np.ndarray:
        s0, s1 = traj.state, traj.next_state
        r = deferred_energy_error(s0.deferred_buffer, s1.deferred_buffer, s1.shift_out_mw, s1.shift_in_mw)
        return not_terminal(traj, r)

    def caps(traj: Trajectory, b: Any) -> np.ndarray:
        s = traj.next_state
        return flexload_range_excess(s.curtailed_mw, s.shift_out_mw, s.shift_in_mw, b.cap_curtail_mw, b.cap_shift_mw)

    return (
        Invariant("flexload_deferred_energy", ledger, POWER_TOL, "Σ buffer' = Σ buffer + shift_out − shift_in [MW·steps]"),
        Invariant("flexload_within_caps", caps, POWER_TOL, "curtail and shift_out within [0, cap] (fraction of cap)"),
    )


def diesel_bundle_laws() -> tuple[Invariant, ...]:
    """A [`DieselBundle`][powerzoojax.grid.resources.DieselBundle]'s law: each generator off or
    between its minimum stable load and its rating."""

    def output(traj: Trajectory, b: Any) -> np.ndarray:
        return diesel_range_excess(traj.next_state.p_dg_mw, b.p_max_mw, b.p_min_norm)

    return (Invariant("diesel_output_range", output, POWER_TOL, "P ∈ {0} ∪ [p_min_norm·p_max, p_max] (fraction)"),)


def _on_bundle(law: Invariant, k: int, traj: Trajectory, params: Any) -> np.ndarray:
    view = traj._replace(state=traj.state.resource_states[k], next_state=traj.next_state.resource_states[k])
    return law.residual(view, params.resources[k])


def bundle_laws(resources: Sequence[Any]) -> tuple[Invariant, ...]:
    """The laws every attached bundle declares, each checked on its own slice of the
    parent's state (`state.resource_states[k]`, the bundle `params.resources[k]` as its
    params) and named `resources[k].<law>`.

    **Arguments:**

    - `resources`: the parent's `params.resources`, a tuple of
      [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle].

    **Returns:**

    The bundles' [`physics_invariants`][powerzoojax.grid.resources.ResourceBundle.physics_invariants]
    as laws of the parent env's trajectories, in bundle order.
    """
    laws = []
    for k, bundle in enumerate(resources):
        for law in bundle.physics_invariants():
            residual: Callable = functools.partial(_on_bundle, law, k)
            laws.append(Invariant(f"resources[{k}].{law.name}", residual, law.tol, law.doc))
    return tuple(laws)


# ----------------------------------------------------------------------------- standalone envs


def battery_env_laws() -> tuple[Invariant, ...]:
    """[`BatteryEnv`][powerzoojax.grid.BatteryEnv]: SOC in its band, the SOC change equal to the
    energy the delivered power moved, and the power within the rating."""

    def band(traj: Trajectory, p: Any) -> np.ndarray:
        return soc_excess(traj.next_state.soc, p.soc_min, p.soc_max)

    def energy(traj: Trajectory, p: Any) -> np.ndarray:
        s0, s1 = traj.state, traj.next_state
        r = stored_energy_error(s0.soc, s1.soc, s1.current_p_mw, p.energy_mwh, p.eta_c, p.eta_d, p.delta_t_hours)
        return not_terminal(traj, r)

    def rating(traj: Trajectory, p: Any) -> np.ndarray:
        return per_step(outside(traj.next_state.current_p_mw, -_f64(p.power_mw), p.power_mw) / _f64(p.power_mw))

    return (
        Invariant("battery_soc_bounds", band, SOC_TOL, "SOC within [soc_min, soc_max] (fraction)"),
        Invariant("battery_stored_energy", energy, SOC_TOL, "ΔSOC·E = −PΔt/η_d (discharge) or −PΔt·η_c (charge)"),
        Invariant("battery_power_rating", rating, POWER_TOL, "|P| ≤ P_rated (fraction of the rating)"),
    )


def vehicle_env_laws() -> tuple[Invariant, ...]:
    """[`VehicleEnv`][powerzoojax.grid.VehicleEnv]: SOC in its band; the charger idle while the car
    is away and within its ratings at home; on steps without a departure the SOC change
    equals the energy the charger moved (a departure takes the trip's energy instead)."""

    def band(traj: Trajectory, p: Any) -> np.ndarray:
        return soc_excess(traj.next_state.soc, p.soc_min, p.soc_max)

    def charger(traj: Trajectory, p: Any) -> np.ndarray:
        s = traj.next_state
        power = _f64(s.current_p_mw)
        away = np.where(np.asarray(s.is_home, bool), 0.0, np.abs(power))
        rated = outside(power, -_f64(p.p_charge_mw), p.p_discharge_mw)
        scale = max(float(p.p_charge_mw), float(p.p_discharge_mw))
        return not_terminal(traj, per_step(np.maximum(away, rated) / scale))

    def energy(traj: Trajectory, p: Any) -> np.ndarray:
        s0, s1 = traj.state, traj.next_state
        r = stored_energy_error(s0.soc, s1.soc, s1.current_p_mw, p.energy_mwh, p.eta_c, p.eta_d, p.delta_t_hours)
        departed = np.asarray(s0.is_home, bool) & ~np.asarray(s1.is_home, bool)
        return not_terminal(traj, np.where(departed, np.nan, r))

    return (
        Invariant("vehicle_soc_bounds", band, SOC_TOL, "SOC within [soc_min, soc_max] (fraction)"),
        Invariant("vehicle_charger_limits", charger, POWER_TOL, "P = 0 away, −P_chg ≤ P ≤ P_dis at home (fraction)"),
        Invariant("vehicle_stored_energy", energy, SOC_TOL, "no departure: ΔSOC·E = energy moved by the charger"),
    )


def flexload_env_laws() -> tuple[Invariant, ...]:
    """[`FlexLoadEnv`][powerzoojax.grid.FlexLoadEnv]: the deferred-load ledger and the caps (the
    bundle's laws on the standalone state)."""

    def ledger(traj: Trajectory, p: Any) -> np.ndarray:
        s0, s1 = traj.state, traj.next_state
        r = deferred_energy_error(s0.deferred_buffer, s1.deferred_buffer, s1.shift_out_mw, s1.shift_in_mw)
        return not_terminal(traj, r)

    def caps(traj: Trajectory, p: Any) -> np.ndarray:
        s = traj.next_state
        return flexload_range_excess(s.curtailed_mw, s.shift_out_mw, s.shift_in_mw, p.cap_curtail_mw, p.cap_shift_mw)

    return (
        Invariant("flexload_deferred_energy", ledger, POWER_TOL, "Σ buffer' = Σ buffer + shift_out − shift_in [MW·steps]"),
        Invariant("flexload_within_caps", caps, POWER_TOL, "curtail and shift_out within [0, cap] (fraction of cap)"),
    )


def renewable_env_laws() -> tuple[Invariant, ...]:
    """[`RenewableEnv`][powerzoojax.grid.RenewableEnv]: output within `cap·CF` of the step's profile
    row and inside the inverter circle."""

    def available(traj: Trajectory, p: Any) -> np.ndarray:
        cf = _f64(p.cf_profile)
        rows = cf[np.asarray(traj.state.time_step) % cf.shape[0]]
        r = available_power_excess(traj.next_state.current_p_mw, _f64(p.capacity_mw) * rows, p.capacity_mw)
        return not_terminal(traj, r)

    def circle(traj: Trajectory, p: Any) -> np.ndarray:
        return inverter_excess(traj.next_state.current_p_mw, traj.next_state.current_q_mvar, p.s_rated_mva)

    return (
        Invariant("renewable_within_available", available, POWER_TOL, "0 ≤ P ≤ cap·CF(t) (fraction of capacity)"),
        Invariant("inverter_capability", circle, POWER_TOL, "P² + Q² ≤ s_rated² (fraction of the rating)"),
    )
