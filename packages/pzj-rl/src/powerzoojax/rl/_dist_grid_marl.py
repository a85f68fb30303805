"""``DistGridMARLEnv``: ``DistGridEnv`` with one agent per controllable device.

Without resource bundles the devices are the env's DERs, one per non-slack bus
(``params.der_bus_idx`` order): agents ``der_0 … der_{N−2}``, each with a
``Box[-1, 1] (1,)`` active-power set-point. Device observation (2): the load at the
device's bus, ``p_load / p_load_ref`` and ``q_load / q_load_ref``, of the row the next
action meets.

Observation modes:

- ``"global"``: the env's observation ``[v (N) | pf (B) | qf (B) | pl (N) | ql (N) |
  sin | cos]`` (3N + 2B + 2, voltages as ``(v − 1)/0.1``) + the device slice.
- ``"local"`` (Dec-POMDP): ``[own v | K = 4 neighbour v | min, max, mean v | sin, cos |
  device slice]`` (1 + 4 + 3 + 2 + 2 = 12 for DERs), v as ``(v − 1)/0.1``. Neighbours
  are the first K buses of a breadth-first search from the device's bus over the
  undirected feeder (computed once on the host; the own bus excluded, ties by bus
  index, padded with the own bus on short feeders).

Reward (shared): ``r − voltage_penalty · cost_continuous − soc_penalty ·
soc_terminal_sq`` (``cost_continuous`` = Σ voltage excursions beyond the band + Σ
branch MVA overload; ``soc_terminal_sq`` nonzero on terminal steps with batteries).
``info``: the env's plus ``constraint_costs`` and ``cost``.

TODO(issue 4 resources): with device bundles the agents become ``battery_i``,
``renewable_i``, ``flexload_i`` (DERs task: 12 agents, local obs 15 with the 5-entry
device observation); the bundle protocol had not landed when this adapter was written,
so params with ``resources`` are refused by name.
"""

from collections import deque
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int
from powerzoojax.core._types import Info, Key
from powerzoojax.rl._multi_agent import MARLState, MultiAgentEnvironment

OBSERVATION_MODES = ("global", "local")
N_NEIGHBOURS = 4
_DEVICE_OBS = 2


def bfs_neighbours(n_nodes: int, send: np.ndarray, recv: np.ndarray, bus: int, k: int) -> np.ndarray:
    """The first ``k`` buses reached by a breadth-first search from ``bus`` over the undirected
    branch list (``bus`` excluded, neighbours visited in bus order), padded with ``bus``."""
    adjacency: list[list[int]] = [[] for _ in range(n_nodes)]
    for a, b in zip(send.tolist(), recv.tolist()):
        adjacency[a].append(b)
        adjacency[b].append(a)
    seen, order, queue = {bus}, [], deque([bus])
    while queue and len(order) < k:
        node = queue.popleft()
        for nxt in sorted(adjacency[node]):
            if nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
                queue.append(nxt)
    order = order[:k]
    return np.asarray(order + [bus] * (k - len(order)), np.int32)


class DistGridMARLEnv(MultiAgentEnvironment):
    """Distribution feeder as a team of device agents (see the module docstring)."""

    env: Any
    voltage_penalty: float
    soc_penalty: float
    reward_mode: str
    observation_mode: str
    device_bus: Int[Array, " n_agents"]
    neighbours: Int[Array, "n_agents k"]

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
        if params.resources:
            raise NotImplementedError(
                "DistGridMARLEnv: resource-bundle agents are not supported yet (project issue 4 resources); "
                "build the params without resources (one DER agent per non-slack bus)"
            )
        if not params.include_der:
            raise ValueError("DistGridMARLEnv: the DERs are the agents; build the params with include_der=True")
        self.env = env
        self.params = params
        self.voltage_penalty = float(voltage_penalty)
        self.soc_penalty = float(soc_penalty)
        self.reward_mode = reward_mode
        self.observation_mode = observation_mode
        buses = np.asarray(params.der_bus_idx)
        net = params.network
        send, recv = np.asarray(net.send_idx), np.asarray(net.recv_idx)
        self.device_bus = jnp.asarray(buses, jnp.int32)
        self.neighbours = jnp.asarray(
            np.stack([bfs_neighbours(net.n_nodes, send, recv, int(b), N_NEIGHBOURS) for b in buses]), jnp.int32
        )
        self.agents = tuple(f"der_{i}" for i in range(buses.shape[0]))

    @property
    def obs_dim(self) -> int:
        if self.observation_mode == "global":
            return self.env.obs_dim(self.params) + _DEVICE_OBS
        return 1 + N_NEIGHBOURS + 3 + 2 + _DEVICE_OBS

    @property
    def action_dim(self) -> int:
        return 1

    def _agent_obs(self, obs: Float[Array, " core"], params: Any) -> Float[Array, "n_agents obs_dim"]:
        n = params.network.n_nodes
        b = params.network.n_branches
        v = obs[:n]  # already (v - 1) / 0.1
        pl = obs[n + 2 * b : 2 * n + 2 * b]
        ql = obs[2 * n + 2 * b : 3 * n + 2 * b]
        device = jnp.stack([pl[self.device_bus], ql[self.device_bus]], axis=1)
        a = self.num_agents
        if self.observation_mode == "global":
            return jnp.concatenate([jnp.broadcast_to(obs, (a, obs.shape[0])), device], axis=1)
        summary = jnp.broadcast_to(jnp.stack([jnp.min(v), jnp.max(v), jnp.mean(v)]), (a, 3))
        time = jnp.broadcast_to(obs[-2:], (a, 2))
        return jnp.concatenate([v[self.device_bus][:, None], v[self.neighbours], summary, time, device], axis=1)

    def reset_arrays(self, key: Key, params: Any = None) -> tuple[Float[Array, "n_agents obs_dim"], MARLState]:
        p = self._p(params)
        obs, state = self.env.reset(key, p)
        return self._agent_obs(obs, p), MARLState(state)

    def step_arrays(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: Any = None
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        p = self._p(params)
        obs, env_state, reward, costs, done, info = self.env.step(key, state.env_state, actions[:, 0], p)
        shaped = reward - self.voltage_penalty * info["cost_continuous"] - self.soc_penalty * info["soc_terminal_sq"]
        info = {**info, "constraint_costs": costs, "cost": info["cost_sum"], "env_reward": reward}
        rewards = jnp.broadcast_to(shaped, (self.num_agents,))
        return self._agent_obs(obs, p), MARLState(env_state), rewards, done, info

    def constraint_names(self) -> tuple[str, ...]:
        return self.env.constraint_names(self.params)
