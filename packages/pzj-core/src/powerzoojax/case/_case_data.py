"""`CaseData`: one power-system case as an immutable pytree of arrays.

Every array is a JAX array (float32 values, int32 ids and indices); the dimensions and
the MVA base are static fields, so a `CaseData` passes through `jax.jit` / `jax.vmap` as
leaves plus a fixed treedef. Metadata (names, provenance) lives in the registry
(`powerzoojax.case.get_meta`), never here.

Dimensions: N nodes (buses), L lines (branches), G units (generators), D loads.

Units and conventions:
    * powers in MW / MVAr, impedances `r, x, b` in p.u. on `base_mva`;
    * `node_gs, node_bs` are MATPOWER's shunt powers [MW, MVAr] demanded at V = 1 p.u.;
    * ids (`node_ids`, `unit_bus_ids`, `line_from` ...) are the case's original bus
      numbers, `*_idx` fields are 0-based positions in the node arrays;
    * `unit_cost_a, unit_cost_b, unit_cost_c` are marginal-cost coefficients
      `MC(p) = a p^2 + b p + c` [$/MWh] (the derivative of MATPOWER's polynomial total
      cost), `unit_cost_c0` its constant term [$/h];
    * `line_cap` is `rateA` with 0 (unlimited) replaced by 1e6, `line_floor = -line_cap`;
    * loads: the reference benchmark tables list their loads (`d_max`, `d_min`, the
      range an env's nominal profile `(d_max + d_min)/2` sits in); MATPOWER's files have
      none, so those cases get one load per bus with `load_d_max = max(1.5 Pd, 0)`,
      `load_d_min = min(1.5 Pd, 0)`;
    * `ptdf` maps nodal injections [MW] to line flows [MW], from->to positive, slack
      column zero, built over the in-service lines only (`line_status > 0`): an
      out-of-service line has a zero row and carries no power. Every bus must reach the
      slack through in-service lines; the builders raise otherwise. Change the status with
      `CaseData.with_line_status` (host) so the two stay consistent.

Optional groups (`None` when the case tables do not have them; the reference benchmark
tables of the default ids carry them, MATPOWER's files do not):
    * unit commitment: `unit_ramp_up, unit_ramp_down` (fraction of `p_max` per hour),
      `unit_min_up_time, unit_min_down_time` (steps), `unit_init_power` [MW],
      `unit_init_state` (1 on, 0 off), `unit_startup_cost` [$],
      `unit_no_load_cost` [$/h], `unit_keep_time` (signed steps: + on, - off, for that
      long);
    * `unit_fuel_type`: nuclear 1, coal 2, gas 3, oil 4, hydro 5, wind 6, solar 7,
      other 0;
    * three-phase loads: `node_pd_a, node_qd_a, node_pd_b, node_qd_b, node_pd_c,
      node_qd_c` [MW, MVAr] (`node_pd`/`node_qd` are their phase sums).
"""

import equinox as eqx
import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._branch_matrices import build_ptdf
from ._topology import check_connected


class CaseData(eqx.Module):
    """Arrays of one case; build it with `load_case`, `case_data_from_tables` or
    `case_data_from_matpower`.

    Shapes use `N` nodes (buses), `L` lines, `G` units and `D` loads. Ids are the case's bus numbers, `*_idx` fields 0-based node
    positions.

    **Arguments:**

    - `n_nodes`, `n_lines`, `n_units`, `n_loads`: the dimensions `N`, `L`, `G`, `D` (static).
    - `base_mva`: system base [MVA] of the per-unit impedances (static).
    - `slack_bus_idx`: 0-based slack node (static).
    - `node_ids`, `node_type`: `(N,)` bus numbers and MATPOWER bus types (3 = slack).
    - `node_x`, `node_y`: `(N,)` drawing coordinates (0 when the case has none).
    - `node_pd`, `node_qd`: `(N,)` demand [MW, MVAr].
    - `node_gs`, `node_bs`: `(N,)` shunt powers [MW, MVAr] demanded at V = 1 p.u.
    - `node_v_min`, `node_v_max`: `(N,)` voltage limits [p.u.].
    - `node_base_kv`: `(N,)` base voltage [kV].
    - `node_va_deg`: `(N,)` MATPOWER voltage angle [degrees]; the AC solvers hold the slack
      at this angle.
    - `unit_ids`, `unit_bus_ids`, `unit_node_idx`: `(G,)` unit ids, their bus numbers and
      node positions.
    - `unit_p_min`, `unit_p_max`: `(G,)` active power limits [MW].
    - `unit_cost_a`, `unit_cost_b`, `unit_cost_c`: `(G,)` marginal-cost coefficients,
      `MC(p) = a p^2 + b p + c` [$/MWh].
    - `unit_cost_c0`: `(G,)` constant cost term [$/h].
    - `unit_q_min`, `unit_q_max`: `(G,)` reactive limits [MVAr].
    - `unit_pg`, `unit_qg`: `(G,)` MATPOWER's dispatch [MW, MVAr].
    - `unit_vg`: `(G,)` voltage set-point [p.u.].
    - `unit_mbase`: `(G,)` machine base [MVA].
    - `unit_status`: `(G,)` 1 in service, 0 out.
    - `line_ids`, `line_from`, `line_to`: `(L,)` line ids and end bus numbers.
    - `line_from_idx`, `line_to_idx`: `(L,)` end node positions.
    - `line_r`, `line_x`, `line_b`: `(L,)` resistance, reactance, total charging [p.u.].
    - `line_cap`, `line_floor`: `(L,)` flow limits [MW]: `rateA` (0, unlimited, becomes
      1e6) and its negative.
    - `line_rate_a`: `(L,)` MATPOWER's `rateA` [MVA] as given.
    - `line_ratio`, `line_angle`: `(L,)` transformer tap ratio and phase shift [degrees].
    - `line_status`: `(L,)` 1 in service, 0 out.
    - `load_ids`, `load_bus_ids`, `load_node_idx`: `(D,)` load ids, bus numbers, node
      positions.
    - `load_d_max`, `load_d_min`: `(D,)` range of each load [MW].
    - `incidence`: `(L, N)` line-node incidence (+1 at the from end, -1 at the to end).
    - `ptdf`: `(L, N)` DC power-transfer factors [MW flow per MW injection] of the
      in-service lines, slack column zero.
    - `nodes_units_map`, `nodes_loads_map`: `(N, G)` and `(N, D)` 0/1 device-to-node maps.
    - `unit_ramp_up`, `unit_ramp_down`: `(G,)` ramp limits [fraction of `p_max` per hour],
      or `None`.
    - `unit_min_up_time`, `unit_min_down_time`: `(G,)` [steps], or `None`.
    - `unit_init_power`: `(G,)` initial output [MW], or `None`.
    - `unit_init_state`: `(G,)` 1 on, 0 off, or `None`.
    - `unit_startup_cost`: `(G,)` [$], or `None`.
    - `unit_no_load_cost`: `(G,)` [$/h], or `None`.
    - `unit_keep_time`: `(G,)` signed steps the unit has been on (+) or off (-), or `None`.
    - `unit_fuel_type`: `(G,)` nuclear 1, coal 2, gas 3, oil 4, hydro 5, wind 6, solar 7,
      other 0; or `None`.
    - `node_pd_a`, `node_qd_a`, `node_pd_b`, `node_qd_b`, `node_pd_c`, `node_qd_c`: `(N,)`
      per-phase demand [MW, MVAr] of three-phase cases, or `None`.
    """

    n_nodes: int = eqx.field(static=True)
    n_lines: int = eqx.field(static=True)
    n_units: int = eqx.field(static=True)
    n_loads: int = eqx.field(static=True)
    base_mva: float = eqx.field(static=True)
    slack_bus_idx: int = eqx.field(static=True)

    # Nodes.
    node_ids: Int[Array, " n_nodes"]
    node_x: Float[Array, " n_nodes"]
    node_y: Float[Array, " n_nodes"]
    node_type: Int[Array, " n_nodes"]
    node_pd: Float[Array, " n_nodes"]
    node_qd: Float[Array, " n_nodes"]
    node_gs: Float[Array, " n_nodes"]
    node_bs: Float[Array, " n_nodes"]
    node_v_min: Float[Array, " n_nodes"]
    node_v_max: Float[Array, " n_nodes"]
    node_base_kv: Float[Array, " n_nodes"]
    # MATPOWER VA column: the AC solvers hold the slack at this angle (case 118: 30 degrees).
    node_va_deg: Float[Array, " n_nodes"]

    # Units.
    unit_ids: Int[Array, " n_units"]
    unit_bus_ids: Int[Array, " n_units"]
    unit_node_idx: Int[Array, " n_units"]
    unit_p_min: Float[Array, " n_units"]
    unit_p_max: Float[Array, " n_units"]
    unit_cost_a: Float[Array, " n_units"]
    unit_cost_b: Float[Array, " n_units"]
    unit_cost_c: Float[Array, " n_units"]
    unit_cost_c0: Float[Array, " n_units"]
    unit_q_min: Float[Array, " n_units"]
    unit_q_max: Float[Array, " n_units"]
    unit_pg: Float[Array, " n_units"]
    unit_qg: Float[Array, " n_units"]
    unit_vg: Float[Array, " n_units"]
    unit_mbase: Float[Array, " n_units"]
    unit_status: Int[Array, " n_units"]

    # Lines.
    line_ids: Int[Array, " n_lines"]
    line_from: Int[Array, " n_lines"]
    line_to: Int[Array, " n_lines"]
    line_from_idx: Int[Array, " n_lines"]
    line_to_idx: Int[Array, " n_lines"]
    line_r: Float[Array, " n_lines"]
    line_x: Float[Array, " n_lines"]
    line_b: Float[Array, " n_lines"]
    line_cap: Float[Array, " n_lines"]
    line_floor: Float[Array, " n_lines"]
    line_rate_a: Float[Array, " n_lines"]
    line_ratio: Float[Array, " n_lines"]
    line_angle: Float[Array, " n_lines"]
    line_status: Int[Array, " n_lines"]

    # Loads.
    load_ids: Int[Array, " n_loads"]
    load_bus_ids: Int[Array, " n_loads"]
    load_node_idx: Int[Array, " n_loads"]
    load_d_max: Float[Array, " n_loads"]
    load_d_min: Float[Array, " n_loads"]

    # Matrices (computed in float64 on the host, stored float32).
    incidence: Float[Array, "n_lines n_nodes"]
    ptdf: Float[Array, "n_lines n_nodes"]
    nodes_units_map: Float[Array, "n_nodes n_units"]
    nodes_loads_map: Float[Array, "n_nodes n_loads"]

    # Optional groups (see the module docstring).
    unit_ramp_up: Float[Array, " n_units"] | None = None
    unit_ramp_down: Float[Array, " n_units"] | None = None
    unit_min_up_time: Int[Array, " n_units"] | None = None
    unit_min_down_time: Int[Array, " n_units"] | None = None
    unit_init_power: Float[Array, " n_units"] | None = None
    unit_init_state: Int[Array, " n_units"] | None = None
    unit_startup_cost: Float[Array, " n_units"] | None = None
    unit_no_load_cost: Float[Array, " n_units"] | None = None
    unit_keep_time: Int[Array, " n_units"] | None = None
    unit_fuel_type: Int[Array, " n_units"] | None = None
    node_pd_a: Float[Array, " n_nodes"] | None = None
    node_qd_a: Float[Array, " n_nodes"] | None = None
    node_pd_b: Float[Array, " n_nodes"] | None = None
    node_qd_b: Float[Array, " n_nodes"] | None = None
    node_pd_c: Float[Array, " n_nodes"] | None = None
    node_qd_c: Float[Array, " n_nodes"] | None = None

    def __check_init__(self) -> None:
        validate_case_data(self)

    def with_line_status(self, line_status: Bool[ArrayLike, " n_lines"] | Int[ArrayLike, " n_lines"]) -> "CaseData":
        """This case with a new line status and the PTDF rebuilt for it.

        See [`case_with_line_status`][powerzoojax.case.case_with_line_status] (host-side,
        raises on islands).

        **Arguments:**

        - `line_status`: `(n_lines,)` 1 / True in service, 0 / False out.

        **Returns:**

        A new [`CaseData`][powerzoojax.case.CaseData].
        """
        return case_with_line_status(self, line_status)

    @property
    def PTDF(self) -> Float[Array, "n_lines n_nodes"]:
        """Alias of `ptdf` [MW flow per MW injection]."""
        return self.ptdf


# Expected shape of every array field, in terms of the static dimensions.
_FIELD_DIMS: dict[str, tuple[str, ...]] = {
    **{
        name: ("n_nodes",)
        for name in [
            "node_ids",
            "node_x",
            "node_y",
            "node_type",
            "node_pd",
            "node_qd",
            "node_gs",
            "node_bs",
            "node_v_min",
            "node_v_max",
            "node_base_kv",
            "node_va_deg",
        ]
    },
    **{
        name: ("n_units",)
        for name in [
            "unit_ids",
            "unit_bus_ids",
            "unit_node_idx",
            "unit_p_min",
            "unit_p_max",
            "unit_cost_a",
            "unit_cost_b",
            "unit_cost_c",
            "unit_cost_c0",
            "unit_q_min",
            "unit_q_max",
            "unit_pg",
            "unit_qg",
            "unit_vg",
            "unit_mbase",
            "unit_status",
        ]
    },
    **{
        name: ("n_lines",)
        for name in [
            "line_ids",
            "line_from",
            "line_to",
            "line_from_idx",
            "line_to_idx",
            "line_r",
            "line_x",
            "line_b",
            "line_cap",
            "line_floor",
            "line_rate_a",
            "line_ratio",
            "line_angle",
            "line_status",
        ]
    },
    **{
        name: ("n_loads",)
        for name in ["load_ids", "load_bus_ids", "load_node_idx", "load_d_max", "load_d_min"]
    },
    "incidence": ("n_lines", "n_nodes"),
    "ptdf": ("n_lines", "n_nodes"),
    "nodes_units_map": ("n_nodes", "n_units"),
    "nodes_loads_map": ("n_nodes", "n_loads"),
}

# Optional fields: None, or an array of this shape.
UC_FIELDS: tuple[str, ...] = (
    "unit_ramp_up",
    "unit_ramp_down",
    "unit_min_up_time",
    "unit_min_down_time",
    "unit_init_power",
    "unit_init_state",
    "unit_startup_cost",
    "unit_no_load_cost",
    "unit_keep_time",
)
PHASE_LOAD_FIELDS: tuple[str, ...] = (
    "node_pd_a",
    "node_qd_a",
    "node_pd_b",
    "node_qd_b",
    "node_pd_c",
    "node_qd_c",
)
_OPTIONAL_FIELD_DIMS: dict[str, tuple[str, ...]] = {
    **{name: ("n_units",) for name in (*UC_FIELDS, "unit_fuel_type")},
    **{name: ("n_nodes",) for name in PHASE_LOAD_FIELDS},
}

_INT_FIELDS: frozenset[str] = frozenset(
    name
    for name in (*_FIELD_DIMS, *_OPTIONAL_FIELD_DIMS)
    if name.endswith(("_ids", "_idx", "_status", "_type", "_time", "_state"))
    or name in ("line_from", "line_to")
)


def validate_case_data(case: CaseData) -> None:
    """Check that every array matches the static dimensions of `case`.

    **Arguments:**

    - `case`: the case to check.

    Raises:
        ValueError: naming the first inconsistent field, its shape and the expected shape,
            or an out-of-range `slack_bus_idx`.
    """
    dims = {
        "n_nodes": case.n_nodes,
        "n_lines": case.n_lines,
        "n_units": case.n_units,
        "n_loads": case.n_loads,
    }
    for name, dim_names in (*_FIELD_DIMS.items(), *_OPTIONAL_FIELD_DIMS.items()):
        value = getattr(case, name)
        if value is None and name in _OPTIONAL_FIELD_DIMS:
            continue
        expected = tuple(dims[d] for d in dim_names)
        shape = () if value is None else tuple(jnp.shape(value))
        if shape != expected:
            raise ValueError(
                f"CaseData.{name} has shape {shape}, expected {expected} "
                f"({', '.join(f'{d}={dims[d]}' for d in dim_names)})"
            )
        is_int = jnp.issubdtype(jnp.result_type(value), jnp.integer)
        if name in _INT_FIELDS and not is_int:
            raise ValueError(
                f"CaseData.{name} has dtype {jnp.result_type(value)}, expected an integer dtype"
            )
        if name not in _INT_FIELDS and not jnp.issubdtype(jnp.result_type(value), jnp.floating):
            raise ValueError(
                f"CaseData.{name} has dtype {jnp.result_type(value)}, expected a float dtype"
            )
    if not 0 <= case.slack_bus_idx < case.n_nodes:
        raise ValueError(
            f"CaseData.slack_bus_idx is {case.slack_bus_idx}, expected an index in "
            f"[0, {case.n_nodes})"
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
