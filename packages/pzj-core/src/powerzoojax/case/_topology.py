"""Connectivity of a network given as branch lists, on the host.

A DC network solve needs every bus joined to the slack by in-service lines: the reduced
susceptance matrix of an islanded network is singular, and no single slack can balance
the island. The case builders and [`case_with_line_status`][powerzoojax.case.case_with_line_status] refuse such a topology
with an error that names the islanded buses (the case's own bus numbers) and the lines
that are out, so the caller sees which switching state caused it.
"""

import numpy as np
from jaxtyping import Array, Bool, Int

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
