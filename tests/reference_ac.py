"""Independent NumPy Newton–Raphson AC power flow (float64), test-only reference.

Slack bus at ``v_slack∠0``, every other bus PQ with the given net loads [p.u.]; the
network is ``build_ybus(case)`` (full π-model, shunts, taps). Polar mismatch equations
with a dense Jacobian: fine for the few-hundred-bus feeders the tests use.
"""

import numpy as np


def newton_ac_pf(y_bus, slack, p_load_pu, q_load_pu, v_slack=1.0, tol=1e-9, max_iter=30):
    """Return ``(v_mag, v_ang [rad], iterations)``; raises if it does not converge."""
    n = y_bus.shape[0]
    s_spec = -(np.asarray(p_load_pu, np.float64) + 1j * np.asarray(q_load_pu, np.float64))
    pq = np.array([i for i in range(n) if i != slack])
    vm = np.ones(n)
    vm[slack] = v_slack
    va = np.zeros(n)
    for it in range(max_iter):
        v = vm * np.exp(1j * va)
        current = y_bus @ v
        mismatch = v * np.conj(current) - s_spec
        f = np.concatenate([mismatch.real[pq], mismatch.imag[pq]])
        if np.max(np.abs(f)) < tol:
            return vm, va, it
        # Derivatives of S = V conj(Y V) (MATPOWER dSbus_dV, polar form).
        diag_v = np.diag(v)
        diag_i = np.diag(current)
        diag_vnorm = np.diag(v / np.abs(v))
        ds_dva = 1j * diag_v @ np.conj(diag_i - y_bus @ diag_v)
        ds_dvm = diag_v @ np.conj(y_bus @ diag_vnorm) + np.conj(diag_i) @ diag_vnorm
        jac = np.block(
            [
                [ds_dva.real[np.ix_(pq, pq)], ds_dvm.real[np.ix_(pq, pq)]],
                [ds_dva.imag[np.ix_(pq, pq)], ds_dvm.imag[np.ix_(pq, pq)]],
            ]
        )
        dx = np.linalg.solve(jac, -f)
        va[pq] += dx[: len(pq)]
        vm[pq] += dx[len(pq) :]
        # Near-zero-impedance lines (case 141) put ~1e6 entries in Ybus, which floors the
        # mismatch at ~1e-10; a vanishing Newton step is then the convergence test.
        if np.max(np.abs(dx)) < 1e-13:
            return vm, va, it + 1
    raise RuntimeError(f"newton_ac_pf: no convergence in {max_iter} iterations (max mismatch {np.max(np.abs(f))})")

