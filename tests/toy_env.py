"""A tiny stochastic env written only against pzj-core, for core and rl tests.

x' = clip(x + 0.1·a + 0.05·ε, -2, 2), reward −x², one cost channel max(|x| − 1, 0).
Reset draws x uniformly in [-0.5, 0.5], so the env is stochastic under its key.
"""

import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, Bool, Float

from powerzoojax.core import (
    Box,
    Environment,
    EnvParams,
    EnvState,
    auto_reset,
    make_box,
    stack_costs,
)


class ToyState(EnvState):
    x: Float[Array, ""]


class ToyParams(EnvParams):
    drift: Float[Array, ""]


def make_toy_params(max_steps: int = 8, drift: float = 0.0) -> ToyParams:
    return ToyParams(drift=jnp.asarray(drift, jnp.float32), max_steps=max_steps)


class ToyEnv(Environment):
    def default_params(self) -> ToyParams:
        return make_toy_params()

    def observation_space(self, params: ToyParams) -> Box:
        return make_box(-jnp.inf, jnp.inf, (2,))

    def action_space(self, params: ToyParams) -> Box:
        return make_box(-1.0, 1.0, (1,))

    def constraint_names(self, params: ToyParams) -> tuple[str, ...]:
        return ("out_of_band",)

    def _obs(self, state: ToyState, params: ToyParams) -> Float[Array, "2"]:
        return jnp.stack([state.x, state.time_step.astype(jnp.float32) / params.max_steps])

    def reset(self, key, params: ToyParams):
        x = jr.uniform(key, (), jnp.float32, -0.5, 0.5)
        state = ToyState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False), x=x)
        return self._obs(state, params), state

    def step(self, key, state: ToyState, action: Float[Array, "1"], params: ToyParams):
        k_noise, _ = jr.split(key)
        x = jnp.clip(state.x + 0.1 * jnp.clip(action[0], -1, 1) + 0.05 * jr.normal(k_noise) + params.drift, -2.0, 2.0)
        reward = -(x**2)
        cost = jnp.maximum(jnp.abs(x) - 1.0, 0.0)
        costs = stack_costs(cost)
        t = state.time_step + 1
        done: Bool[Array, ""] = t >= params.max_steps
        nxt = auto_reset(self, key, ToyState(time_step=t, done=done, x=x), params)
        info = {"cost_sum": jnp.sum(costs), "cost_out_of_band": cost}
        return self._obs(nxt, params), nxt, reward, costs, done, info
