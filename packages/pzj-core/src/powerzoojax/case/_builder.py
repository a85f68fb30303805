"""Build a `CaseData` from MATPOWER-format tables (`bus`, `gen`, `branch`, `gencost`).

The tables use MATPOWER's column order (`idx_bus`, `idx_gen`, `idx_brch`,
`idx_cost`) and units: powers in MW / MVAr, impedances in p.u. on `base_mva`.
Only polynomial costs (MODEL 2) with at most four coefficients are supported.

Project conventions applied here (not MATPOWER's):
    * one load per bus, in bus order, with `d_max = max(1.5 Pd, 0)` and
      `d_min = min(1.5 Pd, 0)`. This reproduces the reference totals for case 5
      (sum d_max = 1500 MW, default profile (d_max + d_min)/2 = 750 MW); the reference's
      per-bus case-5 values [0, 250, 300, 200, 0] come from a non-public table and are
      not reproduced;
    * `x == 0` is replaced by 0.01 p.u., `rateA == 0` (unlimited) by a cap of 1e6,
      a tap `ratio == 0` by 1;
    * the slack is `slack_bus_idx` if given, else the first type-3 bus, else bus 0.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Float

from ._case_data import CaseData
from ._branch_matrices import build_bus_map, build_incidence, build_ptdf
from ._topology import check_connected

# MATPOWER column indices (0-based).
BUS_I, BUS_TYPE, PD, QD, GS, BS, BUS_AREA, VM, VA, BASE_KV, ZONE, VMAX, VMIN = range(13)
GEN_BUS, PG, QG, QMAX, QMIN, VG, MBASE, GEN_STATUS, PMAX, PMIN = range(10)
(F_BUS, T_BUS, BR_R, BR_X, BR_B, RATE_A, RATE_B, RATE_C, TAP, SHIFT, BR_STATUS) = range(11)
MODEL, STARTUP, SHUTDOWN, NCOST, COST = range(5)
POLYNOMIAL = 2

LOAD_HEADROOM = 1.5
ZERO_REACTANCE_SUBSTITUTE = 0.01
UNLIMITED_CAP_MW = 1e6


def polynomial_to_marginal_cost(
    gencost: Float[np.ndarray, "n_units n_cols"],
) -> Float[np.ndarray, "n_units 4"]:
    """MATPOWER polynomial gencost rows -> `(a, b, c, c0)` per unit.

    `TC(p) = sum_k c_k p^k` becomes `MC(p) = dTC/dp = a p^2 + b p + c` with
    `a = 3 c3, b = 2 c2, c = c1`; `c0` is the constant term.

    **Arguments:**

    - `gencost`: `(n_units, n_cols)` MATPOWER gencost rows (model 2, polynomial).

    **Returns:**

    A `(n_units, 4)` float64 array of `(a, b, c, c0)`: [$/MWh] coefficients of the
    marginal cost and the constant [$/h].

    Raises:
        ValueError: for a non-polynomial row or a polynomial above cubic.
    """
    gencost = np.asarray(gencost, dtype=np.float64)
    out = np.zeros((gencost.shape[0], 4), dtype=np.float64)
    for row_idx, row in enumerate(gencost):
        if row[MODEL] != POLYNOMIAL:
            raise ValueError(
                f"gencost row {row_idx} has MODEL {row[MODEL]:g}; only polynomial costs "
                f"(MODEL {POLYNOMIAL}) are supported"
            )
        n_cost = int(row[NCOST])
        if not 0 <= n_cost <= 4 or COST + n_cost > row.shape[0]:
            raise ValueError(
                f"gencost row {row_idx} has NCOST {n_cost}; expected 0..4 coefficients "
                f"within the row's {row.shape[0] - COST} cost columns"
            )
        # MATPOWER stores c_{n-1} ... c_0, highest power first.
        coeffs = row[COST : COST + n_cost][::-1]
        c = np.zeros(4, dtype=np.float64)
        c[:n_cost] = coeffs
        out[row_idx] = (3.0 * c[3], 2.0 * c[2], c[1], c[0])
    return out


def case_data_from_matpower(
    base_mva: float,
    bus: Float[np.ndarray, "n_nodes bus_cols"],
    gen: Float[np.ndarray, "n_units gen_cols"],
    branch: Float[np.ndarray, "n_lines branch_cols"],
    gencost: Float[np.ndarray, "n_cost_rows gencost_cols"],
    slack_bus_idx: int | None = None,
) -> CaseData:
    """Build a `CaseData` from MATPOWER tables (float64 NumPy, MATPOWER column order).

    The matrices (incidence, PTDF, device maps) are computed here in float64 and stored as
    float32. Project conventions (not MATPOWER's): one load per bus, in bus order, with
    `d_max = max(1.5 Pd, 0)` and `d_min = min(1.5 Pd, 0)`; `x == 0` becomes 0.01 p.u.,
    `rateA == 0` (unlimited) a cap of 1e6 and a tap `ratio == 0` 1.

    **Arguments:**

    - `base_mva`: system base [MVA].
    - `bus`: `(n_nodes, bus_cols)` MATPOWER bus table.
    - `gen`: `(n_units, gen_cols)` generator table.
    - `branch`: `(n_lines, branch_cols)` branch table.
    - `gencost`: `(n_units, gencost_cols)` polynomial cost table.
    - `slack_bus_idx`: 0-based slack node; `None` takes the first type-3 bus.

    **Returns:**

    The [`CaseData`][powerzoojax.case.CaseData].

    Raises:
        ValueError: on a table with too few columns, a gencost row count different from
            the number of units, a unit or line referring to an unknown bus, an
            unsupported cost model, or in-service lines that leave buses islanded from the
            slack (naming those buses and the lines out).
    """
    bus = np.asarray(bus, dtype=np.float64)
    gen = np.asarray(gen, dtype=np.float64)
    branch = np.asarray(branch, dtype=np.float64)
    gencost = np.asarray(gencost, dtype=np.float64)
    for name, table, min_cols in (
        ("bus", bus, VMIN + 1),
        ("gen", gen, PMIN + 1),
        ("branch", branch, BR_STATUS + 1),
        ("gencost", gencost, COST),
    ):
        if table.shape[1] < min_cols:
            raise ValueError(
                f"{name} table has {table.shape[1]} columns, expected at least {min_cols}"
            )
    if gencost.shape[0] != gen.shape[0]:
        raise ValueError(
            f"gencost has {gencost.shape[0]} rows, expected one per unit ({gen.shape[0]}); "
            "reactive-power cost rows are not supported"
        )

    n_nodes, n_units, n_lines = bus.shape[0], gen.shape[0], branch.shape[0]
    node_ids = bus[:, BUS_I].astype(np.int64)
    position = {int(bus_id): k for k, bus_id in enumerate(node_ids)}
    if len(position) != n_nodes:
        raise ValueError("bus table has duplicate bus numbers")

    def to_index(table_name: str, bus_ids: np.ndarray) -> np.ndarray:
        unknown = sorted({int(b) for b in bus_ids} - position.keys())
        if unknown:
            raise ValueError(f"{table_name} refers to unknown bus numbers {unknown}")
        return np.array([position[int(b)] for b in bus_ids], dtype=np.int64)

    unit_bus_ids = gen[:, GEN_BUS].astype(np.int64)
    line_from = branch[:, F_BUS].astype(np.int64)
    line_to = branch[:, T_BUS].astype(np.int64)
    unit_node_idx = to_index("gen", unit_bus_ids)
    line_from_idx = to_index("branch (from)", line_from)
    line_to_idx = to_index("branch (to)", line_to)

    if slack_bus_idx is None:
        slack_candidates = np.flatnonzero(bus[:, BUS_TYPE] == 3)
        slack_bus_idx = int(slack_candidates[0]) if slack_candidates.size else 0

    line_x = np.where(branch[:, BR_X] == 0.0, ZERO_REACTANCE_SUBSTITUTE, branch[:, BR_X])
    rate_a = branch[:, RATE_A]
    line_cap = np.where(rate_a == 0.0, UNLIMITED_CAP_MW, rate_a)
    ratio = branch[:, TAP]
    cost = polynomial_to_marginal_cost(gencost)
    pd = bus[:, PD]

    incidence = build_incidence(line_from_idx, line_to_idx, n_nodes)
    in_service = branch[:, BR_STATUS] > 0
    check_connected(
        node_ids, np.arange(1, n_lines + 1), line_from_idx, line_to_idx, in_service, slack_bus_idx,
        "case_data_from_matpower",
    )
    ptdf = build_ptdf(line_from_idx, line_to_idx, line_x, n_nodes, slack_bus_idx, in_service)
    load_node_idx = np.arange(n_nodes)

    def f32(values: np.ndarray) -> jnp.ndarray:
        return jnp.asarray(np.asarray(values, dtype=np.float32))

    def i32(values: np.ndarray) -> jnp.ndarray:
        return jnp.asarray(np.asarray(values, dtype=np.int32))

    return CaseData(
        n_nodes=int(n_nodes),
        n_lines=int(n_lines),
        n_units=int(n_units),
        n_loads=int(n_nodes),
        base_mva=float(base_mva),
        slack_bus_idx=int(slack_bus_idx),
        node_ids=i32(node_ids),
        node_x=f32(np.zeros(n_nodes)),
        node_y=f32(np.zeros(n_nodes)),
        node_type=i32(bus[:, BUS_TYPE]),
        node_pd=f32(pd),
        node_qd=f32(bus[:, QD]),
        node_gs=f32(bus[:, GS]),
        node_bs=f32(bus[:, BS]),
        node_v_min=f32(bus[:, VMIN]),
        node_v_max=f32(bus[:, VMAX]),
        node_base_kv=f32(bus[:, BASE_KV]),
        node_va_deg=f32(bus[:, VA]),
        unit_ids=i32(np.arange(1, n_units + 1)),
        unit_bus_ids=i32(unit_bus_ids),
        unit_node_idx=i32(unit_node_idx),
        unit_p_min=f32(gen[:, PMIN]),
        unit_p_max=f32(gen[:, PMAX]),
        unit_cost_a=f32(cost[:, 0]),
        unit_cost_b=f32(cost[:, 1]),
        unit_cost_c=f32(cost[:, 2]),
        unit_cost_c0=f32(cost[:, 3]),
        unit_q_min=f32(gen[:, QMIN]),
        unit_q_max=f32(gen[:, QMAX]),
        unit_pg=f32(gen[:, PG]),
        unit_qg=f32(gen[:, QG]),
        unit_vg=f32(gen[:, VG]),
        unit_mbase=f32(gen[:, MBASE]),
        unit_status=i32(gen[:, GEN_STATUS]),
        line_ids=i32(np.arange(1, n_lines + 1)),
        line_from=i32(line_from),
        line_to=i32(line_to),
        line_from_idx=i32(line_from_idx),
        line_to_idx=i32(line_to_idx),
        line_r=f32(branch[:, BR_R]),
        line_x=f32(line_x),
        line_b=f32(branch[:, BR_B]),
        line_cap=f32(line_cap),
        line_floor=f32(-line_cap),
        line_rate_a=f32(rate_a),
        line_ratio=f32(np.where(ratio == 0.0, 1.0, ratio)),
        line_angle=f32(branch[:, SHIFT]),
        line_status=i32(branch[:, BR_STATUS]),
        load_ids=i32(np.arange(1, n_nodes + 1)),
        load_bus_ids=i32(node_ids),
        load_node_idx=i32(load_node_idx),
        load_d_max=f32(np.maximum(LOAD_HEADROOM * pd, 0.0)),
        load_d_min=f32(np.minimum(LOAD_HEADROOM * pd, 0.0)),
        incidence=f32(incidence),
        ptdf=f32(ptdf),
        nodes_units_map=f32(build_bus_map(unit_node_idx, n_nodes)),
        nodes_loads_map=f32(build_bus_map(load_node_idx, n_nodes)),
    )
