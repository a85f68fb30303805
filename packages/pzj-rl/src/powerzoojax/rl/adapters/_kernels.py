"""The compiled programs behind the adapters, shared by every adapter instance.

The env is a static argument (envs hold configuration only and hash by structure), so two
adapters over equal envs and params of one structure reuse one compiled program; params are
traced, so new params values never recompile. The multi-agent adapters hold their params,
hence `eqx.filter_jit` (arrays traced, the rest static). Each adapter call is one of these
programs: one device call per `reset` / `step`.
"""

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jaxtyping import Array, Bool, Float, PyTree, UInt32

SEED_MODULUS = 2**32


def seed_words(seeds: Any) -> np.ndarray:
    """Non-negative integer seeds as the `uint32` words that start PRNG keys (mod 2³²)."""
    values = np.asarray(seeds, dtype=object).reshape(-1)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"seed must be a non-negative integer, got {value!r}")
    return np.asarray([int(v) % SEED_MODULUS for v in values], np.uint32)


@jax.jit
def keys_from_seeds(seeds: UInt32[Array, " n"]) -> UInt32[Array, "n 2"]:
    """One PRNG key per seed (the key an env seeded with that seed starts from)."""
    return jax.vmap(jr.PRNGKey)(seeds)


def _split(key: Array) -> tuple[Array, Array]:
    key, sub = jr.split(key)
    return key, sub


@functools.partial(jax.jit, static_argnums=0)
def reset_one(env: Any, key: Array, params: Any) -> tuple[Array, Any, Any]:
    """`(next key, obs, state)` of a reset from `key`."""
    key, sub = _split(key)
    obs, state = env.reset(sub, params)
    return key, obs, state


def _step_one(env: Any, key: Array, state: Any, action: Any, params: Any) -> tuple[Array, Any, tuple]:
    key, sub = _split(key)
    obs, state, reward, costs, done, info = env.step(sub, state, action, params)
    return key, state, (obs, reward, costs, done, info)


@functools.partial(jax.jit, static_argnums=0)
def step_one(env: Any, key: Array, state: Any, action: Any, params: Any) -> tuple[Array, Any, tuple[Array, ...]]:
    """`(next key, state, packed (obs, reward, costs, done, info))` of one step from `key`;
    `host_layout` of `step_one_outputs` unpacks the last element."""
    key, state, out = _step_one(env, key, state, action, params)
    return key, state, pack(out, 0)


def step_one_outputs(env: Any, key: Array, state: Any, action: Any, params: Any) -> Any:
    """The shapes of what `step_one` packs (for `host_layout`)."""
    return jax.eval_shape(lambda k, s, a, p: _step_one(env, k, s, a, p)[2], key, state, action, params)


def _where_envs(mask: Bool[Array, " n"], on_true: PyTree, on_false: PyTree) -> PyTree:
    def pick(a: Array, b: Array) -> Array:
        return jnp.where(jnp.reshape(mask, mask.shape + (1,) * (jnp.ndim(a) - 1)), a, b)

    return jax.tree.map(pick, on_true, on_false)


@functools.partial(jax.jit, static_argnums=0)
def reset_batch(env: Any, keys: Array, params: Any) -> tuple[Array, Any, Any]:
    """`reset_one` for every key of `keys` (N, 2)."""
    return jax.vmap(reset_one.__wrapped__, in_axes=(None, 0, None))(env, keys, params)  # pyright: ignore[reportAttributeAccessIssue]


@functools.partial(jax.jit, static_argnums=0)
def reset_masked(
    env: Any, keys: Array, params: Any, mask: Bool[Array, " n"], states: Any, obs: Any
) -> tuple[Array, Any, Any]:
    """Reset the envs where `mask` holds; the others keep their key, state and obs."""
    new_keys, new_obs, new_states = jax.vmap(reset_one.__wrapped__, in_axes=(None, 0, None))(env, keys, params)  # pyright: ignore[reportAttributeAccessIssue]
    return _where_envs(mask, new_keys, keys), _where_envs(mask, new_obs, obs), _where_envs(mask, new_states, states)


def _step_batch(
    env: Any, keys: Array, states: Any, obs: Any, skip: Bool[Array, " n"], actions: Any, params: Any
) -> tuple[Array, Any, Any, tuple]:
    keys, subs = jax.vmap(_split)(keys)
    new_obs, new_states, reward, costs, done, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(subs, states, actions, params)
    out_obs = _where_envs(skip, obs, new_obs)
    out_states = _where_envs(skip, states, new_states)
    reward = jnp.where(skip, 0.0, reward)
    costs = jnp.where(skip[:, None], 0.0, costs)
    done = jnp.where(skip, False, done)
    return keys, out_obs, out_states, (out_obs, reward, costs, done, info)


@functools.partial(jax.jit, static_argnums=0)
def step_batch(
    env: Any, keys: Array, states: Any, obs: Any, skip: Bool[Array, " n"], actions: Any, params: Any
) -> tuple[Any, ...]:
    """One vmapped step of every env: `(next keys, obs, states, packed (obs, reward, costs,
    done, info))`. Envs where `skip` holds (they ended on the previous step, whose
    returned state is already their next episode's first) keep state and obs and report
    reward 0, zero costs and `done` False: Gymnasium's next-step autoreset."""
    keys, out_obs, out_states, out = _step_batch(env, keys, states, obs, skip, actions, params)
    return keys, out_obs, out_states, pack(out, 1)


def step_batch_outputs(env: Any, keys: Array, states: Any, obs: Any, skip: Any, actions: Any, params: Any) -> Any:
    """The shapes of what `step_batch` packs (for `host_layout`)."""
    return jax.eval_shape(lambda *args: _step_batch(env, *args)[3], keys, states, obs, skip, actions, params)


# -- one transfer per dtype -----------------------------------------------------------------
# Copying a result to the host costs about the same per array whatever its size (tens of µs
# on CPU), and a step's info holds a dozen small arrays: the kernels concatenate their host
# outputs into one array per dtype, and the host slices them back into views.


def _dtype_groups(leaves: list[Any]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, leaf in enumerate(leaves):
        groups.setdefault(jnp.dtype(leaf.dtype).name, []).append(i)
    return dict(sorted(groups.items()))


def pack(tree: PyTree, batch_ndim: int) -> tuple[Array, ...]:
    """Every leaf of `tree` flattened past its first `batch_ndim` axes and concatenated
    along the last axis, one array per dtype (in dtype-name order)."""
    leaves = jax.tree.leaves(tree)
    return tuple(
        jnp.concatenate([jnp.reshape(leaves[i], (*leaves[i].shape[:batch_ndim], -1)) for i in index], axis=-1)
        for index in _dtype_groups(leaves).values()
    )


class HostLayout:
    """Where each leaf sits in `pack`'s arrays, to unpack them on the host.

    **Arguments:**

    - `shapes`: the tree `pack` was given, as `jax.ShapeDtypeStruct` leaves.
    - `batch_ndim`: the leading axes kept (1 for the vector env, 0 for one env).
    """

    def __init__(self, shapes: PyTree, batch_ndim: int):
        leaves, self.treedef = jax.tree.flatten(shapes)
        self.slots: list[tuple[int, int, int, tuple[int, ...]]] = [(0, 0, 0, ())] * len(leaves)
        for group, index in enumerate(_dtype_groups(leaves).values()):
            start = 0
            for i in index:
                shape = tuple(leaves[i].shape)
                size = int(np.prod(shape[batch_ndim:], dtype=np.int64))
                self.slots[i] = (group, start, start + size, shape)
                start += size

    def unpack(self, packed: tuple[Any, ...]) -> PyTree:
        """The host tree: writable NumPy views into one fresh copy of each packed array."""
        host = [np.array(a) for a in jax.device_get(packed)]
        leaves = [host[g][..., start:stop].reshape(shape) for g, start, stop, shape in self.slots]
        return jax.tree.unflatten(self.treedef, leaves)


@eqx.filter_jit
def marl_reset(env: Any, key: Array) -> tuple[Array, Float[Array, "n_agents obs_dim"], Any]:
    """`(next key, obs (A, obs_dim), state)` of a multi-agent adapter's reset."""
    key, sub = _split(key)
    obs, state = env.reset_arrays(sub)
    return key, obs, state


@eqx.filter_jit
def marl_step(env: Any, key: Array, state: Any, actions: Float[Array, "n_agents action_dim"]) -> tuple[Any, ...]:
    """`(next key, obs, state, rewards (A,), done, info)` of a multi-agent adapter's step."""
    key, sub = _split(key)
    return (key, *env.step_arrays(sub, state, actions))
