"""In-graph DC optimal power flow (economic dispatch with PTDF line limits).

Problem, per call (powers in MW, costs in $/h):

    min  Σ_g TC_g(p_g) + ½ Σ_g w_g (p_g − p_ref,g)²
    s.t. Σ_g p_g = Σ_n load_n
         p_min_g ≤ p_g ≤ p_max_g                      (runtime bounds: ramp windows, commitment)
         floor_l ≤ (PTDF·(A_u p − load))_l ≤ cap_l    (monitored lines, both directions)

with the house cost polynomial `TC(p) = a/3 p³ + b/2 p² + c p` (marginal cost
`a p² + b p + c`; linear when `a = b = 0`). The preference term, present when the setup is
built with `preference_term=True`, lets a caller bias the dispatch toward `p_ref`; it is
not part of the reported `objective`. Committed-off units take bounds `[0, 0]`.

API (all jit/vmap-friendly, no retrace across calls with the same shapes):

    setup = make_dc_opf_setup(case, line_cap=None, line_floor=None,     # host, once
                              algorithm=None, preference_term=False)
    res = dc_opf(setup, node_load_mw,                                    # (n_nodes,) MW
                 p_min=None, p_max=None,                                 # (n_units,) runtime bounds
                 cost_a=None, cost_b=None, cost_c=None,                  # (n_units,) override case costs
                 p_ref=None, ref_weight=None,                            # (n_units,) preference (if the setup has it)
                 line_cap=None, line_floor=None,                         # (n_lines,) runtime limits
                 p_init=None,                                            # (n_units,) warm start
                 load_flow_mw=None,                                      # (n_lines,) PTDF @ load, if known
                 basis=None,                                             # res.basis of an earlier call
                 max_iter=30, tol=1e-4, line_penalty=1e3)
    res.p_mw, res.line_flow_mw, res.lmp, res.objective, res.status, res.converged, res.n_iter, res.basis

    dc_opf(..., throw=True)   # raise (also under jit) unless the status is successful

`DCOPFResult` fields: `p_mw (G)`, `line_flow_mw (L)` (from→to positive, every line),
`node_injection_mw (N)`, `lmp (N)` [$/MWh], `lambda_balance` (system price),
`mu_upper/mu_lower (L)` (line duals [$/MWh], 0 on unmonitored lines),
`objective` (`TC` of `p_mw` [$/h]), `line_violation_mw` (Σ MW beyond the limits,
> 0 only when the limits cannot all be met), `status`, `converged`, `n_iter`, `basis`
(the dual simplex's final basis, to warm-start the next call).

Status (a [`SolverStatus`][powerzoojax.physics.SolverStatus]): `successful` — optimal;
`infeasible` — load outside
`[Σp_min, Σp_max]` (dispatch then sits at the nearest bound, flows use the real load) or
line limits that cannot all be met (best-effort dispatch minimising cost + `line_penalty`
× max marginal cost per MW of overload; also when the iteration stopped early but its
line duals certify infeasibility, see `_qp_ipm.rows_infeasible`); `max_steps_reached` — the
iteration ended unconverged (the last finite iterate is returned). Values are always
finite; `throw=True` raises instead on every status but `successful`.
`converged` is True when the solver met `tol` (also for a best-effort infeasible answer,
and always when the load lies outside the capacity range: the dispatch is then exactly the
violated bounds);
`tol` bounds the scaled KKT residuals (MW ÷ the widest unit range, $/MWh ÷ the largest
marginal cost) and the complementarity gap.

Only *monitored* lines (in service, with finite limits below `UNLIMITED_MW` in the
setup; case 118 has none) enter the optimisation, which is a static set: a runtime `line_cap` override can
tighten or loosen them, but an unmonitored line stays unmonitored. With no monitored lines
the Newton matrix is diagonal and each solve costs O(G) per iteration.

Algorithm, chosen once, when the setup is built (`DCOPFSetup.algorithm`, static: a call
never changes the program by passing or omitting an argument):

- `"dual_simplex"`: constant marginal costs (`cost_a = cost_b = 0`). The optimum is a
  vertex and the bounded dual simplex of `powerzoojax.physics._dispatch_lp` finds it
  exactly (elastic line limits, started from the merit order, or from the `basis` of an
  earlier call with the same setup and costs, which on slowly changing loads leaves only
  the pivots where the binding lines changed; `max_iter` is raised to its pivot budget,
  `tol` and `p_init` do not apply). It has no quadratic term, so a `cost_a` or `cost_b`
  override is refused when the call is traced, and the preference term when the setup is
  built.
- `"interior_point"`: the primal–dual interior point of `powerzoojax.physics._qp_ipm`
  (Mehrotra predictor–corrector, elastic line limits) on the polynomial costs. An interior
  point's relative gap does not pin a linear optimum (on case 5 it left units tens of MW
  from the vertex): given constant marginal costs it reports `successful` only at an
  exactly certified KKT point.
- `"by_costs"`: each instance's costs pick one of the two in the graph, by a `lax.cond`
  on `a = 0` and `b + ref_weight = 0` (one program for both: no recompiles; under `vmap`
  with per-instance costs both solvers run and each instance keeps its own answer). For
  callers whose cost overrides or preference weights may be linear or quadratic.

`make_dc_opf_setup` chooses `"dual_simplex"` when the objective is linear or the case's
`cost_a` and `cost_b` are all zero, `"interior_point"` otherwise, and `"by_costs"` for a
setup with the preference term; an explicit `algorithm` overrides that choice. A setup
with no monitored line (case 118 as shipped) takes an exact shortcut instead, whatever its
algorithm: one system price, found by a fixed-length bisection
(`solve_separable_dispatch`); `n_iter` then reports the bisection count. Dtype follows
`node_load_mw` (float32 by default, float64 when it is float64).
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.physics._costs import generation_cost
from powerzoojax.physics._qp_ipm import (
    DispatchProblem,
    DispatchQPSolution,
    rows_infeasible,
    solve_dispatch_qp,
    solve_separable_dispatch,
)
from powerzoojax.physics._dispatch_grad import dispatch_kkt_derivatives
from powerzoojax.physics._dispatch_lp import (
    DispatchBasis,
    DispatchLPTuning,
    check_tuning,
    cold_dispatch_basis,
    solve_dispatch_lp,
)
from powerzoojax.physics._entry import solver_entry as _solver_entry
from powerzoojax.physics._status import SolverStatus, raise_if_failed
from powerzoojax.physics._working_dtype import working_float_dtype
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp

UNLIMITED_MW = 1e5  # line limits at or beyond this are treated as absent
_MIN_WIDTH_REL = 1e-6  # fixed units are widened by this fraction of the widest box (see _qp_ipm)


class DCOPFSetup(eqx.Module):
    """Host-precomputed DC-OPF operators of one case (float32 leaves); build with
    [`make_dc_opf_setup`][powerzoojax.physics.make_dc_opf_setup].

    **Arguments:**

    - `ptdf_units_t`: `(G, L)` transposed PTDF of the units' buses.
    - `ptdf_t`: `(N, L)` transposed PTDF.
    - `mon_ptdf_units_t`, `mon_ptdf_t`: the same restricted to the `n_mon` monitored lines.
    - `mon_idx`: `(n_mon,)` the monitored lines (in service, finite limits).
    - `nodes_units_map`: `(N, G)` unit-to-node map.
    - `line_cap`, `line_floor`: `(L,)` limits [MW].
    - `p_min`, `p_max`: `(G,)` unit limits [MW].
    - `cost_a`, `cost_b`, `cost_c`: `(G,)` marginal-cost coefficients [$/MWh].
    - `algorithm`: the solver of a setup with monitored lines (static), one of
      `DCOPF_ALGORITHMS`: `"dual_simplex"` (constant marginal costs, solved exactly; no
      `cost_a`/`cost_b` override or preference term), `"interior_point"` (polynomial
      costs) or `"by_costs"` (each instance's costs pick one of the two in the graph). A
      setup with no monitored line solves every cost by the price bisection.
    - `preference_term`: `dc_opf` adds `½ Σ w (p − p_ref)²` from its `p_ref` and
      `ref_weight` (static); without it those arguments are refused.
    - `lp_tuning`: how that dual simplex runs (static; the same optimum for every value):
      a `DispatchLPTuning`, or `None` for the device's own (chosen at lowering).
    """

    ptdf_units_t: Float[Array, "n_units n_lines"]
    ptdf_t: Float[Array, "n_nodes n_lines"]
    mon_ptdf_units_t: Float[Array, "n_units n_mon"]
    mon_ptdf_t: Float[Array, "n_nodes n_mon"]
    mon_idx: Int[Array, " n_mon"]
    nodes_units_map: Float[Array, "n_nodes n_units"]
    line_cap: Float[Array, " n_lines"]
    line_floor: Float[Array, " n_lines"]
    p_min: Float[Array, " n_units"]
    p_max: Float[Array, " n_units"]
    cost_a: Float[Array, " n_units"]
    cost_b: Float[Array, " n_units"]
    cost_c: Float[Array, " n_units"]
    # The solver, fixed here so that a call's arguments never change the program.
    algorithm: str = eqx.field(static=True, default="interior_point")
    preference_term: bool = eqx.field(static=True, default=False)
    lp_tuning: DispatchLPTuning | None = eqx.field(static=True, default=None)

    def __check_init__(self) -> None:
        _check_algorithm(self.algorithm, self.preference_term, "DCOPFSetup")


class DCOPFResult(eqx.Module):
    """One DC-OPF solution.

    **Arguments:**

    - `p_mw`: `(G,)` dispatch [MW].
    - `line_flow_mw`: `(L,)` flows [MW], from → to positive, every line.
    - `node_injection_mw`: `(N,)` net injections [MW].
    - `lmp`: `(N,)` locational marginal prices [$/MWh].
    - `lambda_balance`: system price [$/MWh].
    - `mu_upper`, `mu_lower`: `(L,)` line duals [$/MWh], 0 on unmonitored lines.
    - `objective`: `TC` of `p_mw` [$/h].
    - `line_violation_mw`: Σ MW beyond the line limits, > 0 only when they cannot all be
      met.
    - `status`: a [`SolverStatus`][powerzoojax.physics.SolverStatus]: `successful`
      (optimal), `infeasible` (load outside `[Σp_min, Σp_max]` or line limits that cannot
      all be met; best-effort dispatch) or `max_steps_reached` (the iteration ended
      unconverged).
    - `converged`: the solver met `tol`.
    - `n_iter`: iterations (or pivots, or bisection steps) taken.
    - `basis`: the dual simplex's final basis, `valid` when it solved the LP (never on
      the interior-point and bisection paths); pass it as the next call's `basis`.
    """

    p_mw: Float[Array, " n_units"]
    line_flow_mw: Float[Array, " n_lines"]
    node_injection_mw: Float[Array, " n_nodes"]
    lmp: Float[Array, " n_nodes"]
    lambda_balance: Float[Array, ""]
    mu_upper: Float[Array, " n_lines"]
    mu_lower: Float[Array, " n_lines"]
    objective: Float[Array, ""]
    line_violation_mw: Float[Array, ""]
    status: SolverStatus
    converged: Bool[Array, ""]
    n_iter: Int[Array, ""]
    basis: DispatchBasis


DCOPF_OBJECTIVES = ("polynomial", "linear")
DCOPF_ALGORITHMS = ("dual_simplex", "interior_point", "by_costs")


def _check_algorithm(algorithm: str, preference_term: bool, where_: str) -> None:
    """Raise a ValueError unless `algorithm` is one of `DCOPF_ALGORITHMS` and can carry
    the preference term when the setup has one."""
    if algorithm not in DCOPF_ALGORITHMS:
        raise ValueError(f"{where_}: algorithm must be one of {DCOPF_ALGORITHMS}, got {algorithm!r}")
    if preference_term and algorithm == "dual_simplex":
        raise ValueError(
            f"{where_}: the preference term is quadratic, which algorithm 'dual_simplex' cannot solve; "
            "use 'by_costs' or 'interior_point'"
        )


def make_dc_opf_setup(
    case,
    line_cap: Float[np.ndarray, " n_lines"] | None = None,
    line_floor: Float[np.ndarray, " n_lines"] | None = None,
    *,
    objective: str = "polynomial",
    algorithm: str | None = None,
    preference_term: bool = False,
    lp_tuning: DispatchLPTuning | None = None,
) -> DCOPFSetup:
    """Build the DC-OPF operators of a `CaseData` on the host.

    **Arguments:**

    - `case`: the case.
    - `line_cap`, `line_floor`: `(n_lines,)` MW overrides of the case limits; limits of
      magnitude `UNLIMITED_MW` or more, and 0 (MATPOWER's "unlimited"), are not monitored.
    - `objective`: `"polynomial"` minimises the case's cost polynomial `TC(p)`;
      `"linear"` minimises `mc_c · p` only (the quadratic and cubic marginal-cost
      coefficients are stored as zero). The benchmark tables' marginal costs have negative
      linear terms, so their `TC` is not convex and only the linear objective is a
      well-posed program on them; the transmission and unit-commitment envs use it by
      default.
    - `algorithm`: the solver `dc_opf` runs, one of `DCOPF_ALGORITHMS`
      (see [`DCOPFSetup`][powerzoojax.physics.DCOPFSetup]); `None` (default) chooses
      `"dual_simplex"` when the stored costs are linear (the linear objective, or a case
      whose `cost_a` and `cost_b` are all zero), `"by_costs"` with the preference term,
      `"interior_point"` otherwise. `"dual_simplex"` needs linear stored costs and no
      preference term. Callers that pass quadratic cost overrides to a linear case, or
      costs that may be either, build the setup with `"by_costs"`.
    - `preference_term`: `dc_opf` takes `p_ref` and `ref_weight` and adds
      `½ Σ w (p − p_ref)²` to the objective it minimises (default False: it refuses them).
    - `lp_tuning`: how the dual simplex of a linear-cost setup runs (a
      [`DispatchLPTuning`][powerzoojax.physics.DispatchLPTuning]: masked pivots unrolled
      before its loop or into each of its trips, a start optimality test, one-hot basis
      selections); `None` (default)
      picks per device when the program is lowered: the plain loop on a CPU, the unrolled
      form elsewhere. Every choice gives the same optimum.

    **Returns:**

    A [`DCOPFSetup`][powerzoojax.physics.DCOPFSetup] (float32 leaves).
    """
    lp_tuning = check_tuning(lp_tuning, "make_dc_opf_setup")
    if objective not in DCOPF_OBJECTIVES:
        raise ValueError(f"make_dc_opf_setup: objective must be one of {DCOPF_OBJECTIVES}, got {objective!r}")
    linear_costs = objective == "linear" or bool(
        np.all(np.asarray(case.unit_cost_a) == 0) and np.all(np.asarray(case.unit_cost_b) == 0)
    )
    if algorithm is None:
        algorithm = "by_costs" if preference_term else ("dual_simplex" if linear_costs else "interior_point")
    _check_algorithm(algorithm, preference_term, "make_dc_opf_setup")
    if algorithm == "dual_simplex" and not linear_costs:
        raise ValueError(
            "make_dc_opf_setup: algorithm 'dual_simplex' solves constant marginal costs only, but the case's "
            "cost_a/cost_b are not all zero; use objective='linear', or algorithm 'interior_point' or 'by_costs'"
        )
    ptdf = np.asarray(case.ptdf, np.float64)
    n_lines, n_nodes = ptdf.shape
    a_units = np.asarray(case.nodes_units_map, np.float64)
    cap = np.asarray(case.line_cap if line_cap is None else line_cap, np.float64)
    floor = np.asarray(case.line_floor if line_floor is None else line_floor, np.float64)
    for name, arr in (("line_cap", cap), ("line_floor", floor)):
        if arr.shape != (n_lines,) or not np.all(np.isfinite(arr)):
            raise ValueError(f"make_dc_opf_setup: {name} must be finite with shape ({n_lines},), got {arr.shape}")
    cap = np.where((cap == 0) | (cap >= UNLIMITED_MW), UNLIMITED_MW, cap)
    floor = np.where((floor == 0) | (floor <= -UNLIMITED_MW), -UNLIMITED_MW, floor)
    if np.any(floor > cap):
        bad = int(np.argmax(floor > cap))
        raise ValueError(f"make_dc_opf_setup: line {bad} has floor {floor[bad]} above cap {cap[bad]}")
    p_min = np.asarray(case.unit_p_min, np.float64)
    p_max = np.asarray(case.unit_p_max, np.float64)
    if np.any(p_min > p_max):
        bad = int(np.argmax(p_min > p_max))
        raise ValueError(f"make_dc_opf_setup: unit {bad} has p_min {p_min[bad]} above p_max {p_max[bad]}")
    # An out-of-service line has a zero PTDF row: its limits cannot bind, so it is not
    # monitored (a zero row would only add a dead constraint to the interior point).
    in_service = np.asarray(case.line_status) > 0
    mon = np.flatnonzero(((cap < UNLIMITED_MW) | (floor > -UNLIMITED_MW)) & in_service)
    m_u = ptdf @ a_units
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return DCOPFSetup(
        ptdf_units_t=f32(m_u.T),
        ptdf_t=f32(ptdf.T),
        mon_ptdf_units_t=f32(m_u[mon].T),
        mon_ptdf_t=f32(ptdf[mon].T),
        mon_idx=jnp.asarray(mon, jnp.int32),
        nodes_units_map=f32(a_units),
        line_cap=f32(cap),
        line_floor=f32(floor),
        p_min=f32(p_min),
        p_max=f32(p_max),
        cost_a=f32(case.unit_cost_a) if objective == "polynomial" else jnp.zeros((case.n_units,), jnp.float32),
        cost_b=f32(case.unit_cost_b) if objective == "polynomial" else jnp.zeros((case.n_units,), jnp.float32),
        cost_c=f32(case.unit_cost_c),
        algorithm=algorithm,
        preference_term=bool(preference_term),
        lp_tuning=lp_tuning,
    )


@_solver_entry(static_argnames=("max_iter", "tol", "line_penalty", "throw"))
def dc_opf(
    setup: DCOPFSetup,
    node_load_mw: Float[Array, " n_nodes"],
    p_min: Float[Array, " n_units"] | None = None,
    p_max: Float[Array, " n_units"] | None = None,
    cost_a: Float[Array, " n_units"] | None = None,
    cost_b: Float[Array, " n_units"] | None = None,
    cost_c: Float[Array, " n_units"] | None = None,
    p_ref: Float[Array, " n_units"] | None = None,
    ref_weight: Float[Array, " n_units"] | None = None,
    line_cap: Float[Array, " n_lines"] | None = None,
    line_floor: Float[Array, " n_lines"] | None = None,
    p_init: Float[Array, " n_units"] | None = None,
    load_flow_mw: Float[Array, " n_lines"] | None = None,
    basis: DispatchBasis | None = None,
    max_iter: int = 30,
    tol: float = 1e-4,
    line_penalty: float = 1e3,
    throw: bool = False,
) -> DCOPFResult:
    """Solve one DC-OPF (economic dispatch with PTDF line limits) for nodal loads.

    Minimises `Σ_g TC_g(p_g) + ½ Σ_g w_g (p_g − p_ref,g)²` subject to the power balance,
    unit bounds and the monitored lines' limits (elastic: an infeasible instance gets a
    best-effort dispatch). The setup's `algorithm` solves it: the bounded dual simplex
    (constant marginal costs, exactly), the primal–dual interior point, or either per
    instance by its costs (`"by_costs"`); a setup with no monitored line by a bisection on
    the system price. Values are always finite; `jit`/`vmap`-friendly, and the dtype
    follows `node_load_mw`.

    **Arguments:**

    - `setup`: the [`DCOPFSetup`][powerzoojax.physics.DCOPFSetup].
    - `node_load_mw`: `(N,)` nodal loads [MW].
    - `p_min`, `p_max`: `(G,)` runtime unit bounds [MW] (ramp windows, commitment;
      committed-off units take `[0, 0]`); `None` takes the setup's.
    - `cost_a`, `cost_b`, `cost_c`: `(G,)` cost overrides [$/MWh]; `None` takes the setup's.
      A `"dual_simplex"` setup takes `cost_c` only (a ValueError names the others).
    - `p_ref`, `ref_weight`: `(G,)` preference dispatch [MW] and its weight (`None`: zero),
      for a setup built with `preference_term=True` (a ValueError otherwise); not part of
      the reported `objective`.
    - `line_cap`, `line_floor`: `(L,)` runtime limits [MW] of the monitored lines.
    - `p_init`: `(G,)` warm start [MW] (interior point only).
    - `load_flow_mw`: `(L,)` `PTDF @ load` if the caller has it.
    - `basis`: the `basis` of an earlier result of the same setup and costs: the dual
      simplex starts from it (an invalid one, or `None`, from the merit order). Another
      optimal vertex may be reached when the optimum is not unique (tied costs); the
      cost is the same.
    - `max_iter`: iteration budget (static).
    - `tol`: tolerance on the scaled KKT residuals (static).
    - `line_penalty`: cost of one MW of line overload, as a multiple of the largest
      marginal cost (static).
    - `throw`: raise (at run time, also under `jit`) with the status's message unless it
      is `successful` (static); by default failure is only reported in `status`.

    **Returns:**

    A [`DCOPFResult`][powerzoojax.physics.DCOPFResult].
    """
    _check_overrides(setup, cost_a=cost_a, cost_b=cost_b, p_ref=p_ref, ref_weight=ref_weight)
    dtype = working_float_dtype(node_load_mw)
    cast = lambda v, default: jnp.asarray(default if v is None else v, dtype)  # noqa: E731
    load = jnp.asarray(node_load_mw, dtype)
    lo, hi = cast(p_min, setup.p_min), cast(p_max, setup.p_max)
    a, b, c = cast(cost_a, setup.cost_a), cast(cost_b, setup.cost_b), cast(cost_c, setup.cost_c)
    cap = cast(line_cap, setup.line_cap)
    floor = cast(line_floor, setup.line_floor)
    m_u_t = setup.ptdf_units_t.astype(dtype)
    ptdf_t = setup.ptdf_t.astype(dtype)
    mon_m_t = setup.mon_ptdf_units_t.astype(dtype)
    mon_ptdf_t = setup.mon_ptdf_t.astype(dtype)

    quad, lin = b, c
    if setup.preference_term:
        w, ref = cast(ref_weight, jnp.zeros_like(lo)), cast(p_ref, jnp.zeros_like(lo))
        quad, lin = b + w, c - w * ref

    # Fixed units (lo == hi, e.g. committed off) get a sliver of width so the interior
    # exists; the sliver is clipped off and its MW re-balanced afterwards.
    hi = jnp.maximum(hi, lo)
    span = jnp.maximum(jnp.max(hi - lo), 1.0)
    hi_w = jnp.maximum(hi, lo + _MIN_WIDTH_REL * span)
    total = jnp.sum(load)
    cap_lo, cap_hi = jnp.sum(lo), jnp.sum(hi)
    capacity_ok = (total >= cap_lo - 1e-6 * span) & (total <= cap_hi + 1e-6 * span)
    margin = 1e-3 * jnp.sum(hi_w - lo)
    total_solve = jnp.clip(total, cap_lo + margin, jnp.sum(hi_w) - margin)

    n_mon = setup.mon_idx.shape[0]
    # The solvers' loops see no tangents: derivatives come from the KKT conditions at
    # the solution (`_dispatch_grad`), for `problem` as each branch poses it.
    sg = jax.lax.stop_gradient
    final_basis = cold_dispatch_basis(lo.shape[0], n_mon)
    if n_mon == 0:
        # No monitored line: one system price clears the market; solved exactly by a
        # fixed-length price bisection (no Newton systems, no iteration-count spread
        # across a vmapped batch). `max_iter`/`tol`/`p_init` do not apply.
        no_rows = jnp.zeros((0,), dtype)
        problem = DispatchProblem(a, quad, lin, lo, hi, total, mon_m_t, no_rows, no_rows)
        p = sg(problem)
        sol = solve_separable_dispatch(p.cubic, p.quad, p.lin, p.lo, p.hi, p.total)
        farkas = jnp.asarray(False)
    else:
        load_flow_mon = (
            hp.matmul(load, mon_ptdf_t) if load_flow_mw is None else jnp.asarray(load_flow_mw, dtype)[setup.mon_idx]
        )
        row_lo, row_hi = floor[setup.mon_idx] + load_flow_mon, cap[setup.mon_idx] + load_flow_mon
        # Constant marginal costs: the optimum is a vertex, found exactly by the dual
        # simplex (an interior point's relative gap leaves MW between near-tied units).
        # `max_iter` is raised to the pivot budget; `tol`/`p_init` do not apply.
        budget = max(int(max_iter), 4 * (n_mon + 1) + lo.shape[0])
        # The interior point needs an interior: fixed units widened, the total clipped inside.
        lp_problem = DispatchProblem(a, quad, lin, lo, hi, total, mon_m_t, row_lo, row_hi)
        qp_problem = DispatchProblem(a, quad, lin, lo, hi_w, total_solve, mon_m_t, row_lo, row_hi)

        def by_lp(_: Any) -> tuple[DispatchQPSolution, DispatchBasis, Bool[Array, ""]]:
            p = sg(lp_problem)
            sol, out_basis = solve_dispatch_lp(
                p.lin, p.lo, p.hi, p.total, p.a_t, p.row_lo, p.row_hi,
                penalty=line_penalty, max_pivots=budget, start=basis, tuning=setup.lp_tuning,
            )
            return sol, out_basis, jnp.asarray(False)

        def by_ipm(_: Any) -> tuple[DispatchQPSolution, DispatchBasis, Bool[Array, ""]]:
            p = sg(qp_problem)
            sol = solve_dispatch_qp(
                p.cubic, p.quad, p.lin, p.lo, p.hi, p.total, p.a_t, p.row_lo, p.row_hi,
                penalty=line_penalty, max_iter=max_iter, tol=tol, x0=sg(p_init),
            )
            # An iteration that stops early on an infeasible instance (float32 steps turn
            # non-finite near the elastic optimum) still carries row duals near the penalty
            # on the violated lines: a Farkas certificate from them classifies it.
            farkas = rows_infeasible(mon_m_t, row_lo, row_hi, lo, hi, total, sol.mu_upper, sol.mu_lower)
            return sol, final_basis, farkas

        # The setup fixed the algorithm. "by_costs" reads the costs' values in the graph
        # (under `vmap` with per-instance costs both solvers run and each instance keeps
        # its own answer); one trace either way: no recompiles.
        if setup.algorithm == "by_costs":
            is_linear = jnp.all(a == 0) & jnp.all(quad == 0)
            sol, final_basis, farkas = jax.lax.cond(is_linear, by_lp, by_ipm, None)
            problem = jax.tree.map(lambda x_lp, x_qp: where(is_linear, x_lp, x_qp), lp_problem, qp_problem)
        elif setup.algorithm == "dual_simplex":
            sol, final_basis, farkas = by_lp(None)
            problem = lp_problem
        else:
            sol, final_basis, farkas = by_ipm(None)
            problem = qp_problem

    # On a linear cost a relative duality gap does not pin the dispatch (near-tied units
    # can sit MW from the vertex): there only an exact KKT point counts as optimal.
    pinned = sol.certified | jnp.any(a != 0) | jnp.any(quad != 0)
    sol = dispatch_kkt_derivatives(sol, problem, ok=capacity_ok & pinned)
    p = _rebalance(jnp.clip(sol.x, lo, hi), lo, hi, jnp.clip(total, cap_lo, cap_hi))
    # Load outside [Σlo, Σhi]: the answer is every unit at the violated bound, exactly.
    p = where(total >= cap_hi, hi, where(total <= cap_lo, lo, p))
    # A caller that steps through fixed load rows can pass their flows (`PTDF @ load`).
    load_flow = hp.matmul(load, ptdf_t) if load_flow_mw is None else jnp.asarray(load_flow_mw, dtype)
    flows = hp.matmul(p, m_u_t) - load_flow
    injection = hp.matmul(setup.nodes_units_map.astype(dtype), p) - load
    lam = -sol.nu
    mu_net = sol.mu_upper - sol.mu_lower
    lmp = lam - hp.matmul(mon_ptdf_t, mu_net)
    n_lines = cap.shape[0]
    mu_upper = jnp.zeros((n_lines,), dtype).at[setup.mon_idx].set(sol.mu_upper)
    mu_lower = jnp.zeros((n_lines,), dtype).at[setup.mon_idx].set(sol.mu_lower)
    violation = jnp.sum(jnp.maximum(flows - cap, 0.0) + jnp.maximum(floor - flows, 0.0))
    lines_ok = jnp.sum(sol.row_violation) <= 1e-4 * span + 1e-3
    converged = sol.converged & pinned
    status = SolverStatus.where(
        ~capacity_ok | (converged & ~lines_ok) | (~converged & farkas),
        SolverStatus.infeasible,
        SolverStatus.where(converged, SolverStatus.successful, SolverStatus.max_steps_reached),
    )
    finite = lambda v: where(jnp.isfinite(v), v, 0.0)  # noqa: E731
    result = DCOPFResult(
        p_mw=p,
        line_flow_mw=flows,
        node_injection_mw=injection,
        lmp=finite(lmp),
        lambda_balance=finite(lam),
        mu_upper=finite(mu_upper),
        mu_lower=finite(mu_lower),
        objective=generation_cost(p, a, b, c),
        line_violation_mw=violation,
        status=status,
        # Load outside [Σlo, Σhi]: every unit sits at the violated bound whatever the solver
        # did (the rebalance puts it there), so that answer is exact.
        converged=converged | ~capacity_ok,
        n_iter=sol.n_iter,
        basis=final_basis,
    )
    return raise_if_failed(result, status, throw)


def _check_overrides(setup: DCOPFSetup, **given: Any) -> None:
    """Refuse, when the call is traced, arguments the setup's program cannot honour: a
    quadratic or cubic cost override on a dual simplex (it has no quadratic term and would
    drop it), and a preference on a setup built without the preference term."""
    for name in ("cost_a", "cost_b"):
        if given[name] is not None and setup.algorithm == "dual_simplex":
            raise ValueError(
                f"dc_opf: {name} is given, but the setup's algorithm is 'dual_simplex', which solves constant "
                f"marginal costs only and would drop it; build the setup with "
                f"make_dc_opf_setup(..., algorithm='by_costs') (each instance's costs pick its solver) or "
                f"algorithm='interior_point'"
            )
    for name in ("p_ref", "ref_weight"):
        if given[name] is not None and not setup.preference_term:
            raise ValueError(
                f"dc_opf: {name} is given, but the setup (algorithm {setup.algorithm!r}) has no preference term; "
                f"build it with make_dc_opf_setup(..., preference_term=True), whose default algorithm is then 'by_costs'"
            )


def _rebalance(
    p: Float[Array, " n_units"], lo: Float[Array, " n_units"], hi: Float[Array, " n_units"], total: Float[Array, ""]
) -> Float[Array, " n_units"]:
    """Move the (tiny) balance error left by clipping onto units with room, in proportion."""
    resid = total - jnp.sum(p)
    room = where(resid > 0, hi - p, p - lo)
    share = room / jnp.maximum(jnp.sum(room), 1e-12)
    return jnp.clip(p + resid * share, lo, hi)
