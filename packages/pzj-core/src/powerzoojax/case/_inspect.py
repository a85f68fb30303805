"""Look at a case on the host: its tables as text (`CaseInfo`, `print_case`,
`print_summary`) and as pictures (`CasePlotter`, `plot_case`).

For notebooks and debugging, never inside `jit`: every call copies the case's arrays to
host memory (`warn=True` says so when they live on an accelerator). Pictures need
matplotlib, imported on first use (`pip install matplotlib`); nothing else here depends
on it.
"""

import warnings
from collections import deque
from typing import Any

import jax
import numpy as np

from ._case_data import CaseData

# (column title, CaseData field) of each printed table.
_TABLE_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "nodes": (("id", "node_ids"), ("type", "node_type"), ("Pd", "node_pd"), ("Qd", "node_qd"), ("Gs", "node_gs"),
              ("Bs", "node_bs"), ("Vmin", "node_v_min"), ("Vmax", "node_v_max"), ("x", "node_x"), ("y", "node_y")),
    "units": (("id", "unit_ids"), ("bus_id", "unit_bus_ids"), ("mc_a", "unit_cost_a"), ("mc_b", "unit_cost_b"),
              ("mc_c", "unit_cost_c"), ("p_min", "unit_p_min"), ("p_max", "unit_p_max"), ("Qmin", "unit_q_min"),
              ("Qmax", "unit_q_max"), ("Vg", "unit_vg"), ("status", "unit_status")),
    "lines": (("id", "line_ids"), ("from", "line_from"), ("to", "line_to"), ("r", "line_r"), ("x", "line_x"),
              ("b", "line_b"), ("floor", "line_floor"), ("cap", "line_cap"), ("ratio", "line_ratio"),
              ("angle", "line_angle"), ("status", "line_status")),
    "loads": (("id", "load_ids"), ("bus_id", "load_bus_ids"), ("d_min", "load_d_min"), ("d_max", "load_d_max")),
}


def _host_warning(case: CaseData, warn: bool, operation: str) -> None:
    if warn and any(d.platform != "cpu" for d in case.ptdf.devices()):
        warnings.warn(f"{operation} copies the case from the accelerator to host memory; keep it out of training loops",
                      UserWarning, stacklevel=3)


class CaseTable:
    """One table of a case; `df` gives a pandas DataFrame, `str()` an aligned text table.

    **Arguments:**

    - `data`: rows × columns values (stored float64).
    - `columns`: column titles.
    - `label`: name of the table (`"nodes"`, `"units"`, ...).
    """

    def __init__(self, data: np.ndarray, columns: list[str], label: str = ""):
        self.data, self.columns, self.label = np.asarray(data, np.float64), list(columns), label

    @property
    def df(self) -> Any:
        """The table as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.data, columns=pd.Index(self.columns))

    def __len__(self) -> int:
        return self.data.shape[0]

    def __str__(self) -> str:
        cells = [[f"{v:.6g}" for v in row] for row in self.data]
        widths = [max([len(c)] + [len(r[k]) for r in cells]) for k, c in enumerate(self.columns)]
        lines = [f"{self.label} ({len(self)} rows)"] if self.label else []
        lines.append("  ".join(c.rjust(w) for c, w in zip(self.columns, widths)))
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
        return "\n".join(lines)

    __repr__ = __str__


class CaseInfo:
    """Host-side view of a `CaseData`: its nodes, units, lines and loads as tables, a summary,
    and its PTDF / adjacency as NumPy arrays.

    **Arguments:**

    - `case_data`: the case.
    - `warn`: warn when the arrays have to be copied from an accelerator.
    - `name`: label of the case in the summary; `None` names it by its bus count.
    """

    def __init__(self, case_data: CaseData, warn: bool = True, name: str | None = None):
        if not isinstance(case_data, CaseData):
            raise TypeError(f"CaseInfo needs a CaseData, got {type(case_data).__name__}")
        self.case_data, self.warn = case_data, bool(warn)
        self.name = name if name is not None else f"case ({case_data.n_nodes} buses)"

    def _table(self, kind: str) -> CaseTable:
        _host_warning(self.case_data, self.warn, f"CaseInfo.{kind}")
        fields = _TABLE_FIELDS[kind]
        data = np.column_stack([np.asarray(jax.device_get(getattr(self.case_data, f)), np.float64) for _, f in fields])
        return CaseTable(data, [title for title, _ in fields], label=kind)

    @property
    def nodes(self) -> CaseTable:
        """The node table (ids, type, demand [MW, MVAr], shunts, voltage limits [p.u.], ...)."""
        return self._table("nodes")

    @property
    def units(self) -> CaseTable:
        """The unit table (ids, buses, limits [MW, MVAr], cost coefficients, status, ...)."""
        return self._table("units")

    @property
    def lines(self) -> CaseTable:
        """The line table (ids, ends, r, x, b [p.u.], limits [MW], ratio, angle, status)."""
        return self._table("lines")

    @property
    def loads(self) -> CaseTable:
        """The load table (ids, buses, `d_max`, `d_min` [MW])."""
        return self._table("loads")

    def summary(self) -> str:
        """Sizes, base, slack and totals (load, capacity, in-service lines) in a few lines.

        **Returns:**

        The summary text.
        """
        c = self.case_data
        host = lambda a: np.asarray(jax.device_get(a), np.float64)  # noqa: E731
        in_service = int((host(c.line_status) > 0).sum())
        return "\n".join([
            f"{self.name}: {c.n_nodes} buses, {c.n_units} units, {c.n_lines} lines ({in_service} in service), "
            f"{c.n_loads} loads, base {c.base_mva:g} MVA",
            f"slack bus {int(host(c.node_ids)[c.slack_bus_idx])} (index {c.slack_bus_idx})",
            f"sum Pd {host(c.node_pd).sum():.6g} MW, sum Qd {host(c.node_qd).sum():.6g} MVAr, "
            f"sum d_max {host(c.load_d_max).sum():.6g} MW",
            f"sum p_min {host(c.unit_p_min).sum():.6g} MW, sum p_max {host(c.unit_p_max).sum():.6g} MW",
        ])

    def get_ptdf_numpy(self) -> np.ndarray:
        """The case's PTDF on the host.

        **Returns:**

        A float32 NumPy array of shape `(n_lines, n_nodes)` [MW flow per MW injection].
        """
        _host_warning(self.case_data, self.warn, "CaseInfo.get_ptdf_numpy")
        return np.asarray(jax.device_get(self.case_data.ptdf))

    def get_adjacency_numpy(self) -> np.ndarray:
        """Symmetric 0/1 adjacency of all branches (any status).

        **Returns:**

        A NumPy array of shape `(n_nodes, n_nodes)`.
        """
        return _adjacency(self.case_data)

    def __str__(self) -> str:
        return "\n\n".join([self.summary(), str(self.nodes), str(self.units), str(self.lines), str(self.loads)])

    __repr__ = __str__


def print_case(case_data: CaseData, warn: bool = True) -> None:
    """Print the summary and the four tables of a case.

    **Arguments:**

    - `case_data`: the case.
    - `warn`: warn when the arrays have to be copied from an accelerator.
    """
    print(CaseInfo(case_data, warn=warn))


def print_summary(case_data: CaseData, warn: bool = True) -> None:
    """Print the summary of a case.

    **Arguments:**

    - `case_data`: the case.
    - `warn`: warn when the arrays have to be copied from an accelerator.
    """
    print(CaseInfo(case_data, warn=warn).summary())


# ----------------------------------------------------------------------------- pictures


def _adjacency(case: CaseData, in_service_only: bool = False) -> np.ndarray:
    f = np.asarray(jax.device_get(case.line_from_idx))
    t = np.asarray(jax.device_get(case.line_to_idx))
    if in_service_only:
        keep = np.asarray(jax.device_get(case.line_status)) > 0
        f, t = f[keep], t[keep]
    adjacency = np.zeros((case.n_nodes, case.n_nodes))
    adjacency[f, t] = adjacency[t, f] = 1.0
    np.fill_diagonal(adjacency, 0.0)
    return adjacency


def _tree_layout(adjacency: np.ndarray, root: int) -> np.ndarray | None:
    """Layered layout of a radial network (depth down, leaves spread across), or None when
    the graph is not a tree reaching every node from `root`."""
    n = adjacency.shape[0]
    if int(adjacency.sum()) // 2 != n - 1:
        return None
    parent, order, seen = np.full(n, -1), [root], {root}
    queue = deque([root])
    while queue:
        u = queue.popleft()
        for w in np.flatnonzero(adjacency[u]):
            if int(w) not in seen:
                seen.add(int(w))
                parent[w] = u
                order.append(int(w))
                queue.append(int(w))
    if len(seen) != n:
        return None
    children: dict[int, list[int]] = {u: [] for u in range(n)}
    for w in order[1:]:
        children[int(parent[w])].append(w)
    pos, depth, next_x = np.zeros((n, 2)), {root: 0}, [0.0]

    def place(u: int) -> float:
        for w in children[u]:
            depth[w] = depth[u] + 1
        xs = [place(w) for w in children[u]]
        if xs:
            x = float(np.mean(xs))
        else:
            x, next_x[0] = next_x[0], next_x[0] + 1.0
        pos[u] = (x, -depth[u])
        return x

    place(root)
    return pos


def _spectral_layout(adjacency: np.ndarray) -> np.ndarray:
    """Coordinates from the two smallest non-trivial Laplacian eigenvectors (deterministic)."""
    n = adjacency.shape[0]
    if n < 3:
        return np.column_stack([np.arange(n, dtype=float), np.zeros(n)])
    laplacian = np.diag(adjacency.sum(axis=1)) - adjacency
    _, vectors = np.linalg.eigh(laplacian)
    pos = vectors[:, 1:3]
    # Fix the eigenvectors' arbitrary signs so the picture does not flip between runs.
    return pos * np.where(pos[np.abs(pos).argmax(axis=0), [0, 1]] < 0, -1.0, 1.0)


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ModuleNotFoundError as err:
        if err.name is not None and err.name.startswith("matplotlib"):
            raise ImportError("plotting a case needs matplotlib: pip install matplotlib") from None
        raise
    return plt


class CasePlotter:
    """Pictures of a case: topology, line flows, PTDF heatmap (matplotlib).

    **Arguments:**

    - `case`: the case.
    - `warn`: warn when the arrays have to be copied from an accelerator.
    """

    def __init__(self, case: CaseData, warn: bool = True):
        if not isinstance(case, CaseData):
            raise TypeError(f"CasePlotter needs a CaseData, got {type(case).__name__}")
        _host_warning(case, warn, "CasePlotter")
        self.case = case
        # Layouts follow the energised network (open tie lines are drawn, dashed, not laid out).
        self.adjacency = _adjacency(case, in_service_only=True)
        self.from_idx = np.asarray(jax.device_get(case.line_from_idx))
        self.to_idx = np.asarray(jax.device_get(case.line_to_idx))
        self.node_ids = np.asarray(jax.device_get(case.node_ids))

    def layout(self, layout: str = "auto") -> np.ndarray:
        """Node positions for drawing.

        **Arguments:**

        - `layout`: `"coords"` (the case's x, y), `"tree"` (layered, radial feeders),
          `"spectral"`; `"auto"` takes the coordinates when the case has distinct ones, else
          the tree layout when the network is radial, else spectral.

        **Returns:**

        A `(n_nodes, 2)` NumPy array of positions.
        """
        coords = np.column_stack([np.asarray(jax.device_get(self.case.node_x)), np.asarray(jax.device_get(self.case.node_y))])
        has_coords = np.unique(coords, axis=0).shape[0] == self.case.n_nodes
        if layout == "coords":
            if not has_coords:
                raise ValueError("layout='coords': the case has no distinct node coordinates")
            return coords
        if layout in ("auto", "tree"):
            if layout == "auto" and has_coords:
                return coords
            tree = _tree_layout(self.adjacency, self.case.slack_bus_idx)
            if tree is not None:
                return tree
            if layout == "tree":
                raise ValueError("layout='tree': the network is not radial (a tree spanning every bus)")
            return _spectral_layout(self.adjacency)
        if layout == "spectral":
            return _spectral_layout(self.adjacency)
        raise ValueError(f"unknown layout {layout!r}; valid: 'auto', 'coords', 'tree', 'spectral'")

    def _axes(self, ax: Any, figsize: tuple[float | int, float | int]) -> tuple[Any, Any]:
        plt = _pyplot()
        if ax is None:
            fig, ax = plt.subplots(figsize=figsize)
            return fig, ax
        return ax.figure, ax

    def plot_topology(
        self,
        ax: Any = None,
        figsize: tuple[float | int, float | int] = (14, 10),
        layout: str = "auto",
        node_size: float | int = 500,
        node_color: str = "#4A90D9",
        edge_color: str = "#666666",
        edge_width: float | int = 1.5,
        show_node_labels: bool = True,
        title: str | None = None,
    ) -> tuple[Any, Any]:
        """Buses as dots (the slack as a square, units' buses ringed), lines as segments
        (out-of-service dashed).

        **Arguments:**

        - `ax`: matplotlib axes to draw on; `None` makes a new figure of `figsize` [inches].
        - `figsize`: figure size [inches].
        - `layout`: node layout, see `layout`.
        - `node_size`, `node_color`: marker size [points^2] and colour of the buses.
        - `edge_color`, `edge_width`: colour and width [points] of the lines.
        - `show_node_labels`: write the bus numbers.
        - `title`: figure title; `None` for a default one.

        **Returns:**

        `(figure, axes)`.
        """
        fig, ax = self._axes(ax, figsize)
        pos = self.layout(layout)
        status = np.asarray(jax.device_get(self.case.line_status))
        for f, t, s in zip(self.from_idx, self.to_idx, status):
            ax.plot(*pos[[f, t]].T, color=edge_color, lw=edge_width, ls="-" if s > 0 else "--", zorder=1)
        ax.scatter(*pos.T, s=node_size, c=node_color, zorder=2)
        gen_nodes = np.unique(np.asarray(jax.device_get(self.case.unit_node_idx)))
        ax.scatter(*pos[gen_nodes].T, s=node_size * 1.6, facecolors="none", edgecolors="#D9534F", lw=2, zorder=3)
        ax.scatter(*pos[[self.case.slack_bus_idx]].T, s=node_size * 1.2, marker="s", c="#F0AD4E", zorder=3)
        if show_node_labels:
            for k, (x, y) in enumerate(pos):
                ax.annotate(str(int(self.node_ids[k])), (x, y), ha="center", va="center", fontsize=8, zorder=4)
        ax.set_title(title or f"{self.case.n_nodes}-bus case: {self.case.n_lines} lines, {self.case.n_units} units")
        ax.set_axis_off()
        return fig, ax

    def plot_line_flows(
        self,
        line_flows: Any,
        ax: Any = None,
        figsize: tuple[float | int, float | int] = (14, 10),
        layout: str = "auto",
        colormap: str = "coolwarm",
        show_values: bool = True,
        title: str | None = None,
    ) -> tuple[Any, Any]:
        """Lines coloured by loading `|flow| / cap`, with the flow written on each line.

        **Arguments:**

        - `line_flows`: `(n_lines,)` flows [MW], from → to positive.
        - `ax`: matplotlib axes to draw on; `None` makes a new figure of `figsize` [inches].
        - `figsize`: figure size [inches].
        - `layout`: node layout, see `layout`.
        - `colormap`: matplotlib colormap of the loading.
        - `show_values`: write each flow on its line.
        - `title`: figure title; `None` for a default one.

        **Returns:**

        `(figure, axes)`.
        """
        plt = _pyplot()
        flows = np.asarray(jax.device_get(line_flows), np.float64).reshape(-1)
        if flows.shape != (self.case.n_lines,):
            raise ValueError(f"line_flows has shape {flows.shape}, expected ({self.case.n_lines},)")
        fig, ax = self._axes(ax, figsize)
        pos = self.layout(layout)
        cap = np.abs(np.asarray(jax.device_get(self.case.line_cap), np.float64))
        loading = np.abs(flows) / np.maximum(cap, 1e-9)
        norm = plt.Normalize(0.0, max(1.0, float(loading.max())))
        cmap = plt.get_cmap(colormap)
        for k, (f, t) in enumerate(zip(self.from_idx, self.to_idx)):
            ax.plot(*pos[[f, t]].T, color=cmap(norm(loading[k])), lw=2.5, zorder=1)
            if show_values:
                ax.annotate(f"{flows[k]:.1f}", pos[[f, t]].mean(axis=0), fontsize=7, ha="center")
        ax.scatter(*pos.T, s=60, c="#333333", zorder=2)
        fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="|flow| / rating")
        ax.set_title(title or "line loading")
        ax.set_axis_off()
        return fig, ax

    def plot_ptdf_heatmap(
        self,
        ax: Any = None,
        figsize: tuple[float | int, float | int] = (12, 8),
        colormap: str = "RdBu_r",
        title: str | None = None,
    ) -> tuple[Any, Any]:
        """The PTDF (lines × buses) as a heatmap, symmetric colour scale.

        **Arguments:**

        - `ax`: matplotlib axes to draw on; `None` makes a new figure of `figsize` [inches].
        - `figsize`: figure size [inches].
        - `colormap`: matplotlib colormap.
        - `title`: figure title; `None` for a default one.

        **Returns:**

        `(figure, axes)`.
        """
        fig, ax = self._axes(ax, figsize)
        ptdf = np.asarray(jax.device_get(self.case.ptdf), np.float64)
        lim = max(float(np.abs(ptdf).max()), 1e-9)
        image = ax.imshow(ptdf, cmap=colormap, vmin=-lim, vmax=lim, aspect="auto")
        fig.colorbar(image, ax=ax, label="MW flow per MW injected")
        ax.set_xlabel("bus index")
        ax.set_ylabel("line index")
        ax.set_title(title or "PTDF")
        return fig, ax


def plot_case(case: CaseData, **kwargs: Any) -> tuple[Any, Any]:
    """The topology picture of a case.

    **Arguments:**

    - `case`: the case.
    - `**kwargs`: keywords of
      [`CasePlotter.plot_topology`][powerzoojax.case.CasePlotter.plot_topology]; `warn`
      goes to the plotter.

    **Returns:**

    `(figure, axes)`.
    """
    warn = kwargs.pop("warn", True)
    return CasePlotter(case, warn=warn).plot_topology(**kwargs)
