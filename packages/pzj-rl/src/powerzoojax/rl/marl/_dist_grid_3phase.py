"""`DistGrid3PhaseMARLEnv`: the three-phase feeder (`DistGrid3PhaseEnv`) with one agent
per device of its resource bundles, observing like the single-phase DERs agents.
"""

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float
from powerzoojax.core._types import Info, Key
from powerzoojax.rl.marl._device_agents import DeviceAgentsEnv, device_layout
from powerzoojax.rl.marl._multi_agent import MARLState

N_NEIGHBOURS = 4


class DistGrid3PhaseMARLEnv(DeviceAgentsEnv):
    """Three-phase feeder as a team of device agents.

    Agents are named as in `DistGridMARLEnv` (`battery_0 …`), one per bundle device in
    bundle order; the per-bus-phase DER actions are not agents (build the params with
    `include_der=False`). Each agent sees the local Dec-POMDP observation of the balanced
    adapter on *phase-averaged* voltages `(v_A + v_B + v_C)/3` (normalised `(v − 1)/0.1`):
    `[own bus | K = 4 neighbour buses | min, max, mean | sin, cos | own device obs]`, so a
    policy trained on the single-phase feeder can be run here unchanged; `min_obs_dim`
    zero-pads the observation to that policy's width (15 for the DERs task). Reward (shared):
    `r − voltage_penalty · cost_continuous`; `info` adds `constraint_costs`, `cost` and
    `env_reward`.

    **Arguments:**

    - `env`: the `DistGrid3PhaseEnv`.
    - `params`: its params (built with `include_der=False`); `None` takes
      `env.default_params()`.
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.
    - `min_obs_dim`: width the observations are zero-padded to (15 for the DERs task).
    """

    voltage_penalty: float
    min_obs_dim: int
    local_layout: Any  # powerzoojax.grid.tasks.ders.LocalObsLayout on [v_avg | env obs]

    def __init__(self, env: Any, params: Any = None, voltage_penalty: float = 0.0, min_obs_dim: int = 0):
        from powerzoojax.grid import DistGrid3PhaseEnv
        from powerzoojax.grid.tasks.ders import LocalObsLayout, bfs_neighbours

        if not isinstance(env, DistGrid3PhaseEnv):
            raise TypeError(f"DistGrid3PhaseMARLEnv wraps a DistGrid3PhaseEnv, got {type(env).__name__}")
        params = env.default_params() if params is None else params
        if params.include_der or not params.resources:
            raise ValueError(
                "DistGrid3PhaseMARLEnv: agents are the bundle devices; build the params with include_der=False "
                "and at least one resource bundle"
            )
        if not np.isfinite(voltage_penalty) or voltage_penalty < 0:
            raise ValueError(f"DistGrid3PhaseMARLEnv: voltage_penalty must be a finite number >= 0, got {voltage_penalty!r}")
        if int(min_obs_dim) < 0:
            raise ValueError(f"DistGrid3PhaseMARLEnv: min_obs_dim must be >= 0, got {min_obs_dim!r}")
        self.env, self.params = env, params
        self.voltage_penalty, self.min_obs_dim = float(voltage_penalty), int(min_obs_dim)
        net = params.network
        n = net.n_nodes
        self.core_dim = 9 * n + 6 * (n - 1) + 2
        self._set_layout(device_layout("der", [], params.resources, self.core_dim))
        send, recv = np.asarray(net.send_idx), np.asarray(net.recv_idx)
        buses = [bus for bundle in params.resources for bus in np.asarray(bundle.bus_idx).tolist()]
        # Indices into [v_avg (n) | env obs]: everything from the env obs is shifted by n.
        self.local_layout = LocalObsLayout(
            jnp.asarray(buses, jnp.int32),
            jnp.asarray([bfs_neighbours(n, send, recv, bus, N_NEIGHBOURS) for bus in buses], jnp.int32),
            self.own_obs_idx + n,
            self.own_obs_mask,
            jnp.asarray([n + self.core_dim - 2, n + self.core_dim - 1], jnp.int32),
            n,
        )

    @property
    def natural_obs_dim(self) -> int:
        """Observation width before padding, `1 + K + 3 + 2 + own_dim`."""
        return 1 + N_NEIGHBOURS + 3 + 2 + self.own_dim

    @property
    def obs_dim(self) -> int:
        return max(self.natural_obs_dim, self.min_obs_dim)

    def _agent_obs(self, obs: Float[Array, " env_obs"]) -> Float[Array, "n_agents obs_dim"]:
        from powerzoojax.grid.tasks.ders import local_observations

        n = self.local_layout.n_nodes
        v_avg = (obs[:n] + obs[n : 2 * n] + obs[2 * n : 3 * n]) / 3.0
        local = local_observations(jnp.concatenate([v_avg, obs]), self.local_layout)
        pad = self.obs_dim - self.natural_obs_dim
        return jnp.pad(local, ((0, 0), (0, pad))) if pad else local

    def step_env(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: Any
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        obs, env_state, reward, _, done, info = self._env_step(key, state, actions, params)
        shaped = reward - self.voltage_penalty * info["cost_continuous"]
        info = {**info, "env_reward": reward}
        return self._agent_obs(obs), MARLState(env_state), jnp.broadcast_to(shaped, (self.num_agents,)), done, info
