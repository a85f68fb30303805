"""Load profiles of the DSO feeder: the static bus loads, the feeder shapes (shipped
SimBench substitutes, Ausgrid when its file is present, or the synthetic shapes) and
their spreading onto the buses.
"""

import functools
import math
import os
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from powerzoojax.case import CaseData
from powerzoojax.grid.tasks.dso._constants import DSO_FEEDERS, DSO_FEEDER_BUS_MAP, _SPLIT_DATA


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
