"""DSO task: voltage support on case33bw with six
flexible loads.

Env: [`DistGridEnv`][powerzoojax.grid.DistGridEnv] with `include_der=False` and one 6-device
[`FlexLoadBundle`][powerzoojax.grid.FlexLoadBundle] at buses 6, 14, 18, 22, 28, 33 → action
`Box(12)` = 6 × `[curtail, shift_out]`, obs 3·33 + 2·32 + 2 + 30 = 195. Band
[0.94, 1.06], loss weight 0.1, 48 half-hour steps. Canonical config = the reference's
frozen YAML: caps 0.165/0.110/0.110/0.088/0.132/0.110 MW, `v_slack` 1.045,
`load_scale` 0.83, end-of-feeder bus multipliers with feeder totals preserved.

Data substitution: the reference uses mean Ausgrid substation load per feeder; Ausgrid is
not shipped (and not reachable offline). We use the shipped SimBench 2016 aggregated
feeder profiles (`powerzoojax.data`, dataset `simbench_feeders_2016`): feeder A
(buses 2–18) ← `mv_semiurb`, B (19–22) ← `mv_comm`, C (23–33) ← `mv_urban`, each
normalised to mean 1 over its split. Splits: `train` (Jan–Sep 2016), `iid` (Oct–Nov),
`summer_ood` (December — the Australian summer months the reference holds out; here the
data's `stress` window), `zone_holdout` (iid window, feeders read from the low-voltage
grids `lv_semiurb4` / `lv_semiurb5` / `lv_urban6` instead). `synthetic=True` uses
the reference's analytic feeder shapes instead.
"""

import functools
import math
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from powerzoojax.case import CaseData, load_case
from powerzoojax.core import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.grid.distribution import DistGridEnv, DistGridParams, make_dist_params
from powerzoojax.grid.resources import FlexLoadBundle, make_flexload_bundle

DSO_FLEX_BUSES = (6, 14, 18, 22, 28, 33)
DSO_MODULE_CAPS_MW = (0.15, 0.10, 0.10, 0.08, 0.12, 0.10)
DSO_FROZEN_CAPS_MW = (0.165, 0.110, 0.110, 0.088, 0.132, 0.110)
DSO_BUS_MULTIPLIERS = {15: 0.88, 16: 0.75, 17: 0.64, 18: 0.56, 29: 0.88, 30: 0.75, 31: 0.64, 32: 0.56, 33: 0.50}
DSO_TRAIN_WINDOW_STARTS = (0, 360, 721, 1081, 1442, 1802, 2163, 2524)
# Feeder → external bus ids (bus 1, the slack, keeps shape 1).
DSO_FEEDERS = {"A": tuple(range(2, 19)), "B": tuple(range(19, 23)), "C": tuple(range(23, 34))}
_SPLIT_DATA = {
    "train": ("train", ("mv_semiurb", "mv_comm", "mv_urban")),
    "iid": ("iid", ("mv_semiurb", "mv_comm", "mv_urban")),
    "summer_ood": ("stress", ("mv_semiurb", "mv_comm", "mv_urban")),
    "zone_holdout": ("iid", ("lv_semiurb4", "lv_semiurb5", "lv_urban6")),
}


def dso_base_loads(
    case: CaseData, load_scale: float = 1.0, bus_multipliers: dict | None = None, preserve_feeder_totals: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Static bus loads: the case's `Pd, Qd` × `load_scale`, then each bus of
    `bus_multipliers` scaled.

    **Arguments:**

    - `case`: the feeder.
    - `load_scale`: multiplier of every load.
    - `bus_multipliers`: `{bus number: factor > 0}`, or `None`.
    - `preserve_feeder_totals`: rescale each feeder back to its total before the
      multipliers (which then move load along the feeder, not in or out of it).

    **Returns:**

    `(p, q)`, `(N,)` NumPy arrays [p.u.].
    """
    if not float(load_scale) > 0:
        raise ValueError(f"load_scale must be > 0, got {load_scale!r}")
    multipliers = {int(b): float(v) for b, v in (bus_multipliers or {}).items()}
    bad = {b: v for b, v in multipliers.items() if not (math.isfinite(v) and v > 0)}
    if bad:
        raise ValueError(f"bus load multipliers must be finite and > 0, got {bad}")
    base = float(case.base_mva)
    ids = np.asarray(case.node_ids)
    p = np.asarray(case.node_pd, np.float64) / base * float(load_scale)
    q = np.asarray(case.node_qd, np.float64) / base * float(load_scale)
    mult = np.array([multipliers.get(int(b), 1.0) for b in ids])
    p2, q2 = p * mult, q * mult
    if preserve_feeder_totals:
        for buses in DSO_FEEDERS.values():
            m = np.isin(ids, buses)
            if p2[m].sum() > 0:
                p2[m] *= p[m].sum() / p2[m].sum()
            if q2[m].sum() > 0:
                q2[m] *= q[m].sum() / q2[m].sum()
    return p2, q2


def feeder_to_bus_shapes(case: CaseData, shapes: np.ndarray) -> np.ndarray:
    """Feeder shapes (A, B, C) → per-bus shapes (other buses, e.g. the slack: 1).

    **Arguments:**

    - `case`: the feeder.
    - `shapes`: `(T, 3)` feeder shapes.

    **Returns:**

    A `(T, N)` NumPy array.
    """
    ids = np.asarray(case.node_ids)
    out = np.ones((shapes.shape[0], ids.size))
    for k, buses in enumerate(DSO_FEEDERS.values()):
        out[:, np.isin(ids, buses)] = shapes[:, k : k + 1]
    return out


def synthetic_feeder_shapes(n_steps: int = 48) -> np.ndarray:
    """The reference's analytic development shapes for feeders A, B, C (mean 1).

    **Arguments:**

    - `n_steps`: rows.

    **Returns:**

    A `(n_steps, 3)` NumPy array.
    """
    h = 24.0 * np.arange(n_steps) / n_steps
    g = lambda mu, s: np.exp(-0.5 * ((h - mu) / s) ** 2)  # noqa: E731
    shapes = np.stack([1 + 0.5 * g(18.5, 2), 1 + 0.3 * g(10, 3), 1 + 0.4 * g(12, 2) + 0.5 * g(19, 1.5)], axis=1)
    return shapes / shapes.mean(axis=0)


@functools.lru_cache(maxsize=8)
def feeder_shapes(split: str) -> np.ndarray:
    """Real feeder shapes of a split (mean 1 per feeder), from SimBench.

    **Arguments:**

    - `split`: data split.

    **Returns:**

    A `(T, 3)` NumPy array (feeders A, B, C).
    """
    from powerzoojax.data import DataLoader

    if split not in _SPLIT_DATA:
        raise ValueError(f"DSOTask: unknown split {split!r}; valid: {tuple(_SPLIT_DATA)}")
    window, regions = _SPLIT_DATA[split]
    frame = DataLoader().load_region_profiles(
        "load.actual_pu", source="simbench_feeders_2016", regions=list(regions), split=window
    )
    values = np.asarray(frame.values, np.float64)
    return values / values.mean(axis=0)


class DSOTask:
    """Frozen DSO benchmark (implements [`TaskSpec`][powerzoojax.core.TaskSpec]).

    **Arguments:**

    - `caps_mw`: curtailment and shift capacity of each of the six flexible loads [MW].
    - `v_slack`: substation voltage [p.u.].
    - `load_scale`: multiplier of the case's static loads.
    - `bus_multipliers`: `{bus number: factor}` moving load along the feeders.
    - `renormalise_feeders`: rescale each feeder to its total before the multipliers.
    - `synthetic`: use the synthetic feeder shapes instead of data.
    - `max_steps`: episode length [steps].
    - `v_min`, `v_max`: voltage band [p.u.].
    """

    task_name = "dso"
    default_splits = ("train", "iid", "summer_ood", "zone_holdout")

    def __init__(
        self,
        caps_mw: tuple = DSO_FROZEN_CAPS_MW,
        v_slack: float = 1.045,
        load_scale: float = 0.83,
        bus_multipliers: dict | None = DSO_BUS_MULTIPLIERS,
        renormalise_feeders: bool = True,
        synthetic: bool = False,
        max_steps: int = 48,
        v_min: float = 0.94,
        v_max: float = 1.06,
    ):
        self.caps_mw = tuple(float(c) for c in caps_mw)
        self.v_slack, self.load_scale, self.max_steps = float(v_slack), float(load_scale), int(max_steps)
        self.bus_multipliers = dict(bus_multipliers or {})
        self.renormalise_feeders, self.synthetic = bool(renormalise_feeders), bool(synthetic)
        self.v_min, self.v_max = float(v_min), float(v_max)
        self.case = load_case("33bw")
        self._base_p, self._base_q = self._base_loads()
        self._bundle = make_flexload_bundle(self.case, DSO_FLEX_BUSES, cap_curtail_mw=self.caps_mw, horizon=4)

    # -- data --------------------------------------------------------------------------------

    def _base_loads(self) -> tuple[np.ndarray, np.ndarray]:
        return dso_base_loads(self.case, self.load_scale, self.bus_multipliers, self.renormalise_feeders)

    def _shapes(self, split: str) -> np.ndarray:
        return synthetic_feeder_shapes(48) if self.synthetic else feeder_shapes(split)

    def _bus_shapes(self, shapes: np.ndarray) -> np.ndarray:
        return feeder_to_bus_shapes(self.case, shapes)

    def make_params(self, split: str = "train", start: int = 0, *, max_steps: int | None = None) -> DistGridParams:
        """Env params whose load rows are the `max_steps` rows of `split` from `start` (wrapping
        around the split).

        **Arguments:**

        - `split`: data split.
        - `start`: first row.
        - `max_steps`: episode length [steps]; `None` takes the task's.

        **Returns:**

        [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
        """
        n = self.max_steps if max_steps is None else int(max_steps)
        shapes = self._shapes(split)
        rows = (int(start) + np.arange(n)) % shapes.shape[0]
        bus = self._bus_shapes(shapes[rows])
        return make_dist_params(
            self.case, max_steps=n, steps_per_day=48, v_slack=self.v_slack, v_min=self.v_min, v_max=self.v_max,
            loss_penalty_weight=0.1, resources=(self._bundle,), include_der=False,
            p_load_profiles=bus * self._base_p, q_load_profiles=bus * self._base_q,
        )

    # -- TaskSpec ----------------------------------------------------------------------------

    def make_env(self, split: str = "train") -> DistGridEnv:
        return DistGridEnv()

    def episode_params(
        self, split: str, episode_idx: int, n_episodes: int, max_steps: int, *, strategy: str = "uniform",
        seed: int = 0,
    ) -> DistGridParams:
        n_rows = self._shapes(split).shape[0]
        if strategy == "uniform":
            span = max(n_rows - max_steps, 0)
            start = int(round(episode_idx * span / max(n_episodes - 1, 1))) if n_episodes > 1 else 0
        elif strategy == "seeded":
            start = int(np.random.default_rng(seed * 997 + episode_idx).integers(0, max(n_rows - max_steps, 1)))
        else:
            raise ValueError(f"DSOTask.episode_params: strategy must be 'uniform' or 'seeded', got {strategy!r}")
        return self.make_params(split, start, max_steps=max_steps)

    def train_params_bank(self) -> list[DistGridParams]:
        """The eight frozen training windows (`train_window_starts`).

        **Returns:**

        A list of eight [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
        """
        return [self.make_params("train", s) for s in DSO_TRAIN_WINDOW_STARTS]

    def rollout(self, env, params, key, policy_fn) -> EpisodeTrace:
        return episode_rollout(env, params, key, policy_fn)

    def baseline_names(self) -> tuple[str, ...]:
        return ("no_control", "tou", "droop")

    def baseline_policy(self, name: str, params: DistGridParams):
        """The policy of a named baseline.

        **Arguments:**

        - `name`: one of `baseline_names()`.
        - `params`: the episode's params.

        **Returns:**

        `policy(obs, state, key) -> action (12,)`.
        """
        n_dev = params.resources[0].n_devices
        bus_idx = params.resources[0].bus_idx
        spd = params.steps_per_day
        if name == "no_control":
            return lambda obs, state, key: jnp.zeros((2 * n_dev,), jnp.float32)
        if name == "tou":
            def tou(obs, state, key):
                t = state.time_step % spd
                on = ((t >= 16) & (t < 21)).astype(jnp.float32)
                return jnp.tile(jnp.asarray([0.8, 0.5], jnp.float32), n_dev) * on
            return tou
        if name == "droop":
            def droop(obs, state, key):
                v = state.v_mag[bus_idx]
                curtail = jnp.clip((0.96 - v) / 0.04, 0.0, 1.0)
                shift = jnp.clip((0.96 - v) / 0.06, 0.0, 0.5)
                return jnp.stack([curtail, shift], axis=1).reshape(-1)
            return droop
        raise ValueError(f"DSOTask: unknown baseline {name!r}; valid: {self.baseline_names()}")

    def baseline_rollout(self, env, params, key, name: str) -> EpisodeTrace:
        return episode_rollout(env, params, key, self.baseline_policy(name, params))

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout: EpisodeTrace | None = None) -> dict[str, float]:
        return dso_metrics(agent_rollout, baseline_rollout)

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("voltage_violation",), (0.0,), (1.0,))


def dso_metrics(trace: EpisodeTrace, baseline: EpisodeTrace | None = None, dt_hours: float = 0.5) -> dict[str, float]:
    """Episode metrics of an `EpisodeTrace` (leading time axis; extra leading axes are
    averaged).

    **Arguments:**

    - `trace`: the agent's trace.
    - `baseline`: a baseline trace, or `None`.
    - `dt_hours`: step length [hours].

    **Returns:**

    A dict of metric name to float.
    """
    info = jax.tree.map(np.asarray, trace.info)
    loss = info["p_loss_MW"]
    out = {
        "total_reward": float(np.asarray(trace.reward).sum(-1).mean()),
        "total_loss_mwh": float((loss * dt_hours).sum(-1).mean()),
        "mean_loss_mw": float(loss.mean()),
        "voltage_violations": float(info["cost_voltage_violation"].sum(-1).mean()),
        "voltage_violation_steps": float((info["cost_voltage_violation"] > 0).sum(-1).mean()),
        "thermal_violations": float(info["cost_thermal_overload"].sum(-1).mean()),
        "curtailed_mwh": float((info["resource_curtailed_mw"] * dt_hours).sum(-1).mean()),
        "shifted_mwh": float((info["resource_shift_out_mw"] * dt_hours).sum(-1).mean()),
        "served_flex_ratio": float(
            info["resource_shift_in_mw"].sum() / max(float(info["resource_shift_out_mw"].sum()), 1e-9)
        ),
        "peak_head_mw": float(info["p_head_MW"].max(-1).mean()),
    }
    if baseline is not None:
        b = jax.tree.map(np.asarray, baseline.info)
        b_loss = float(b["p_loss_MW"].sum())
        b_peak = float(b["p_head_MW"].max(-1).mean())
        out["network_loss_reduction_pct"] = 100.0 * (b_loss - float(loss.sum())) / max(b_loss, 1e-9)
        out["peak_shaving_pct"] = 100.0 * (b_peak - out["peak_head_mw"]) / max(b_peak, 1e-9)
    for k, v in out.items():
        if not math.isfinite(v):
            out[k] = float("nan")
    return out


# ----------------------------------------------------------------------------- reference API
# The reference's DSO factories, rollouts and metrics: dict-of-arrays rollout records,
# feeders named "feeder_A/B/C", module-default capacities. DSOTask above is the frozen
# benchmark; these build the same env from explicit arguments.

DSO_FEEDER_BUS_MAP: dict[str, list[int]] = {f"feeder_{name}": list(buses) for name, buses in DSO_FEEDERS.items()}
DSO_FLEXLOAD_CONFIG: list[dict] = [
    {"bus_id": bus, "curtail_cap_mw": cap, "shift_cap_mw": cap} for bus, cap in zip(DSO_FLEX_BUSES, DSO_MODULE_CAPS_MW)
]
DSO_V_MIN = 0.94
DSO_V_MAX = 1.06
# Rollout record key -> env info key (one (T,) array each).
_DSO_RECORD = {
    "losses": "p_loss_MW", "violations": "n_violations", "voltage_violations": "cost_voltage_violation",
    "thermal_violations": "cost_thermal_overload", "curtailed": "resource_curtailed_mw",
    "shifted": "resource_shift_out_mw", "shift_in": "resource_shift_in_mw",
}
_COST_MODES = ("voltage_only", "aggregate")


def _dso_case(case: CaseData | None) -> CaseData:
    return load_case("33bw") if case is None else case


def _feeder_array(feeder_shapes: dict[str, Any]) -> np.ndarray:
    """`{"feeder_A": (T,), ...}` → `(T, 3)`; a missing feeder keeps shape 1."""
    unknown = set(feeder_shapes) - set(DSO_FEEDER_BUS_MAP)
    if unknown:
        raise ValueError(f"unknown feeders {sorted(unknown)}; valid: {list(DSO_FEEDER_BUS_MAP)}")
    lengths = {len(np.asarray(v).reshape(-1)) for v in feeder_shapes.values()}
    if not feeder_shapes or 0 in lengths:
        raise ValueError("feeder_shapes must hold at least one non-empty shape")
    n = min(lengths)
    cols = [np.asarray(feeder_shapes[f], np.float64).reshape(-1)[:n] if f in feeder_shapes else np.ones(n)
            for f in DSO_FEEDER_BUS_MAP]
    return np.stack(cols, axis=1)


def make_synthetic_feeder_shapes(
    max_steps: int = 48,
    *,
    peak_ratio: float = 1.5,
    peak_hour_start: int = 17,
    peak_hour_end: int = 21,
    steps_per_day: int = 48,
) -> dict[str, np.ndarray]:
    """Synthetic diurnal feeder shapes, each with mean 1.

    Hour of day `h = 24·(t mod steps_per_day)/steps_per_day`, so longer shapes repeat
    daily: A residential evening peak `1 + (peak_ratio − 1)·e^{−½((h−18.5)/2)²}`, B flat
    with a morning bump `1 + 0.3 e^{−½((h−10)/3)²}`, C twin peaks
    `1 + 0.4 e^{−½((h−12)/2)²} + 0.5 e^{−½((h−19)/1.5)²}`.

    **Arguments:**

    - `max_steps`: length of each shape.
    - `peak_ratio`: evening peak of feeder A over its base.
    - `peak_hour_start`, `peak_hour_end`: accepted for the reference's signature; the
      evening peak is fixed at 18.5 h.
    - `steps_per_day`: steps in one day.

    **Returns:**

    `{"feeder_A", "feeder_B", "feeder_C"}` → `(max_steps,)` float32 arrays.
    """
    del peak_hour_start, peak_hour_end
    if int(max_steps) < 1 or int(steps_per_day) < 1:
        raise ValueError(f"max_steps and steps_per_day must be >= 1, got {max_steps!r}, {steps_per_day!r}")
    h = 24.0 * (np.arange(int(max_steps)) % int(steps_per_day)) / int(steps_per_day)
    g = lambda mu, sd: np.exp(-0.5 * ((h - mu) / sd) ** 2)  # noqa: E731
    shapes = {
        "feeder_A": 1.0 + (float(peak_ratio) - 1.0) * g(18.5, 2.0),
        "feeder_B": 1.0 + 0.3 * g(10.0, 3.0),
        "feeder_C": 1.0 + 0.4 * g(12.0, 2.0) + 0.5 * g(19.0, 1.5),
    }
    return {k: (v / v.mean()).astype(np.float32) for k, v in shapes.items()}


def _data_dir_of(data_loader: Any) -> Any:
    if data_loader is None or isinstance(data_loader, (str, os.PathLike)):
        return data_loader
    return getattr(data_loader, "data_dir", None)


def load_feeder_shape(data_loader: Any, feeder: str, role: str = "train", *, resample: str = "30min") -> np.ndarray:
    """Mean Ausgrid load of a feeder's substations over the window and days of `role`,
    resampled and normalised to mean 1.

    **Arguments:**

    - `data_loader`: a `DataLoader(data_dir=...)` or the folder holding the Ausgrid file.
    - `feeder`: `feeder_A`, `feeder_B` or `feeder_C`.
    - `role`: split role (see `powerzoojax.data.ausgrid_utils`).
    - `resample`: output step.

    **Returns:**

    A `(T,)` float32 NumPy array.

    Raises:
        FileNotFoundError: naming the file, when it is not in that folder (the Ausgrid data
            are not shipped; [`load_dso_feeder_shapes`][powerzoojax.grid.tasks.dso.load_dso_feeder_shapes]
            has the shipped substitute).
    """
    from powerzoojax.data.ausgrid_utils import get_feeder_substations, load_substation_profiles

    substations = get_feeder_substations(feeder, role)
    loads = load_substation_profiles(_data_dir_of(data_loader), substations, role, resample=resample)
    mean = loads.mean(axis=1)
    return (mean / max(float(mean.mean()), 1e-8)).astype(np.float32)


def load_dso_feeder_shapes(
    data_loader: Any = None, role: str = "train", *, resample: str = "30min", source: str | None = None
) -> dict[str, np.ndarray]:
    """The three feeder shapes of a split role, each mean 1.

    **Arguments:**

    - `data_loader`: a `DataLoader(data_dir=...)` or a folder; `None` for the shipped data.
    - `role`: `train`, `iid`, `summer_ood` or `zone_holdout`.
    - `resample`: output step.
    - `source`: `"ausgrid"` ([`load_feeder_shape`][powerzoojax.grid.tasks.dso.load_feeder_shape]
      per feeder; the file is then required), `"simbench"` (the shipped SimBench 2016
      feeder profiles [`DSOTask`][powerzoojax.grid.tasks.dso.DSOTask] uses in its place) or
      `None` (Ausgrid when the loader's folder holds the file, else SimBench).

    **Returns:**

    `{"feeder_A", "feeder_B", "feeder_C"}` → `(T,)` float32 arrays.
    """
    from powerzoojax.data.ausgrid_utils import find_ausgrid_file, get_ausgrid_split

    get_ausgrid_split(role)  # validates the role
    if source not in (None, "ausgrid", "simbench"):
        raise ValueError(f"unknown feeder-shape source {source!r}; valid: None, 'ausgrid', 'simbench'")
    if source is None:
        try:
            find_ausgrid_file(_data_dir_of(data_loader))
            source = "ausgrid"
        except FileNotFoundError:
            source = "simbench"
    if source == "ausgrid":
        return {f: load_feeder_shape(data_loader, f, role, resample=resample) for f in DSO_FEEDER_BUS_MAP}
    if resample != "30min":
        raise ValueError(f"the SimBench feeder profiles are half-hourly; resample must be '30min', got {resample!r}")
    shapes = feeder_shapes(role)
    return {f: shapes[:, k].astype(np.float32) for k, f in enumerate(DSO_FEEDER_BUS_MAP)}


def concat_dso_feeder_windows(
    feeder_shapes: dict[str, Any], window_starts: list[int], *, window_len: int = 48
) -> dict[str, np.ndarray]:
    """Each feeder's windows `[s, s + window_len)` (wrapping) for `s` in `window_starts`,
    concatenated: a training bank of chosen days.

    **Arguments:**

    - `feeder_shapes`: `{feeder name: (T,) shape}`.
    - `window_starts`: first rows of the windows.
    - `window_len`: rows per window.

    **Returns:**

    `{feeder name: (len(window_starts)·window_len,) array}`.
    """
    if int(window_len) < 1 or not window_starts:
        raise ValueError("window_len must be >= 1 and window_starts non-empty")
    out = {}
    for name, shape in feeder_shapes.items():
        arr = np.asarray(shape, np.float32).reshape(-1)
        if arr.size == 0:
            raise ValueError(f"feeder {name!r} has an empty shape")
        rows = (np.asarray(window_starts, np.int64)[:, None] + np.arange(int(window_len))[None, :]) % arr.size
        out[name] = arr[rows.reshape(-1)]
    return out


def make_dso_load_profiles(
    case: CaseData,
    feeder_shapes: dict[str, Any],
    *,
    max_steps: int = 48,
    episode_start: int = 0,
    load_scale: float = 1.0,
    bus_load_scale_overrides: dict | None = None,
    preserve_feeder_totals: bool = False,
) -> tuple[Float[Array, "T N"], Float[Array, "T N"]]:
    """Per-bus load profiles: static base load ([`dso_base_loads`][powerzoojax.grid.tasks.dso.dso_base_loads])
    × its feeder's shape at `(episode_start + t) mod T`; buses outside the three feeders
    (the slack) keep their base load.

    **Arguments:**

    - `case`: the feeder.
    - `feeder_shapes`: `{feeder name: (T,) shape}`.
    - `max_steps`: rows of the profile.
    - `episode_start`: first row of the shapes.
    - `load_scale`, `bus_load_scale_overrides`, `preserve_feeder_totals`: as for
      `dso_base_loads` (`bus_multipliers`).

    **Returns:**

    `(p, q)`, each `(max_steps, N)` [p.u.].
    """
    if int(max_steps) < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
    shapes = _feeder_array(feeder_shapes)
    rows = (int(episode_start) + np.arange(int(max_steps))) % shapes.shape[0]
    bus = feeder_to_bus_shapes(case, shapes[rows])
    p, q = dso_base_loads(case, load_scale, bus_load_scale_overrides, preserve_feeder_totals)
    return jnp.asarray(bus * p, jnp.float32), jnp.asarray(bus * q, jnp.float32)


def resolve_dso_flexload_config(
    *, flexload_config: list[dict] | None = None, flexload_bus_ids: list[int] | None = None
) -> list[dict]:
    """The flexible-load layout.

    **Arguments:**

    - `flexload_config`: full per-device dicts; used as given when not `None`.
    - `flexload_bus_ids`: buses replacing those of `DSO_FLEXLOAD_CONFIG` (same count).

    **Returns:**

    A list of per-device dicts.
    """
    if flexload_config is not None:
        config = [dict(c) for c in flexload_config]
        for c in config:
            missing = {"bus_id", "curtail_cap_mw", "shift_cap_mw"} - set(c)
            if missing:
                raise ValueError(f"flexload_config entry {c} lacks {sorted(missing)}")
        return config
    config = [dict(c) for c in DSO_FLEXLOAD_CONFIG]
    if flexload_bus_ids is not None:
        if len(flexload_bus_ids) != len(config):
            raise ValueError(f"flexload_bus_ids must name {len(config)} buses, got {list(flexload_bus_ids)}")
        for c, bus in zip(config, flexload_bus_ids):
            c["bus_id"] = int(bus)
    return config


def make_dso_flexload_bundle(
    case: CaseData,
    *,
    shift_horizon: int = 4,
    curtail_cost_per_mwh: float = 50.0,
    shift_cost_per_mwh: float = 10.0,
    dt_hours: float = 0.5,
    flexload_config: list[dict] | None = None,
) -> FlexLoadBundle:
    """The DSO's flexible loads on `case` (bus numbers resolved through `case.node_ids`).

    **Arguments:**

    - `case`: the feeder.
    - `shift_horizon`: steps a shifted load is spread over.
    - `curtail_cost_per_mwh`, `shift_cost_per_mwh`: costs of curtailed and shifted
      energy [$/MWh].
    - `dt_hours`: step length [hours].
    - `flexload_config`: per-device dicts; `None` takes `DSO_FLEXLOAD_CONFIG` (six devices,
      action 12, obs 30).

    **Returns:**

    A [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle].
    """
    config = resolve_dso_flexload_config(flexload_config=flexload_config)
    return make_flexload_bundle(
        case, [c["bus_id"] for c in config], cap_curtail_mw=[c["curtail_cap_mw"] for c in config],
        cap_shift_mw=[c["shift_cap_mw"] for c in config], horizon=shift_horizon,
        curtail_cost=curtail_cost_per_mwh, holding_cost=shift_cost_per_mwh, dt_hours=dt_hours,
    )


def make_dso_params(
    case: CaseData | None = None,
    *,
    feeder_shapes: dict[str, Any] | None = None,
    max_steps: int = 48,
    steps_per_day: int = 48,
    episode_start: int = 0,
    load_scale: float = 1.0,
    v_slack: float = 1.0,
    v_min: float = DSO_V_MIN,
    v_max: float = DSO_V_MAX,
    loss_penalty_weight: float = 0.1,
    shift_horizon: int = 4,
    curtail_cost_per_mwh: float = 50.0,
    shift_cost_per_mwh: float = 10.0,
    dt_hours: float = 0.5,
    flexload_config: list[dict] | None = None,
    flexload_bus_ids: list[int] | None = None,
    bus_load_scale_overrides: dict | None = None,
    preserve_feeder_totals: bool = False,
    cost_mode: str = "voltage_only",
) -> DistGridParams:
    """DSO env params in one call.

    `case` with the flexible loads of `flexload_config` / `flexload_bus_ids`, no per-bus
    DER actions, band `[v_min, v_max]`, and load profiles from `feeder_shapes`.

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `feeder_shapes`: see [`make_dso_load_profiles`][powerzoojax.grid.tasks.dso.make_dso_load_profiles];
      `None` takes the synthetic shapes (for development, not the benchmark).
    - `max_steps`: episode length [steps].
    - `steps_per_day`: steps in one day.
    - `episode_start`: first row of the shapes.
    - `load_scale`: multiplier of the static loads.
    - `v_slack`: substation voltage [p.u.].
    - `v_min`, `v_max`: voltage band [p.u.].
    - `loss_penalty_weight`: weight of the network losses in the reward.
    - `shift_horizon`, `curtail_cost_per_mwh`, `shift_cost_per_mwh`, `dt_hours`: as for
      `make_dso_flexload_bundle`.
    - `flexload_config`: per-device dicts; `None` takes `DSO_FLEXLOAD_CONFIG`.
    - `flexload_bus_ids`: buses replacing those of `DSO_FLEXLOAD_CONFIG` (same count).
    - `bus_load_scale_overrides`, `preserve_feeder_totals`: as for `dso_base_loads`.
    - `cost_mode`: accepted for old configs; no effect.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    if cost_mode not in _COST_MODES:
        raise ValueError(f"unknown cost_mode {cost_mode!r}; valid (inert): {_COST_MODES}")
    case = _dso_case(case)
    shapes = make_synthetic_feeder_shapes(max_steps, steps_per_day=steps_per_day) if feeder_shapes is None else feeder_shapes
    p, q = make_dso_load_profiles(
        case, shapes, max_steps=max_steps, episode_start=episode_start, load_scale=load_scale,
        bus_load_scale_overrides=bus_load_scale_overrides, preserve_feeder_totals=preserve_feeder_totals,
    )
    config = resolve_dso_flexload_config(flexload_config=flexload_config, flexload_bus_ids=flexload_bus_ids)
    bundle = make_dso_flexload_bundle(
        case, shift_horizon=shift_horizon, curtail_cost_per_mwh=curtail_cost_per_mwh,
        shift_cost_per_mwh=shift_cost_per_mwh, dt_hours=dt_hours, flexload_config=config,
    )
    return make_dist_params(
        case, max_steps=max_steps, steps_per_day=steps_per_day, v_slack=v_slack, v_min=v_min, v_max=v_max,
        loss_penalty_weight=loss_penalty_weight, resources=(bundle,), include_der=False,
        p_load_profiles=p, q_load_profiles=q, delta_t_hours=dt_hours,
    )


def make_dso_params_from_split(
    case: CaseData | None = None, *, role: str = "train", data_loader: Any = None, resample: str = "30min", **kwargs: Any
) -> DistGridParams:
    """[`make_dso_params`][powerzoojax.grid.tasks.dso.make_dso_params] on the feeder shapes of a
    split role.

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `role`: split role.
    - `data_loader`: see [`load_dso_feeder_shapes`][powerzoojax.grid.tasks.dso.load_dso_feeder_shapes]
      (Ausgrid when available, else the shipped substitute).
    - `resample`: step of the shapes.
    - `**kwargs`: further keywords of `make_dso_params`.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    shapes = load_dso_feeder_shapes(data_loader, role, resample=resample)
    return make_dso_params(case, feeder_shapes=shapes, **kwargs)


def make_dso_1flex_params(
    case: CaseData | None = None, *, bus_id: int = 18, curtail_cap_mw: float = 0.1, shift_cap_mw: float = 0.1, **kwargs: Any
) -> DistGridParams:
    """[`make_dso_params`][powerzoojax.grid.tasks.dso.make_dso_params] with one flexible load
    (action 2).

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `bus_id`: bus number of the flexible load.
    - `curtail_cap_mw`, `shift_cap_mw`: its capacities [MW].
    - `**kwargs`: further keywords of `make_dso_params`.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    config = [{"bus_id": int(bus_id), "curtail_cap_mw": float(curtail_cap_mw), "shift_cap_mw": float(shift_cap_mw)}]
    return make_dso_params(case, flexload_config=config, **kwargs)


def make_dso_params_nonstationary(
    case: CaseData | None = None,
    *,
    feeder_shapes: dict[str, Any] | None = None,
    episode_idx: int = 0,
    total_episodes: int = 500,
    key: Any = None,
    drift_rate: float = 3e-4,
    rolling_sigma_steps: float = 720.0,
    mode: str = "train",
    max_steps: int = 48,
    **kwargs: Any,
) -> DistGridParams:
    """[`make_dso_params`][powerzoojax.grid.tasks.dso.make_dso_params] for one episode of a
    non-stationary schedule ([`NonstationarySampler`][powerzoojax.data.NonstationarySampler]):
    its window start and load drift (P and Q × `drift_factor`).

    **Arguments:**

    - `case`: the feeder; `None` takes case33bw.
    - `feeder_shapes`: shapes spanning the whole training window; `None` takes synthetic
      shapes of `max(2·total_episodes, 10·max_steps)` steps.
    - `episode_idx`: index of the episode.
    - `total_episodes`, `drift_rate`, `rolling_sigma_steps`: as for the sampler.
    - `key`: PRNG key of the draw; `None` takes `PRNGKey(episode_idx)`.
    - `mode`: sampler mode.
    - `max_steps`: episode length [steps].
    - `**kwargs`: further keywords of `make_dso_params`.

    **Returns:**

    [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
    """
    from powerzoojax.data import NonstationarySampler, apply_drift

    if feeder_shapes is None:
        feeder_shapes = make_synthetic_feeder_shapes(max(2 * int(total_episodes), 10 * int(max_steps)))
    total = _feeder_array(feeder_shapes).shape[0]
    sampler = NonstationarySampler(
        total, total_episodes, max_steps=max_steps, drift_rate=drift_rate, rolling_sigma_steps=rolling_sigma_steps
    )
    config = sampler.sample(episode_idx, jax.random.PRNGKey(int(episode_idx)) if key is None else key, mode=mode)
    params = make_dso_params(case, feeder_shapes=feeder_shapes, max_steps=max_steps,
                             episode_start=config.episode_start, **kwargs)
    p, q = apply_drift(params.p_load_profiles, params.q_load_profiles, config.drift_factor)
    return params.with_load_profiles(jnp.asarray(p), jnp.asarray(q))


def rollout_dso(env: DistGridEnv, params: DistGridParams, key, policy_fn, max_steps: int | None = None) -> dict[str, Array]:
    """One episode (one `lax.scan`) of `policy_fn`.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key.
    - `policy_fn`: `policy(obs, state, key) -> action`.
    - `max_steps`: episode length; `None` takes `params.max_steps`.

    **Returns:**

    `{"rewards", "losses", "violations", "voltage_violations", "thermal_violations",
    "curtailed", "shifted", "shift_in"}`, each `(max_steps,)`.
    """
    trace = episode_rollout(env, params, key, policy_fn, n_steps=max_steps)
    return {"rewards": trace.reward, **{k: trace.info[v] for k, v in _DSO_RECORD.items()}}


def _flex_bundle(params: DistGridParams) -> FlexLoadBundle:
    for bundle in params.resources:
        if isinstance(bundle, FlexLoadBundle):
            return bundle
    raise ValueError("DSO baselines need a FlexLoadBundle in params.resources")


def _dso_action_dim(params: DistGridParams) -> int:
    return sum(b.action_dim for b in params.resources) + (params.network.n_nodes - 1) * int(params.include_der)


def dso_no_control_rollout(env: DistGridEnv, params: DistGridParams, key) -> dict[str, Array]:
    """Baseline: zero action every step.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_dso`.

    **Returns:**

    The [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.
    """
    zeros = jnp.zeros((_dso_action_dim(params),), jnp.float32)
    return rollout_dso(env, params, key, lambda obs, state, k: zeros)


def _flex_action(params: DistGridParams, flex_action: Array) -> Array:
    """Place the flexible loads' `(2·n_dev,)` action in the env's full action vector."""
    out = jnp.zeros((_dso_action_dim(params),), jnp.float32)
    start = (params.network.n_nodes - 1) * int(params.include_der)
    for bundle in params.resources:
        if isinstance(bundle, FlexLoadBundle):
            return out.at[start : start + bundle.action_dim].set(flex_action)
        start += bundle.action_dim
    raise ValueError("DSO baselines need a FlexLoadBundle in params.resources")


def dso_tou_rule_based_rollout(env: DistGridEnv, params: DistGridParams, key, peak_start: int = 16, peak_end: int = 21) -> dict[str, Array]:
    """Time-of-use rule: every device curtails 80 % and shifts out 50 % on day steps
    `[peak_start, peak_end)`, nothing otherwise.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_dso`.
    - `peak_start`, `peak_end`: peak window [steps of the day].

    **Returns:**

    The [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.
    """
    n_dev = _flex_bundle(params).n_devices
    spd = params.steps_per_day

    def policy(obs, state, k):
        t = state.time_step % spd
        on = ((t >= peak_start) & (t < peak_end)).astype(jnp.float32)
        return _flex_action(params, jnp.tile(jnp.asarray([0.8, 0.5], jnp.float32), n_dev) * on)

    return rollout_dso(env, params, key, policy)


def dso_droop_rule_based_rollout(env: DistGridEnv, params: DistGridParams, key, v_low: float = 0.96, v_high: float = 1.04) -> dict[str, Array]:
    """Voltage-droop rule per device from its bus voltage.

    Curtail `clip((v_low − v)/0.04, 0, 1)`, shift out `clip((v_low − v)/0.06, 0, 0.5)`; at
    `v ≥ v_low` no action, so deferred load is released.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_dso`.
    - `v_low`: voltage below which devices act [p.u.].
    - `v_high`: upper band edge [p.u.] (no action above `v_low`).

    **Returns:**

    The [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.
    """
    del v_high  # above the band the rule already does nothing
    bus_idx = _flex_bundle(params).bus_idx

    def policy(obs, state, k):
        v = state.v_mag[bus_idx]
        curtail = jnp.clip((v_low - v) / 0.04, 0.0, 1.0)
        shift = jnp.clip((v_low - v) / 0.06, 0.0, 0.5)
        return _flex_action(params, jnp.stack([curtail, shift], axis=1).reshape(-1))

    return rollout_dso(env, params, key, policy)


dso_tou_heuristic_rollout = dso_tou_rule_based_rollout
dso_droop_heuristic_rollout = dso_droop_rule_based_rollout


def compute_dso_metrics(rollout_results: dict, baseline_results: dict | None = None, dt_hours: float = 0.5) -> dict[str, float | None]:
    """Episode metrics of a [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.

    Rewards, losses [MWh, MW], violation counts (totals and per step), curtailed /
    shifted / released energy [MWh], `served_flex_ratio` (released / shifted out; 0
    without shifting); with a baseline, `network_loss_reduction_pct` and
    `peak_shaving_pct` (of the peak loss), else `None`.

    **Arguments:**

    - `rollout_results`: the agent's record.
    - `baseline_results`: the no-control record, or `None`.
    - `dt_hours`: step length [hours].

    **Returns:**

    A dict of metric name to float (or `None`).
    """
    r = {k: np.asarray(v, np.float64) for k, v in rollout_results.items()}
    losses, shifted, shift_in = r["losses"], r["shifted"], r["shift_in"]
    volt = r["voltage_violations"]
    therm = r.get("thermal_violations", np.zeros_like(volt))
    n = max(int(losses.shape[-1]), 1)
    out: dict[str, float | None] = {
        "total_reward": float(r["rewards"].sum()),
        "total_loss_mwh": float(losses.sum() * dt_hours),
        "mean_loss_mw": float(losses.mean()),
        "total_voltage_violations": float(volt.sum()),
        "total_thermal_overloads": float(therm.sum()),
        "total_violations": float(volt.sum() + therm.sum()),
        "voltage_violation_count_per_step": float(volt.sum() / n),
        "thermal_overload_count_per_step": float(therm.sum() / n),
        "total_curtailed_mwh": float(r["curtailed"].sum() * dt_hours),
        "total_shifted_mwh": float(shifted.sum() * dt_hours),
        "total_shift_in_mwh": float(shift_in.sum() * dt_hours),
        "served_flex_ratio": float(shift_in.sum() / shifted.sum()) if shifted.sum() > 0 else 0.0,
        "network_loss_reduction_pct": None,
        "peak_shaving_pct": None,
    }
    if baseline_results is not None:
        base = np.asarray(baseline_results["losses"], np.float64)
        out["network_loss_reduction_pct"] = float(100.0 * (base.sum() - losses.sum()) / base.sum()) if base.sum() > 1e-8 else 0.0
        out["peak_shaving_pct"] = float(100.0 * (base.max() - losses.max()) / base.max()) if base.max() > 1e-8 else 0.0
    return out


__all__ = [
    "DSO_BUS_MULTIPLIERS", "DSO_FEEDERS", "DSO_FEEDER_BUS_MAP", "DSO_FLEXLOAD_CONFIG", "DSO_FLEX_BUSES",
    "DSO_FROZEN_CAPS_MW", "DSO_MODULE_CAPS_MW", "DSO_TRAIN_WINDOW_STARTS", "DSO_V_MAX", "DSO_V_MIN", "DSOTask",
    "compute_dso_metrics", "concat_dso_feeder_windows", "dso_base_loads", "dso_droop_heuristic_rollout",
    "dso_droop_rule_based_rollout", "dso_metrics", "dso_no_control_rollout", "dso_tou_heuristic_rollout",
    "dso_tou_rule_based_rollout", "feeder_shapes", "feeder_to_bus_shapes", "load_dso_feeder_shapes",
    "load_feeder_shape", "make_dso_1flex_params", "make_dso_flexload_bundle", "make_dso_load_profiles",
    "make_dso_params", "make_dso_params_from_split", "make_dso_params_nonstationary",
    "make_synthetic_feeder_shapes", "resolve_dso_flexload_config", "rollout_dso", "synthetic_feeder_shapes",
]
