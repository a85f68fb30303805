"""Invariant checks on recorded rollouts: the shared contract and each env's own physics.

[`check_invariants`][powerzoojax.testing.check_invariants] rolls `env` out over the given actions in one jitted scan
(the conformance kit's trace-counted programs, so repeated calls with new keys, actions
and param values reuse one compiled program), moves the trajectory to the host and
returns every broken law as a [`Violation`][powerzoojax.testing.Violation]:

* the contract every env shares: obs finite and inside the observation space; reward
  finite; costs finite, non-negative, one per constraint name and summing to
  `info["cost_sum"]`; every float leaf of the state finite; `time_step` counting up
  and `done` True exactly on the step that reaches `max_steps`; the state returned on
  a terminal step equal to a fresh reset under the step's reset key;
* the laws the env declares through `env.physics_invariants(params)` (see
  [`Invariant`][powerzoojax.core.Invariant]), evaluated on the host in float64.
"""

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from powerzoojax.core import Box, Environment, EnvParams, Trajectory
from powerzoojax.testing._checks import _programs


@dataclass(frozen=True)
class Violation:
    """One broken law: its name, the step (`None` for the whole rollout) and what was seen.

    **Arguments:**

    - `name`: name of the law.
    - `step`: index of the offending step, or `None` for a law of the whole rollout.
    - `detail`: what was seen (residual and tolerance, or the offending values).
    """

    name: str
    step: int | None
    detail: str

    def __str__(self) -> str:
        where = "" if self.step is None else f" at step {self.step}"
        return f"{self.name}{where}: {self.detail}"


def _host(tree: Any) -> Any:
    return jax.tree.map(np.asarray, tree)


def record_trajectory(
    env: Environment, params: EnvParams, key: jax.Array, actions: Any, state: Any = None
) -> tuple[Trajectory, jax.Array]:
    """Roll `env` out over `actions` in one jitted scan and bring it to the host.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key of the reset (when `state` is `None`) and of the rollout.
    - `actions`: actions with a leading time axis `(T, *action_shape)`.
    - `state`: start state; `None` resets under `key`.

    **Returns:**

    `(trajectory, rollout_key)`: the host-side
    [`Trajectory`][powerzoojax.core.Trajectory] and the rollout key (its split gives each
    step's key).
    """
    programs = _programs(env, params)
    # Strongly typed, so that actions built from Python scalars (weakly typed) and the
    # same actions as a NumPy or typed array run one compiled rollout, not two.
    actions = jax.tree.map(lambda a: jnp.asarray(a, dtype=jnp.asarray(a).dtype), actions)
    k_reset, k_roll = jr.split(key)
    if state is None:
        _, state = programs.reset(k_reset, params)
    final_state, _, outs = programs.rollout(k_roll, state, params, actions)
    obs, reward, costs, done, info, before = outs
    after = jax.tree.map(lambda seq, last: jnp.concatenate([seq[1:], last[None]], axis=0), before, final_state)
    return Trajectory(
        state=_host(before),
        action=_host(actions),
        obs=np.asarray(obs),
        next_state=_host(after),
        reward=np.asarray(reward),
        costs=np.asarray(costs),
        done=np.asarray(done, bool),
        info=_host(info),
    ), k_roll


def _at(tree: Any, t: int) -> Any:
    return jax.tree.map(lambda x: x[t], tree)


def _contract_violations(env: Environment, params: EnvParams, traj: Trajectory, k_roll: jax.Array) -> list[Violation]:
    out: list[Violation] = []
    n_steps = traj.reward.shape[0]

    def per_step(name: str, bad: np.ndarray, detail: Callable[[int], str]) -> None:
        for t in np.flatnonzero(bad):
            out.append(Violation(name, int(t), detail(int(t))))

    axes = tuple(range(1, traj.obs.ndim))
    per_step("obs_finite", ~np.all(np.isfinite(traj.obs), axis=axes), lambda t: "obs has non-finite entries")
    space = env.observation_space(params)
    if isinstance(space, Box):
        low = np.asarray(space.low, np.float64)
        high = np.asarray(space.high, np.float64)
        with np.errstate(invalid="ignore"):
            outside = ~np.all((traj.obs >= low) & (traj.obs <= high), axis=axes)
        per_step("obs_in_space", outside & np.all(np.isfinite(traj.obs), axis=axes), lambda t: "obs is outside the observation space")
    else:
        for t in range(n_steps):
            if not bool(space.contains(traj.obs[t])):
                out.append(Violation("obs_in_space", t, "obs is outside the observation space"))

    per_step("reward_finite", ~np.isfinite(traj.reward), lambda t: f"reward is {traj.reward[t]}")
    names = env.constraint_names(params)
    if traj.costs.shape[1:] != (len(names),):
        out.append(Violation("costs_shape", None, f"costs have shape {traj.costs.shape[1:]}, expected ({len(names)},)"))
    else:
        with np.errstate(invalid="ignore"):
            bad = ~np.all(np.isfinite(traj.costs) & (traj.costs >= 0), axis=1)
        per_step("costs_finite_non_negative", bad, lambda t: f"costs {traj.costs[t].tolist()}")
        if names and "cost_sum" in traj.info:
            total = traj.costs.astype(np.float64).sum(axis=1)
            cost_sum = np.asarray(traj.info["cost_sum"], np.float64)
            per_step(
                "cost_sum", ~np.isclose(cost_sum, total, rtol=1e-5, atol=1e-5),
                lambda t: f"info['cost_sum'] {cost_sum[t]} vs sum(costs) {total[t]}",
            )

    for path, leaf in jax.tree_util.tree_leaves_with_path(traj.next_state):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.inexact):
            bad = ~np.all(np.isfinite(leaf.reshape(n_steps, -1)), axis=1)
            per_step("state_finite", bad, lambda t, p=path: f"state{jax.tree_util.keystr(p)} has non-finite entries")

    t_before = np.asarray(traj.state.time_step)
    t_after = np.asarray(traj.next_state.time_step)
    expect_done = t_before + 1 >= params.max_steps
    per_step("done_at_max_steps", traj.done != expect_done, lambda t: f"done={bool(traj.done[t])} at time_step {t_before[t]} (max_steps {params.max_steps})")
    expect_t = np.where(expect_done, 0, t_before + 1)
    per_step("time_step_counts", t_after != expect_t, lambda t: f"time_step {t_before[t]} -> {t_after[t]}")

    terminal = np.flatnonzero(traj.done)
    if terminal.size:
        programs = _programs(env, params)
        step_keys = jr.split(k_roll, n_steps)
        for t in terminal.tolist():
            _, fresh = programs.reset(jr.split(step_keys[t])[1], params)
            got = _at(traj.next_state, t)
            for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(got), jax.tree.leaves(_host(fresh))):
                a, b = np.asarray(a), np.asarray(b)
                same = np.allclose(a, b, rtol=1e-5, atol=1e-5, equal_nan=True) if np.issubdtype(a.dtype, np.inexact) else np.array_equal(a, b)
                if not same:
                    out.append(Violation("auto_reset", t, f"state{jax.tree_util.keystr(path)} differs from a fresh reset"))
                    break
    return out


def check_invariants(
    env: Environment,
    params: EnvParams,
    key: jax.Array,
    actions: Any,
    *,
    state: Any = None,
    physics: bool = True,
) -> list[Violation]:
    """Every law `env` breaks on a rollout over `actions`.

    Checks the contract every env shares and, with `physics=True`, the env's
    [`physics_invariants`][powerzoojax.core.Environment.physics_invariants].

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key of the reset (when `state` is `None`) and of the rollout.
    - `actions`: actions with a leading time axis `(T, *action_shape)`.
    - `state`: start state; `None` resets under `key`.
    - `physics`: also check the env's own physics laws.

    **Returns:**

    A list of [`Violation`][powerzoojax.testing.Violation]; empty when none is broken.
    """
    traj, k_roll = record_trajectory(env, params, key, actions, state)
    return _violations(env, params, traj, k_roll, physics)


def _violations(env: Environment, params: EnvParams, traj: Trajectory, k_roll: jax.Array, physics: bool) -> list[Violation]:
    violations = _contract_violations(env, params, traj, k_roll)
    if physics:
        for law in env.physics_invariants(params):
            violations.extend(
                Violation(law.name, t, f"residual {r:.4g} > tolerance {law.tol:g}") for t, r in law.violations(traj, params)
            )
    return violations


def assert_invariants(env: Environment, params: EnvParams, key: jax.Array, actions: Any, **kwargs: Any) -> None:
    """[`check_invariants`][powerzoojax.testing.check_invariants], raising `AssertionError`
    that lists the violations (first 20).

    **Arguments:**

    - `env`, `params`, `key`, `actions`: as for `check_invariants`.
    - `**kwargs`: further keywords of `check_invariants` (`state`, `physics`).
    """
    _raise_if_any(env, check_invariants(env, params, key, actions, **kwargs))


def _raise_if_any(env: Environment, violations: list[Violation]) -> None:
    if violations:
        shown = "\n  ".join(str(v) for v in violations[:20])
        more = f"\n  ... and {len(violations) - 20} more" if len(violations) > 20 else ""
        raise AssertionError(f"{env.name}: {len(violations)} invariant violation(s):\n  {shown}{more}")


def env_property_test(
    env_factory: Callable[[], tuple[Environment, EnvParams]],
    *,
    n_steps: int | None = None,
    invalid_actions: bool = False,
    vary_load_profiles: bool = True,
    vary_params: Callable[[Any], Any] | None = None,
    max_examples: int = 10,
    hypothesis_settings: Mapping[str, Any] | None = None,
) -> Callable[[Callable], Callable]:
    """Turn a test function into a hypothesis property test of an env's invariants.

    `env_factory()` builds `(env, params)` once. Each example draws a PRNG key, an
    action sequence of `n_steps` — with entries outside the action space when
    `invalid_actions` — and, when the params have `with_load_profiles` and
    `load_profiles` and `vary_load_profiles` is set, new load profiles of the same shape
    within the case's load ranges; then, with `vary_params`, the params the example runs
    on. It rolls the env out once and asserts
    [`check_invariants`][powerzoojax.testing.check_invariants] on that rollout. The
    decorated function runs afterwards and may take `(env, params, trajectory)` for checks
    of its own. Drawn values never change the compiled program, so every example reuses one.

    >>> @env_property_test(lambda: (TransGridEnv(), make_trans_params(load_case("5"), max_steps=4)))
    ... def test_case5_dc(env, params, trajectory):
    ...     assert trajectory.reward.shape == (5,)

    **Arguments:**

    - `env_factory`: `() -> (env, params)`.
    - `n_steps`: rollout length [steps]; `None` takes `params.max_steps + 1`, so the
      auto-reset is crossed.
    - `invalid_actions`: also draw non-finite and out-of-bounds action entries.
    - `vary_load_profiles`: draw new load profiles where the params carry them.
    - `vary_params`: `params -> strategy of params` to run each example on (after the
      load profiles are drawn); it should draw new values of array fields (ratings,
      capacities, profiles of the same shape), not of static ones, which would recompile.
    - `max_examples`: hypothesis examples per test.
    - `hypothesis_settings`: keyword arguments of `hypothesis.settings` (`phases`,
      `database`, ...) that replace the defaults here (`max_examples`, no deadline, health
      checks suppressed, derandomized).

    **Returns:**

    A decorator that turns `test(env, params, trajectory)` (or a test taking fewer of
    those arguments) into a hypothesis test.
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from powerzoojax.testing import strategies as pst

    build = functools.lru_cache(maxsize=1)(env_factory)
    options = {
        "max_examples": max_examples, "deadline": None, "suppress_health_check": list(HealthCheck), "derandomize": True,
        **(hypothesis_settings or {}),
    }

    def decorate(test_fn: Callable) -> Callable:
        takes_args = len(inspect.signature(test_fn).parameters) > 0

        @settings(**options)  # pyright: ignore[reportArgumentType]
        @given(data=st.data())
        def property_test(data):
            env, params = build()
            length = params.max_steps + 1 if n_steps is None else n_steps
            key = data.draw(pst.prng_keys(), label="key")
            acts = data.draw(pst.action_sequences(env.action_space(params), length, invalid=invalid_actions), label="actions")
            drawn = params
            case = getattr(params, "case", None)
            if vary_load_profiles and hasattr(params, "with_load_profiles") and getattr(params, "load_profiles", None) is not None and case is not None:
                rows = int(np.asarray(params.load_profiles).shape[0])  # pyright: ignore[reportAttributeAccessIssue]
                profiles = data.draw(pst.load_profiles(case, rows, shape="random"), label="load_profiles")
                drawn = params.with_load_profiles(jnp.asarray(profiles))  # pyright: ignore[reportAttributeAccessIssue]
            if vary_params is not None:
                drawn = data.draw(vary_params(drawn), label="params")
            traj, k_roll = record_trajectory(env, drawn, key, jnp.asarray(acts))  # one rollout for both
            _raise_if_any(env, _violations(env, drawn, traj, k_roll, physics=True))
            if takes_args:
                test_fn(env, drawn, traj)
            else:
                test_fn()

        property_test.__name__ = property_test.__qualname__ = test_fn.__name__
        property_test.__doc__ = test_fn.__doc__
        property_test.__module__ = test_fn.__module__
        return property_test

    return decorate
