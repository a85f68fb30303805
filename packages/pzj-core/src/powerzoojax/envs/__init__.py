"""Facade over every environment in the project.

Base classes are exported eagerly (they live in core). Every other name is registered by
the distribution that defines it, through one entry point per name in the group
`powerzoojax.envs.names` of its `pyproject.toml`, and imported on first attribute access
(`powerzoojax.envs._facade`), so `pzj-core` alone imports cleanly and a name whose
distribution is missing raises an `ImportError` that names it. A few names are aliases
kept for code written against the reference layout (`TransGridState` is `GridState`,
`CostMarketState` is `MarketState`, ...): their entry point names the other attribute.

String ids: `make("TransGrid-case118-dc-v0") -> (env, params)`, `list_envs()`, `spec(id)`;
distributions add ids through the `powerzoojax.envs` entry-point group (see
`powerzoojax.envs._registry`).
"""

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
from powerzoojax.envs._facade import Facade
from powerzoojax.envs._registry import EnvSpec, forwards_overrides, list_envs, make, register, spec

# pzj-core's names beyond the base classes: name -> "module:attribute" (the reference's names
# for the DC power flow on a case differ from ours).
_FACADE = Facade(
    "powerzoojax.envs",
    own={
        "make_box": "powerzoojax.core:make_box",
        "make_discrete": "powerzoojax.core:make_discrete",
        "make_multi_discrete": "powerzoojax.core:make_multi_discrete",
        "make_multi_binary": "powerzoojax.core:make_multi_binary",
        "dc_power_flow": "powerzoojax.physics:dc_power_flow_on_case",
        "dc_power_flow_with_check": "powerzoojax.physics:dc_power_flow_on_case_with_check",
        "compute_dg_power": "powerzoojax.physics.devices:compute_dg_power",
        "compute_dg_fuel_cost": "powerzoojax.physics.devices:compute_dg_fuel_cost",
        "compute_dg_emissions": "powerzoojax.physics.devices:compute_dg_emissions",
    },
)
_DEFINED = (
    "Box", "Discrete", "EnvParams", "EnvSpec", "EnvState", "Environment", "MultiBinary", "MultiDiscrete", "Space",
    "forwards_overrides", "list_envs", "make", "register", "spec",
)


__getattr__, __dir__ = _FACADE.module_hooks(globals(), _DEFINED)
