"""Task registry (spec §4.1): ``get_task("tso")`` builds the frozen task object.

Tasks live with their envs in pzj-grid and pzj-market; this table names them so core
never imports those distributions until a task is asked for.
"""

import importlib

from powerzoojax.core._task import ConstraintSpec, EpisodeTrace, TaskSpec, episode_rollout

# name -> (module, class, distribution that provides it)
TASK_REGISTRY: dict[str, tuple[str, str, str]] = {
    "tso": ("powerzoojax.grid.tasks.tso", "TSOTask", "pzj-grid"),
    "dso": ("powerzoojax.grid.tasks.dso", "DSOTask", "pzj-grid"),
    "ders": ("powerzoojax.grid.tasks.ders", "DERsTask", "pzj-grid"),
    "dc_microgrid": ("powerzoojax.grid.tasks.dc_microgrid", "DCMicrogridTask", "pzj-grid"),
    "gencos": ("powerzoojax.market.tasks.gencos", "GenCosTask", "pzj-market"),
}


def list_tasks() -> tuple[str, ...]:
    return tuple(TASK_REGISTRY)


def get_task(name: str, **kwargs) -> TaskSpec:
    """The task object registered as ``name``; kwargs go to its constructor."""
    if name not in TASK_REGISTRY:
        raise ValueError(f"unknown task {name!r}; expected one of {sorted(TASK_REGISTRY)}")
    module_name, class_name, dist = TASK_REGISTRY[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        # Only a missing provider is a packaging problem; other import errors are bugs.
        if err.name is not None and module_name.startswith(err.name):
            raise ImportError(f"task {name!r} is provided by {dist}: pip install {dist}") from err
        raise
    return getattr(module, class_name)(**kwargs)


__all__ = ["TASK_REGISTRY", "ConstraintSpec", "EpisodeTrace", "TaskSpec", "episode_rollout", "get_task", "list_tasks"]
