"""Where each bus goes in a picture: the case's coordinates, a tree, or a spring layout.

Only case 5 of the shipped cases carries distinct bus coordinates; the others get a
layout computed here, in NumPy, the same on every machine and every run (no random
start, no optional graph library whose version would change the picture).
"""

import jax
import numpy as np

from powerzoojax.case import CaseData
from powerzoojax.case._inspect import _adjacency, _spectral_layout, _tree_layout

LAYOUTS = ("auto", "coords", "tree", "spring", "spectral")
# Beyond this many buses the O(n²) spring iterations cost seconds; spectral is used instead.
_SPRING_MAX_NODES = 1000
_SPRING_ITERATIONS = 150


def _coordinates(case: CaseData) -> np.ndarray | None:
    xy = np.column_stack([np.asarray(jax.device_get(case.node_x)), np.asarray(jax.device_get(case.node_y))])
    return xy.astype(np.float64) if np.unique(xy, axis=0).shape[0] == case.n_nodes else None


def has_coordinates(case: CaseData) -> bool:
    """Whether every bus of `case` has its own coordinates (drawn to scale, not laid out)."""
    return _coordinates(case) is not None


def spring_layout(adjacency: np.ndarray, iterations: int = _SPRING_ITERATIONS) -> np.ndarray:
    """Force-directed positions (Fruchterman–Reingold) from the spectral layout as start.

    **Arguments:**

    - `adjacency`: symmetric 0/1 matrix `(n, n)`.
    - `iterations`: cooling steps; the step size falls linearly to zero over them.

    **Returns:** `(n, 2)` positions in the unit square. Deterministic: the start is the
    Laplacian's eigenvectors (signs fixed) plus a fixed spiral that separates buses the
    eigenvectors put on one point.
    """
    n = adjacency.shape[0]
    if n < 3:
        return np.column_stack([np.arange(n, dtype=float), np.zeros(n)])
    pos = _spectral_layout(adjacency)
    span = np.ptp(pos, axis=0)
    pos = (pos - pos.min(axis=0)) / np.where(span > 0, span, 1.0)
    angle = np.arange(n) * 2.399963  # golden angle: a spiral with no two points close
    pos = pos + 0.01 * np.sqrt(np.arange(n) / n)[:, None] * np.column_stack([np.cos(angle), np.sin(angle)])
    k = 1.0 / np.sqrt(n)
    for i in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=-1), 1e-4)
        # Repulsion k²/d between every pair, attraction d²/k along lines, both along delta/d.
        weight = k * k / dist**2 - adjacency * dist / k
        np.fill_diagonal(weight, 0.0)
        disp = np.einsum("ij,ijk->ik", weight, delta)
        length = np.maximum(np.linalg.norm(disp, axis=1, keepdims=True), 1e-9)
        step = 0.1 * (1.0 - i / iterations)
        pos = pos + disp / length * np.minimum(length, step)
    span = np.ptp(pos, axis=0)
    return (pos - pos.min(axis=0)) / np.where(span > 0, span, 1.0).max()


def network_layout(case: CaseData, layout: str = "auto") -> np.ndarray:
    """Positions of a case's buses for drawing.

    **Arguments:**

    - `case`: the network.
    - `layout`: `"coords"` (the case's `node_x, node_y`), `"tree"` (layered from the
      slack, for radial feeders), `"spring"` (force-directed), `"spectral"` (Laplacian
      eigenvectors) or `"auto"`: the coordinates when every bus has distinct ones, else
      the tree when the in-service lines form one, else spring (spectral beyond 1000 buses).
      Open lines are drawn but do not shape the layout.

    **Returns:** `(n_nodes, 2)` float64 positions.
    """
    if not isinstance(case, CaseData):
        raise TypeError(f"network_layout: case must be a CaseData, got {type(case).__name__}")
    if layout not in LAYOUTS:
        raise ValueError(f"network_layout: layout must be one of {list(LAYOUTS)}, got {layout!r}")
    adjacency = _adjacency(case, in_service_only=True)
    if layout in ("auto", "coords"):
        coords = _coordinates(case)
        if coords is not None:
            return coords
        if layout == "coords":
            raise ValueError("network_layout: layout='coords' but the case has no distinct bus coordinates; use 'auto'")
    if layout in ("auto", "tree"):
        tree = _tree_layout(adjacency, case.slack_bus_idx)
        if tree is not None:
            return tree
        if layout == "tree":
            raise ValueError("network_layout: layout='tree' but the in-service lines are not a tree spanning every bus")
    if layout == "spectral" or (layout == "auto" and case.n_nodes > _SPRING_MAX_NODES):
        return _spectral_layout(adjacency)
    return spring_layout(adjacency)
