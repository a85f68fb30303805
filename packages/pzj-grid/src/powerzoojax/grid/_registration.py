"""pzj-grid's env ids: the builders behind `powerzoojax.envs.make("TransGrid-case118-dc-v0")`.

`env_specs` is this distribution's `powerzoojax.envs` entry point (`pyproject.toml`);
the ids are also listed in core (`powerzoojax.envs._catalog`), which names this distribution
for them when it is not installed. Every builder
takes the arguments its id fixes (`case`, `mode`) plus the user's overrides, which reach
the params factory named in its `forwards_overrides`.
"""

from typing import Any

import numpy as np

from powerzoojax.case import load_case
from powerzoojax.envs import EnvSpec, forwards_overrides
from powerzoojax.envs._catalog import CatalogEntry
from powerzoojax.envs._registry import first_party_specs
from powerzoojax.grid.distribution import (
    DistGrid3PhaseEnv,
    DistGridEnv,
    make_dist_3phase_params,
    make_dist_3phase_params_from_case,
    make_dist_params,
)
from powerzoojax.grid.microgrid import (
    DataCenterEnv,
    DataCenterMicrogridEnv,
    make_datacenter_params,
    make_dcmicrogrid_params,
)
from powerzoojax.grid.resources import (
    BatteryEnv,
    FlexLoadEnv,
    SolarEnv,
    VehicleEnv,
    WindEnv,
    make_battery_params,
    make_flexload_params,
    make_renewable_params,
    make_vehicle_params,
)
from powerzoojax.grid.transmission import TransGridEnv, UnitCommitmentEnv, make_trans_params, make_uc_params
from powerzoojax.physics.devices import solar_bell_cf, wind_synthetic_cf

# Mode name in an id -> (physics, solver_mode) of make_trans_params.
TRANS_GRID_MODES: dict[str, tuple[int, int]] = {
    "dc": (0, 0), "dcopf": (0, 1), "ac": (1, 0), "dcopf_ac": (1, 1), "acopf": (0, 2),
}
# Mode name in an id -> what it runs, for listings.
TRANS_GRID_MODE_SUMMARIES: dict[str, str] = {
    "dc": "DC power flow, agent dispatch",
    "dcopf": "DC-OPF dispatch, DC power flow",
    "ac": "AC power flow, agent dispatch",
    "dcopf_ac": "DC-OPF dispatch, AC power flow",
    "acopf": "AC-OPF",
}


@forwards_overrides(make_trans_params, fills=("case", "physics", "solver_mode", "network_model"))
def trans_grid(*, case: str, mode: str, **overrides: Any) -> tuple[Any, Any]:
    """`TransGridEnv` on `case` in the id's physics `mode`."""
    if mode not in TRANS_GRID_MODES:
        raise ValueError(f"TransGrid: mode must be one of {sorted(TRANS_GRID_MODES)}, got {mode!r}")
    physics, solver_mode = TRANS_GRID_MODES[mode]
    return TransGridEnv(), make_trans_params(load_case(case), physics=physics, solver_mode=solver_mode, **overrides)


@forwards_overrides(make_uc_params, fills=("case",))
def unit_commitment(*, case: str, **overrides: Any) -> tuple[Any, Any]:
    """`UnitCommitmentEnv` on `case` with its unit-commitment columns."""
    return UnitCommitmentEnv(), make_uc_params(load_case(case), **overrides)


@forwards_overrides(make_dist_params, fills=("case",))
def dist_grid(*, case: str, **overrides: Any) -> tuple[Any, Any]:
    """`DistGridEnv` on the feeder `case` (one DER per non-slack bus by default)."""
    return DistGridEnv(), make_dist_params(load_case(case), **overrides)


_THREE_PHASE_FILLS = ("case", "n_nodes", "from_nodes", "to_nodes", "Z_3ph_pu", "load_P_3ph", "load_Q_3ph", "ref_bus", "base_mva")


@forwards_overrides(make_dist_3phase_params_from_case, make_dist_3phase_params, fills=_THREE_PHASE_FILLS)
def dist_grid_3phase(*, case: str, **overrides: Any) -> tuple[Any, Any]:
    """`DistGrid3PhaseEnv` on the three-phase feeder `case`."""
    return DistGrid3PhaseEnv(), make_dist_3phase_params_from_case(load_case(case), **overrides)


@forwards_overrides(make_datacenter_params)
def data_center(**overrides: Any) -> tuple[Any, Any]:
    """`DataCenterEnv` with the reference's data centre."""
    return DataCenterEnv(), make_datacenter_params(**overrides)


@forwards_overrides(make_dcmicrogrid_params, make_datacenter_params)
def data_center_microgrid(**overrides: Any) -> tuple[Any, Any]:
    """`DataCenterMicrogridEnv` with synthetic profiles."""
    return DataCenterMicrogridEnv(), make_dcmicrogrid_params(**overrides)


@forwards_overrides(make_battery_params)
def battery(**overrides: Any) -> tuple[Any, Any]:
    """Standalone `BatteryEnv`."""
    return BatteryEnv(), make_battery_params(**overrides)


@forwards_overrides(make_flexload_params)
def flex_load(**overrides: Any) -> tuple[Any, Any]:
    """Standalone `FlexLoadEnv`."""
    return FlexLoadEnv(), make_flexload_params(**overrides)


@forwards_overrides(make_vehicle_params)
def vehicle(**overrides: Any) -> tuple[Any, Any]:
    """Standalone `VehicleEnv`."""
    return VehicleEnv(), make_vehicle_params(**overrides)


def _day_hours(steps: int) -> np.ndarray:
    return 24.0 * np.arange(steps) / steps


@forwards_overrides(make_renewable_params)
def solar(**overrides: Any) -> tuple[Any, Any]:
    """`SolarEnv`: the solar bell capacity factor over one day of `steps_per_day` rows."""
    overrides.setdefault("cf_profile", np.asarray(solar_bell_cf(_day_hours(overrides.get("steps_per_day", 48)))))
    return SolarEnv(), make_renewable_params(**overrides)


@forwards_overrides(make_renewable_params)
def wind(**overrides: Any) -> tuple[Any, Any]:
    """`WindEnv`: the synthetic wind capacity factor over one day of `steps_per_day` rows."""
    overrides.setdefault("cf_profile", np.asarray(wind_synthetic_cf(_day_hours(overrides.get("steps_per_day", 48)))))
    return WindEnv(), make_renewable_params(**overrides)


@forwards_overrides("powerzoojax.grid.tasks.tso:TSOTask")
def tso_task(*, split: str = "train", start: int = 0, **task_kwargs: Any) -> tuple[Any, Any]:
    """The TSO task's env and the params of the episode starting at row `start` of `split`."""
    from powerzoojax.grid.tasks.tso import TSOTask

    task = TSOTask(**task_kwargs)
    return task.make_env(split), task.make_params(split, start)


@forwards_overrides("powerzoojax.grid.tasks.dso:DSOTask")
def dso_task(*, split: str = "train", start: int = 0, **task_kwargs: Any) -> tuple[Any, Any]:
    """The DSO task's env and the params of the episode starting at row `start` of `split`."""
    from powerzoojax.grid.tasks.dso import DSOTask

    task = DSOTask(**task_kwargs)
    return task.make_env(split), task.make_params(split, start)


@forwards_overrides("powerzoojax.grid.tasks.ders:DERsTask")
def ders_task(*, split: str = "train", start: int = 0, **task_kwargs: Any) -> tuple[Any, Any]:
    """The DERs task's (joint-action) env and the params of the episode starting at `start`."""
    from powerzoojax.grid.tasks.ders import DERsTask

    task = DERsTask(**task_kwargs)
    return task.make_env(split), task.make_params(split, start)


@forwards_overrides(
    "powerzoojax.grid.tasks.dc_microgrid:DCMicrogridTask", make_dcmicrogrid_params,
    fills=("cpu_profile", "outdoor_temp_profile", "pv_cf_profile", "price_profile"),
)
def dc_microgrid_task(
    *, split: str = "train", day: int | None = None, max_steps: int = 288, **task_kwargs: Any
) -> tuple[Any, Any]:
    """The DC-microgrid task's env and the params of workload `day` (default: the split's first)."""
    from powerzoojax.grid.tasks.dc_microgrid import DCMicrogridTask

    task = DCMicrogridTask(**task_kwargs)
    return task.make_env(split), task.make_params(split, day, max_steps=max_steps)


BUILDERS = {
    "TransGrid": trans_grid,
    "UnitCommitment": unit_commitment,
    "DistGrid": dist_grid,
    "DistGrid3Phase": dist_grid_3phase,
    "DataCenter": data_center,
    "DataCenterMicrogrid": data_center_microgrid,
    "Battery": battery,
    "FlexLoad": flex_load,
    "Vehicle": vehicle,
    "Solar": solar,
    "Wind": wind,
    "tso": tso_task,
    "dso": dso_task,
    "ders": ders_task,
    "dc_microgrid": dc_microgrid_task,
}


# Family -> its one-line summary (ids with a case add ", case <case>").
SUMMARIES = {
    "UnitCommitment": "UnitCommitmentEnv (commitment + DC-OPF dispatch)",
    "DistGrid": "DistGridEnv (radial feeder, DER set-points)",
    "DistGrid3Phase": "DistGrid3PhaseEnv (unbalanced three-phase feeder)",
    "DataCenter": "DataCenterEnv (GPU jobs and cooling)",
    "DataCenterMicrogrid": "DataCenterMicrogridEnv (data centre with PV, battery, diesel)",
    **{family: f"{family}Env (one device, standalone)" for family in ("Battery", "FlexLoad", "Vehicle", "Solar", "Wind")},
    "tso": "TSO task: security-constrained unit commitment on case 118",
    "dso": "DSO task: six flexible loads on case 33bw",
    "ders": "DERs task: batteries, PV and flexible loads on case 141 (joint action)",
    "dc_microgrid": "DC-microgrid task: data centre with PV, battery and diesel",
}


def describe(entry: CatalogEntry) -> str:
    """The one-line summary of a pzj-grid id."""
    case = entry.kwargs.get("case")
    if entry.family == "TransGrid":
        return f"TransGridEnv, case {case}: {TRANS_GRID_MODE_SUMMARIES[entry.kwargs['mode']]}"
    summary = SUMMARIES[entry.family]
    return summary if case is None else f"{summary}, case {case}"


def env_specs() -> list[EnvSpec]:
    """The `EnvSpec` of every id pzj-grid provides (its entry point)."""
    return first_party_specs("pzj-grid", BUILDERS, describe)
