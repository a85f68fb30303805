"""The one rollout kernel: the only ``lax.scan`` over environment time in the code base.

Every fixed-horizon loop (``scan_rollout``, baselines, trainers' policy rollouts,
benchmarks) is a call of :func:`rollout`; batching is ``vmap`` over it and multi-device
runs shard that batch axis (see ``_sharding``).
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.random as jr
from jaxtyping import Array, Bool, Float, PyTree

from powerzoojax.core._environment import EnvParams, Environment, StepResult
from powerzoojax.core._types import Key

# step(key, state, action) -> (obs, state, *rest). ``rest`` is whatever the stepped
# object returns after the state: (reward, costs, done, info) for a bare env,
# (reward, done, info) for LogWrapper, dicts for multi-agent adapters.
StepFn = Callable[[Key, Any, Any], tuple[Any, ...]]
# policy(key, obs, x) -> (action, aux); ``x`` is the per-step slice of ``xs`` (or None).
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
    """Run ``step_fn`` for a fixed number of steps inside one ``lax.scan``.

    ``key`` is split into one key per step before the scan. Without ``policy``, ``xs``
    are the actions (leading axis = time). With ``policy``, the observation is carried
    and ``policy(key, obs, x)`` picks each action; its ``aux`` is appended to the
    outputs (put the pre-action obs, values, log-probs there).

    Returns ``(final_state, final_obs, outputs)`` where ``outputs`` is the tuple of
    everything ``step_fn`` returned except the state (the observation first), stacked
    over time, plus the policy's aux. ``final_obs`` is None without a policy.
    """
    if length is None:
        leaves = jax.tree.leaves(xs)
        if not leaves:
            raise ValueError("rollout: pass xs with a leading time axis or an explicit length")
        length = int(leaves[0].shape[0])
    step_keys = jr.split(key, length)

    def body(carry, inputs):
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

    (final_state, final_obs), outputs = jax.lax.scan(
        body, (init_state, init_obs if policy is not None else None), (step_keys, xs), length=length
    )
    return final_state, final_obs, tuple(outputs)


def bind_step(env: Environment, params: EnvParams) -> StepFn:
    """``env.step_auto_reset`` with ``params`` bound, in the kernel's ``step_fn`` form."""

    def step_fn(key: Key, state: Any, action: Any) -> StepResult:
        return env.step_auto_reset(key, state, action, params)

    return step_fn


def scan_rollout(
    env: Environment, key: Key, init_state: PyTree, params: EnvParams, actions: PyTree
) -> tuple[
    PyTree,
    Float[Array, "T ..."],
    Float[Array, " T"],
    Float[Array, "T n_costs"],
    Bool[Array, " T"],
    dict[str, Array],
]:
    """Roll one env through pre-generated ``actions`` of shape ``(T, *action_shape)``.

    Returns ``(final_state, obs (T, d), rewards (T,), costs (T, k), dones (T,), info (T, ...))``.
    """
    final_state, _, (obs, rewards, costs, dones, info) = rollout(
        bind_step(env, params), key, init_state, actions
    )
    return final_state, obs, rewards, costs, dones, info


def split_key_for_envs(key: Key, n_envs: int) -> Array:
    """One independent key per environment: shape ``(n_envs, 2)`` for raw uint32 keys."""
    return jr.split(key, n_envs)


def batch_reset(env: Environment, keys: Array, params: EnvParams) -> tuple[Array, PyTree]:
    """``vmap(env.reset, in_axes=(0, None))``: batched obs ``(N, d)`` and states."""
    return jax.vmap(env.reset, in_axes=(0, None))(keys, params)


def batch_step(
    env: Environment, keys: Array, states: PyTree, actions: Array, params: EnvParams
) -> BatchedStepResult:
    """``vmap(env.step_auto_reset, in_axes=(0, 0, 0, None))``: the 6-tuple batched on axis 0."""
    return jax.vmap(env.step_auto_reset, in_axes=(0, 0, 0, None))(keys, states, actions, params)
