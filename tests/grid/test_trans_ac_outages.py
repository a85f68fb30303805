"""TransGridEnv in AC power-flow mode with line outages as params: the AC network is
rebuilt in the graph (compared with `make_ac_network` of the case with the line out on the
host), masks replace each other, and a `vmap` over N-1 masks steps without a retrace."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import example, given, settings

import powerzoojax.testing.strategies as pst

from powerzoojax.case import load_case
from powerzoojax.grid import TransGridEnv, make_trans_params
from powerzoojax.physics import ac_power_flow, make_ac_network
from powerzoojax.physics._dc_opf import UNLIMITED_MW

OPERATORS = ("g", "b", "branch_g", "branch_b", "fdlf_bp_inv", "fdlf_pq_solve_t", "fdlf_pv_rhs", "fdlf_pv_out")


def _host_network(case, line: int):
    status = np.asarray(case.line_status).copy()
    status[line] = 0
    return make_ac_network(eqx.tree_at(lambda c: c.line_status, case, jnp.asarray(status)))


def _assert_same_network(got, want) -> None:
    for name in OPERATORS:
        a, b = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert np.max(np.abs(a - b)) <= 2e-5 * max(float(np.max(np.abs(b))), 1.0), name


@pytest.mark.parametrize("solver_mode", [0, 1])
def test_ac_params_open_lines_like_the_host_network(solver_mode: int) -> None:
    case = load_case("14")
    params = make_trans_params(case, physics=1, solver_mode=solver_mode, max_steps=4)
    mask = np.zeros(case.n_lines, bool)
    mask[3] = True
    opened = jax.jit(lambda p, m: p.with_line_outages(m))(params, jnp.asarray(mask))
    assert np.asarray(opened.line_out).tolist() == mask.tolist() and not bool(opened.islanded)
    _assert_same_network(opened.network_model.network, _host_network(case, 3))
    # A second mask replaces the first; the index form gives the same network.
    again = opened.with_line_outages(jnp.zeros(case.n_lines, bool).at[7].set(True))
    _assert_same_network(again.network_model.network, _host_network(case, 7))
    _assert_same_network(params.with_line_outages_at(jnp.array([7, -1])).network_model.network, _host_network(case, 7))
    if solver_mode == 1:
        # The DC-OPF stage ahead of the AC power flow drops the opened line's limit too.
        assert float(again.network_model.dispatch_model.setup.line_cap[7]) == UNLIMITED_MW


def test_vmap_over_n_minus_1_masks_steps_once_traced() -> None:
    case = load_case("14")
    env = TransGridEnv()
    params = make_trans_params(case, physics=1, max_steps=4)
    lines = jnp.array([0, 3, 7, 12])
    masks = jnp.zeros((4, case.n_lines), bool).at[jnp.arange(4), lines].set(True)
    traces = []

    def step(mask, key):
        traces.append(1)
        p = params.with_line_outages(mask)
        obs, state = env.reset(key, p)
        action = jnp.zeros(env.action_space(p).shape)
        _, state, _, costs, _, info = env.step(key, state, action, p)
        return info["pf_converged"], state, costs

    run = jax.jit(jax.vmap(step))
    converged, state, costs = run(masks, jr.split(jr.key(0), 4))
    converged2, _, _ = run(masks[::-1], jr.split(jr.key(1), 4))
    assert len(traces) == 1
    assert np.all(np.asarray(converged)) and np.all(np.asarray(converged2))
    assert np.all(np.isfinite(np.asarray(costs)))
    flows = np.asarray(state.line_flow_mw)
    np.testing.assert_allclose(flows[np.arange(4), np.asarray(lines)], 0.0, atol=1e-4)


def test_islanding_mask_is_flagged_with_finite_state() -> None:
    case = load_case("14")
    env = TransGridEnv()
    params = make_trans_params(case, physics=1, max_steps=4)
    # Case 14's line 13 (bus 7-8) is bus 8's only link.
    p = params.with_line_outages(jnp.zeros(case.n_lines, bool).at[13].set(True))
    assert bool(p.islanded)
    obs, state = env.reset(jr.key(0), p)
    _, state, reward, costs, _, info = env.step(jr.key(1), state, jnp.zeros(env.action_space(p).shape), p)
    assert bool(info["islanded"])
    for leaf in (obs, reward, costs, state.line_flow_mw):
        assert np.all(np.isfinite(np.asarray(leaf)))


_CASE14 = load_case("14")
_PARAMS14 = make_trans_params(_CASE14, physics=1, max_steps=4)


@jax.jit
def _solve_with_outages(mask):
    net = _PARAMS14.with_line_outages(mask).network_model.network
    return ac_power_flow(net, _CASE14.unit_pg, None, _CASE14.node_pd, _CASE14.node_qd, method="fdlf")


def _mask14(*lines: int) -> np.ndarray:
    return np.isin(np.arange(_CASE14.n_lines), lines)


@settings(max_examples=6, deadline=None)
@given(pst.connected_line_outages(_CASE14, max_outages=2))
@example(_mask14(3))
@example(_mask14(6, 10))
def test_outage_strategy_masks_solve_like_the_host_network_in_ac(mask):
    """Any connected outage set the kit draws: the AC params' in-graph network reaches the
    host-rebuilt network's verdict, and its solution where there is one (a connected
    outage can still leave no power-flow solution at the case's dispatch: case 14 without
    line 0, its main 1-2 link, has none)."""
    got = _solve_with_outages(jnp.asarray(mask))
    status = np.asarray(_CASE14.line_status) * ~mask
    host = make_ac_network(eqx.tree_at(lambda c: c.line_status, _CASE14, jnp.asarray(status, np.int32)))
    want = ac_power_flow(host, _CASE14.unit_pg, None, _CASE14.node_pd, _CASE14.node_qd, method="fdlf")
    assert bool(got.converged) == bool(want.converged)
    if not bool(want.converged):
        return
    np.testing.assert_allclose(np.asarray(got.vm), np.asarray(want.vm), atol=1e-5)
    np.testing.assert_allclose(np.asarray(got.va), np.asarray(want.va), atol=1e-5)
    np.testing.assert_allclose(np.asarray(got.line_p_from_mw)[mask], 0.0, atol=1e-6)
