"""The one rollout kernel: `_time_loop` is the only `lax.scan` over environment time
in the code base.

Every fixed-horizon loop (`scan_rollout`, baselines, trainers' policy rollouts,
benchmarks) is a call of [`rollout`][powerzoojax.core.rollout]; batching is `vmap` over it and multi-device
runs shard that batch axis (see `_sharding`).

`jax.vmap(scan_rollout)` has its own batching rule: plain batching of a scan stacks
outputs time-major `(T, N, ...)` and then transposes every output to `(N, T, ...)`,
a full extra pass over the trajectory. The rule runs the same loop with the step vmapped
inside and writes each step's outputs straight into batch-major buffers; only rows too
short for a strided write to pay (a scalar reward, a case-5 observation) are stacked
time-major and transposed once after the loop; a rollout whose rows are all that short is
batched plainly. Values are identical to plain batching.
"""

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.core
import jax.numpy as jnp
import jax.random as jr
from jax import lax
from jax.custom_batching import custom_vmap
from jaxtyping import Array, Bool, Float, PyTree

from powerzoojax.core._environment import EnvParams, Environment, StepResult
from powerzoojax.core._types import Key

# step(key, state, action) -> (obs, state, *rest). `rest` is whatever the stepped
# object returns after the state: (reward, costs, done, info) for a bare env,
# (reward, done, info) for LogWrapper, dicts for multi-agent adapters.
StepFn = Callable[[Key, Any, Any], tuple[Any, ...]]
# policy(key, obs, x) -> (action, aux); `x` is the per-step slice of `xs` (or None).
PolicyFn = Callable[[Key, Any, Any], tuple[Any, Any]]

BatchedStepResult = tuple[
    Float[Array, "n_envs ..."],
    Any,
    Float[Array, " n_envs"],
    Float[Array, "n_envs n_costs"],
    Bool[Array, " n_envs"],
    dict[str, Array],
]

# Folded into each step key to derive the policy's key, so the env sees the same
# per-step keys whether actions are pre-generated or sampled by a policy.
_POLICY_KEY_SALT = 0x5EED

# Per-env rows of fewer bytes are kept time-major inside a batch-major loop (`_time_major`).
BATCH_MAJOR_MIN_ROW_BYTES = 256

_empty = getattr(lax, "empty", jnp.zeros)


def rollout(
    step_fn: StepFn,
    key: Key,
    init_state: PyTree,
    xs: PyTree = None,
    *,
    length: int | None = None,
    policy: PolicyFn | None = None,
    init_obs: PyTree = None,
) -> tuple[PyTree, PyTree, tuple[Any, ...]]:
    """Run `step_fn` for a fixed number of steps inside one `lax.scan`.

    `key` is split into one key per step before the scan. Without `policy`, `xs`
    are the actions (leading axis = time). With `policy`, the observation is carried
    and `policy(key, obs, x)` picks each action; its `aux` is appended to the
    outputs (put the pre-action obs, values, log-probs there).

    **Arguments:**

    - `step_fn`: `step_fn(key, state, action) -> (obs, state, ...)`, e.g. from
      [`bind_step`][powerzoojax.core.bind_step].
    - `key`: PRNG key of the rollout.
    - `init_state`: state to start from.
    - `xs`: per-step inputs with a leading time axis: the actions without `policy`,
      anything the policy reads with it (or `None`).
    - `length`: number of steps; needed when `xs` is `None`.
    - `policy`: `policy(key, obs, x) -> (action, aux)`; `None` steps `xs` as actions.
    - `init_obs`: observation of `init_state`, needed with `policy`.

    **Returns:**

    `(final_state, final_obs, outputs)`, where `outputs` is the tuple of everything
    `step_fn` returned except the state (the observation first), stacked over time, plus
    the policy's aux. `final_obs` is `None` without a policy.
    """
    if length is None:
        leaves = jax.tree.leaves(xs)
        if not leaves:
            raise ValueError("rollout: pass xs with a leading time axis or an explicit length")
        length = int(leaves[0].shape[0])
    return _time_loop(step_fn, jr.split(key, length), init_state, xs, length, policy, init_obs)


def _time_loop(
    step_fn: StepFn,
    step_keys: Array,
    init_state: PyTree,
    xs: PyTree,
    length: int,
    policy: PolicyFn | None = None,
    init_obs: PyTree = None,
    batch_major: bool = False,
) -> tuple[PyTree, PyTree, tuple[Any, ...]]:
    """The scan over time. Inputs and outputs have time on axis 0, or on axis 1 with
    `batch_major` (then `step_fn` is already batched over axis 0 and there is no policy).
    """

    def one_step(carry, inputs):
        state, obs = carry
        step_key, x = inputs
        if policy is None:
            action, aux = x, ()
        else:
            action, aux = policy(jr.fold_in(step_key, _POLICY_KEY_SALT), obs, x)
            aux = (aux,)
        next_obs, state, *rest = step_fn(step_key, state, action)
        carried_obs = next_obs if policy is not None else None
        return (state, carried_obs), (next_obs, *rest, *aux)

    init_carry = (init_state, init_obs if policy is not None else None)
    if not batch_major:
        (final_state, final_obs), outputs = lax.scan(one_step, init_carry, (step_keys, xs), length=length)
        return final_state, final_obs, tuple(outputs)

    if policy is not None:
        raise ValueError("_time_loop: batch-major loops take pre-generated actions, not a policy")
    # Short per-env rows enter as the scan's time-major `xs` (one contiguous slab per
    # step); long ones stay batch-major and are indexed in place.
    flat_in, in_tree = jax.tree.flatten((step_keys, xs))
    in_short = [_time_major(a.shape[2:], a.dtype) for a in flat_in]
    scan_xs = [jnp.moveaxis(a, 1, 0) for a, short in zip(flat_in, in_short) if short]
    held = [a for a, short in zip(flat_in, in_short) if not short]

    def step_inputs(t, sliced):
        it_sliced, it_held = iter(sliced), iter(held)
        return in_tree.unflatten(
            [next(it_sliced) if short else lax.dynamic_index_in_dim(next(it_held), t, 1, False) for short in in_short]
        )

    # The step is traced once: its jaxpr gives the output shapes for the buffers and is the
    # loop body. Tracing an env step is most of a rollout's trace time, and a second trace
    # (`eval_shape`) would repeat it.
    step_jaxpr, (_, out_shapes) = jax.make_jaxpr(one_step, return_shape=True)(
        init_carry, step_inputs(0, [a[0] for a in scan_xs])
    )
    out_tree = jax.tree.structure((init_carry, out_shapes))
    flat_shapes, outputs_tree = jax.tree.flatten(out_shapes)
    out_short = [_time_major(s.shape[1:], s.dtype) for s in flat_shapes]

    def traced_step(carry, x):
        flat = jax.core.eval_jaxpr(step_jaxpr.jaxpr, step_jaxpr.consts, *jax.tree.leaves((carry, x)))
        return jax.tree.unflatten(out_tree, flat)

    # Short rows are the scan's stacked (time-major) outputs, moved batch-major once after
    # the loop. Long rows are written in place into batch-major buffers; every step writes
    # its slice, so those need no initial value: `lax.empty` is a bare allocation on
    # GPU/TPU (a zero fill on CPU, where it lowers to a broadcast; JAX releases before
    # 0.7.2 have only the zero fill).
    buffers = [
        _empty((s.shape[0], length, *s.shape[1:]), s.dtype) for s, short in zip(flat_shapes, out_short) if not short
    ]

    def body(carry, inputs):
        carry, buffers = carry
        t, sliced = inputs
        carry, out = traced_step(carry, step_inputs(t, sliced))
        flat_out = jax.tree.leaves(out)
        it_buf = iter(buffers)
        buffers = [
            lax.dynamic_update_index_in_dim(next(it_buf), o, t, 1) for o, short in zip(flat_out, out_short) if not short
        ]
        return (carry, buffers), [o for o, short in zip(flat_out, out_short) if short]

    ((final_state, final_obs), buffers), stacked = lax.scan(
        body, (init_carry, buffers), (jnp.arange(length), scan_xs)
    )
    it_buf, it_stacked = iter(buffers), iter(stacked)
    flat = [jnp.moveaxis(next(it_stacked), 0, 1) if short else next(it_buf) for short in out_short]
    return final_state, final_obs, tuple(jax.tree.unflatten(outputs_tree, flat))


def _time_major(row_shape: tuple[int, ...], dtype: Any) -> bool:
    """Whether a batch-major loop keeps this per-env row time-major inside the loop.

    Writing (or reading) one step of a `(N, T, *row)` array touches `N` rows at a stride of
    `T` rows: for a row of a few bytes each touch moves a whole cache line (a whole memory
    transaction on a GPU) for those bytes, which costs more than one transpose of the
    contiguous `(T, N, *row)` array after the loop. Rows of at least
    `BATCH_MAJOR_MIN_ROW_BYTES` go straight to batch-major buffers.
    """
    return math.prod(row_shape) * dtype.itemsize < BATCH_MAJOR_MIN_ROW_BYTES


def bind_step(env: Environment, params: EnvParams, *, differentiable: bool = False) -> StepFn:
    """`env.step_auto_reset` (or `env.step`) with `params` bound, in the kernel's `step_fn` form.

    `step_auto_reset` stops the gradient of every returned observation and state, so a
    rollout of it carries no gradient from one step to the next. `step` stops it only at
    an episode's end (the auto-reset), so `jax.grad` of a rollout's rewards reaches every
    earlier action of the same episode through the physics: a differentiable episode.
    Forward values are identical either way.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `differentiable`: bind `env.step` (gradients flow within an episode) instead of
      `env.step_auto_reset` (no gradient through obs or state).

    **Returns:**

    `step_fn(key, state, action) -> (obs, state, reward, costs, done, info)`.
    """
    step = env.step if differentiable else env.step_auto_reset

    def step_fn(key: Key, state: Any, action: Any) -> StepResult:
        return step(key, state, action, params)

    return step_fn


def scan_rollout(
    env: Environment,
    key: Key,
    init_state: PyTree,
    params: EnvParams,
    actions: PyTree,
    *,
    differentiable: bool = False,
) -> tuple[
    PyTree,
    Float[Array, "T ..."],
    Float[Array, " T"],
    Float[Array, "T n_costs"],
    Bool[Array, " T"],
    dict[str, Array],
]:
    """Roll one env through pre-generated `actions` of shape `(T, *action_shape)`.

    Under `jax.vmap` a batching rule of its own writes batch-major outputs directly (values
    identical to plain batching, without the extra transpose pass).

    **Arguments:**

    - `env`: the env.
    - `key`: PRNG key of the rollout.
    - `init_state`: state to start from.
    - `params`: the env's params.
    - `actions`: `(T, *action_shape)` actions.
    - `differentiable`: step with `env.step` instead of `env.step_auto_reset`, so
      gradients w.r.t. the actions, `init_state` and `params` flow through the state
      within each episode (see [`bind_step`][powerzoojax.core.bind_step]); same values.

    **Returns:**

    `(final_state, obs (T, d), rewards (T,), costs (T, n_costs), dones (T,), info)`,
    each info entry with a leading `T` axis.
    """
    try:
        batchable = _batchable_scan_rollout(env, differentiable)
    except TypeError:  # an unhashable env: plain batching, same values
        batchable = functools.partial(_scan_rollout_unbatched, env, differentiable)
    return batchable(key, init_state, params, actions)


def _scan_rollout_unbatched(
    env: Environment, differentiable: bool, key: Key, init_state: PyTree, params: EnvParams, actions: PyTree
) -> tuple:
    step_fn = bind_step(env, params, differentiable=differentiable)
    final_state, _, outputs = rollout(step_fn, key, init_state, actions)
    return (final_state, *outputs)


@functools.lru_cache(maxsize=64)
def _batchable_scan_rollout(env: Environment, differentiable: bool = False) -> Callable:
    """`scan_rollout` for `env` with the batch-major vmap rule attached (cached per env and flag)."""

    plain = functools.partial(_scan_rollout_unbatched, env, differentiable)
    env_step = env.step if differentiable else env.step_auto_reset
    # One env's argument shapes -> whether every per-step row (key, action, and each
    # stacked output: observation, reward, costs, done, info) is short: seen while
    # `custom_vmap` traces the unbatched rollout, read by the rule, which runs next, so
    # that it need not trace the step to know.
    all_short: dict[tuple, bool] = {}

    def signature(args: tuple) -> tuple:
        leaves, tree = jax.tree.flatten(args)
        return tree, tuple((tuple(x.shape), x.dtype) for x in leaves)

    @custom_vmap
    def fast(key, init_state, params, actions):
        out = plain(key, init_state, params, actions)
        rows = jax.tree.leaves((_shapes(key, 0), _shapes(actions, 1), _shapes(out[1:], 1)))
        if len(all_short) >= 64:
            all_short.clear()
        all_short[signature((key, init_state, actions, params))] = all(_time_major(r.shape, r.dtype) for r in rows)
        return out

    @fast.def_vmap
    def fast_batched(axis_size, in_batched, key, init_state, params, actions):
        key_b, state_b, params_b, actions_b = in_batched

        def broadcast(tree, flags):
            return jax.tree.map(lambda x, b: x if b else jnp.broadcast_to(x, (axis_size, *jnp.shape(x))), tree, flags)

        keys, states, acts = broadcast(key, key_b), broadcast(init_state, state_b), broadcast(actions, actions_b)
        params_axes = jax.tree.map(lambda b: 0 if b else None, params_b)
        one_params = jax.tree.map(lambda x, b: _shapes(x, 1 if b else 0), params, params_b)
        if all_short.get(signature((_shapes(keys, 1), _shapes(states, 1), _shapes(acts, 1), one_params))):
            # A batch-major loop would hold every row time-major: plain batching's layout,
            # so plain batching does the same work without the rule's bookkeeping.
            out = jax.vmap(plain, in_axes=(0, 0, params_axes, 0))(keys, states, params, acts)
            return out, jax.tree.map(lambda _: True, out)
        batched_step = jax.vmap(env_step, in_axes=(0, 0, 0, params_axes))
        length = jax.tree.leaves(acts)[0].shape[1]
        step_keys = jax.vmap(lambda k: jr.split(k, length))(keys)
        final_state, _, outputs = _time_loop(
            lambda k, s, a: batched_step(k, s, a, params), step_keys, states, acts, length, batch_major=True
        )
        out = (final_state, *outputs)
        return out, jax.tree.map(lambda _: True, out)

    # custom_vmap has no reverse-mode rule: differentiate the plain loop instead (same
    # values), so grad through a vmapped rollout works while plain vmap stays fast.
    @jax.custom_jvp
    def run(key, init_state, params, actions):
        return fast(key, init_state, params, actions)

    @run.defjvp
    def run_jvp(primals, tangents):
        return jax.jvp(plain, primals, tangents)

    return run


def _shapes(tree: PyTree, drop: int) -> PyTree:
    """Shapes and dtypes of `tree`'s leaves without their `drop` leading axes."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[drop:], x.dtype), tree)


def split_key_for_envs(key: Key, n_envs: int) -> Array:
    """One independent key per environment.

    **Arguments:**

    - `key`: PRNG key.
    - `n_envs`: number of environments.

    **Returns:**

    Keys of shape `(n_envs, 2)` for raw uint32 keys.
    """
    return jr.split(key, n_envs)


def batch_reset(env: Environment, keys: Array, params: EnvParams) -> tuple[Array, PyTree]:
    """`vmap(env.reset, in_axes=(0, None))`.

    **Arguments:**

    - `env`: the env.
    - `keys`: `(N, 2)` PRNG keys, one per env copy.
    - `params`: params shared by the batch.

    **Returns:**

    `(obs, states)`: obs `(N, d)` and states with a leading `N` axis.
    """
    return jax.vmap(env.reset, in_axes=(0, None))(keys, params)


def batch_step(
    env: Environment, keys: Array, states: PyTree, actions: Array, params: EnvParams
) -> BatchedStepResult:
    """`vmap(env.step_auto_reset, in_axes=(0, 0, 0, None))`.

    **Arguments:**

    - `env`: the env.
    - `keys`: `(N, 2)` PRNG keys.
    - `states`: states with a leading `N` axis.
    - `actions`: `(N, *action_shape)` actions.
    - `params`: params shared by the batch.

    **Returns:**

    The step 6-tuple, each output batched on axis 0.
    """
    return jax.vmap(env.step_auto_reset, in_axes=(0, 0, 0, None))(keys, states, actions, params)
