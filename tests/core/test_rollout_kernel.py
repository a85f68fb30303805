"""The rollout kernel and the seed-named helpers, on the core-only toy env."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np


def test_scan_rollout_matches_python_loop(toy):
    from powerzoojax.utils.jax_utils import scan_rollout

    env, params = toy
    key = jr.PRNGKey(0)
    _, state0 = env.reset(jr.PRNGKey(1), params)
    actions = jr.uniform(jr.PRNGKey(2), (20, 1), minval=-1, maxval=1)
    final, obs, rew, costs, dones, info = jax.jit(scan_rollout, static_argnums=0)(env, key, state0, params, actions)
    assert obs.shape == (20, 2) and rew.shape == (20,) and costs.shape == (20, 1) and dones.shape == (20,)
    assert info["cost_sum"].shape == (20,)
    # The kernel splits the master key into T step keys before the scan.
    state = state0
    keys = jr.split(key, 20)
    step = jax.jit(env.step_auto_reset)
    for t in range(20):
        o, state, r, c, d, _ = step(keys[t], state, actions[t], params)
        np.testing.assert_allclose(o, obs[t], rtol=1e-6)
        np.testing.assert_allclose(r, rew[t], rtol=1e-6)
        assert bool(d) == bool(dones[t])
    np.testing.assert_allclose(state.x, final.x)
    # episodes of 8 steps: done at t = 7 and 15
    assert np.flatnonzero(np.asarray(dones)).tolist() == [7, 15]


def test_batch_reset_and_batch_step_shapes(toy):
    from powerzoojax.utils.jax_utils import batch_reset, batch_step, split_key_for_envs

    env, params = toy
    n_envs = 6
    keys = split_key_for_envs(jr.PRNGKey(0), n_envs)
    assert keys.shape == (n_envs, 2)
    obs, states = batch_reset(env, keys, params)
    assert obs.shape == (n_envs, 2) and states.x.shape == (n_envs,)
    assert len(set(np.asarray(states.x).tolist())) == n_envs  # independent keys
    actions = jnp.zeros((n_envs, 1))
    obs, states, rewards, costs, dones, infos = batch_step(env, keys, states, actions, params)
    assert obs.shape == (n_envs, 2) and rewards.shape == (n_envs,) and costs.shape == (n_envs, 1)
    assert dones.shape == (n_envs,) and infos["cost_sum"].shape == (n_envs,)


def test_policy_rollout_carries_observation(toy):
    from powerzoojax.core import bind_step, rollout

    env, params = toy
    obs0, state0 = env.reset(jr.PRNGKey(0), params)

    def policy(key, obs, _):
        action = -jnp.sign(obs[:1])  # push x back to 0
        return action, obs

    final_state, final_obs, (next_obs, rew, costs, dones, info, seen_obs) = jax.jit(
        lambda k, s, o: rollout(bind_step(env, params), k, s, None, length=10, policy=policy, init_obs=o)
    )(jr.PRNGKey(3), state0, obs0)
    # the policy saw the initial obs first, then each step's returned obs
    np.testing.assert_allclose(seen_obs[0], obs0)
    np.testing.assert_allclose(seen_obs[1:], next_obs[:-1])
    np.testing.assert_allclose(final_obs, next_obs[-1])


def test_rollout_requires_length_or_xs(toy):
    import pytest

    from powerzoojax.core import bind_step, rollout

    env, params = toy
    _, s = env.reset(jr.PRNGKey(0), params)
    with pytest.raises(ValueError, match="leading time axis or an explicit length"):
        rollout(bind_step(env, params), jr.PRNGKey(0), s)


def test_step_auto_reset_stops_gradients(toy):
    env, params = toy
    _, s = env.reset(jr.PRNGKey(0), params)

    def f(a):
        obs, state, reward, *_ = env.step_auto_reset(jr.PRNGKey(1), s, a, params)
        return jnp.sum(obs) + state.x, reward

    g_obs = jax.grad(lambda a: f(a)[0])(jnp.ones(1))
    g_rew = jax.grad(lambda a: f(a)[1])(jnp.ones(1))
    assert float(jnp.abs(g_obs).sum()) == 0.0
    assert float(jnp.abs(g_rew).sum()) > 0.0


def test_toy_env_passes_conformance_kit(toy):
    from powerzoojax.testing import check_env_api, check_no_retrace

    env, params = toy
    check_env_api(env, params, stochastic=True)
    counts = check_no_retrace(env, params)
    assert counts == {"reset": 1, "step": 1, "rollout": 1}
