"""The host side of a training run: progress display, checkpoints, metrics files, plot.

The compiled loop never calls back to the host. When any of those features is on, the
run is cut into equal chunks of updates (one compiled ``lax.scan`` per chunk, the same
program for every chunk) and the host reports, writes and checkpoints between chunks.
With all of them off the run is a single compiled call.

Files in ``output_dir``: ``metrics.csv`` and ``metrics.jsonl`` (one row per update,
rewritten after every chunk), ``learning_curve.png``, ``config.yaml``, ``result.json``
and ``checkpoints/update_NNNNNN.eqx`` + ``.json`` (sidecar: config, update, env steps,
metrics so far). A checkpoint holds the whole training state — policy, optimiser
state, env states, PRNG key, normalisation statistics, Lagrange multipliers — so a
resumed run continues bit for bit.
"""

import csv
import json
import math
import os
import sys
import time
from typing import Any

import equinox as eqx
import jax
import jax.random as jr
import numpy as np
from powerzoojax.rl.algos._config import TrainConfig, save_config
from powerzoojax.rl.algos._result import TrainResult

CHECKPOINT_FORMAT = 1


def chunk_size(n_updates: int, n_reports: int) -> int:
    """Updates per compiled chunk for about ``n_reports`` reports over the run."""
    return max(1, math.ceil(n_updates / max(1, n_reports)))


def _rows(metrics: dict[str, np.ndarray]) -> list[dict[str, float | None]]:
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
    """``metrics.csv`` and ``metrics.jsonl`` (NaN → empty cell / null)."""
    if not rows:
        return
    names = list(dict.fromkeys(n for row in rows for n in row))  # union, first-seen order
    with open(os.path.join(output_dir, "metrics.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    with open(os.path.join(output_dir, "metrics.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(names)
        for row in rows:
            writer.writerow(["" if row.get(n) is None else repr(row[n]) for n in names])


def plot_learning_curve(rows: list[dict[str, Any]], path: str, title: str = "") -> None:
    """Episode return (training and deterministic evaluation) and costs against env steps, as a PNG."""
    # A bare Figure renders with Agg without touching pyplot's global backend (a
    # notebook calling train() keeps its own).
    from matplotlib.figure import Figure

    def series(name):
        xs = [r["env_steps"] for r in rows if r.get(name) is not None]
        ys = [r[name] for r in rows if r.get(name) is not None]
        return xs, ys

    cost_names = [n for n in ("episode_cost_est_total", "episode_cost", "eval_cost") if any(r.get(n) is not None for r in rows)]
    n_panels = 2 if cost_names else 1
    fig = Figure(figsize=(7, 3.2 * n_panels))
    axes = fig.subplots(n_panels, 1, sharex=True, squeeze=False)
    ax = axes[0, 0]
    for name, label in (("episode_return", "training episodes"), ("eval_returns", "deterministic evaluation")):
        xs, ys = series(name)
        if xs:
            ax.plot(xs, ys, marker="o" if name == "eval_returns" else None, ms=3, label=label)
    ax.set_ylabel("episode return")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title)
    if cost_names:
        ax = axes[1, 0]
        for name in cost_names:
            xs, ys = series(name)
            ax.plot(xs, ys, label=name)
        ax.set_ylabel("episode cost")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    axes[-1, 0].set_xlabel("env steps")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


class Progress:
    """One self-overwriting status line: steps, throughput (compile excluded), recent returns."""

    def __init__(self, total_updates: int, steps_per_update: int, stream: Any):
        self.total_updates = total_updates
        self.steps_per_update = steps_per_update
        self.stream = stream
        self.start = time.perf_counter()
        self.timed_since: float | None = None
        self.timed_updates = 0
        self.tty = stream.isatty()

    def chunk_done(self, done_updates: int, chunk_updates: int, rows: list[dict[str, Any]]) -> None:
        now = time.perf_counter()
        if self.timed_since is None:
            # The first chunk includes compilation: throughput is measured from its end on.
            self.timed_since = now
        else:
            self.timed_updates += chunk_updates
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


def save_checkpoint(path: str, trainer: Any, state: Any, rows: list[dict[str, Any]]) -> None:
    """Write ``path`` (``eqx.tree_serialise_leaves`` of the training state) and its JSON sidecar."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    eqx.tree_serialise_leaves(path, state)
    update = int(state.update)
    sidecar = {
        "format": CHECKPOINT_FORMAT,
        "algo": trainer.config.algo,
        "env": trainer.env.name,
        "update": update,
        "env_steps": update * trainer.batch_size,
        "n_updates": trainer.n_updates,
        "config": trainer.config._asdict(),
        "metrics": rows[:update],
    }
    with open(_sidecar(path), "w") as f:
        json.dump(sidecar, f)


def _sidecar(path: str) -> str:
    return os.path.splitext(path)[0] + ".json"


def load_checkpoint(path: str, trainer: Any, key: jax.Array | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """Training state and metric rows of a checkpoint written by ``save_checkpoint``.

    Raises ``ValueError`` when the checkpoint was written with another config (resuming
    under different hyperparameters would not continue the same run).
    """
    with open(_sidecar(path)) as f:
        sidecar = json.load(f)
    if sidecar.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: unknown checkpoint format {sidecar.get('format')!r}")
    saved = dict(sidecar["config"])
    current = trainer.config._asdict()
    diff = sorted(k for k in set(saved) | set(current) if k != "seed" and saved.get(k) != current.get(k))
    if diff:
        raise ValueError(
            f"{path} was written with a different config (fields {diff}); resume with the saved config "
            "(it is in the sidecar JSON) or start a new run"
        )
    template = trainer._jit_init(jr.PRNGKey(0) if key is None else key)
    state = eqx.tree_deserialise_leaves(path, template)
    return state, list(sidecar["metrics"])


def latest_checkpoint(output_dir: str) -> str | None:
    folder = os.path.join(output_dir, "checkpoints")
    if not os.path.isdir(folder):
        return None
    files = sorted(f for f in os.listdir(folder) if f.endswith(".eqx"))
    return os.path.join(folder, files[-1]) if files else None


def run_training(
    trainer: Any,
    key: jax.Array,
    *,
    output_dir: str | None = None,
    progress: bool | None = None,
    resume_from: str | None = None,
    n_reports: int = 20,
    stream: Any = None,
) -> TrainResult:
    """Run ``trainer`` from ``key`` (or from the checkpoint ``resume_from``).

    ``progress=None`` shows the status line only when ``stream`` (stdout) is a
    terminal. ``output_dir`` turns on metrics files, the plot and ``n_checkpoints``
    evenly spaced checkpoints on disk (the last one at the end of the run). With
    ``n_checkpoints > 1`` the result's ``checkpoints`` holds ``(env_steps, policy)`` at
    the end of the chunk that reached each of them, with or without ``output_dir``.

    ``config.record_eval_wall_time``: the run is cut into chunks that end on the
    evaluation updates and every row with an evaluation gets ``eval_wall_time_s``, the
    host wall-clock seconds of training up to the end of that chunk (evaluations
    included); with ``wall_time_warmup`` the chunk program is compiled ahead of time,
    so compilation is not counted (no update is spent on a warm-up).
    """
    stream = sys.stdout if stream is None else stream
    show = stream.isatty() if progress is None else bool(progress)
    cfg: TrainConfig = trainer.config
    n_updates = trainer.n_updates
    record = bool(cfg.record_eval_wall_time and trainer.eval_every)
    chunked = show or output_dir is not None or resume_from is not None or record or cfg.n_checkpoints > 1
    if not chunked:
        return trainer(key)

    if output_dir is not None:
        os.makedirs(output_dir, exist_ok=True)
        save_config(cfg, os.path.join(output_dir, "config.yaml"))
    if resume_from is not None:
        state, rows = load_checkpoint(resume_from, trainer, key)
    else:
        state, rows = trainer._jit_init(key), []
    size = trainer.eval_every if record else chunk_size(n_updates, n_reports)
    clock = time.perf_counter()
    run_chunk = lambda s: trainer._jit_chunk(s, size)  # noqa: E731
    if record and cfg.wall_time_warmup:
        run_chunk = trainer._jit_chunk.lower(state, size).compile()
        clock = time.perf_counter()
    marks = sorted({max(1, round(i * n_updates / cfg.n_checkpoints)) for i in range(1, cfg.n_checkpoints + 1)})
    last_saved = int(state.update)
    bar = Progress(n_updates, trainer.batch_size, stream) if show else None
    checkpoints = []
    while int(state.update) < n_updates:
        before = int(state.update)
        # Always the same chunk length, so one compiled program; a short tail is padded
        # with skipped updates (NaN metrics, dropped here).
        state, metrics = run_chunk(state)
        metrics = {k: np.asarray(v) for k, v in metrics.items()}
        done = int(state.update)
        new_rows = _rows({k: v[: done - before] for k, v in metrics.items()})
        if record:
            elapsed = time.perf_counter() - clock
            for row in new_rows:
                row["eval_wall_time_s"] = elapsed if row.get("eval_returns") is not None else None
        rows.extend(new_rows)
        if bar is not None:
            bar.chunk_done(done, done - before, rows)
        if output_dir is not None:
            write_metrics(rows, output_dir)
        if (output_dir is not None or cfg.n_checkpoints > 1) and [m for m in marks if last_saved < m <= done]:
            if output_dir is not None:
                path = os.path.join(output_dir, "checkpoints", f"update_{done:06d}.eqx")
                save_checkpoint(path, trainer, state, rows)
            checkpoints.append((done * trainer.batch_size, state.policy))
            last_saved = done
    if bar is not None:
        bar.close()
    names = dict.fromkeys(n for r in rows for n in r)
    metrics = {name: np.asarray([np.nan if r.get(name) is None else r[name] for r in rows], np.float32) for name in names}
    result = trainer.result(state, metrics, tuple(checkpoints) if checkpoints else None)
    if output_dir is not None and rows:
        plot_learning_curve(rows, os.path.join(output_dir, "learning_curve.png"), title=f"{cfg.algo} on {trainer.env.name}")
        result.save(os.path.join(output_dir, "result.json"))
    return result

