"""A tiny stochastic env written only against pzj-core, for core and rl tests.

x' = clip(x + 0.1·a + 0.05·ε, -2, 2), reward −x², one cost channel max(|x| − 1, 0).
Reset draws x uniformly in [-0.5, 0.5], so the env is stochastic under its key.
"""

import equinox as eqx
import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, Bool, Float

from powerzoojax.core import (
    Box,
    Environment,
    EnvParams,
    EnvState,
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

    def reset_env(self, key, params: ToyParams):
        x = jr.uniform(key, (), jnp.float32, -0.5, 0.5)
        state = ToyState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False), x=x)
        return self._obs(state, params), state

    def step_env(self, key, state: ToyState, action: Float[Array, "1"], params: ToyParams):
        k_noise, _ = jr.split(key)
        x = jnp.clip(state.x + 0.1 * jnp.clip(action[0], -1, 1) + 0.05 * jr.normal(k_noise) + params.drift, -2.0, 2.0)
        reward = -(x**2)
        cost = jnp.maximum(jnp.abs(x) - 1.0, 0.0)
        costs = stack_costs(cost)
        t = state.time_step + 1
        done: Bool[Array, ""] = t >= params.max_steps
        nxt = ToyState(time_step=t, done=done, x=x)
        info = {"cost_sum": jnp.sum(costs), "cost_out_of_band": cost}
        return self._obs(nxt, params), nxt, reward, costs, done, info


def program_kind(x) -> int:
    """0 when ``x`` is computed op by op, 1 inside a jitted program, 2 inside a vmapped one:
    a stand-in for an iteration count that follows the round-off of the compiled program."""
    import jax

    if type(x).__name__ == "BatchTracer":
        return 2
    return 1 if isinstance(x, jax.core.Tracer) else 0


class CountingToyEnv(ToyEnv):
    """``ToyEnv`` whose info holds ``solver_iterations`` (3 + ``program_kind``), a count
    that differs between eager, jitted and vmapped steps, named in ``counts``; and
    ``extra`` info entries ``{key: offsets}`` equal to ``offsets[program_kind]``."""

    counts: tuple[str, ...] = eqx.field(static=True, default=("solver_iterations",))
    extra: tuple[tuple[str, tuple], ...] = eqx.field(static=True, default=())

    def iteration_count_keys(self, params: ToyParams) -> tuple[str, ...]:
        return self.counts

    def step_env(self, key, state: ToyState, action: Float[Array, "1"], params: ToyParams):
        obs, nxt, reward, costs, done, info = super().step_env(key, state, action, params)
        kind = program_kind(state.x)
        info = {**info, "solver_iterations": jnp.asarray(3 + kind, jnp.int32)}
        for name, values in self.extra:
            info[name] = jnp.asarray(values[kind])
        return obs, nxt, reward, costs, done, info
