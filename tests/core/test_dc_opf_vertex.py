"""OPTIMAL DC-OPF dispatches sit on the unique optimum: random case-5 loads (benchmark
tables, both monitored lines) against HiGHS (linear objective; uniqueness checked by
minimising and maximising each unit's output over the optimal face) and against SLSQP
(a strictly convex quadratic cost, whose optimum is unique)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linprog, minimize

from powerzoojax.case import load_case
from powerzoojax.physics import DCOPF_OPTIMAL, dc_opf, make_dc_opf_setup

N_POINTS = 20
TOL_MW = 0.1


@functools.cache
def _problem(objective: str):
    case = load_case("5")
    setup = make_dc_opf_setup(case, objective=objective)
    rng = np.random.default_rng(3)
    lo, hi = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    level = rng.uniform(0.3 * hi.sum(), 0.9 * hi.sum(), (N_POINTS, 1)) / node_dmax.sum()
    loads = node_dmax[None] * level * rng.uniform(0.8, 1.2, (N_POINTS, case.n_nodes))
    quad = rng.uniform(0.005, 0.05, (N_POINTS, case.n_units)) if objective == "polynomial" else None
    solve = jax.jit(jax.vmap(lambda l, b: dc_opf(setup, l, cost_b=b)))
    b = np.zeros((N_POINTS, case.n_units)) if quad is None else quad
    out = solve(jnp.asarray(loads, jnp.float32), jnp.asarray(b, jnp.float32))
    return setup, lo, hi, loads, b, out


def _lp_rows(setup, load):
    mon = np.asarray(setup.mon_idx)
    m_u = np.asarray(setup.mon_ptdf_units_t, np.float64).T
    load_flow = np.asarray(setup.mon_ptdf_t, np.float64).T @ load
    cap = np.asarray(setup.line_cap, np.float64)[mon] + load_flow
    floor = np.asarray(setup.line_floor, np.float64)[mon] + load_flow
    return np.vstack([m_u, -m_u]), np.concatenate([cap, -floor])


def _highs(c, a_ub, b_ub, total, lo, hi):
    return linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, c.size)), b_eq=[total], bounds=list(zip(lo, hi)), method="highs")


def test_linear_objective_optimal_means_highs_vertex():
    setup, lo, hi, loads, _, out = _problem("linear")
    c = np.asarray(setup.cost_c, np.float64)
    checked = 0
    for k in range(N_POINTS):
        a_ub, b_ub = _lp_rows(setup, loads[k])
        total = loads[k].sum()
        ref = _highs(c, a_ub, b_ub, total, lo, hi)
        if ref.status != 0:
            continue
        # Optimal face: every unit's output range at the optimal cost.
        face_a, face_b = np.vstack([a_ub, c]), np.concatenate([b_ub, [ref.fun + 1e-7 * abs(ref.fun)]])
        spread = max(
            _highs(-e, face_a, face_b, total, lo, hi).x @ e - _highs(e, face_a, face_b, total, lo, hi).x @ e
            for e in np.eye(c.size)
        )
        if spread > 1e-3 or int(out.status[k]) != DCOPF_OPTIMAL:
            continue
        checked += 1
        np.testing.assert_allclose(np.asarray(out.p_mw[k], np.float64), ref.x, atol=TOL_MW, err_msg=f"load {k}")
    assert checked >= 5


def test_quadratic_objective_optimal_means_unique_optimum():
    setup, lo, hi, loads, quad, out = _problem("polynomial")
    c = np.asarray(setup.cost_c, np.float64)
    checked = 0
    for k in range(N_POINTS):
        a_ub, b_ub = _lp_rows(setup, loads[k])
        total, b = loads[k].sum(), quad[k]
        start = _highs(c, a_ub, b_ub, total, lo, hi)
        if start.status != 0 or int(out.status[k]) != DCOPF_OPTIMAL:
            continue
        ref = minimize(
            lambda p: np.sum(0.5 * b * p * p + c * p), start.x, jac=lambda p: b * p + c,
            bounds=list(zip(lo, hi)), method="SLSQP", options={"ftol": 1e-14, "maxiter": 500},
            constraints=[
                {"type": "eq", "fun": lambda p: np.sum(p) - total, "jac": lambda p: np.ones_like(p)},
                {"type": "ineq", "fun": lambda p: b_ub - a_ub @ p, "jac": lambda p: -a_ub},
            ],
        )
        # Status 8 (no descent direction in the line search) is SLSQP stopping at the
        # optimum to round-off; feasibility is checked either way.
        assert ref.status in (0, 8)
        assert abs(ref.x.sum() - total) < 1e-6 and np.all(a_ub @ ref.x <= b_ub + 1e-6)
        checked += 1
        np.testing.assert_allclose(np.asarray(out.p_mw[k], np.float64), ref.x, atol=TOL_MW, err_msg=f"load {k}")
    assert checked >= 15
