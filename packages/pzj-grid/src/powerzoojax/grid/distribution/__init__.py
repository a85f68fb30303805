"""Radial distribution feeders: [`DistGridEnv`][powerzoojax.grid.distribution.DistGridEnv] (balanced sweep) and
[`DistGrid3PhaseEnv`][powerzoojax.grid.distribution.DistGrid3PhaseEnv] (unbalanced three-phase sweep) on their shared base
[`RadialFeederEnv`][powerzoojax.grid.distribution.RadialFeederEnv]."""

from powerzoojax.grid.distribution._dist_grid import (
    DIST_CONSTRAINT_NAMES,
    DistGridEnv,
    DistGridParams,
    DistGridState,
    make_dist_params,
)
from powerzoojax.grid.distribution._dist_grid_3phase import (
    DIST_3PHASE_CONSTRAINT_NAMES,
    DistGrid3PhaseEnv,
    DistGrid3PhaseParams,
    DistGrid3PhaseState,
    make_dist_3phase_params,
)
from powerzoojax.grid.distribution._feeder import RadialFeederEnv
from powerzoojax.grid.distribution._three_phase_case import make_dist_3phase_params_from_case

__all__ = [
    "DIST_3PHASE_CONSTRAINT_NAMES", "DIST_CONSTRAINT_NAMES", "DistGrid3PhaseEnv", "DistGrid3PhaseParams",
    "DistGrid3PhaseState", "DistGridEnv", "DistGridParams", "DistGridState", "RadialFeederEnv",
    "make_dist_3phase_params", "make_dist_3phase_params_from_case", "make_dist_params",
]
