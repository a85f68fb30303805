"""DERs task: twelve devices on case141 cooperating on
voltage and losses; the multi-agent adapter (pzj-rl `DistGridMARLEnv`) gives one agent
per device.

Env: [`DistGridEnv`][powerzoojax.grid.DistGridEnv] (`include_der=False`) with bundles, in order:
4 batteries at buses 9, 55, 17, 122 (0.10 MW, 0.30 MWh, S 0.15, [P, Q] → act 2 / obs 3),
4 PV at 6, 73, 72, 82 (0.20 MW, S 0.22, [curtail, Q] → act 2 / obs 4), 4 flex loads at 41,
70, 135, 24 (0.10 MW, horizon 4 → act 2 / obs 5). Bundle obs 48, action 24. Band
[0.94, 1.06], loss weight 0.1, 48 steps.

Data substitution (Ausgrid is not shipped): load shape = mean of the SimBench 2016 MV
feeder profiles (`simbench_feeders_2016`) normalised by its peak; PV = SimBench `PV1`
(`simbench_pv_2016`) normalised by its peak; both windowed with wrap-around and
multiplied into the case's base load / PV capacity. Splits: `train`, `iid`,
`voltage_tightening` ([0.96, 1.04]), `pv_penetration_shift` (PV × 2), `load_stress`
(load × 1.15), the three OOD splits on the iid window.

Local observations (Dec-POMDP, K = 4): [`make_local_obs_layout`][powerzoojax.grid.tasks.ders.make_local_obs_layout] precomputes index
arrays on the host; [`local_observations`][powerzoojax.grid.tasks.ders.local_observations] is a pure gather usable inside `jit`.
"""

import functools
import os
from collections import deque
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from powerzoojax.case import CaseData, load_case
from powerzoojax.core import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.core._provider import import_provider
from powerzoojax.grid.distribution import DistGridEnv, DistGridParams, make_dist_params
from powerzoojax.grid.resources import (
    BatteryBundle,
    FlexLoadBundle,
    RenewableBundle,
    make_battery_bundle,
    make_flexload_bundle,
    make_renewable_bundle,
)

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
    """Load and PV shapes of a data window, each divided by its peak.

    **Arguments:**

    - `window`: data window name.

    **Returns:**

    `(load_shape (T,), pv_shape (T,))`.
    """
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


class DERsTask:
    """Frozen DERs benchmark (implements [`TaskSpec`][powerzoojax.core.TaskSpec]).

    **Arguments:**

    - `max_steps`: episode length [steps].
    - `randomize_initial_soc`: draw the batteries' initial SOC on reset.
    """

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
        """Env params of one episode window.

        **Arguments:**

        - `split`: data split.
        - `start`: first row of the split's profiles.
        - `max_steps`: episode length [steps]; `None` takes the task's.

        **Returns:**

        [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
        """
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
        """The policy of a named baseline.

        **Arguments:**

        - `name`: one of `baseline_names()`.
        - `params`: the episode's params.

        **Returns:**

        `policy(obs, state, key) -> action`.
        """
        if name == "no_control":
            noop = ders_noop_action(params)
            return lambda obs, state, key: noop
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


# ----------------------------------------------------------------------------- reference API
# The reference's DERs factories, rollouts (policy(obs, key), dict-of-arrays records) and
# metrics. DERsTask above is the frozen benchmark built from the same pieces.

DERS_BENCHMARK_LOAD_CASE = "case141"
DERS_FLEXLOAD_BUSES = DERS_FLEX_BUSES
DERS_BATTERY_CONFIG = {
    "power_mw": 0.10, "capacity_mwh": 0.30, "s_rated_mva": 0.15, "enable_q_control": True, "soc_min": 0.1,
    "soc_max": 0.9, "initial_soc": 0.5,
}
DERS_PV_CONFIG = {"capacity_mw": 0.20, "s_rated_mva": 0.22, "allow_curtailment": True, "curtail_cost_per_mwh": 0.0}
DERS_FLEXLOAD_CONFIG = {"curtail_cap_mw": 0.10, "shift_cap_mw": 0.10, "shift_horizon": 4}
DERS_V_MIN, DERS_V_MAX = 0.94, 1.06
# Scalability variant: 20 devices on case141 in a tighter band.
DERS_LARGE_BATTERY_BUSES = (33, 7, 39, 11, 92, 54, 44)
DERS_LARGE_PV_BUSES = (15, 104, 57, 106, 62, 136, 83)
DERS_LARGE_FLEXLOAD_BUSES = (121, 84, 123, 125, 128, 30)
DERS_LARGE_V_MIN, DERS_LARGE_V_MAX = 0.96, 1.04
DERS_OOD_SCENARIOS = ("voltage_tightening", "pv_penetration_shift", "load_stress")
DERS_3PHASE_BATTERY_BUSES = (10, 30, 50, 70, 90, 110)
_ROLE_WINDOWS = {"train": "train", "iid": "iid", "summer_ood": "stress", "zone_holdout": "iid"}


def _ders_case(case: CaseData | None) -> CaseData:
    return load_case(DERS_BENCHMARK_LOAD_CASE) if case is None else case


def make_ders_battery_bundle(
    case: CaseData, *, max_steps: int = 48, dt_hours: float = 0.5, bus_ids=DERS_BATTERY_BUSES
) -> BatteryBundle:
    """The DERs batteries (`DERS_BATTERY_CONFIG` at `bus_ids`; action `[P, Q]`).

    **Arguments:**

    - `case`: the feeder.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `bus_ids`: bus numbers of the batteries.

    **Returns:**

    A [`BatteryBundle`][powerzoojax.grid.resources.BatteryBundle].
    """
    del max_steps  # a battery has no profile
    c = DERS_BATTERY_CONFIG
    return make_battery_bundle(
        case, list(bus_ids), power_mw=c["power_mw"], energy_mwh=c["capacity_mwh"], s_rated_mva=c["s_rated_mva"],
        soc_min=c["soc_min"], soc_max=c["soc_max"], initial_soc=c["initial_soc"],
        enable_q_control=c["enable_q_control"], dt_hours=dt_hours,
    )


def make_ders_pv_bundle(
    case: CaseData, *, max_steps: int = 48, profiles: Any = None, dt_hours: float = 0.5, bus_ids=DERS_PV_BUSES,
    capacity_scale: float = 1.0,
) -> RenewableBundle:
    """The DERs PV (`DERS_PV_CONFIG` at `bus_ids`; action `[curtail, Q]`).

    **Arguments:**

    - `case`: the feeder.
    - `max_steps`: episode length [steps].
    - `profiles`: capacity factors `(T,)` or `(T, n)`; `None` takes the bell
      `clip(sin(π(h−6)/12), 0, 1)` over `max_steps`.
    - `dt_hours`: step length [hours].
    - `bus_ids`: bus numbers of the PV units.
    - `capacity_scale`: multiplier of the rated power only.

    **Returns:**

    A [`RenewableBundle`][powerzoojax.grid.resources.RenewableBundle].
    """
    c = DERS_PV_CONFIG
    n = len(bus_ids)
    if profiles is not None:
        profiles = np.asarray(profiles, np.float64)
        profiles = np.broadcast_to(profiles.reshape(profiles.shape[0], -1), (profiles.shape[0], n))
    return make_renewable_bundle(
        case, list(bus_ids), capacity_mw=c["capacity_mw"] * float(capacity_scale), s_rated_mva=c["s_rated_mva"],
        cf_profiles=profiles, curtail_cost=c["curtail_cost_per_mwh"], allow_curtailment=c["allow_curtailment"],
        enable_curtailment=True, enable_q_control=True, dt_hours=dt_hours, max_steps=max_steps,
    )


def make_ders_flexload_bundle(case: CaseData, *, dt_hours: float = 0.5, bus_ids=DERS_FLEXLOAD_BUSES) -> FlexLoadBundle:
    """The DERs flexible loads (`DERS_FLEXLOAD_CONFIG` at `bus_ids`; action `[curtail, shift]`).

    **Arguments:**

    - `case`: the feeder.
    - `dt_hours`: step length [hours].
    - `bus_ids`: bus numbers of the loads.

    **Returns:**

    A [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle].
    """
    c = DERS_FLEXLOAD_CONFIG
    return make_flexload_bundle(
        case, list(bus_ids), cap_curtail_mw=c["curtail_cap_mw"], cap_shift_mw=c["shift_cap_mw"],
        horizon=c["shift_horizon"], dt_hours=dt_hours,
    )


def make_ders_params(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    loss_penalty_weight: float = 0.1,
    pv_profiles: Any = None,
    load_profiles_p: Any = None,
    load_profiles_q: Any = None,
) -> DistGridParams:
    """DERs env params: 4 batteries, 4 PV and 4 flexible loads (in that bundle order), no
    per-bus DER actions, band `[v_min, v_max]`.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `pv_profiles`: PV capacity factors; `None` takes the bell.
    - `load_profiles_p`, `load_profiles_q`: `(T, N)` bus loads [p.u.]; either replaces
      its half of the case's static loads.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    case = _ders_case(case)
    bundles = (
        make_ders_battery_bundle(case, max_steps=max_steps, dt_hours=dt_hours),
        make_ders_pv_bundle(case, max_steps=max_steps, profiles=pv_profiles, dt_hours=dt_hours),
        make_ders_flexload_bundle(case, dt_hours=dt_hours),
    )
    params = make_dist_params(
        case, max_steps=max_steps, steps_per_day=48, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, resources=bundles, include_der=False, delta_t_hours=dt_hours,
    )
    if load_profiles_p is not None or load_profiles_q is not None:
        p = params.p_load_profiles if load_profiles_p is None else load_profiles_p
        q = params.q_load_profiles if load_profiles_q is None else load_profiles_q
        params = params.with_load_profiles(jnp.asarray(p), jnp.asarray(q))
    return params


def make_ders_params_with_profiles(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    loss_penalty_weight: float = 0.1,
    pv_profiles: Any = None,
    load_profiles_p: Any = None,
    load_profiles_q: Any = None,
) -> DistGridParams:
    """[`make_ders_params`][powerzoojax.grid.tasks.ders.make_ders_params] fed with external time
    series: the hook for user data.

    **Arguments:**

    - `case`, `max_steps`, `dt_hours`, `v_min`, `v_max`, `loss_penalty_weight`: as for
      `make_ders_params`.
    - `pv_profiles`: PV capacity factors `(T,)` or `(T, n_pv)`.
    - `load_profiles_p`, `load_profiles_q`: `(T, N)` bus loads [p.u.].

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    return make_ders_params(
        case, max_steps=max_steps, dt_hours=dt_hours, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, pv_profiles=pv_profiles, load_profiles_p=load_profiles_p,
        load_profiles_q=load_profiles_q,
    )


def _role_window(role: str) -> str:
    if role not in _ROLE_WINDOWS:
        raise KeyError(f"unknown DERs split role {role!r}; valid roles: {tuple(_ROLE_WINDOWS)}")
    return _ROLE_WINDOWS[role]


def load_ders_load_shape(data_loader: Any = None, *, role: str = "train", resample: str = "30min") -> np.ndarray:
    """The DERs demand shape of a split role, divided by its peak.

    The mean Ausgrid load of the role's substations (restricted to its days) when the
    Ausgrid file is in the loader's folder, else the shipped SimBench feeder substitute
    that [`DERsTask`][powerzoojax.grid.tasks.ders.DERsTask] uses.

    **Arguments:**

    - `data_loader`: a `DataLoader(data_dir=...)` or a folder; `None` for the shipped data.
    - `role`: split role.
    - `resample`: output step.

    **Returns:**

    A `(T,)` float32 NumPy array.
    """
    from powerzoojax.data.ausgrid_utils import find_ausgrid_file, get_ausgrid_split, load_substation_profiles

    window = _role_window(role)
    folder = data_loader if data_loader is None or isinstance(data_loader, (str, os.PathLike)) else getattr(data_loader, "data_dir", None)
    try:
        find_ausgrid_file(folder)
    except FileNotFoundError:
        return np.asarray(ders_shapes(window)[0], np.float32)
    mean = load_substation_profiles(folder, get_ausgrid_split(role)[2], role, resample=resample).mean(axis=1)
    return (mean / max(float(mean.max()), 1e-8)).astype(np.float32)


def load_ders_pv_profile(data_loader: Any = None, *, role: str = "train", resample: str = "30min") -> np.ndarray:
    """The DERs PV capacity factor of a split role, divided by its peak.

    GB solar of the role's GB window when the loader has the GB files, else the shipped
    SimBench PV1.

    **Arguments:**

    - `data_loader`: a `DataLoader` or a folder; `None` for the shipped data.
    - `role`: split role.
    - `resample`: output step.

    **Returns:**

    A `(T,)` float32 NumPy array in [0, 1].
    """
    window = _role_window(role)
    if data_loader is not None and "gb" in data_loader.list_sources():
        from powerzoojax.data import SOLAR_AVAILABLE_MW

        pv = np.nan_to_num(np.asarray(data_loader.load_signals(
            [SOLAR_AVAILABLE_MW], source="gb", split="train" if window == "train" else "iid", resample=resample,
        ).values[:, 0], np.float64))
        return (np.clip(pv / max(float(pv.max()), 1e-8), 0.0, 1.0)).astype(np.float32)
    return np.asarray(ders_shapes(window)[1], np.float32)


def _window(series: np.ndarray, start: int, n: int) -> np.ndarray:
    return np.asarray(series)[(int(start) + np.arange(int(n))) % np.asarray(series).shape[0]]


def make_ders_params_from_split(
    case: CaseData | None = None,
    *,
    role: str = "train",
    data_loader: Any = None,
    resample: str = "30min",
    episode_start: int = 0,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    loss_penalty_weight: float = 0.1,
    load_scale: float = 1.0,
    pv_scale: float = 1.0,
) -> DistGridParams:
    """DERs params on one data window.

    Rows `episode_start` .. `+ max_steps` (wrapping) of the role's load shape × the case's
    static loads × `load_scale`, and of its PV capacity factor.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `role`: split role.
    - `data_loader`: a `DataLoader(data_dir=...)` or a folder; `None` for the shipped data.
    - `resample`: step of the profiles.
    - `episode_start`: first row.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the losses in the reward.
    - `load_scale`: multiplier of the loads.
    - `pv_scale`: multiplier of the PV rated power (capacity factors stay in [0, 1]).

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    load_shape = load_ders_load_shape(data_loader, role=role, resample=resample)
    pv = load_ders_pv_profile(data_loader, role=role, resample=resample)
    case = _ders_case(case)
    base = float(case.base_mva)
    shape = _window(load_shape, episode_start, max_steps)[:, None] * float(load_scale)
    params = make_ders_params(
        case, max_steps=max_steps, dt_hours=dt_hours, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, pv_profiles=_window(pv, episode_start, max_steps),
        load_profiles_p=shape * np.asarray(case.node_pd, np.float64)[None, :] / base,
        load_profiles_q=shape * np.asarray(case.node_qd, np.float64)[None, :] / base,
    )
    if float(pv_scale) != 1.0:
        params = _scale_pv(params, float(pv_scale))
    return params


def _scale_pv(params: DistGridParams, factor: float) -> DistGridParams:
    resources = tuple(
        eqx.tree_at(lambda b: b.capacity_mw, b, b.capacity_mw * factor) if isinstance(b, RenewableBundle) else b
        for b in params.resources
    )
    return eqx.tree_at(lambda p: p.resources, params, resources)


def _marl_env_class(name: str) -> Any:
    # The adapters live one layer up (pzj-rl): reached at call time, never imported here.
    return getattr(import_provider("powerzoojax.rl", name, "pzj-rl"), name)


def make_ders_marl_env(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    voltage_penalty: float = 8.0,
    pv_profiles: Any = None,
    observation_mode: str = "local",
) -> tuple[Any, DistGridParams]:
    """[`make_ders_params`][powerzoojax.grid.tasks.ders.make_ders_params] as a `DistGridMARLEnv`
    (pzj-rl) with 12 device agents.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.
    - `pv_profiles`: PV capacity factors; `None` takes the bell.
    - `observation_mode`: `"local"` (Dec-POMDP, 15 entries per agent) or `"global"`.

    **Returns:**

    `(env, params)`.
    """
    params = make_ders_params(case, max_steps=max_steps, v_min=v_min, v_max=v_max, pv_profiles=pv_profiles)
    env = _marl_env_class("DistGridMARLEnv")(
        DistGridEnv(), params, voltage_penalty=voltage_penalty, observation_mode=observation_mode
    )
    return env, params


def make_ders_large_params(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    dt_hours: float = 0.5,
    v_min: float = DERS_LARGE_V_MIN,
    v_max: float = DERS_LARGE_V_MAX,
    pv_profiles: Any = None,
) -> DistGridParams:
    """The 20-device scalability variant on case141: 7 batteries, 7 PV, 6 flexible loads
    (`DERS_LARGE_*_BUSES`, the DERs device ratings).

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `dt_hours`: step length [hours].
    - `v_min`, `v_max`: voltage band [p.u.], [0.96, 1.04] by default.
    - `pv_profiles`: PV capacity factors; `None` takes the bell.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    case = _ders_case(case)
    bundles = (
        make_ders_battery_bundle(case, dt_hours=dt_hours, bus_ids=DERS_LARGE_BATTERY_BUSES),
        make_ders_pv_bundle(case, max_steps=max_steps, profiles=pv_profiles, dt_hours=dt_hours, bus_ids=DERS_LARGE_PV_BUSES),
        make_ders_flexload_bundle(case, dt_hours=dt_hours, bus_ids=DERS_LARGE_FLEXLOAD_BUSES),
    )
    return make_dist_params(
        case, max_steps=max_steps, steps_per_day=48, v_min=v_min, v_max=v_max, resources=bundles,
        include_der=False, delta_t_hours=dt_hours,
    )


def make_ders_large_marl_env(
    case: CaseData | None = None, *, max_steps: int = 48, voltage_penalty: float = 12.0
) -> tuple[Any, DistGridParams]:
    """[`make_ders_large_params`][powerzoojax.grid.tasks.ders.make_ders_large_params] as a
    local-observation `DistGridMARLEnv` with 20 agents.

    **Arguments:**

    - `case`: the feeder; `None` takes case141.
    - `max_steps`: episode length [steps].
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.

    **Returns:**

    `(env, params)`.
    """
    params = make_ders_large_params(case, max_steps=max_steps)
    env = _marl_env_class("DistGridMARLEnv")(DistGridEnv(), params, voltage_penalty=voltage_penalty, observation_mode="local")
    return env, params


def make_ders_ood_params(
    base_params: DistGridParams,
    *,
    scenario: str,
    pv_scale: float = 1.0,
    v_min: float | None = None,
    v_max: float | None = None,
) -> DistGridParams:
    """`base_params` under an OOD stress.

    `voltage_tightening`: band `[v_min, v_max]` (default [0.96, 1.04]);
    `pv_penetration_shift`: PV rated power × `pv_scale` (2 when left at 1);
    `load_stress`: P and Q loads × `pv_scale` (1.15 when left at 1; the factor shares the
    PV argument, as in the reference signature).

    **Arguments:**

    - `base_params`: the DERs params.
    - `scenario`: one of the three scenarios above.
    - `pv_scale`: the scenario's factor.
    - `v_min`, `v_max`: band of `voltage_tightening` [p.u.].

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    if scenario == "voltage_tightening":
        lo = DERS_LARGE_V_MIN if v_min is None else float(v_min)
        hi = DERS_LARGE_V_MAX if v_max is None else float(v_max)
        if not lo < hi:
            raise ValueError(f"voltage_tightening: v_min {lo} must be below v_max {hi}")
        f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
        return eqx.tree_at(lambda p: (p.v_min, p.v_max), base_params, (f32(lo), f32(hi)))
    if scenario == "pv_penetration_shift":
        return _scale_pv(base_params, float(pv_scale) if float(pv_scale) != 1.0 else 2.0)
    if scenario == "load_stress":
        factor = float(pv_scale) if float(pv_scale) != 1.0 else 1.15
        return base_params.with_load_profiles(base_params.p_load_profiles * factor, base_params.q_load_profiles * factor)
    raise ValueError(f"unknown DERs OOD scenario {scenario!r}; valid: {DERS_OOD_SCENARIOS}")


def make_ders_3phase_eval(
    case: CaseData | None = None,
    *,
    max_steps: int = 48,
    battery_buses: Any = None,
    v_min: float = DERS_V_MIN,
    v_max: float = DERS_V_MAX,
    voltage_penalty: float = 8.0,
    compat_obs_dim: int | None = None,
) -> tuple[Any, Any]:
    """A three-phase evaluation feeder with the DERs batteries, as a `DistGrid3PhaseMARLEnv`
    (pzj-rl) whose local observations are padded so a policy trained on case141 runs on it.

    Line impedances are balanced, `(r + jx)·I₃` from the case's scalar `r, x` (mutual
    coupling is not in `CaseData`); each bus load is split equally over the phases (its
    per-phase values when the case carries them). The in-service lines must form a tree.

    **Arguments:**

    - `case`: the feeder; `None` takes case123.
    - `max_steps`: episode length [steps].
    - `battery_buses`: bus numbers of the batteries; `None` takes
      `DERS_3PHASE_BATTERY_BUSES`.
    - `v_min`, `v_max`: voltage band [p.u.].
    - `voltage_penalty`: weight of `cost_continuous` in the shared reward.
    - `compat_obs_dim`: width the local observations are padded to; `None` takes 15 (the
      DERs width).

    **Returns:**

    `(env, params)`.
    """
    from powerzoojax.grid import DistGrid3PhaseEnv
    from powerzoojax.grid.distribution import make_dist_3phase_params_from_case

    case = load_case("123") if case is None else case
    batteries = make_ders_battery_bundle(case, bus_ids=DERS_3PHASE_BATTERY_BUSES if battery_buses is None else battery_buses)
    params = make_dist_3phase_params_from_case(
        case, max_steps=max_steps, v_min=v_min, v_max=v_max, resources=(batteries,), include_der=False,
    )
    width = 1 + DERS_LOCAL_K + 3 + 2 + 5 if compat_obs_dim is None else int(compat_obs_dim)
    env = _marl_env_class("DistGrid3PhaseMARLEnv")(
        DistGrid3PhaseEnv(), params, voltage_penalty=voltage_penalty, min_obs_dim=width
    )
    return env, params


def ders_noop_action(params: DistGridParams) -> Float[Array, " action_dim"]:
    """The do-nothing action of every bundle: battery `[P, Q] = 0`, PV `[curtail, Q] = [+1, 0]`
    (+1 = no curtailment), flexible load `[0, 0]`; other bundles 0.

    **Arguments:**

    - `params`: the DERs params.

    **Returns:**

    An `(action_dim,)` float32 array.
    """
    parts = []
    for bundle in params.resources:
        a = np.zeros((bundle.n_devices, bundle.per_device_action_dim), np.float32)
        if isinstance(bundle, RenewableBundle) and bundle.enable_curtailment:
            a[:, 0] = 1.0
        parts.append(a.reshape(-1))
    return jnp.asarray(np.concatenate(parts) if parts else np.zeros((0,), np.float32))


def rollout_ders(env: DistGridEnv, params: DistGridParams, key, policy_fn) -> dict[str, Array]:
    """One episode (one `lax.scan`) of `policy_fn`.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key.
    - `policy_fn`: `policy(obs, key) -> action`.

    **Returns:**

    `{"reward", "cost_continuous", "p_loss_MW", "v_min_episode", "v_max_episode"}`, each
    `(max_steps,)` (the last two: the step's lowest / highest bus voltage [p.u.]), plus the
    band `metric_v_min`, `metric_v_max` the metrics should use.
    """
    trace = episode_rollout(env, params, key, lambda obs, state, k: policy_fn(obs, k))
    return {
        "reward": trace.reward,
        "cost_continuous": trace.info["cost_continuous"],
        "p_loss_MW": trace.info["p_loss_MW"],
        "v_min_episode": trace.info["v_min_step"],
        "v_max_episode": trace.info["v_max_step"],
        "metric_v_min": params.v_min,
        "metric_v_max": params.v_max,
    }


def ders_no_control_rollout(env: DistGridEnv, params: DistGridParams, key) -> dict[str, Array]:
    """Baseline: [`ders_noop_action`][powerzoojax.grid.tasks.ders.ders_noop_action] every step.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_ders`.

    **Returns:**

    The [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record.
    """
    noop = ders_noop_action(params)
    return rollout_ders(env, params, key, lambda obs, k: noop)


def ders_volt_droop_rollout(env: DistGridEnv, params: DistGridParams, key) -> dict[str, Array]:
    """Baseline: local Q–V droop.

    Battery `P = 0`, `Q = clip(10(1 − v), ±1)`; PV curtails to 75 % (action −0.5) above
    1.03 p.u., same Q droop; flexible loads curtail half below 0.97 p.u.; voltages read
    from the observation's first N entries.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_ders`.

    **Returns:**

    The [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record.
    """
    batt, pv, flex = params.resources
    n = params.network.n_nodes

    def policy(obs, k):
        v = 1.0 + 0.1 * obs[:n]
        q = lambda u: jnp.clip(10.0 * (1.0 - u), -1.0, 1.0)  # noqa: E731
        v_b, v_p, v_f = v[batt.bus_idx], v[pv.bus_idx], v[flex.bus_idx]
        a_b = jnp.stack([jnp.zeros_like(v_b), q(v_b)], axis=1)
        a_p = jnp.stack([jnp.where(v_p > 1.03, -0.5, 1.0), q(v_p)], axis=1)
        a_f = jnp.stack([jnp.where(v_f < 0.97, 0.5, 0.0), jnp.zeros_like(v_f)], axis=1)
        return jnp.concatenate([a_b.reshape(-1), a_p.reshape(-1), a_f.reshape(-1)]).astype(jnp.float32)

    return rollout_ders(env, params, key, policy)


def agent_dropout_rollout(
    env: DistGridEnv, params: DistGridParams, key, policy_fn=None, n_dropout: int = 2, seed: int = 0
) -> dict[str, Any]:
    """[`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] with `n_dropout` devices
    offline: their action is the device's no-op at every step.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_ders`.
    - `policy_fn`: `policy(obs, key) -> action`; `None` is the no-op for everyone.
    - `n_dropout`: number of devices dropped.
    - `seed`: seed of the draw of the dropped devices.

    **Returns:**

    The record, plus `dropped_agent_indices` (device order = agent order of the MARL
    adapter).
    """
    sizes = [b.per_device_action_dim for b in params.resources for _ in range(b.n_devices)]
    n_agents = len(sizes)
    if not 0 <= int(n_dropout) <= n_agents:
        raise ValueError(f"agent_dropout_rollout: n_dropout must be in 0..{n_agents}, got {n_dropout!r}")
    dropped = sorted(int(a) for a in np.random.default_rng(seed).choice(n_agents, size=int(n_dropout), replace=False))
    starts = np.cumsum([0] + sizes[:-1])
    keep = np.ones(sum(sizes), np.float32)
    for a in dropped:
        keep[starts[a] : starts[a] + sizes[a]] = 0.0
    keep_j, noop = jnp.asarray(keep), ders_noop_action(params)
    base = policy_fn if policy_fn is not None else (lambda obs, k: noop)
    out: dict[str, Any] = rollout_ders(env, params, key, lambda obs, k: keep_j * base(obs, k) + (1.0 - keep_j) * noop)
    out["dropped_agent_indices"] = dropped
    return out


def compute_ders_safety_metrics(rollout: dict, *, v_min: float = DERS_V_MIN, v_max: float = DERS_V_MAX) -> dict:
    """Voltage safety of a [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record.

    **Arguments:**

    - `rollout`: the record.
    - `v_min`, `v_max`: the band [p.u.].

    **Returns:**

    A dict: safe / violating step rates, under / over-voltage step counts, worst
    deviations beyond the band [p.u.], mean lowest / highest voltage [p.u.].
    """
    lo, hi = np.asarray(rollout["v_min_episode"], np.float64), np.asarray(rollout["v_max_episode"], np.float64)
    under, over = lo < v_min, hi > v_max
    safe = ~under & ~over
    return {
        "voltage_safety_rate": float(np.mean(safe)),
        "voltage_violation_rate": float(np.mean(~safe)),
        "undervoltage_steps": int(np.sum(under)),
        "overvoltage_steps": int(np.sum(over)),
        "max_undervoltage_dev": float(np.max(np.maximum(v_min - lo, 0.0))),
        "max_overvoltage_dev": float(np.max(np.maximum(hi - v_max, 0.0))),
        "mean_v_min": float(np.mean(lo)),
        "mean_v_max": float(np.mean(hi)),
    }


def compute_ders_metrics(rollout: dict, baseline: dict, *, v_min: float = DERS_V_MIN, v_max: float = DERS_V_MAX) -> dict:
    """Metrics of a [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record against a
    no-control baseline record.

    **Arguments:**

    - `rollout`: the agent's record.
    - `baseline`: the no-control record.
    - `v_min`, `v_max`: band of the violation count [p.u.]; pass the OOD band when it
      differs.

    **Returns:**

    `{"total_reward", "total_cost", "mean_p_loss_mw", "voltage_violation_steps",
    "loss_reduction_pct", "cost_reduction_pct"}`.
    """
    lo, hi = np.asarray(rollout["v_min_episode"]), np.asarray(rollout["v_max_episode"])
    base_loss = float(np.mean(baseline["p_loss_MW"]))
    loss = float(np.mean(rollout["p_loss_MW"]))
    base_cost = float(np.sum(baseline["cost_continuous"]))
    cost = float(np.sum(rollout["cost_continuous"]))
    return {
        "total_reward": float(np.sum(rollout["reward"])),
        "total_cost": cost,
        "mean_p_loss_mw": loss,
        "voltage_violation_steps": int(np.sum((lo < v_min) | (hi > v_max))),
        "loss_reduction_pct": 100.0 * (base_loss - loss) / max(base_loss, 1e-8),
        "cost_reduction_pct": 100.0 * (base_cost - cost) / max(base_cost, 1e-8),
    }


__all__ = [
    "DERS_3PHASE_BATTERY_BUSES", "DERS_AGENT_NAMES", "DERS_BATTERY_BUSES", "DERS_BATTERY_CONFIG",
    "DERS_BENCHMARK_LOAD_CASE", "DERS_FLEXLOAD_BUSES", "DERS_FLEXLOAD_CONFIG", "DERS_FLEX_BUSES",
    "DERS_LARGE_BATTERY_BUSES", "DERS_LARGE_FLEXLOAD_BUSES", "DERS_LARGE_PV_BUSES", "DERS_LARGE_V_MAX",
    "DERS_LARGE_V_MIN", "DERS_LOCAL_K", "DERS_OOD_SCENARIOS", "DERS_PV_BUSES", "DERS_PV_CONFIG", "DERS_V_MAX",
    "DERS_V_MIN", "DERsTask", "LocalObsLayout", "agent_dropout_rollout", "bfs_neighbours",
    "compute_ders_metrics", "compute_ders_safety_metrics", "ders_local_observations",
    "ders_no_control_rollout", "ders_noop_action", "ders_shapes", "ders_volt_droop_rollout",
    "load_ders_load_shape", "load_ders_pv_profile", "local_observations", "make_ders_3phase_eval",
    "make_ders_battery_bundle", "make_ders_flexload_bundle", "make_ders_large_marl_env",
    "make_ders_large_params", "make_ders_marl_env", "make_ders_ood_params", "make_ders_params",
    "make_ders_params_from_split", "make_ders_params_with_profiles", "make_ders_pv_bundle",
    "make_local_obs_layout", "rollout_ders",
]
