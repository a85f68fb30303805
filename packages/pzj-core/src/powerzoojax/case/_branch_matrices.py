"""Matrices of a network given as branch lists: line-node incidence, DC power-transfer
factors, device-to-node maps.

They take plain index and reactance arrays rather than a `CaseData`, so that the case
builders and `CaseData` itself (which rebuilds its PTDF when a line's status changes) can
call them. They run at setup time in NumPy float64 on concrete arrays (never inside
`jit`); the callers cast the results to float32.
"""

import numpy as np
from jaxtyping import Array, Bool, Float, Int

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
    # Scatter instead of Aᵀ·diag(b)·A: the dense product is cubic in the number of buses.
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
