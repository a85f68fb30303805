"""`SauteWrapper`: Sauté RL, a safety budget folded into the state (5-tuple public step)."""

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float
from powerzoojax.core import Box, Environment, EnvParams, make_box
from powerzoojax.core._types import Key, where
from powerzoojax.rl.wrappers._base import BoundWrapper, ThresholdsMixin, accumulate, legacy_threshold, resolve_constraints
from powerzoojax.rl.wrappers._log import (
    LogEnvState,
    episode_info,
    record_episode,
    zero_episode_fields,
)
from powerzoojax.rl.wrappers._transition import Transition


class SauteState(LogEnvState):
    """`LogEnvState` plus running and latched per-episode sums of the selected costs.

    **Arguments:**

    - `env_state`, `episode_returns`, `episode_lengths`, `returned_episode_returns`,
      `returned_episode_lengths`: as [`LogEnvState`][powerzoojax.rl.wrappers.LogEnvState].
    - `episode_costs`: `(k,)` running sums of the selected costs.
    - `returned_episode_costs`: `(k,)` those of the last finished episode.
    """

    episode_costs: Float[Array, " k"]
    returned_episode_costs: Float[Array, " k"]


class SauteWrapper(ThresholdsMixin, BoundWrapper):
    """Safety-budget-augmented wrapper.

    The observation gains one entry per selected cost channel, the remaining budget
    `z_i = (d_i − episode cost_i) / horizon` (`z_i = d_i / horizon` at reset). While
    `use_reward_shaping` is on, a step after which some budget is overspent (`z_i < 0`)
    earns `unsafe_reward` instead of the env's reward. Plain PPO on this wrapper is
    Sauté-PPO (`algo="saute_ppo"`); the caller applies the wrapper, `make_train` does not.

    A step is unsafe when the budget is *overspent* (`z_i < 0`), not exhausted
    (`z_i <= 0`): with the usual zero budgets the latter would mark every step unsafe and
    erase the reward signal. `unsafe_reward` is only a penalty for envs whose rewards are
    positive; for cost-like (negative) rewards such as the grid envs' `−generation cost`,
    pass one below the worst per-step reward.

    **Arguments:**

    - `env`: the [`Environment`][powerzoojax.core.Environment].
    - `params`: its params; `None` takes `env.default_params()`.
    - `cost_threshold`: the reference's positional name of `cost_thresholds`.
    - `selected_names`: the constrained channels; `None` selects all.
    - `cost_thresholds`: per-episode budgets `d_i`; `None` means zero.
    - `horizon`: normaliser of the budget; `None` takes the episode length.
    - `unsafe_reward`: reward of an overspent step (0.0, as in the reference).
    - `use_reward_shaping`: replace the reward of overspent steps.
    """
    selected_constraint_names: tuple[str, ...] = eqx.field(static=True)
    selected_indices: tuple[int, ...] = eqx.field(static=True)
    cost_thresholds: tuple[float, ...] = eqx.field(static=True)
    horizon: float = eqx.field(static=True)
    unsafe_reward: float = eqx.field(static=True)
    use_reward_shaping: bool = eqx.field(static=True)

    def __init__(
        self,
        env: Environment,
        params: EnvParams | None = None,
        cost_threshold: Sequence[float | int] | float | int | None = None,
        *,
        selected_names: Sequence[str] | str | None = None,
        cost_thresholds: Sequence[float | int] | float | int | None = None,
        horizon: float | int | None = None,
        unsafe_reward: float | int = 0.0,
        use_reward_shaping: bool = True,
    ):
        self.env = env
        self.params = env.default_params() if params is None else params
        cost_thresholds = legacy_threshold(cost_threshold, cost_thresholds, "SauteWrapper")
        names, indices, thresholds = resolve_constraints(env, self.params, selected_names, cost_thresholds, "SauteWrapper")
        self.selected_constraint_names = names
        self.selected_indices = indices
        self.cost_thresholds = thresholds
        horizon = float(self.params.max_steps if horizon is None else horizon)
        if not np.isfinite(horizon) or horizon <= 0:
            raise ValueError(f"SauteWrapper: horizon must be a positive number of steps, got {horizon}")
        self.horizon = horizon
        self.unsafe_reward = float(unsafe_reward)
        self.use_reward_shaping = bool(use_reward_shaping)

    def observation_space(self) -> Box:
        """The env's observation space with one budget entry per selected channel appended.

        **Returns:**

        A [`Box`][powerzoojax.core.Box].
        """
        base = self.env.observation_space(self.params)
        budget_high = np.asarray(self.cost_thresholds, np.float64) / self.horizon
        low = np.concatenate([np.broadcast_to(np.asarray(base.low), base.shape), np.full(self.num_constraints, -np.inf)])  # pyright: ignore[reportAttributeAccessIssue]
        high = np.concatenate([np.broadcast_to(np.asarray(base.high), base.shape), budget_high])  # pyright: ignore[reportAttributeAccessIssue]
        return make_box(low, high)

    def _budget(self, episode_costs: Float[Array, " k"]) -> Float[Array, " k"]:
        return (jnp.asarray(self.cost_thresholds, jnp.float32) - episode_costs) / self.horizon

    def _select(self, costs: Float[Array, " n_costs"]) -> Float[Array, " k"]:
        return costs[jnp.asarray(self.selected_indices, jnp.int32)] if self.selected_indices else costs[:0]

    def reset(self, key: Key) -> tuple[Float[Array, " obs_dim"], SauteState]:
        """Start an episode with the full budget.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)`: the augmented observation and a
        [`SauteState`][powerzoojax.rl.wrappers.SauteState].
        """
        obs, env_state = self.env.reset(key, self.params)
        zeros = jnp.zeros((self.num_constraints,), jnp.float32)
        state = SauteState(
            env_state=env_state, **zero_episode_fields(), episode_costs=zeros, returned_episode_costs=zeros
        )
        return jnp.concatenate([obs, self._budget(zeros)]), state

    def _record(self, state: SauteState, out: tuple) -> Transition:
        obs, env_state, env_reward, costs, done, info = out
        selected = self._select(costs)
        budget_after = self._budget(state.episode_costs + selected)
        unsafe = jnp.any(budget_after < 0.0) if self.num_constraints else jnp.asarray(False)
        if self.use_reward_shaping:
            reward = where(unsafe, jnp.asarray(self.unsafe_reward, jnp.float32), env_reward)
        else:
            reward = env_reward
        fields = record_episode(state, reward, done)
        episode_costs, returned_costs = accumulate(state.episode_costs, state.returned_episode_costs, selected, done)
        new_state = SauteState(
            env_state=env_state, **fields, episode_costs=episode_costs, returned_episode_costs=returned_costs
        )
        cost_sum = info["cost_sum"] if "cost_sum" in info else jnp.sum(costs)
        info = {
            **info,
            "env_reward": env_reward,
            "constraint_costs_all": costs,
            "constraint_costs": selected,
            "cost_sum": cost_sum,
            "cost": cost_sum,
            "safety_budget_remaining": budget_after,
            "saute_unsafe": unsafe,
            **episode_info(fields, done),
            "returned_episode_costs": returned_costs,
        }
        return Transition(jnp.concatenate([obs, self._budget(episode_costs)]), new_state, reward, selected, done, info)

    def transition(self, key: Key, state: SauteState, action: ArrayLike) -> Transition:
        """One transition with auto-reset and the budget update.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`SauteState`][powerzoojax.rl.wrappers.SauteState].
        - `action`: the env's action.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition] with the augmented
        observation and the selected costs `(k,)`. The public `step` is its
        `(obs, state, reward, done, info)`.
        """
        return self._record(state, self.env.step(key, state.env_state, action, self.params))

    def transition_auto_reset(self, key: Key, state: SauteState, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs, state and costs.

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition].
        """
        obs, env_state, reward, costs, done, info = self.env.step_auto_reset(
            key, state.env_state, action, self.params
        )
        t = self._record(state, (obs, env_state, reward, jax.lax.stop_gradient(costs), done, info))
        return t.stop_state_gradient()
