"""DistGridEnv with resource bundles attached (spec §3.2 / §4.1)."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

from powerzoojax.testing import env_property_test


@functools.lru_cache(maxsize=None)
def _setup():
    from powerzoojax.case import load_case
    from powerzoojax.grid import (
        DistGridEnv,
        make_battery_bundle,
        make_diesel_bundle,
        make_dist_params,
        make_flexload_bundle,
        make_renewable_bundle,
    )

    case = load_case("33bw")
    bundles = (
        make_flexload_bundle(case, [6, 18], cap_curtail_mw=0.2),
        make_battery_bundle(case, [9, 30], power_mw=0.3, energy_mwh=1.0, enable_q_control=True),
        make_renewable_bundle(case, [14], capacity_mw=0.5, cf_profiles=np.full(4, 0.8)),
        make_diesel_bundle(case, [25], p_max_mw=0.4),
    )
    params = make_dist_params(case, include_der=False, resources=bundles, max_steps=4)
    plain = make_dist_params(case, include_der=False, max_steps=4)
    env = DistGridEnv()
    return case, env, params, plain, jax.jit(env.step)


def test_dims_and_conformance():
    from powerzoojax.testing import check_env_api, check_no_retrace

    _, env, params, _, _ = _setup()
    assert env.action_dim(params) == 4 + 4 + 2 + 1
    assert env.obs_dim(params) == 3 * 33 + 2 * 32 + 2 + 10 + 6 + 4 + 2
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}


@env_property_test(lambda: _setup()[1:3], max_examples=8)
def test_losses_nonnegative_and_head_balances(env, params, trajectory):
    """Drawn bundle actions over an episode and its reset: the feeder's DistFlow law and
    every bundle's own laws hold (checked by the kit), losses are non-negative, every sweep
    converges, and the root-branch flow is the reported head power (Σ net load + Σ losses,
    with the bundle injections in the net load)."""
    info = trajectory.info
    assert np.all(np.asarray(info["p_loss_MW"]) >= 0) and np.all(info["bfs_converged"])
    net = params.network
    root = np.asarray(net.send_idx) == net.slack_bus_idx
    p_root_mw = np.asarray(trajectory.next_state.p_branch)[:, root].sum(axis=1) * 100.0
    live = ~trajectory.done  # a terminal step returns the next episode's reset state
    np.testing.assert_allclose(p_root_mw[live], np.asarray(info["p_head_MW"])[live], atol=1e-3)
    laws = [law.name for law in env.physics_invariants(params)]
    assert "resources[1].battery_soc_bounds" in laws and "resources[3].diesel_output_range" in laws


def test_bundle_laws_read_their_own_slice_of_the_state():
    """Each bundle's laws see its own states: a battery pushed out of its band and a
    flexible load that loses deferred energy are caught under their bundle's name."""
    import equinox as eqx

    from powerzoojax.testing import record_trajectory

    _, env, params, _, _ = _setup()
    traj, _ = record_trajectory(env, params, jr.PRNGKey(0), jnp.full((5, 11), 0.5, jnp.float32))
    laws = {law.name: law for law in env.physics_invariants(params)}
    assert all(not law.violations(traj, params) for law in laws.values())
    soc = np.asarray(traj.next_state.resource_states[1].soc)
    high = traj._replace(next_state=eqx.tree_at(lambda s: s.resource_states[1].soc, traj.next_state, soc + 0.6))
    assert laws["resources[1].battery_soc_bounds"].violations(high, params)
    assert not laws["resources[0].flexload_within_caps"].violations(high, params)
    buffer = np.asarray(traj.next_state.resource_states[0].deferred_buffer)
    lost = traj._replace(next_state=eqx.tree_at(lambda s: s.resource_states[0].deferred_buffer, traj.next_state, 0.0 * buffer))
    assert laws["resources[0].flexload_deferred_energy"].violations(lost, params)


def test_bundles_equal_load_reduction():
    """Bundle injections act exactly like an equal reduction of the bus loads."""
    from powerzoojax.grid import DistGridEnv

    _, env, params, plain, step = _setup()
    a = jnp.asarray([1.0, 0.0, 0.5, 0.0, 1.0, 0.5, -1.0, 0.0, 1.0, 0.0, 0.5])
    _, s = env.reset(jr.PRNGKey(0), params)
    _, s2, _, _, _, info = step(jr.PRNGKey(1), s, a, params)
    # Expected injections by hand: flex 0.2 and 0.1 MW curtail, battery +0.3 / −0.3 MW, PV 0.4, diesel 0.2.
    p_inj = np.zeros(33)
    p_inj[[5, 17]] += [0.2, 0.1]
    p_inj[[8, 29]] += [0.3, -0.3]
    p_inj[13] += 0.4
    p_inj[24] += 0.2
    pl = np.asarray(plain.p_load_profiles) - p_inj / 100.0
    q_batt = np.asarray(s2.resource_states[1].soc)  # touch state: exists
    assert q_batt.shape == (2,)
    # Q: battery Q_des = 0.5·0.3 and 0 MVAr within the circle; PV q=0.
    ql = np.asarray(plain.q_load_profiles).copy()
    ql[:, 8] -= 0.5 * np.sqrt(0.3**2 - 0.3**2) / 100.0  # P at rating leaves no Q headroom
    alt = plain.with_load_profiles(jnp.asarray(pl, jnp.float32), jnp.asarray(ql, jnp.float32))
    _, s_alt = DistGridEnv().reset(jr.PRNGKey(0), alt)
    _, s3, _, _, _, _ = DistGridEnv().step(jr.PRNGKey(1), s_alt, jnp.zeros((0,)), alt)
    np.testing.assert_allclose(np.asarray(s2.v_mag), np.asarray(s3.v_mag), atol=1e-5)
    assert np.isclose(float(info["resource_curtailed_mw"]), 0.3, atol=1e-6)


def test_make_dist_params_rejects_non_bundles():
    import pytest

    from powerzoojax.case import load_case
    from powerzoojax.grid import make_dist_params

    with pytest.raises(TypeError, match=r"resources\[0\] must be a ResourceBundle, got object"):
        make_dist_params(load_case("33bw"), resources=(object(),))


def test_bundle_bus_outside_case_rejected():
    import pytest

    from powerzoojax.case import load_case
    from powerzoojax.grid import make_dist_params, make_flexload_bundle

    big = make_flexload_bundle(load_case("141"), [120])
    with pytest.raises(ValueError, match=r"bus index 119, outside 0..32"):
        make_dist_params(load_case("33bw"), resources=(big,))


def test_soc_terminal_sq_reported_on_last_step():
    _, env, params, _, step = _setup()
    _, s = env.reset(jr.PRNGKey(0), params)
    a = jnp.zeros((11,)).at[4].set(1.0)  # battery 0 discharges at full power every step
    for t in range(4):
        _, s_next, _, _, done, info = step(jr.PRNGKey(t), s, a, params)
        if t < 3:
            assert float(info["soc_terminal_sq"]) == 0.0
            s = s_next
    soc = 0.5  # NumPy re-derivation: 0.3 MW for 0.5 h from 1 MWh at η_d 0.95, floor 0.1
    for _ in range(4):
        p = min(0.3, (soc - 0.1) * 1.0 * 0.95 / 0.5)
        soc -= p * 0.5 / (0.95 * 1.0)
    assert bool(done) and np.isclose(float(info["soc_terminal_sq"]), (soc - 0.5) ** 2, atol=1e-5)


def test_three_phase_bundle_splits_injection_per_phase():
    """A bundle on the three-phase env acts like removing ⅓ of its MW from each phase's load."""
    from powerzoojax.grid import DistGrid3PhaseEnv, make_dist_3phase_params, make_flexload_bundle

    from_, to = np.array([0, 1, 2]), np.array([1, 2, 3])
    z = (0.01 + 0.02j) * (np.eye(3) + 0.3 * (np.ones((3, 3)) - np.eye(3)))
    z3 = np.stack([z] * 3)
    p = np.full((2, 9), 0.02)
    flex = make_flexload_bundle(n_devices=1, cap_curtail_mw=0.3)  # busless: bus index 0 → move it to bus 2
    flex = type(flex)(**{**{f: getattr(flex, f) for f in flex.__dataclass_fields__}, "bus_idx": jnp.asarray([2], jnp.int32)})
    with_b = make_dist_3phase_params(4, from_, to, z3, p, 0.5 * p, max_steps=2, include_der=False, resources=(flex,))
    p_alt = p.copy()
    p_alt[:, 3:6] -= 0.3 / 10.0 / 3.0  # bus 2 (non-reference index 1), base 10 MVA
    plain = make_dist_3phase_params(4, from_, to, z3, p_alt, 0.5 * p, max_steps=2, include_der=False)
    env = DistGrid3PhaseEnv()
    assert env.action_dim(with_b) == 2 and env.obs_dim(with_b) == env.obs_dim(plain) + 5
    _, s = env.reset(jr.PRNGKey(0), with_b)
    _, s1, _, costs, _, info = env.step(jr.PRNGKey(1), s, jnp.asarray([1.0, 0.0]), with_b)
    _, s_p = env.reset(jr.PRNGKey(0), plain)
    _, s2, _, _, _, _ = env.step(jr.PRNGKey(1), s_p, jnp.zeros((0,)), plain)
    np.testing.assert_allclose(np.asarray(s1.v_mag), np.asarray(s2.v_mag), atol=1e-6)
    assert float(costs[3]) == pytest.approx(0.3 * 0.5 * 50.0, rel=1e-5)


@pytest.mark.slow  # the full kit: ~3 min alone under contention on 2 cores
def test_three_phase_with_bundles_passes_conformance_kit():
    """DistGrid3PhaseEnv with a battery, a flexible load and a PV bundle attached: the env
    contract and no retrace hold with bundle actions, observations and states in play."""
    from powerzoojax.grid import (
        DistGrid3PhaseEnv,
        make_battery_bundle,
        make_dist_3phase_params,
        make_flexload_bundle,
        make_renewable_bundle,
    )
    from powerzoojax.testing import check_env_api, check_no_retrace

    from_, to = np.array([0, 1, 2]), np.array([1, 2, 3])
    z = (0.01 + 0.02j) * (np.eye(3) + 0.3 * (np.ones((3, 3)) - np.eye(3)))
    p = np.full((3, 9), 0.02)
    bundles = (
        make_battery_bundle(n_devices=2, power_mw=0.1, energy_mwh=0.3, enable_q_control=True),
        make_flexload_bundle(n_devices=1, cap_curtail_mw=0.1),
        make_renewable_bundle(n_devices=1, capacity_mw=0.2, cf_profiles=np.full(3, 0.5)),
    )
    params = make_dist_3phase_params(
        4, from_, to, np.stack([z] * 3), p, 0.5 * p, max_steps=3, include_der=True, resources=bundles
    )
    env = DistGrid3PhaseEnv()
    assert env.action_dim(params) == 9 + 2 * 2 + 2 + 2
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}
