"""Offer-based SCED against HiGHS, and market invariants as property tests.

HiGHS (scipy ``linprog(method="highs")``) solves the same LP in float64; its duals give
the reference LMPs ``∂cost/∂load_n = eqlin + PTDFᵀ(ineq_up − ineq_lo)``.
"""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from powerzoojax.physics import SolverStatus, status_code

OPTIMAL, INFEASIBLE, UNCONVERGED = (int(status_code(s)) for s in (SolverStatus.successful, SolverStatus.infeasible, SolverStatus.max_steps_reached))

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@functools.lru_cache(maxsize=None)
def _setup(case_name: str, congest: bool):
    """SCED setup; case 118 has no line limits, so tighten its most loaded lines."""
    import jax.numpy as jnp

    from powerzoojax.case import load_case
    from powerzoojax.market import offer_sced, prepare_offer_sced

    case = load_case(case_name)
    setup = prepare_offer_sced(case, 3)
    if congest:
        flow = np.abs(np.asarray(offer_sced(setup, jnp.asarray(_nominal_node_load(case), jnp.float32)).line_flow))
        cap = np.where(flow > np.quantile(flow, 0.9), 0.9 * flow, 1e6)
        setup = prepare_offer_sced(case, 3, line_cap=cap, line_floor=-cap)
    return case, setup


def _nominal_node_load(case) -> np.ndarray:
    nominal = 0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
    return np.asarray(case.nodes_loads_map, np.float64) @ nominal


@functools.lru_cache(maxsize=None)
def _solver(ramped: bool, method: str = "simplex"):
    import jax

    from powerzoojax.market import offer_sced

    if ramped:
        return jax.jit(lambda s, load, prices, lo, hi: offer_sced(s, load, prices, lo, hi, method=method))
    return jax.jit(lambda s, load, prices: offer_sced(s, load, prices, method=method))


def _effective_bounds(setup, p_min_rt, p_max_rt):
    """The LP's runtime bounds exactly as the kernel builds them (float64)."""
    p_min = np.asarray(setup.p_min, np.float64)
    p_max = np.asarray(setup.p_max, np.float64)
    widths = np.asarray(setup.base_seg_widths, np.float64)
    if p_min_rt is None:
        return p_min, widths.ravel()
    p_lo = np.minimum(p_min_rt, p_max_rt - 1e-3)
    frac = np.clip((p_max_rt - p_lo) / np.maximum(p_max - p_min, 1e-6), 0.0, 1.0)
    return p_lo, np.maximum((widths * frac[:, None]).ravel(), 1e-4)


def highs_sced(setup, node_load, prices, p_min_rt=None, p_max_rt=None):
    """(result, lmp, n_marginal, n_binding) of the SCED LP solved by HiGHS."""
    p_lo, widths = _effective_bounds(setup, p_min_rt, p_max_rt)
    m_s = np.asarray(setup.ptdf_segments, np.float64)
    ptdf = np.asarray(setup.ptdf, np.float64)
    f0 = np.asarray(setup.ptdf_units, np.float64) @ p_lo - ptdf @ node_load
    n, n_lines = m_s.shape[1], m_s.shape[0]
    res = linprog(
        np.asarray(prices, np.float64).ravel(),
        A_ub=np.vstack([m_s, -m_s]),
        b_ub=np.concatenate([np.asarray(setup.line_cap, np.float64) - f0, f0 - np.asarray(setup.line_floor, np.float64)]),
        A_eq=np.ones((1, n)),
        b_eq=[node_load.sum() - p_lo.sum()],
        bounds=list(zip(np.zeros(n), widths)),
        method="highs",
    )
    if res.status != 0:
        return res, None, 0, 0
    marg = res.ineqlin.marginals
    lmp = res.eqlin.marginals[0] + ptdf.T @ (marg[:n_lines] - marg[n_lines:])
    n_marginal = int(np.sum((res.x > 1e-3) & (res.x < widths - 1e-3)))
    n_binding = int(np.sum(np.abs(res.slack) < 1e-4))
    # A line or segment within half a MW of its bound without being on it is binding
    # within float32 noise of the kernel: the basis, and so the dual, is ambiguous there.
    gray = lambda gap: np.any((gap > 1e-4) & (gap < 0.5))  # noqa: E731
    if gray(np.abs(res.slack)) or gray(res.x) or gray(widths - res.x):
        n_marginal = -1
    return res, lmp, n_marginal, n_binding


@st.composite
def instances(draw, case_name: str, ramped: bool):
    case, setup = _setup(case_name, case_name == "118")
    n_nodes, n_units = case.n_nodes, case.n_units
    load_scale = draw(st.lists(st.floats(0.6, 1.4), min_size=n_nodes, max_size=n_nodes))
    node_load = _nominal_node_load(case) * np.asarray(load_scale)
    markup = draw(st.lists(st.floats(0.0, 2.0), min_size=3 * n_units, max_size=3 * n_units))
    jitter = np.arange(3 * n_units).reshape(n_units, 3) * 0.07
    prices = np.sort(np.asarray(setup.base_seg_prices, np.float64) * (1.0 + np.asarray(markup).reshape(n_units, 3)), axis=1) + jitter
    if not ramped:
        return setup, node_load, prices, None, None
    p_min, p_max = np.asarray(setup.p_min, np.float64), np.asarray(setup.p_max, np.float64)
    prev_frac = np.asarray(draw(st.lists(st.floats(0.0, 1.0), min_size=n_units, max_size=n_units)))
    ramp_frac = draw(st.floats(0.1, 1.0))
    prev = p_min + prev_frac * (p_max - p_min)
    p_min_rt = np.maximum(p_min, prev - ramp_frac * p_max)
    p_max_rt = np.minimum(p_max, prev + ramp_frac * p_max)
    return setup, node_load, prices, p_min_rt, p_max_rt


def _solve(setup, node_load, prices, p_min_rt, p_max_rt, method="simplex"):
    import jax.numpy as jnp

    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    if p_min_rt is None:
        return _solver(False, method)(setup, f32(node_load), f32(prices))
    return _solver(True, method)(setup, f32(node_load), f32(prices), f32(p_min_rt), f32(p_max_rt))


def _check_against_highs(instance, method="simplex"):

    setup, node_load, prices, p_min_rt, p_max_rt = instance
    ours = _solve(*instance, method=method)
    res, lmp, n_marginal, n_binding = highs_sced(setup, node_load, prices, p_min_rt, p_max_rt)
    for leaf in (ours.unit_power, ours.lmp, ours.line_flow, ours.offer_cost):
        assert np.all(np.isfinite(np.asarray(leaf)))
    if res.status != 0:
        assert int(status_code(ours.status)) != OPTIMAL
        assert not bool(ours.converged)
        return
    assert int(status_code(ours.status)) == OPTIMAL, f"HiGHS solved it (cost {res.fun}) but SCED status is {int(status_code(ours.status))}"
    np.testing.assert_allclose(float(ours.offer_cost), res.fun, rtol=1e-3)
    # The dispatch is only unique when every segment HiGHS leaves at a bound has a
    # reduced cost clearly away from zero (dual non-degeneracy). A reduced cost near
    # zero means a nearly flat face of optima: any point on it is a correct answer,
    # and distinct offer prices alone do not rule that out once lines bind.
    p_lo, widths = _effective_bounds(setup, p_min_rt, p_max_rt)
    reduced = np.abs(res.lower.marginals + res.upper.marginals)
    at_bound = (res.x < 1e-6) | (res.x > widths - 1e-6)
    if not np.any(at_bound) or np.min(reduced[at_bound]) > 0.05:
        scale = float(np.max(np.asarray(setup.p_max)))
        np.testing.assert_allclose(np.asarray(ours.segment_delta).ravel(), res.x, atol=1e-3 * scale)
    if n_marginal == n_binding + 1:  # non-degenerate primal: the dual (LMP) is unique
        tol = 1e-3 * float(np.max(np.abs(lmp))) + 1e-2
        np.testing.assert_allclose(np.asarray(ours.lmp), lmp, atol=tol)


@SETTINGS
@given(instances("5", ramped=False))
def test_sced_matches_highs_case5(instance):
    _check_against_highs(instance)


@SETTINGS
@given(instances("5", ramped=True))
def test_sced_matches_highs_case5_with_ramp_windows(instance):
    _check_against_highs(instance)


@pytest.mark.slow
@settings(max_examples=4, deadline=None)
@given(instances("118", ramped=True))
def test_sced_matches_highs_case118_congested(instance):
    _check_against_highs(instance)


@SETTINGS
@given(instances("5", ramped=True))
def test_market_invariants(instance):
    """Supply = demand, units inside limits and ramp window, lines inside limits."""

    setup, node_load, prices, p_min_rt, p_max_rt = instance
    r = _solve(*instance)
    if int(status_code(r.status)) != OPTIMAL:
        return
    p = np.asarray(r.unit_power, np.float64)
    assert abs(p.sum() - node_load.sum()) < 1e-3 * node_load.sum()
    assert np.all(p >= np.asarray(setup.p_min) - 1e-2) and np.all(p <= np.asarray(setup.p_max) + 1e-2)
    assert np.all(p >= np.minimum(p_min_rt, p_max_rt - 1e-3) - 1e-2) and np.all(p <= p_max_rt + 1e-2)
    flow = np.asarray(r.line_flow)
    assert np.all(flow <= np.asarray(setup.line_cap) + 1e-2) and np.all(flow >= np.asarray(setup.line_floor) - 1e-2)
    np.testing.assert_allclose(np.asarray(r.node_injection).sum(), 0.0, atol=1e-2)
    np.testing.assert_allclose(flow, np.asarray(setup.ptdf) @ np.asarray(r.node_injection), atol=0.05)


@SETTINGS
@given(st.floats(0.2, 0.9), st.lists(st.floats(0.0, 2.0), min_size=15, max_size=15))
def test_uncongested_lmp_equals_marginal_offer(load_frac, markup):
    """Without line limits every node's LMP is the price of the (single) marginal segment."""
    import jax.numpy as jnp

    from powerzoojax.market import prepare_offer_sced

    case, _ = _setup("5", False)
    setup = prepare_offer_sced(case, 3, line_cap=np.full(case.n_lines, 1e6), line_floor=np.full(case.n_lines, -1e6))
    prices = np.sort(np.asarray(setup.base_seg_prices) * (1 + np.asarray(markup).reshape(5, 3)), axis=1) + np.arange(15).reshape(5, 3) * 1e-3
    node_load = _nominal_node_load(case)
    node_load = node_load * load_frac * float(np.asarray(setup.p_max).sum()) / node_load.sum()
    r = _solver(False)(setup, jnp.asarray(node_load, jnp.float32), jnp.asarray(prices, jnp.float32))
    assert int(status_code(r.status)) == OPTIMAL
    delta = np.asarray(r.segment_delta).ravel()
    widths = np.asarray(setup.base_seg_widths).ravel()
    marginal = (delta > 1e-2) & (delta < widths - 1e-2)
    clearly_inside = (delta > 0.5) & (delta < widths - 0.5)
    if marginal.sum() != 1 or not np.any(clearly_inside & marginal):
        # Demand on (or within float32 noise of) a segment boundary: the LMP is a range.
        return
    np.testing.assert_allclose(np.asarray(r.lmp), prices.ravel()[marginal][0], atol=1e-2)


def test_truthful_clearing_of_case5_is_merit_order(case5):
    """Uncongested at low load: every unit at its minimum, the rest in merit order, LMP =
    the truthful marginal price."""
    import jax.numpy as jnp

    from powerzoojax.market import prepare_offer_sced

    setup = prepare_offer_sced(case5, 3)
    node_load = jnp.asarray([0.0, 100.0, 100.0, 100.0, 0.0])
    r = _solver(False)(setup, node_load, setup.base_seg_prices)
    assert int(status_code(r.status)) == OPTIMAL
    # c = 14, 15, 30, 40, 10 and p_min = 5, 10, 20, 10, 20 (the benchmark table): units 0-3
    # sit at their minimums (45 MW) and unit 4 (600 MW at $10) serves the other 255 MW.
    p_min = np.asarray(case5.unit_p_min)
    np.testing.assert_allclose(p_min, [5, 10, 20, 10, 20])
    np.testing.assert_allclose(np.asarray(r.unit_power), [5, 10, 20, 10, 255], atol=1e-2)
    np.testing.assert_allclose(np.asarray(r.lmp), 10.01, atol=1e-3)
    np.testing.assert_allclose(float(r.lambda_balance), 10.01, atol=1e-3)


def test_infeasible_demand_returns_status_not_nan(case5):
    import jax.numpy as jnp

    from powerzoojax.market import prepare_offer_sced

    setup = prepare_offer_sced(case5, 3)
    r = _solver(False)(setup, jnp.asarray([0.0, 900.0, 900.0, 900.0, 0.0]), setup.base_seg_prices)  # > 1530 MW
    assert int(status_code(r.status)) == INFEASIBLE and not bool(r.converged) and not bool(r.is_feasible)
    for leaf in (r.unit_power, r.lmp, r.line_flow, r.offer_cost, r.total_cost):
        assert np.all(np.isfinite(np.asarray(leaf)))
    np.testing.assert_allclose(np.asarray(r.unit_power), np.asarray(setup.p_max), atol=1e-2)


def test_line_infeasible_instance_is_unconverged_and_finite(case5):
    import jax.numpy as jnp

    from powerzoojax.market import prepare_offer_sced

    cap = np.full(case5.n_lines, 1.0)  # 1 MW lines cannot carry 600 MW of load
    setup = prepare_offer_sced(case5, 3, line_cap=cap, line_floor=-cap)
    r = _solver(False)(setup, jnp.asarray([0.0, 200.0, 200.0, 200.0, 0.0]), setup.base_seg_prices)
    assert int(status_code(r.status)) == UNCONVERGED and not bool(r.converged)
    for leaf in (r.unit_power, r.lmp, r.line_flow, r.offer_cost):
        assert np.all(np.isfinite(np.asarray(leaf)))


def test_vmap_matches_single_solves(case5):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.market import offer_sced, prepare_offer_sced

    setup = prepare_offer_sced(case5, 3)
    # Offers well apart: truthful case-5 segments differ by 0.01 $/MWh, which leaves a
    # near-flat optimal face on which batched and single float32 solves may land apart.
    prices = setup.base_seg_prices + 0.5 * jnp.arange(15.0).reshape(5, 3)
    loads = jnp.asarray([[0.0, 1.0, 1.0, 1.0, 0.0]]) * jr.uniform(jr.PRNGKey(0), (4, 1), minval=100, maxval=450)
    batched = jax.jit(jax.vmap(offer_sced, in_axes=(None, 0, None)))(setup, loads, prices)
    single_solve = jax.jit(offer_sced)
    for i in range(4):
        single = single_solve(setup, loads[i], prices)
        np.testing.assert_allclose(np.asarray(batched.unit_power[i]), np.asarray(single.unit_power), atol=0.05)
        np.testing.assert_allclose(np.asarray(batched.lmp[i]), np.asarray(single.lmp), atol=1e-2)
        np.testing.assert_allclose(float(batched.offer_cost[i]), float(single.offer_cost), rtol=1e-5)


def test_vmapped_sced_issues_no_lapack_call(case5):
    """jaxlib 0.10's batched LAPACK kernels can deadlock a 2-core pool (see
    ``tests/core/test_small_linalg.py``); the SCED's simplex keeps its basis inverse by
    rank-one updates and calls none."""
    import jax
    import jax.numpy as jnp

    from powerzoojax.market import offer_sced, prepare_offer_sced

    cap = np.full(case5.n_lines, 150.0)
    setup = prepare_offer_sced(case5, 3, line_cap=cap, line_floor=-cap)
    loads = jnp.full((256, case5.n_nodes), 100.0, jnp.float32)
    text = jax.jit(jax.vmap(lambda load: offer_sced(setup, load))).lower(loads).as_text()
    assert "lapack" not in text.lower()


def test_piecewise_ed_truthful_equals_cost_segments(case5):
    import jax
    import jax.numpy as jnp

    from powerzoojax.market import make_cost_segments, piecewise_ed, prepare_piecewise_ed

    seg = make_cost_segments(case5, 3)
    np.testing.assert_allclose(np.asarray(seg.seg_prices[0]), [14.0, 14.01, 14.02], atol=1e-5)
    setup = prepare_piecewise_ed(case5, 3)
    r = jax.jit(piecewise_ed)(setup, jnp.asarray([0.0, 300.0, 300.0, 300.0, 0.0]))
    assert bool(r.converged)
    np.testing.assert_allclose(float(jnp.sum(r.unit_power)), 900.0, atol=1e-2)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"n_segments": 0}, "n_segments must be a positive integer"), ({"line_cap": np.zeros(3)}, "line_cap must be finite with shape")],
)
def test_prepare_offer_sced_rejects_bad_input(case5, kwargs, message):
    from powerzoojax.market import prepare_offer_sced

    with pytest.raises(ValueError, match=message):
        prepare_offer_sced(case5, **kwargs)
