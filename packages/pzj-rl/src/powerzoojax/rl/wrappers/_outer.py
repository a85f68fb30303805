"""What every wrapper over a bound wrapper shares: the forwarded API, the public step
layout of the stack and the one place a wrapper that ends an episode resets.

A bound wrapper (`LogWrapper`, `SafeRLWrapper`, `SauteWrapper`) holds an env and its
params; the wrappers built on `OuterWrapper` (`RewardWrapper`, the observation,
action and time-limit wrappers) hold one of those, or another outer wrapper, and stack
freely: `FrameStack(NormalizeObservation(bind(env, params)), 4)`. Each builds its
[`Transition`][powerzoojax.rl.wrappers.Transition] from the inner one's; trainers and the
wrappers' conformance kit read that transition on every layer.
"""

from typing import Any

import equinox as eqx
import jax.random as jr
import numpy as np
from jaxtyping import Array, Bool
from powerzoojax.core import Box, Space, select_tree
from powerzoojax.core._guard import structural_hash
from powerzoojax.core._types import Key, where
from powerzoojax.rl.wrappers._transition import AbstractWrapper, Transition


class OuterWrapper(AbstractWrapper):
    """Base of the wrappers around a bound wrapper: everything not overridden is the inner one's.

    `obs_size` and `num_actions` follow this wrapper's own spaces; the public step's
    layout (`emits_costs`) is the bound wrapper's at the bottom of the stack.

    **Arguments:**

    - `wrapped`: a `LogWrapper`, `SafeRLWrapper`, `SauteWrapper` or another outer wrapper.
    """

    wrapped: Any

    def __hash__(self) -> int:
        # Hash without the bound params' array values, so `jax.jit(wrapper.step)` works.
        return structural_hash(self)

    @property
    def emits_costs(self) -> bool:
        """Layout of the public step tuple, the bound wrapper's: True for the 6-tuple
        with costs, False for the 5-tuple."""
        return self.bound_wrapper.emits_costs

    @property
    def bound_wrapper(self) -> Any:
        """The bound wrapper at the bottom of the stack."""
        return self.wrapped.bound_wrapper

    @property
    def reported_constraint_names(self) -> tuple[str, ...]:
        """The channels of `Transition.costs` (the inner wrapper's)."""
        return self.wrapped.reported_constraint_names

    def restart_where(self, key: Key, end: Bool[Array, ""], t: Transition) -> Transition:
        """`t` with the inner wrapper reset where `end` (this wrapper ends the episode).

        The reset key is the one the env's own auto-reset would use (`split(key)[1]`), so
        the observation and state returned on that step start the next episode as the
        env's would; `done` is left to the caller.

        **Arguments:**

        - `key`: the step's PRNG key.
        - `end`: bool scalar, whether this wrapper ends the episode on this step.
        - `t`: the inner wrapper's transition.

        **Returns:**

        `t`, with the next episode's first observation and inner state where `end`.
        """
        reset_obs, reset_inner = self.wrapped.reset(jr.split(key)[1])
        obs = where(end, reset_obs, t.obs)
        return Transition(obs, select_tree(end, reset_inner, t.state), t.reward, t.costs, t.done, t.info)

    @property
    def env(self) -> Any:
        """The innermost [`Environment`][powerzoojax.core.Environment]."""
        return self.wrapped.env

    @property
    def params(self) -> Any:
        """The params bound by the innermost wrapper."""
        return self.wrapped.params

    @property
    def name(self) -> str:
        """The env's name."""
        return self.wrapped.name

    @property
    def max_steps(self) -> int:
        """Episode length [steps] (static)."""
        return self.wrapped.max_steps

    def observation_space(self) -> Space:
        """Observation space of this wrapper.

        **Returns:**

        A [`Space`][powerzoojax.core.Space].
        """
        return self.wrapped.observation_space()

    def action_space(self) -> Space:
        """Action space of this wrapper.

        **Returns:**

        A [`Space`][powerzoojax.core.Space].
        """
        return self.wrapped.action_space()

    @property
    def obs_size(self) -> int:
        """Length of the (flat) observation."""
        return int(self.observation_space().shape[0])

    @property
    def num_actions(self) -> int:
        """Number of discrete actions, or the length of a continuous action."""
        space = self.action_space()
        if hasattr(space, "n") and not space.shape:  # a Discrete, or a space duck-typed as one
            return int(space.n)  # pyright: ignore[reportAttributeAccessIssue]
        return int(space.shape[0])

    @property
    def action_size(self) -> int:
        """Alias of `num_actions`."""
        return self.num_actions

    def constraint_names(self) -> tuple[str, ...]:
        """All of the env's cost channels, in the env's order.

        **Returns:**

        A tuple of cost-channel names.
        """
        return self.wrapped.constraint_names()

    @property
    def selected_constraint_names(self) -> tuple[str, ...]:
        """The cost channels the inner Safe / Sauté wrapper reports."""
        return self.wrapped.selected_constraint_names

    @property
    def cost_thresholds(self) -> tuple[float, ...]:
        """Per-episode budget of each selected channel."""
        return self.wrapped.cost_thresholds

    @property
    def num_constraints(self) -> int:
        """Number of selected cost channels."""
        return self.wrapped.num_constraints

    @property
    def cost_threshold(self) -> float | tuple[float, ...]:
        """The single per-episode budget, or the tuple `cost_thresholds` when they differ."""
        return self.wrapped.cost_threshold


class InnerState(eqx.Module):
    """Base of an outer wrapper's state: the inner wrapper's state, whose episode sums it shows.

    **Arguments:**

    - `inner_state`: the inner wrapper's state.
    """

    inner_state: Any

    @property
    def episode_returns(self) -> Array:
        """Running return of the current episode (the inner wrapper's)."""
        return self.inner_state.episode_returns

    @property
    def episode_lengths(self) -> Array:
        """Running length [steps] of the current episode (the inner wrapper's)."""
        return self.inner_state.episode_lengths


def box_bounds(space: Space, owner: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    """`(low, high)` of a `Box`, broadcast to its shape; `TypeError` for another space."""
    if not isinstance(space, Box):
        raise TypeError(f"{owner} needs a Box {what} space, got {type(space).__name__}")
    low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape)
    high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape)
    return low, high
