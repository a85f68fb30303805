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
