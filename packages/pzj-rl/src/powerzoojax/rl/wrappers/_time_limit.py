"""`TimeLimit`: episodes cut shorter than the bound params' `max_steps`."""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int
from powerzoojax.core._types import Key
from powerzoojax.rl.wrappers._base import accumulate
from powerzoojax.rl.wrappers._log import episode_info, record_episode, zero_episode_fields
from powerzoojax.rl.wrappers._outer import OuterWrapper
from powerzoojax.rl.wrappers._transition import Transition


class TimeLimitState(eqx.Module):
    """The inner state, steps taken in this episode, and this wrapper's episode sums.

    **Arguments:**

    - `inner_state`: the inner wrapper's state.
    - `elapsed`: steps taken in the current episode.
    - `episode_returns`, `episode_lengths`: running return and length [steps] of the
      current episode.
    - `returned_episode_returns`, `returned_episode_lengths`: those of the last finished
      episode (latched until the next one finishes).
    - `episode_costs`, `returned_episode_costs`: running and latched cost sums, shape `(k,)`
      (one per reported cost channel).
    """

    inner_state: Any
    elapsed: Int[Array, ""]
    episode_returns: Float[Array, ""]
    episode_lengths: Int[Array, ""]
    returned_episode_returns: Float[Array, ""]
    returned_episode_lengths: Int[Array, ""]
    episode_costs: Float[Array, " k"]
    returned_episode_costs: Float[Array, " k"]


class TimeLimit(OuterWrapper):
    """Episodes of at most `max_steps` steps (at most the bound params' `max_steps`).

    After `max_steps` steps the episode ends: `done` is True, `info["truncated"]`
    says the limit (not the env) ended it, and the inner wrapper is reset with the key
    the env's own auto-reset would use (`split(key)[1]`, `OuterWrapper.restart_where`), so
    the returned observation and state start the next episode. The episode statistics
    (`returned_episode_*`, and `returned_episode_costs` / `returned_episode_cost_sum`
    where the inner wrapper reports them) are this wrapper's, latched at its episode ends. A longer episode needs
    params built with a longer horizon (`make_*_params(max_steps=...)`): the env's own
    state (its time of day, its profiles) ends with them.

    **Arguments:**

    - `wrapped`: a bound or outer wrapper.
    - `max_steps`: episode length [steps], a positive integer no longer than
      `wrapped.max_steps`.
    """

    limit: int = eqx.field(static=True)
    cost_width: int = eqx.field(static=True)

    def __init__(self, wrapped: Any, max_steps: int):
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"TimeLimit: max_steps must be a positive integer, got {max_steps!r}")
        if max_steps > wrapped.max_steps:
            raise ValueError(
                f"TimeLimit: max_steps={max_steps} exceeds the bound params' episode of {wrapped.max_steps} steps; "
                "build the params with a longer max_steps instead"
            )
        self.wrapped = wrapped
        self.limit = max_steps
        self.cost_width = len(wrapped.reported_constraint_names)

    @property
    def max_steps(self) -> int:
        return self.limit

    def reset(self, key: Key) -> tuple[Any, TimeLimitState]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)` with a [`TimeLimitState`][powerzoojax.rl.wrappers.TimeLimitState].
        """
        obs, inner = self.wrapped.reset(key)
        zeros = jnp.zeros((self.cost_width,), jnp.float32)
        return obs, TimeLimitState(
            inner_state=inner, elapsed=jnp.asarray(0, jnp.int32), **zero_episode_fields(),
            episode_costs=zeros, returned_episode_costs=zeros,
        )

    def _apply(self, key: Key, state: TimeLimitState, inner: Transition) -> Transition:
        elapsed = state.elapsed + 1
        truncated = (elapsed >= self.limit) & ~inner.done
        t = self.restart_where(key, truncated, inner)
        done = t.done | truncated
        fields = record_episode(state, t.reward, done)
        episode_costs, returned_costs = accumulate(state.episode_costs, state.returned_episode_costs, t.costs, done)
        new_state = TimeLimitState(
            inner_state=t.state, elapsed=jnp.where(done, 0, elapsed), **fields,
            episode_costs=episode_costs, returned_episode_costs=returned_costs,
        )
        info = {**t.info, **episode_info(fields, done), "truncated": truncated}
        if "returned_episode_costs" in info:
            info["returned_episode_costs"] = returned_costs
        if "returned_episode_cost_sum" in info:
            info["returned_episode_cost_sum"] = jnp.sum(returned_costs)
        return Transition(t.obs, new_state, t.reward, t.costs, done, info)

    def transition(self, key: Key, state: TimeLimitState, action: ArrayLike) -> Transition:
        """One transition of the inner wrapper, ending the episode at the limit.

        **Arguments:**

        - `key`: PRNG key (also the reset key at the limit).
        - `state`: the [`TimeLimitState`][powerzoojax.rl.wrappers.TimeLimitState].
        - `action`: the agent's action.

        **Returns:**

        The inner wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition] with this
        wrapper's state and `done`; `info` adds `truncated` and this wrapper's episode
        statistics.
        """
        return self._apply(key, state, self.wrapped.transition(key, state.inner_state, action))

    def transition_auto_reset(self, key: Key, state: TimeLimitState, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs and state (as the inner wrapper).

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        As for `transition`.
        """
        return self._apply(key, state, self.wrapped.transition_auto_reset(key, state.inner_state, action)).stop_state_gradient()
