"""TransGridEnv (DC mode) against the env contract, the seeds' shapes and its own spec."""

import re

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def test_case5_passes_conformance_kit(trans5):
    from powerzoojax.testing import check_env_api, check_no_retrace

    env, params = trans5
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=2) == {"reset": 1, "step": 1, "rollout": 1}


def test_case118_passes_conformance_kit(case118):
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.testing import check_env_api

    env = TransGridEnv()
    check_env_api(env, make_trans_params(case118, max_steps=6))


def test_new_load_profiles_do_not_retrace(case5):
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.testing import check_no_retrace

    env = TransGridEnv()
    base = make_trans_params(case5, max_steps=4)
    rng = np.random.default_rng(0)
    variants = [
        make_trans_params(case5, load_profiles=rng.uniform(0, 300, (4, 5)), max_steps=4, reward_scale=0.5)
        for _ in range(2)
    ]
    check_no_retrace(env, base, param_variants=variants)


def test_spaces_and_names(trans5, case5):
    env, params = trans5
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    assert obs_space.shape == (case5.n_lines + case5.n_loads + case5.n_units + 2,) == (18,)
    assert act_space.shape == (5,)
    assert float(act_space.low.min()) == -1.0 and float(act_space.high.max()) == 1.0
    assert env.constraint_names(params) == ("thermal_overload", "voltage_violation", "power_balance", "resource")


def test_reset_is_proportional_dispatch_on_nominal_load(trans5, case5):
    env, params = trans5
    obs, state = env.reset(jr.PRNGKey(0), params)
    load = np.asarray(params.load_profiles[0])
    assert load.sum() == pytest.approx(750.0)
    assert float(state.unit_power_mw.sum()) == pytest.approx(750.0, rel=1e-5)
    # Every unit at p_min, the rest of the load split in proportion to headroom.
    p_min, p_max = np.asarray(case5.unit_p_min, np.float64), np.asarray(case5.unit_p_max, np.float64)
    assert p_min.sum() > 0  # the benchmark table's minimums make both terms matter
    expected = p_min + (750.0 - p_min.sum()) * (p_max - p_min) / (p_max - p_min).sum()
    np.testing.assert_allclose(np.asarray(state.unit_power_mw), expected, rtol=1e-5)
    assert bool(state.is_safe) and int(state.n_violations) == 0 and float(state.total_cost) == 0.0


def test_step_info_keys_and_reward(trans5):
    env, params = trans5
    _, state = env.reset(jr.PRNGKey(0), params)
    obs, state, reward, costs, done, info = jax.jit(env.step)(jr.PRNGKey(1), state, jnp.zeros(5), params)
    expected = {
        "gen_cost", "cost_thermal_overload", "cost_voltage_violation", "cost_power_balance",
        "cost_resource", "cost_load_shedding", "cost_sum", "is_safe", "n_violations", "goal_met",
        "line_viol_mva", "islanded", "invalid_action",
    }
    assert set(info) == expected
    assert float(reward) == pytest.approx(-0.01 * float(info["gen_cost"]), rel=1e-6)
    assert float(info["cost_sum"]) == pytest.approx(float(costs.sum()), rel=1e-6)
    assert float(state.total_cost) == pytest.approx(float(info["gen_cost"]), rel=1e-6)
    assert int(state.time_step) == 1 and not bool(done)


def test_observation_layout(trans5, case5):
    env, params = trans5
    _, state = env.reset(jr.PRNGKey(0), params)
    action = jnp.linspace(-1, 1, 5)
    obs, state, *_ = env.step(jr.PRNGKey(1), state, action, params)
    L, D, G = case5.n_lines, case5.n_loads, case5.n_units
    cap = np.maximum(np.abs(np.asarray(case5.line_cap)), 1.0)
    np.testing.assert_allclose(obs[:L], np.asarray(state.line_flow_mw) / cap, rtol=1e-6)
    np.testing.assert_allclose(obs[L : L + D], np.asarray(params.load_profiles[1]) / 1530.0, rtol=1e-6)
    np.testing.assert_allclose(obs[L + D : L + D + G], np.asarray(state.unit_power_mw) / np.asarray(case5.unit_p_max), rtol=1e-6)
    phi = 2 * np.pi * 1 / 48
    np.testing.assert_allclose(obs[-2:], [np.sin(phi), np.cos(phi)], atol=1e-6)


def test_action_maps_onto_unit_limits_and_slack_takes_imbalance(trans5, case5):
    env, params = trans5
    _, state = env.reset(jr.PRNGKey(0), params)
    action = jnp.array([-1.0, 1.0, 0.0, -1.0, 1.0])
    _, state, *_ = env.step(jr.PRNGKey(1), state, action, params)
    p_min, p_max = np.asarray(case5.unit_p_min), np.asarray(case5.unit_p_max)
    requested = 0.5 * (p_min + p_max) + 0.5 * np.asarray(action) * (p_max - p_min)
    p = np.asarray(state.unit_power_mw)
    slack_units = np.asarray(case5.unit_node_idx) == case5.slack_bus_idx
    np.testing.assert_allclose(p[~slack_units], requested[~slack_units], rtol=1e-6)
    assert p.sum() == pytest.approx(float(params.load_profiles[0].sum()), rel=1e-5)
    # the slack units split the imbalance evenly
    imbalance = float(params.load_profiles[0].sum()) - requested.sum()
    np.testing.assert_allclose(p[slack_units], requested[slack_units] + imbalance / slack_units.sum(), rtol=1e-5)


def test_done_and_auto_reset_in_long_rollout(trans5):
    from powerzoojax.utils.jax_utils import scan_rollout

    env, params = trans5
    _, state = env.reset(jr.PRNGKey(0), params)
    actions = jr.uniform(jr.PRNGKey(1), (100, 5), minval=-1, maxval=1)
    final, obs, rew, costs, dones, info = jax.jit(scan_rollout, static_argnums=0)(env, jr.PRNGKey(2), state, params, actions)
    assert np.flatnonzero(np.asarray(dones)).tolist() == [47, 95]
    assert int(final.time_step) == 4
    assert bool(jnp.all(jnp.isfinite(rew))) and bool(jnp.all(costs >= 0))


def test_include_unit_dispatch_false_uses_proportional_dispatch(case5):
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.testing import check_env_api

    env = TransGridEnv()
    params = make_trans_params(case5, max_steps=4, include_unit_dispatch=False)
    assert env.action_space(params).shape == (0,)
    check_env_api(env, params)
    _, s = env.reset(jr.PRNGKey(0), params)
    _, s2, *_ = env.step(jr.PRNGKey(1), s, jnp.zeros(0), params)
    np.testing.assert_allclose(s2.unit_power_mw, s.unit_power_mw, rtol=1e-6)


def test_vmap_over_params(case5):
    """Params are leaves: scenarios can be vmapped without recompiling per scenario."""
    from powerzoojax.envs import TransGridEnv, make_trans_params

    env = TransGridEnv()
    scales = [0.6, 1.0, 1.3]
    stacked = jax.tree.map(
        lambda *xs: jnp.stack(xs),
        *[make_trans_params(case5, load_profiles=np.full((4, 5), 150.0 * s), max_steps=4) for s in scales],
    )
    _, states = jax.vmap(env.reset, in_axes=(None, 0))(jr.PRNGKey(0), stacked)
    np.testing.assert_allclose(states.unit_power_mw.sum(axis=1), [750 * s for s in scales], rtol=1e-5)


def _structure(hlo: str) -> str:
    """Optimised HLO without metadata and without the numbers in names, which count every
    op traced before (``%add.365``, ``%region_15``)."""
    hlo = re.sub(r", metadata=\{[^}]*\}", "", hlo)
    hlo = re.sub(r"_\d+\b", "", re.sub(r"([%\w\-]+)\.\d+\b", r"\1", hlo))
    return "\n".join(line for line in hlo.splitlines() if not line.startswith("HloModule"))


def test_vmapped_case5_rollout_is_plain_batching(trans5):
    """Every per-step row of case 5 (key, action, 5-bus observation, reward, info) is a
    few bytes, so a batch-major loop would write nothing batch-major: `vmap(scan_rollout)`
    compiles to the program of plain batching (`vmap` of the unbatched rollout)."""
    from powerzoojax.core import _rollout
    from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

    env, params = trans5
    keys = jr.split(jr.PRNGKey(0), 8)
    _, states = batch_reset(env, keys, params)
    actions = jr.uniform(jr.PRNGKey(1), (8, 6, *env.action_space(params).shape), minval=-1.0, maxval=1.0)

    def program(rollout):
        # The keys are a constant: the DC step draws nothing, and plain batching's program
        # would drop an unused key argument where the rule's wrapper keeps it.
        run = lambda s, a: jax.vmap(lambda k, s, a: rollout(env, k, s, params, a))(keys, s, a)  # noqa: E731
        return _structure(jax.jit(run).lower(states, actions).compile().as_text() or "")

    def plain(env, k, s, params, a):
        return _rollout._scan_rollout_unbatched(env, False, k, s, params, a)

    assert program(scan_rollout) == program(plain)
