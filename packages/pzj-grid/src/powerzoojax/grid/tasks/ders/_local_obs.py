"""Local observations of the DERs agents (Dec-POMDP, K neighbours): a layout of gather
indices built once on the host, and the pure gather that applies it inside `jit`.
"""

from collections import deque

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from powerzoojax.grid.distribution import DistGridParams
from powerzoojax.grid.tasks.ders._constants import DERS_LOCAL_K


class LocalObsLayout(eqx.Module):
    """Host-built gather indices for [`local_observations`][powerzoojax.grid.tasks.ders.local_observations]
    (a pytree: pass it into `jit`).

    **Arguments:**

    - `own_bus`: `(n_agents,)` bus of each agent's device.
    - `neighbours`: `(n_agents, k)` nearest buses of each agent.
    - `device_obs_idx`: `(n_agents, max_dev_obs)` entries of the global observation that
      describe each agent's device.
    - `device_obs_mask`: `(n_agents, max_dev_obs)` 1 where such an entry exists.
    - `time_idx`: `(2,)` entries of the time features.
    - `n_nodes`: number of buses (static).
    """

    own_bus: Int[Array, " n_agents"]
    neighbours: Int[Array, "n_agents k"]
    device_obs_idx: Int[Array, "n_agents max_dev_obs"]
    device_obs_mask: Float[Array, "n_agents max_dev_obs"]
    time_idx: Int[Array, "2"]
    n_nodes: int = eqx.field(static=True)


def bfs_neighbours(n_nodes: int, from_idx: np.ndarray, to_idx: np.ndarray, bus: int, k: int) -> list[int]:
    """First `k` buses reached by a breadth-first search from `bus` over the undirected
    feeder (neighbours visited in ascending index order; `bus` excluded; padded with it).

    **Arguments:**

    - `n_nodes`: number of buses.
    - `from_idx`, `to_idx`: `(n_lines,)` 0-based line ends.
    - `bus`: start bus.
    - `k`: number of buses wanted.

    **Returns:**

    A list of `k` bus indices.
    """
    adj: list[list[int]] = [[] for _ in range(n_nodes)]
    for f, t in zip(from_idx, to_idx):
        adj[int(f)].append(int(t))
        adj[int(t)].append(int(f))
    seen, order, queue = {bus}, [], deque([bus])
    while queue and len(order) < k:
        u = queue.popleft()
        for w in sorted(adj[u]):
            if w not in seen:
                seen.add(w)
                order.append(w)
                queue.append(w)
    order = order[:k]
    return order + [bus] * (k - len(order))


def make_local_obs_layout(params: DistGridParams, k: int = DERS_LOCAL_K) -> LocalObsLayout:
    """The layout of the local observations; agents = every device of every bundle, in
    bundle order. Host only (reads params).

    **Arguments:**

    - `params`: the env params.
    - `k`: neighbours per agent.

    **Returns:**

    A [`LocalObsLayout`][powerzoojax.grid.tasks.ders.LocalObsLayout].
    """
    net = params.network
    n, nb = net.n_nodes, net.n_branches
    send, recv = np.asarray(net.send_idx), np.asarray(net.recv_idx)
    core = 3 * n + 2 * nb + 2
    max_dev = max(b.per_device_obs_dim for b in params.resources)
    own, neigh, idx, mask = [], [], [], []
    offset = core
    for bundle in params.resources:
        for d, bus in enumerate(np.asarray(bundle.bus_idx).tolist()):
            own.append(bus)
            neigh.append(bfs_neighbours(n, send, recv, bus, k))
            start = offset + d * bundle.per_device_obs_dim
            cols = list(range(start, start + bundle.per_device_obs_dim))
            idx.append(cols + [0] * (max_dev - len(cols)))
            mask.append([1.0] * len(cols) + [0.0] * (max_dev - len(cols)))
        offset += bundle.obs_dim
    i32 = lambda x: jnp.asarray(x, jnp.int32)  # noqa: E731
    return LocalObsLayout(i32(own), i32(neigh), i32(idx), jnp.asarray(mask, jnp.float32),
                          i32([3 * n + 2 * nb, 3 * n + 2 * nb + 1]), n)


def local_observations(obs: Float[Array, " obs_dim"], layout: LocalObsLayout) -> Float[Array, "n_agents local_dim"]:
    """Per-agent local observations from the global env observation.

    Each row is `[own (v−1)/0.1 | K neighbour (v−1)/0.1 | min, max, mean of all (v−1)/0.1 |
    sin, cos | own device obs zero-padded]`.

    **Arguments:**

    - `obs`: `(obs_dim,)` global observation.
    - `layout`: the [`LocalObsLayout`][powerzoojax.grid.tasks.ders.LocalObsLayout].

    **Returns:**

    An `(n_agents, 1 + K + 3 + 2 + max_dev_obs)` array (DERs: `(12, 15)`).
    """
    v = obs[: layout.n_nodes]
    n_agents = layout.own_bus.shape[0]
    summary = jnp.broadcast_to(jnp.stack([jnp.min(v), jnp.max(v), jnp.mean(v)]), (n_agents, 3))
    time = jnp.broadcast_to(obs[layout.time_idx], (n_agents, 2))
    dev = obs[layout.device_obs_idx] * layout.device_obs_mask
    return jnp.concatenate([v[layout.own_bus][:, None], v[layout.neighbours], summary, time, dev], axis=1)


def ders_local_observations(obs: Float[Array, " obs_dim"], params: DistGridParams) -> Float[Array, "n_agents 15"]:
    """[`local_observations`][powerzoojax.grid.tasks.ders.local_observations] with a layout
    built from `params` (host params only; inside `jit` build the layout once outside).

    **Arguments:**

    - `obs`: `(obs_dim,)` global observation.
    - `params`: the DERs params.

    **Returns:**

    An `(n_agents, 15)` array.
    """
    return local_observations(obs, make_local_obs_layout(params))
