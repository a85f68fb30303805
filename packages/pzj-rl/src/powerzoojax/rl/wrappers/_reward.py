"""``RewardWrapper``: replace the reward of a Log, Safe (or Sauté) wrapper by a user function."""

import inspect
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int
from powerzoojax.core import Space
from powerzoojax.core._guard import structural_hash
from powerzoojax.core._types import Key
from powerzoojax.rl.wrappers._log import (
    LogWrapper,
    episode_info,
    record_episode,
    zero_episode_fields,
)
from powerzoojax.rl.wrappers._safe import SafeRLWrapper
from powerzoojax.rl.wrappers._saute import SauteWrapper


class RewardEnvState(eqx.Module):
    """Inner wrapper state, the observation the next action is taken on, and episode sums of the new reward."""

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


class RewardWrapper(eqx.Module):
    """Reward shaping over a ``LogWrapper`` or ``SafeRLWrapper``.

    ``reward_fn(obs, action, next_obs, reward, info)`` returns the new scalar reward; a
    function with six or more positional parameters (or ``*args``) is called as
    ``reward_fn(obs, action, next_obs, reward, costs, info)`` instead, where ``costs`` is
    the full cost vector under a ``LogWrapper`` and the selected one under a
    ``SafeRLWrapper``. ``obs`` is the observation the action was taken on; on the terminal
    step ``next_obs`` is already the next episode's first observation (auto-reset).

    The output arity is the inner wrapper's (5-tuple over Log, 6-tuple over Safe).
    ``info["env_reward"]`` holds the original reward; the ``returned_episode_*`` entries
    are recomputed from the new reward, and the inner wrapper's latched return moves to
    ``info["returned_episode_env_returns"]``.
    """
    wrapped: LogWrapper | SafeRLWrapper | SauteWrapper
    reward_fn: Callable = eqx.field(static=True)
    passes_costs: bool = eqx.field(static=True)

    def __hash__(self) -> int:
        # Hash without the bound params' array values, so ``jax.jit(wrapper.step)`` works.
        return structural_hash(self)

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

    # -- forwarded, explicitly -------------------------------------------------------
    @property
    def emits_costs(self) -> bool:
        return self.wrapped.emits_costs

    @property
    def env(self) -> Any:
        return self.wrapped.env

    @property
    def params(self) -> Any:
        return self.wrapped.params

    @property
    def name(self) -> str:
        return self.wrapped.name

    @property
    def max_steps(self) -> int:
        return self.wrapped.max_steps

    def observation_space(self) -> Space:
        return self.wrapped.observation_space()

    def action_space(self) -> Space:
        return self.wrapped.action_space()

    @property
    def obs_size(self) -> int:
        return self.wrapped.obs_size

    @property
    def num_actions(self) -> int:
        return self.wrapped.num_actions

    @property
    def action_size(self) -> int:
        return self.wrapped.action_size

    def constraint_names(self) -> tuple[str, ...]:
        return self.wrapped.constraint_names()

    @property
    def selected_constraint_names(self) -> tuple[str, ...]:
        return self.wrapped.selected_constraint_names  # pyright: ignore[reportAttributeAccessIssue]

    @property
    def cost_thresholds(self) -> tuple[float, ...]:
        return self.wrapped.cost_thresholds  # pyright: ignore[reportAttributeAccessIssue]

    @property
    def num_constraints(self) -> int:
        return self.wrapped.num_constraints  # pyright: ignore[reportAttributeAccessIssue]

    @property
    def cost_threshold(self) -> float | tuple[float, ...]:
        return self.wrapped.cost_threshold  # pyright: ignore[reportAttributeAccessIssue]

    # -- contract --------------------------------------------------------------------
    def reset(self, key: Key) -> tuple[Float[Array, "..."], RewardEnvState]:
        obs, inner = self.wrapped.reset(key)
        return obs, RewardEnvState(inner_state=inner, prev_obs=obs, **zero_episode_fields())

    def _reshape(self, state: RewardEnvState, action: ArrayLike, out: tuple) -> tuple:
        if self.emits_costs:
            next_obs, inner, env_reward, costs, done, info = out
        else:
            next_obs, inner, env_reward, done, info = out
            costs = info["constraint_costs"]
        if self.passes_costs:
            reward = self.reward_fn(state.prev_obs, action, next_obs, env_reward, costs, info)
        else:
            reward = self.reward_fn(state.prev_obs, action, next_obs, env_reward, info)
        reward = jnp.asarray(reward, jnp.float32)
        if reward.shape != ():
            raise ValueError(f"RewardWrapper: reward_fn must return a scalar, got shape {reward.shape}")
        fields = record_episode(state, reward, done)
        new_state = RewardEnvState(inner_state=inner, prev_obs=next_obs, **fields)
        info = {
            **info,
            "env_reward": env_reward,
            "returned_episode_env_returns": info["returned_episode_returns"],
            **episode_info(fields, done),
        }
        if self.emits_costs:
            return next_obs, new_state, reward, costs, done, info
        return next_obs, new_state, reward, done, info

    def step(self, key: Key, state: RewardEnvState, action: ArrayLike) -> tuple:
        return self._reshape(state, action, self.wrapped.step(key, state.inner_state, action))

    def step_auto_reset(self, key: Key, state: RewardEnvState, action: ArrayLike) -> tuple:
        """``step`` with ``stop_gradient`` on obs, state and costs (as the inner wrapper)."""
        out = self._reshape(state, action, self.wrapped.step_auto_reset(key, state.inner_state, action))
        return (out[0], jax.lax.stop_gradient(out[1]), *out[2:])
