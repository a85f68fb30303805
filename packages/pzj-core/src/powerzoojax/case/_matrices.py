"""Network matrices of a case, built on the host in NumPy float64.

These run at setup time on concrete arrays (never inside `jit`); `load_case` casts their
results to float32. `gen_cost_coeffs` is the exception: it is a pure `jnp` stack and may be
traced.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Complex, Float, Int

from ._case_data import CaseData

_IndexLike = Int[np.ndarray | Array, " n"]


def build_incidence(
    line_from_idx: Int[np.ndarray | Array, " n_lines"],
    line_to_idx: Int[np.ndarray | Array, " n_lines"],
    n_nodes: int,
) -> Float[np.ndarray, "n_lines n_nodes"]:
    """Line-node incidence `A` with `A[l, from] = +1` and `A[l, to] = -1`.

    **Arguments:**

    - `line_from_idx`, `line_to_idx`: `(n_lines,)` 0-based end nodes.
    - `n_nodes`: number of nodes.

    **Returns:**

    A float NumPy array of shape `(n_lines, n_nodes)`.
    """
    from_idx = np.asarray(line_from_idx, dtype=np.int64)
    to_idx = np.asarray(line_to_idx, dtype=np.int64)
    lines = np.arange(from_idx.shape[0])
    incidence = np.zeros((from_idx.shape[0], n_nodes), dtype=np.float64)
    # Accumulate rather than assign so that a (degenerate) self-loop cancels to a zero row.
    np.add.at(incidence, (lines, from_idx), 1.0)
    np.add.at(incidence, (lines, to_idx), -1.0)
    return incidence


def build_ptdf(
    line_from_idx: Int[np.ndarray | Array, " n_lines"],
    line_to_idx: Int[np.ndarray | Array, " n_lines"],
    line_x: Float[np.ndarray | Array, " n_lines"],
    n_nodes: int,
    slack_bus_idx: int,
    in_service: Bool[np.ndarray | Array, " n_lines"] | None = None,
) -> Float[np.ndarray, "n_lines n_nodes"]:
    """DC power-transfer distribution factors [MW line flow per MW nodal injection].

    With `b = -1/x`, `B = A^T diag(b) A` and `X` = the inverse of `B` without the
    slack row and column, re-embedded with a zero slack row and column,
    `PTDF = diag(b) A X`. The two minus signs (in `b` and in `X = B^-1`) cancel, so a
    flow is positive from `from` to `to`; the slack column is zero (the slack absorbs
    the imbalance). Only the lines where `in_service` is True enter `B`; the others get
    `b = 0`, hence a zero row: an open line carries no power.

    **Arguments:**

    - `line_from_idx`, `line_to_idx`: `(n_lines,)` 0-based end nodes.
    - `line_x`: `(n_lines,)` reactances [p.u.].
    - `n_nodes`: number of nodes.
    - `slack_bus_idx`: 0-based slack node.
    - `in_service`: `(n_lines,)` bool; `None` takes every line.

    **Returns:**

    A float64 NumPy array of shape `(n_lines, n_nodes)`.

    Raises:
        ValueError: if the network without the slack is singular (an island or a zero
            reactance).
    """
    reactance = np.asarray(line_x, dtype=np.float64)
    susceptance = -1.0 / reactance
    if in_service is not None:
        susceptance = np.where(np.asarray(in_service, dtype=bool), susceptance, 0.0)
    # Scatter instead of Aᵀ·diag(b)·A: the dense product costs seconds on 2,000-bus cases.
    f_idx = np.asarray(line_from_idx, dtype=np.int64)
    t_idx = np.asarray(line_to_idx, dtype=np.int64)
    b_bus = np.zeros((n_nodes, n_nodes), dtype=np.float64)
    np.add.at(b_bus, (f_idx, f_idx), susceptance)
    np.add.at(b_bus, (t_idx, t_idx), susceptance)
    np.add.at(b_bus, (f_idx, t_idx), -susceptance)
    np.add.at(b_bus, (t_idx, f_idx), -susceptance)
    keep = np.flatnonzero(np.arange(n_nodes) != slack_bus_idx)
    x_bus = np.zeros((n_nodes, n_nodes), dtype=np.float64)
    try:
        x_bus[np.ix_(keep, keep)] = np.linalg.inv(b_bus[np.ix_(keep, keep)])
    except np.linalg.LinAlgError as err:
        raise ValueError(
            "build_ptdf: the reduced susceptance matrix is singular; the network is not "
            f"connected to the slack bus (index {slack_bus_idx})"
        ) from err
    return susceptance[:, None] * (x_bus[f_idx] - x_bus[t_idx])


def build_bus_map(
    node_idx: _IndexLike,
    n_nodes: int,
) -> Float[np.ndarray, "n_nodes n"]:
    """0/1 map `M[node_idx[k], k] = 1` from devices (units or loads) to nodes.

    **Arguments:**

    - `node_idx`: `(n,)` 0-based node of each device.
    - `n_nodes`: number of nodes.

    **Returns:**

    A float NumPy array of shape `(n_nodes, n)`.
    """
    idx = np.asarray(node_idx, dtype=np.int64)
    bus_map = np.zeros((n_nodes, idx.shape[0]), dtype=np.float64)
    bus_map[idx, np.arange(idx.shape[0])] = 1.0
    return bus_map


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
