"""Device kernels (powerzoojax.physics.devices) against NumPy re-derivations and invariants."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

SET = settings(max_examples=10, deadline=None)
unit = st.floats(0.0, 1.0)


@SET
@given(soc=st.floats(0.1, 0.9), a=st.floats(-1.0, 1.0), eta_c=st.floats(0.8, 1.0), eta_d=st.floats(0.8, 1.0))
def test_battery_soc_in_bounds_and_energy_balance(soc, a, eta_c, eta_d):
    from powerzoojax.physics.devices import battery_step

    e, p_rated, dt = 2.0, 1.0, 0.5
    p, soc_next = (float(x) for x in battery_step(soc, a * p_rated, e, p_rated, eta_c, eta_d, 0.1, 0.9, dt))
    assert 0.1 - 1e-6 <= soc_next <= 0.9 + 1e-6
    assert abs(p) <= p_rated + 1e-6
    # Energy balance: stored energy change equals −P·Δt/η_d (discharge) or −P·Δt·η_c (charge).
    stored = (soc_next - soc) * e
    expected = -p * dt / eta_d if p >= 0 else -p * dt * eta_c
    assert abs(stored - expected) < 1e-5


def test_battery_limits_match_hand_values():
    from powerzoojax.physics.devices import battery_limits

    dis, chg = battery_limits(0.5, 50.0, 20.0, 0.95, 0.95, 0.1, 0.9, 0.5)
    assert np.isclose(float(dis), 20.0)  # (0.4·50·0.95/0.5 = 38) clipped to 20
    dis, chg = battery_limits(0.12, 50.0, 20.0, 0.95, 0.95, 0.1, 0.9, 0.5)
    assert np.isclose(float(dis), 0.02 * 50 * 0.95 / 0.5, rtol=1e-4)
    assert np.isclose(float(chg), 20.0)


@SET
@given(cap=st.floats(0.1, 5.0), cf=unit, a=st.floats(-1, 1), q=st.floats(-1, 1), s_ratio=st.floats(1.0, 1.5))
def test_renewable_never_exceeds_availability_and_q_in_circle(cap, cf, a, q, s_ratio):
    from powerzoojax.physics.devices import renewable_step

    s = cap * s_ratio
    p, qq, c, _ = (float(x) for x in renewable_step(cap, cf, a, q, s))
    assert -1e-6 <= p <= cap * cf + 1e-6
    assert p * p + qq * qq <= s * s * (1 + 1e-5) + 1e-9
    assert np.isclose(c, (1 - a) / 2, atol=1e-6)


def test_diesel_helpers():
    from powerzoojax.physics.devices import compute_dg_emissions, compute_dg_fuel_cost, compute_dg_power

    p = np.asarray(compute_dg_power(np.array([0.1, 0.2, 0.5, 1.5]), 0.6, 0.3))
    np.testing.assert_allclose(p, [0.0, 0.18, 0.30, 0.60], atol=1e-6)
    assert np.isclose(float(compute_dg_fuel_cost(p, 0.5, 300.0)), p.sum() * 0.5 * 300, rtol=1e-5)
    assert np.isclose(float(compute_dg_emissions(p, 0.5, 0.8)), p.sum() * 0.5 * 1000 * 0.8, rtol=1e-5)


@SET
@given(actions=st.lists(st.tuples(unit, unit), min_size=1, max_size=20), horizon=st.integers(1, 8))
def test_flexload_buffer_conserves_shifted_energy(actions, horizon):
    import jax.numpy as jnp

    from powerzoojax.physics.devices import FLEX_BUFFER_SLOTS, flexload_buffer_energy, flexload_step

    buf = jnp.zeros((FLEX_BUFFER_SLOTS,))
    head = jnp.asarray(0, jnp.int32)
    size = jnp.asarray(0, jnp.int32)
    out_total = in_total = 0.0
    for a0, a1 in actions + [(0.0, 0.0)] * (horizon + 1):
        buf, head, size, _, s_out, s_in = flexload_step(buf, head, size, a0, a1, 1.0, 1.0, horizon)
        out_total += float(s_out)
        in_total += float(s_in)
    assert np.isclose(out_total, in_total, atol=1e-4)
    assert float(flexload_buffer_energy(buf)) < 1e-5


def test_vehicle_departs_and_returns():
    import jax.numpy as jnp

    from powerzoojax.physics.devices import vehicle_commute

    inf = jnp.full((8,), jnp.inf)
    dep, arr, e = inf.at[0].set(8.0), inf.at[0].set(18.0), jnp.zeros(8).at[0].set(0.015)
    soc, home, short = vehicle_commute(jnp.asarray(0.7), jnp.asarray(True), jnp.asarray(8.1), dep, arr, e,
                                       0.06, 0.1, 0.8, 0.25)
    assert not bool(home) and np.isclose(float(short), 0.1) and np.isclose(float(soc), 0.7 - 0.25, atol=1e-6)
    soc, home, _ = vehicle_commute(soc, home, jnp.asarray(18.0), dep, arr, e, 0.06, 0.1, 0.8, 0.25)
    assert bool(home)
