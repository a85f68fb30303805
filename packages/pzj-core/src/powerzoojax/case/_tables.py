"""Build a `CaseData` from the four tables of a benchmark case (`nodes`, `units`,
`lines`, `loads`), each a mapping column name -> values (one value per row).

These are the tables of the reference benchmark cases, the default case ids; the rules
below are the reference case builder's:

    * numeric columns are read; the unit `type` strings become `unit_fuel_type`
      (nuclear 1, coal 2, gas 3, oil 4, hydro 5, wind 6, solar 7, any other 0); other text
      columns are ignored;
    * nodes: `x, y, Pd, Qd, Gs, Bs` default to 0, `Vmin` to 0.94, `Vmax` to 1.06;
      with per-phase columns `Pd_A, Qd_A, Pd_B, Qd_B, Pd_C, Qd_C` the node loads are
      their phase sums and the phases are kept (`node_pd_a` ...);
    * units: limits from `p_max`/`p_min`, else `Pmax`/`Pmin`; marginal-cost
      coefficients `mc_a, mc_b, mc_c` (default 0); unit-commitment columns
      `ramp_up, ramp_down, min_up_time, min_down_time, init_power, init_state,
      init_start_up_cost, init_no_load_cost, keep_time` when present;
    * lines: `x` (0.01 when the column is absent); `floor == 0 -> -1e6`,
      `cap == 0 -> +1e6` (an absent column counts as 0); optional `r, b, ratio`
      (0 -> 1), `angle` [deg], `status`, `rateA`;
    * loads: `d_max`, `d_min` [MW] per load at `bus_id`;
    * slack: `slack_bus_idx` if given, else the first node of `type` 3, else the first
      node; bus ids map to 0-based indices by table position.

`CaseData` fields the tables may lack take these values (so every case runs in every
solver): node `type` 1 (PQ) with 3 at the slack, `baseKV` 0, `Va` 0; unit `Pg`,
`Qg` 0, `Vg` 1, `Qmin`/`Qmax` -inf/+inf, `mBase` = `base_mva`, `status` 1;
line `r`, `b`, `angle` 0, `ratio` 1, `status` 1, `rateA` 0 (unrated); unit
`unit_cost_c0` is 0 (marginal costs have no constant). Matrices are computed on the
host in float64 by `powerzoojax.case._branch_matrices` and stored float32.
"""

from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from ._case_data import CaseData
from ._branch_matrices import build_bus_map, build_incidence, build_ptdf
from ._topology import check_connected

FUEL_TYPES: dict[str, int] = {
    "nuclear": 1,
    "coal": 2,
    "gas": 3,
    "oil": 4,
    "hydro": 5,
    "wind": 6,
    "solar": 7,
}
TABLE_NAMES: tuple[str, ...] = ("nodes", "units", "lines", "loads")
PHASE_COLUMNS: tuple[str, ...] = ("Pd_A", "Qd_A", "Pd_B", "Qd_B", "Pd_C", "Qd_C")
# Reference column -> CaseData field, for the unit-commitment group.
UC_COLUMNS: dict[str, str] = {
    "ramp_up": "unit_ramp_up",
    "ramp_down": "unit_ramp_down",
    "min_up_time": "unit_min_up_time",
    "min_down_time": "unit_min_down_time",
    "init_power": "unit_init_power",
    "init_state": "unit_init_state",
    "init_start_up_cost": "unit_startup_cost",
    "init_no_load_cost": "unit_no_load_cost",
    "keep_time": "unit_keep_time",
}
_UC_INTEGER_COLUMNS = frozenset({"min_up_time", "min_down_time", "init_state", "keep_time"})
NO_FLOOR_MW = -1e6
NO_CAP_MW = 1e6
DEFAULT_LINE_X = 0.01
DEFAULT_V_MIN, DEFAULT_V_MAX = 0.94, 1.06
PQ, REF = 1, 3

Table = Mapping[str, np.ndarray | Sequence[float] | Sequence[str]]


def fuel_type_code(names: Sequence[str] | np.ndarray) -> np.ndarray:
    """Fuel-type codes of unit `type` strings (exact, case-sensitive names; other -> 0).

    **Arguments:**

    - `names`: `(n_units,)` fuel type names (`"nuclear"`, `"coal"`, ...).

    **Returns:**

    An int32 array of shape `(n_units,)` (codes as in `FUEL_TYPES`).
    """
    return np.array([FUEL_TYPES.get(str(name), 0) for name in names], dtype=np.int32)


class _Columns:
    """Numeric columns of one table, with its text `type` column kept apart."""

    def __init__(self, name: str, table: Table):
        self.name = name
        self.numeric: dict[str, np.ndarray] = {}
        self.text: dict[str, np.ndarray] = {}
        lengths = set()
        for column, values in table.items():
            array = np.asarray(values)
            if array.ndim != 1:
                raise ValueError(
                    f"{name}.{column} must be one value per row, got shape {array.shape}"
                )
            lengths.add(array.shape[0])
            if array.dtype.kind in "biuf":
                self.numeric[column] = array.astype(np.float64)
            elif array.dtype.kind in "USO" and all(isinstance(v, str) for v in array.tolist()):
                self.text[column] = array.astype(str)
            else:
                raise ValueError(
                    f"{name}.{column} has dtype {array.dtype}; expected numbers or text"
                )
        if len(lengths) > 1:
            raise ValueError(f"{name} columns have different lengths {sorted(lengths)}")
        self.n_rows = lengths.pop() if lengths else 0

    def get(self, *names: str, default: float | None = None) -> np.ndarray:
        """The first present column of `names`, else `default` in every row."""
        for column in names:
            if column in self.numeric:
                return self.numeric[column]
        if default is None:
            wanted = " or ".join(repr(c) for c in names)
            raise ValueError(f"{self.name} table has no numeric column {wanted}")
        return np.full(self.n_rows, default, dtype=np.float64)

    def has(self, *names: str) -> bool:
        return all(column in self.numeric for column in names)

    def integers(self, column: str, values: np.ndarray | None = None) -> np.ndarray:
        values = self.get(column) if values is None else values
        if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            bad = int(np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))[0])
            raise ValueError(
                f"{self.name}.{column} must hold integers, got {values[bad]!r} in row {bad}"
            )
        return values.astype(np.int64)


def case_data_from_tables(
    nodes: Table,
    units: Table,
    lines: Table,
    loads: Table,
    base_mva: float = 100.0,
    slack_bus_idx: int | None = None,
) -> CaseData:
    """Build a `CaseData` from benchmark case tables, with the reference case builder's
    defaults for missing columns.

    **Arguments:**

    - `nodes`, `units`, `lines`, `loads`: mappings column name -> values (NumPy arrays or
      sequences, one value per row). Required columns: `nodes.id`;
      `units.id, bus_id` and `p_max`/`p_min` (or `Pmax`/`Pmin`);
      `lines.id, from, to`; `loads.id, bus_id, d_max, d_min`.
    - `base_mva`: system base [MVA] of the per-unit impedances.
    - `slack_bus_idx`: 0-based slack node; default the first type-3 node, else node 0.

    **Returns:**

    The [`CaseData`][powerzoojax.case.CaseData].

    Raises:
        ValueError: on a missing required column, columns of different lengths, a unit /
            line / load at an unknown bus, duplicate bus ids, non-integer ids or
            unit-commitment step counts, a slack index out of range, or a network not
            connected to the slack.
    """
    node_t, unit_t = _Columns("nodes", nodes), _Columns("units", units)
    line_t, load_t = _Columns("lines", lines), _Columns("loads", loads)
    base_mva = float(base_mva)
    if not np.isfinite(base_mva) or base_mva <= 0:
        raise ValueError(f"base_mva must be a positive number, got {base_mva!r}")

    n_nodes = node_t.n_rows
    node_ids = node_t.integers("id")
    position = {int(bus_id): k for k, bus_id in enumerate(node_ids)}
    if len(position) != n_nodes:
        raise ValueError("nodes table has duplicate bus ids")

    def to_index(table: _Columns, column: str) -> np.ndarray:
        bus_ids = table.integers(column)
        unknown = sorted({int(b) for b in bus_ids} - position.keys())
        if unknown:
            raise ValueError(f"{table.name}.{column} refers to unknown bus ids {unknown}")
        return np.array([position[int(b)] for b in bus_ids], dtype=np.int64)

    has_type = node_t.has("type")
    node_type = node_t.integers("type") if has_type else np.full(n_nodes, PQ, np.int64)
    if slack_bus_idx is None:
        slack_rows = np.flatnonzero(node_type == REF)
        slack_bus_idx = int(slack_rows[0]) if slack_rows.size else 0
    if not 0 <= slack_bus_idx < n_nodes:
        raise ValueError(f"slack_bus_idx is {slack_bus_idx}, expected an index in [0, {n_nodes})")
    if not has_type:
        node_type[slack_bus_idx] = REF

    phases: dict[str, np.ndarray] = {}
    if node_t.has(*PHASE_COLUMNS):
        phases = {column: node_t.get(column) for column in PHASE_COLUMNS}
        node_pd = phases["Pd_A"] + phases["Pd_B"] + phases["Pd_C"]
        node_qd = phases["Qd_A"] + phases["Qd_B"] + phases["Qd_C"]
    else:
        node_pd, node_qd = node_t.get("Pd", default=0.0), node_t.get("Qd", default=0.0)

    unit_node_idx = to_index(unit_t, "bus_id")
    line_from_idx = to_index(line_t, "from")
    line_to_idx = to_index(line_t, "to")
    load_node_idx = to_index(load_t, "bus_id")
    n_units, n_lines, n_loads = unit_t.n_rows, line_t.n_rows, load_t.n_rows

    line_x = line_t.get("x", default=DEFAULT_LINE_X)
    cap = line_t.get("cap", default=0.0)
    floor = line_t.get("floor", default=0.0)
    cap = np.where(cap == 0.0, NO_CAP_MW, cap)
    floor = np.where(floor == 0.0, NO_FLOOR_MW, floor)
    ratio = line_t.get("ratio", default=1.0)

    line_status = line_t.integers("status", line_t.get("status", default=1.0))
    line_ids = line_t.integers("id")
    in_service = np.asarray(line_status) > 0
    incidence = build_incidence(line_from_idx, line_to_idx, n_nodes)
    check_connected(node_ids, line_ids, line_from_idx, line_to_idx, in_service, slack_bus_idx, "case_data_from_tables")
    ptdf = build_ptdf(line_from_idx, line_to_idx, line_x, n_nodes, slack_bus_idx, in_service)

    def f32(values: np.ndarray) -> jnp.ndarray:
        return jnp.asarray(np.asarray(values, dtype=np.float32))

    def i32(values: np.ndarray) -> jnp.ndarray:
        return jnp.asarray(np.asarray(values, dtype=np.int32))

    optional: dict[str, jnp.ndarray] = {}
    for column, field in UC_COLUMNS.items():
        if unit_t.has(column):
            is_int = column in _UC_INTEGER_COLUMNS
            optional[field] = i32(unit_t.integers(column)) if is_int else f32(unit_t.get(column))
    if "type" in unit_t.text:
        optional["unit_fuel_type"] = jnp.asarray(fuel_type_code(unit_t.text["type"]))
    for column, values in phases.items():
        optional[f"node_{column.lower()}"] = f32(values)

    return CaseData(
        n_nodes=int(n_nodes),
        n_lines=int(n_lines),
        n_units=int(n_units),
        n_loads=int(n_loads),
        base_mva=base_mva,
        slack_bus_idx=int(slack_bus_idx),
        node_ids=i32(node_ids),
        node_x=f32(node_t.get("x", default=0.0)),
        node_y=f32(node_t.get("y", default=0.0)),
        node_type=i32(node_type),
        node_pd=f32(node_pd),
        node_qd=f32(node_qd),
        node_gs=f32(node_t.get("Gs", default=0.0)),
        node_bs=f32(node_t.get("Bs", default=0.0)),
        node_v_min=f32(node_t.get("Vmin", default=DEFAULT_V_MIN)),
        node_v_max=f32(node_t.get("Vmax", default=DEFAULT_V_MAX)),
        node_base_kv=f32(node_t.get("baseKV", default=0.0)),
        node_va_deg=f32(node_t.get("Va", default=0.0)),
        unit_ids=i32(unit_t.integers("id")),
        unit_bus_ids=i32(node_ids[unit_node_idx]),
        unit_node_idx=i32(unit_node_idx),
        unit_p_min=f32(unit_t.get("p_min", "Pmin")),
        unit_p_max=f32(unit_t.get("p_max", "Pmax")),
        unit_cost_a=f32(unit_t.get("mc_a", default=0.0)),
        unit_cost_b=f32(unit_t.get("mc_b", default=0.0)),
        unit_cost_c=f32(unit_t.get("mc_c", default=0.0)),
        unit_cost_c0=f32(np.zeros(n_units)),
        unit_q_min=f32(unit_t.get("Qmin", default=-np.inf)),
        unit_q_max=f32(unit_t.get("Qmax", default=np.inf)),
        unit_pg=f32(unit_t.get("Pg", default=0.0)),
        unit_qg=f32(unit_t.get("Qg", default=0.0)),
        unit_vg=f32(unit_t.get("Vg", default=1.0)),
        unit_mbase=f32(unit_t.get("mBase", default=base_mva)),
        unit_status=i32(unit_t.integers("status", unit_t.get("status", default=1.0))),
        line_ids=i32(line_ids),
        line_from=i32(node_ids[line_from_idx]),
        line_to=i32(node_ids[line_to_idx]),
        line_from_idx=i32(line_from_idx),
        line_to_idx=i32(line_to_idx),
        line_r=f32(line_t.get("r", default=0.0)),
        line_x=f32(line_x),
        line_b=f32(line_t.get("b", default=0.0)),
        line_cap=f32(cap),
        line_floor=f32(floor),
        line_rate_a=f32(line_t.get("rateA", default=0.0)),
        line_ratio=f32(np.where(ratio == 0.0, 1.0, ratio)),
        line_angle=f32(line_t.get("angle", default=0.0)),
        line_status=i32(line_status),
        load_ids=i32(load_t.integers("id")),
        load_bus_ids=i32(node_ids[load_node_idx]),
        load_node_idx=i32(load_node_idx),
        load_d_max=f32(load_t.get("d_max")),
        load_d_min=f32(load_t.get("d_min")),
        incidence=f32(incidence),
        ptdf=f32(ptdf),
        nodes_units_map=f32(build_bus_map(unit_node_idx, n_nodes)),
        nodes_loads_map=f32(build_bus_map(load_node_idx, n_nodes)),
        **optional,
    )
