"""DERs task (spec §3.5, rl-market-tasks §4.2): twelve devices on case141 cooperating on
voltage and losses; the multi-agent adapter (pzj-rl ``DistGridMARLEnv``) gives one agent
per device.

Env: :class:`~powerzoojax.grid.DistGridEnv` (``include_der=False``) with bundles, in order:
4 batteries at buses 9, 55, 17, 122 (0.10 MW, 0.30 MWh, S 0.15, [P, Q] → act 2 / obs 3),
4 PV at 6, 73, 72, 82 (0.20 MW, S 0.22, [curtail, Q] → act 2 / obs 4), 4 flex loads at 41,
70, 135, 24 (0.10 MW, horizon 4 → act 2 / obs 5). Bundle obs 48, action 24. Band
[0.94, 1.06], loss weight 0.1, 48 steps.

Data substitution (Ausgrid is not shipped): load shape = mean of the SimBench 2016 MV
feeder profiles (``simbench_feeders_2016``) normalised by its peak; PV = SimBench ``PV1``
(``simbench_pv_2016``) normalised by its peak; both windowed with wrap-around and
multiplied into the case's base load / PV capacity. Splits: ``train``, ``iid``,
``voltage_tightening`` ([0.96, 1.04]), ``pv_penetration_shift`` (PV × 2), ``load_stress``
(load × 1.15), the three OOD splits on the iid window.

Local observations (Dec-POMDP, K = 4): :func:`make_local_obs_layout` precomputes index
arrays on the host; :func:`local_observations` is a pure gather usable inside ``jit``.
"""

import functools
from collections import deque
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from powerzoojax.case import load_case
from powerzoojax.core import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.grid.distribution import DistGridEnv, DistGridParams, make_dist_params
from powerzoojax.grid.resources import make_battery_bundle, make_flexload_bundle, make_renewable_bundle

DERS_BATTERY_BUSES = (9, 55, 17, 122)
DERS_PV_BUSES = (6, 73, 72, 82)
DERS_FLEX_BUSES = (41, 70, 135, 24)
DERS_AGENT_NAMES = tuple(f"{kind}_{k}" for kind in ("battery", "renewable", "flexload") for k in range(4))
DERS_LOCAL_K = 4
_SPLITS = {
    "train": ("train", 1.0, 1.0, (0.94, 1.06)),
    "iid": ("iid", 1.0, 1.0, (0.94, 1.06)),
    "voltage_tightening": ("iid", 1.0, 1.0, (0.96, 1.04)),
    "pv_penetration_shift": ("iid", 1.0, 2.0, (0.94, 1.06)),
    "load_stress": ("iid", 1.15, 1.0, (0.94, 1.06)),
}


@functools.lru_cache(maxsize=4)
def ders_shapes(window: str) -> tuple[np.ndarray, np.ndarray]:
    """``(load_shape (T,), pv_shape (T,))`` of a data window, each divided by its peak."""
    from powerzoojax.data import DataLoader

    loader = DataLoader()
    load = loader.load_region_profiles(
        "load.actual_pu", source="simbench_feeders_2016", regions=["mv_rural", "mv_semiurb", "mv_urban", "mv_comm"],
        split=window,
    ).values.mean(axis=1)
    pv = loader.load_region_profiles("solar.available_pu", source="simbench_pv_2016", regions=["PV1"], split=window)
    pv = np.nan_to_num(np.asarray(pv.values[:, 0], np.float64))
    return np.asarray(load / load.max()), np.clip(pv / pv.max(), 0.0, 1.0)


class LocalObsLayout(eqx.Module):
    """Host-built gather indices for :func:`local_observations` (a pytree: pass it into ``jit``)."""

    own_bus: Int[Array, " n_agents"]
    neighbours: Int[Array, "n_agents k"]
    device_obs_idx: Int[Array, "n_agents max_dev_obs"]
    device_obs_mask: Float[Array, "n_agents max_dev_obs"]
    time_idx: Int[Array, "2"]
    n_nodes: int = eqx.field(static=True)


def bfs_neighbours(n_nodes: int, from_idx: np.ndarray, to_idx: np.ndarray, bus: int, k: int) -> list[int]:
    """First ``k`` buses reached by a breadth-first search from ``bus`` over the undirected
    feeder (neighbours visited in ascending index order; ``bus`` excluded; padded with it)."""
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
    """Agents = every device of every bundle, in bundle order. Host only (reads params)."""
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
    """Per-agent local observations from the global env observation ``obs``:
    ``[own (v−1)/0.1 | K neighbour (v−1)/0.1 | min, max, mean of all (v−1)/0.1 | sin, cos |
    own device obs zero-padded]`` → ``(n_agents, 1 + K + 3 + 2 + max_dev_obs)`` (DERs: (12, 15))."""
    v = obs[: layout.n_nodes]
    n_agents = layout.own_bus.shape[0]
    summary = jnp.broadcast_to(jnp.stack([jnp.min(v), jnp.max(v), jnp.mean(v)]), (n_agents, 3))
    time = jnp.broadcast_to(obs[layout.time_idx], (n_agents, 2))
    dev = obs[layout.device_obs_idx] * layout.device_obs_mask
    return jnp.concatenate([v[layout.own_bus][:, None], v[layout.neighbours], summary, time, dev], axis=1)


def ders_local_observations(obs: Float[Array, " obs_dim"], params: DistGridParams) -> Float[Array, "n_agents 15"]:
    """Convenience: :func:`local_observations` with a layout built from ``params`` (host
    params only; inside ``jit`` build the layout once outside and call ``local_observations``)."""
    return local_observations(obs, make_local_obs_layout(params))


class DERsTask:
    """Frozen DERs benchmark (spec §4.1 TaskSpec)."""

    task_name = "ders"
    default_splits = tuple(_SPLITS)

    def __init__(self, max_steps: int = 48, randomize_initial_soc: bool = False):
        self.max_steps = int(max_steps)
        self.case = load_case("141")
        c = self.case
        self._batt = make_battery_bundle(
            c, DERS_BATTERY_BUSES, power_mw=0.10, energy_mwh=0.30, s_rated_mva=0.15, soc_min=0.1, soc_max=0.9,
            initial_soc=0.5, enable_q_control=True, randomize_initial_soc=randomize_initial_soc,
        )
        self._flex = make_flexload_bundle(c, DERS_FLEX_BUSES, cap_curtail_mw=0.10, horizon=4)

    def make_params(self, split: str = "train", start: int = 0, *, max_steps: int | None = None) -> DistGridParams:
        if split not in _SPLITS:
            raise ValueError(f"DERsTask: unknown split {split!r}; valid: {tuple(_SPLITS)}")
        window, load_mult, pv_mult, (v_min, v_max) = _SPLITS[split]
        n = self.max_steps if max_steps is None else int(max_steps)
        load_shape, pv_shape = ders_shapes(window)
        rows = (int(start) + np.arange(n)) % load_shape.shape[0]
        base = float(self.case.base_mva)
        p0 = np.asarray(self.case.node_pd, np.float64) / base
        q0 = np.asarray(self.case.node_qd, np.float64) / base
        shape = load_shape[rows][:, None] * load_mult
        pv = self._pv(np.clip(pv_shape[rows] * pv_mult, 0.0, 1.0), pv_mult)
        return make_dist_params(
            self.case, max_steps=n, steps_per_day=48, v_min=v_min, v_max=v_max, loss_penalty_weight=0.1,
            resources=(self._batt, pv, self._flex), include_der=False,
            p_load_profiles=shape * p0, q_load_profiles=shape * q0,
        )

    def _pv(self, cf: np.ndarray, pv_mult: float):
        # PV × 2 doubles capacity (and inverter rating) rather than saturating the CF.
        return make_renewable_bundle(
            self.case, DERS_PV_BUSES, capacity_mw=0.20 * pv_mult, s_rated_mva=0.22 * pv_mult,
            cf_profiles=np.clip(cf / pv_mult, 0.0, 1.0), enable_curtailment=True, enable_q_control=True,
        )

    def make_env(self, split: str = "train") -> DistGridEnv:
        return DistGridEnv()

    def episode_params(
        self, split: str, episode_idx: int, n_episodes: int, max_steps: int, *, strategy: str = "uniform",
        seed: int = 0,
    ) -> DistGridParams:
        n_rows = ders_shapes(_SPLITS[split][0])[0].shape[0]
        span = max(n_rows - max_steps, 0)
        if strategy == "uniform":
            start = int(round(episode_idx * span / max(n_episodes - 1, 1))) if n_episodes > 1 else 0
        elif strategy == "seeded":
            start = int(np.random.default_rng(seed * 997 + episode_idx).integers(0, max(span, 1)))
        else:
            raise ValueError(f"DERsTask.episode_params: strategy must be 'uniform' or 'seeded', got {strategy!r}")
        return self.make_params(split, start, max_steps=max_steps)

    def rollout(self, env, params, key, policy_fn) -> EpisodeTrace:
        return episode_rollout(env, params, key, policy_fn)

    def baseline_names(self) -> tuple[str, ...]:
        return ("no_control", "volt_droop")

    def baseline_policy(self, name: str, params: DistGridParams):
        n_act = sum(b.action_dim for b in params.resources)
        if name == "no_control":
            return lambda obs, state, key: jnp.zeros((n_act,), jnp.float32)
        if name == "volt_droop":
            batt, pv, flex = params.resources

            def droop(obs, state, key):
                v_b, v_p, v_f = (state.v_mag[b.bus_idx] for b in (batt, pv, flex))
                q = lambda v: jnp.clip(10.0 * (1.0 - v), -1.0, 1.0)  # noqa: E731
                a_b = jnp.stack([jnp.zeros_like(v_b), q(v_b)], axis=1)
                a_p = jnp.stack([jnp.where(v_p > 1.03, -0.5, 1.0), q(v_p)], axis=1)
                a_f = jnp.stack([jnp.where(v_f < 0.97, 0.5, 0.0), jnp.zeros_like(v_f)], axis=1)
                return jnp.concatenate([a_b.reshape(-1), a_p.reshape(-1), a_f.reshape(-1)])
            return droop
        raise ValueError(f"DERsTask: unknown baseline {name!r}; valid: {self.baseline_names()}")

    def baseline_rollout(self, env, params, key, name: str) -> EpisodeTrace:
        return episode_rollout(env, params, key, self.baseline_policy(name, params))

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout: EpisodeTrace | None = None) -> dict[str, float]:
        info = jax.tree.map(np.asarray, agent_rollout.info)
        n_steps = info["p_loss_MW"].shape[-1]
        viol = info["cost_voltage_violation"] > 0
        out = {
            "total_reward": float(np.asarray(agent_rollout.reward).sum(-1).mean()),
            "total_cost": float(info["cost_sum"].sum(-1).mean()),
            "mean_p_loss_mw": float(info["p_loss_MW"].mean()),
            "voltage_violation_steps": float(viol.sum(-1).mean()),
            "voltage_violation_rate": float(viol.sum(-1).mean() / n_steps),
            "undervoltage_min_v": float(info["v_min_step"].min()),
            "overvoltage_max_v": float(info["v_max_step"].max()),
        }
        if baseline_rollout is not None:
            b = jax.tree.map(np.asarray, baseline_rollout.info)
            bl, bc = float(b["p_loss_MW"].mean()), float(b["cost_sum"].sum(-1).mean())
            out["loss_reduction_pct"] = 100.0 * (bl - out["mean_p_loss_mw"]) / max(bl, 1e-9)
            out["cost_reduction_pct"] = 100.0 * (bc - out["total_cost"]) / max(bc, 1e-9)
        return out

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("voltage_violation", "thermal_overload", "resource"), (0.0, 0.0, 0.0), (4.0, 1.0, 1.0))
