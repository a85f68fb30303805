"""Transmission networks: [`TransGridEnv`][powerzoojax.grid.transmission.TransGridEnv] (units dispatched by the agent or an OPF over a
DC or AC network) with its network models, one per physics mode (`DCPowerFlowModel`,
`DCOPFModel`, `ACPowerFlowModel`, `ACOPFModel`; the protocol `NetworkModel` for a
model of your own), and [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv] (commitment plus DC-OPF dispatch)."""

from powerzoojax.grid.transmission._network_models import (
    ACCaseData,
    ACOPFModel,
    ACPowerFlowModel,
    DCOPFModel,
    DCPowerFlowModel,
    NetworkInputs,
    NetworkModel,
    NetworkSolution,
    PreviousState,
)
from powerzoojax.grid.transmission._trans_grid import CONSTRAINT_NAMES, GridState, TransGridEnv
from powerzoojax.grid.transmission._trans_grid_params import MODE_NAMES, TransGridParams, make_trans_params
from powerzoojax.grid.transmission._unit_commitment import (
    UC_CONSTRAINT_NAMES,
    UCParams,
    UCState,
    UnitCommitmentEnv,
    make_uc_params,
)

__all__ = [
    "ACCaseData", "ACOPFModel", "ACPowerFlowModel", "CONSTRAINT_NAMES", "DCOPFModel", "DCPowerFlowModel", "GridState",
    "MODE_NAMES", "NetworkInputs", "NetworkModel", "NetworkSolution", "PreviousState", "TransGridEnv", "TransGridParams",
    "UC_CONSTRAINT_NAMES", "UCParams", "UCState", "UnitCommitmentEnv", "make_trans_params", "make_uc_params",
]
