"""Where a run's metric rows go: `metrics.csv` / `metrics.jsonl` always, TensorBoard and
Weights & Biases on request (`TrainConfig.loggers`), and the progress display.

A logger is anything with `log(rows, start)` and `close()` (`MetricLogger`):
`rows` is every row of the run so far (one per update, as in `metrics.jsonl`) and
`rows[start:]` the ones added since the last call. On resume the rows restored from
the checkpoint were logged by the run that wrote them; only the new ones are sent on,
at their own env-step counts, so TensorBoard and W&B continue where the checkpoint was
(TensorBoard drops what an interrupted run had logged past it).
"""

import math
import os
import sys
from typing import Any, Protocol, runtime_checkable

from powerzoojax.rl.algos._config import TrainConfig
from powerzoojax.rl.training._report import Progress, write_metrics


@runtime_checkable
class MetricLogger(Protocol):
    """A sink for metric rows (see the module docstring)."""

    def log(self, rows: list[dict[str, Any]], start: int) -> None: ...

    def close(self) -> None: ...


def metric_tag(name: str) -> str:
    """Grouped name of a metric on a dashboard: `eval/…` for evaluation, `train/…` otherwise."""
    return f"eval/{name[len('eval_'):]}" if name.startswith("eval_") else f"train/{name}"


def _scalars(row: dict[str, Any]) -> dict[str, float]:
    """The row's measured values by tag (missing values and the step count left out)."""
    return {metric_tag(k): float(v) for k, v in row.items()
            if k != "env_steps" and v is not None and math.isfinite(float(v))}


def _step(row: dict[str, Any], index: int) -> int:
    steps = row.get("env_steps")
    return int(steps) if steps is not None else index + 1


def _optional(module: str, extra: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is not None and module.startswith(err.name.split(".")[0]):
            raise ImportError(f"{what} needs {module.split('.')[0]}: pip install 'pzj-rl[{extra}]'") from None
        raise


class FileLogger:
    """`metrics.csv` and `metrics.jsonl` in `output_dir`, rewritten whole (atomically) each time."""

    def __init__(self, output_dir: str):
        self.output_dir = output_dir

    def log(self, rows: list[dict[str, Any]], start: int) -> None:
        write_metrics(rows, self.output_dir)

    def close(self) -> None:
        pass


class TensorBoardLogger:
    """TensorBoard event files in `log_dir` (tensorboardX), one scalar per metric at its env-step count.

    `purge_step`: the first step this run logs; TensorBoard hides what an earlier run
    logged in the same folder from that step on (a resumed run redoes those updates).
    """

    def __init__(self, log_dir: str, purge_step: int | None = None):
        tensorboardx = _optional("tensorboardX", "tensorboard", "loggers=('tensorboard',)")
        self.writer = tensorboardx.SummaryWriter(log_dir, purge_step=purge_step)

    def log(self, rows: list[dict[str, Any]], start: int) -> None:
        for i in range(start, len(rows)):
            step = _step(rows[i], i)
            for tag, value in _scalars(rows[i]).items():
                self.writer.add_scalar(tag, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbLogger:
    """A Weights & Biases run (offline by default) logging each row at its env-step count.

    The run's id is kept in `<output_dir>/wandb_run_id`, so a resumed training continues
    the same W&B run; its files go to `<output_dir>/wandb`.
    """

    def __init__(self, output_dir: str, project: str, mode: str, config: dict[str, Any], name: str | None = None):
        wandb = _optional("wandb", "wandb", "loggers=('wandb',)")
        id_file = os.path.join(output_dir, "wandb_run_id")
        if os.path.isfile(id_file):
            with open(id_file) as f:
                run_id = f.read().strip()
        else:
            run_id = wandb.util.generate_id()
            with open(id_file, "w") as f:
                f.write(run_id)
        wandb_dir = os.path.join(output_dir, "wandb")
        os.makedirs(wandb_dir, exist_ok=True)
        self.run = wandb.init(project=project, mode=mode, dir=wandb_dir, id=run_id, resume="allow", config=config,
                              name=name)

    def log(self, rows: list[dict[str, Any]], start: int) -> None:
        for i in range(start, len(rows)):
            self.run.log(_scalars(rows[i]), step=_step(rows[i], i))

    def close(self) -> None:
        self.run.finish()


def check_logger_folder(config: TrainConfig, output_dir: str | None) -> None:
    """`ValueError` when `config.loggers` asks for a logger but the run has no output folder."""
    if config.loggers and output_dir is None:
        raise ValueError(
            f"run_training: loggers={list(config.loggers)} write under the output folder; pass output_dir (--output)"
        )


def make_loggers(
    config: TrainConfig, output_dir: str | None, *, first_step: int, run_name: str | None = None
) -> list[MetricLogger]:
    """The run's metric sinks: the files (with an output folder) and `config.loggers`.

    `first_step`: the env-step count of the first row this run adds (where a resumed
    run's TensorBoard log continues). `ValueError` when a logger is asked for without
    an output folder; `ImportError` naming the extra when its package is missing.
    """
    check_logger_folder(config, output_dir)
    if output_dir is None:
        return []
    loggers: list[MetricLogger] = [FileLogger(output_dir)]
    try:
        for name in config.loggers:
            if name == "tensorboard":
                loggers.append(TensorBoardLogger(os.path.join(output_dir, "tensorboard"), purge_step=first_step))
            elif name == "wandb":
                loggers.append(WandbLogger(output_dir, config.wandb_project, config.wandb_mode, config._asdict(), run_name))
    except BaseException:
        close_all(loggers)
        raise
    return loggers


def close_all(loggers: list[MetricLogger]) -> None:
    for logger in loggers:
        logger.close()


class OpenLoggers:
    """The loggers of one run, closed when the `with` block around the run ends."""

    def __init__(self, loggers: list[MetricLogger]):
        self.loggers = loggers

    def __enter__(self) -> "OpenLoggers":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        close_all(self.loggers)


def open_loggers(config: TrainConfig, output_dir: str | None, *, first_step: int, run_name: str | None = None) -> OpenLoggers:
    """`make_loggers` as a context manager."""
    return OpenLoggers(make_loggers(config, output_dir, first_step=first_step, run_name=run_name))


class TqdmProgress:
    """The status of a running training as a tqdm bar (`tqdm.auto`: a widget in notebooks,
    a text bar in terminals), counting env steps, with the recent return, evaluation and cost."""

    def __init__(self, total_updates: int, steps_per_update: int, start_update: int, stream: Any):
        tqdm_auto = _optional("tqdm.auto", "progress", "progress_bar='tqdm'")
        self.steps_per_update = steps_per_update
        self.bar = tqdm_auto.tqdm(
            total=total_updates * steps_per_update, initial=start_update * steps_per_update, unit="step",
            unit_scale=True, dynamic_ncols=True, file=stream, desc="training",
        )

    def chunk_done(self, done_updates: int, chunk_updates: int, rows: list[dict[str, Any]]) -> None:
        self.bar.update(chunk_updates * self.steps_per_update)
        recent = [r["episode_return"] for r in rows[-5:] if r.get("episode_return") is not None]
        evals = [r["eval_returns"] for r in rows if r.get("eval_returns") is not None]
        postfix = {}
        if recent:
            postfix["return"] = f"{sum(recent) / len(recent):.4g}"
        if evals:
            postfix["eval"] = f"{evals[-1]:.4g}"
        self.bar.set_postfix(postfix, refresh=False)

    def close(self) -> None:
        self.bar.close()


def make_progress(config: TrainConfig, total_updates: int, steps_per_update: int, start_update: int, stream: Any) -> Any:
    """The progress display `config.progress_bar` names: the status line or a tqdm bar."""
    if config.progress_bar == "tqdm":
        return TqdmProgress(total_updates, steps_per_update, start_update, sys.stderr if stream is sys.stdout else stream)
    return Progress(total_updates, steps_per_update, stream)
