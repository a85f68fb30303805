"""Task registry: `get_task("tso")` builds the frozen task object.

Tasks live with their envs in pzj-grid and pzj-market; this table names them so core
never imports those distributions until a task is asked for. The tasks' public API
(`TSOTask`, `make_dso_params`, `compute_ders_metrics`, ...) is re-exported lazily from
`powerzoojax.grid.tasks` and `powerzoojax.market.tasks`: the first access imports the
providing distribution, or raises an `ImportError` naming it.
"""

from typing import Any

from powerzoojax.core._provider import import_provider

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
    """Names of the registered tasks.

    **Returns:**

    A tuple of the keys of `TASK_REGISTRY`.
    """
    return tuple(TASK_REGISTRY)


def get_task(name: str, **kwargs) -> TaskSpec:
    """The task object registered as `name`.

    **Arguments:**

    - `name`: a key of `TASK_REGISTRY` (`"tso"`, `"dso"`, `"ders"`, `"dc_microgrid"`,
      `"gencos"`).
    - `**kwargs`: passed to the task's constructor.

    **Returns:**

    The task, a [`TaskSpec`][powerzoojax.core.TaskSpec].
    """
    if name not in TASK_REGISTRY:
        raise ValueError(f"unknown task {name!r}; expected one of {sorted(TASK_REGISTRY)}")
    module_name, class_name, dist = TASK_REGISTRY[name]
    module = import_provider(module_name, f"task {name!r}", dist)
    return getattr(module, class_name)(**kwargs)


_GRID_TASK_NAMES = (
    # TaskSpec classes
    "DSOTask", "TSOTask", "DERsTask", "DCMicrogridTask",
    # DSO
    "DSO_FEEDER_BUS_MAP", "DSO_FLEXLOAD_CONFIG", "DSO_V_MIN", "DSO_V_MAX", "load_feeder_shape",
    "load_dso_feeder_shapes", "make_dso_flexload_bundle", "make_dso_load_profiles", "make_dso_params",
    "make_dso_params_from_split", "make_dso_1flex_params", "make_dso_params_nonstationary",
    "make_synthetic_feeder_shapes", "rollout_dso", "dso_no_control_rollout", "dso_tou_rule_based_rollout",
    "dso_droop_rule_based_rollout", "dso_tou_heuristic_rollout", "dso_droop_heuristic_rollout", "compute_dso_metrics",
    # TSO
    "make_tso_net_load_profiles", "make_tso_net_load_profiles_from_data", "make_case14_with_uc_defaults",
    "make_tso_case118_params", "make_tso_case14_params", "make_tso_ed_params", "make_tso_uc_params",
    "make_tso_scuc_params", "tso_all_on_rollout", "tso_merit_order_rollout", "compute_tso_metrics",
    "make_comparison_tso_load_trace", "make_comparison_tso_params", "TSO_COMPARISON_SCHEMA",
    # DERs
    "DERS_BENCHMARK_LOAD_CASE", "DERS_BATTERY_BUSES", "DERS_PV_BUSES", "DERS_FLEXLOAD_BUSES", "DERS_BATTERY_CONFIG",
    "DERS_PV_CONFIG", "DERS_FLEXLOAD_CONFIG", "DERS_V_MIN", "DERS_V_MAX", "DERS_LARGE_BATTERY_BUSES",
    "DERS_LARGE_PV_BUSES", "DERS_LARGE_FLEXLOAD_BUSES", "DERS_LARGE_V_MIN", "DERS_LARGE_V_MAX",
    "make_ders_battery_bundle", "make_ders_pv_bundle", "make_ders_flexload_bundle", "make_ders_params",
    "make_ders_params_from_split", "make_ders_params_with_profiles", "make_ders_marl_env", "make_ders_large_params",
    "make_ders_large_marl_env", "make_ders_ood_params", "make_ders_3phase_eval", "load_ders_load_shape",
    "rollout_ders", "ders_no_control_rollout", "ders_volt_droop_rollout", "agent_dropout_rollout",
    "compute_ders_metrics", "compute_ders_safety_metrics",
    # DC microgrid
    "make_dcmicrogrid_params", "make_dcmicrogrid_params_with_profiles", "DataCenterMicrogridEnv",
    "DCMicrogridParams", "DCMicrogridState", "compute_dcmicrogrid_metrics",
)
_MARKET_TASK_NAMES = (
    "GencosTask", "load_gencos_profiles", "make_gencos_params", "make_gencos_env", "compute_gencos_metrics",
)
# public name -> (module that provides it, distribution that ships that module)
_LAZY: dict[str, tuple[str, str]] = {
    **{name: ("powerzoojax.grid.tasks", "pzj-grid") for name in _GRID_TASK_NAMES},
    **{name: ("powerzoojax.market.tasks", "pzj-market") for name in _MARKET_TASK_NAMES},
}

__all__ = [
    "TASK_REGISTRY", "ConstraintSpec", "EpisodeTrace", "TaskSpec", "episode_rollout", "get_task", "list_tasks", *_LAZY,
]


def __getattr__(name: str) -> Any:
    try:
        module_name, distribution = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'powerzoojax.tasks' has no attribute {name!r}") from None
    module = import_provider(module_name, name, distribution)
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
