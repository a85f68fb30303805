"""Observation wrappers: `NormalizeObservation` (running or fixed statistics),
`ClipObservation` and `FrameStack` (the last k observations side by side)."""

import math
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float
from powerzoojax.core import Box, make_box
from powerzoojax.core._types import Key
from powerzoojax.rl.wrappers._outer import InnerState, OuterWrapper, box_bounds
from powerzoojax.rl.wrappers._running_stats import OBS_CLIP, RunningStats, init_stats, normalize, update_stats
from powerzoojax.rl.wrappers._transition import Transition


def _flat_obs_shape(wrapped: Any, owner: str) -> tuple[int]:
    shape = tuple(wrapped.observation_space().shape)
    if len(shape) != 1:
        raise ValueError(f"{owner}: needs a 1-D observation, {wrapped.name} has shape {shape}")
    return shape


class NormalizeObservationState(InnerState):
    """The inner state and the statistics the observations are normalised by.

    **Arguments:**

    - `inner_state`: the inner wrapper's state.
    - `stats`: the [`RunningStats`][powerzoojax.rl.wrappers.RunningStats], shape `(obs_dim,)`.
    """

    stats: RunningStats


class NormalizeObservation(OuterWrapper):
    """Observations normalised to `(obs − mean) / std`, clipped to `±clip`.

    With no `stats` the statistics are running ones, kept in the wrapper's state and
    merged with every observation seen (reset included); they carry over from episode to
    episode, and each env of a vmapped batch keeps its own. With `stats` (e.g. a PPO
    result's `obs_stats`) they are fixed: a trained policy sees its training's scaling.
    `update=True` with `stats` continues from them. The statistics are the same
    [`RunningStats`][powerzoojax.rl.wrappers.RunningStats] PPO keeps (`normalize_observations`).

    The observation on a terminal step is the next episode's first one, normalised by the
    carried statistics, so it differs from a fresh `reset` (whose statistics start
    over): run the conformance kit with `fresh_terminal_obs=False` for the running mode.

    **Arguments:**

    - `wrapped`: a bound or outer wrapper with a 1-D observation.
    - `stats`: fixed statistics, shape `(obs_dim,)`; `None` keeps running ones.
    - `update`: whether observations update the statistics; `None` means "only when
      `stats` is `None`".
    - `clip`: bound of the normalised observation [standard deviations], positive.
    """

    stats: RunningStats | None
    update: bool = eqx.field(static=True)
    clip: float = eqx.field(static=True)

    def __init__(self, wrapped: Any, *, stats: RunningStats | None = None, update: bool | None = None,
                 clip: float | int = OBS_CLIP):
        shape = _flat_obs_shape(wrapped, "NormalizeObservation")
        if isinstance(clip, bool) or not isinstance(clip, (int, float)) or not math.isfinite(clip) or clip <= 0:
            raise ValueError(f"NormalizeObservation: clip must be a positive number, got {clip!r}")
        if stats is not None:
            if not isinstance(stats, RunningStats):
                raise TypeError(f"NormalizeObservation: stats must be RunningStats (e.g. result.obs_stats), got {type(stats).__name__}")
            if tuple(stats.mean.shape) != shape:
                raise ValueError(f"NormalizeObservation: stats are for observations of shape {tuple(stats.mean.shape)}, "
                                 f"{wrapped.name} observes shape {shape}")
        self.wrapped = wrapped
        self.stats = stats
        self.update = stats is None if update is None else bool(update)
        self.clip = float(clip)

    def observation_space(self) -> Box:
        return make_box(-self.clip, self.clip, _flat_obs_shape(self.wrapped, "NormalizeObservation"))

    def _seen(self, stats: RunningStats, obs: Array) -> tuple[Array, RunningStats]:
        if self.update:
            stats = update_stats(stats, obs[None])
        return normalize(stats, obs, self.clip), stats

    def reset(self, key: Key) -> tuple[Float[Array, " obs_dim"], NormalizeObservationState]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)`: the normalised observation; a [`NormalizeObservationState`][powerzoojax.rl.wrappers.NormalizeObservationState].
        """
        obs, inner = self.wrapped.reset(key)
        start = init_stats(obs.shape) if self.stats is None else self.stats
        obs, stats = self._seen(start, obs)
        return obs, NormalizeObservationState(inner_state=inner, stats=stats)

    def _apply(self, state: NormalizeObservationState, inner: Transition) -> Transition:
        obs, stats = self._seen(state.stats, inner.obs)
        new_state = NormalizeObservationState(inner_state=inner.state, stats=stats)
        return Transition(obs, new_state, inner.reward, inner.costs, inner.done, inner.info)

    def transition(self, key: Key, state: NormalizeObservationState, action: ArrayLike) -> Transition:
        """One transition of the inner wrapper, its observation normalised.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`NormalizeObservationState`][powerzoojax.rl.wrappers.NormalizeObservationState].
        - `action`: the agent's action.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition] with this
        wrapper's observation and state.
        """
        return self._apply(state, self.wrapped.transition(key, state.inner_state, action))

    def transition_auto_reset(self, key: Key, state: NormalizeObservationState, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs and state (as the inner wrapper).

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        As for `transition`.
        """
        return self._apply(state, self.wrapped.transition_auto_reset(key, state.inner_state, action)).stop_state_gradient()


class ClipObservation(OuterWrapper):
    """Observations clipped into `[low, high]` (scalars or one bound per entry); the
    observation space is the inner one intersected with that box. State is the inner one's.

    **Arguments:**

    - `wrapped`: a bound or outer wrapper with a 1-D `Box` observation space.
    - `low`, `high`: the bounds, scalars or shape `(obs_dim,)`, `low <= high`, meeting the
      inner space.
    """

    low: Float[Array, " obs_dim"]
    high: Float[Array, " obs_dim"]

    def __init__(self, wrapped: Any, low: ArrayLike | Sequence[float | int], high: ArrayLike | Sequence[float | int]):
        shape = _flat_obs_shape(wrapped, "ClipObservation")
        inner_low, inner_high = box_bounds(wrapped.observation_space(), "ClipObservation", "observation")
        try:
            low_np = np.broadcast_to(np.asarray(low, np.float64), shape)
            high_np = np.broadcast_to(np.asarray(high, np.float64), shape)
        except ValueError:
            raise ValueError(f"ClipObservation: low and high must be scalars or of shape {shape}, "
                             f"got shapes {np.shape(low)} and {np.shape(high)}") from None
        if np.any(np.isnan(low_np)) or np.any(np.isnan(high_np)) or np.any(low_np > high_np):
            raise ValueError(f"ClipObservation: need low <= high everywhere, got low={low!r}, high={high!r}")
        self.wrapped = wrapped
        self.low = jnp.asarray(np.maximum(low_np, inner_low), jnp.float32)
        self.high = jnp.asarray(np.minimum(high_np, inner_high), jnp.float32)
        if bool(jnp.any(self.low > self.high)):
            raise ValueError(f"ClipObservation: [low, high] does not meet {wrapped.name}'s observation space")

    def observation_space(self) -> Box:
        return make_box(np.asarray(self.low), np.asarray(self.high))

    def reset(self, key: Key) -> tuple[Float[Array, " obs_dim"], Any]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)`: the clipped observation; the inner wrapper's state.
        """
        obs, state = self.wrapped.reset(key)
        return jnp.clip(obs, self.low, self.high), state

    def _apply(self, inner: Transition) -> Transition:
        obs = jnp.clip(inner.obs, self.low, self.high)
        return Transition(obs, inner.state, inner.reward, inner.costs, inner.done, inner.info)

    def transition(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """One transition of the inner wrapper, its observation clipped.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the inner wrapper's state.
        - `action`: the agent's action.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition] with the
        clipped observation.
        """
        return self._apply(self.wrapped.transition(key, state, action))

    def transition_auto_reset(self, key: Key, state: Any, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs and state (as the inner wrapper).

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        As for `transition`.
        """
        return self._apply(self.wrapped.transition_auto_reset(key, state, action))


class FrameStackState(InnerState):
    """The inner state and the last `num_frames` observations, oldest first.

    **Arguments:**

    - `inner_state`: the inner wrapper's state.
    - `frames`: the observations, shape `(num_frames, obs_dim)`.
    """

    frames: Float[Array, "num_frames obs_dim"]


class FrameStack(OuterWrapper):
    """The observation is the last `num_frames` inner observations, oldest first, flattened
    to `(num_frames · obs_dim,)`.

    An episode starts with its first observation repeated `num_frames` times, on reset
    and on the auto-reset of a terminal step, so frames never cross an episode boundary.

    **Arguments:**

    - `wrapped`: a bound or outer wrapper with a 1-D observation.
    - `num_frames`: how many observations to stack, a positive integer.
    """

    num_frames: int = eqx.field(static=True)

    def __init__(self, wrapped: Any, num_frames: int):
        _flat_obs_shape(wrapped, "FrameStack")
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1:
            raise ValueError(f"FrameStack: num_frames must be a positive integer, got {num_frames!r}")
        self.wrapped = wrapped
        self.num_frames = num_frames

    def observation_space(self) -> Box:
        low, high = box_bounds(self.wrapped.observation_space(), "FrameStack", "observation")
        return make_box(np.tile(low, self.num_frames), np.tile(high, self.num_frames))

    def reset(self, key: Key) -> tuple[Float[Array, " stacked_dim"], FrameStackState]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)`: the first observation repeated `num_frames` times, flattened; a [`FrameStackState`][powerzoojax.rl.wrappers.FrameStackState].
        """
        obs, inner = self.wrapped.reset(key)
        frames = jnp.tile(obs[None], (self.num_frames, 1))
        return frames.reshape(-1), FrameStackState(inner_state=inner, frames=frames)

    def _apply(self, state: FrameStackState, inner: Transition) -> Transition:
        rolled = jnp.concatenate([state.frames[1:], inner.obs[None]], axis=0)
        fresh = jnp.tile(inner.obs[None], (self.num_frames, 1))
        frames = jax.lax.select(jnp.broadcast_to(inner.done, rolled.shape), fresh, rolled)
        new_state = FrameStackState(inner_state=inner.state, frames=frames)
        return Transition(frames.reshape(-1), new_state, inner.reward, inner.costs, inner.done, inner.info)

    def transition(self, key: Key, state: FrameStackState, action: ArrayLike) -> Transition:
        """One transition of the inner wrapper, its observation appended to the stack.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`FrameStackState`][powerzoojax.rl.wrappers.FrameStackState].
        - `action`: the agent's action.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition] with this
        wrapper's observation and state.
        """
        return self._apply(state, self.wrapped.transition(key, state.inner_state, action))

    def transition_auto_reset(self, key: Key, state: FrameStackState, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs and state (as the inner wrapper).

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        As for `transition`.
        """
        return self._apply(state, self.wrapped.transition_auto_reset(key, state.inner_state, action)).stop_state_gradient()
