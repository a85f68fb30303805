"""``GridMARLEnv``: ``TransGridEnv`` (DC mode) with one agent per generating unit.

Agents ``unit_0 … unit_{U−1}`` in the case's unit order; each acts with a
``Box[-1, 1] (1,)`` set-point (the env's per-unit action), packed in agent order into
the env's action vector. Observation per agent: the env's observation
``[flow (L) | load (n_loads) | unit_norm (U) | sin | cos]`` followed by the agent's
own ``unit_norm[i]`` (so ``L + n_loads + U + 3``). Reward: the env's reward, shared by
every agent. ``info``: the env's, plus ``constraint_costs`` (the env's cost vector,
order ``constraint_names``) and ``cost`` (= ``cost_sum``).

Resource bundles: the reference appends one agent per bundle device, named
``<BundleClass minus "Bundle", lowercased>_<per-type index>``, after the units.
TODO(issue 4 resources): the bundle protocol of ``powerzoojax.grid.resources`` had not
landed when this adapter was written; params with ``resources`` are refused by name.
"""

from typing import Any

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
from powerzoojax.core._types import Info, Key
from powerzoojax.rl._multi_agent import MARLState, MultiAgentEnvironment

REWARD_MODES = ("shared",)


class GridMARLEnv(MultiAgentEnvironment):
    """Transmission dispatch as a team of unit agents (see the module docstring)."""

    env: Any
    reward_mode: str

    def __init__(self, env: Any, params: Any = None, reward_mode: str = "shared"):
        from powerzoojax.grid import TransGridEnv

        if not isinstance(env, TransGridEnv):
            raise TypeError(f"GridMARLEnv wraps a TransGridEnv, got {type(env).__name__}")
        params = env.default_params() if params is None else params
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"GridMARLEnv: reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if params.resources:
            raise NotImplementedError(
                "GridMARLEnv: resource-bundle agents are not supported yet (project issue 4 resources); "
                "build the params without resources"
            )
        if not params.include_unit_dispatch:
            raise ValueError("GridMARLEnv: the units are the agents; build the params with include_unit_dispatch=True")
        self.env = env
        self.params = params
        self.reward_mode = reward_mode
        self.agents = tuple(f"unit_{i}" for i in range(params.case.n_units))

    @property
    def obs_dim(self) -> int:
        return self.env.obs_dim(self.params) + 1

    @property
    def action_dim(self) -> int:
        return 1

    def _unit_offset(self, params: Any) -> int:
        return params.case.n_lines + params.case.n_loads

    def _agent_obs(self, obs: Float[Array, " core"], params: Any) -> Float[Array, "n_agents obs_dim"]:
        start = self._unit_offset(params)
        own = obs[start : start + self.num_agents]
        return jnp.concatenate([jnp.broadcast_to(obs, (self.num_agents, obs.shape[0])), own[:, None]], axis=1)

    def reset_arrays(self, key: Key, params: Any = None) -> tuple[Float[Array, "n_agents obs_dim"], MARLState]:
        p = self._p(params)
        obs, state = self.env.reset(key, p)
        return self._agent_obs(obs, p), MARLState(state)

    def step_arrays(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: Any = None
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        p = self._p(params)
        obs, env_state, reward, costs, done, info = self.env.step(key, state.env_state, actions[:, 0], p)
        info = {**info, "constraint_costs": costs, "cost": info["cost_sum"]}
        rewards = jnp.broadcast_to(reward, (self.num_agents,))
        return self._agent_obs(obs, p), MARLState(env_state), rewards, done, info

    def constraint_names(self) -> tuple[str, ...]:
        return self.env.constraint_names(self.params)
