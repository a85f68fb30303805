"""Action wrappers: `ClipAction` (any action is clipped into the space) and
`RescaleAction` (the agent acts in `[low, high]`, the env gets its own bounds)."""

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float
from powerzoojax.core import Box, make_box
from powerzoojax.core._types import Key
from powerzoojax.rl.wrappers._outer import OuterWrapper, box_bounds
from powerzoojax.rl.wrappers._transition import Transition


class ClipAction(OuterWrapper):
    """Clip every action into the inner wrapper's `Box` before stepping.

    The action space is unchanged (agents still sample from it); an action outside it,
    e.g. a Gaussian policy's unclipped sample, reaches the env as the nearest point of the
    box. State and outputs are the inner wrapper's.

    **Arguments:**

    - `wrapped`: a bound or outer wrapper with a `Box` action space (`TypeError` otherwise).
    """

    low: Float[Array, " action_dim"]
    high: Float[Array, " action_dim"]

    def __init__(self, wrapped: Any):
        low, high = box_bounds(wrapped.action_space(), "ClipAction", "action")
        self.wrapped = wrapped
        self.low = jnp.asarray(low, jnp.float32)
        self.high = jnp.asarray(high, jnp.float32)

    def reset(self, key: Key) -> tuple[Any, Any]:
        """Start an episode: the inner wrapper's reset.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)` of the inner wrapper.
        """
        return self.wrapped.reset(key)

    def _clip(self, action: ArrayLike) -> Array:
        return jnp.clip(jnp.asarray(action, jnp.float32), self.low, self.high)

    def transition(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """One transition of the inner wrapper with the action clipped into the box.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the inner wrapper's state.
        - `action`: the agent's action.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition].
        """
        return self.wrapped.transition(key, state, self._clip(action))

    def transition_auto_reset(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs and state (as the inner wrapper).

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition].
        """
        return self.wrapped.transition_auto_reset(key, state, self._clip(action))


class RescaleAction(OuterWrapper):
    """The agent acts in `[low, high]` (default `[-1, 1]`); the env gets the action mapped
    affinely onto its own `Box`.

    Actions are clipped to `[low, high]` first, so the env always receives a point of its
    space. `ValueError` when the inner space has an infinite bound (nothing to map onto)
    or `low >= high`.

    **Arguments:**

    - `wrapped`: a bound or outer wrapper with a finite `Box` action space.
    - `low`, `high`: bounds of the agent's action, the same for every entry (finite).
    """

    low: float = eqx.field(static=True)
    high: float = eqx.field(static=True)
    env_low: Float[Array, " action_dim"]
    env_high: Float[Array, " action_dim"]

    def __init__(self, wrapped: Any, low: float | int = -1.0, high: float | int = 1.0):
        env_low, env_high = box_bounds(wrapped.action_space(), "RescaleAction", "action")
        for name, value in (("low", low), ("high", high)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"RescaleAction: {name} must be a finite number, got {value!r}")
        if not low < high:
            raise ValueError(f"RescaleAction: low must be below high, got low={low}, high={high}")
        if not (np.all(np.isfinite(env_low)) and np.all(np.isfinite(env_high))):
            raise ValueError(
                f"RescaleAction: the action space of {wrapped.name} has infinite bounds "
                f"(low {env_low.tolist()}, high {env_high.tolist()}); there is no range to rescale onto"
            )
        self.wrapped = wrapped
        self.low, self.high = float(low), float(high)
        self.env_low = jnp.asarray(env_low, jnp.float32)
        self.env_high = jnp.asarray(env_high, jnp.float32)

    def action_space(self) -> Box:
        return make_box(self.low, self.high, tuple(self.env_low.shape))

    def to_env_action(self, action: ArrayLike) -> Float[Array, " action_dim"]:
        """The env's action for an agent action in `[low, high]` (clipped into it first).

        **Arguments:**

        - `action`: the agent's action, shape `(action_dim,)`.

        **Returns:**

        The env's action, shape `(action_dim,)`, inside the env's `Box`.
        """
        a = jnp.clip(jnp.asarray(action, jnp.float32), self.low, self.high)
        fraction = (a - self.low) / (self.high - self.low)
        return self.env_low + fraction * (self.env_high - self.env_low)

    def reset(self, key: Key) -> tuple[Any, Any]:
        """Start an episode: the inner wrapper's reset.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)` of the inner wrapper.
        """
        return self.wrapped.reset(key)

    def transition(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """One transition of the inner wrapper with the action mapped by `to_env_action`.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the inner wrapper's state.
        - `action`: the agent's action.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition].
        """
        return self.wrapped.transition(key, state, self.to_env_action(action))

    def transition_auto_reset(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs and state (as the inner wrapper).

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition].
        """
        return self.wrapped.transition_auto_reset(key, state, self.to_env_action(action))
