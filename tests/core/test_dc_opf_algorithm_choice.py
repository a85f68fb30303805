"""The DC-OPF's algorithm is a static choice of its setup. A `"by_costs"` setup picks the
solver per instance by the costs' values: explicit zero quadratic coefficients are linear
costs (the dual simplex), also traced under `jit`/`vmap`, and the answers agree with
HiGHS. The interior point on these linear costs reported UNCONVERGED on 19 of 20 loads
(measured 2026-12-06, case 118 at 150 MW ratings, MATPOWER costs) while its costs were
within 0.006 % of HiGHS's. Arguments a setup's algorithm cannot honour raise a ValueError
when the call is traced, and `make_dc_opf_setup` checks an explicit choice."""

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
    # Linear and quadratic costs are passed per instance: each instance's costs pick its solver.
    setup = make_dc_opf_setup(case, cap, -cap, objective="linear", algorithm="by_costs")
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

    from powerzoojax.physics._dc_opf import make_dc_opf_setup

    case, setup, loads, optima, c, p_min = _problem()
    cap = np.full(case.n_lines, RATING_MW)
    simplex = make_dc_opf_setup(case, cap, -cap, objective="linear")
    assert simplex.algorithm == "dual_simplex"
    zeros = np.zeros(case.n_units, np.float32)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    for k in range(3):
        given = dc_opf(setup, f32(loads[k]), p_min=f32(p_min), cost_a=zeros, cost_b=zeros, cost_c=f32(c))
        default = dc_opf(simplex, f32(loads[k]), p_min=f32(p_min), cost_c=f32(c))
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


def test_the_setup_chooses_the_algorithm_from_its_costs():
    from powerzoojax.case import load_case
    from powerzoojax.physics import DCOPF_ALGORITHMS, make_dc_opf_setup

    linear_case = load_case("5", source="matpower")  # cost_a = cost_b = 0
    quadratic_case = load_case("14", source="matpower")
    assert np.any(np.asarray(quadratic_case.unit_cost_b) != 0)
    assert make_dc_opf_setup(linear_case).algorithm == "dual_simplex"
    assert make_dc_opf_setup(quadratic_case).algorithm == "interior_point"
    assert make_dc_opf_setup(quadratic_case, objective="linear").algorithm == "dual_simplex"
    assert make_dc_opf_setup(linear_case, preference_term=True).algorithm == "by_costs"
    for algorithm in DCOPF_ALGORITHMS:
        assert make_dc_opf_setup(linear_case, algorithm=algorithm).algorithm == algorithm
    with pytest.raises(ValueError, match=r"algorithm must be one of .*'dual_simplex'.*'by_costs'.*got 'simplex'"):
        make_dc_opf_setup(linear_case, algorithm="simplex")
    with pytest.raises(ValueError, match=r"'dual_simplex' solves constant marginal costs only.*cost_a/cost_b"):
        make_dc_opf_setup(quadratic_case, algorithm="dual_simplex")
    with pytest.raises(ValueError, match=r"preference term is quadratic.*'dual_simplex'"):
        make_dc_opf_setup(linear_case, algorithm="dual_simplex", preference_term=True)


def test_arguments_the_setup_cannot_honour_raise_when_traced():
    """A quadratic cost on a dual simplex setup, or a preference on a setup without the
    term, is refused with the argument, the setup's algorithm and the fix named."""
    from powerzoojax.case import load_case
    from powerzoojax.physics import dc_opf, make_dc_opf_setup

    case = load_case("5", source="matpower")
    setup = make_dc_opf_setup(case)
    assert setup.algorithm == "dual_simplex"
    load = jnp.asarray(case.node_pd, jnp.float32)
    quadratic = jnp.full((case.n_units,), 0.01, jnp.float32)
    for name in ("cost_a", "cost_b"):
        with pytest.raises(ValueError, match=rf"{name} is given.*'dual_simplex'.*algorithm='by_costs'"):
            jax.jit(lambda x, q, name=name: dc_opf(setup, x, **{name: q}))(load, quadratic)
    for name in ("p_ref", "ref_weight"):
        with pytest.raises(ValueError, match=rf"{name} is given.*algorithm 'dual_simplex'.*preference_term=True"):
            dc_opf(setup, load, **{name: quadratic})
    # A linear cost override is honoured by every algorithm; the quadratic one by the others.
    # (Jitted: one compile per setup instead of one per operation.)
    linear = jax.jit(lambda x, c: dc_opf(setup, x, cost_c=c))(load, jnp.asarray(case.unit_cost_c, jnp.float32))
    assert bool(linear.status == SolverStatus.successful)
    for algorithm in ("by_costs", "interior_point"):
        other = make_dc_opf_setup(case, algorithm=algorithm)
        res = jax.jit(lambda x, q, other=other: dc_opf(other, x, cost_b=q, tol=1e-5, max_iter=60))(load, quadratic)
        assert bool(res.status == SolverStatus.successful), (algorithm, res.status)
