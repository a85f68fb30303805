"""`DistGridMARLEnv`: `DistGridEnv` with one agent per controllable device."""

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int
from powerzoojax.core._types import Info, Key
from powerzoojax.rl.marl._device_agents import DeviceAgentsEnv, device_layout
from powerzoojax.rl.marl._multi_agent import MARLState

OBSERVATION_MODES = ("global", "local")
N_NEIGHBOURS = 4


class DistGridMARLEnv(DeviceAgentsEnv):
    """Distribution feeder as a team of device agents.

    Agents, in this fixed order: `der_0 … der_{N−2}` (one per non-slack bus, in
    `params.der_bus_idx` order; only with `include_der=True`), then one agent per device of
    each bundle in `params.resources`, in bundle order, named `<BundleClass minus
    "Bundle", lowercased>_<index within that type>`. The DERs task (4 batteries, 4 PV, 4 flex
    loads, `include_der=False`) gives `battery_0..3, renewable_0..3, flexload_0..3`.
    Actions: `Box[-1, 1] (action_dim,)` per agent, `action_dim` = the largest per-device
    action size (1 for DERs, 2 in the DERs task), packed DERs first, then the bundle slices.

    Each agent's device observation: for a DER the load at its bus (`p_load / p_load_ref`,
    `q_load / q_load_ref` of the row the next action meets); for a bundle device its slice
    of the bundle observation; zero-padded to the largest.

    Observation modes:

    - `"global"`: the env's core observation `[v (N) | pf (B) | qf (B) | pl (N) | ql (N) |
      sin | cos]` (3N + 2B + 2, voltages as `(v − 1)/0.1`) + the device observation.
    - `"local"` (Dec-POMDP): `[own v | K = 4 neighbour v | min, max, mean v | sin, cos |
      device observation]` (1 + 4 + 3 + 2 + device: 12 with DERs, 15 in the DERs task),
      built by [`powerzoojax.grid.tasks.ders.local_observations`][powerzoojax.grid.tasks.ders.local_observations]. Neighbours are the
      first K buses of a breadth-first search from the device's bus over the undirected feeder
      ([`powerzoojax.grid.tasks.ders.bfs_neighbours`][powerzoojax.grid.tasks.ders.bfs_neighbours], computed once on the host; own bus
      excluded, ties by bus index, padded with the own bus on short feeders).

    Reward (shared): `r − voltage_penalty · cost_continuous − soc_penalty ·
    soc_terminal_sq` (`cost_continuous` = Σ voltage excursions beyond the band + Σ
    branch MVA overload; `soc_terminal_sq` nonzero on terminal steps with batteries).
    `info`: the env's plus `constraint_costs`, `cost` and `env_reward` (the unshaped reward).

    **Arguments:**

    - `env`: the `DistGridEnv`.
    - `params`: its params; `None` takes `env.default_params()`.
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.
    - `soc_penalty`: weight of `soc_terminal_sq` in the shared reward.
    - `reward_mode`: `"shared"`.
    - `observation_mode`: `"global"` or `"local"`.
    """

    voltage_penalty: float
    soc_penalty: float
    reward_mode: str
    observation_mode: str
    local_layout: Any  # powerzoojax.grid.tasks.ders.LocalObsLayout

    def __init__(
        self,
        env: Any,
        params: Any = None,
        voltage_penalty: float = 0.0,
        soc_penalty: float = 0.0,
        reward_mode: str = "shared",
        observation_mode: str = "global",
    ):
        from powerzoojax.grid import DistGridEnv
        from powerzoojax.grid.tasks.ders import LocalObsLayout, bfs_neighbours, make_local_obs_layout

        if not isinstance(env, DistGridEnv):
            raise TypeError(f"DistGridMARLEnv wraps a DistGridEnv, got {type(env).__name__}")
        params = env.default_params() if params is None else params
        if reward_mode != "shared":
            raise ValueError(f"DistGridMARLEnv: reward_mode must be 'shared', got {reward_mode!r}")
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"DistGridMARLEnv: observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}")
        for name, value in (("voltage_penalty", voltage_penalty), ("soc_penalty", soc_penalty)):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"DistGridMARLEnv: {name} must be a finite number >= 0, got {value!r}")
        if not params.include_der and not params.resources:
            raise ValueError(
                "DistGridMARLEnv: no agents: build the params with include_der=True (one DER per non-slack bus) "
                "and/or resource bundles (device agents)"
            )
        self.env = env
        self.params = params
        self.voltage_penalty = float(voltage_penalty)
        self.soc_penalty = float(soc_penalty)
        self.reward_mode = reward_mode
        self.observation_mode = observation_mode
        net = params.network
        n, b = net.n_nodes, net.n_branches
        self.core_dim = 3 * n + 2 * b + 2
        der_bus = np.asarray(params.der_bus_idx).tolist() if params.include_der else []
        # A DER's device observation: the (p, q) load at its bus, from the core's pl / ql blocks.
        ders = [[n + 2 * b + bus, 2 * n + 2 * b + bus] for bus in der_bus]
        self._set_layout(device_layout("der", ders, params.resources, self.core_dim))
        if not der_bus:
            self.local_layout = make_local_obs_layout(params, N_NEIGHBOURS)
        else:
            buses = der_bus + [bus for bundle in params.resources for bus in np.asarray(bundle.bus_idx).tolist()]
            send, recv = np.asarray(net.send_idx), np.asarray(net.recv_idx)
            self.local_layout = LocalObsLayout(
                jnp.asarray(buses, jnp.int32),
                jnp.asarray([bfs_neighbours(n, send, recv, bus, N_NEIGHBOURS) for bus in buses], jnp.int32),
                self.own_obs_idx,
                self.own_obs_mask,
                jnp.asarray([self.core_dim - 2, self.core_dim - 1], jnp.int32),
                n,
            )

    @property
    def device_bus(self) -> Int[Array, " n_agents"]:
        """`(n_agents,)` bus of each agent's device."""
        return self.local_layout.own_bus

    @property
    def neighbours(self) -> Int[Array, "n_agents k"]:
        """`(n_agents, k)` nearest buses of each agent's device."""
        return self.local_layout.neighbours

    @property
    def obs_dim(self) -> int:
        if self.observation_mode == "global":
            return self.core_dim + self.own_dim
        return 1 + N_NEIGHBOURS + 3 + 2 + self.own_dim

    def _agent_obs(self, obs: Float[Array, " env_obs"]) -> Float[Array, "n_agents obs_dim"]:
        if self.observation_mode == "local":
            from powerzoojax.grid.tasks.ders import local_observations

            return local_observations(obs, self.local_layout)
        return super()._agent_obs(obs)

    def step_env(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: Any
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        obs, env_state, reward, _, done, info = self._env_step(key, state, actions, params)
        shaped = reward - self.voltage_penalty * info["cost_continuous"] - self.soc_penalty * info["soc_terminal_sq"]
        info = {**info, "env_reward": reward}
        rewards = jnp.broadcast_to(shaped, (self.num_agents,))
        return self._agent_obs(obs), MARLState(env_state), rewards, done, info


def make_ders_marl_env(
    split: str = "train", *, voltage_penalty: float = 4.0, soc_penalty: float = 0.0, observation_mode: str = "local",
    max_steps: int = 48, start: int = 0,
) -> DistGridMARLEnv:
    """The DERs task (case141, 12 device agents) as a `DistGridMARLEnv`.

    Local observations of 15 entries per agent and 2 actions each by default, on
    `DERsTask.make_params(split, start)`.

    **Arguments:**

    - `split`: data split.
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.
    - `soc_penalty`: weight of `soc_terminal_sq` in the shared reward.
    - `observation_mode`: `"local"` or `"global"`.
    - `max_steps`: episode length [steps].
    - `start`: first profile row.

    **Returns:**

    A [`DistGridMARLEnv`][powerzoojax.rl.marl.DistGridMARLEnv].
    """
    from powerzoojax.grid import DistGridEnv
    from powerzoojax.grid.tasks.ders import DERsTask

    params = DERsTask(max_steps=max_steps).make_params(split, start)
    return DistGridMARLEnv(
        DistGridEnv(), params, voltage_penalty=voltage_penalty, soc_penalty=soc_penalty, observation_mode=observation_mode
    )
