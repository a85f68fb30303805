"""The env contract every PowerZooJax environment implements.

``env`` holds static configuration only; ``params`` (array leaves, plus static
shape-defining fields) and ``state`` flow through ``jit``/``vmap``/``scan``::

    obs, state = env.reset(key, params)
    obs, state, reward, costs, done, info = env.step(key, state, action, params)

``step`` auto-resets: on the terminal transition ``done`` is True and the returned
state (and obs) is already the next episode's first one.
"""

import abc
import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PyTree

from powerzoojax.core._invariant import Invariant
from powerzoojax.core._spaces import Space
from powerzoojax.core._types import BoolScalar, FloatScalar, Info, Key


class EnvState(eqx.Module):
    """Base state: subclasses only add fields."""

    time_step: Int[Array, ""]
    done: Bool[Array, ""]


class EnvParams(eqx.Module):
    """Base params: episode length and step duration are static (they shape the program)."""

    max_steps: int = eqx.field(static=True, default=48, kw_only=True)
    delta_t_hours: float = eqx.field(static=True, default=0.5, kw_only=True)


StepResult = tuple[
    Float[Array, "..."], Any, FloatScalar, Float[Array, " n_costs"], BoolScalar, Info
]


def select_tree(pred: BoolScalar, on_true: PyTree, on_false: PyTree) -> PyTree:
    """Leaf-wise ``where(pred, on_true, on_false)``; one predicate for the whole tree."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def auto_reset(
    env: "Environment", key: Key, new_state: EnvState, params: EnvParams
) -> EnvState:
    """Replace ``new_state`` by a fresh reset when its episode has ended.

    The reset key is split off the transition key, never the key itself. When the
    env's reset is deterministic the reset state does not depend on the (batched) key,
    so under ``vmap``/``scan`` XLA computes it once and hoists it out of the loop.
    """
    _, k_reset = jr.split(key)
    _, reset_state = env.reset(k_reset, params)
    return jax.lax.stop_gradient(select_tree(new_state.done, reset_state, new_state))


class Environment(eqx.Module):
    """Abstract functional environment (``eqx.Module`` holding static configuration only)."""

    @abc.abstractmethod
    def reset(self, key: Key, params: EnvParams) -> tuple[Float[Array, "..."], EnvState]:
        """Start an episode: ``(obs, state)``."""

    @abc.abstractmethod
    def step(self, key: Key, state: EnvState, action: ArrayLike, params: EnvParams) -> StepResult:
        """One transition with auto-reset: ``(obs, state, reward, costs, done, info)``."""

    def step_auto_reset(
        self, key: Key, state: EnvState, action: ArrayLike, params: EnvParams
    ) -> StepResult:
        """``step`` with ``stop_gradient`` on obs and state, so no gradient crosses an episode boundary."""
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
        """Space of the observation vector."""

    @abc.abstractmethod
    def action_space(self, params: EnvParams) -> Space:
        """Space of the action."""

    def constraint_names(self, params: EnvParams) -> tuple[str, ...]:
        """Names of the cost channels, in the order of ``costs``; ``()`` when there are none."""
        return ()

    def iteration_count_keys(self, params: EnvParams) -> tuple[str, ...]:
        """Info keys that count an iterative solver's iterations in ``step``; ``()`` when none.

        Such a solver stops on a float32 test, and where that test sits at round-off two
        compilations of one step (jitted and op by op, vmapped and single, or the same
        program built for another CPU) stop an iteration or more apart with results equal
        within the solver's tolerance. The count is then a diagnostic of the compiled
        program, not of the transition, so the conformance kit checks these keys' presence,
        integer dtype and shape everywhere but compares their values only between runs of
        one compiled program.
        """
        return ()

    def physics_invariants(self, params: EnvParams) -> tuple[Invariant, ...]:
        """The laws this env's transitions obey under ``params`` (``()``: none declared).

        :func:`powerzoojax.testing.check_invariants` checks them on recorded rollouts,
        beside the contract every env shares; an env of your own lists its laws here so
        the same property tests cover it.
        """
        return ()

    @property
    def name(self) -> str:
        return type(self).__name__

    def default_params(self) -> EnvParams:
        """Default params; envs that need a case override this or raise."""
        raise NotImplementedError(
            f"{self.name} has no case-free default params: build them with its make_*_params factory"
        )


def denormalize_action(
    action: Float[Array, "*shape"], low: Float[Array, "*shape"], high: Float[Array, "*shape"]
) -> Float[Array, "*shape"]:
    """Map an action in [-1, 1] (clipped first) onto ``[low, high]``."""
    a = jnp.clip(action, -1.0, 1.0)
    return 0.5 * (low + high) + 0.5 * a * (high - low)


def time_features(time_step: Int[Array, ""], steps_per_day: int) -> Float[Array, "2"]:
    """``(sin φ, cos φ)`` of the time of day, ``φ = 2π t / steps_per_day``."""
    phi = (2.0 * math.pi / max(steps_per_day, 1)) * time_step.astype(jnp.float32)
    return jnp.stack([jnp.sin(phi), jnp.cos(phi)])


def empty_costs() -> Float[Array, "0"]:
    """Cost vector of an env without constraint channels."""
    return jnp.zeros((0,), jnp.float32)


def stack_costs(*costs: FloatScalar | float) -> Float[Array, " n_costs"]:
    """Stack scalar cost channels into the float32 cost vector."""
    if not costs:
        return empty_costs()
    return jnp.stack([jnp.asarray(c, jnp.float32) for c in costs])
