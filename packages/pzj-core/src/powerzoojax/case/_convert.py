"""Convert a case given as four column tables (nodes, units, lines, loads) into `CaseData`.

This is the table layout of the PowerZoo `ClearCase` objects (pandas DataFrames under
`.nodes`, `.units`, `.lines`, `.loads`) and of the reference benchmark case files
(`{"columns": [...], "rows": [[...], ...]}` per table). Column conventions:

* nodes: `id`; optional `type` (3 = slack), `Pd, Qd` (or per phase `Pd_A .. Qd_C`,
  summed), `Gs, Bs`, `Vm, Va`, `baseKV`, `Vmin, Vmax` (default 0.94 / 1.06), `x, y`;
* units: `id, bus_id`, marginal-cost coefficients `mc_a, mc_b, mc_c` (`MC = a p² + b p +
  c`), `p_max, p_min` (fallback `Pmax, Pmin`); optional `Pg, Qg, Vg, mBase, status`,
  `Qmax, Qmin` (default ±0.75 p_max);
* lines: `id, from, to`, `x` (0 → 0.01), `floor, cap` (0 → ∓1e6); optional `r, b`,
  `ratio` (0 → 1), `angle` [deg], `status`, `rateA`;
* loads: `id, bus_id, d_max, d_min` [MW].

Non-numeric columns (a unit's fuel `type`, a line's phase `type`) are dropped. The
tables go through MATPOWER's layout into [`case_data_from_matpower`][powerzoojax.case.case_data_from_matpower] (cost polynomial
`TC = a/3 p³ + b/2 p² + c p`, whose derivative is the given MC), then the table's own
limits, loads and coordinates replace the MATPOWER defaults.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

import jax.numpy as jnp
import numpy as np

from ._builder import UNLIMITED_CAP_MW, ZERO_REACTANCE_SUBSTITUTE, case_data_from_matpower
from ._case_data import CaseData
from ._branch_matrices import build_bus_map

_TABLES = ("nodes", "units", "lines", "loads")
_PHASE_P = ("Pd_A", "Pd_B", "Pd_C")
_PHASE_Q = ("Qd_A", "Qd_B", "Qd_C")
DEFAULT_Q_LIMIT_FRACTION = 0.75


class _Table:
    """A table as named float64 columns (non-numeric columns dropped)."""

    def __init__(self, name: str, table: Any):
        if hasattr(table, "columns") and hasattr(table, "to_numpy"):  # a pandas DataFrame
            columns = [str(c) for c in table.columns if str(c) != "#id"]
            rows = table[columns].to_numpy(object) if columns else np.zeros((len(table), 0), object)
        elif isinstance(table, Mapping) and "columns" in table and "rows" in table:
            columns = [str(c) for c in table["columns"]]
            rows = np.asarray(table["rows"], dtype=object).reshape(-1, len(columns))
        else:
            raise TypeError(
                f"case table {name!r} must be a pandas DataFrame or a mapping with 'columns' and 'rows', "
                f"got {type(table).__name__}"
            )
        self.name, self.n = name, rows.shape[0]
        self.columns: dict[str, np.ndarray] = {}
        for k, column in enumerate(columns):
            try:
                self.columns[column] = np.asarray(rows[:, k], dtype=np.float64)
            except (TypeError, ValueError):
                continue  # text column

    def get(self, *names: str, default: Any = None) -> np.ndarray:
        for name in names:
            if name in self.columns:
                return self.columns[name]
        if default is None:
            raise ValueError(f"case table {self.name!r} has no column {' / '.join(names)}; columns: {list(self.columns)}")
        return np.broadcast_to(np.asarray(default, np.float64), (self.n,)).copy()


def _demand(nodes: _Table, total: str, phases: tuple[str, ...]) -> np.ndarray:
    """Bus demand: the `total` column, else the sum of the per-phase columns, else 0."""
    if total not in nodes.columns and all(c in nodes.columns for c in phases):
        return cast(np.ndarray, sum(nodes.get(c) for c in phases))
    return nodes.get(total, default=0.0)


def _tables_of(case: Any) -> tuple[dict[str, _Table], float]:
    if isinstance(case, Mapping):
        source = case.get("tables", case)
        base = float(case.get("builder_kwargs", {}).get("base_mva", case.get("base_mva", 100.0)))
        missing = [t for t in _TABLES if t not in source]
        if missing:
            raise ValueError(f"case mapping lacks tables {missing}; expected {list(_TABLES)}")
        tables = {t: source[t] for t in _TABLES}
    else:
        missing = [t for t in _TABLES if not hasattr(case, t)]
        if missing:
            raise TypeError(f"case object {type(case).__name__} lacks tables {missing}; expected {list(_TABLES)}")
        tables = {t: getattr(case, t) for t in _TABLES}
        base = float(getattr(case, "baseMVA", getattr(case, "base_mva", 100.0)))
    return {t: _Table(t, table) for t, table in tables.items()}, base


def case_to_jax(case: Any, *, slack_bus_id: float | int | None = None) -> CaseData:
    """`CaseData` of a case given as four column tables (nodes, units, lines, loads).

    This is the layout of PowerZoo's `ClearCase` objects and of the reference benchmark case
    files; missing optional columns take MATPOWER's defaults.

    **Arguments:**

    - `case`: a PowerZoo `ClearCase`-like object with `.nodes/.units/.lines/.loads`
      DataFrames (and `baseMVA`), or a mapping of the four tables (optionally under
      `"tables"`, with `builder_kwargs={"base_mva": ...}`).
    - `slack_bus_id`: bus number of the slack; `None` takes the first `type == 3` node,
      else the first node.

    **Returns:**

    The [`CaseData`][powerzoojax.case.CaseData].

    Raises:
        ValueError: naming a missing required column, an unknown bus number or a
            `slack_bus_id` not in the node table.
        TypeError: for an input that holds no such tables.
    """
    t, base_mva = _tables_of(case)
    nodes, units, lines, loads = t["nodes"], t["units"], t["lines"], t["loads"]
    node_ids = nodes.get("id")
    n = node_ids.size
    if slack_bus_id is not None:
        hits = np.flatnonzero(node_ids == float(slack_bus_id))
        if hits.size == 0:
            raise ValueError(f"slack_bus_id {slack_bus_id!r} is not a bus number of the node table")
        slack = int(hits[0])
    else:
        node_type = nodes.get("type", default=1.0)
        slack = int(np.flatnonzero(node_type == 3)[0]) if np.any(node_type == 3) else 0
    bus_type = nodes.get("type", default=1.0)
    bus_type = np.where(bus_type <= 0, 1.0, bus_type)
    bus_type[slack] = 3.0
    pd, qd = _demand(nodes, "Pd", _PHASE_P), _demand(nodes, "Qd", _PHASE_Q)
    bus = np.column_stack([
        node_ids, bus_type, pd, qd, nodes.get("Gs", default=0.0), nodes.get("Bs", default=0.0), np.ones(n),
        nodes.get("Vm", default=1.0), nodes.get("Va", default=0.0), nodes.get("baseKV", default=0.0), np.ones(n),
        nodes.get("Vmax", default=1.06), nodes.get("Vmin", default=0.94),
    ])

    p_max = units.get("p_max", "Pmax")
    p_min = units.get("p_min", "Pmin")
    q_lim = DEFAULT_Q_LIMIT_FRACTION * np.abs(p_max)
    gen = np.column_stack([
        units.get("bus_id"), units.get("Pg", default=0.0), units.get("Qg", default=0.0),
        units.get("Qmax", default=q_lim), units.get("Qmin", default=-q_lim), units.get("Vg", default=1.0),
        units.get("mBase", default=base_mva), units.get("status", default=1.0), p_max, p_min,
    ])
    mc_a, mc_b, mc_c = units.get("mc_a", default=0.0), units.get("mc_b", default=0.0), units.get("mc_c", default=0.0)
    gencost = np.column_stack([np.full(units.n, 2.0), np.zeros(units.n), np.zeros(units.n), np.full(units.n, 4.0),
                               mc_a / 3.0, mc_b / 2.0, mc_c, np.zeros(units.n)])

    x = lines.get("x", default=ZERO_REACTANCE_SUBSTITUTE)
    floor = lines.get("floor", default=0.0)
    cap = lines.get("cap", default=0.0)
    cap = np.where(cap == 0.0, UNLIMITED_CAP_MW, cap)
    floor = np.where(floor == 0.0, -UNLIMITED_CAP_MW, floor)
    rate_a = lines.get("rateA", default=0.0)
    branch = np.column_stack([
        lines.get("from"), lines.get("to"), lines.get("r", default=0.0), x, lines.get("b", default=0.0), rate_a,
        np.zeros(lines.n), np.zeros(lines.n), lines.get("ratio", default=0.0), lines.get("angle", default=0.0),
        lines.get("status", default=1.0),
    ])
    built = case_data_from_matpower(base_mva, bus, gen, branch, gencost, slack_bus_idx=slack)

    load_bus = loads.get("bus_id")
    position = {float(b): k for k, b in enumerate(node_ids)}
    unknown = sorted({float(b) for b in load_bus} - position.keys())
    if unknown:
        raise ValueError(f"load table refers to unknown bus numbers {unknown}")
    load_idx = np.array([position[float(b)] for b in load_bus], np.int64)
    f32 = lambda v: jnp.asarray(np.asarray(v, np.float32))  # noqa: E731
    i32 = lambda v: jnp.asarray(np.asarray(v, np.int32))  # noqa: E731
    return dataclasses.replace(
        built,
        n_loads=int(loads.n),
        node_x=f32(nodes.get("x", default=0.0)),
        node_y=f32(nodes.get("y", default=0.0)),
        unit_ids=i32(units.get("id", default=np.arange(1, units.n + 1))),
        line_ids=i32(lines.get("id", default=np.arange(1, lines.n + 1))),
        line_cap=f32(cap),
        line_floor=f32(floor),
        load_ids=i32(loads.get("id", default=np.arange(1, loads.n + 1))),
        load_bus_ids=i32(load_bus),
        load_node_idx=i32(load_idx),
        load_d_max=f32(loads.get("d_max")),
        load_d_min=f32(loads.get("d_min", default=0.0)),
        nodes_loads_map=f32(build_bus_map(load_idx, n)),
    )


convert_case = case_to_jax
