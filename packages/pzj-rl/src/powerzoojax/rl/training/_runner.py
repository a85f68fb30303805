"""The host side of a training run: progress, checkpoints, metrics files, plot, stops.

The compiled loop never calls back to the host. The run is cut into equal chunks of
updates (one compiled `lax.scan` per chunk, the same program for every chunk) and the
host reports, writes, checks and checkpoints between chunks. With no output folder, no
progress line and nothing to keep, the run is a single compiled call.

Files in `output_dir`: `metrics.csv` and `metrics.jsonl` (one row per update; the
rows also go to TensorBoard / Weights & Biases with `config.loggers`, see
`._loggers`), `learning_curve.png`, `config.yaml`, `result.json` and
`checkpoints/update_NNNNNN.eqx` + `.json` (see `._checkpoint`), a checkpoint
every `checkpoint_every` updates and at the end, of which the newest
`config.keep_checkpoints` and the best-evaluated one are kept. Every file is replaced
atomically, with the permissions `open()` would give it.

Between chunks the host also checks the run's health: a non-finite loss, gradient norm
or policy parameter stops training with [`TrainingDiverged`][powerzoojax.rl.training.TrainingDiverged] (the last good
checkpoint stays on disk); SIGINT / SIGTERM stop it after the current chunk with
[`TrainingInterrupted`][powerzoojax.rl.training.TrainingInterrupted], once the checkpoint, metrics and plot so far are written.
Several processes (a trainer built with a mesh over their devices, after
`powerzoojax.core.init_distributed`): every process runs this same driver with the
same arguments. The metrics are replicated, so every process takes the same decisions;
decisions one process can reach alone (a signal, an unwritable output folder) are
or-ed over the processes first. Process 0 alone writes files and prints progress;
checkpoints gather the env-split state from all processes before it writes them, and
every process reads the checkpoint it resumes from.
"""

import contextlib
import math
import os
import signal
import sys
import threading
import time
from typing import Any

import jax
import numpy as np
from powerzoojax.core._distributed import any_process, is_writer
from powerzoojax.rl.algos._config import TrainConfig
from powerzoojax.rl.algos._files import OutputDirError, atomic_write, check_output_dir
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.training._checkpoint import (
    learned_state_is_finite,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from powerzoojax.rl.training._loggers import check_logger_folder, make_progress, open_loggers
from powerzoojax.rl.training._report import metric_rows, plot_learning_curve, write_metrics
from powerzoojax.rl.training._units import channel_units


class TrainingDiverged(FloatingPointError):
    """Training produced a NaN or an infinity.

    **Arguments:**

    - `message`: the error message.
    - `update`: the update at which it happened.
    - `checkpoint`: the last good checkpoint, or `None`.
    """

    def __init__(self, message: str, update: int, checkpoint: str | None):
        super().__init__(message)
        self.update = update
        self.checkpoint = checkpoint


class TrainingInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped training.

    **Arguments:**

    - `message`: the message.
    - `signum`: the signal number.
    - `checkpoint`: the checkpoint holding the state it stopped at, or `None`.
    """

    def __init__(self, message: str, signum: int, checkpoint: str | None):
        super().__init__(message)
        self.signum = signum
        self.checkpoint = checkpoint


class InsufficientMemoryError(ValueError):
    """The run needs more memory than its device (or, on CPU, the host) has free.

    Raised before training starts, from XLA's own figures for the compiled program
    (`Compiled.memory_analysis()`: its arguments, outputs and working buffers per
    device), so an oversized `num_envs` is a one-line refusal naming the figure rather
    than an allocation failure deep inside XLA or the kernel's out-of-memory kill.
    """


def _gb(n: int) -> str:
    if n >= 10**8:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e6:.1f} MB" if n >= 10**6 else f"{n / 1e3:.0f} kB"


def _host_available_bytes() -> int | None:
    """The host's physical memory (`os.sysconf`), or None where the OS does not say. The
    total rather than the OS's free figure, which leaves out reclaimable page cache: the
    check must never refuse a run that fits, only one the machine cannot hold at all."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


def available_memory() -> tuple[int | None, str]:
    """`(bytes free, where)` for a compiled program on this process's devices: the smallest
    free device memory (`bytes_limit - bytes_in_use`) on an accelerator, the host's
    physical memory on CPU; `(None, ...)` when the backend does not say."""
    devices = jax.local_devices()
    if devices[0].platform == "cpu":
        return _host_available_bytes(), "host memory (CPU backend; the machine's physical total)"
    free = []
    for device in devices:
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            free.append(int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)))
    return (min(free) if free else None), f"{devices[0].platform} device memory"


def _fields(cfg: TrainConfig) -> str:
    return f"num_envs={cfg.num_envs}, n_steps={cfg.n_steps}, eval_num_episodes={cfg.eval_num_episodes}"


def check_state_memory(trainer: Any, key: jax.Array) -> None:
    """Refuse (`InsufficientMemoryError`) a training state larger than the free memory,
    before allocating it (its shapes come from `jax.eval_shape`, nothing is computed)."""
    shapes = trainer._jit_init.eval_shape(key)  # traced once per trainer, then cached
    need = sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(shapes))
    if trainer.mesh is not None:
        need //= trainer.mesh.devices.size
    free, where = available_memory()
    problem = None
    if free is not None and need > free:
        problem = (f"the training state alone needs {_gb(need)} ({_fields(trainer.config)}), more than the "
                   f"{_gb(free)} of free {where}; lower num_envs")
    if any_process(problem is not None):
        raise InsufficientMemoryError(problem or "another process of the run lacks memory for the training state")


def check_program_memory(trainer: Any, compiled: Any, what: str) -> None:
    """Refuse (`InsufficientMemoryError`) a compiled program whose memory (XLA's
    `memory_analysis()`: arguments + outputs + temporaries − aliased buffers, per device)
    exceeds the free memory, before it runs."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 - a backend without the analysis: nothing to check against
        stats = None
    problem = None
    if stats is not None:
        need = (stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
                - stats.alias_size_in_bytes)
        free, where = available_memory()
        if free is not None and need > free:
            problem = (
                f"{_fields(trainer.config)} needs about {_gb(need)} for {what} (XLA's estimate: "
                f"{_gb(stats.temp_size_in_bytes)} of working buffers, {_gb(stats.argument_size_in_bytes)} of state), "
                f"more than the {_gb(free)} of free {where}; lower num_envs (or n_steps, eval_num_episodes)"
            )
    if any_process(problem is not None):
        raise InsufficientMemoryError(problem or f"another process of the run lacks memory for {what}")


def chunk_size(n_updates: int, n_reports: int) -> int:
    """Updates per compiled chunk for about `n_reports` reports over the run."""
    return max(1, math.ceil(n_updates / max(1, n_reports)))


def divergence(new_rows: list[dict[str, Any]], metric_names: list[str], first_update: int) -> str | None:
    """What went non-finite in `new_rows` (the losses and gradient norms), or None.

    The rows hold None for NaN/inf; a loss is measured on every update, so None there is a
    non-finite value, not a missing one.
    """
    watched = [n for n in metric_names if n.endswith("loss") or n == "grad_norm"]
    for i, row in enumerate(new_rows):
        bad = [n for n in watched if row.get(n) is None]
        if bad:
            return f"non-finite {', '.join(bad)} at update {first_update + i + 1}"
    return None


@contextlib.contextmanager
def _stop_signals():
    """Record SIGINT / SIGTERM instead of dying mid-chunk; a second signal acts as usual."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        received.append(signum)
        for s, h in previous.items():
            signal.signal(s, h)

    for s in previous:
        signal.signal(s, handler)
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _result_metrics(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    names = dict.fromkeys(n for r in rows for n in r)
    return {name: np.asarray([np.nan if r.get(name) is None else r[name] for r in rows], np.float32) for name in names}


def run_training(
    trainer: Any,
    key: jax.Array,
    *,
    output_dir: str | None = None,
    progress: bool | None = None,
    resume_from: str | None = None,
    n_reports: int = 20,
    stream: Any = None,
    checkpoint_every: int | None = None,
    preset: str | None = None,
) -> TrainResult:
    """Run `trainer` from `key` (or from the checkpoint `resume_from`).

    Resuming continues bit for bit under the same config; `total_timesteps` may grow. With
    `n_checkpoints > 1` the result's `checkpoints` holds `(env_steps, policy)` at the end
    of the chunk that reached each mark, with or without `output_dir`. With
    `config.record_eval_wall_time` the run is cut into chunks that end on the evaluation
    updates and every row with an evaluation gets `eval_wall_time_s`, the host wall-clock
    seconds of training up to the end of that chunk (evaluations included); with
    `wall_time_warmup` the chunk program is compiled ahead of time, so compilation is not
    counted.

    **Arguments:**

    - `trainer`: the trainer.
    - `key`: PRNG key of the run.
    - `output_dir`: turns on the metrics files, the plot and checkpoints on disk (checked
      before training starts, `OutputDirError`).
    - `progress`: `None` shows a self-overwriting status line when `stream` is a
      terminal, plain lines every few seconds otherwise; `False` shows none.
    - `resume_from`: a checkpoint to continue from.
    - `n_reports`: progress reports (and default chunks) over the run.
    - `stream`: where progress goes; `None` is stdout.
    - `checkpoint_every`: updates between checkpoints; `None` writes one per chunk, at
      the `n_checkpoints` evenly spaced marks and at the end.
    - `preset`: recorded in checkpoints and results, so `load_policy` can rebuild the env.

    **Returns:**

    The [`TrainResult`][powerzoojax.rl.algos.TrainResult].

    Raises [`TrainingDiverged`][powerzoojax.rl.training.TrainingDiverged] on a NaN /
    infinite loss, gradient or parameter and
    [`TrainingInterrupted`][powerzoojax.rl.training.TrainingInterrupted] on SIGINT /
    SIGTERM (after writing what the run has).
    """
    stream = sys.stdout if stream is None else stream
    show = progress is not False
    cfg: TrainConfig = trainer.config
    n_updates = trainer.n_updates
    record = bool(cfg.record_eval_wall_time and trainer.eval_every)
    if checkpoint_every is not None and (isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                                         or checkpoint_every < 1):
        raise ValueError(f"run_training: checkpoint_every must be a positive number of updates, got {checkpoint_every!r}")
    chunked = show or output_dir is not None or resume_from is not None or record or cfg.n_checkpoints > 1
    writer = is_writer()
    show = show and writer
    if output_dir is not None:
        _check_output_dir_everywhere(output_dir, writer)
    if writer:
        check_logger_folder(cfg, output_dir)
    check_state_memory(trainer, trainer.place_key(key))
    if not chunked:
        lower = getattr(getattr(trainer, "_jit_train", None), "lower", None)
        if lower is not None:  # compiled ahead for its memory figure; trainer(key) reuses the program
            check_program_memory(trainer, lower(trainer.place_key(key)).compile(), "the whole run")
        result = trainer(key)
        problem = divergence(metric_rows({k: np.asarray(v) for k, v in result.metrics.items()}), list(result.metrics), 0)
        if problem is not None:
            raise TrainingDiverged(f"training diverged: {problem} (no checkpoint kept: run with output_dir)", 0, None)
        return result

    units = channel_units(trainer.env)
    if output_dir is not None and writer:
        from powerzoojax.rl.algos._config import config_yaml

        atomic_write(os.path.join(output_dir, "config.yaml"), config_yaml(cfg))
    if resume_from is not None:
        state, rows = load_checkpoint(resume_from, trainer, key)
        state = trainer.place_state(state)
    else:
        state, rows = trainer._jit_init(trainer.place_key(key)), []
    size = trainer.eval_every if record else chunk_size(n_updates, n_reports)
    every = size if checkpoint_every is None else checkpoint_every
    size = size if record else min(size, every)
    clock = time.perf_counter()
    run_chunk = lambda s: trainer._jit_chunk(s, size)  # noqa: E731
    lower = getattr(trainer._jit_chunk, "lower", None)
    if lower is not None:
        # Compiled ahead, so its memory is checked before it runs (and, with
        # wall_time_warmup, its compilation is not timed); the calls reuse the program.
        compiled = lower(state, size).compile()
        check_program_memory(trainer, compiled, f"one compiled chunk of {size} update(s)")
        if record and cfg.wall_time_warmup:
            run_chunk = compiled
            clock = time.perf_counter()
    marks = sorted({max(1, round(i * n_updates / cfg.n_checkpoints)) for i in range(1, cfg.n_checkpoints + 1)})
    last_kept = last_saved = int(state.update)
    last_path = None
    bar = make_progress(cfg, n_updates, trainer.batch_size, int(state.update), stream) if show else None
    checkpoints = []
    # Process 0 alone writes: the other processes open no sink.
    sinks = open_loggers(cfg, output_dir if writer else None, first_step=(int(state.update) + 1) * trainer.batch_size, run_name=preset)
    logged = [len(rows)]  # rows restored from a checkpoint were logged by the run that wrote them

    def log_rows() -> None:
        if len(rows) == logged[0]:
            return
        for sink in sinks.loggers:
            sink.log(rows, logged[0])
        logged[0] = len(rows)

    def checkpoint_path(update: int) -> str:
        assert output_dir is not None  # only called with an output_dir
        return os.path.join(output_dir, "checkpoints", f"update_{update:06d}.eqx")

    def write_outputs() -> None:
        if output_dir is None or not rows or not writer:
            return
        log_rows()
        write_metrics(rows, output_dir)
        plot_learning_curve(rows, os.path.join(output_dir, "learning_curve.png"),
                            title=f"{cfg.algo} on {preset or trainer.env.name}", cost_units=units)

    with _stop_signals() as received, sinks:
        while int(state.update) < n_updates:
            before = int(state.update)
            # Always the same chunk length, so one compiled program; a short tail is padded
            # with skipped updates (NaN metrics, dropped here).
            new_state, metrics = run_chunk(state)
            metrics = {k: np.asarray(v) for k, v in metrics.items()}
            done = int(new_state.update)
            new_rows = metric_rows({k: v[: done - before] for k, v in metrics.items()})
            if record:
                elapsed = time.perf_counter() - clock
                for row in new_rows:
                    row["eval_wall_time_s"] = elapsed if row.get("eval_returns") is not None else None
            problem = divergence(new_rows, list(metrics), before)
            if problem is None and not learned_state_is_finite(new_state):
                problem = f"non-finite policy parameters after update {done}"
            rows.extend(new_rows)
            if problem is not None:
                write_outputs()
                kept = f"the last good checkpoint is {last_path}" if last_path else "no checkpoint was written before it"
                raise TrainingDiverged(
                    f"training diverged: {problem}; {kept}. Lower learning_rate or max_grad_norm, or check the env "
                    "for NaN observations/rewards", done, last_path,
                )
            state = new_state
            if bar is not None:
                bar.chunk_done(done, done - before, rows)
            due_mark = [m for m in marks if last_kept < m <= done]
            stop = any_process(bool(received))
            due = (done // every > last_saved // every) or done >= n_updates or bool(due_mark) or stop
            if output_dir is not None and due:
                # The metrics files first: a resumed run reads its history back from them.
                log_rows()
                last_path = checkpoint_path(done)
                save_checkpoint(last_path, trainer, state, rows, preset=preset)
                if writer:
                    prune_checkpoints(output_dir, cfg.keep_checkpoints)
                last_saved = done
            if due_mark and (output_dir is not None or cfg.n_checkpoints > 1):
                checkpoints.append((done * trainer.batch_size, state.policy))
                last_kept = done
            if stop:
                write_outputs()
                if bar is not None:
                    bar.close()
                signum = received[0] if received else signal.SIGTERM
                name = signal.Signals(signum).name if received else "a signal to another process"
                where = f"checkpoint {last_path}" if last_path else "no checkpoint (no output folder)"
                raise TrainingInterrupted(
                    f"training stopped by {name} after update {done} of {n_updates}; {where}", signum, last_path
                )
            log_rows()
    if bar is not None:
        bar.close()
    result = trainer.result(state, _result_metrics(rows), tuple(checkpoints) if checkpoints else None)
    result = result.with_run_info(env_name=preset, cost_units=units)
    if output_dir is not None and rows and writer:
        write_outputs()
        result.save(os.path.join(output_dir, "result.json"), preset=preset)
    return result


def _check_output_dir_everywhere(output_dir: str, writer: bool) -> None:
    """Process 0 checks the folder it will write; every process learns the outcome, so no
    process starts training (and waits in a collective) for a run that cannot be kept."""
    problem = None
    if writer:
        try:
            check_output_dir(output_dir)
        except OutputDirError as err:
            problem = err
    if any_process(problem is not None):
        raise problem if problem is not None else OutputDirError(
            f"output folder problem: process 0 cannot write to {output_dir}"
        )
