"""Independent offer-SCED reference for tests: the LP solved by HiGHS in float64.

The network operator is rebuilt from the raw reactances (:func:`reference_dc.b_theta_flows`,
one unit injection per bus against the slack), the segments from the unit bounds, so no
operator of the package enters the reference. Only the LP's definition is shared: increments
``δ`` above the runtime minimum ``p_lo = min(p_min_rt, p_max_rt − 1e-3)``, each unit's ``K``
equal segments scaled to its runtime headroom (never narrower than ``1e-4`` MW), balance
``Σδ = Σload − Σp_lo`` and ``floor ≤ flow ≤ cap`` on the lines with a real limit.

Besides the optimum, the reference says where a float32 solver can be held to it exactly:
``dispatch_unique`` (every segment at a bound and every binding line has a dual of at least
``TIE_TOL``, so the optimal face is HiGHS's vertex) and ``lmp_unique`` (primal
non-degenerate: as many segments strictly inside their range as binding lines plus one,
with no segment or line within ``GRAY_MW`` of a bound it is not on).
"""

import dataclasses

import numpy as np
from reference_dc import b_theta_flows
from scipy.optimize import linprog

UNLIMITED_MW = 1e5
MIN_WIDTH_MW = 1e-4
TIE_TOL = 5e-4  # $/MWh: a reduced cost below this is a tie (a flat face of optima)
ON_BOUND_MW = 1e-6
GRAY_MW = 0.05


@dataclasses.dataclass(frozen=True)
class SCEDReference:
    optimal: bool
    objective: float  # offer cost cᵀδ [$/h]
    unit_power: np.ndarray  # [MW]
    lmp: np.ndarray  # [$/MWh]
    dispatch_unique: bool
    lmp_unique: bool
    n_binding: int


def ptdf_from_reactances(case) -> np.ndarray:
    """(L, N) flow per MW injected at each bus and withdrawn at the slack."""
    ptdf = np.zeros((case.n_lines, case.n_nodes))
    for k in range(case.n_nodes):
        if k != case.slack_bus_idx:
            inj = np.zeros(case.n_nodes)
            inj[k], inj[case.slack_bus_idx] = 1.0, -1.0
            ptdf[:, k] = b_theta_flows(case, inj)
    return ptdf


def runtime_lp_bounds(case, n_segments, p_min_rt=None, p_max_rt=None):
    """(p_lo, segment widths flattened unit-major) of the LP, float64."""
    p_min = np.asarray(case.unit_p_min, np.float64)
    p_max = np.asarray(case.unit_p_max, np.float64)
    width = np.maximum(p_max - p_min, 0.0) / n_segments
    if p_min_rt is None and p_max_rt is None:
        p_lo, frac = p_min, np.ones_like(p_min)
    else:
        p_min_rt = p_min if p_min_rt is None else np.asarray(p_min_rt, np.float64)
        p_max_rt = p_max if p_max_rt is None else np.asarray(p_max_rt, np.float64)
        p_lo = np.minimum(p_min_rt, p_max_rt - 1e-3)
        frac = np.clip((p_max_rt - p_lo) / np.maximum(p_max - p_min, 1e-6), 0.0, 1.0)
    widths = np.repeat((width * frac)[:, None], n_segments, axis=1).ravel()
    return p_lo, np.maximum(widths, MIN_WIDTH_MW)


def highs_sced(case, ptdf, node_load, prices, p_min_rt=None, p_max_rt=None, line_scale=1.0) -> SCEDReference:
    """The offer SCED of ``prices`` (U, K) [$/MWh] for ``node_load`` (N,) [MW] by HiGHS,
    with the case's line limits times ``line_scale``."""
    n_units, n_seg = prices.shape
    p_lo, widths = runtime_lp_bounds(case, n_seg, p_min_rt, p_max_rt)
    units_map = np.asarray(case.nodes_units_map, np.float64)
    m_u = ptdf @ units_map
    cap = np.asarray(case.line_cap, np.float64)
    floor = np.asarray(case.line_floor, np.float64)
    cap = np.where((cap == 0) | (cap >= UNLIMITED_MW), np.inf, line_scale * cap)
    floor = np.where((floor == 0) | (floor <= -UNLIMITED_MW), -np.inf, line_scale * floor)
    lim = np.flatnonzero(np.isfinite(cap) | np.isfinite(floor))
    m_s = np.repeat(m_u[lim], n_seg, axis=1)
    f0 = m_u[lim] @ p_lo - ptdf[lim] @ node_load
    n = n_units * n_seg
    res = linprog(
        np.asarray(prices, np.float64).ravel(),
        A_ub=np.vstack([m_s, -m_s]),
        b_ub=np.concatenate([cap[lim] - f0, f0 - floor[lim]]),
        A_eq=np.ones((1, n)),
        b_eq=[node_load.sum() - p_lo.sum()],
        bounds=list(zip(np.zeros(n), widths)),
        method="highs",
    )
    if res.status != 0:
        nan = np.full(case.n_nodes, np.nan)
        return SCEDReference(False, np.nan, np.full(n_units, np.nan), nan, False, False, 0)
    n_lim = lim.size
    line_dual = res.ineqlin.marginals[:n_lim] - res.ineqlin.marginals[n_lim:]  # ∂cost/∂cap
    lmp = res.eqlin.marginals[0] + ptdf[lim].T @ line_dual  # load enters D and f0
    x = res.x
    slack = np.minimum(res.ineqlin.residual[:n_lim], res.ineqlin.residual[n_lim:])
    binding = slack < ON_BOUND_MW
    at_bound = (x < ON_BOUND_MW) | (x > widths - ON_BOUND_MW)
    reduced = np.abs(res.lower.marginals + res.upper.marginals)
    dispatch_unique = bool(np.all(reduced[at_bound] >= TIE_TOL) and np.all(np.abs(line_dual[binding]) >= TIE_TOL))
    gray = lambda gap: np.any((gap >= ON_BOUND_MW) & (gap < GRAY_MW))  # noqa: E731
    interior = int(np.sum(~at_bound))
    lmp_unique = interior == int(binding.sum()) + 1 and not (gray(slack) or gray(x) or gray(widths - x))
    power = p_lo + x.reshape(n_units, n_seg).sum(axis=1)
    return SCEDReference(True, float(res.fun), power, lmp, dispatch_unique, bool(lmp_unique), int(binding.sum()))
