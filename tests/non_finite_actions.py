"""Shared check: a non-finite action entry is replaced by its neutral value and flagged.

One jitted, vmapped step over four actions from the same state: a reference action whose
first entry is the neutral value (0 clipped into the action bounds) and whose other
entries are off-neutral, then the same action with the first entry NaN, +inf and -inf.
The three bad steps must equal the reference step exactly (the entry was replaced by the
neutral value), be finite, and carry ``invalid_action=True`` (and ``is_safe=False``
where the env reports it).
"""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

BAD_VALUES = (np.nan, np.inf, -np.inf)


def _float_leaves(tree) -> list:
    return [x for x in jax.tree.leaves(tree) if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)]


def reference_and_bad_actions(low, high, shape) -> jnp.ndarray:
    """``(4, *shape)``: the reference action, then it with entry 0 NaN, +inf, -inf."""
    low = np.broadcast_to(np.asarray(low, np.float32), shape)
    high = np.broadcast_to(np.asarray(high, np.float32), shape)
    neutral = np.clip(np.zeros(shape, np.float32), low, high)
    # Off-neutral elsewhere, inside finite bounds, so a replacement by anything but the
    # neutral value would change the step.
    span = np.where(np.isfinite(high - low), high - low, 2.0)
    reference = np.clip(neutral + 0.3 * span, low, high).reshape(-1)
    reference[0] = neutral.reshape(-1)[0]
    rows = [reference.copy()]
    for value in BAD_VALUES:
        bad = reference.copy()
        bad[0] = value
        rows.append(bad)
    return jnp.asarray(np.stack(rows).reshape((4, *shape)))


def check_non_finite_actions(env, params, *, atol: float = 0.0) -> dict:
    """Run the check on an ``Environment``; returns the vmapped step's info."""
    key = jr.PRNGKey(0)
    _, state = env.reset(key, params)
    space = env.action_space(params)
    actions = reference_and_bad_actions(space.low, space.high, space.shape)
    step = jax.jit(jax.vmap(lambda a: env.step(jr.PRNGKey(1), state, a, params)))
    obs, next_state, reward, costs, done, info = step(actions)
    for leaf in _float_leaves((obs, next_state, reward, costs)):
        assert bool(jnp.all(jnp.isfinite(leaf))), f"{env.name}: non-finite output {leaf}"
    np.testing.assert_array_equal(np.asarray(info["invalid_action"]), [False, True, True, True])
    if "is_safe" in info:
        assert not np.any(np.asarray(info["is_safe"])[1:]), f"{env.name}: is_safe set after a non-finite action"
    for leaf in _float_leaves((obs, next_state, reward, costs)):
        ref = np.asarray(leaf[0])
        for i in (1, 2, 3):
            np.testing.assert_allclose(np.asarray(leaf[i]), ref, rtol=0, atol=atol, err_msg=env.name)
    return info
