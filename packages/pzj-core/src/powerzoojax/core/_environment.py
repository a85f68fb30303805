"""The env contract every PowerZooJax environment implements.

`env` holds static configuration only; `params` (array leaves, plus static
shape-defining fields) and `state` flow through `jit`/`vmap`/`scan`:

    obs, state = env.reset(key, params)
    obs, state, reward, costs, done, info = env.step(key, state, action, params)

`step` auto-resets: on the terminal transition `done` is True and the returned
state (and obs) is already the next episode's first one.

[`Environment`][powerzoojax.core.Environment]'s own `reset` and `step` check the
input and auto-reset, once, for every env; an env writes only the transition, in
`reset_env` and `step_env`.
"""

import abc
import functools
import math
from typing import Any, TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PyTree

from powerzoojax.core._guard import (
    as_action_array,
    check_params,
    drop_ignored_entries,
    flag_invalid_action,
    flag_invalid_profiles,
    neutral_action,
    params_class,
    replace_non_finite,
    structural_hash,
)
from powerzoojax.core._invariant import Invariant
from powerzoojax.core._spaces import Space
from powerzoojax.core._types import BoolScalar, FloatScalar, Info, Key


class EnvState(eqx.Module):
    """Base state: subclasses only add fields.

    **Arguments:**

    - `time_step`: int32 scalar, steps taken in the current episode.
    - `done`: bool scalar, whether the last transition ended the episode.
    """

    time_step: Int[Array, ""]
    done: Bool[Array, ""]


class EnvParams(eqx.Module):
    """Base params: episode length and step duration are static (they shape the program).

    **Arguments:**

    - `max_steps`: episode length [steps] (static, keyword-only), 48 by default.
    - `delta_t_hours`: duration of one step [hours] (static, keyword-only), 0.5 by default.
    """

    max_steps: int = eqx.field(static=True, default=48, kw_only=True)
    delta_t_hours: float = eqx.field(static=True, default=0.5, kw_only=True)


StepResult = tuple[
    Float[Array, "..."], Any, FloatScalar, Float[Array, " n_costs"], BoolScalar, Info
]


def select_tree(pred: BoolScalar, on_true: PyTree, on_false: PyTree) -> PyTree:
    """Leaf-wise `where(pred, on_true, on_false)`; one predicate for the whole tree.

    **Arguments:**

    - `pred`: bool scalar.
    - `on_true`, `on_false`: pytrees of the same structure and leaf shapes.

    **Returns:**

    A pytree of that structure.
    """
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


# auto_reset returns the state class it was given (each env's own), not the base.
_State = TypeVar("_State", bound=EnvState)


def auto_reset(
    env: "Environment", key: Key, new_state: _State, params: EnvParams
) -> _State:
    """Replace `new_state` by a fresh reset when its episode has ended.

    [`Environment.step`][powerzoojax.core.Environment.step] already does this for every
    env; this function is for code that steps a transition of its own and needs the same
    restart (the reset key split off the transition key, no gradient across the
    boundary).

    **Arguments:**

    - `env`: the env whose `reset` builds the fresh state.
    - `key`: the transition's PRNG key.
    - `new_state`: the state after the transition; its `done` decides.
    - `params`: the env's params.

    **Returns:**

    `new_state`, or the reset state when `new_state.done`.
    """
    _, k_reset = jr.split(key)
    _, reset_state = env.reset(k_reset, params)
    return select_tree(new_state.done, jax.lax.stop_gradient(reset_state), new_state)


@functools.cache
def _expected_params(env_class: type, method: str) -> type | None:
    # The class annotated on `params` of the env's own `reset_env` / `step_env`, read once per class.
    return params_class(getattr(env_class, method))


class Environment(eqx.Module):
    """Abstract functional environment (`eqx.Module` holding static configuration only).

    An env implements `reset_env(key, params)` and `step_env(key, state, action, params)`:
    the transition alone. The public `reset` and `step` here call them and add, for
    every env:

    - `params` of the wrong class (the one annotated on the env's `params` argument of
      `reset_env` / `step_env`) raise a one-line `TypeError` naming both classes.
    - `action` must have the action space's shape; a Python list or tuple, or an array
      of another shape (a scalar where a vector is expected), raises a one-line
      `ValueError` naming both shapes, and the env's `action_layout` where it has one.
    - A non-finite action entry (NaN, +inf, -inf) is a defined event, never propagated:
      the entry is replaced by its neutral value, 0 clipped into that entry's bounds in
      the action space (the midpoint of a `[-1, 1]` action), the step runs on the
      cleaned action, `info["invalid_action"]` is True and, where the env reports
      `is_safe`, `info["is_safe"]` is False. State, observation, reward and costs
      stay finite. `info["invalid_action"]` is present (False) on every step.
    - Entries the step never reads under the params (`ignored_action_entries`, such as
      `TransGridEnv`'s unit set-points when an OPF sets the dispatch) take their neutral
      value before that check: whatever they hold changes nothing, so it is not
      reported, and a compiled rollout does not compute them (a policy's or a random
      draw's values for them are dead code that XLA removes).
    - Params whose `with_load_profiles` replaced non-finite profile values inside
      `jit` report it on every step as `info["invalid_load_profiles"]`.
    - Auto-reset: where the state `step_env` returns is `done`, `step` returns the
      observation and state of `reset` under a key split off the step's key (see
      `step`).

    The checks cost one `isfinite`/`where` over the action at run time; the shape and
    class checks run while tracing.

    A class that overrides `reset` and `step` themselves (a wrapper that hands the step
    to an inner env's own `step`) replaces all of this: it checks nothing and resets
    nothing beyond what its own code does.
    """

    def __hash__(self) -> int:
        # An env holding arrays stays hashable, so `jax.jit(env.step)` works.
        return structural_hash(self)

    def reset_env(self, key: Key, params: EnvParams) -> tuple[Float[Array, "..."], EnvState]:
        """The env's own reset: the first observation and state of an episode.

        `reset` calls it after checking `params`; every env implements it (or overrides
        `reset` and `step` both).

        **Arguments:**

        - `key`: PRNG key.
        - `params`: the env's params; annotate them with the env's params class, which
          `reset` then checks.

        **Returns:**

        `(obs, state)`.
        """
        raise NotImplementedError(
            f"{self.name} implements no reset_env(key, params): an Environment writes its reset there"
        )

    def step_env(
        self, key: Key, state: EnvState, action: Array, params: EnvParams
    ) -> StepResult:
        """The env's own transition, without auto-reset.

        `step` calls it with a checked, cleaned action (an array of the action space's
        shape, every entry finite) and restarts the episode on the state it returns; every
        env implements it (or overrides `reset` and `step` both).

        **Arguments:**

        - `key`: PRNG key of the transition (`step` splits the reset key off it).
        - `state`: current state.
        - `action`: the cleaned action.
        - `params`: the env's params; annotate them with the env's params class, which
          `step` then checks.

        **Returns:**

        `(obs, state, reward, costs, done, info)` of the transition: the state after it
        (its `done` set on the episode's last transition) and the observation of that
        state.
        """
        raise NotImplementedError(
            f"{self.name} implements no step_env(key, state, action, params): an Environment writes its "
            "transition there"
        )

    # `params: Any` and `action: Any` on reset and step: they are the layer that checks
    # them, with one-line messages, so a type checker in front must let bad ones through.
    def reset(self, key: Key, params: Any) -> tuple[Float[Array, "..."], EnvState]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.
        - `params`: the env's params (of the class its `reset_env` annotates).

        **Returns:**

        `(obs, state)`: the first observation and the initial state.
        """
        check_params(params, _expected_params(type(self), "reset_env"), f"{self.name}.reset")
        return self.reset_env(key, params)

    def step(self, key: Key, state: EnvState, action: Any, params: Any) -> StepResult:
        """One transition with auto-reset.

        Checks `params` and `action` (see the class docstring), runs `step_env` on the
        cleaned action and, where the state it returns is `done`, returns instead the
        observation and state of `reset(split(key)[1], params)`, with their gradient
        stopped. An env with `observe` has the returned state observed through it.

        **Arguments:**

        - `key`: PRNG key of the transition.
        - `state`: current state.
        - `action`: action of the action space's shape; non-finite entries are replaced (see
          the class docstring).
        - `params`: the env's params.

        **Returns:**

        `(obs, state, reward, costs, done, info)`: the next observation and state (the next
        episode's first when `done`), a float32 scalar reward, the `(n_costs,)` float32 cost
        vector in the order of `constraint_names`, a bool scalar and a dict of scalar
        diagnostics.
        """
        owner = f"{self.name}.step"
        check_params(params, _expected_params(type(self), "step_env"), owner)
        space = self.action_space(params)
        action = as_action_array(action, owner, space.shape, self.action_layout(params))
        low, high = (getattr(space, "low", -jnp.inf), getattr(space, "high", jnp.inf))
        neutral = neutral_action(low, high, space.shape)
        action = drop_ignored_entries(action, neutral, self.ignored_action_entries(params), owner)
        action, invalid = replace_non_finite(action, neutral)
        obs, new_state, reward, costs, done, info = self.step_env(key, state, action, params)
        # The reset key is split off the transition key, never the key itself. The fresh
        # episode carries no gradient and `where` sends none to the ended one, so no gradient
        # crosses an episode boundary. A deterministic reset does not depend on the (batched)
        # key, so under `vmap`/`scan` XLA computes it once, out of the loop. Through `reset`:
        # a subclass that overrides it restarts its episodes the same way.
        _, k_reset = jr.split(key)
        fresh_obs, fresh_state = jax.lax.stop_gradient(self.reset(k_reset, params))
        next_state = select_tree(new_state.done, fresh_state, new_state)
        observed = self.observe(next_state, params)
        obs = select_tree(new_state.done, fresh_obs, obs) if observed is None else observed
        info = flag_invalid_profiles(flag_invalid_action(info, invalid), params)
        return obs, next_state, reward, costs, done, info

    def step_auto_reset(
        self, key: Key, state: EnvState, action: ArrayLike, params: EnvParams
    ) -> StepResult:
        """`step` with `stop_gradient` on obs and state, so no gradient crosses an episode boundary.

        **Arguments:**

        - `key`, `state`, `action`, `params`: as for `step`.

        **Returns:**

        `(obs, state, reward, costs, done, info)`, as `step`.
        """
        obs, state, reward, costs, done, info = self.step(key, state, action, params)
        return (
            jax.lax.stop_gradient(obs),
            jax.lax.stop_gradient(state),
            reward,
            costs,
            done,
            info,
        )

    @abc.abstractmethod
    def observation_space(self, params: EnvParams) -> Space:
        """Space of the observation vector.

        **Arguments:**

        - `params`: the env's params (they fix the sizes).

        **Returns:**

        A [`Space`][powerzoojax.core.Space].
        """

    @abc.abstractmethod
    def action_space(self, params: EnvParams) -> Space:
        """Space of the action.

        **Arguments:**

        - `params`: the env's params (they fix the sizes).

        **Returns:**

        A [`Space`][powerzoojax.core.Space].
        """

    def constraint_names(self, params: EnvParams) -> tuple[str, ...]:
        """Names of the cost channels, in the order of `costs`.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        A tuple of names; `()` when the env has no cost channel.
        """
        return ()

    def iteration_count_keys(self, params: EnvParams) -> tuple[str, ...]:
        """Info keys that count an iterative solver's iterations in `step`; `()` when none.

        Such a solver stops on a float32 test, and where that test sits at round-off two
        compilations of one step (jitted and op by op, vmapped and single, or the same
        program built for another CPU) stop an iteration or more apart with results equal
        within the solver's tolerance. The count is then a diagnostic of the compiled
        program, not of the transition, so the conformance kit checks these keys' presence,
        integer dtype and shape everywhere but compares their values only between runs of
        one compiled program.

        **Arguments:**

        - `params`: the env's params (the keys may depend on the physics mode).

        **Returns:**

        A tuple of `info` keys.
        """
        return ()

    def observe(self, state: EnvState, params: EnvParams) -> Float[Array, "..."] | None:
        """The observation of `state`, for an env whose observation is a function of its
        state alone; `None` (the default) when it is not.

        Where it is one, `step` returns `observe` of the state it returns (the next
        episode's first after a terminal transition) rather than choosing between the
        observations of `step_env` and `reset`: the observation is then computed from the
        stored state, the same numbers, bit for bit, as a fresh `observe` of it gives,
        whatever XLA fuses around the transition.

        **Arguments:**

        - `state`: a state of the env.
        - `params`: the env's params.

        **Returns:**

        The observation, or `None`.
        """
        return None

    def action_layout(self, params: EnvParams) -> str | None:
        """What the action's entries are, for the shape error of `step`; `None` (the
        default) when the shapes alone say enough.

        `step`'s message reads `action must have shape (7,) = <layout>, got (6,)`, so a
        layout names the parts, e.g. `"(n_units,)"`, `"(2 * n_units,)"` or
        `"[train, finetune, cooling]"`.

        **Arguments:**

        - `params`: the env's params (the layout may depend on the mode).

        **Returns:**

        A short string, or `None`.
        """
        return None

    def ignored_action_entries(self, params: EnvParams) -> np.ndarray | None:
        """Which action entries `step` never reads under `params`; `None` when it reads
        them all (the default).

        `step` gives these entries their neutral value before its
        non-finite check, so that nothing computed only for them survives in a compiled
        program. An env whose action layout is fixed across modes but whose step
        ignores part of it in some mode (an OPF that sets the dispatch) says so here.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        `None`, or a boolean NumPy array of the action space's shape, True where the
        entry is ignored.
        """
        return None

    def physics_invariants(self, params: EnvParams) -> tuple[Invariant, ...]:
        """The laws this env's transitions obey under `params` (`()`: none declared).

        [`powerzoojax.testing.check_invariants`][powerzoojax.testing.check_invariants] checks
        them on recorded rollouts, beside the contract every env shares; an env of your own
        lists its laws here so the same property tests cover it.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        A tuple of [`Invariant`][powerzoojax.core.Invariant].
        """
        return ()

    @property
    def name(self) -> str:
        """The env's name in messages: its class name."""
        return type(self).__name__

    def default_params(self) -> EnvParams:
        """Default params; envs that need a case override this or raise.

        **Returns:**

        The env's params with their default values.
        """
        raise NotImplementedError(
            f"{self.name} has no case-free default params: build them with its make_*_params factory"
        )


def denormalize_action(
    action: Float[Array, "*shape"], low: Float[Array, "*shape"], high: Float[Array, "*shape"]
) -> Float[Array, "*shape"]:
    """Map an action in [-1, 1] (clipped first) onto `[low, high]`.

    **Arguments:**

    - `action`: normalised action, any shape.
    - `low`, `high`: bounds of the same shape, in the physical unit of the action.

    **Returns:**

    The action in `[low, high]`, of the same shape.
    """
    a = jnp.clip(action, -1.0, 1.0)
    return 0.5 * (low + high) + 0.5 * a * (high - low)


def time_features(time_step: Int[Array, ""], steps_per_day: int) -> Float[Array, "2"]:
    """`(sin φ, cos φ)` of the time of day, `φ = 2π t / steps_per_day`.

    **Arguments:**

    - `time_step`: int scalar, steps since the episode's start.
    - `steps_per_day`: steps in one day.

    **Returns:**

    A float32 array of shape `(2,)`.
    """
    phi = (2.0 * math.pi / max(steps_per_day, 1)) * time_step.astype(jnp.float32)
    return jnp.stack([jnp.sin(phi), jnp.cos(phi)])


def empty_costs() -> Float[Array, "0"]:
    """Cost vector of an env without constraint channels.

    **Returns:**

    A float32 array of shape `(0,)`.
    """
    return jnp.zeros((0,), jnp.float32)


def stack_costs(*costs: FloatScalar | float) -> Float[Array, " n_costs"]:
    """Stack scalar cost channels into the float32 cost vector.

    **Arguments:**

    - `*costs`: one scalar per cost channel, in the order of `constraint_names`.

    **Returns:**

    A float32 array of shape `(n_costs,)`; shape `(0,)` when no cost is given.
    """
    if not costs:
        return empty_costs()
    return jnp.stack([jnp.asarray(c, jnp.float32) for c in costs])
