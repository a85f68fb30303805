"""Independent DC power-flow reference for tests: reduced B-θ solve with NumPy (float64).

Built branch by branch from the raw reactances; it never touches the PTDF or any other
operator of the package, so agreement is evidence, not tautology.
"""

import numpy as np


def b_theta_flows(case, injection_mw: np.ndarray, in_service: np.ndarray | None = None) -> np.ndarray:
    """Branch flows [MW], from→to positive, for a balanced nodal injection [MW].

    ``in_service`` (bool per line, default all): only those lines enter the reduced B;
    the others carry 0 MW.
    """
    n = case.n_nodes
    from_idx = np.asarray(case.line_from_idx)
    to_idx = np.asarray(case.line_to_idx)
    x = np.asarray(case.line_x, np.float64)
    closed = np.ones(from_idx.shape[0], bool) if in_service is None else np.asarray(in_service, bool)
    b_bus = np.zeros((n, n))
    for f, t, x_l, on in zip(from_idx, to_idx, x, closed):
        if not on:
            continue
        b_bus[f, f] += 1.0 / x_l
        b_bus[t, t] += 1.0 / x_l
        b_bus[f, t] -= 1.0 / x_l
        b_bus[t, f] -= 1.0 / x_l
    keep = [k for k in range(n) if k != case.slack_bus_idx]
    theta = np.zeros(n)  # MW × p.u. reactance: the base cancels in the flows
    theta[keep] = np.linalg.solve(b_bus[np.ix_(keep, keep)], np.asarray(injection_mw, np.float64)[keep])
    return np.where(closed, (theta[from_idx] - theta[to_idx]) / x, 0.0)
