"""`LogWrapper`: binds params and adds episode statistics to `info`.

Its `transition` carries the env's full cost vector (also `info["constraint_costs"]`);
the public step is the 5-tuple `(obs, state, reward, done, info)`. `returned_episode_*` latch the last finished
episode's return and length, `returned_episode` flags the step that finished one.
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int
from powerzoojax.core import Environment, EnvParams
from powerzoojax.core._types import Info, Key
from powerzoojax.rl.wrappers._base import BoundWrapper, accumulate
from powerzoojax.rl.wrappers._transition import Transition


class LogEnvState(eqx.Module):
    """Inner env state plus running and latched episode statistics.

    **Arguments:**

    - `env_state`: the env's state.
    - `episode_returns`, `episode_lengths`: running return and length of the current
      episode.
    - `returned_episode_returns`, `returned_episode_lengths`: those of the last finished
      episode (latched until the next one finishes).
    """

    env_state: Any
    episode_returns: Float[Array, ""]
    episode_lengths: Int[Array, ""]
    returned_episode_returns: Float[Array, ""]
    returned_episode_lengths: Int[Array, ""]


def record_episode(state: Any, reward: Float[Array, ""], done: Bool[Array, ""]) -> dict[str, Array]:
    """The four episode-statistics fields after one step (`state`: any state with those fields)."""
    returns, returned = accumulate(state.episode_returns, state.returned_episode_returns, reward, done)
    lengths, returned_len = accumulate(
        state.episode_lengths, state.returned_episode_lengths, jnp.ones((), jnp.int32), done
    )
    return {
        "episode_returns": returns,
        "episode_lengths": lengths,
        "returned_episode_returns": returned,
        "returned_episode_lengths": returned_len,
    }


def episode_info(fields: dict[str, Array], done: Bool[Array, ""]) -> Info:
    return {
        "returned_episode_returns": fields["returned_episode_returns"],
        "returned_episode_lengths": fields["returned_episode_lengths"],
        "returned_episode": done,
    }


def zero_episode_fields() -> dict[str, Array]:
    zero_f = jnp.zeros((), jnp.float32)
    zero_i = jnp.zeros((), jnp.int32)
    return {
        "episode_returns": zero_f,
        "episode_lengths": zero_i,
        "returned_episode_returns": zero_f,
        "returned_episode_lengths": zero_i,
    }


class LogWrapper(BoundWrapper):
    """Single-agent wrapper with params bound at construction; steps return
    `(obs, state, reward, done, info)` with episode statistics in `info`.

    **Arguments:**

    - `env`: the [`Environment`][powerzoojax.core.Environment].
    - `params`: its params; `None` takes `env.default_params()`.
    """

    def __init__(self, env: Environment, params: EnvParams | None = None):
        self.env = env
        self.params = env.default_params() if params is None else params

    def reset(self, key: Key) -> tuple[Float[Array, "..."], LogEnvState]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)` with a [`LogEnvState`][powerzoojax.rl.wrappers.LogEnvState].
        """
        obs, env_state = self.env.reset(key, self.params)
        return obs, LogEnvState(env_state=env_state, **zero_episode_fields())

    def _record(self, state: LogEnvState, out: tuple) -> Transition:
        obs, env_state, reward, costs, done, info = out
        fields = record_episode(state, reward, done)
        new_state = LogEnvState(env_state=env_state, **fields)
        cost_sum = info["cost_sum"] if "cost_sum" in info else jnp.sum(costs)
        info = {
            **info,
            "constraint_costs": costs,
            "cost_sum": cost_sum,
            "cost": cost_sum,
            **episode_info(fields, done),
        }
        return Transition(obs, new_state, reward, costs, done, info)

    def transition(self, key: Key, state: LogEnvState, action: ArrayLike) -> Transition:
        """One transition of the env with auto-reset, recording episode statistics.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`LogEnvState`][powerzoojax.rl.wrappers.LogEnvState].
        - `action`: the env's action.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition] with the env's full cost
        vector; `info` adds `constraint_costs`, `cost_sum`, `cost`,
        `returned_episode_returns`, `returned_episode_lengths` and `returned_episode`. The
        public `step` is its `(obs, state, reward, done, info)`.
        """
        return self._record(state, self.env.step(key, state.env_state, action, self.params))

    def transition_auto_reset(self, key: Key, state: LogEnvState, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs, state and costs.

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition].
        """
        obs, env_state, reward, costs, done, info = self.env.step_auto_reset(
            key, state.env_state, action, self.params
        )
        costs = jax.lax.stop_gradient(costs)
        t = self._record(state, (obs, env_state, reward, costs, done, info))
        return Transition(t.obs, jax.lax.stop_gradient(t.state), t.reward, t.costs, t.done, t.info)
