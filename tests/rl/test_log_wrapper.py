"""LogWrapper on the core-only toy env (runs with pzj-core + pzj-rl alone)."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


@pytest.fixture(scope="module")
def wrapped(toy):
    from powerzoojax.rl import LogWrapper

    env, params = toy
    return LogWrapper(env, params)


def _run(wrapped, n_steps, seed=0):
    from powerzoojax.core import rollout

    _, state = wrapped.reset(jr.PRNGKey(seed))
    actions = jr.uniform(jr.PRNGKey(seed + 1), (n_steps, 1), minval=-1, maxval=1)
    return state, jax.jit(lambda k, s: rollout(wrapped.step_auto_reset, k, s, actions))(jr.PRNGKey(seed + 2), state)


def test_five_tuple_and_info_keys(wrapped):
    obs, state = wrapped.reset(jr.PRNGKey(0))
    out = wrapped.step(jr.PRNGKey(1), state, jnp.zeros(1))
    assert len(out) == 5
    obs, state, reward, done, info = out
    for k in ("returned_episode_returns", "returned_episode_lengths", "returned_episode", "constraint_costs", "cost_sum", "cost"):
        assert k in info
    assert info["constraint_costs"].shape == (1,)


def test_episode_statistics_latch_at_done(wrapped, toy):
    _, params = toy
    _, (final, _, (obs, rewards, dones, info)) = _run(wrapped, 3 * params.max_steps)
    rewards, dones = np.asarray(rewards), np.asarray(dones)
    ends = np.flatnonzero(dones)
    assert ends.tolist() == [7, 15, 23]
    returned = np.asarray(info["returned_episode_returns"])
    lengths = np.asarray(info["returned_episode_lengths"])
    start = 0
    for end in ends:
        assert returned[end] == pytest.approx(rewards[start : end + 1].sum(), rel=1e-5)
        assert lengths[end] == end - start + 1
        start = end + 1
    # between episode ends the latched value holds
    assert returned[8] == returned[7] and np.all(returned[:7] == 0)
    np.testing.assert_array_equal(np.asarray(info["returned_episode"]), dones)
    # running sums were reset on the last done
    assert float(final.episode_returns) == 0.0 and int(final.episode_lengths) == 0


def test_binds_params_and_forwards_spaces(wrapped, toy):
    env, params = toy
    assert wrapped.obs_size == 2 and wrapped.num_actions == 1 == wrapped.action_size
    assert wrapped.constraint_names() == ("out_of_band",)
    assert wrapped.name == "ToyEnv"


def test_default_params_when_none_given(toy):
    from powerzoojax.rl import LogWrapper

    env, _ = toy
    w = LogWrapper(env)
    assert w.params.max_steps == 8


def test_wrapper_traces_once_under_vmap_and_scan(wrapped):
    count = {"n": 0}

    def run(keys):
        count["n"] += 1
        from powerzoojax.core import rollout

        _, states = jax.vmap(wrapped.reset)(keys)
        actions = jnp.zeros((keys.shape[0], 10, 1))
        return jax.vmap(lambda k, s, a: rollout(wrapped.step_auto_reset, k, s, a))(keys, states, actions)

    f = jax.jit(run)
    for seed in range(3):
        f(jr.split(jr.PRNGKey(seed), 4))
    assert count["n"] == 1
