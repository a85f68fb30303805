"""Conformance kit every environment in the project must pass.

`check_env_api` checks the contract (spaces, dtypes, cost channels, jit = eager,
vmap = loop, auto-reset, determinism); `check_no_retrace` checks that stepping,
new episodes and new param values reuse one compiled program.

Outputs of two different compiled programs (jit and eager, vmap and single) are
compared leaf by leaf: floats within a tolerance, integers and bools exactly, except
the info keys an env names in `Environment.iteration_count_keys`: an iterative
solver's count of iterations follows float round-off where its stopping test sits at
round-off, so for those only presence, integer dtype and shape are checked. Two runs
of one compiled program (determinism under a key) must agree bitwise, counts included.

Both checks draw their jitted reset / step / rollout from one trace-counted set per
(env object, params structure), so the usual pair of calls on one env compiles each
program once: compiles are most of a kit's time, and the counts then also cover every
call `check_env_api` made. `check_no_retrace` (and a failing `check_env_api`)
drops the set afterwards, so counts never carry over into an unrelated later check.
"""

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from powerzoojax.core import Environment, EnvParams, bind_step, rollout


def _leaves_close(a: Any, b: Any, what: str, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    la, ta = jax.tree_util.tree_flatten_with_path(a)
    lb, tb = jax.tree.flatten(b)
    if ta != tb:
        raise AssertionError(f"{what}: tree structures differ:\n{ta}\n{tb}")
    for i, ((path, x), y) in enumerate(zip(la, lb)):
        x, y = np.asarray(x), np.asarray(y)
        leaf = f"leaf {i} ({jax.tree_util.keystr(path)})"
        if x.shape != y.shape or x.dtype != y.dtype:
            raise AssertionError(f"{what}: {leaf} is {x.dtype}{x.shape} vs {y.dtype}{y.shape}")
        if np.issubdtype(x.dtype, np.inexact):
            if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                raise AssertionError(f"{what}: {leaf} differs (max abs diff {np.nanmax(np.abs(x - y))})")
        elif not np.array_equal(x, y):
            raise AssertionError(f"{what}: {leaf} differs: {x} vs {y}")


def _leaves_equal(a: Any, b: Any, what: str) -> None:
    _leaves_close(a, b, what, rtol=0.0, atol=0.0)


def _check_iteration_counts(info: dict, keys: tuple[str, ...], owner: str) -> None:
    """Each named count is an integer array in `info` (so that naming it hides nothing else)."""
    for k in keys:
        if k not in info:
            raise AssertionError(f"{owner}.iteration_count_keys names {k!r}, which info lacks (info has {sorted(info)})")
        dtype = np.asarray(info[k]).dtype
        if not np.issubdtype(dtype, np.integer):
            raise AssertionError(f"{owner}.iteration_count_keys names {k!r}: an iteration count must be an integer, got {dtype}")


def _uncounted(out: tuple, keys: tuple[str, ...]) -> tuple:
    """A step's outputs (info last) with the values of the iteration counts `keys`
    zeroed, their shapes and dtypes kept: two compiled programs' counts may differ."""
    if not keys:
        return out
    *head, info = out
    return (*head, {k: np.zeros_like(np.asarray(v)) if k in keys else v for k, v in info.items()})


class _Programs:
    """Jitted `reset`, `step` and a state-recording `rollout` of one env, each counting its traces."""

    def __init__(self, env: Environment):
        self.env = env  # held so the cache key's id(env) cannot be reused while cached
        self.counts = {"reset": 0, "step": 0, "rollout": 0}

        def recording_rollout(key, state, params, actions):
            step_fn = bind_step(env, params)

            def recording_step(key, state, action):
                # Also emit the state each step started from, to replay the terminal step.
                return (*step_fn(key, state, action), state)

            return rollout(recording_step, key, state, actions)

        self.reset = self._counted("reset", lambda key, params: env.reset(key, params))
        self.step = self._counted("step", lambda key, state, action, params: env.step(key, state, action, params))
        self.rollout = self._counted("rollout", recording_rollout)

    def _counted(self, name: str, fn: Callable) -> Callable:
        def wrapper(*args):
            self.counts[name] += 1
            return fn(*args)

        # Named like the env method, the program is the one `jax.jit(env.step)` (or
        # `reset`) lowers to, so a test's own jit of it is a persistent-cache hit.
        wrapper.__name__ = wrapper.__qualname__ = name
        return jax.jit(wrapper)


_PROGRAMS: "OrderedDict[tuple, _Programs]" = OrderedDict()
_PROGRAMS_KEPT = 2  # a test's api + retrace pair; more would pin compiled programs in memory


def _programs_key(env: Environment, params: EnvParams) -> tuple | None:
    leaves, treedef = jax.tree.flatten(params)
    avals = tuple((np.shape(x), jnp.result_type(x), getattr(x, "weak_type", False)) for x in leaves)
    # JAX traces again under other numerics (a caller's x64, promotion or precision
    # context), so programs traced under one are not the ones another would run.
    numerics = tuple(
        getattr(jax.config, name)
        for name in ("jax_enable_x64", "jax_numpy_rank_promotion", "jax_numpy_dtype_promotion", "jax_default_matmul_precision")
    )
    key = (id(env), treedef, avals, numerics)
    try:
        hash(key)
    except TypeError:  # an unhashable static field: no sharing, same checks
        return None
    return key


def _programs(env: Environment, params: EnvParams) -> _Programs:
    key = _programs_key(env, params)
    if key is None:
        return _Programs(env)
    if key in _PROGRAMS:
        _PROGRAMS.move_to_end(key)
        return _PROGRAMS[key]
    programs = _PROGRAMS[key] = _Programs(env)
    while len(_PROGRAMS) > _PROGRAMS_KEPT:
        _PROGRAMS.popitem(last=False)
    return programs


def _forget_programs(env: Environment, params: EnvParams) -> None:
    key = _programs_key(env, params)
    if key is not None:
        _PROGRAMS.pop(key, None)


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
    _check_iteration_counts(info, env.iteration_count_keys(params), env.name)
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
    """Assert that `env` with `params` honours the env contract; raises `AssertionError`.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key; `None` uses a fixed key.
    - `stochastic`: also assert that different keys give different trajectories.
    - `float_dtypes`: the dtypes a float state leaf may have.
    - `n_batch`: batch size of the `vmap` checks.
    """
    try:
        _check_env_api(env, params, jr.PRNGKey(0) if key is None else key, stochastic, float_dtypes, n_batch)
    except BaseException:
        _forget_programs(env, params)
        raise


def _check_env_api(env: Environment, params: EnvParams, key: jax.Array, stochastic: bool, float_dtypes: tuple, n_batch: int) -> None:
    k_reset, k_act, k_step, k_roll, k_other = jr.split(key, 5)
    obs_space = env.observation_space(params)
    act_space = env.action_space(params)
    names = env.constraint_names(params)
    if not isinstance(names, tuple) or not all(isinstance(n, str) for n in names):
        raise AssertionError(f"constraint_names must be a tuple of str, got {names!r}")

    programs = _programs(env, params)
    reset, step = programs.reset, programs.step
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

    # jit equals eager (iteration counts: see the module docstring)
    counts = env.iteration_count_keys(params)
    with jax.disable_jit():
        eager = env.step(k_step, state, action, params)
    _leaves_close(_uncounted(eager, counts), _uncounted(out, counts), "eager step vs jit step", rtol=1e-4, atol=1e-4)

    # vmap equals a loop of single calls, for reset and for step
    keys = jr.split(k_other, n_batch)
    batch_obs, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    for i in range(n_batch):
        _leaves_close(jax.tree.map(lambda x: x[i], (batch_obs, states)), reset(keys[i], params), f"vmap(reset)[{i}] vs reset", rtol=1e-4, atol=1e-4)
    actions = jax.vmap(act_space.sample)(jr.split(k_act, n_batch))
    step_keys = jr.split(k_step, n_batch)
    batched = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))(step_keys, states, actions, params)
    for i in range(n_batch):
        single = step(step_keys[i], jax.tree.map(lambda x: x[i], states), actions[i], params)
        lane = jax.tree.map(lambda x: x[i], batched)
        _leaves_close(_uncounted(lane, counts), _uncounted(single, counts), f"vmap(step)[{i}] vs step", rtol=1e-4, atol=1e-4)

    # auto-reset: done exactly at max_steps, and the returned state is a fresh reset
    max_steps = params.max_steps
    act_seq = jax.vmap(act_space.sample)(jr.split(k_act, max_steps))

    def run(key, state):
        return programs.rollout(key, state, params, act_seq)

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
    """Same structure, shapes and dtypes; every inexact array leaf scaled by `scale`."""
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

    Steps `n_episodes` full episodes one jitted call at a time, then runs them again
    with new param values. The programs are the ones `check_env_api` used on the same env
    object and params structure, so its calls count too.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `n_episodes`: episodes stepped per params value.
    - `param_variants`: further params of the same structure; `None` scales every float
      leaf by 1.01 and 0.98.
    - `key`: PRNG key; `None` uses a fixed key.

    **Returns:**

    The trace counts, a dict of program name to count.
    """
    try:
        return _check_no_retrace(env, params, n_episodes, param_variants, jr.PRNGKey(1) if key is None else key)
    finally:
        _forget_programs(env, params)


def _check_no_retrace(env: Environment, params: EnvParams, n_episodes: int, param_variants: list[EnvParams] | None, key: jax.Array) -> dict[str, int]:
    programs = _programs(env, params)
    act_space = env.action_space(params)
    horizon = params.max_steps
    variants = [params] + (param_variants if param_variants is not None else [_perturb(params, 1.01), _perturb(params, 0.98)])
    for p in variants:
        key, k_reset, k_act = jr.split(key, 3)
        obs, state = programs.reset(k_reset, p)
        n_steps = n_episodes * horizon
        step_actions = jax.vmap(act_space.sample)(jr.split(k_act, n_steps))
        step_keys = jr.split(key, n_steps)
        for i in range(n_steps):
            obs, state, reward, costs, done, info = programs.step(step_keys[i], state, step_actions[i], p)
        programs.rollout(k_reset, state, p, step_actions[:horizon])
    counts = dict(programs.counts)
    for name, n in counts.items():
        if n != 1:
            raise AssertionError(f"{name} traced {n} times; expected exactly once across episodes and param values")
    return counts
