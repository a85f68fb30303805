"""Task registry: `get_task("tso")` builds the frozen task object.

Tasks live with their envs in the distributions that define them; each registers its tasks
through the entry-point group `powerzoojax.tasks` (`tso = "powerzoojax.grid.tasks.tso:TSOTask"`)
and the public names it adds here through `powerzoojax.tasks.names` (`TSOTask`,
`make_dso_params`, `compute_ders_metrics`, ...). Nothing is imported until a task or a name
is asked for; the first access imports the providing distribution, or raises an
`ImportError` naming it.
"""

from powerzoojax.core._provider import import_provider
from powerzoojax.core._task import ConstraintSpec, EpisodeTrace, TaskSpec, episode_rollout
from powerzoojax.envs._catalog import FIRST_PARTY, FIRST_PARTY_TASKS
from powerzoojax.envs._facade import Facade, entry_point_distribution, installed_entry_points

ENTRY_POINT_GROUP = "powerzoojax.tasks"

_FACADE = Facade("powerzoojax.tasks", own={})
_DEFINED = ("TASK_REGISTRY", "ConstraintSpec", "EpisodeTrace", "TaskSpec", "episode_rollout", "get_task", "list_tasks")
# The first-party tasks in the order they are listed.
_FIRST_PARTY_ORDER = [key for keys in FIRST_PARTY_TASKS.values() for key in keys]


def _task_registry() -> dict[str, tuple[str, str, str]]:
    """name -> (module, class, distribution) of every installed task: the first-party ones
    in their usual order, then the others."""
    registry: dict[str, tuple[str, str, str]] = {}
    for entry_point in installed_entry_points(ENTRY_POINT_GROUP):
        module, _, class_name = entry_point.value.partition(":")
        registry.setdefault(entry_point.name, (module.strip(), class_name.strip(), entry_point_distribution(entry_point)))
    order = {key: rank for rank, key in enumerate(_FIRST_PARTY_ORDER)}
    return dict(sorted(registry.items(), key=lambda item: order.get(item[0], len(order))))


def _uninstalled_tasks(registry: dict[str, tuple[str, str, str]]) -> dict[str, str]:
    return {key: dist for dist, keys in FIRST_PARTY_TASKS.items() for key in keys if key not in registry}


# name -> (module, class, distribution) of every installed task (read from the metadata,
# nothing imported).
TASK_REGISTRY: dict[str, tuple[str, str, str]] = _task_registry()


def list_tasks() -> tuple[str, ...]:
    """Names of the registered tasks.

    **Returns:**

    A tuple of the keys of `TASK_REGISTRY` (the tasks of the installed distributions).
    """
    return tuple(TASK_REGISTRY)


def get_task(name: str, **kwargs) -> TaskSpec:
    """The task object registered as `name`.

    **Arguments:**

    - `name`: a key of `TASK_REGISTRY` (`"tso"`, `"dso"`, `"ders"`, `"dc_microgrid"`,
      `"gencos"`).
    - `**kwargs`: passed to the task's constructor.

    **Returns:**

    The task, a [`TaskSpec`][powerzoojax.core.TaskSpec]. A task of a distribution that is
    not installed raises `ImportError` naming it; an unknown name raises `ValueError`.
    """
    registry = TASK_REGISTRY
    if name not in registry:
        uninstalled = _uninstalled_tasks(registry)
        if name in uninstalled:
            # The distribution is missing (the import raises the message naming it), or its
            # package imports but its metadata lacks the task.
            dist = uninstalled[name]
            import_provider(FIRST_PARTY[dist], f"task {name!r}", dist)
            raise ImportError(
                f"task {name!r} is provided by {dist}, but the installed {dist} does not register it "
                f"(no {ENTRY_POINT_GROUP!r} entry point names it): reinstall {dist}"
            )
        raise ValueError(f"unknown task {name!r}; expected one of {sorted({*registry, *uninstalled})}")
    module_name, class_name, dist = registry[name]
    module = import_provider(module_name, f"task {name!r}", dist)
    return getattr(module, class_name)(**kwargs)


__getattr__, __dir__ = _FACADE.module_hooks(globals(), _DEFINED)
