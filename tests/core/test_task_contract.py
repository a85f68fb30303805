"""The task contract: registry errors and the shared episode runner."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest


def test_unknown_task_names_the_choices():
    from powerzoojax.tasks import get_task

    with pytest.raises(ValueError, match="unknown task 'tsoo'.*'dso'.*'tso'"):
        get_task("tsoo")


def test_episode_rollout_matches_a_hand_stepped_episode(toy):
    from powerzoojax.core import episode_rollout

    env, params = toy
    policy = lambda obs, state, key: jnp.tanh(obs[: env.action_space(params).shape[0]]) * 0 + 0.3  # noqa: E731
    trace = jax.jit(lambda k: episode_rollout(env, params, k, policy))(jax.random.key(3))
    assert trace.reward.shape == (params.max_steps,)

    # Same keys by hand: the runner splits (reset, run) then one key per step.
    reset_key, run_key = jax.random.split(jax.random.key(3))
    obs, state = env.reset(reset_key, params)
    rewards = []
    for k in jax.random.split(run_key, params.max_steps):
        pk, ek = jax.random.split(k)
        obs, state, r, c, d, info = env.step(ek, state, policy(obs, state, pk), params)
        rewards.append(float(r))
    np.testing.assert_allclose(np.asarray(trace.reward), rewards, rtol=1e-6)


def test_episode_rollout_vmaps_over_keys(toy):
    from powerzoojax.core import episode_rollout

    env, params = toy
    policy = lambda obs, state, key: jax.random.uniform(key, env.action_space(params).shape, minval=-1, maxval=1)  # noqa: E731
    keys = jax.random.split(jax.random.key(0), 4)
    trace = jax.jit(jax.vmap(lambda k: episode_rollout(env, params, k, policy)))(keys)
    assert trace.reward.shape == (4, params.max_steps)
    assert not np.allclose(np.asarray(trace.reward[0]), np.asarray(trace.reward[1]))
