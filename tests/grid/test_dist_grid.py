"""DistGridEnv against the env contract, the spec §3.2 layout, and the radial power flow."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

from reference_ac import newton_ac_pf


@functools.lru_cache(maxsize=None)
def _dist(case_id, **kwargs):
    from powerzoojax.case import load_case
    from powerzoojax.grid import DistGridEnv, make_dist_params

    case = load_case(case_id)
    return case, DistGridEnv(), make_dist_params(case, **kwargs)


@functools.lru_cache(maxsize=None)
def _jit_step():
    from powerzoojax.grid import DistGridEnv

    return jax.jit(DistGridEnv().step)


def test_case33bw_passes_conformance_kit():
    from powerzoojax.testing import check_env_api, check_no_retrace

    _, env, params = _dist("33bw", max_steps=4)
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=2) == {"reset": 1, "step": 1, "rollout": 1}


def test_new_profiles_and_band_do_not_retrace():
    from powerzoojax.grid import make_dist_params
    from powerzoojax.testing import check_no_retrace

    case, env, params = _dist("33bw", max_steps=4)
    rng = np.random.default_rng(0)
    base_p = np.asarray(case.node_pd) / case.base_mva
    base_q = np.asarray(case.node_qd) / case.base_mva
    variants = [
        make_dist_params(
            case, max_steps=4, v_min=0.92 + 0.01 * i, v_slack=1.0 + 0.02 * i, loss_penalty_weight=0.5,
            p_load_profiles=base_p * rng.uniform(0.5, 1.5, (4, 33)),
            q_load_profiles=base_q * rng.uniform(0.5, 1.5, (4, 33)),
        )
        for i in range(2)
    ]
    check_no_retrace(env, params, param_variants=variants, n_episodes=1)


def test_spaces_and_names_case33bw():
    _, env, params = _dist("33bw")
    assert env.observation_space(params).shape == (3 * 33 + 2 * 32 + 2,) == (165,)
    assert env.action_space(params).shape == (32,)
    assert env.constraint_names(params) == ("voltage_violation", "thermal_overload", "resource")
    _, env, no_der = _dist("33bw", include_der=False)
    assert env.action_space(no_der).shape == (0,)
    _, env, p141 = _dist("141")
    assert env.observation_space(p141).shape == (3 * 141 + 2 * 140 + 2,)
    assert env.action_space(p141).shape == (140,)


def test_reset_solves_row_zero_and_obs_layout():
    case, env, params = _dist("33bw")
    obs, state = env.reset(jr.PRNGKey(0), params)
    assert float(state.v_mag[17]) == pytest.approx(0.91309, abs=2e-4)
    assert float(state.p_loss_total) * case.base_mva == pytest.approx(0.20268, abs=2e-4)
    assert state.episode_batt_soc_init.shape == (0,) and state.resource_states == ()
    p_ref = float(np.sum(np.asarray(case.node_pd))) / case.base_mva
    q_ref = float(np.sum(np.asarray(case.node_qd))) / case.base_mva
    obs = np.asarray(obs)
    np.testing.assert_allclose(obs[:33], (np.asarray(state.v_mag) - 1.0) / 0.1, atol=1e-5)
    np.testing.assert_allclose(obs[33:65], np.asarray(state.p_branch) / p_ref, rtol=1e-5)
    np.testing.assert_allclose(obs[65:97], np.asarray(state.q_branch) / q_ref, rtol=1e-5)
    np.testing.assert_allclose(obs[97:130], np.asarray(case.node_pd) / case.base_mva / p_ref, rtol=1e-5)
    np.testing.assert_allclose(obs[130:163], np.asarray(case.node_qd) / case.base_mva / q_ref, rtol=1e-5)
    np.testing.assert_allclose(obs[163:], [0.0, 1.0], atol=1e-6)


def test_step_reward_info_and_der_against_newton():
    from powerzoojax.case import build_ybus

    case, env, params = _dist("33bw")
    _, state = env.reset(jr.PRNGKey(0), params)
    action = jnp.linspace(-1.0, 1.0, 32)
    obs, state, reward, costs, done, info = _jit_step()(jr.PRNGKey(1), state, action, params)
    expected = {
        "cost_voltage_violation", "cost_thermal_overload", "cost_resource", "cost_continuous", "cost_sum",
        "is_safe", "goal_met", "n_violations", "v_min_step", "v_max_step", "p_loss_MW", "q_loss_MVAr",
        "bfs_converged", "bfs_n_iter", "bfs_residual", "soc_terminal_sq", "resource_curtailed_mw",
        "resource_shift_out_mw", "resource_shift_in_mw", "p_head_MW", "invalid_action",
    }
    assert set(info) == expected
    assert env.iteration_count_keys(params) == ("bfs_n_iter",)  # left out of the kit's jit = eager, vmap = loop
    assert bool(info["bfs_converged"]) and int(state.time_step) == 1 and not bool(done)
    assert float(reward) == pytest.approx(-0.1 * float(info["p_loss_MW"]), rel=1e-6)
    assert float(info["cost_sum"]) == pytest.approx(float(costs.sum()))
    # DER injection at buses 2..33 from -0.005 to +0.005 p.u.: same voltages as a Newton solve.
    der = np.linspace(-0.005, 0.005, 32)
    p = np.asarray(case.node_pd, np.float64) / case.base_mva
    p[1:] -= der
    q = np.asarray(case.node_qd, np.float64) / case.base_mva
    vm, _, _ = newton_ac_pf(build_ybus(case), 0, p, q)
    np.testing.assert_allclose(np.asarray(state.v_mag), vm, atol=1e-5)
    assert float(info["v_min_step"]) == pytest.approx(vm.min(), abs=1e-5)


def test_each_step_warm_starts_from_the_last_sweep():
    # The state carries the last sweep's loss_correction; the next step's sweep starts
    # from it. Same loads as the reset's solve (zero DER action on flat profiles): the
    # warm step lands on the same point in fewer sweeps than a cold one.
    import equinox as eqx

    _, env, params = _dist("33bw")
    _, state = env.reset(jr.PRNGKey(0), params)
    assert state.bfs_warm_start.shape == (32,) and float(jnp.max(state.bfs_warm_start)) > 0.0
    cold_state = eqx.tree_at(lambda s: s.bfs_warm_start, state, jnp.zeros(32))
    action = jnp.zeros(32)
    obs_w, st_w, r_w, _, _, info_w = _jit_step()(jr.PRNGKey(1), state, action, params)
    obs_c, st_c, r_c, _, _, info_c = _jit_step()(jr.PRNGKey(1), cold_state, action, params)
    assert bool(info_w["bfs_converged"]) and bool(info_c["bfs_converged"])
    assert int(info_w["bfs_n_iter"]) < int(info_c["bfs_n_iter"]), (info_w["bfs_n_iter"], info_c["bfs_n_iter"])
    np.testing.assert_allclose(np.asarray(st_w.v_mag), np.asarray(st_c.v_mag), atol=1e-6)
    np.testing.assert_allclose(np.asarray(obs_w), np.asarray(obs_c), atol=1e-5)
    assert float(r_w) == pytest.approx(float(r_c), rel=1e-4)
    np.testing.assert_allclose(np.asarray(st_w.bfs_warm_start), np.asarray(state.bfs_warm_start), atol=1e-7)


def test_voltage_and_thermal_costs_count_violations():
    import equinox as eqx

    from powerzoojax.grid import make_dist_params

    case, env, _ = _dist("33bw")
    # Tight band and a 2 MVA rating on line 1 (which carries ~4.4 MVA).
    rated = eqx.tree_at(lambda c: c.line_cap, case, case.line_cap.at[0].set(2.0))
    params = make_dist_params(rated, v_min=0.95, v_max=1.05, max_steps=4)
    _, state = env.reset(jr.PRNGKey(0), params)
    _, state, _, costs, _, info = _jit_step()(jr.PRNGKey(1), state, jnp.zeros(32), params)
    v = np.asarray(state.v_mag)
    n_v = int(np.sum((v < 0.95) | (v > 1.05)))
    assert n_v > 0
    np.testing.assert_array_equal(np.asarray(costs), [n_v, 1.0, 0.0])
    s1 = case.base_mva * float(jnp.hypot(state.p_branch[0], state.q_branch[0]))
    excess = np.sum(np.maximum(0.95 - v, 0)) + (s1 - 2.0)
    assert float(info["cost_continuous"]) == pytest.approx(excess, rel=1e-4)
    assert not bool(info["is_safe"]) and int(info["n_violations"]) == n_v + 1
    assert float(state.total_cost) == pytest.approx(n_v + 1.0)


def test_overloaded_feeder_stays_finite_and_counts_as_unsafe():
    from powerzoojax.grid import make_dist_params

    case, env, _ = _dist("33bw")
    p = np.tile(8.0 * np.asarray(case.node_pd) / case.base_mva, (4, 1))
    q = np.tile(8.0 * np.asarray(case.node_qd) / case.base_mva, (4, 1))
    params = make_dist_params(case, max_steps=4, p_load_profiles=p, q_load_profiles=q)
    obs, state = env.reset(jr.PRNGKey(0), params)
    out = _jit_step()(jr.PRNGKey(1), state, jnp.zeros(32), params)
    for leaf in jax.tree.leaves(out):
        assert np.all(np.isfinite(np.asarray(leaf, np.float64)))
    info = out[5]
    assert not bool(info["bfs_converged"])
    np.testing.assert_array_equal(np.asarray(out[1].bfs_warm_start), 0.0)
    assert float(out[3][0]) == 33.0 and not bool(info["is_safe"])


def test_profiles_rows_wrap_and_episode_auto_resets():
    case, env, params = _dist("33bw", max_steps=3)
    from powerzoojax.grid import make_dist_params

    p0 = np.asarray(case.node_pd) / case.base_mva
    q0 = np.asarray(case.node_qd) / case.base_mva
    scales = np.array([1.0, 0.5, 1.5])[:, None]
    params = make_dist_params(case, max_steps=3, p_load_profiles=p0 * scales[:2], q_load_profiles=q0 * scales[:2])
    _, state = env.reset(jr.PRNGKey(0), params)
    losses = []
    for t in range(3):
        _, state, reward, _, done, info = _jit_step()(jr.PRNGKey(t), state, jnp.zeros(32), params)
        losses.append(float(info["p_loss_MW"]))
    # Rows 0, 1, 0 (t mod T); the third step ends the episode and returns a fresh state.
    assert losses[0] == pytest.approx(losses[2]) and losses[1] < losses[0]
    assert bool(done) and int(state.time_step) == 0 and not bool(state.done)
    assert float(state.total_cost) == 0.0


def test_case141_steps():
    case, env, params = _dist("141", max_steps=2)
    obs, state = env.reset(jr.PRNGKey(0), params)
    out = _jit_step()(jr.PRNGKey(1), state, jnp.zeros(140), params)
    assert out[0].shape == (3 * 141 + 2 * 140 + 2,)
    assert bool(out[5]["bfs_converged"])
    assert np.all(np.isfinite(np.asarray(out[0])))
