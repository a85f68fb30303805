"""Conformance kit every environment in the project must pass.

``check_env_api`` checks the contract (spaces, dtypes, cost channels, jit = eager,
vmap = loop, auto-reset, determinism); ``check_no_retrace`` checks that stepping,
new episodes and new param values reuse one compiled program.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from powerzoojax.core import Environment, EnvParams, bind_step, rollout


def _leaves_close(a: Any, b: Any, what: str, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    la, ta = jax.tree.flatten(a)
    lb, tb = jax.tree.flatten(b)
    if ta != tb:
        raise AssertionError(f"{what}: tree structures differ:\n{ta}\n{tb}")
    for i, (x, y) in enumerate(zip(la, lb)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            raise AssertionError(f"{what}: leaf {i} is {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
        if np.issubdtype(x.dtype, np.inexact):
            if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                raise AssertionError(f"{what}: leaf {i} differs (max abs diff {np.nanmax(np.abs(x - y))})")
        elif not np.array_equal(x, y):
            raise AssertionError(f"{what}: leaf {i} differs: {x} vs {y}")


def _leaves_equal(a: Any, b: Any, what: str) -> None:
    _leaves_close(a, b, what, rtol=0.0, atol=0.0)


def _check_state_dtypes(state: Any, float_dtypes: tuple) -> None:
    if state.time_step.dtype != jnp.int32 or state.time_step.shape != ():
        raise AssertionError(f"state.time_step must be an int32 scalar, got {state.time_step.dtype}{state.time_step.shape}")
    if state.done.dtype != jnp.bool_ or state.done.shape != ():
        raise AssertionError(f"state.done must be a bool scalar, got {state.done.dtype}{state.done.shape}")
    for path, leaf in jax.tree_util.tree_leaves_with_path(state):
        dt = jnp.asarray(leaf).dtype
        if jnp.issubdtype(dt, jnp.floating) and dt not in float_dtypes:
            raise AssertionError(f"state leaf {jax.tree_util.keystr(path)} has dtype {dt}, expected one of {float_dtypes}")
        if jnp.issubdtype(dt, jnp.integer) and dt != jnp.int32:
            raise AssertionError(f"state leaf {jax.tree_util.keystr(path)} has dtype {dt}, expected int32")


def _check_step_outputs(env: Environment, params: EnvParams, out: tuple, obs_space: Any) -> None:
    obs, state, reward, costs, done, info = out
    names = env.constraint_names(params)
    if obs.shape != obs_space.shape or obs.dtype != obs_space.dtype:
        raise AssertionError(f"obs is {obs.dtype}{obs.shape}, observation_space is {obs_space.dtype}{obs_space.shape}")
    if not bool(obs_space.contains(obs)):
        raise AssertionError("obs is outside the observation space")
    if not bool(jnp.all(jnp.isfinite(obs))):
        raise AssertionError("obs has non-finite entries")
    if reward.shape != () or reward.dtype != jnp.float32:
        raise AssertionError(f"reward must be a float32 scalar, got {reward.dtype}{reward.shape}")
    if costs.shape != (len(names),) or costs.dtype != jnp.float32:
        raise AssertionError(f"costs must be float32 of shape ({len(names)},) = len(constraint_names), got {costs.dtype}{costs.shape}")
    if not bool(jnp.all(costs >= 0)) or not bool(jnp.all(jnp.isfinite(costs))):
        raise AssertionError(f"costs must be finite and non-negative, got {costs}")
    if done.shape != () or done.dtype != jnp.bool_:
        raise AssertionError(f"done must be a bool scalar, got {done.dtype}{done.shape}")
    if not isinstance(info, dict):
        raise AssertionError(f"info must be a dict, got {type(info).__name__}")
    for k, v in info.items():
        if not isinstance(v, jax.Array):
            raise AssertionError(f"info[{k!r}] must be a JAX array, got {type(v).__name__}")
    if names:
        missing = [k for k in ("cost_sum", *(f"cost_{n}" for n in names)) if k not in info]
        if missing:
            raise AssertionError(f"info is missing cost keys {missing}")
        np.testing.assert_allclose(float(info["cost_sum"]), float(jnp.sum(costs)), rtol=1e-5, atol=1e-5)


def check_env_api(
    env: Environment,
    params: EnvParams,
    *,
    key: jax.Array | None = None,
    stochastic: bool = False,
    float_dtypes: tuple = (jnp.float32,),
    n_batch: int = 3,
) -> None:
    """Assert that ``env`` with ``params`` honours the env contract; raises ``AssertionError``.

    ``stochastic=True`` additionally asserts that different keys give different
    trajectories. Float state leaves must have one of ``float_dtypes``.
    """
    key = jr.PRNGKey(0) if key is None else key
    k_reset, k_act, k_step, k_roll, k_other = jr.split(key, 5)
    obs_space = env.observation_space(params)
    act_space = env.action_space(params)
    names = env.constraint_names(params)
    if not isinstance(names, tuple) or not all(isinstance(n, str) for n in names):
        raise AssertionError(f"constraint_names must be a tuple of str, got {names!r}")

    reset = jax.jit(env.reset)
    step = jax.jit(env.step)
    obs, state = reset(k_reset, params)
    if obs.shape != obs_space.shape or not bool(obs_space.contains(obs)):
        raise AssertionError(f"reset obs {obs.dtype}{obs.shape} is not in the observation space {obs_space.shape}")
    _check_state_dtypes(state, float_dtypes)
    if int(state.time_step) != 0 or bool(state.done):
        raise AssertionError("reset must return time_step 0 and done False")

    action = act_space.sample(k_act)
    if not bool(act_space.contains(action)):
        raise AssertionError("action_space.sample returned a point outside the space")
    out = step(k_step, state, action, params)
    _check_step_outputs(env, params, out, obs_space)
    _check_state_dtypes(out[1], float_dtypes)

    # jit equals eager
    with jax.disable_jit():
        eager = env.step(k_step, state, action, params)
    _leaves_close(eager, out, "eager step vs jit step", rtol=1e-4, atol=1e-4)

    # vmap equals a loop of single steps
    keys = jr.split(k_other, n_batch)
    states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)[1]
    actions = jax.vmap(act_space.sample)(jr.split(k_act, n_batch))
    step_keys = jr.split(k_step, n_batch)
    batched = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))(step_keys, states, actions, params)
    for i in range(n_batch):
        single = step(step_keys[i], jax.tree.map(lambda x: x[i], states), actions[i], params)
        _leaves_close(jax.tree.map(lambda x: x[i], batched), single, f"vmap(step)[{i}] vs step", rtol=1e-4, atol=1e-4)

    # auto-reset: done exactly at max_steps, and the returned state is a fresh reset
    max_steps = params.max_steps
    act_seq = jax.vmap(act_space.sample)(jr.split(k_act, max_steps))
    step_fn = bind_step(env, params)

    def recording_step(key, state, action):
        # Also emit the state each step started from, to replay the terminal step below.
        return (*step_fn(key, state, action), state)

    @jax.jit
    def run(key, state):
        return rollout(recording_step, key, state, act_seq)

    final_state, _, outs = run(k_roll, state)
    dones = np.asarray(outs[3])
    expected = np.zeros(max_steps, bool)
    expected[-1] = True
    if not np.array_equal(dones, expected):
        raise AssertionError(f"done must be True exactly at step max_steps={max_steps}; got True at {np.flatnonzero(dones).tolist()}")
    last_key = jr.split(k_roll, max_steps)[-1]  # the kernel's key for the last step
    pre_terminal = jax.tree.map(lambda x: x[-1], outs[-1])
    term_obs, term_state, *_ = step(last_key, pre_terminal, act_seq[-1], params)
    fresh_obs, fresh_state = reset(jr.split(last_key)[1], params)
    _leaves_close(term_state, fresh_state, "state returned on the terminal step vs reset(split(key)[1])")
    _leaves_close(term_obs, fresh_obs, "obs returned on the terminal step vs reset obs")
    _leaves_close(final_state, term_state, "rollout final state vs stepped terminal state", rtol=1e-4, atol=1e-4)

    # determinism under a key
    again = run(k_roll, state)
    _leaves_equal(again, (final_state, None, outs), "same key, same trajectory")
    if stochastic:
        other = run(k_other, state)
        if all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(jax.tree.leaves(other[2]), jax.tree.leaves(outs))):
            raise AssertionError("stochastic env: different keys gave identical trajectories")


def _perturb(params: EnvParams, scale: float) -> EnvParams:
    """Same structure, shapes and dtypes; every inexact array leaf scaled by ``scale``."""
    arrays, static = eqx.partition(params, eqx.is_inexact_array)
    arrays = jax.tree.map(lambda x: x * jnp.asarray(scale, x.dtype), arrays)
    return eqx.combine(arrays, static)


def check_no_retrace(
    env: Environment,
    params: EnvParams,
    *,
    n_episodes: int = 3,
    param_variants: list[EnvParams] | None = None,
    key: jax.Array | None = None,
) -> dict[str, int]:
    """Assert that reset, step and a scanned rollout each trace exactly once.

    Steps ``n_episodes`` full episodes one jitted call at a time, then runs them again
    with new param values (``param_variants``, default: every float leaf scaled by
    1.01 and 0.98). Returns the trace counts.
    """
    key = jr.PRNGKey(1) if key is None else key
    counts = {"reset": 0, "step": 0, "rollout": 0}

    def counted(name: str, fn: Callable) -> Callable:
        def wrapper(*args):
            counts[name] += 1
            return fn(*args)

        return jax.jit(wrapper)

    reset = counted("reset", env.reset)
    step = counted("step", env.step)
    act_space = env.action_space(params)
    horizon = params.max_steps

    def run_fn(key, state, params, actions):
        return rollout(bind_step(env, params), key, state, actions)

    run = counted("rollout", run_fn)
    variants = [params] + (param_variants if param_variants is not None else [_perturb(params, 1.01), _perturb(params, 0.98)])
    for p in variants:
        key, k_reset, k_act = jr.split(key, 3)
        obs, state = reset(k_reset, p)
        n_steps = n_episodes * horizon
        step_actions = jax.vmap(act_space.sample)(jr.split(k_act, n_steps))
        step_keys = jr.split(key, n_steps)
        for i in range(n_steps):
            obs, state, reward, costs, done, info = step(step_keys[i], state, step_actions[i], p)
        actions = step_actions[:horizon]
        run(k_reset, state, p, actions)
    for name, n in counts.items():
        if n != 1:
            raise AssertionError(f"{name} traced {n} times; expected exactly once across episodes and param values")
    return counts
