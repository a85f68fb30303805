"""Line status and connectivity of a case, on the host.

A DC network solve needs every bus joined to the slack by in-service lines: the reduced
susceptance matrix of an islanded network is singular, and no single slack can balance
the island. The case builders and [`case_with_line_status`][powerzoojax.case.case_with_line_status] refuse such a topology
with an error that names the islanded buses (the case's own bus numbers) and the lines
that are out, so the caller sees which switching state caused it.
"""

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Int

from ._case_data import CaseData
from ._matrices import build_ptdf

# Error messages list at most this many buses / lines, then the count.
_MAX_LISTED = 20


def nodes_off_slack(
    line_from_idx: Int[np.ndarray | Array, " n_lines"],
    line_to_idx: Int[np.ndarray | Array, " n_lines"],
    in_service: Bool[np.ndarray | Array, " n_lines"],
    n_nodes: int,
    slack_bus_idx: int,
) -> Bool[np.ndarray, " n_nodes"]:
    """True at the nodes with no path of in-service lines to the slack (breadth-first search).

    **Arguments:**

    - `line_from_idx`, `line_to_idx`: `(n_lines,)` 0-based end nodes.
    - `in_service`: `(n_lines,)` bool line status.
    - `n_nodes`: number of nodes.
    - `slack_bus_idx`: 0-based slack node.

    **Returns:**

    A bool NumPy array of shape `(n_nodes,)`.
    """
    from_idx = np.asarray(line_from_idx, dtype=np.int64)
    to_idx = np.asarray(line_to_idx, dtype=np.int64)
    active = np.asarray(in_service, dtype=bool)
    neighbours: list[list[int]] = [[] for _ in range(n_nodes)]
    for f, t in zip(from_idx[active].tolist(), to_idx[active].tolist()):
        neighbours[f].append(t)
        neighbours[t].append(f)
    reached = np.zeros(n_nodes, dtype=bool)
    reached[slack_bus_idx] = True
    frontier = [slack_bus_idx]
    while frontier:
        nxt = []
        for node in frontier:
            for other in neighbours[node]:
                if not reached[other]:
                    reached[other] = True
                    nxt.append(other)
        frontier = nxt
    return ~reached


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    return shown if len(items) <= _MAX_LISTED else f"{shown}, ... ({len(items)} in all)"


def check_connected(
    node_ids: Int[np.ndarray | Array, " n_nodes"],
    line_ids: Int[np.ndarray | Array, " n_lines"],
    line_from_idx: Int[np.ndarray | Array, " n_lines"],
    line_to_idx: Int[np.ndarray | Array, " n_lines"],
    in_service: Bool[np.ndarray | Array, " n_lines"],
    slack_bus_idx: int,
    context: str,
) -> None:
    """Raise unless every bus reaches the slack through in-service lines.

    Raises:
        ValueError: naming the islanded buses and the out-of-service lines (bus numbers
            and line ids as in the case), prefixed by `context`.
    """
    ids = np.asarray(node_ids, dtype=np.int64)
    off = nodes_off_slack(line_from_idx, line_to_idx, in_service, ids.shape[0], slack_bus_idx)
    if not off.any():
        return
    from_ids = ids[np.asarray(line_from_idx, dtype=np.int64)]
    to_ids = ids[np.asarray(line_to_idx, dtype=np.int64)]
    out = np.flatnonzero(~np.asarray(in_service, dtype=bool))
    lines = [f"{int(np.asarray(line_ids)[k])} ({int(from_ids[k])}-{int(to_ids[k])})" for k in out]
    raise ValueError(
        f"{context}: the network is islanded: buses [{_listed([str(int(b)) for b in ids[off]])}] are not "
        f"connected to the slack bus {int(ids[slack_bus_idx])} by in-service lines; lines out of service (id (from-to)): "
        f"[{_listed(lines) if lines else 'none'}]. Expected every bus connected to the slack."
    )


def case_with_line_status(case: CaseData, line_status: Bool[ArrayLike, " n_lines"] | Int[ArrayLike, " n_lines"]) -> CaseData:
    """`case` with a new line status and the PTDF of that topology, rebuilt on the host in
    float64.

    Every matrix a DC solver reads (the PTDF; the AC admittances follow `line_status` by
    construction) then describes the new topology; `incidence` keeps every line, as it
    describes where the branches are, not whether they are closed. For outages inside
    `jit` / `vmap` use the env params' `with_line_outages` instead.

    **Arguments:**

    - `case`: the case.
    - `line_status`: `(n_lines,)` 1 / True in service, 0 / False out; concrete values.

    **Returns:**

    A new [`CaseData`][powerzoojax.case.CaseData].

    Raises:
        TypeError: for a traced `line_status` (this runs on concrete arrays only).
        ValueError: for a shape other than `(n_lines,)`, values other than 0 and 1, or a
            status that islands buses (naming them and the lines out).
    """
    if isinstance(line_status, jax.core.Tracer):
        raise TypeError(
            "case_with_line_status runs on the host and got a traced line_status; inside jit/vmap use "
            "TransGridParams.with_line_outages"
        )
    status = np.asarray(line_status)
    if status.shape != (case.n_lines,):
        raise ValueError(f"case_with_line_status: line_status has shape {status.shape}, expected ({case.n_lines},)")
    if status.dtype != bool and not np.all((status == 0) | (status == 1)):
        bad = status[(status != 0) & (status != 1)]
        raise ValueError(f"case_with_line_status: line_status values must be 0 or 1 (or bool), got {bad[:5].tolist()}")
    in_service = status.astype(bool)
    check_connected(
        case.node_ids, case.line_ids, case.line_from_idx, case.line_to_idx, in_service, case.slack_bus_idx,
        "case_with_line_status",
    )
    ptdf = build_ptdf(
        case.line_from_idx, case.line_to_idx, np.asarray(case.line_x, np.float64), case.n_nodes,
        case.slack_bus_idx, in_service,
    )
    return eqx.tree_at(
        lambda c: (c.line_status, c.ptdf),
        case,
        (jnp.asarray(in_service, jnp.int32), jnp.asarray(ptdf, jnp.float32)),
    )
