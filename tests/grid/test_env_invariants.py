"""Our own envs pass the shipped property tests: hypothesis-drawn keys, actions and load
profiles, the shared contract and each env's declared physics laws."""

import functools

import numpy as np

from powerzoojax.case import load_case
from powerzoojax.testing import env_property_test


def _trans(physics: int, solver_mode: int):
    from powerzoojax.envs import TransGridEnv, make_trans_params

    return lambda: (TransGridEnv(), make_trans_params(load_case("5"), max_steps=3, physics=physics, solver_mode=solver_mode))


@env_property_test(_trans(0, 0), max_examples=6)
def test_trans_dc_case5(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["dc_power_balance", "dc_flows_are_ptdf_injections"]


@env_property_test(_trans(0, 1), max_examples=6)
def test_trans_dcopf_case5(env, params, trajectory):
    assert "opf_unit_limits" in [law.name for law in env.physics_invariants(params)]


@env_property_test(_trans(1, 0), max_examples=4)
def test_trans_ac_case5(env, params, trajectory):
    assert np.asarray(trajectory.info["pf_converged"]).any()  # the law was exercised


def _dist():
    from powerzoojax.envs import DistGridEnv, make_dist_params

    return DistGridEnv(), make_dist_params(load_case("33bw"), max_steps=3)


@env_property_test(_dist, vary_load_profiles=False, max_examples=4)
def test_dist_33bw(env, params, trajectory):
    # Full DER consumption on every bus collapses the feeder: such sweeps report failure
    # and the law skips them.
    assert trajectory.info["bfs_converged"].shape == (params.max_steps + 1,)


def _uc():
    from powerzoojax.envs import UnitCommitmentEnv, make_uc_params

    return UnitCommitmentEnv(), make_uc_params(load_case("5"), max_steps=3)


@env_property_test(_uc, max_examples=4)
def test_unit_commitment_case5(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["uc_off_units_idle", "uc_committed_unit_limits", "uc_min_up_down"]


def test_a_broken_law_is_reported_on_a_real_env():
    """The DC laws are not vacuous: flows that disagree with the PTDF are caught."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from powerzoojax.testing import record_trajectory

    env, params = _trans(0, 0)()
    traj, _ = record_trajectory(env, params, jax.random.PRNGKey(0), jnp.zeros((2, 5)))
    flows_law = env.physics_invariants(params)[1]
    assert flows_law.violations(traj, params) == []
    shifted = eqx.tree_at(lambda s: s.line_flow_mw, traj.next_state, traj.next_state.line_flow_mw + 5.0)
    tampered = traj._replace(next_state=shifted)
    assert [t for t, _ in flows_law.violations(tampered, params)] == [0, 1]


def test_trans_dc_case14_under_drawn_line_outages():
    """Outages that keep case 14 connected: the DC laws hold against the host-rebuilt case."""
    import jax.numpy as jnp
    from hypothesis import given, settings

    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.testing import assert_invariants
    from powerzoojax.testing import strategies as pst

    env, params = TransGridEnv(), make_trans_params(load_case("14"), max_steps=2)
    space = env.action_space(params)

    @settings(max_examples=6, deadline=None, derandomize=True)
    @given(mask=pst.connected_line_outages(params.case, max_outages=2), key=pst.prng_keys(), acts=pst.action_sequences(space, 3))
    def prop(mask, key, acts):
        assert_invariants(env, params.with_line_outages(jnp.asarray(mask)), key, jnp.asarray(acts))

    prop()


@functools.lru_cache(maxsize=None)
def _three_phase():
    """A five-bus unbalanced feeder with mutual coupling, a single-phase lateral (phase A
    only) at its end and unequal per-phase loads."""
    from powerzoojax.envs import DistGrid3PhaseEnv, make_dist_3phase_params

    z = (0.01 + 0.02j) * (np.eye(3) + 0.3 * (np.ones((3, 3)) - np.eye(3)))
    lateral = np.zeros((3, 3), complex)
    lateral[0, 0] = 0.02 + 0.03j
    z3 = np.stack([z, 1.5 * z, 2.0 * z, lateral])
    load = np.tile([0.03, 0.01, 0.02], 4)[None, :] * np.array([[1.0], [1.4], [0.6]])
    params = make_dist_3phase_params(5, np.array([0, 1, 2, 2]), np.array([1, 2, 3, 4]), z3, load, 0.4 * load, max_steps=3)
    return DistGrid3PhaseEnv(), params


@env_property_test(_three_phase, invalid_actions=True, max_examples=8)
def test_dist_three_phase(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["three_phase_kvl", "three_phase_kcl"]
    assert np.asarray(trajectory.info["bfs_converged"]).any()  # the laws were exercised


def test_three_phase_laws_catch_a_wrong_drop_and_a_lost_load():
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from powerzoojax.testing import record_trajectory

    env, params = _three_phase()
    traj, _ = record_trajectory(env, params, jax.random.PRNGKey(0), jnp.full((4, 12), 0.5, jnp.float32))
    kvl, kcl = env.physics_invariants(params)
    assert kvl.violations(traj, params) == [] and kcl.violations(traj, params) == []
    # Phase B of bus 2 a little higher: its branches' drops no longer match Z·I.
    v_imag = np.asarray(traj.next_state.V_imag).copy()
    v_imag[:, 4] += 1e-3
    moved = traj._replace(next_state=eqx.tree_at(lambda s: s.V_imag, traj.next_state, v_imag))
    assert [t for t, _ in kvl.violations(moved, params)] == [0, 1, 3]  # step 2 is terminal
    # A load the flows do not carry: phase C of bus 3 draws 0.02 p.u. more than the sweep saw.
    p = np.asarray(params.p_load_profiles).copy()
    p[:, 3, 2] += 0.02
    more = eqx.tree_at(lambda q: q.p_load_profiles, params, jnp.asarray(p))
    assert [t for t, _ in kcl.violations(traj, more)] == [0, 1, 3]


def test_trans_grid_with_bundles_checks_the_bundles_laws():
    """With resource bundles the network's laws are not checkable from the state, but each
    bundle's are, on its own slice."""
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.grid import make_battery_bundle

    case = load_case("5")
    params = make_trans_params(case, max_steps=3, resources=(make_battery_bundle(case, [2]),))
    names = [law.name for law in TransGridEnv().physics_invariants(params)]
    assert names == ["resources[0].battery_soc_bounds", "resources[0].battery_soc_rate"]


def test_three_phase_with_bundles_keeps_kvl_and_adds_the_bundles_laws():
    """Bundle injections are not in the recorded state, so Kirchhoff's current law (which
    needs every bus's net load) gives way to the bundles' own laws; the voltage law stays."""
    from powerzoojax.envs import DistGrid3PhaseEnv, make_dist_3phase_params
    from powerzoojax.grid import make_flexload_bundle

    _, plain = _three_phase()
    flex = make_flexload_bundle(n_devices=1, cap_curtail_mw=0.1)
    z3 = np.stack([(0.01 + 0.02j) * np.eye(3)] * 2)
    params = make_dist_3phase_params(3, np.array([0, 1]), np.array([1, 2]), z3, np.full((1, 6), 0.01), np.full((1, 6), 0.004), resources=(flex,))
    names = [law.name for law in DistGrid3PhaseEnv().physics_invariants(params)]
    assert names == ["three_phase_kvl", "resources[0].flexload_deferred_energy", "resources[0].flexload_within_caps"]
    assert "three_phase_kcl" in [law.name for law in DistGrid3PhaseEnv().physics_invariants(plain)]
