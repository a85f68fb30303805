"""The evaluation protocol's bookkeeping and statistics, host-side NumPy only.

A finished evaluation is a [`RunRecord`][powerzoojax.rl.training.RunRecord] `{task, algo, seed, run_id, status, split,
metrics, walltime_s, throughput_sps, timestamp}`; [`write_manifest`][powerzoojax.rl.training.write_manifest] merges records
into `<results>/manifest.json` (keyed by `run_id` and split) and [`summarize`][powerzoojax.rl.training.summarize]
turns a manifest into `<summary>/latest.json`: per task, algorithm and split the mean,
std, IQM and a bootstrap 95 % CI of a metric across seeds, the NormScore against the
task's baselines (diagnostic: `norm_score_status`), and whether the rows are
leaderboard-eligible (only `status == "ok"` rows are; unsafe or failed rows are
reported but not eligible). [`paired_sign_flip_test`][powerzoojax.rl.training.paired_sign_flip_test] compares two algorithms
seed by seed on the primary split.
"""

import dataclasses
import datetime
import itertools
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

STATUSES = ("ok", "unsafe", "failed")
Sample = Sequence[float] | np.ndarray  # one value per seed


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One (task, algorithm, seed, split) evaluation.

    **Arguments:**

    - `task`: task name.
    - `algo`: algorithm name.
    - `seed`: training seed.
    - `run_id`: identifier of the run.
    - `status`: `ok`, `unsafe` (a safety gate failed: reported, not
      leaderboard-eligible) or `failed`.
    - `split`: evaluation split.
    - `metrics`: metric name → value.
    - `walltime_s`: training wall time [s].
    - `throughput_sps`: env steps per second, or `None`.
    - `timestamp`: ISO time of the record.
    """

    task: str
    algo: str
    seed: int
    run_id: str
    status: str
    split: str
    metrics: dict[str, float]
    walltime_s: float
    throughput_sps: float | None = None
    timestamp: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"RunRecord: status must be one of {STATUSES}, got {self.status!r}")
        if not self.timestamp:
            stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            object.__setattr__(self, "timestamp", stamp)

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict.

        **Returns:**

        A dict of the fields.
        """
        d = dataclasses.asdict(self)
        d["metrics"] = {k: _finite_or_none(v) for k, v in self.metrics.items()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunRecord":
        """A record from a dict written by `to_dict`.

        **Arguments:**

        - `d`: the dict.

        **Returns:**

        The [`RunRecord`][powerzoojax.rl.training.RunRecord].
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in d.items() if k in fields}
        data["metrics"] = {k: (math.nan if v is None else float(v)) for k, v in d.get("metrics", {}).items()}
        return cls(**data)


def _finite_or_none(v: Any) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


def write_manifest(records: Iterable[RunRecord], results_dir: str | os.PathLike) -> str:
    """Merge `records` into `<results_dir>/manifest.json` (a record replaces an earlier one
    with the same `run_id` and `split`).

    **Arguments:**

    - `records`: the run records.
    - `results_dir`: the results folder.

    **Returns:**

    The manifest's path.
    """
    path = os.path.join(os.fspath(results_dir), "manifest.json")
    runs = {(r.run_id, r.split): r for r in load_manifest(results_dir)} if os.path.exists(path) else {}
    for r in records:
        runs[(r.run_id, r.split)] = r
    os.makedirs(os.fspath(results_dir), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"runs": [r.to_dict() for r in runs.values()]}, f, indent=2)
    return path


def load_manifest(results_dir: str | os.PathLike) -> list[RunRecord]:
    """The records of `<results_dir>/manifest.json`.

    **Arguments:**

    - `results_dir`: the results folder.

    **Returns:**

    A list of [`RunRecord`][powerzoojax.rl.training.RunRecord].
    """
    with open(os.path.join(os.fspath(results_dir), "manifest.json")) as f:
        return [RunRecord.from_dict(d) for d in json.load(f)["runs"]]


# -- statistics ------------------------------------------------------------------------


def iqm(x: Sample) -> float:
    """Interquartile mean: the mean of the middle 50 % (25 % trimmed from each end, as
    `scipy.stats.trim_mean(x, 0.25)`).

    **Arguments:**

    - `x`: one value per seed.

    **Returns:**

    A float.
    """
    x = np.sort(np.asarray(x, np.float64))
    n = x.size
    if n == 0:
        raise ValueError("iqm of an empty sample")
    cut = int(0.25 * n)
    return float(np.mean(x[cut : n - cut]))


def bootstrap_ci(
    x: Sample, statistic: Callable[[np.ndarray], float] = np.mean, *, confidence: float = 0.95,
    n_resamples: int = 10_000, seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of `statistic` over the seeds `x`.

    **Arguments:**

    - `x`: one value per seed.
    - `statistic`: the statistic, `np.mean` by default.
    - `confidence`: coverage of the interval.
    - `n_resamples`: bootstrap resamples.
    - `seed`: seed of the resampling.

    **Returns:**

    `(low, high)`.
    """
    x = np.asarray(x, np.float64)
    if x.size == 0:
        raise ValueError("bootstrap_ci of an empty sample")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_resamples, x.size))
    stats = np.asarray([statistic(x[i]) for i in idx], np.float64)
    alpha = 0.5 * (1.0 - confidence)
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def paired_sign_flip_test(
    a: Sample, b: Sample, *, n_resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided p-value that paired samples `a` and `b` (same seeds) have the same mean.

    The mean difference is compared with its distribution under random sign flips of the
    per-seed differences (all `2^n` flips when `n ≤ 16`, else `n_resamples` random ones).

    **Arguments:**

    - `a`, `b`: one value per seed each, paired.
    - `n_resamples`: random flips when `n > 16`.
    - `seed`: seed of the flips.

    **Returns:**

    The p-value.
    """
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"paired_sign_flip_test: a and b must be equal-length 1-D samples, got {np.shape(a)}, {np.shape(b)}")
    observed = abs(d.mean())
    if d.size <= 16:
        signs = np.asarray(list(itertools.product((1.0, -1.0), repeat=d.size)))
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(n_resamples, d.size))
    null = np.abs((signs * d).mean(axis=1))
    # A small tolerance: flips that reproduce the observed mean count as "as extreme".
    return float(np.mean(null >= observed * (1.0 - 1e-12)))


def norm_score(value: float, floor: float, ceiling: float) -> float:
    """`(value − floor) / (ceiling − floor)`: 0 at the floor baseline, 1 at the ceiling one.

    **Arguments:**

    - `value`: the score.
    - `floor`, `ceiling`: scores of the weak and strong baselines.

    **Returns:**

    A float.
    """
    if ceiling == floor:
        raise ValueError(f"norm_score: floor and ceiling baselines are equal ({floor})")
    return float((value - floor) / (ceiling - floor))


def summarize(
    records: Iterable[RunRecord], metric: str, *, baselines: Mapping[str, tuple[float, float]] | None = None,
    summary_dir: str | os.PathLike | None = None, n_resamples: int = 10_000, seed: int = 0,
) -> dict[str, Any]:
    """Per `task → algo → split` summary of `metric` over seeds.

    Each entry has `n_seeds`, `mean`, `std` (ddof 1), `iqm`, `ci95` (bootstrap of the
    mean), `leaderboard_eligible` (every row `ok`), `n_unsafe` and, with a baseline,
    `norm_score` (of the IQM) with `norm_score_status = "ok"`. Rows without a finite
    `metric` are counted in `n_missing` and left out.

    **Arguments:**

    - `records`: the run records.
    - `metric`: the metric name.
    - `baselines`: `{task: (floor, ceiling)}` for the normalised score.
    - `summary_dir`: also write the summary to `<summary_dir>/latest.json`.
    - `n_resamples`: bootstrap resamples.
    - `seed`: seed of the bootstrap.

    **Returns:**

    The nested summary dict.
    """
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.task, r.algo, r.split), []).append(r)
    out: dict[str, Any] = {"metric": metric, "tasks": {}}
    for (task, algo, split), rows in sorted(groups.items()):
        values = np.asarray([r.metrics.get(metric, math.nan) for r in rows], np.float64)
        ok = np.isfinite(values)
        entry: dict[str, Any] = {
            "n_seeds": int(ok.sum()),
            "n_missing": int((~ok).sum()),
            "n_unsafe": sum(r.status == "unsafe" for r in rows),
            "leaderboard_eligible": all(r.status == "ok" for r in rows),
        }
        v = values[ok]
        if v.size:
            entry.update(
                mean=float(v.mean()), std=float(v.std(ddof=1)) if v.size > 1 else 0.0, iqm=iqm(v),
                ci95=list(bootstrap_ci(v, n_resamples=n_resamples, seed=seed)),
            )
            if baselines and task in baselines:
                entry["norm_score"] = norm_score(entry["iqm"], *baselines[task])
                entry["norm_score_status"] = "ok"
        out["tasks"].setdefault(task, {}).setdefault(algo, {})[split] = entry
    if summary_dir is not None:
        os.makedirs(os.fspath(summary_dir), exist_ok=True)
        with open(os.path.join(os.fspath(summary_dir), "latest.json"), "w") as f:
            json.dump(out, f, indent=2)
    return out
