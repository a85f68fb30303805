"""Grid environments (pzj-grid), one room per domain:

- [`powerzoojax.grid.transmission`][powerzoojax.grid.transmission]: `TransGridEnv` (all physics modes, one network
  model each) and `UnitCommitmentEnv`;
- [`powerzoojax.grid.distribution`][powerzoojax.grid.distribution]: `DistGridEnv` and `DistGrid3PhaseEnv` on the
  shared radial-feeder base;
- [`powerzoojax.grid.microgrid`][powerzoojax.grid.microgrid]: `DataCenterEnv`, `DataCenterMicrogridEnv` and its
  shaping wrapper;
- [`powerzoojax.grid.resources`][powerzoojax.grid.resources]: device bundles a grid env attaches, and the standalone
  device envs;
- `powerzoojax.grid.tasks`: the frozen TSO, DSO, DERs and DC-microgrid tasks.

The envs import only `powerzoojax` core packages and `resources`; this package
re-exports their public names.
"""

from powerzoojax.grid.distribution import (
    DIST_3PHASE_CONSTRAINT_NAMES,
    DIST_CONSTRAINT_NAMES,
    DistGrid3PhaseEnv,
    DistGrid3PhaseParams,
    DistGrid3PhaseState,
    DistGridEnv,
    DistGridParams,
    DistGridState,
    make_dist_3phase_params,
    make_dist_params,
)
from powerzoojax.grid.microgrid import (
    DATACENTER_CONSTRAINT_NAMES,
    DCMG_CONSTRAINT_NAMES,
    OOD_SCENARIOS,
    DataCenterEnv,
    DataCenterMicrogridEnv,
    DataCenterParams,
    DataCenterState,
    DCMicrogridParams,
    DCMicrogridShapingWrapper,
    DCMicrogridState,
    apply_ood_transform,
    make_datacenter_params,
    make_dcmicrogrid_params,
    make_dcmicrogrid_params_with_profiles,
)
from powerzoojax.grid.resources import (
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
from powerzoojax.grid.transmission import (
    CONSTRAINT_NAMES,
    UC_CONSTRAINT_NAMES,
    GridState,
    TransGridEnv,
    TransGridParams,
    UCParams,
    UCState,
    UnitCommitmentEnv,
    make_trans_params,
    make_uc_params,
)

__all__ = [
    # transmission
    "CONSTRAINT_NAMES", "GridState", "TransGridEnv", "TransGridParams", "make_trans_params",
    "UC_CONSTRAINT_NAMES", "UCParams", "UCState", "UnitCommitmentEnv", "make_uc_params",
    # distribution
    "DIST_3PHASE_CONSTRAINT_NAMES", "DIST_CONSTRAINT_NAMES", "DistGrid3PhaseEnv", "DistGrid3PhaseParams",
    "DistGrid3PhaseState", "DistGridEnv", "DistGridParams", "DistGridState", "make_dist_3phase_params",
    "make_dist_params",
    # resources
    "BatteryBundle", "BatteryEnv", "DieselBundle", "FlexLoadBundle", "FlexLoadEnv", "RenewableBundle",
    "RenewableEnv", "ResourceBundle", "SolarEnv", "VehicleEnv", "WindEnv", "make_battery_bundle",
    "make_battery_params", "make_diesel_bundle", "make_flexload_bundle", "make_flexload_params",
    "make_renewable_bundle", "make_renewable_params", "make_vehicle_params",
    # microgrid
    "DATACENTER_CONSTRAINT_NAMES", "DCMG_CONSTRAINT_NAMES", "DCMicrogridParams", "DCMicrogridShapingWrapper",
    "DCMicrogridState", "DataCenterEnv", "DataCenterMicrogridEnv", "DataCenterParams", "DataCenterState",
    "OOD_SCENARIOS", "apply_ood_transform", "make_datacenter_params", "make_dcmicrogrid_params",
    "make_dcmicrogrid_params_with_profiles",
]
