"""Pure power-system kernels: they know nothing about RL."""

from powerzoojax.physics._costs import generation_cost, marginal_cost
from powerzoojax.physics._reduce import short_dot, short_matvec, short_sum
from powerzoojax.physics._dc import (
    DCFlow,
    DCNetwork,
    dc_power_flow,
    dc_thermal_check,
    load_line_flows,
    make_dc_network,
    proportional_dispatch,
    unit_limit_violation,
)

__all__ = [
    "DCFlow", "DCNetwork", "dc_power_flow", "dc_thermal_check", "generation_cost", "load_line_flows",
    "make_dc_network", "marginal_cost", "proportional_dispatch", "short_dot", "short_matvec",
    "short_sum", "unit_limit_violation",
]
