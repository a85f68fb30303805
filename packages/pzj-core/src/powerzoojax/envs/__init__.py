"""Facade over every environment in the project.

Base classes are exported eagerly (they live in core). Concrete envs live in other
distributions and are imported on first attribute access, so `pzj-core` alone
imports cleanly and a missing distribution is reported by name. A few names are aliases
kept for code written against the reference layout (`TransGridState` is `GridState`,
`DistGrid3PhState` is `DistGrid3PhaseState`, `CostMarketState` is `MarketState`,
...); `_ALIASES` lists them.

String ids: `make("TransGrid-case118-dc-v0") -> (env, params)`, `list_envs()`, `spec(id)`;
distributions add ids through the `powerzoojax.envs` entry-point group (see
`powerzoojax.envs._registry`).
"""

from typing import Any

from powerzoojax.core._provider import import_provider

from powerzoojax.core import (
    Box,
    Discrete,
    Environment,
    EnvParams,
    EnvState,
    MultiBinary,
    MultiDiscrete,
    Space,
)
from powerzoojax.envs._registry import EnvSpec, forwards_overrides, list_envs, make, register, spec

_CORE = "pzj-core"
_GRID = ("powerzoojax.grid", "pzj-grid")
_RESOURCES = ("powerzoojax.grid.resources", "pzj-grid")
_GRID_TASKS = ("powerzoojax.grid.tasks", "pzj-grid")
_MARKET = ("powerzoojax.market", "pzj-market")

# public name -> (module that defines it, distribution that ships that module)
_LAZY: dict[str, tuple[str, str]] = {
    "TransGridEnv": ("powerzoojax.grid.transmission", "pzj-grid"),
    "TransGridParams": ("powerzoojax.grid.transmission", "pzj-grid"),
    "GridState": ("powerzoojax.grid.transmission", "pzj-grid"),
    "make_trans_params": ("powerzoojax.grid.transmission", "pzj-grid"),
    "UnitCommitmentEnv": ("powerzoojax.grid.transmission", "pzj-grid"),
    "UCParams": ("powerzoojax.grid.transmission", "pzj-grid"),
    "UCState": ("powerzoojax.grid.transmission", "pzj-grid"),
    "make_uc_params": ("powerzoojax.grid.transmission", "pzj-grid"),
    "DistGridEnv": ("powerzoojax.grid.distribution", "pzj-grid"),
    "DistGridParams": ("powerzoojax.grid.distribution", "pzj-grid"),
    "DistGridState": ("powerzoojax.grid.distribution", "pzj-grid"),
    "make_dist_params": ("powerzoojax.grid.distribution", "pzj-grid"),
    "DistGrid3PhaseEnv": ("powerzoojax.grid.distribution", "pzj-grid"),
    "DistGrid3PhaseParams": ("powerzoojax.grid.distribution", "pzj-grid"),
    "DistGrid3PhaseState": ("powerzoojax.grid.distribution", "pzj-grid"),
    "make_dist_3phase_params": ("powerzoojax.grid.distribution", "pzj-grid"),
    "CostBasedMarketEnv": ("powerzoojax.market", "pzj-market"),
    "make_cost_market_params": ("powerzoojax.market", "pzj-market"),
    "BidBasedMarketEnv": ("powerzoojax.market", "pzj-market"),
    "make_bid_market_params": ("powerzoojax.market", "pzj-market"),
    "SimpleLMPArbitrageEnv": ("powerzoojax.market", "pzj-market"),
    "LMPMarketState": ("powerzoojax.market", "pzj-market"),
    "LMPMarketParams": ("powerzoojax.market", "pzj-market"),
    "make_lmp_market_params": ("powerzoojax.market", "pzj-market"),
    "MarketMARLState": ("powerzoojax.market", "pzj-market"),
    "MarketMARLParams": ("powerzoojax.market", "pzj-market"),
    "make_market_marl_params": ("powerzoojax.market", "pzj-market"),
    "market_marl_reset": ("powerzoojax.market", "pzj-market"),
    "market_marl_step": ("powerzoojax.market", "pzj-market"),
    "BatteryBundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "BatteryEnv": ("powerzoojax.grid.resources", "pzj-grid"),
    "DieselBundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "FlexLoadBundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "FlexLoadEnv": ("powerzoojax.grid.resources", "pzj-grid"),
    "RenewableBundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "RenewableEnv": ("powerzoojax.grid.resources", "pzj-grid"),
    "ResourceBundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "SolarEnv": ("powerzoojax.grid.resources", "pzj-grid"),
    "VehicleEnv": ("powerzoojax.grid.resources", "pzj-grid"),
    "WindEnv": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_battery_bundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_battery_params": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_diesel_bundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_flexload_bundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_flexload_params": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_renewable_bundle": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_renewable_params": ("powerzoojax.grid.resources", "pzj-grid"),
    "make_vehicle_params": ("powerzoojax.grid.resources", "pzj-grid"),
    "DataCenterEnv": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "DataCenterParams": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "DataCenterState": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "make_datacenter_params": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "DataCenterMicrogridEnv": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "DCMicrogridParams": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "DCMicrogridState": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "make_dcmicrogrid_params": ("powerzoojax.grid.microgrid", "pzj-grid"),
    "make_dcmicrogrid_params_with_profiles": ("powerzoojax.grid.microgrid", "pzj-grid"),
    # Space constructors (core).
    "make_box": ("powerzoojax.core", _CORE),
    "make_discrete": ("powerzoojax.core", _CORE),
    "make_multi_discrete": ("powerzoojax.core", _CORE),
    "make_multi_binary": ("powerzoojax.core", _CORE),
    # DC power flow on a case (core physics).
    "dc_power_flow": ("powerzoojax.physics", _CORE),
    "dc_power_flow_with_check": ("powerzoojax.physics", _CORE),
    "compute_dg_power": ("powerzoojax.physics.devices", _CORE),
    "compute_dg_fuel_cost": ("powerzoojax.physics.devices", _CORE),
    "compute_dg_emissions": ("powerzoojax.physics.devices", _CORE),
    # Grid state / params under the reference's names.
    "GridParams": _GRID,
    "TransGridState": _GRID,
    "DistGrid3PhState": _GRID,
    "DistGrid3PhParams": _GRID,
    "BatteryState": _RESOURCES,
    "BatteryParams": _RESOURCES,
    "RenewableState": _RESOURCES,
    "RenewableParams": _RESOURCES,
    "VehicleState": _RESOURCES,
    "VehicleParams": _RESOURCES,
    "FlexLoadState": _RESOURCES,
    "FlexLoadParams": _RESOURCES,
    "DieselParams": _RESOURCES,
    # Markets: shared state / params, clearing kernels.
    "MarketState": _MARKET,
    "MarketParams": _MARKET,
    "CostMarketState": _MARKET,
    "CostMarketParams": _MARKET,
    "BidMarketState": _MARKET,
    "BidMarketParams": _MARKET,
    "make_cost_segments": _MARKET,
    "piecewise_ed": _MARKET,
    "OfferSCEDSetup": _MARKET,
    "OfferSCEDResult": _MARKET,
    "prepare_offer_sced": _MARKET,
    "offer_sced": _MARKET,
    # TSO task factories, baselines and metrics (they build UnitCommitmentEnv params).
    "make_tso_case118_params": _GRID_TASKS,
    "make_tso_case14_params": _GRID_TASKS,
    "make_tso_ed_params": _GRID_TASKS,
    "make_tso_uc_params": _GRID_TASKS,
    "make_tso_scuc_params": _GRID_TASKS,
    "tso_all_on_rollout": _GRID_TASKS,
    "tso_merit_order_rollout": _GRID_TASKS,
    "compute_tso_metrics": _GRID_TASKS,
}

# public name -> the name it has in its module, where the two differ. Every market env
# keeps its state and params in the shared MarketState / MarketParams; the transmission
# env's params are TransGridParams (the reference's GridParams base carries no fields the
# transmission params lack).
_ALIASES: dict[str, str] = {
    "dc_power_flow": "dc_power_flow_on_case",
    "dc_power_flow_with_check": "dc_power_flow_on_case_with_check",
    "GridParams": "TransGridParams",
    "TransGridState": "GridState",
    "DistGrid3PhState": "DistGrid3PhaseState",
    "DistGrid3PhParams": "DistGrid3PhaseParams",
    "CostMarketState": "MarketState",
    "CostMarketParams": "MarketParams",
    "BidMarketState": "MarketState",
    "BidMarketParams": "MarketParams",
}

__all__ = [
    "Box", "Discrete", "EnvParams", "EnvSpec", "EnvState", "Environment", "MultiBinary",
    "MultiDiscrete", "Space", "forwards_overrides", "list_envs", "make", "register", "spec", *_LAZY,
]


def __getattr__(name: str) -> Any:
    try:
        module_name, distribution = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'powerzoojax.envs' has no attribute {name!r}") from None
    module = import_provider(module_name, name, distribution)
    value = getattr(module, _ALIASES.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
