"""Independent reference for the elastic dispatch LP: HiGHS (scipy `linprog`) in float64.

The LP of `powerzoojax.physics._dispatch_lp`, written out in inequality form: units
`lo ≤ x ≤ hi`, balance `Σx = total`, each row `row_lo − e⁻ ≤ a_tᵀx ≤ row_hi + e⁺` with
`e⁺, e⁻ ≥ 0` priced at `penalty × max |lin|` per MW.
"""

import numpy as np
from scipy.optimize import linprog


def highs_elastic_dispatch(lin, lo, hi, total, a_t, row_lo, row_hi, penalty=1e3):
    """`(violation, cost)`: the least total row violation [MW] and the optimal cost."""
    lin, lo, hi, a_t, row_lo, row_hi = (np.asarray(v, np.float64) for v in (lin, lo, hi, a_t, row_lo, row_hi))
    n, m = a_t.shape
    c = np.concatenate([lin, np.full(2 * m, penalty * np.max(np.abs(lin)))])
    a_ub = np.block([[a_t.T, -np.eye(m), np.zeros((m, m))], [-a_t.T, np.zeros((m, m)), -np.eye(m)]])
    b_ub = np.concatenate([row_hi, -row_lo])
    a_eq = np.concatenate([np.ones(n), np.zeros(2 * m)])[None]
    bounds = [(lo[i], hi[i]) for i in range(n)] + [(0, None)] * (2 * m)
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[float(total)], bounds=bounds, method="highs")
    assert res.status == 0, res.message
    return float(np.sum(res.x[n:])), float(res.fun)
