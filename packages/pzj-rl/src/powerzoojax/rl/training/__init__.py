"""Running training: `make_train` (dispatch on `TrainConfig.algo`), `train` (a preset
or an env in one call), evaluation helpers, the presets, the host-side runner
(progress, checkpoints, metrics files, learning curve, divergence and signal stops),
reloading and evaluating a run (`load_policy`, `evaluate_run`), the evaluation protocol's
bookkeeping and statistics, and the command line (`python -m powerzoojax`).
`TrainConfig` / `TrainResult` are re-exported from [`powerzoojax.rl.algos`][powerzoojax.rl.algos].

(Named `training` rather than `train`: `powerzoojax.rl.train` is the `train()`
function, and a subpackage of that name would be shadowed by it.)"""

from powerzoojax.rl.algos._config import TrainConfig, load_config, save_config
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.training._checkpoint import (
    CheckpointError,
    CheckpointWarning,
    best_checkpoint,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    resolve_checkpoint,
    save_checkpoint,
)
from powerzoojax.rl.training._policy import LoadedPolicy, evaluate_run, load_policy
from powerzoojax.rl.training._presets import PresetDef, get_preset, list_presets
from powerzoojax.rl.training._protocol import (
    RunRecord,
    bootstrap_ci,
    iqm,
    load_manifest,
    norm_score,
    paired_sign_flip_test,
    summarize,
    write_manifest,
)
from powerzoojax.rl.training._report import plot_learning_curve
from powerzoojax.rl.training._runner import (
    InsufficientMemoryError,
    TrainingDiverged,
    TrainingInterrupted,
    run_training,
)
from powerzoojax.rl.training._train import evaluate, make_act, make_train, random_act, train

__all__ = [
    "CheckpointError", "CheckpointWarning", "InsufficientMemoryError", "LoadedPolicy", "TrainingDiverged", "TrainingInterrupted", "evaluate_run", "load_policy",
    "PresetDef", "RunRecord", "TrainConfig", "TrainResult", "bootstrap_ci", "evaluate", "get_preset", "iqm",
    "best_checkpoint", "latest_checkpoint", "list_presets", "load_checkpoint", "load_config", "load_manifest", "make_act",
    "make_train", "norm_score", "paired_sign_flip_test", "plot_learning_curve", "random_act", "run_training",
    "prune_checkpoints", "resolve_checkpoint", "save_checkpoint", "save_config", "summarize", "train", "write_manifest",
]
