"""Pure device kernels (batteries, renewables, flexible loads, diesel, vehicles) shared by
the resource bundles of the grid envs and the microgrid envs. Element-wise in their
device arrays; MW, MVAr, MWh and hours throughout."""

from powerzoojax.physics.devices._battery import (
    battery_limits,
    battery_soc_update,
    battery_step,
    one_way_efficiencies,
)
from powerzoojax.physics.devices._diesel import compute_dg_emissions, compute_dg_fuel_cost, compute_dg_power
from powerzoojax.physics.devices._flexload import FLEX_BUFFER_SLOTS, flexload_buffer_energy, flexload_step
from powerzoojax.physics.devices._renewable import (
    curtailment_fraction,
    inverter_q_clip,
    inverter_q_limit,
    renewable_active_power,
    renewable_step,
    solar_bell_cf,
    wind_synthetic_cf,
)
from powerzoojax.physics.devices._vehicle import vehicle_charge, vehicle_commute

__all__ = [
    "FLEX_BUFFER_SLOTS", "battery_limits", "battery_soc_update", "battery_step", "compute_dg_emissions",
    "compute_dg_fuel_cost", "compute_dg_power", "curtailment_fraction", "flexload_buffer_energy",
    "flexload_step", "inverter_q_clip", "inverter_q_limit", "one_way_efficiencies", "renewable_active_power",
    "renewable_step", "solar_bell_cf", "vehicle_charge", "vehicle_commute", "wind_synthetic_cf",
]
