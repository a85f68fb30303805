"""In-graph DC-OPF against HiGHS (linear costs), PYPOWER ``rundcopf`` (quadratic costs),
the case-5 checkpoint of the reference spec (§6.1), and its structural properties."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from powerzoojax.case import load_case
from powerzoojax.physics import (
    SolverStatus,
    dc_opf,
    make_dc_opf_setup,
    marginal_cost,
    status_code,
)
from powerzoojax.utils.jax_utils import enable_x64

OPTIMAL, INFEASIBLE, UNCONVERGED = (int(status_code(s)) for s in (SolverStatus.successful, SolverStatus.infeasible, SolverStatus.max_steps_reached))
N_BATCH = 8


@functools.cache
def _case(case_id):
    # MATPOWER's tables: the random instances, regressions and PYPOWER comparisons below
    # assume its linear / quadratic costs and zero unit minimums. The checkpoint on the
    # reference tables is in test_reference_checkpoints.py.
    return load_case(case_id, source="matpower")


@functools.cache
def _batched(case_id, capped):
    """A jitted, vmapped solver per (case, line-limit variant), shared by every test."""
    case = _case(case_id)
    # Per-instance quadratic costs (all of them nonzero: zero ones go to `solve_linear`),
    # solved by the interior point. The per-instance choice of `"by_costs"` setups is
    # tested in test_dc_opf_algorithm_choice.py and test_dc_opf_vertex.py.
    setup = make_dc_opf_setup(case, *_limits(case_id) if capped else (None, None), algorithm="interior_point")

    @jax.jit
    def solve(loads, p_min, p_max, cost_b, cost_c):
        return jax.vmap(lambda l, lo, hi, b, c: dc_opf(setup, l, p_min=lo, p_max=hi, cost_b=b, cost_c=c))(
            loads, p_min, p_max, cost_b, cost_c
        )

    # Constant marginal costs: a linear setup, solved by the dual simplex.
    setup_linear = make_dc_opf_setup(case, *_limits(case_id) if capped else (None, None), objective="linear")

    @jax.jit
    def solve_linear(loads, p_min, p_max, cost_c):
        return jax.vmap(lambda l, lo, hi, c: dc_opf(setup_linear, l, p_min=lo, p_max=hi, cost_c=c))(loads, p_min, p_max, cost_c)

    return setup, solve, solve_linear


def _limits(case_id):
    case = _case(case_id)
    if case_id == "5":
        cap = np.asarray(case.line_cap, np.float64).copy()
        cap[0] = 150.0  # the congested variant of spec §6.1
        return cap, -cap
    # case 118 ships without ratings: rate every line at 150 MW so some bind.
    cap = np.full(case.n_lines, 150.0)
    return cap, -cap


def _random_instances(case_id, seed, n=N_BATCH, quadratic=False):
    case = _case(case_id)
    rng = np.random.default_rng(seed)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    level = rng.uniform(0.35, 0.6, (n, 1)) * np.asarray(case.unit_p_max).sum() / node_dmax.sum()
    loads = node_dmax[None] * level * rng.uniform(0.8, 1.2, (n, case.n_nodes))
    g = case.n_units
    c = np.asarray(case.unit_cost_c, np.float64)[None] * rng.uniform(0.8, 1.2, (n, g))
    b = rng.uniform(0.005, 0.05, (n, g)) if quadratic else np.zeros((n, g))
    p_min = np.zeros((n, g))
    p_max = np.broadcast_to(np.asarray(case.unit_p_max, np.float64), (n, g)).copy()
    return loads, p_min, p_max, b, c


def _run(case_id, capped, loads, p_min, p_max, b, c):
    """Solves the instances in batches of ``N_BATCH`` (the last one padded with copies of
    its first instance), so that every test shares one compiled program per case, limits
    and kind of cost."""
    _, solve, solve_linear = _batched(case_id, capped)
    n = loads.shape[0]
    n_pad = -n % N_BATCH
    padded = [np.concatenate([x, np.repeat(x[:1], n_pad, axis=0)]) for x in (loads, p_min, p_max, b, c)]
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    chunks = []
    for start in range(0, n + n_pad, N_BATCH):
        loads_k, p_min_k, p_max_k, b_k, c_k = (f32(x[start : start + N_BATCH]) for x in padded)
        if not np.any(b):
            chunks.append(solve_linear(loads_k, p_min_k, p_max_k, c_k))
        else:
            chunks.append(solve(loads_k, p_min_k, p_max_k, b_k, c_k))
    return jax.tree.map(lambda *parts: jnp.concatenate(parts)[:n], *chunks)


def _monitored(case_id, capped):
    case = _case(case_id)
    cap, floor = _limits(case_id) if capped else (np.asarray(case.line_cap), np.asarray(case.line_floor))
    mon = (np.abs(cap) < 1e5) | (np.abs(floor) < 1e5)
    return np.asarray(case.ptdf, np.float64), np.asarray(case.nodes_units_map, np.float64), cap, floor, mon


def _highs(case_id, capped, load, p_min, p_max, c):
    ptdf, a_u, cap, floor, mon = _monitored(case_id, capped)
    m = (ptdf @ a_u)[mon]
    f0 = (ptdf @ load)[mon]
    res = linprog(
        c,
        A_ub=np.vstack([m, -m]),
        b_ub=np.concatenate([cap[mon] + f0, -(floor[mon] + f0)]),
        A_eq=np.ones((1, len(c))),
        b_eq=[load.sum()],
        bounds=list(zip(p_min, p_max)),
        method="highs",
    )
    assert res.status == 0
    return res


@pytest.mark.parametrize("case_id", ["5", "118"])
@pytest.mark.parametrize("capped", [False, True])
def test_linear_cost_matches_highs(case_id, capped):
    loads, p_min, p_max, b, c = _random_instances(case_id, seed=1 + capped)
    out = _run(case_id, capped, loads, p_min, p_max, b, c)
    assert np.all(np.asarray(status_code(out.status)) == OPTIMAL)
    for k in range(N_BATCH):
        ref = _highs(case_id, capped, loads[k], p_min[k], p_max[k], c[k])
        assert float(out.objective[k]) == pytest.approx(ref.fun, rel=1e-3)
        # (LP duals can be degenerate, so prices are compared in the quadratic test.)


def _pypower_case(case_id, capped, load, cost_b, cost_c):
    case = _case(case_id)
    n, g, lines = case.n_nodes, case.n_units, case.n_lines
    bus = np.zeros((n, 13))
    bus[:, 0] = np.arange(1, n + 1)
    bus[:, 1] = 1
    bus[int(case.slack_bus_idx), 1] = 3
    bus[:, 2] = load
    bus[:, 7], bus[:, 9], bus[:, 11], bus[:, 12] = 1.0, 1.0, 1.1, 0.9
    gen = np.zeros((g, 21))
    gen[:, 0] = np.asarray(case.unit_node_idx) + 1
    gen[:, 3], gen[:, 4], gen[:, 5], gen[:, 6], gen[:, 7] = 9999, -9999, 1.0, 100.0, 1
    gen[:, 8] = np.asarray(case.unit_p_max)
    gen[:, 9] = np.asarray(case.unit_p_min)
    cap, floor, mon = _monitored(case_id, capped)[2:]
    assert np.allclose(cap[mon], -floor[mon])  # rundcopf only knows symmetric ratings
    branch = np.zeros((lines, 13))
    branch[:, 0] = np.asarray(case.line_from_idx) + 1
    branch[:, 1] = np.asarray(case.line_to_idx) + 1
    branch[:, 3] = np.asarray(case.line_x, np.float64)
    branch[:, 5] = np.where(mon, cap, 0.0)
    branch[:, 10] = 1
    branch[:, 11], branch[:, 12] = -360, 360
    gencost = np.zeros((g, 7))
    gencost[:, 0], gencost[:, 3] = 2, 3
    gencost[:, 4] = cost_b / 2.0  # TC = b/2 p² + c p  (house MC = b p + c)
    gencost[:, 5] = cost_c
    return {"version": "2", "baseMVA": float(case.base_mva), "bus": bus, "gen": gen, "branch": branch, "gencost": gencost}


@pytest.mark.parametrize("case_id", ["5", "118"])
def test_quadratic_cost_matches_pypower(case_id):
    from pypower.api import ppoption, rundcopf

    loads, p_min, p_max, b, c = _random_instances(case_id, seed=7, quadratic=True)
    out = _run(case_id, True, loads, p_min, p_max, b, c)
    status = np.asarray(status_code(out.status))
    assert set(status.tolist()) <= {OPTIMAL, INFEASIBLE}
    for k in np.flatnonzero(status == INFEASIBLE):
        # 150 MW on every case-118 line cannot always be met: HiGHS must agree.
        ptdf, a_u, cap, floor, mon = _monitored(case_id, True)
        m = (ptdf @ a_u)[mon]
        f0 = (ptdf @ loads[k])[mon]
        feas = linprog(np.zeros(len(c[k])), A_ub=np.vstack([m, -m]), b_ub=np.concatenate([cap[mon] + f0, -(floor[mon] + f0)]),
                       A_eq=np.ones((1, len(c[k]))), b_eq=[loads[k].sum()], bounds=list(zip(p_min[k], p_max[k])), method="highs")
        assert feas.status == 2
        assert float(out.line_violation_mw[k]) > 0.0
    optimal = np.flatnonzero(status == OPTIMAL)
    assert len(optimal) >= 3
    for k in optimal[:3]:
        ref = rundcopf(_pypower_case(case_id, True, loads[k], b[k], c[k]), ppoption(VERBOSE=0, OUT_ALL=0))
        assert ref is not None
        assert ref["success"]
        assert float(out.objective[k]) == pytest.approx(ref["f"], rel=1e-3)
        # Quadratic costs make the LMPs unique: compare them bus by bus.
        np.testing.assert_allclose(np.asarray(out.lmp[k]), ref["bus"][:, 13], rtol=5e-3, atol=0.05)
        # Small quadratic terms (b ≥ 0.005) leave the dispatch flat in cost: 1% of the
        # largest unit is a few cents per MWh of marginal cost.
        np.testing.assert_allclose(np.asarray(out.p_mw[k]), ref["gen"][:, 1], atol=0.01 * p_max.max())


def test_case5_reference_checkpoint():
    """Spec §6.1 on MATPOWER's case-5 table given the reference's unit minimums [5, 10, 20,
    10, 0] MW (the reference table itself: test_reference_checkpoints.py)."""
    case = _case("5")
    load = jnp.asarray([100.0, 150.0, 200.0, 180.0, 120.0])
    p_min = jnp.asarray([5.0, 10.0, 20.0, 10.0, 0.0])
    res = dc_opf(make_dc_opf_setup(case), load, p_min=p_min)
    assert int(status_code(res.status)) == OPTIMAL and bool(res.converged)
    np.testing.assert_allclose(res.p_mw, [40, 80, 20, 10, 600], atol=0.05)
    np.testing.assert_allclose(res.lmp, 15.0, atol=0.01)
    assert float(res.line_flow_mw[0]) == pytest.approx(214.6589, abs=0.05)
    assert float(res.objective) == pytest.approx(8760.0, rel=1e-4)

    cap, floor = _limits("5")
    res = dc_opf(make_dc_opf_setup(case, cap, floor), load, p_min=p_min)
    assert int(status_code(res.status)) == OPTIMAL
    np.testing.assert_allclose(res.p_mw, [5, 10, 140.0508, 10, 584.9492], atol=0.05)
    np.testing.assert_allclose(res.lmp, [8.6479, 34.9911, 30, 16.2745, 10], atol=0.02)
    assert float(res.line_flow_mw[0]) == pytest.approx(150.0, abs=0.01)
    assert float(res.objective) == pytest.approx(10671.0167, rel=1e-4)


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    level=st.floats(0.2, 0.8),
    n_off=st.integers(0, 2),
    capped=st.booleans(),
)
def test_properties_case5(seed, level, n_off, capped):
    """Bounds, balance and (when optimal) line limits hold; a runtime commitment mask
    forces units to zero; uncongested LMPs are flat and equal the marginal unit's cost."""
    case = _case("5")
    rng = np.random.default_rng(seed)
    p_max_case = np.asarray(case.unit_p_max, np.float64)
    off = rng.permutation(case.n_units)[:n_off]
    p_max = p_max_case * rng.uniform(0.5, 1.0, case.n_units)
    p_min = p_max * rng.uniform(0.0, 0.3, case.n_units)
    p_max[off] = p_min[off] = 0.0
    total = level * p_max.sum() + (1 - level) * p_min.sum()
    share = rng.dirichlet(np.ones(case.n_nodes))
    loads = total * share
    c = np.asarray(case.unit_cost_c, np.float64) + rng.uniform(-1, 1, case.n_units)  # distinct prices
    out = _run("5", capped, loads[None], p_min[None], p_max[None], np.zeros((1, case.n_units)), c[None])
    p = np.asarray(out.p_mw[0], np.float64)
    assert int(status_code(out.status)[0]) == OPTIMAL or capped
    assert np.all(np.isfinite(p))
    assert np.all(p >= p_min - 1e-3) and np.all(p <= p_max + 1e-3)
    assert np.all(p[off] == 0.0)
    assert p.sum() == pytest.approx(loads.sum(), abs=1e-3 * loads.sum() + 0.01)
    if int(status_code(out.status)[0]) != OPTIMAL:
        return
    ptdf, _, cap, floor, mon = _monitored("5", capped)
    flows = np.asarray(out.line_flow_mw[0])
    assert np.all(flows[mon] <= cap[mon] + 0.05) and np.all(flows[mon] >= floor[mon] - 0.05)
    mu = np.asarray(out.mu_upper[0]) + np.asarray(out.mu_lower[0])
    if np.all(mu < 1e-3):
        lmp = np.asarray(out.lmp[0])
        np.testing.assert_allclose(lmp, lmp[0], atol=1e-2)
        # An interior-point answer keeps a unit at distance d from a bound with a bound dual
        # of about gap / d, which moves the LMP off that unit's cost by the same amount
        # (seed 876: d = 0.92 MW, 0.029 $/MWh at a converged gap). Units within 5 MW of a
        # bound are therefore not treated as price-setting.
        marginal = (p > p_min + 5.0) & (p < p_max - 5.0)
        mc = np.asarray(marginal_cost(jnp.asarray(p), jnp.zeros(5), jnp.zeros(5), jnp.asarray(c)))
        np.testing.assert_allclose(mc[marginal], lmp[0], atol=2e-2)


def test_infeasible_instances_are_finite_values():
    case = _case("5")
    setup = make_dc_opf_setup(case)
    # Jitted: one compile per setup instead of one per operation.
    solve = jax.jit(lambda load, p_min: dc_opf(setup, load, p_min=p_min))
    over = solve(jnp.full((5,), 400.0), jnp.asarray(setup.p_min))  # 2000 MW > 1530 MW of capacity
    assert int(status_code(over.status)) == INFEASIBLE
    np.testing.assert_allclose(over.p_mw, case.unit_p_max)
    # Every unit at its bound is the exact answer, so it is reported converged (before,
    # the IPM on the clipped total often stopped short and said otherwise).
    assert bool(over.converged)
    under = solve(jnp.full((5,), 1.0), jnp.asarray(case.unit_p_max) * 0.2)
    assert int(status_code(under.status)) == INFEASIBLE and bool(under.converged)
    np.testing.assert_allclose(under.p_mw, np.asarray(case.unit_p_max) * 0.2, rtol=1e-6)
    # A 1 MW rating on every line with all the load at bus 4: no dispatch can meet it.
    tight = make_dc_opf_setup(case, np.full(case.n_lines, 1.0), np.full(case.n_lines, -1.0))
    res = jax.jit(lambda load: dc_opf(tight, load))(jnp.asarray([0.0, 0.0, 0.0, 700.0, 0.0]))
    assert int(status_code(res.status)) == INFEASIBLE
    assert float(res.line_violation_mw) > 1.0
    for leaf in jax.tree.leaves(res):
        assert np.all(np.isfinite(np.asarray(leaf)))
    assert float(np.sum(res.p_mw)) == pytest.approx(700.0, abs=0.01)


def test_float64_inputs_give_float64_results():
    case = _case("5")
    with enable_x64():
        setup = make_dc_opf_setup(case)
        res = jax.jit(lambda load: dc_opf(setup, load, tol=1e-8, max_iter=60))(jnp.asarray([100.0, 150.0, 200.0, 180.0, 120.0], jnp.float64))
        assert res.p_mw.dtype == jnp.float64 and res.lmp.dtype == jnp.float64
        ref = _highs("5", False, np.asarray([100.0, 150.0, 200.0, 180.0, 120.0]), np.zeros(5), np.asarray(case.unit_p_max), np.asarray(case.unit_cost_c))
        assert float(res.objective) == pytest.approx(ref.fun, rel=1e-6)


# A UC step's LP on case 5 (node loads, p_min, p_max, linear costs): units 0 and 2 are
# committed off, and moving MW from unit 1 to units 3-4 costs only 0.15 $/h per MW.
_NEAR_FLAT_LP = (
    np.asarray([0.0, 225.0, 225.0, 300.0, 0.0]),
    np.asarray([0.0, 127.48656, 0.0, 0.0, 358.92715]),
    np.asarray([0.0, 170.0, 0.0, 62.582928, 600.0]),
    np.asarray([14.0, 13.640439, 30.0, 39.666077, 5.979694]),
)


def test_float64_reaches_the_vertex_of_a_near_flat_lp():
    """Known bug (fixed): on ``_NEAR_FLAT_LP``, float64 at tol 1e-8
    never converged (the dual residual stalled at 1e-2 for 90 iterations: the float32
    ridge, 1e-5 of the equilibrated diagonal, hid a low-curvature direction from the
    Newton solve). Float64 now uses a 1e-10 ridge and lands on HiGHS's vertex."""
    case = _case("5")
    load, p_min, p_max, c = _NEAR_FLAT_LP
    ref = _highs("5", False, load, p_min, p_max, c)
    with enable_x64():
        setup = make_dc_opf_setup(case)
        f64 = lambda x: jnp.asarray(x, jnp.float64)  # noqa: E731
        res = jax.jit(lambda *a: dc_opf(setup, a[0], p_min=a[1], p_max=a[2], cost_c=a[3], tol=1e-8, max_iter=40))(
            f64(load), f64(p_min), f64(p_max), f64(c)
        )
        assert int(status_code(res.status)) == OPTIMAL and bool(res.converged)
        np.testing.assert_allclose(np.asarray(res.p_mw), ref.x, atol=1e-3)
        assert float(res.objective) == pytest.approx(ref.fun, rel=1e-8)


def test_preference_term_and_no_retrace():
    case = _case("5")
    setup = make_dc_opf_setup(case, preference_term=True)
    traces = []

    @jax.jit
    def solve(load, ref, w):
        traces.append(1)
        return dc_opf(setup, load, p_ref=ref, ref_weight=w)

    load = jnp.asarray([0.0, 250.0, 300.0, 200.0, 0.0])
    free = solve(load, jnp.zeros(5, jnp.float32), jnp.zeros(5, jnp.float32))
    pref = jnp.asarray([0.0, 0.0, 300.0, 150.0, 300.0], jnp.float32)
    biased = solve(load, pref, jnp.full((5,), 10.0, jnp.float32))
    assert len(traces) == 1
    # A strong pull toward a (balanced) preferred dispatch moves the solution onto it.
    assert float(jnp.max(jnp.abs(biased.p_mw - pref))) < 10.0 < float(jnp.max(jnp.abs(free.p_mw - pref)))
    assert int(status_code(biased.status)) == OPTIMAL


def test_fixed_units_leave_no_overload_on_an_optimal_answer():
    """Known bug (fixed): on this UC step's LP the two units committed off (bounds
    [0, 0]) were widened to 0.06 MW slivers inside the solve and clipped back
    afterwards, which moved line flows: a 0.0014 MW overload on an OPTIMAL answer. The
    slivers are now 1e-6 of the widest box, solved in offsets from the lower bounds so
    that float32 resolves them. (The LP is near-flat: moving MW from unit 1 to units 3-4
    costs 0.15 $/h per MW, so a float32 answer within ``tol`` may stop MW short of the
    vertex; see ``benchmarks/results/opf.md``, 2026-12-01 ~11:30 UTC.)"""
    case = _case("5")
    load, p_min, p_max, c = _NEAR_FLAT_LP
    ref = _highs("5", False, load, p_min, p_max, c)
    setup = make_dc_opf_setup(case)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    single = dc_opf(setup, f32(load), p_min=f32(p_min), p_max=f32(p_max), cost_c=f32(c))
    batched = _run("5", False, load[None], p_min[None], p_max[None], np.zeros((1, 5)), c[None])
    for res in (single, jax.tree.map(lambda v: v[0], batched)):
        assert int(status_code(res.status)) == OPTIMAL and bool(res.converged)
        assert float(res.objective) == pytest.approx(ref.fun, rel=1e-4)
        # Flows of ~400 MW carry float32 rounding of ~3e-5 MW; the slivers left 1.4e-3.
        assert float(res.line_violation_mw) <= 1e-4
        assert np.all(np.asarray(res.p_mw)[[0, 2]] == 0.0)


def test_case118_rated_150mw_regression_matches_highs():
    """Known bugs (fixed): with every case-118 line at 150 MW some feasible loads ended
    UNCONVERGED — the float32 dual residual stalls near 1e-3 of the largest marginal cost
    and the next Newton step is non-finite, while the objective was already right — and
    some HiGHS-infeasible ones (27, 187, 194, 233) ended UNCONVERGED instead of INFEASIBLE
    (the iteration stops early; the line-dual Farkas certificate now classifies them).
    These are such draws (0.35-0.6 of capacity, ±20 % per bus, linear case costs; indices
    of ``default_rng(0)`` with 256 draws, where we now agree with HiGHS on all 256:
    213 optimal, 43 infeasible), plus ordinary ones."""
    case = _case("118")
    rng = np.random.default_rng(0)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    level = rng.uniform(0.35, 0.6, (256, 1)) * np.asarray(case.unit_p_max).sum() / node_dmax.sum()
    loads = (node_dmax[None] * level * rng.uniform(0.8, 1.2, (256, case.n_nodes)))[
        [0, 1, 131, 135, 167, 186, 205, 215, 232, 27, 187, 194, 233]
    ]
    n, g = loads.shape[0], case.n_units
    c = np.broadcast_to(np.asarray(case.unit_cost_c, np.float64), (n, g))
    p_max = np.broadcast_to(np.asarray(case.unit_p_max, np.float64), (n, g))
    out = _run("118", True, loads, np.zeros((n, g)), p_max, np.zeros((n, g)), c)
    for k in range(n):
        ref = _highs_any("118", True, loads[k], np.zeros(g), p_max[k], c[k])
        if ref.status == 0:
            assert int(status_code(out.status)[k]) == OPTIMAL, k
            assert float(out.objective[k]) == pytest.approx(ref.fun, rel=1e-3)
        else:
            assert ref.status == 2 and int(status_code(out.status)[k]) == INFEASIBLE, k
            assert float(out.line_violation_mw[k]) > 1.0, k
    assert sum(int(s) == INFEASIBLE for s in np.asarray(status_code(out.status))) >= 4


def test_row_infeasibility_certificate_is_sound():
    """``rows_infeasible`` (the Farkas test behind INFEASIBLE for stopped iterations):
    never fires on a feasible instance whatever the duals (weak duality), and fires with
    the solver's duals on instances HiGHS calls infeasible (case 5, line 0 squeezed)."""
    from powerzoojax.physics._qp_ipm import rows_infeasible, solve_dispatch_qp

    case = _case("5")
    ptdf, a_u, *_ = _monitored("5", False)
    m_t = jnp.asarray((ptdf @ a_u).T, jnp.float32)
    lo = jnp.zeros(case.n_units, jnp.float32)
    hi = jnp.asarray(case.unit_p_max, jnp.float32)
    load = np.asarray(case.nodes_loads_map, np.float64) @ (0.6 * np.asarray(case.load_d_max, np.float64))
    f0 = ptdf @ load
    total = jnp.asarray(load.sum(), jnp.float32)
    c = jnp.asarray(case.unit_cost_c, jnp.float32)
    rng = np.random.default_rng(3)
    certify = jax.jit(jax.vmap(lambda rl, rh, mu, ml: rows_infeasible(m_t, rl, rh, lo, hi, total, mu, ml)))
    # Feasible limits (case ratings around the HiGHS dispatch), many random duals.
    wide = np.full(case.n_lines, 400.0)
    assert _highs_any("5", False, load, np.zeros(case.n_units), np.asarray(hi), np.asarray(c)).status == 0
    mus = rng.exponential(1e3, (2, 256, case.n_lines)) * (rng.uniform(size=(2, 256, case.n_lines)) < 0.5)
    rl = np.broadcast_to(f0 - wide, (256, case.n_lines))
    rh = np.broadcast_to(f0 + wide, (256, case.n_lines))
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    assert not np.any(np.asarray(certify(f32(rl), f32(rh), f32(mus[0]), f32(mus[1]))))
    # Squeezed line 0: infeasible for HiGHS; the elastic solve's duals certify it.
    z = jnp.zeros(case.n_units, jnp.float32)

    @jax.jit
    def solve_and_certify(row_lo, row_hi):
        sol = solve_dispatch_qp(z, z, c, lo, hi, total, m_t, row_lo, row_hi)
        return rows_infeasible(m_t, row_lo, row_hi, lo, hi, total, sol.mu_upper, sol.mu_lower)

    for cap0 in (5.0, 20.0):
        cap = np.full(case.n_lines, 1e4)
        cap[0] = cap0
        row_lo, row_hi = f32(f0 - cap), f32(f0 + cap)
        ref = linprog(np.asarray(c), A_ub=np.vstack([(ptdf @ a_u), -(ptdf @ a_u)]), b_ub=np.concatenate([cap + f0, cap - f0]),
                      A_eq=np.ones((1, case.n_units)), b_eq=[load.sum()], bounds=list(zip(np.zeros(5), np.asarray(hi))), method="highs")
        assert ref.status == 2, cap0
        assert bool(solve_and_certify(row_lo, row_hi)), cap0


def _highs_any(case_id, capped, load, p_min, p_max, c):
    ptdf, a_u, cap, floor, mon = _monitored(case_id, capped)
    m = (ptdf @ a_u)[mon]
    f0 = (ptdf @ load)[mon]
    return linprog(c, A_ub=np.vstack([m, -m]), b_ub=np.concatenate([cap[mon] + f0, -(floor[mon] + f0)]),
                   A_eq=np.ones((1, len(c))), b_eq=[load.sum()], bounds=list(zip(p_min, p_max)), method="highs")
