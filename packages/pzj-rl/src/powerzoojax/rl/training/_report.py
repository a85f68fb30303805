"""What a run shows while it trains and leaves behind: metrics files, learning curve, progress line."""

import csv
import io
import json
import math
import os
import time
from typing import Any

import numpy as np
from powerzoojax.rl.algos._files import atomic_write

# Seconds between two plain progress lines (stdout not a terminal: a log file, a batch job).
PLAIN_PROGRESS_INTERVAL_S = 5.0


def metric_rows(metrics: dict[str, np.ndarray]) -> list[dict[str, float | None]]:
    """One dict per update from per-update metric arrays (NaN → None)."""
    names = list(metrics)
    n = len(next(iter(metrics.values()))) if metrics else 0
    rows = []
    for i in range(n):
        row = {}
        for name in names:
            v = float(metrics[name][i])
            row[name] = v if math.isfinite(v) else None
        rows.append(row)
    return rows


def write_metrics(rows: list[dict[str, Any]], output_dir: str) -> None:
    """`metrics.csv` and `metrics.jsonl` (None → empty cell / null), each replaced atomically.

    The files always hold every row of the run so far, so a resumed run writing into the
    same folder continues them from the checkpoint's rows on.
    """
    if not rows:
        return
    names = list(dict.fromkeys(n for row in rows for n in row))  # union, first-seen order
    atomic_write(os.path.join(output_dir, "metrics.jsonl"), "".join(json.dumps(row) + "\n" for row in rows))
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(names)
    for row in rows:
        writer.writerow(["" if row.get(n) is None else repr(row[n]) for n in names])
    atomic_write(os.path.join(output_dir, "metrics.csv"), text.getvalue())


def _cost_series(rows: list[dict[str, Any]], cost_units: dict[str, str]) -> list[tuple[str, str]]:
    """`(metric name, legend label)` of every cost curve present in `rows`."""
    present = {n for r in rows for n, v in r.items() if v is not None}
    out = []
    for channel, unit in cost_units.items():
        for prefix, source in (("eval_cost_", "evaluation"), ("episode_cost_est_", "training estimate")):
            if prefix + channel in present:
                out.append((prefix + channel, f"{channel} [{unit}] ({source})"))
    if out:
        return out
    units = set(cost_units.values())
    total = f"all channels [{units.pop()}]" if len(units) == 1 else "sum of all channels (mixed units)"
    for name, source in (("eval_total_cost", "evaluation"), ("episode_cost_est_total", "training estimate"),
                         ("episode_cost", "training episodes")):
        if name in present:
            out.append((name, f"{total} ({source})"))
    return out


def plot_learning_curve(
    rows: list[dict[str, Any]], path: str, title: str = "", cost_units: dict[str, str] | None = None
) -> None:
    """Episode return (training and deterministic evaluation) and costs against env steps, as
    a PNG.

    **Arguments:**

    - `rows`: the run's metric rows.
    - `path`: the PNG file.
    - `title`: figure title.
    - `cost_units`: each cost channel's unit; every cost curve is labelled with its
      channel, unit and source (evaluation or training estimate).
    """
    # A bare Figure renders with Agg without touching pyplot's global backend (a
    # notebook calling train() keeps its own).
    from matplotlib.figure import Figure

    def series(name):
        xs = [r["env_steps"] for r in rows if r.get(name) is not None]
        ys = [r[name] for r in rows if r.get(name) is not None]
        return xs, ys

    costs = _cost_series(rows, cost_units or {})
    n_panels = 2 if costs else 1
    fig = Figure(figsize=(7, 3.2 * n_panels))
    axes = fig.subplots(n_panels, 1, sharex=True, squeeze=False)
    ax = axes[0, 0]
    for name, label in (("episode_return", "training episodes"), ("eval_returns", "deterministic evaluation")):
        xs, ys = series(name)
        if xs:
            ax.plot(xs, ys, marker="o" if name == "eval_returns" else None, ms=3, label=label)
    ax.set_ylabel("episode return")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # a diverged first update leaves nothing to plot
        ax.legend(loc="best", fontsize=8)
    ax.set_title(title)
    if costs:
        ax = axes[1, 0]
        for name, label in costs:
            xs, ys = series(name)
            ax.plot(xs, ys, marker="o" if name.startswith("eval") else None, ms=3, label=label)
        ax.set_ylabel("episode cost")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    axes[-1, 0].set_xlabel("env steps")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=100, format="png")
    atomic_write(path, buffer.getvalue())


class Progress:
    """Status of a running training: steps, throughput (compile excluded), recent returns.

    On a terminal one self-overwriting line; otherwise (a log file) plain lines, at most
    one every `interval` seconds, and always the last one.
    """

    def __init__(self, total_updates: int, steps_per_update: int, stream: Any, interval: float = PLAIN_PROGRESS_INTERVAL_S):
        self.total_updates = total_updates
        self.steps_per_update = steps_per_update
        self.stream = stream
        self.start = time.perf_counter()
        self.timed_since: float | None = None
        self.timed_updates = 0
        self.tty = stream.isatty()
        self.interval = interval
        self.last_line = -math.inf

    def chunk_done(self, done_updates: int, chunk_updates: int, rows: list[dict[str, Any]]) -> None:
        now = time.perf_counter()
        if self.timed_since is None:
            # The first chunk includes compilation: throughput is measured from its end on.
            self.timed_since = now
        else:
            self.timed_updates += chunk_updates
        finished = done_updates >= self.total_updates
        if not self.tty and not finished and now - self.last_line < self.interval:
            return
        self.last_line = now
        rate = self.timed_updates * self.steps_per_update / (now - self.timed_since) if self.timed_updates else None
        recent = [r["episode_return"] for r in rows[-5:] if r.get("episode_return") is not None]
        evals = [r["eval_returns"] for r in rows if r.get("eval_returns") is not None]
        costs = [r.get("episode_cost_est_total", r.get("episode_cost")) for r in rows[-5:]]
        costs = [c for c in costs if c is not None]
        frac = done_updates / self.total_updates
        elapsed = now - self.start
        eta = (self.total_updates - done_updates) * self.steps_per_update / rate if rate else float("nan")
        parts = [
            f"[{100 * frac:5.1f}%] {done_updates * self.steps_per_update:,}/{self.total_updates * self.steps_per_update:,} steps",
            f"{_si(rate)} steps/s" if rate else "compiled",
            f"return {np.mean(recent):.4g}" if recent else "",
            f"eval {evals[-1]:.4g}" if evals else "",
            f"cost {np.mean(costs):.4g}" if costs else "",
            f"{_clock(elapsed)} elapsed" + (f", ETA {_clock(eta)}" if math.isfinite(eta) else ""),
        ]
        line = " | ".join(p for p in parts if p)
        self.stream.write(("\r\033[K" if self.tty else "") + line + ("" if self.tty else "\n"))
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _si(x: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"
