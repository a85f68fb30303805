"""A dual-degenerate dispatch LP: every unit offers the same cost, so reduced costs are
float32 round-off around zero and the ratio test would order its candidates by that
noise, a different order at every pivot, and wander without finishing. Reduced costs
within the dual tolerance count as zero, and ties go by column index. A primal-feasible
basis whose reduced costs are wrong only by that round-off is optimal: chasing it by
bound flips cycles."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from powerzoojax.case import load_case
from powerzoojax.physics import make_dc_opf_setup
from powerzoojax.physics._dispatch_lp import solve_dispatch_lp
from reference_lp import highs_elastic_dispatch as _highs_violation


@functools.cache
def _tied_cost_lp(lane: int = 1, levels: int = 1):
    # Case 118, every line rated 100 MW, one cost for all units (or `levels` of them):
    # lines bind and many dispatches of the same total cost the same.
    case = load_case("118", source="matpower")
    cap = np.full(case.n_lines, 100.0)
    setup = make_dc_opf_setup(case, cap, -cap, objective="linear")
    rng = np.random.default_rng(0)
    n_units = setup.p_min.shape[0]
    cost = rng.integers(0, levels, n_units) * 10.0 + 10.0
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    hi = np.asarray(case.unit_p_max, np.float64)
    level = rng.uniform(0.3, 0.9, (64, 1)) * hi.sum() / node_dmax.sum()
    loads = node_dmax[None] * level * rng.uniform(0.5, 1.5, (64, case.n_nodes))
    load = jnp.asarray(loads[lane], jnp.float32)
    flow = load @ setup.mon_ptdf_t
    row_lo = setup.line_floor[setup.mon_idx] + flow
    row_hi = setup.line_cap[setup.mon_idx] + flow
    args = (jnp.asarray(cost, jnp.float32), setup.p_min, setup.p_max, jnp.sum(load), setup.mon_ptdf_units_t, row_lo, row_hi)
    return args, jax.jit(solve_dispatch_lp)(*args)[0]


def test_tied_costs_converge_in_few_pivots():
    args, sol = _tied_cost_lp()
    n_rows = args[4].shape[1]
    assert bool(sol.converged)
    # Before reduced costs were snapped to zero this point spent the whole budget
    # (4 (m + 1) + n = 802 pivots); now it takes about 50.
    assert int(sol.n_iter) < n_rows
    np.testing.assert_allclose(float(jnp.sum(sol.x)), float(args[3]), rtol=1e-5)
    assert float(jnp.max(jnp.maximum(sol.x - args[2], args[1] - sol.x))) <= 1e-3


def test_tied_costs_reach_the_highs_optimum():
    args, sol = _tied_cost_lp()
    violation, best = _highs_violation(*args)
    ours = float(jnp.sum(args[0] * sol.x)) + 1e3 * float(jnp.max(jnp.abs(args[0]))) * float(jnp.sum(sol.row_violation))
    np.testing.assert_allclose(ours, best, rtol=1e-5)
    np.testing.assert_allclose(float(jnp.sum(sol.row_violation)), violation, atol=1e-2)


def test_round_off_in_the_reduced_costs_does_not_cycle():
    # Load 27 of the same family: its last primal-feasible bases keep reduced costs
    # wrong-signed by 1e-5 to 3e-5, float32 round-off. Checked against 1e-5 they were
    # flipped, a row broke, and the dual pivots that repaired it brought them back: a
    # cycle of period 7 until the pivot budget (802), then the network-blind fallback.
    args, sol = _tied_cost_lp(27)
    assert bool(sol.converged)
    assert int(sol.n_iter) < args[4].shape[1]
    _, best = _highs_violation(*args)
    ours = float(jnp.sum(args[0] * sol.x)) + 1e3 * float(jnp.max(jnp.abs(args[0]))) * float(jnp.sum(sol.row_violation))
    np.testing.assert_allclose(ours, best, rtol=1e-5)


@pytest.mark.parametrize("lane", [1, 2, 43, 51, 53])
def test_three_cost_levels_reach_the_highs_optimum(lane):
    # The loads of this family that cycled to the pivot budget under the old optimality
    # test; the ratio test here (612 columns) is the bisection, not the pairwise one.
    args, sol = _tied_cost_lp(lane, 3)
    assert bool(sol.converged)
    assert int(sol.n_iter) < args[4].shape[1]
    _, best = _highs_violation(*args)
    ours = float(jnp.sum(args[0] * sol.x)) + 1e3 * float(jnp.max(jnp.abs(args[0]))) * float(jnp.sum(sol.row_violation))
    np.testing.assert_allclose(ours, best, rtol=1e-5)
