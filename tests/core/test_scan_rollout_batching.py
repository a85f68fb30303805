"""``jax.vmap(scan_rollout)`` uses a batch-major batching rule: it must give exactly
what running each env alone gives, for every way of batching, and under grad."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def _stack(results):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *results)


def _assert_equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def batch(toy):
    from powerzoojax.utils.jax_utils import batch_reset

    env, params = toy
    n, horizon = 5, 19  # horizon crosses two auto-resets (max_steps 8)
    keys = jr.split(jr.PRNGKey(0), n)
    _, states = batch_reset(env, keys, params)
    actions = jr.uniform(jr.PRNGKey(1), (n, horizon, 1), minval=-1, maxval=1)
    return env, params, keys, states, actions


def test_vmap_equals_each_env_alone(batch):
    from powerzoojax.utils.jax_utils import scan_rollout

    env, params, keys, states, actions = batch
    batched = jax.jit(jax.vmap(lambda k, s, a: scan_rollout(env, k, s, params, a)))(keys, states, actions)
    single = jax.jit(lambda k, s, a: scan_rollout(env, k, s, params, a))
    alone = _stack([single(keys[i], jax.tree.map(lambda x: x[i], states), actions[i]) for i in range(keys.shape[0])])
    _assert_equal(batched, alone)
    assert batched[1].shape == (5, 19, 2) and batched[3].shape == (5, 19, 1)


def test_vmap_over_params_and_broadcast_state(batch):
    from toy_env import make_toy_params

    from powerzoojax.utils.jax_utils import scan_rollout

    env, _, keys, states, actions = batch
    drifts = jnp.array([0.0, 0.05, -0.05, 0.1, 0.2])
    params_batch = jax.vmap(lambda d: make_toy_params(max_steps=8, drift=0.0).__class__(drift=d, max_steps=8))(drifts)
    state0 = jax.tree.map(lambda x: x[0], states)
    # params batched, state and key shared (broadcast), actions batched
    batched = jax.jit(
        jax.vmap(lambda p, a: scan_rollout(env, keys[0], state0, p, a), in_axes=(0, 0))
    )(params_batch, actions)
    alone = _stack(
        [scan_rollout(env, keys[0], state0, make_toy_params(max_steps=8, drift=float(d)), actions[i]) for i, d in enumerate(drifts)]
    )
    for x, y in zip(jax.tree.leaves(batched), jax.tree.leaves(alone), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-6)


def test_nested_vmap(batch):
    from powerzoojax.utils.jax_utils import scan_rollout

    env, params, keys, states, actions = batch
    inner = jax.vmap(lambda k, s, a: scan_rollout(env, k, s, params, a))
    twice = jax.jit(jax.vmap(inner, in_axes=(None, None, 0)))(keys, states, jnp.stack([actions, -actions]))
    once = jax.jit(inner)(keys, states, -actions)
    # The outer vmap batches the inner rule's loop on another memory layout, which XLA
    # vectorises (and contracts into fused multiply-adds) differently: floats agree to a
    # couple of float32 ulps of their O(1) scale (values here are within [-4, 4]), the rest exactly.
    for x, y in zip(jax.tree.leaves(jax.tree.map(lambda x: x[1], twice)), jax.tree.leaves(once), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=2**-22, atol=2**-21)
        else:
            np.testing.assert_array_equal(x, y)


def test_grad_through_vmapped_rollout(batch):
    from powerzoojax.utils.jax_utils import scan_rollout

    env, params, keys, states, actions = batch

    def total_reward(a):
        out = jax.vmap(lambda k, s, x: scan_rollout(env, k, s, params, x))(keys, states, a)
        return out[2].sum()

    def total_reward_alone(a):
        return sum(scan_rollout(env, keys[i], jax.tree.map(lambda x: x[i], states), params, a[i])[2].sum() for i in range(keys.shape[0]))

    g = jax.jit(jax.grad(total_reward))(actions)
    g_alone = jax.jit(jax.grad(total_reward_alone))(actions)
    assert float(jnp.abs(g).sum()) > 0
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_alone), rtol=1e-5, atol=1e-6)


def test_plain_vmap_of_the_scan_gives_the_same_values(batch):
    """Plain ``vmap`` of the scan (the unbatched rollout, the batch rule's reference and the
    "off" side of ``benchmarks/xla_tricks.py``) has no ``custom_vmap`` in its program and
    gives the same trajectory as ``vmap(scan_rollout)`` with the rule."""
    from powerzoojax.core import _rollout
    from powerzoojax.utils.jax_utils import scan_rollout

    env, params, keys, states, actions = batch

    def with_rule(k, s, a):
        return jax.vmap(lambda k, s, a: scan_rollout(env, k, s, params, a))(k, s, a)

    def plain(k, s, a):
        return jax.vmap(lambda k, s, a: _rollout._scan_rollout_unbatched(env, False, k, s, params, a))(k, s, a)

    # The rule's wrapper (a custom_jvp around the custom_vmap) is in the program only with it.
    assert "custom_jvp_call" in str(jax.make_jaxpr(with_rule)(keys, states, actions))
    assert "custom_jvp_call" not in str(jax.make_jaxpr(plain)(keys, states, actions))
    _assert_equal(jax.jit(plain)(keys, states, actions), jax.jit(with_rule)(keys, states, actions))
