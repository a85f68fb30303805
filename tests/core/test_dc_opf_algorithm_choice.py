"""`dc_opf` picks its algorithm by the costs' values: explicit zero quadratic
coefficients are linear costs (the dual simplex), also traced under `jit`/`vmap`, and
the answers agree with HiGHS. Before, passing them at all chose the interior point,
which on these loads reported UNCONVERGED on 19 of 20 (measured 2026-12-06, case 118 at
150 MW ratings, MATPOWER costs) while its costs were within 0.006 % of HiGHS's."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog

from powerzoojax.physics import SolverStatus, status_code

OPTIMAL, INFEASIBLE, UNCONVERGED = (int(status_code(s)) for s in (SolverStatus.successful, SolverStatus.infeasible, SolverStatus.max_steps_reached))

N_LOADS = 20
RATING_MW = 150.0


@functools.cache
def _problem():
    """Case 118 with every line rated 150 MW, linear costs, 20 random loads (0.35-0.6 of
    capacity, ±20 % per bus) that HiGHS solves, with HiGHS's optimal costs."""
    from powerzoojax.case import load_case
    from powerzoojax.physics._dc_opf import make_dc_opf_setup

    case = load_case("118", source="matpower")
    cap = np.full(case.n_lines, RATING_MW)
    setup = make_dc_opf_setup(case, cap, -cap, objective="linear")
    rng = np.random.default_rng(0)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    ptdf = np.asarray(case.ptdf, np.float64)
    m = ptdf @ np.asarray(case.nodes_units_map, np.float64)
    c = np.asarray(case.unit_cost_c, np.float64)
    bounds = list(zip(np.zeros(case.n_units), np.asarray(case.unit_p_max, np.float64)))
    loads, optima = [], []
    while len(loads) < N_LOADS:
        level = rng.uniform(0.35, 0.6) * np.asarray(case.unit_p_max).sum() / node_dmax.sum()
        load = node_dmax * level * rng.uniform(0.8, 1.2, case.n_nodes)
        f0 = ptdf @ load
        lp = linprog(c, A_ub=np.vstack([m, -m]), b_ub=np.concatenate([cap + f0, cap - f0]), A_eq=np.ones((1, c.size)),
                     b_eq=[load.sum()], bounds=bounds, method="highs")
        if lp.status == 0:
            loads.append(load)
            optima.append(lp.fun)
    p_min = np.zeros(case.n_units)
    return case, setup, np.asarray(loads), np.asarray(optima), c, p_min


def test_explicit_zero_arrays_give_the_answer_of_the_setups_linear_costs():
    from powerzoojax.physics._dc_opf import dc_opf

    case, setup, loads, optima, c, p_min = _problem()
    zeros = np.zeros(case.n_units, np.float32)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    for k in range(3):
        given = dc_opf(setup, f32(loads[k]), p_min=f32(p_min), cost_a=zeros, cost_b=zeros, cost_c=f32(c))
        default = dc_opf(setup, f32(loads[k]), p_min=f32(p_min), cost_c=f32(c))
        assert int(status_code(given.status)) == OPTIMAL and bool(given.converged)
        np.testing.assert_array_equal(np.asarray(given.p_mw), np.asarray(default.p_mw))
        assert float(given.objective) == pytest.approx(optima[k], rel=1e-5)


def test_traced_zero_arrays_under_vmap_are_optimal_and_match_highs():
    """Every load OPTIMAL and within 1e-5 of HiGHS's cost, from one trace."""
    from powerzoojax.physics._dc_opf import dc_opf

    case, setup, loads, optima, c, p_min = _problem()
    traces = []

    @jax.jit
    def solve(load, a, b):
        traces.append(1)
        return jax.vmap(lambda l, a, b: dc_opf(setup, l, p_min=jnp.zeros_like(a), cost_a=a, cost_b=b,
                                               cost_c=jnp.asarray(c, jnp.float32)))(load, a, b)

    zeros = jnp.zeros((N_LOADS, case.n_units), jnp.float32)
    out = solve(jnp.asarray(loads, jnp.float32), zeros, zeros)
    assert np.all(np.asarray(status_code(out.status)) == OPTIMAL), np.asarray(status_code(out.status))
    assert np.all(np.asarray(out.converged))
    np.testing.assert_allclose(np.asarray(out.objective, np.float64), optima, rtol=1e-5)
    # A batch mixing quadratic and linear costs: same program, each instance its own solver.
    b = np.zeros((N_LOADS, case.n_units), np.float32)
    b[::2] = 0.01
    mixed = solve(jnp.asarray(loads, jnp.float32), zeros, jnp.asarray(b))
    assert len(traces) == 1
    np.testing.assert_array_equal(np.asarray(mixed.p_mw)[1::2], np.asarray(out.p_mw)[1::2])
    quadratic = dc_opf(setup, jnp.asarray(loads[0], jnp.float32), p_min=jnp.zeros(case.n_units), cost_a=np.zeros(case.n_units, np.float32),
                       cost_b=jnp.asarray(b[0]), cost_c=jnp.asarray(c, jnp.float32))
    np.testing.assert_allclose(np.asarray(mixed.p_mw)[0], np.asarray(quadratic.p_mw), atol=1e-2)
    assert int(status_code(quadratic.status)) == OPTIMAL
