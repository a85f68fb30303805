"""Distributed energy resources: standalone device envs and the bundles a grid env attaches
through `params.resources` (protocol: [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle])."""

from powerzoojax.grid.resources._battery import (
    BatteryBundle,
    BatteryBundleState,
    BatteryEnv,
    BatteryParams,
    BatteryState,
    make_battery_bundle,
    make_battery_params,
)
from powerzoojax.grid.resources._bundle import (
    FLEX_STAT_KEYS,
    BundleCtx,
    BundlesStep,
    ResourceBundle,
    bundles_action_dim,
    bundles_obs_dim,
    observe_bundles,
    reset_bundles,
    resolve_bus_ids,
    step_bundles,
)
from powerzoojax.grid.resources._diesel import DieselBundle, DieselBundleState, DieselParams, make_diesel_bundle
from powerzoojax.grid.resources._flexload import (
    FlexLoadBundle,
    FlexLoadBundleState,
    FlexLoadEnv,
    FlexLoadParams,
    FlexLoadState,
    make_flexload_bundle,
    make_flexload_params,
)
from powerzoojax.grid.resources._invariants import bundle_laws
from powerzoojax.grid.resources._renewable import (
    RenewableBundle,
    RenewableBundleState,
    RenewableEnv,
    RenewableParams,
    RenewableState,
    SolarEnv,
    WindEnv,
    make_renewable_bundle,
    make_renewable_params,
)
from powerzoojax.grid.resources._vehicle import VehicleEnv, VehicleParams, VehicleState, make_vehicle_params

__all__ = [
    "FLEX_STAT_KEYS", "BatteryBundle", "BatteryBundleState", "BatteryEnv", "BatteryParams", "BatteryState",
    "BundleCtx", "BundlesStep", "DieselBundle", "DieselBundleState", "DieselParams", "FlexLoadBundle", "FlexLoadBundleState",
    "FlexLoadEnv", "FlexLoadParams", "FlexLoadState", "RenewableBundle", "RenewableBundleState", "RenewableEnv",
    "RenewableParams", "RenewableState", "ResourceBundle", "SolarEnv", "VehicleEnv", "VehicleParams",
    "VehicleState", "WindEnv", "bundle_laws", "bundles_action_dim", "bundles_obs_dim", "make_battery_bundle",
    "make_battery_params", "make_diesel_bundle", "make_flexload_bundle", "make_flexload_params",
    "make_renewable_bundle", "make_renewable_params", "make_vehicle_params", "observe_bundles",
    "reset_bundles", "resolve_bus_ids", "step_bundles",
]
