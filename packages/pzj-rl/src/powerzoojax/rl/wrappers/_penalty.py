"""`PenaltyRewardWrapper`: fold the costs into the reward with a fixed multiplier
(the penalty baselines of the TSO ablation, the reference's `ppo_penalty_l{10,100,1000}`).

It is an `Environment` (the 4-argument API: params are not bound), so it goes *inside*
`LogWrapper` — `LogWrapper(PenaltyRewardWrapper(env, λ, 1e-4), params)` — and passes
the env contract. Reward `r − λ · reward_scale · Σ costs`; `costs`, `done`, the
observation and auto-reset are the inner env's; `info` adds `unpenalized_reward`
(the env's reward) and `penalty` (what was subtracted).
"""

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float
from powerzoojax.core import Environment, EnvParams, EnvState, Space
from powerzoojax.core._types import Key


class PenaltyRewardWrapper(Environment):
    """`r − penalty_lambda · reward_scale · Σ costs` around `env`.

    **Arguments:**

    - `env`: the [`Environment`][powerzoojax.core.Environment].
    - `penalty_lambda`: penalty per unit of cost, finite and `>= 0` (static).
    - `reward_scale`: scale of the penalty, finite and `>= 0` (static).

    Raises `ValueError` for a negative or non-finite `penalty_lambda` / `reward_scale`.
    """

    env: Environment
    penalty_lambda: float = eqx.field(static=True)
    reward_scale: float = eqx.field(static=True)

    def __init__(self, env: Any, penalty_lambda: float | int, reward_scale: float | int = 1.0):
        if not isinstance(env, Environment):
            raise TypeError(f"PenaltyRewardWrapper wraps a bare Environment (params unbound), got {type(env).__name__}")
        for name, value in (("penalty_lambda", penalty_lambda), ("reward_scale", reward_scale)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"PenaltyRewardWrapper: {name} must be a finite number >= 0, got {value!r}")
        self.env = env
        self.penalty_lambda = float(penalty_lambda)
        self.reward_scale = float(reward_scale)

    @property
    def name(self) -> str:
        return self.env.name

    def default_params(self) -> EnvParams:
        return self.env.default_params()

    def observation_space(self, params: EnvParams) -> Space:
        return self.env.observation_space(params)

    def action_space(self, params: EnvParams) -> Space:
        return self.env.action_space(params)

    def constraint_names(self, params: EnvParams) -> tuple[str, ...]:
        return self.env.constraint_names(params)

    def iteration_count_keys(self, params: EnvParams) -> tuple[str, ...]:
        return self.env.iteration_count_keys(params)

    def ignored_action_entries(self, params: EnvParams) -> np.ndarray | None:
        return self.env.ignored_action_entries(params)

    def reset(self, key: Key, params: EnvParams) -> tuple[Float[Array, "..."], EnvState]:
        return self.env.reset(key, params)

    def step(self, key: Key, state: EnvState, action: ArrayLike, params: EnvParams) -> tuple[Any, ...]:
        obs, next_state, reward, costs, done, info = self.env.step(key, state, action, params)
        penalty = self.penalty_lambda * self.reward_scale * jnp.sum(costs)
        info = {**info, "unpenalized_reward": reward, "penalty": penalty}
        return obs, next_state, reward - penalty, costs, done, info
