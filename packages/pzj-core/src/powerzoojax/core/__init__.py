"""Env contract, spaces and the one rollout kernel.

Set `POWERZOOJAX_TYPECHECK=1` before importing to have every `powerzoojax` module
imported from here on checked at call (trace) time by jaxtyping + beartype; the test
suite does the same through pytest's `--jaxtyping-packages`.
"""

import os as _os

if _os.environ.get("POWERZOOJAX_TYPECHECK", "") not in ("", "0"):
    from jaxtyping import install_import_hook as _install_import_hook

    # Installed for the life of the process: later imports (grid, rl, ...) are checked too.
    _install_import_hook(["powerzoojax"], "beartype.beartype")

from powerzoojax.core._distributed import any_process, gather_to_host, init_distributed, is_writer, put_global
from powerzoojax.core._environment import (
    Environment,
    EnvParams,
    EnvState,
    StepResult,
    auto_reset,
    denormalize_action,
    empty_costs,
    select_tree,
    stack_costs,
    time_features,
)
from powerzoojax.core._invariant import Invariant, Trajectory, not_terminal
from powerzoojax.core._rollout import (
    batch_reset,
    batch_step,
    bind_step,
    rollout,
    scan_rollout,
    split_key_for_envs,
)
from powerzoojax.core._sharding import (
    ENV_AXIS,
    batch_rollout,
    env_sharding,
    make_env_mesh,
    shard_envs,
)
from powerzoojax.core._spaces import (
    Box,
    Discrete,
    MultiBinary,
    MultiDiscrete,
    Space,
    make_box,
    make_discrete,
    make_multi_binary,
    make_multi_discrete,
)
from powerzoojax.core._task import ConstraintSpec, EpisodeTrace, TaskPolicy, TaskSpec, episode_rollout
from powerzoojax.core._types import BoolScalar, FloatScalar, Info, IntScalar, Key

__all__ = [
    "Invariant", "Trajectory", "not_terminal",
    "ConstraintSpec", "EpisodeTrace", "TaskPolicy", "TaskSpec", "episode_rollout",
    "any_process", "gather_to_host", "init_distributed", "is_writer", "put_global",
    "ENV_AXIS", "Box", "BoolScalar", "Discrete", "EnvParams", "EnvState", "Environment",
    "FloatScalar", "Info", "IntScalar", "Key", "MultiBinary", "MultiDiscrete", "Space",
    "StepResult", "auto_reset", "batch_reset", "batch_rollout", "batch_step", "bind_step",
    "denormalize_action", "empty_costs", "env_sharding", "make_box", "make_discrete",
    "make_env_mesh", "make_multi_binary", "make_multi_discrete", "rollout", "scan_rollout",
    "select_tree", "shard_envs", "split_key_for_envs", "stack_costs", "time_features",
]
