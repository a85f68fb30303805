"""Three-phase feeder params from a case of the registry (`load_case("123")`)."""

from typing import Any

import numpy as np

from powerzoojax.case import CaseData
from powerzoojax.grid.distribution._dist_grid_3phase import DistGrid3PhaseParams, make_dist_3phase_params

_PHASE_P = ("node_pd_a", "node_pd_b", "node_pd_c")
_PHASE_Q = ("node_qd_a", "node_qd_b", "node_qd_c")


def make_dist_3phase_params_from_case(case: CaseData, *, max_steps: int = 48, **kwargs: Any) -> DistGrid3PhaseParams:
    """`make_dist_3phase_params` for a feeder case: its in-service lines, balanced
    impedances and per-phase loads held over the episode.

    Line impedances are `(r + jx)·I₃` from the case's scalar `r, x` (mutual coupling is not
    in `CaseData`); each bus load is the case's per-phase value where it has one (case 123),
    else its load split equally over the phases; every row of the load profile is that load.

    **Arguments:**

    - `case`: a radial distribution case whose in-service lines form a tree.
    - `max_steps`: episode length [steps]; also the number of load rows.
    - `kwargs`: further arguments of `make_dist_3phase_params` (`v_min`,
      `resources`, `include_der`, ...); the topology, loads, reference bus and base come
      from the case.

    **Returns:** `DistGrid3PhaseParams`. Raises `ValueError` when the in-service
    lines are not a tree.
    """
    status = np.asarray(case.line_status) > 0
    f_idx = np.asarray(case.line_from_idx)[status]
    t_idx = np.asarray(case.line_to_idx)[status]
    n = case.n_nodes
    if f_idx.size != n - 1:
        raise ValueError(
            f"make_dist_3phase_params_from_case: the {f_idx.size} in-service lines of a {n}-bus case are not a tree "
            f"(expected {n - 1})"
        )
    r = np.asarray(case.line_r, np.float64)[status]
    x = np.asarray(case.line_x, np.float64)[status]
    z = (r + 1j * x)[:, None, None] * np.eye(3)[None]
    base = float(case.base_mva)
    if all(getattr(case, f, None) is not None for f in _PHASE_P + _PHASE_Q):
        p = np.stack([np.asarray(getattr(case, f), np.float64) for f in _PHASE_P], axis=1)
        q = np.stack([np.asarray(getattr(case, f), np.float64) for f in _PHASE_Q], axis=1)
    else:
        p = np.repeat(np.asarray(case.node_pd, np.float64)[:, None] / 3.0, 3, axis=1)
        q = np.repeat(np.asarray(case.node_qd, np.float64)[:, None] / 3.0, 3, axis=1)
    nonref = [i for i in range(n) if i != case.slack_bus_idx]
    row_p, row_q = (p[nonref] / base).reshape(-1), (q[nonref] / base).reshape(-1)
    return make_dist_3phase_params(
        n, f_idx, t_idx, z, np.tile(row_p, (max_steps, 1)), np.tile(row_q, (max_steps, 1)),
        ref_bus=case.slack_bus_idx, max_steps=max_steps, base_mva=base, **kwargs,
    )
