"""Wrappers on the core-only toy env (runs with pzj-rl alone): plain ``jax.jit`` on their
bound methods, and no NaN ever latched as an episode return."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


@pytest.fixture(scope="module")
def toy():
    from toy_env import ToyEnv, make_toy_params

    return ToyEnv(), make_toy_params(max_steps=3)


@pytest.mark.parametrize("name", ["LogWrapper", "SafeRLWrapper", "SauteWrapper"])
def test_plain_jax_jit_on_a_toy_wrapper(toy, name):
    import powerzoojax.rl.wrappers as wrappers

    wrapped = getattr(wrappers, name)(*toy)
    _, state = jax.jit(wrapped.reset)(jr.PRNGKey(0))
    step = jax.jit(wrapped.step)
    out = step(jr.PRNGKey(1), state, jnp.array([jnp.nan], jnp.float32))
    assert bool(out[-1]["invalid_action"]) and bool(jnp.isfinite(out[2]))


def test_nan_rewards_never_latch(toy):
    from powerzoojax.core import rollout
    from powerzoojax.rl.wrappers import LogWrapper, RewardWrapper

    wrapped = RewardWrapper(LogWrapper(*toy), lambda obs, a, nxt, r, info: jnp.where(a[0] > 0, jnp.nan, r))
    _, state = wrapped.reset(jr.PRNGKey(0))
    actions = jnp.array([[0.5], [-0.5], [-0.5], [-0.5], [0.5], [-0.5]], jnp.float32)
    final, _, (_, rewards, dones, info) = rollout(wrapped.step, jr.PRNGKey(1), state, actions)
    r = np.asarray(rewards)
    assert np.isnan(r[0]) and np.isnan(r[4]) and np.asarray(dones).sum() == 2
    returns = np.asarray(info["returned_episode_returns"])
    assert np.all(np.isfinite(returns)) and np.isfinite(float(final.episode_returns))
    assert returns[2] == pytest.approx(float(r[1] + r[2]), rel=1e-6)
    assert returns[5] == pytest.approx(float(r[3] + r[5]), rel=1e-6)
