"""``LogWrapper``: binds params and adds episode statistics to ``info``.

Step returns the 5-tuple ``(obs, state, reward, done, info)``; the env's cost vector
moves to ``info["constraint_costs"]``. ``returned_episode_*`` latch the last finished
episode's return and length, ``returned_episode`` flags the step that finished one.
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.core import Environment, EnvParams, Space
from powerzoojax.core._types import Info, Key


class LogEnvState(eqx.Module):
    """Inner env state plus running and latched episode statistics."""

    env_state: Any
    episode_returns: Float[Array, ""]
    episode_lengths: Int[Array, ""]
    returned_episode_returns: Float[Array, ""]
    returned_episode_lengths: Int[Array, ""]


LogStepResult = tuple[Float[Array, "..."], LogEnvState, Float[Array, ""], Bool[Array, ""], Info]


class LogWrapper(eqx.Module):
    """Single-agent wrapper with params bound at construction (default ``env.default_params()``)."""

    env: Environment
    params: EnvParams

    def __init__(self, env: Environment, params: EnvParams | None = None):
        self.env = env
        self.params = env.default_params() if params is None else params

    @property
    def name(self) -> str:
        return self.env.name

    def observation_space(self) -> Space:
        return self.env.observation_space(self.params)

    def action_space(self) -> Space:
        return self.env.action_space(self.params)

    @property
    def obs_size(self) -> int:
        return int(self.observation_space().shape[0])

    @property
    def num_actions(self) -> int:
        space = self.action_space()
        return int(space.n) if hasattr(space, "n") and not space.shape else int(space.shape[0])

    @property
    def action_size(self) -> int:
        return self.num_actions

    def constraint_names(self) -> tuple[str, ...]:
        return self.env.constraint_names(self.params)

    def reset(self, key: Key) -> tuple[Float[Array, "..."], LogEnvState]:
        obs, env_state = self.env.reset(key, self.params)
        zero_f = jnp.zeros((), jnp.float32)
        zero_i = jnp.zeros((), jnp.int32)
        return obs, LogEnvState(env_state, zero_f, zero_i, zero_f, zero_i)

    def _record(self, state: LogEnvState, out: tuple) -> LogStepResult:
        obs, env_state, reward, costs, done, info = out
        episode_return = state.episode_returns + reward
        episode_length = state.episode_lengths + 1
        new_state = LogEnvState(
            env_state=env_state,
            episode_returns=jnp.where(done, 0.0, episode_return),
            episode_lengths=jnp.where(done, 0, episode_length),
            returned_episode_returns=jnp.where(done, episode_return, state.returned_episode_returns),
            returned_episode_lengths=jnp.where(done, episode_length, state.returned_episode_lengths),
        )
        cost_sum = info["cost_sum"] if "cost_sum" in info else jnp.sum(costs)
        info = {
            **info,
            "constraint_costs": costs,
            "cost_sum": cost_sum,
            "cost": cost_sum,
            "returned_episode_returns": new_state.returned_episode_returns,
            "returned_episode_lengths": new_state.returned_episode_lengths,
            "returned_episode": done,
        }
        return obs, new_state, reward, done, info

    def step(self, key: Key, state: LogEnvState, action: ArrayLike) -> LogStepResult:
        return self._record(state, self.env.step(key, state.env_state, action, self.params))

    def step_auto_reset(self, key: Key, state: LogEnvState, action: ArrayLike) -> LogStepResult:
        """``step`` with ``stop_gradient`` on obs, state and costs."""
        obs, env_state, reward, costs, done, info = self.env.step_auto_reset(
            key, state.env_state, action, self.params
        )
        costs = jax.lax.stop_gradient(costs)
        obs, new_state, reward, done, info = self._record(state, (obs, env_state, reward, costs, done, info))
        return obs, jax.lax.stop_gradient(new_state), reward, done, info
