"""`GridMARLEnv`: `TransGridEnv` with one agent per generating unit and one per
resource-bundle device.
"""

from typing import Any

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float
from powerzoojax.core._types import Info, Key
from powerzoojax.rl.marl._device_agents import DeviceAgentsEnv, device_layout
from powerzoojax.rl.marl._multi_agent import MARLState

REWARD_MODES = ("shared",)


class GridMARLEnv(DeviceAgentsEnv):
    """Transmission dispatch as a team of unit and device agents.

    Agents, in this fixed order: `unit_0 … unit_{U−1}` (the case's unit order; only when
    the params dispatch the units, `include_unit_dispatch=True`), then one agent per device
    of each bundle in `params.resources`, in bundle order, named `<BundleClass minus
    "Bundle", lowercased>_<index within that type>` (`battery_0`, `battery_1`, …).
    Actions: `Box[-1, 1] (action_dim,)` per agent with `action_dim` = the largest
    per-device action size (1 for units and P-only batteries); agents with a shorter own
    action ignore the padding entries. They are packed units first, then the bundle slices,
    into the env's action vector.

    Observation per agent: the grid core — the env's observation without the bundle part,
    `[flow (L) | vm (N, AC only) | load (n_loads) | unit_norm (U) | sin | cos]` — followed by
    the agent's own slice zero-padded to the largest one: `unit_norm[i]` for a unit, the
    device's observation (`per_device_obs_dim` entries of its bundle's observation) for a
    device. Reward: the env's reward, shared by every agent. `info`: the env's, plus
    `constraint_costs` (the env's cost vector, order `constraint_names`) and `cost`
    (= `cost_sum`).

    **Arguments:**

    - `env`: the `TransGridEnv`.
    - `params`: its params; `None` takes `env.default_params()`.
    - `reward_mode`: `"shared"` (the only mode).
    """

    reward_mode: str

    def __init__(self, env: Any, params: Any = None, reward_mode: str = "shared"):
        from powerzoojax.grid import TransGridEnv
        from powerzoojax.grid.resources import bundles_obs_dim

        if not isinstance(env, TransGridEnv):
            raise TypeError(f"GridMARLEnv wraps a TransGridEnv, got {type(env).__name__}")
        params = env.default_params() if params is None else params
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"GridMARLEnv: reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if not params.include_unit_dispatch and not params.resources:
            raise ValueError(
                "GridMARLEnv: no agents: build the params with include_unit_dispatch=True (unit agents) "
                "and/or resource bundles (device agents)"
            )
        self.env = env
        self.params = params
        self.reward_mode = reward_mode
        n_units = params.case.n_units
        self.core_dim = env.obs_dim(params) - bundles_obs_dim(params.resources)
        unit_offset = self.core_dim - 2 - n_units  # unit_norm sits just before sin, cos
        units = [[unit_offset + i] for i in range(n_units)] if params.include_unit_dispatch else []
        self._set_layout(device_layout("unit", units, params.resources, self.core_dim))

    def step_env(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: Any
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        obs, env_state, reward, _, done, info = self._env_step(key, state, actions, params)
        rewards = jnp.broadcast_to(reward, (self.num_agents,))
        return self._agent_obs(obs), MARLState(env_state), rewards, done, info
