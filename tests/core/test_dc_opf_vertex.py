"""OPTIMAL DC-OPF dispatches sit on the unique optimum: random loads on case 5 (benchmark
tables, its two rated lines) and case 118 (MATPOWER's tables, every line rated 150 MW,
costs perturbed +-20 % so that units differ), against HiGHS (linear objective, the dual
simplex path; where our answer is not HiGHS's vertex, the optimum must be non-unique,
which minimising and maximising each unit's output over the optimal face decides, and
ours must then be feasible at the optimal cost) and against PYPOWER's interior point
PIPS (a strictly convex quadratic cost, whose optimum is unique)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pypower.qps_pips import qps_pips
from scipy.optimize import linprog
from scipy.sparse import csr_matrix, diags

from powerzoojax.case import load_case
from powerzoojax.physics import SolverStatus, dc_opf, make_dc_opf_setup, status_code

OPTIMAL, INFEASIBLE, UNCONVERGED = (int(status_code(s)) for s in (SolverStatus.successful, SolverStatus.infeasible, SolverStatus.max_steps_reached))

N_POINTS = 20
TOL_MW = 0.1
# Float32 resolution of a dispatch's line flows and balance, and of its cost (relative).
FEASIBLE_MW, COST_RTOL = 0.01, 1e-6


CASES = {"5": ("reference", None, 0.3, 0.9), "118": ("matpower", 150.0, 0.3, 0.55)}


@functools.cache
def _problem(case_id: str, objective: str):
    source, rating, low, high = CASES[case_id]
    case = load_case(case_id, source=source)
    cap = None if rating is None else np.full(case.n_lines, rating)
    # The polynomial variant passes quadratic costs per call on linear cases: the per-instance choice.
    algorithm = "by_costs" if objective == "polynomial" else None
    setup = make_dc_opf_setup(case, cap, None if cap is None else -cap, objective=objective, algorithm=algorithm)
    rng = np.random.default_rng(3)
    lo, hi = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    level = rng.uniform(low * hi.sum(), high * hi.sum(), (N_POINTS, 1)) / node_dmax.sum()
    loads = node_dmax[None] * level * rng.uniform(0.8, 1.2, (N_POINTS, case.n_nodes))
    quad = rng.uniform(0.005, 0.05, (N_POINTS, case.n_units)) if objective == "polynomial" else None
    lin = np.asarray(case.unit_cost_c, np.float64)[None] * rng.uniform(0.8, 1.2, (N_POINTS, case.n_units))
    b = np.zeros((N_POINTS, case.n_units)) if quad is None else quad
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    if quad is None:  # constant marginal costs: the setup's linear (dual simplex) path
        out = jax.jit(jax.vmap(lambda l, c: dc_opf(setup, l, cost_c=c)))(f32(loads), f32(lin))
    else:
        out = jax.jit(jax.vmap(lambda l, b, c: dc_opf(setup, l, cost_b=b, cost_c=c)))(f32(loads), f32(b), f32(lin))
    # The reference solves the float32-rounded problem the solver saw.
    as_f32 = lambda x: np.asarray(x, np.float32).astype(np.float64)  # noqa: E731
    return setup, lo, hi, as_f32(loads), as_f32(b), as_f32(lin), out


def _lp_rows(setup, load):
    mon = np.asarray(setup.mon_idx)
    m_u = np.asarray(setup.mon_ptdf_units_t, np.float64).T
    load_flow = np.asarray(setup.mon_ptdf_t, np.float64).T @ load
    cap = np.asarray(setup.line_cap, np.float64)[mon] + load_flow
    floor = np.asarray(setup.line_floor, np.float64)[mon] + load_flow
    return np.vstack([m_u, -m_u]), np.concatenate([cap, -floor])


def _highs(c, a_ub, b_ub, total, lo, hi):
    return linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, c.size)), b_eq=[total], bounds=list(zip(lo, hi)), method="highs")


def _face_spread(c, a_ub, b_ub, total, lo, hi, optimum):
    """The largest range of one unit's output over the optimal face: the dispatches within
    1e-7 of the optimal cost (the simplex compares reduced costs to about 1e-6 of the
    dearest unit's). At most ``TOL_MW``: the optimum is unique at float32 resolution."""
    face_a, face_b = np.vstack([a_ub, c]), np.concatenate([b_ub, [optimum + 1e-7 * max(abs(optimum), 1.0)]])
    return max(
        _highs(-e, face_a, face_b, total, lo, hi).x @ e - _highs(e, face_a, face_b, total, lo, hi).x @ e
        for e in np.eye(c.size)
    )


@pytest.mark.parametrize("case_id", ["5", "118"])
def test_linear_objective_optimal_means_highs_vertex(case_id):
    setup, lo, hi, loads, _, lin, out = _problem(case_id, "linear")
    checked = 0
    for k in range(N_POINTS):
        c = lin[k]
        a_ub, b_ub = _lp_rows(setup, loads[k])
        total = loads[k].sum()
        ref = _highs(c, a_ub, b_ub, total, lo, hi)
        if ref.status != 0 or int(status_code(out.status)[k]) != OPTIMAL:
            continue
        checked += 1
        p = np.asarray(out.p_mw[k], np.float64)
        if np.max(np.abs(p - ref.x)) <= TOL_MW:
            continue  # HiGHS's vertex
        # Another answer than HiGHS's is wrong where the optimum is unique; where the
        # optimal face is wide, both are optima: ours must be feasible at the optimal cost.
        assert _face_spread(c, a_ub, b_ub, total, lo, hi, ref.fun) > TOL_MW, f"load {k}: {p} is not the unique optimum {ref.x}"
        assert abs(p.sum() - total) <= FEASIBLE_MW and np.all(a_ub @ p <= b_ub + FEASIBLE_MW), f"load {k}"
        assert np.all(p >= lo - FEASIBLE_MW) and np.all(p <= hi + FEASIBLE_MW), f"load {k}"
        assert c @ p <= ref.fun + COST_RTOL * max(abs(ref.fun), 1.0), f"load {k}"
    assert checked >= 10


def _pips(b, c, a_ub, b_ub, total, lo, hi, start):
    """PYPOWER's interior point on min sum(b/2 p^2 + c p) over the balance, the line rows
    (the first half of ``a_ub`` are the flows' upper rows, the second their lower) and the
    unit bounds, to tolerances far below float32's."""
    n_rows = a_ub.shape[0] // 2
    rows = csr_matrix(np.vstack([np.ones((1, c.size)), a_ub[:n_rows]]))
    lower, upper = np.concatenate([[total], -b_ub[n_rows:]]), np.concatenate([[total], b_ub[:n_rows]])
    tols = {"feastol": 1e-10, "gradtol": 1e-10, "comptol": 1e-10, "costtol": 1e-12}
    solution = qps_pips(diags(b).tocsr(), c, rows, lower, upper, lo, hi, start, tols)
    assert solution is not None  # None only for a problem without costs or rows
    x, _, converged, _, _ = solution
    return np.asarray(x, np.float64), bool(converged)


@pytest.mark.parametrize("case_id", ["5", "118"])
def test_quadratic_objective_optimal_means_unique_optimum(case_id):
    setup, lo, hi, loads, quad, lin, out = _problem(case_id, "polynomial")
    checked = 0
    for k in range(N_POINTS):
        c = lin[k]
        a_ub, b_ub = _lp_rows(setup, loads[k])
        total, b = loads[k].sum(), quad[k]
        start = _highs(c, a_ub, b_ub, total, lo, hi)
        if start.status != 0 or int(status_code(out.status)[k]) != OPTIMAL:
            continue
        ref, converged = _pips(b, c, a_ub, b_ub, total, lo, hi, start.x)
        assert converged
        assert abs(ref.sum() - total) < 1e-6 and np.all(a_ub @ ref <= b_ub + 1e-6)
        assert np.all(ref >= lo - 1e-6) and np.all(ref <= hi + 1e-6)
        checked += 1
        np.testing.assert_allclose(np.asarray(out.p_mw[k], np.float64), ref, atol=TOL_MW, err_msg=f"load {k}")
    assert checked >= 15


def test_merit_order_loads_reach_the_vertex_through_the_simplex():
    """Case 5's own costs (no perturbation) on the throughput benchmark's loads. The
    interior point's relative gap left units up to 170 MW from this vertex (moving 61 MW
    along a congested direction costs 2.3 $/h of 11,556); the dual simplex lands on it."""
    case = load_case("5")
    setup = make_dc_opf_setup(case, objective="linear")
    rng = np.random.default_rng(0)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    level = rng.uniform(0.35, 0.6, (64, 1)) * np.asarray(case.unit_p_max).sum() / node_dmax.sum()
    loads = np.asarray(node_dmax[None] * level * rng.uniform(0.8, 1.2, (64, case.n_nodes)), np.float32)
    out = jax.jit(jax.vmap(lambda l: dc_opf(setup, l)))(jnp.asarray(loads))
    lo, hi = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    c = np.asarray(setup.cost_c, np.float64)
    for k in range(loads.shape[0]):
        load = loads[k].astype(np.float64)
        a_ub, b_ub = _lp_rows(setup, load)
        ref = _highs(c, a_ub, b_ub, load.sum(), lo, hi)
        assert ref.status == 0 and int(status_code(out.status)[k]) == OPTIMAL
        np.testing.assert_allclose(np.asarray(out.p_mw[k], np.float64), ref.x, atol=TOL_MW, err_msg=f"load {k}")
