"""`RewardWrapper`: replace the reward of a Log, Safe (or Sauté) wrapper by a user function."""

import inspect
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int
from powerzoojax.core._types import Key
from powerzoojax.rl.wrappers._log import (
    LogWrapper,
    episode_info,
    record_episode,
    zero_episode_fields,
)
from powerzoojax.rl.wrappers._outer import OuterWrapper
from powerzoojax.rl.wrappers._safe import SafeRLWrapper
from powerzoojax.rl.wrappers._saute import SauteWrapper
from powerzoojax.rl.wrappers._transition import Transition


class RewardEnvState(eqx.Module):
    """Inner wrapper state, the observation the next action is taken on, and episode sums of
    the new reward.

    **Arguments:**

    - `inner_state`: the wrapped wrapper's state.
    - `prev_obs`: the observation the next action is taken on.
    - `episode_returns`, `episode_lengths`: running return (of the new reward) and length.
    - `returned_episode_returns`, `returned_episode_lengths`: those of the last finished
      episode.
    """

    inner_state: Any
    prev_obs: Float[Array, "..."]
    episode_returns: Float[Array, ""]
    episode_lengths: Int[Array, ""]
    returned_episode_returns: Float[Array, ""]
    returned_episode_lengths: Int[Array, ""]


def _takes_costs(reward_fn: Callable) -> bool:
    try:
        sig = inspect.signature(reward_fn)
    except (TypeError, ValueError):
        return False
    positional = [
        p for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    has_var = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())
    return has_var or len(positional) >= 6


class RewardWrapper(OuterWrapper):
    """Reward shaping over a `LogWrapper`, `SafeRLWrapper` or `SauteWrapper`.

    `obs` is the observation the action was taken on; on the terminal step `next_obs` is
    already the next episode's first observation (auto-reset). The public step's layout is
    the inner wrapper's (5-tuple over Log, 6-tuple over Safe). `info["env_reward"]` holds the
    original reward; the `returned_episode_*` entries are recomputed from the new reward,
    and the inner wrapper's latched return moves to `info["returned_episode_env_returns"]`.
    The other attributes read through to the wrapped wrapper.

    **Arguments:**

    - `wrapped`: the bound wrapper to shape.
    - `reward_fn`: `reward_fn(obs, action, next_obs, reward, info)` returning the new
      scalar reward; a function with six or more positional parameters (or `*args`) is
      called as `reward_fn(obs, action, next_obs, reward, costs, info)` instead, where
      `costs` is the inner transition's: the full cost vector under a `LogWrapper`, the
      selected one under a `SafeRLWrapper` or `SauteWrapper`.
    """
    wrapped: LogWrapper | SafeRLWrapper | SauteWrapper
    reward_fn: Callable = eqx.field(static=True)
    passes_costs: bool = eqx.field(static=True)

    def __init__(self, wrapped: Any, reward_fn: Callable):
        if not isinstance(wrapped, (LogWrapper, SafeRLWrapper, SauteWrapper)):
            raise TypeError(
                "RewardWrapper wraps a LogWrapper or a SafeRLWrapper (or a SauteWrapper; bind the env first, e.g. "
                f"bind(env, params)), got {type(wrapped).__name__}"
            )
        if not callable(reward_fn):
            raise TypeError(f"RewardWrapper: reward_fn must be callable, got {reward_fn!r}")
        self.wrapped = wrapped
        self.reward_fn = reward_fn
        self.passes_costs = _takes_costs(reward_fn)

    # -- contract --------------------------------------------------------------------
    def reset(self, key: Key) -> tuple[Float[Array, "..."], RewardEnvState]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)` with a [`RewardEnvState`][powerzoojax.rl.wrappers.RewardEnvState].
        """
        obs, inner = self.wrapped.reset(key)
        return obs, RewardEnvState(inner_state=inner, prev_obs=obs, **zero_episode_fields())

    def _reshape(self, state: RewardEnvState, action: ArrayLike, inner: Transition) -> Transition:
        next_obs, env_reward, costs, done, info = inner.obs, inner.reward, inner.costs, inner.done, inner.info
        if self.passes_costs:
            reward = self.reward_fn(state.prev_obs, action, next_obs, env_reward, costs, info)
        else:
            reward = self.reward_fn(state.prev_obs, action, next_obs, env_reward, info)
        reward = jnp.asarray(reward, jnp.float32)
        if reward.shape != ():
            raise ValueError(f"RewardWrapper: reward_fn must return a scalar, got shape {reward.shape}")
        fields = record_episode(state, reward, done)
        new_state = RewardEnvState(inner_state=inner.state, prev_obs=next_obs, **fields)
        info = {
            **info,
            "env_reward": env_reward,
            "returned_episode_env_returns": info["returned_episode_returns"],
            **episode_info(fields, done),
        }
        return Transition(next_obs, new_state, reward, costs, done, info)

    def transition(self, key: Key, state: RewardEnvState, action: ArrayLike) -> Transition:
        """One transition with the shaped reward.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`RewardEnvState`][powerzoojax.rl.wrappers.RewardEnvState].
        - `action`: the env's action.

        **Returns:**

        The wrapped wrapper's [`Transition`][powerzoojax.rl.wrappers.Transition] with the
        new reward and this wrapper's state.
        """
        return self._reshape(state, action, self.wrapped.transition(key, state.inner_state, action))

    def transition_auto_reset(self, key: Key, state: RewardEnvState, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs, state and costs (as the inner wrapper).

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        As for `transition`.
        """
        t = self._reshape(state, action, self.wrapped.transition_auto_reset(key, state.inner_state, action))
        return Transition(t.obs, jax.lax.stop_gradient(t.state), t.reward, t.costs, t.done, t.info)
