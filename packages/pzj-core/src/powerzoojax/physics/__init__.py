"""Pure power-system kernels: they know nothing about RL."""

from powerzoojax.physics._costs import generation_cost, marginal_cost
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
from powerzoojax.physics._dc_case import dc_power_flow_on_case, dc_power_flow_on_case_with_check
from powerzoojax.physics._line_outages import LineOutagePTDF, line_outage_ptdf, line_outage_ptdf_of_lines
from powerzoojax.physics._radial import RadialFlow, RadialNetwork, make_radial_network, radial_power_flow
from powerzoojax.physics._radial_3phase import (
    Radial3PhaseFlow,
    Radial3PhaseNetwork,
    make_radial_3phase_network,
    radial_3phase_power_flow,
    voltage_unbalance_percent,
)
from powerzoojax.physics._thermal import ac_thermal_check

__all__ = [
    "DCFlow", "DCNetwork", "LineOutagePTDF", "Radial3PhaseFlow", "Radial3PhaseNetwork", "RadialFlow", "RadialNetwork",
    "ac_thermal_check", "dc_power_flow", "dc_power_flow_on_case", "dc_power_flow_on_case_with_check", "dc_thermal_check",
    "generation_cost", "line_outage_ptdf", "line_outage_ptdf_of_lines", "load_line_flows", "make_dc_network",
    "make_radial_3phase_network", "make_radial_network", "marginal_cost", "proportional_dispatch",
    "radial_3phase_power_flow", "radial_power_flow",
    "unit_limit_violation", "voltage_unbalance_percent",
]

from powerzoojax.physics._ac_pf import ACNetwork, ACPFResult, ac_power_flow, make_ac_network  # noqa: E402

__all__ += ["ACNetwork", "ACPFResult", "ac_power_flow", "make_ac_network"]

from powerzoojax.physics._status import SolverStatus, status_code  # noqa: E402
from powerzoojax.physics._dc_opf import (  # noqa: E402
    DCOPF_ALGORITHMS,
    DCOPF_OBJECTIVES,
    DCOPFResult,
    DCOPFSetup,
    dc_opf,
    make_dc_opf_setup,
)
from powerzoojax.physics._dispatch_lp import DispatchBasis, DispatchLPTuning  # noqa: E402
from powerzoojax.physics._qp_ipm import DispatchQPSolution, solve_dispatch_qp  # noqa: E402

__all__ += [
    "DCOPF_ALGORITHMS", "DCOPF_OBJECTIVES", "DCOPFResult", "DCOPFSetup", "DispatchBasis", "DispatchLPTuning", "DispatchQPSolution",
    "SolverStatus", "dc_opf", "make_dc_opf_setup", "solve_dispatch_qp", "status_code",
]

from powerzoojax.physics._ac_opf import ACOPFResult, ACOPFSetup, ac_opf, make_ac_opf_setup  # noqa: E402

__all__ += ["ACOPFResult", "ACOPFSetup", "ac_opf", "make_ac_opf_setup"]

from powerzoojax.physics.sensitivities import ac_ptdf, lmp_load_sensitivity, voltage_var_sensitivity  # noqa: E402

__all__ += ["ac_ptdf", "lmp_load_sensitivity", "voltage_var_sensitivity"]

from powerzoojax.physics._ac_outages import (  # noqa: E402
    ACLineOutageNetwork,
    ACOutageModel,
    ac_network_with_line_outages,
    ac_network_with_line_outages_at,
    make_ac_outage_model,
)
from powerzoojax.physics._contingency import (  # noqa: E402
    ContingencyResult,
    contingency_screen,
    sampled_line_pair_outages,
    single_line_outages,
)

__all__ += [
    "ACLineOutageNetwork", "ACOutageModel", "ContingencyResult", "ac_network_with_line_outages",
    "ac_network_with_line_outages_at", "contingency_screen", "make_ac_outage_model", "sampled_line_pair_outages",
    "single_line_outages",
]

from powerzoojax.physics._ac_outages import ac_network_with_line_outages_of_case  # noqa: E402

__all__ += ["ac_network_with_line_outages_of_case"]
