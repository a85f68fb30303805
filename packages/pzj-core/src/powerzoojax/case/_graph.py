"""Graph and PTDF matrices from raw branch lists (as opposed to a built `CaseData`).

`compute_ptdf` and `build_case_matrices` are host-side (NumPy float64 inversion, run once
at set-up, returned as float32 JAX arrays); the adjacency, degree and Laplacian functions are
plain `jnp` and can be traced (`n_nodes` static). The graph matrices describe topology
only (for graph-based policies); the physics uses the PTDF and the device maps.
"""

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from ._branch_matrices import build_bus_map, build_ptdf


def compute_ptdf(
    line_from_idx: Int[ArrayLike, " n_lines"],
    line_to_idx: Int[ArrayLike, " n_lines"],
    line_x: Float[ArrayLike, " n_lines"],
    n_nodes: int,
    slack_idx: int = 0,
) -> Float[Array, "n_lines n_nodes"]:
    """DC PTDF [MW line flow per MW injection] of branches given by 0-based end indices.

    Flows from → to are positive and the slack column is zero (see
    [`build_ptdf`][powerzoojax.case.build_ptdf]).

    **Arguments:**

    - `line_from_idx`, `line_to_idx`: `(n_lines,)` 0-based end nodes.
    - `line_x`: `(n_lines,)` reactances [p.u.].
    - `n_nodes`: number of nodes.
    - `slack_idx`: 0-based slack node.

    **Returns:**

    A float32 array of shape `(n_lines, n_nodes)`. Raises `ValueError` for a network
    that is not connected to the slack.
    """
    if not 0 <= int(slack_idx) < int(n_nodes):
        raise ValueError(f"compute_ptdf: slack_idx {slack_idx!r} is not a node index in [0, {n_nodes})")
    ptdf = build_ptdf(np.asarray(line_from_idx), np.asarray(line_to_idx), np.asarray(line_x), int(n_nodes), int(slack_idx))
    return jnp.asarray(ptdf, jnp.float32)


def compute_adjacency_matrix(
    line_from_idx: Int[ArrayLike, " n_lines"], line_to_idx: Int[ArrayLike, " n_lines"], n_nodes: int
) -> Float[Array, "n_nodes n_nodes"]:
    """Symmetric 0/1 adjacency of the undirected network graph (parallel branches count once).

    **Arguments:**

    - `line_from_idx`, `line_to_idx`: `(n_lines,)` 0-based end nodes.
    - `n_nodes`: number of nodes.

    **Returns:**

    A float32 array of shape `(n_nodes, n_nodes)`.
    """
    f, t = jnp.asarray(line_from_idx), jnp.asarray(line_to_idx)
    adjacency = jnp.zeros((n_nodes, n_nodes), jnp.float32)
    return adjacency.at[f, t].set(1.0).at[t, f].set(1.0)


def compute_degree_matrix(adjacency: Float[ArrayLike, "n n"]) -> Float[Array, "n n"]:
    """Diagonal matrix of node degrees (row sums of the adjacency).

    **Arguments:**

    - `adjacency`: `(n, n)` adjacency matrix.

    **Returns:**

    A float32 array of shape `(n, n)`.
    """
    return jnp.diag(jnp.sum(jnp.asarray(adjacency, jnp.float32), axis=1))


def compute_laplacian_matrix(adjacency: Float[ArrayLike, "n n"]) -> Float[Array, "n n"]:
    """Normalised Laplacian with self-loops, `I − D̃^{-1/2} (A + I) D̃^{-1/2}`.

    `D̃` is the degree of `A + I` (the renormalisation of graph convolutional networks:
    every node counts itself, so isolated nodes are well defined). Eigenvalues in [0, 2).

    **Arguments:**

    - `adjacency`: `(n, n)` adjacency matrix `A`.

    **Returns:**

    A float32 array of shape `(n, n)`.
    """
    a = jnp.asarray(adjacency, jnp.float32)
    a_self = a + jnp.eye(a.shape[0], dtype=a.dtype)
    inv_sqrt = 1.0 / jnp.sqrt(jnp.sum(a_self, axis=1))
    return jnp.eye(a.shape[0], dtype=a.dtype) - inv_sqrt[:, None] * a_self * inv_sqrt[None, :]


def build_case_matrices(
    node_ids: Any,
    unit_bus_ids: Any,
    load_bus_ids: Any,
    line_from: Any,
    line_to: Any,
    line_x: Any,
    slack_bus_id: float | int | None = None,
) -> dict[str, Any]:
    """Indices and matrices of a network given by bus numbers.

    **Arguments:**

    - `node_ids`: `(n_nodes,)` bus numbers.
    - `unit_bus_ids`, `load_bus_ids`: bus numbers of the units and loads.
    - `line_from`, `line_to`: `(n_lines,)` end bus numbers.
    - `line_x`: `(n_lines,)` reactances [p.u.].
    - `slack_bus_id`: bus number of the slack; `None` takes the first node.

    **Returns:**

    A dict with `unit_node_idx`, `load_node_idx`, `line_from_idx`, `line_to_idx` (0-based
    positions in `node_ids`), `slack_bus_idx`, `PTDF` `(n_lines, n_nodes)`,
    `nodes_units_map`, `nodes_loads_map` and `adjacency`.

    Raises:
        ValueError: naming any bus number that is not in `node_ids`.
    """
    ids = np.asarray(node_ids, np.float64).reshape(-1)
    position = {float(b): k for k, b in enumerate(ids)}
    if len(position) != ids.size:
        raise ValueError("build_case_matrices: node_ids has duplicate bus numbers")

    def index(name: str, buses: Any) -> np.ndarray:
        values = np.asarray(buses, np.float64).reshape(-1)
        unknown = sorted({float(b) for b in values} - position.keys())
        if unknown:
            raise ValueError(f"build_case_matrices: {name} refers to bus numbers {unknown} not in node_ids")
        return np.array([position[float(b)] for b in values], np.int64)

    unit_idx, load_idx = index("unit_bus_ids", unit_bus_ids), index("load_bus_ids", load_bus_ids)
    from_idx, to_idx = index("line_from", line_from), index("line_to", line_to)
    slack = 0 if slack_bus_id is None else int(index("slack_bus_id", [slack_bus_id])[0])
    n = ids.size
    i32 = lambda x: jnp.asarray(x, jnp.int32)  # noqa: E731
    return {
        "unit_node_idx": i32(unit_idx),
        "load_node_idx": i32(load_idx),
        "line_from_idx": i32(from_idx),
        "line_to_idx": i32(to_idx),
        "slack_bus_idx": slack,
        "PTDF": compute_ptdf(from_idx, to_idx, line_x, n, slack),
        "nodes_units_map": jnp.asarray(build_bus_map(unit_idx, n), jnp.float32),
        "nodes_loads_map": jnp.asarray(build_bus_map(load_idx, n), jnp.float32),
        "adjacency": compute_adjacency_matrix(i32(from_idx), i32(to_idx), n),
    }
