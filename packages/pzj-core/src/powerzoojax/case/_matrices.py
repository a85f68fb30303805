"""Matrices of a `CaseData`: branch and bus admittances, built on the host in NumPy
float64, and the stacked cost coefficients.

The admittances run at setup time on concrete arrays (never inside `jit`).
`gen_cost_coeffs` is a pure `jnp` stack and may be traced. The matrices that need only
branch lists (incidence, PTDF, bus maps) are in `._branch_matrices`.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Complex, Float

from ._case_data import CaseData


def build_branch_admittances(
    case: CaseData,
) -> tuple[Complex[np.ndarray, "n_lines n_nodes"], Complex[np.ndarray, "n_lines n_nodes"]]:
    """Branch admittance matrices `(Yf, Yt)` [p.u.], MATPOWER pi-model.

    `If = Yf V` and `It = Yt V` are the currents injected into each branch at its
    from and to end. Out-of-service branches have zero rows. With `Ys = 1/(r + jx)` and
    `tap = ratio * exp(j angle)`: `Yff = (Ys + jb/2)/|tap|^2`, `Yft = -Ys/conj(tap)`,
    `Ytf = -Ys/tap`, `Ytt = Ys + jb/2`.

    **Arguments:**

    - `case`: a case holding concrete arrays (host-side).

    **Returns:**

    `(Yf, Yt)`, complex NumPy arrays of shape `(n_lines, n_nodes)`.
    """
    y_ff, y_ft, y_tf, y_tt = _branch_pi_terms(case)
    from_idx = np.asarray(case.line_from_idx, dtype=np.int64)
    to_idx = np.asarray(case.line_to_idx, dtype=np.int64)
    lines = np.arange(case.n_lines)
    y_from = np.zeros((case.n_lines, case.n_nodes), dtype=np.complex128)
    y_to = np.zeros((case.n_lines, case.n_nodes), dtype=np.complex128)
    np.add.at(y_from, (lines, from_idx), y_ff)
    np.add.at(y_from, (lines, to_idx), y_ft)
    np.add.at(y_to, (lines, from_idx), y_tf)
    np.add.at(y_to, (lines, to_idx), y_tt)
    return y_from, y_to


def build_ybus(case: CaseData) -> Complex[np.ndarray, "n_nodes n_nodes"]:
    """Bus admittance matrix [p.u.] of the in-service branches plus bus shunts.

    `Ybus = Cf^T Yf + Ct^T Yt + diag((Gs + jBs)/base_mva)` (MATPOWER's `makeYbus`).

    **Arguments:**

    - `case`: a case holding concrete arrays (host-side).

    **Returns:**

    A complex NumPy array of shape `(n_nodes, n_nodes)`.
    """
    y_from, y_to = build_branch_admittances(case)
    y_bus = np.zeros((case.n_nodes, case.n_nodes), dtype=np.complex128)
    np.add.at(y_bus, np.asarray(case.line_from_idx, dtype=np.int64), y_from)
    np.add.at(y_bus, np.asarray(case.line_to_idx, dtype=np.int64), y_to)
    shunt = (
        np.asarray(case.node_gs, dtype=np.float64) + 1j * np.asarray(case.node_bs, np.float64)
    ) / case.base_mva
    y_bus[np.diag_indices(case.n_nodes)] += shunt
    return y_bus


def gen_cost_coeffs(case: CaseData) -> Float[Array, "n_units 3"]:
    """Marginal-cost coefficients stacked as columns `(a, b, c)`: `MC = a p^2 + b p + c`.

    **Arguments:**

    - `case`: the case.

    **Returns:**

    A `(n_units, 3)` array [$/MWh per MW^2, per MW, and $/MWh].
    """
    return jnp.stack([case.unit_cost_a, case.unit_cost_b, case.unit_cost_c], axis=-1)


def _branch_pi_terms(
    case: CaseData,
) -> tuple[
    Complex[np.ndarray, " n_lines"],
    Complex[np.ndarray, " n_lines"],
    Complex[np.ndarray, " n_lines"],
    Complex[np.ndarray, " n_lines"],
]:
    in_service = np.asarray(case.line_status) > 0
    r = np.asarray(case.line_r, dtype=np.float64)
    x = np.asarray(case.line_x, dtype=np.float64)
    b = np.asarray(case.line_b, dtype=np.float64)
    ratio = np.asarray(case.line_ratio, dtype=np.float64)
    angle = np.deg2rad(np.asarray(case.line_angle, dtype=np.float64))
    y_series = in_service / (r + 1j * x)
    y_charging = in_service * 1j * b / 2.0
    tap = ratio * np.exp(1j * angle)
    y_tt = y_series + y_charging
    y_ff = y_tt / (tap * np.conj(tap))
    y_ft = -y_series / np.conj(tap)
    y_tf = -y_series / tap
    return y_ff, y_ft, y_tf, y_tt
