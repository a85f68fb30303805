"""Grid environments (pzj-grid)."""

from powerzoojax.grid._trans_grid import (
    CONSTRAINT_NAMES,
    GridState,
    TransGridEnv,
    TransGridParams,
    make_trans_params,
)

__all__ = ["CONSTRAINT_NAMES", "GridState", "TransGridEnv", "TransGridParams", "make_trans_params"]
