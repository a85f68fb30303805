"""`plot_network`: a case's buses and lines, coloured by one env state.

The state is read by field name, so any env state (or a wrapper's state holding one, or
a dict of arrays) works: `line_flow_mw` with `line_flow_q_mw` / `line_flow_q_mvar`
(transmission, markets, unit commitment), `p_branch` / `q_branch` in p.u. on the case
base over the radial tree's branches (distribution), `vm` / `v_mag` (one value per bus,
or per bus and phase), `unit_power_mw` / `unit_power`.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from powerzoojax.case import CaseData
from powerzoojax.case._builder import UNLIMITED_CAP_MW
from powerzoojax.physics._radial import radial_tree_order
from powerzoojax.viz._layout import has_coordinates, network_layout
from powerzoojax.viz._mpl import new_figure

_WRAPPER_FIELDS = ("env_state", "inner_state")
_VOLTAGE_FIELDS = ("vm", "v_mag")
_UNIT_FIELDS = ("unit_power_mw", "unit_power")
_Q_FIELDS = ("line_flow_q_mw", "line_flow_q_mvar")
_LINE_COLOURS = "RdYlGn_r"
_BUS_COLOURS = "coolwarm"
_UNRATED_COLOUR = "#8c8c8c"
# Bus voltages within this of 1 p.u. everywhere are a DC state's flat profile, not an AC solution.
_FLAT_VOLTAGE_TOL = 1e-6


@dataclass(frozen=True)
class NetworkQuantities:
    """What one env state says about the network, read on the host.

    **Arguments:**

    - `flow`: per line, |S| [MVA] for an AC state or |P| [MW] for a DC state.
    - `loading`: per line, flow / rating (NaN for unrated lines).
    - `vm`: per bus voltage magnitude [p.u.]; None for a DC state.
    - `unit_power`: per unit active output [MW].
    - `ac`: whether the state came from an AC model.
    - `signed_p`: per line active flow from → to [MW] (its sign is the direction), when
      the state has it.
    """

    flow: np.ndarray | None
    loading: np.ndarray | None
    vm: np.ndarray | None
    unit_power: np.ndarray | None
    ac: bool
    signed_p: np.ndarray | None = None


def _host(x: Any) -> np.ndarray:
    return np.asarray(jax.device_get(x), np.float64)


def _field(state: Any, names: tuple[str, ...]) -> tuple[str, np.ndarray | None]:
    for name in names:
        value = state.get(name) if isinstance(state, Mapping) else getattr(state, name, None)
        if value is not None:
            return name, _host(value)
    return "", None


def _known(state: Any) -> bool:
    names = ("line_flow_mw", "p_branch", *_VOLTAGE_FIELDS, *_UNIT_FIELDS)
    return any((name in state) if isinstance(state, Mapping) else hasattr(state, name) for name in names)


def _env_state(state: Any) -> Any:
    """The physical env state inside wrapper states (`env_state` / `inner_state` chains)."""
    for _ in range(16):
        if state is None or _known(state):
            return state
        inner = next((getattr(state, f) for f in _WRAPPER_FIELDS if hasattr(state, f)), None)
        if inner is None:
            return state
        state = inner
    return state


def _vector(name: str, value: np.ndarray, size: int, what: str) -> np.ndarray:
    if value.ndim != 1:
        raise ValueError(
            f"plot_network draws one state: {name} has shape {value.shape}, expected ({size},) {what}; "
            "index a batch first, e.g. jax.tree.map(lambda x: x[0], state)"
        )
    if value.shape[0] != size:
        raise ValueError(f"plot_network: {name} has shape {value.shape}, expected ({size},) {what} of this case")
    return value


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _tree_orientation(case: CaseData, lines: np.ndarray) -> np.ndarray:
    """+1 where a radial branch's sending end (nearer the root) is its from bus, else −1."""
    from collections import deque

    f = np.asarray(case.line_from_idx, np.int64)[lines]
    t = np.asarray(case.line_to_idx, np.int64)[lines]
    adjacency: dict[int, list[int]] = {}
    for a, b in zip(f, t):
        adjacency.setdefault(int(a), []).append(int(b))
        adjacency.setdefault(int(b), []).append(int(a))
    depth = {int(case.slack_bus_idx): 0}
    queue = deque([int(case.slack_bus_idx)])
    while queue:
        node = queue.popleft()
        for other in adjacency.get(node, []):
            if other not in depth:
                depth[other] = depth[node] + 1
                queue.append(other)
    return np.where([depth.get(int(a), 0) <= depth.get(int(b), 0) for a, b in zip(f, t)], 1.0, -1.0)


def _branch_lines(case: CaseData) -> np.ndarray:
    lines, _, _ = radial_tree_order(
        case.n_nodes, np.asarray(case.line_from_idx, np.int64), np.asarray(case.line_to_idx, np.int64),
        np.asarray(case.line_status) > 0, int(case.slack_bus_idx), np.asarray(case.node_ids),
    )
    return np.asarray(lines)


def network_quantities(case: CaseData, state: Any) -> NetworkQuantities:
    """Line flows and loadings, bus voltages and unit outputs of `state` on `case`.

    **Arguments:**

    - `case`: the network the state belongs to.
    - `state`: an env state, a wrapper state holding one, a mapping of arrays, or None.

    **Returns:** a `NetworkQuantities` (fields None where the state has no such values).
    """
    state = _env_state(state)
    if state is None:
        return NetworkQuantities(None, None, None, None, False)
    n_lines, n_nodes = case.n_lines, case.n_nodes
    flow = q = signed = None
    name, p = _field(state, ("line_flow_mw",))
    if p is not None:
        p = _vector(name, p, n_lines, "line flows [MW]")
        q_name, q = _field(state, _Q_FIELDS)
        q = None if q is None else _vector(q_name, q, n_lines, "reactive line flows [MVAr]")
        flow = np.abs(p) if q is None else np.hypot(p, q)
        signed = p
    else:
        name, p_branch = _field(state, ("p_branch",))
        if p_branch is not None:
            lines = _branch_lines(case)
            p_branch = _vector(name, p_branch, lines.size, "branch flows [p.u.] of the radial tree")
            q_name, q_branch = _field(state, ("q_branch",))
            q_branch = np.zeros_like(p_branch) if q_branch is None else _vector(q_name, q_branch, lines.size, "branch flows [p.u.]")
            flow = np.zeros(n_lines)
            flow[lines] = float(case.base_mva) * np.hypot(p_branch, q_branch)
            q = q_branch
            # Branch flows run away from the root (sending end first): signed against the
            # line's from → to orientation.
            signed = np.zeros(n_lines)
            signed[lines] = float(case.base_mva) * p_branch * _tree_orientation(case, lines)
    loading = None
    if flow is not None:
        cap = np.abs(_host(case.line_cap))
        rated = (cap > 0) & (cap < UNLIMITED_CAP_MW)
        loading = np.where(rated, flow / np.where(rated, cap, 1.0), np.nan)
    name, vm = _field(state, _VOLTAGE_FIELDS)
    if vm is not None:
        if vm.ndim == 1 and vm.size % n_nodes == 0 and vm.size > n_nodes:
            # One value per bus and phase, phase-major: show each bus's phase furthest from 1 p.u.
            phases = vm.reshape(vm.size // n_nodes, n_nodes)
            vm = phases[np.abs(phases - 1.0).argmax(axis=0), np.arange(n_nodes)]
        vm = _vector(name, vm, n_nodes, "bus voltages [p.u.]")
    ac = (vm is not None and not np.allclose(vm, 1.0, atol=_FLAT_VOLTAGE_TOL, rtol=0.0)) or (
        q is not None and bool(np.any(q != 0.0))
    )
    name, units = _field(state, _UNIT_FIELDS)
    if units is not None:
        units = _vector(name, units, case.n_units, "unit outputs [MW]")
    return NetworkQuantities(flow, loading, vm if ac else None, units, bool(ac), signed)


@dataclass(frozen=True)
class Scales:
    """Colour scales shared by the frames of an animation: line loading and bus voltage."""

    loading_max: float
    v_low: float
    v_high: float


def default_scales(case: CaseData, quantities: list[NetworkQuantities]) -> Scales:
    """Scales that cover the case's voltage band and every given state."""
    loads = [np.nanmax(q.loading) for q in quantities if q.loading is not None and np.any(np.isfinite(q.loading))]
    v_low, v_high = float(np.min(_host(case.node_v_min))), float(np.max(_host(case.node_v_max)))
    for q in quantities:
        if q.vm is not None:
            v_low, v_high = min(v_low, float(q.vm.min())), max(v_high, float(q.vm.max()))
    # The band must straddle 1 p.u. for the diverging colour scale centred there.
    return Scales(max([1.0, *loads]), min(v_low, 0.999), max(v_high, 1.001))


def draw_network(
    ax: Any, case: CaseData, pos: np.ndarray, q: NetworkQuantities, scales: Scales, *, labels: bool,
    equal_aspect: bool, legend: bool = True,
) -> dict[str, Any]:
    """Draw lines, buses and units on `ax` (with the legend of the marks unless `legend` is
    False, e.g. on an animation's frames); returns the colour mappables (for colour bars)."""
    import matplotlib.colors as mcolors
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.collections import LineCollection

    f = np.asarray(jax.device_get(case.line_from_idx))
    t = np.asarray(jax.device_get(case.line_to_idx))
    status = _host(case.line_status) > 0
    segments = np.stack([pos[f], pos[t]], axis=1)
    line_cmap = colormaps[_LINE_COLOURS]
    colours = np.tile(mcolors.to_rgba(_UNRATED_COLOUR), (case.n_lines, 1))
    widths = np.full(case.n_lines, 1.5)
    by_flow = q.flow is not None and q.loading is not None and not np.any(np.isfinite(q.loading))
    line_norm = mcolors.Normalize(0.0, scales.loading_max)
    if q.flow is not None and q.loading is not None:  # network_quantities sets both or neither
        top = float(q.flow.max())
        if by_flow:  # no line is rated: colour by the flow itself, in MW / MVA
            line_norm = mcolors.Normalize(0.0, max(top, 1e-9))
            colours = line_cmap(line_norm(q.flow))
        else:
            rated = np.isfinite(q.loading)
            colours[rated] = line_cmap(line_norm(q.loading[rated]))
        if top > 0:
            widths = 1.0 + 3.5 * q.flow / top
    colours[~status] = mcolors.to_rgba("#c8c8c8")
    ax.add_collection(LineCollection(
        # An (N, 2, 2) array is a sequence of N segments; the stub asks for a Sequence.
        segments,  # pyright: ignore[reportArgumentType]
        colors=colours, linewidths=np.where(status, widths, 1.0),
        linestyles=[("solid" if s else (0, (3, 3))) for s in status], zorder=1,
    ))
    v_norm = mcolors.TwoSlopeNorm(vcenter=1.0, vmin=scales.v_low, vmax=scales.v_high)
    bus_size = float(np.clip(3000.0 / max(case.n_nodes, 1), 8.0, 120.0))
    if q.vm is not None:
        ax.scatter(*pos.T, s=bus_size, c=q.vm, cmap=_BUS_COLOURS, norm=v_norm, edgecolors="#333333", linewidths=0.5, zorder=3)
    else:
        ax.scatter(*pos.T, s=bus_size, c="#4a6fa5", edgecolors="#333333", linewidths=0.5, zorder=3)
    slack = case.slack_bus_idx
    ax.scatter(*pos[[slack]].T, s=bus_size * 2.2, marker="s", facecolors="none", edgecolors="#333333", linewidths=1.2, zorder=4)
    unit_nodes = np.asarray(jax.device_get(case.unit_node_idx))
    p_max = np.maximum(_host(case.unit_p_max), 0.0)
    output = p_max if q.unit_power is None else np.maximum(q.unit_power, 0.0)
    per_bus = np.bincount(unit_nodes, weights=output, minlength=case.n_nodes)
    has_unit = np.bincount(unit_nodes, minlength=case.n_nodes) > 0
    scale = max(float(np.bincount(unit_nodes, weights=p_max, minlength=case.n_nodes).max()), 1e-9)
    sizes = bus_size * (1.5 + 8.0 * per_bus[has_unit] / scale)
    ax.scatter(*pos[has_unit].T, s=sizes, marker="o", facecolors="none", edgecolors="#e08a00", linewidths=1.6, zorder=2)
    if labels:
        # Offset past the largest marker drawn on the bus (the slack box, the unit ring), on a
        # white ground so lines do not cross the digits.
        ids = np.asarray(jax.device_get(case.node_ids))
        small = case.n_nodes > 40
        ring = np.zeros(case.n_nodes)
        ring[has_unit] = np.sqrt(sizes)
        radius = np.maximum(np.sqrt(bus_size) * np.where(np.arange(case.n_nodes) == slack, 1.5, 0.5), 0.5 * ring)
        for k, (x, y) in enumerate(pos):
            off = 0.75 * float(radius[k]) + 1.0
            ax.annotate(
                str(int(ids[k])), (x, y), xytext=(off, off), textcoords="offset points", fontsize=5 if small else 9,
                zorder=6, bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.75),
            )
    if q.flow is not None and case.n_nodes <= 40 and np.any(q.flow > 0):
        _flow_labels(ax, pos, f, t, status, q)
    ax.margins(0.12)  # room for the rings and labels at the edges
    ax.autoscale_view()
    if equal_aspect:  # true coordinates keep their proportions; computed layouts fill the axes
        ax.set_aspect("equal", adjustable="datalim")
    ax.set_axis_off()
    if legend:
        _legend(ax, case, q, status, bus_size, float(per_bus.max()), by_flow)
    mappables = {"line": ScalarMappable(norm=line_norm, cmap=line_cmap)} if q.flow is not None else {}
    if by_flow:
        mappables["line_by_flow"] = mappables.pop("line")
    if q.vm is not None:
        mappables["bus"] = ScalarMappable(norm=v_norm, cmap=colormaps[_BUS_COLOURS])
    return mappables


def _flow_labels(ax: Any, pos: np.ndarray, f: np.ndarray, t: np.ndarray, status: np.ndarray, q: NetworkQuantities) -> None:
    """Each line's flow [MW / MVA] at its midpoint, with an arrow in the active-power direction."""
    flow = q.flow
    assert flow is not None  # drawn only for a state with flows
    signed = flow if q.signed_p is None else q.signed_p
    for line in np.flatnonzero(status):
        a, b = pos[f[line]], pos[t[line]]
        if signed[line] < 0:
            a, b = b, a
        mid = 0.5 * (a + b)
        ax.annotate("", xy=mid + 0.06 * (b - a), xytext=mid - 0.06 * (b - a), zorder=5,
                    arrowprops=dict(arrowstyle="-|>", color="#333333", lw=1.0, mutation_scale=11))
        ax.annotate(f"{flow[line]:.3g}", mid, xytext=(0, -9), textcoords="offset points", ha="center", va="top",
                    fontsize=7, color="#333333", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.75))


def _legend(ax: Any, case: CaseData, q: NetworkQuantities, status: np.ndarray, bus_size: float, top_mw: float,
            by_flow: bool) -> None:
    """What the marks mean: the slack box, the unit rings, grey and dashed lines, flow labels."""
    from matplotlib.lines import Line2D

    marker = float(np.sqrt(bus_size))
    handles = [Line2D([], [], ls="none", marker="s", ms=marker * 1.4, mfc="none", mec="#333333", label="slack bus")]
    what = "output" if q.unit_power is not None else "capacity"
    handles.append(Line2D([], [], ls="none", marker="o", ms=marker * 1.4, mfc="none", mec="#e08a00", mew=1.6,
                          label=f"units' {what}: ring grows with it (largest {top_mw:,.0f} MW)"))
    if q.flow is not None and q.loading is not None and not by_flow and not np.all(np.isfinite(q.loading)):
        handles.append(Line2D([], [], color=_UNRATED_COLOUR, lw=2, label="unrated line (no loading)"))
    if q.flow is None:
        handles.append(Line2D([], [], color=_UNRATED_COLOUR, lw=2, label="line (no state: no flow)"))
    if not np.all(status):
        handles.append(Line2D([], [], color="#c8c8c8", lw=1, ls=(0, (3, 3)), label="out of service"))
    if q.flow is not None:
        unit = "MVA" if q.ac else "MW"
        flows = f"; labels: {unit}, arrow = P direction" if case.n_nodes <= 40 else ""
        handles.append(Line2D([], [], color="#555555", lw=3, label=f"width grows with |flow|{flows}"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.01), fontsize=7, ncol=1, frameon=False)


def add_colorbars(fig: Any, ax: Any, mappables: dict[str, Any], ac: bool) -> None:
    if "line" in mappables:
        fig.colorbar(mappables["line"], ax=ax, shrink=0.7, label=("|S|" if ac else "|P|") + " / rating (rated lines)")
    if "line_by_flow" in mappables:
        fig.colorbar(mappables["line_by_flow"], ax=ax, shrink=0.7,
                     label=("|S| [MVA]" if ac else "|P| [MW]") + " (the case rates no line)")
    if "bus" in mappables:
        fig.colorbar(mappables["bus"], ax=ax, shrink=0.7, label="|V| [p.u.]")


def plot_network(case: CaseData, state: Any = None, *, ax: Any = None, layout: str = "auto", title: str | None = None) -> Any:
    """Draw a case's network, coloured by one env state (host-side matplotlib, never inside `jit`).

    Lines are coloured by their loading against the rating (green to red; grey where the
    line is unrated or no state is given, dashed where out of service) and drawn thicker
    the more power they carry; in AC states buses are coloured by voltage magnitude
    (blue below, red above 1 p.u.); rings around unit buses grow with the units' output
    (with no state, their capacity); the slack bus is boxed.

    **Arguments:**

    - `case`: the network (`params.case` of a grid or market env).
    - `state`: an env state of that case, a wrapper state holding one, or a dict of
      arrays (see the module docstring for the fields read); None draws the topology.
      One state, not a batch.
    - `ax`: matplotlib axes to draw into (default: a new figure).
    - `layout`: bus positions, see `network_layout` (default: the case's coordinates
      where it has them, else a tree for radial feeders, else a spring layout).
    - `title`: the axes title (default: sizes of the case and the kind of state).

    **Returns:** the matplotlib `Figure` drawn into.
    """
    if not isinstance(case, CaseData):
        raise TypeError(f"plot_network: case must be a CaseData (e.g. params.case), got {type(case).__name__}")
    q = network_quantities(case, state)
    if ax is None:
        fig = new_figure("plot_network", (7.5, 6.6))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    pos = network_layout(case, layout)
    equal = layout in ("auto", "coords") and has_coordinates(case)
    mappables = draw_network(ax, case, pos, q, default_scales(case, [q]), labels=case.n_nodes <= 150, equal_aspect=equal)
    add_colorbars(fig, ax, mappables, q.ac)
    kind = "no state" if state is None else ("AC state" if q.ac else "DC state")
    ax.set_title(title if title is not None else f"{_count(case.n_nodes, 'bus', 'buses')}, {_count(case.n_lines, 'line')}, "
                 f"{_count(case.n_units, 'unit')} ({kind})")
    return fig
