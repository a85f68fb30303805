"""Grid environments (pzj-grid)."""

from powerzoojax.grid._dist_grid import (
    DIST_CONSTRAINT_NAMES,
    DistGridEnv,
    DistGridParams,
    DistGridState,
    make_dist_params,
)
from powerzoojax.grid._dist_grid_3phase import (
    DIST_3PHASE_CONSTRAINT_NAMES,
    DistGrid3PhaseEnv,
    DistGrid3PhaseParams,
    DistGrid3PhaseState,
    make_dist_3phase_params,
)
from powerzoojax.grid._trans_grid import (
    CONSTRAINT_NAMES,
    GridState,
    TransGridEnv,
    TransGridParams,
    make_trans_params,
)

__all__ = [
    "CONSTRAINT_NAMES", "DIST_3PHASE_CONSTRAINT_NAMES", "DIST_CONSTRAINT_NAMES", "DistGrid3PhaseEnv",
    "DistGrid3PhaseParams", "DistGrid3PhaseState", "DistGridEnv", "DistGridParams", "DistGridState",
    "GridState", "TransGridEnv", "TransGridParams", "make_dist_3phase_params", "make_dist_params",
    "make_trans_params",
]

from powerzoojax.grid.resources import (  # noqa: E402
    BatteryBundle,
    BatteryEnv,
    DieselBundle,
    FlexLoadBundle,
    FlexLoadEnv,
    RenewableBundle,
    RenewableEnv,
    ResourceBundle,
    SolarEnv,
    VehicleEnv,
    WindEnv,
    make_battery_bundle,
    make_battery_params,
    make_diesel_bundle,
    make_flexload_bundle,
    make_flexload_params,
    make_renewable_bundle,
    make_renewable_params,
    make_vehicle_params,
)

__all__ += [
    "BatteryBundle", "BatteryEnv", "DieselBundle", "FlexLoadBundle", "FlexLoadEnv", "RenewableBundle",
    "RenewableEnv", "ResourceBundle", "SolarEnv", "VehicleEnv", "WindEnv", "make_battery_bundle",
    "make_battery_params", "make_diesel_bundle", "make_flexload_bundle", "make_flexload_params",
    "make_renewable_bundle", "make_renewable_params", "make_vehicle_params",
]

from powerzoojax.grid._unit_commitment import (  # noqa: E402
    UC_CONSTRAINT_NAMES,
    UCParams,
    UCState,
    UnitCommitmentEnv,
    make_uc_params,
)

__all__ += ["UC_CONSTRAINT_NAMES", "UCParams", "UCState", "UnitCommitmentEnv", "make_uc_params"]

from powerzoojax.grid._datacenter import (
    DATACENTER_CONSTRAINT_NAMES,
    DataCenterEnv,
    DataCenterParams,
    DataCenterState,
    make_datacenter_params,
)
from powerzoojax.grid._dc_microgrid import (
    DCMG_CONSTRAINT_NAMES,
    DataCenterMicrogridEnv,
    DCMicrogridParams,
    DCMicrogridState,
    make_dcmicrogrid_params,
)
from powerzoojax.grid._dc_microgrid_profiles import (
    OOD_SCENARIOS,
    apply_ood_transform,
    make_dcmicrogrid_params_with_profiles,
)

__all__ += [
    "DATACENTER_CONSTRAINT_NAMES", "DCMG_CONSTRAINT_NAMES", "DCMicrogridParams", "DCMicrogridState",
    "DataCenterEnv", "DataCenterMicrogridEnv", "DataCenterParams", "DataCenterState", "OOD_SCENARIOS",
    "apply_ood_transform", "make_datacenter_params", "make_dcmicrogrid_params",
    "make_dcmicrogrid_params_with_profiles",
]

from powerzoojax.grid._dc_microgrid_shaping import DCMicrogridShapingWrapper  # noqa: E402

__all__ += ["DCMicrogridShapingWrapper"]
