"""Transmission networks: :class:`TransGridEnv` (units dispatched by the agent or an OPF over a
DC or AC network, one network model per physics mode) and :class:`UnitCommitmentEnv`
(commitment plus DC-OPF dispatch)."""

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
    "CONSTRAINT_NAMES", "GridState", "MODE_NAMES", "TransGridEnv", "TransGridParams", "UC_CONSTRAINT_NAMES",
    "UCParams", "UCState", "UnitCommitmentEnv", "make_trans_params", "make_uc_params",
]
