"""The device envs pass the shipped property tests (drawn keys, actions and device
parameters; the shared contract and each device's declared laws), and each law catches a
trajectory that breaks it."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

from powerzoojax.testing import env_property_test, record_trajectory


def _bites(env, params, traj, law_name, tampered):
    """`law_name` holds on `traj` and is broken on `tampered` (a changed copy)."""
    law = {law.name: law for law in env.physics_invariants(params)}[law_name]
    assert law.violations(traj, params) == [], law_name
    assert law.violations(tampered, params), f"{law_name} missed the tampered trajectory"


def _with_state(traj, where, value):
    return traj._replace(next_state=eqx.tree_at(where, traj.next_state, value))


# ----------------------------------------------------------------------------- battery


@functools.lru_cache(maxsize=None)
def _battery():
    from powerzoojax.grid import BatteryEnv, make_battery_params

    return BatteryEnv(), make_battery_params(energy_mwh=5.0, power_mw=4.0, max_steps=4)


def _battery_params(params):
    """Other capacities, ratings, efficiencies and SOC bands of the same shapes."""

    def build(v):
        e, p, eta_c, eta_d, lo, hi = v
        soc = jnp.asarray(0.5 * (lo + hi), jnp.float32)
        new = tuple(jnp.asarray(x, jnp.float32) for x in (e, p, eta_c, eta_d, lo, hi))
        where = lambda q: (q.energy_mwh, q.power_mw, q.eta_c, q.eta_d, q.soc_min, q.soc_max, q.initial_soc)  # noqa: E731
        return eqx.tree_at(where, params, (*new, soc))

    return st.tuples(
        st.floats(0.5, 50.0), st.floats(0.5, 20.0), st.floats(0.8, 1.0), st.floats(0.8, 1.0),
        st.floats(0.0, 0.4), st.floats(0.6, 1.0),
    ).map(build)


@env_property_test(_battery, vary_params=_battery_params, invalid_actions=True, max_examples=8)
def test_battery_env(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == [
        "battery_soc_bounds", "battery_stored_energy", "battery_power_rating",
    ]


def test_battery_laws_catch_a_wrong_soc_update():
    env, params = _battery()
    traj, _ = record_trajectory(env, params, jax.random.PRNGKey(0), jnp.ones((5, 1)))
    soc = np.asarray(traj.next_state.soc)
    _bites(env, params, traj, "battery_soc_bounds", _with_state(traj, lambda s: s.soc, soc - 0.5))
    # Charging with η_c and discharging with η_d: forgetting the efficiency is caught.
    no_loss = np.asarray(traj.state.soc) - np.asarray(traj.next_state.current_p_mw) * 0.5 / 5.0
    _bites(env, params, traj, "battery_stored_energy", _with_state(traj, lambda s: s.soc, no_loss.astype(np.float32)))
    _bites(env, params, traj, "battery_power_rating",
           _with_state(traj, lambda s: s.current_p_mw, np.asarray(traj.next_state.current_p_mw) + 5.0))


# ----------------------------------------------------------------------------- vehicle


@functools.lru_cache(maxsize=None)
def _vehicle():
    from powerzoojax.grid import VehicleEnv, make_vehicle_params

    # Hourly steps, a trip 01:00 → 03:00: every episode departs, drives and comes back.
    params = make_vehicle_params(delta_t_hours=1.0, trips=((1.0, 3.0, 0.02),), max_steps=6, initial_soc=0.6)
    return VehicleEnv(), params


@env_property_test(_vehicle, max_examples=8)
def test_vehicle_env(env, params, trajectory):
    home = np.asarray(trajectory.next_state.is_home)
    assert not home.all() and home.any()  # the charger law saw the car both away and at home


def test_vehicle_laws_catch_charging_while_away():
    env, params = _vehicle()
    traj, _ = record_trajectory(env, params, jax.random.PRNGKey(0), -jnp.ones((7, 1)))
    away = ~np.asarray(traj.next_state.is_home)
    p = np.where(away, -0.005, np.asarray(traj.next_state.current_p_mw)).astype(np.float32)
    _bites(env, params, traj, "vehicle_charger_limits", _with_state(traj, lambda s: s.current_p_mw, p))
    _bites(env, params, traj, "vehicle_soc_bounds", _with_state(traj, lambda s: s.soc, np.asarray(traj.next_state.soc) + 0.5))


def test_vehicle_started_outside_its_soc_band_is_rejected():
    """An initial SOC above soc_max was accepted and clipped away on the first step (energy
    lost without any power flowing); the factory now refuses it, and the laws catch an env
    started there."""
    from powerzoojax.grid import make_vehicle_params

    with pytest.raises(ValueError, match=r"initial_soc=0.99 must lie in \[soc_min, soc_max\] = \[0.1, 0.95\]"):
        make_vehicle_params(initial_soc=0.99)
    env, params = _vehicle()
    above = eqx.tree_at(lambda p: p.initial_soc, params, jnp.asarray(0.99, jnp.float32))
    traj, _ = record_trajectory(env, above, jax.random.PRNGKey(0), jnp.zeros((7, 1)))
    law = {law.name: law for law in env.physics_invariants(above)}["vehicle_stored_energy"]
    # 0.99 → 0.95 with the charger idle, on the first step of each episode.
    assert [t for t, _ in law.violations(traj, above)] == [0, 6]


# ----------------------------------------------------------------------------- flexible load


@functools.lru_cache(maxsize=None)
def _flexload():
    from powerzoojax.grid import FlexLoadEnv, make_flexload_params

    return FlexLoadEnv(), make_flexload_params(horizon=2, max_steps=6)


@env_property_test(_flexload, invalid_actions=True, max_examples=8)
def test_flexload_env(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["flexload_deferred_energy", "flexload_within_caps"]


def test_flexload_laws_catch_lost_deferred_load():
    env, params = _flexload()
    traj, _ = record_trajectory(env, params, jax.random.PRNGKey(0), jnp.full((7, 2), 0.5, jnp.float32))
    buffer = np.asarray(traj.next_state.deferred_buffer)
    _bites(env, params, traj, "flexload_deferred_energy", _with_state(traj, lambda s: s.deferred_buffer, 0.5 * buffer))
    _bites(env, params, traj, "flexload_within_caps",
           _with_state(traj, lambda s: s.curtailed_mw, np.asarray(traj.next_state.curtailed_mw) + 20.0))


# ----------------------------------------------------------------------------- renewable


@functools.lru_cache(maxsize=None)
def _solar():
    from powerzoojax.grid import SolarEnv, make_renewable_params

    params = make_renewable_params(capacity_mw=10.0, s_rated_mva=11.0, cf_profile=np.array([0.0, 0.4, 1.0, 0.7]), enable_q_control=True, max_steps=4)
    return SolarEnv(), params


@env_property_test(_solar, invalid_actions=True, max_examples=8)
def test_renewable_env(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["renewable_within_available", "inverter_capability"]


def test_renewable_laws_catch_output_beyond_the_sun():
    env, params = _solar()
    traj, _ = record_trajectory(env, params, jax.random.PRNGKey(0), jnp.ones((5, 2)))
    p = np.asarray(traj.next_state.current_p_mw) + 1.0
    _bites(env, params, traj, "renewable_within_available", _with_state(traj, lambda s: s.current_p_mw, p))
    _bites(env, params, traj, "inverter_capability",
           _with_state(traj, lambda s: s.current_q_mvar, np.full_like(np.asarray(traj.next_state.current_q_mvar), 11.0)))
