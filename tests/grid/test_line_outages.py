"""In-graph line outages of TransGridEnv (``TransGridParams.with_line_outages``).

Each outage is checked against the host rebuild (``case.with_line_status`` then
``make_trans_params``) and against an independent NumPy B-θ solve on the reduced
susceptance matrix of the lines left in service (``reference_dc``); DC-OPF outages against
host rebuilds (tests/core/test_line_status.py checks a DC-OPF outage against HiGHS). N−1
screening is one jitted ``vmap`` over all single-line masks.
"""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from reference_dc import b_theta_flows

from powerzoojax.case import load_case, nodes_off_slack
from powerzoojax.grid import TransGridEnv, make_trans_params

ENV = TransGridEnv()
ATOL_MW, RTOL = 1e-2, 1e-4


def _first_step(params, action):
    _, state = ENV.reset(jr.PRNGKey(0), params)
    return ENV.step(jr.PRNGKey(1), state, action, params)


# One compiled program per (case, mode): params are an argument, so every host rebuild
# of the same case reuses it.
_host_step = jax.jit(_first_step)


def _islands(case, in_service):
    return nodes_off_slack(case.line_from_idx, case.line_to_idx, in_service, case.n_nodes, case.slack_bus_idx).any()


def _screen(case, solver_mode=0):
    """All single-line outages of ``case`` in one jitted vmap, with the host rebuilds."""
    params = make_trans_params(case, solver_mode=solver_mode, max_steps=4)
    action = jnp.asarray(np.linspace(-0.6, 0.6, case.n_units), jnp.float32)
    masks = jnp.eye(case.n_lines, dtype=bool)
    batched = jax.jit(jax.vmap(lambda mask: _first_step(params.with_line_outages(mask), action)))(masks)
    return params, action, batched


@pytest.fixture(scope="module")
def screen14():
    return load_case("14"), *_screen(load_case("14"))


@pytest.fixture(scope="module")
def screen118():
    return load_case("118"), *_screen(load_case("118"))


def _check_against_rebuilds(case, action, batched, solver_mode=0, env_rebuild_every=1):
    """Every single-line outage of ``batched`` against the host: the rebuilt case's PTDF
    applied to the same injections and the B-θ solve for each, and the full rebuilt env
    (``make_trans_params`` then a step) for every ``env_rebuild_every``-th line."""
    _, states, _, costs, _, info = batched
    n_connected = 0
    for k in range(case.n_lines):
        in_service = np.ones(case.n_lines, bool)
        in_service[k] = False
        flows = np.asarray(states.line_flow_mw[k], np.float64)
        assert np.all(np.isfinite(flows)) and np.all(np.isfinite(np.asarray(costs[k])))
        if _islands(case, in_service):
            assert bool(info["islanded"][k]) and not bool(info["is_safe"][k])
            continue
        n_connected += 1
        assert not bool(info["islanded"][k])
        assert flows[k] == 0.0
        injection = np.asarray(states.node_injection_mw[k], np.float64)
        rebuilt_case = case.with_line_status(in_service)
        host_flows = np.asarray(rebuilt_case.ptdf, np.float64) @ injection
        np.testing.assert_allclose(flows, host_flows, atol=ATOL_MW, rtol=RTOL, err_msg=f"line {k} vs host PTDF")
        reference = b_theta_flows(case, injection, in_service)
        np.testing.assert_allclose(flows, reference, atol=ATOL_MW, rtol=RTOL, err_msg=f"line {k} vs B-theta")
        if k % env_rebuild_every == 0:
            rebuilt = make_trans_params(rebuilt_case, solver_mode=solver_mode, max_steps=4)
            _, host_state, *_ = _host_step(rebuilt, action)
            np.testing.assert_allclose(
                flows, np.asarray(host_state.line_flow_mw), atol=ATOL_MW, rtol=RTOL, err_msg=f"line {k} vs rebuilt env"
            )
            np.testing.assert_allclose(
                np.asarray(states.unit_power_mw[k]), np.asarray(host_state.unit_power_mw), atol=ATOL_MW, rtol=RTOL
            )
    return n_connected


def test_n_minus_1_screening_of_case14_is_one_vmap(screen14):
    case, params, action, batched = screen14
    assert _check_against_rebuilds(case, action, batched) == case.n_lines - 1  # line 7-8 islands bus 8
    # Outages move power: the screened flows differ from the intact network's.
    _, intact, *_ = _host_step(params, action)
    assert np.abs(np.asarray(batched[1].line_flow_mw) - np.asarray(intact.line_flow_mw)).max() > 10.0


def test_n_minus_1_screening_of_case118(screen118):
    case, _, action, batched = screen118
    n_connected = _check_against_rebuilds(case, action, batched, env_rebuild_every=15)
    n_bridges = sum(
        _islands(case, np.arange(case.n_lines) != k) for k in range(case.n_lines)
    )
    assert n_bridges > 0 and n_connected == case.n_lines - n_bridges


def test_dc_opf_mode_honours_outages_with_line_limits():
    case = load_case("5")  # lines 1-2 (400 MW) and 4-5 (240 MW) are limited
    params, action, batched = _screen(case, solver_mode=1)
    _, states, _, _, _, info = batched
    assert np.all(np.asarray(info["opf_status"]) == 0)
    assert _check_against_rebuilds(case, action, batched, solver_mode=1) == case.n_lines
    objectives = np.asarray(info["opf_objective"])
    for k in range(case.n_lines):
        in_service = np.ones(case.n_lines, bool)
        in_service[k] = False
        rebuilt = make_trans_params(case.with_line_status(in_service), solver_mode=1, max_steps=4)
        *_, host_info = _host_step(rebuilt, action)
        assert objectives[k] == pytest.approx(float(host_info["opf_objective"]), rel=1e-4)
    # Limits bind differently after outages: the cost of the dispatch changes.
    assert np.ptp(objectives) > 100.0


def test_two_line_outage_matches_the_reduced_b_solve():
    case = load_case("14")
    params = make_trans_params(case, max_steps=4)
    ends = list(zip(np.asarray(case.line_from).tolist(), np.asarray(case.line_to).tolist()))
    out = [ends.index((2, 3)), ends.index((4, 5))]
    mask = np.zeros(case.n_lines, bool)
    mask[out] = True
    action = jnp.zeros(case.n_units)
    _, state, *_ = jax.jit(lambda m: _first_step(params.with_line_outages(m), action))(jnp.asarray(mask))
    _, host_state, *_ = _host_step(make_trans_params(case.with_line_status(~mask), max_steps=4), action)
    np.testing.assert_allclose(np.asarray(state.line_flow_mw), np.asarray(host_state.line_flow_mw), atol=ATOL_MW, rtol=RTOL)
    reference = b_theta_flows(case, np.asarray(state.node_injection_mw, np.float64), ~mask)
    np.testing.assert_allclose(np.asarray(state.line_flow_mw), reference, atol=ATOL_MW, rtol=RTOL)
    assert np.all(np.asarray(state.line_flow_mw)[out] == 0.0)


def test_islanding_outage_is_flagged_and_charged_without_nan():
    case = load_case("14")
    params = make_trans_params(case, max_steps=4, islanding_cost=50.0)
    ends = list(zip(np.asarray(case.line_from).tolist(), np.asarray(case.line_to).tolist()))
    mask = np.zeros(case.n_lines, bool)
    mask[[ends.index((9, 14)), ends.index((13, 14))]] = True  # cuts off bus 14 and its load
    obs, state, reward, costs, done, info = jax.jit(
        lambda m: _first_step(params.with_line_outages(m), jnp.zeros(case.n_units))
    )(jnp.asarray(mask))
    assert bool(info["islanded"]) and not bool(info["is_safe"])
    load_14 = float(params.load_profiles[0][np.asarray(case.load_bus_ids).tolist().index(14)])
    assert load_14 > 1.0
    *_, intact_costs, _, _ = _host_step(params, jnp.zeros(case.n_units))
    assert float(costs[2]) == pytest.approx(float(intact_costs[2]) + 50.0 + load_14, rel=1e-5)
    leaves = jax.tree.leaves((obs, state, reward, costs, info))
    assert all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in leaves if jnp.issubdtype(leaf.dtype, jnp.floating))
    assert np.all(np.asarray(state.line_flow_mw)[mask] == 0.0)


def test_outages_do_not_retrace():
    case = load_case("5")
    params = make_trans_params(case, max_steps=4)
    traces = []

    @jax.jit
    def flows(mask):
        traces.append(1)
        return _first_step(params.with_line_outages(mask), jnp.zeros(case.n_units))[1].line_flow_mw

    first = flows(jnp.zeros(case.n_lines, bool).at[0].set(True))
    second = flows(jnp.zeros(case.n_lines, bool).at[3].set(True))
    assert len(traces) == 1 and float(first[0]) == 0.0 and float(second[3]) == 0.0
    assert float(jnp.abs(first - second).max()) > 1.0


def test_no_outage_leaves_the_params_unchanged():
    case = load_case("14")
    params = make_trans_params(case, max_steps=4)
    same = params.with_line_outages(jnp.zeros(case.n_lines, bool))
    np.testing.assert_allclose(np.asarray(same.network.ptdf_units_t), np.asarray(params.network.ptdf_units_t), atol=1e-6)
    np.testing.assert_allclose(np.asarray(same.load_line_flow_mw), np.asarray(params.load_line_flow_mw), atol=1e-3)
    assert not bool(same.islanded)


@pytest.mark.parametrize(
    ("mask", "match"),
    [
        (np.zeros(5, bool), r"shape \(6,\)"),
        (np.zeros(6, np.int32), r"bool array .* dtype int32"),
    ],
)
def test_bad_outage_masks_are_refused(mask, match):
    params = make_trans_params(load_case("5"), max_steps=4)
    with pytest.raises(ValueError, match=match):
        params.with_line_outages(mask)


def test_ac_opf_mode_refuses_in_graph_outages():
    # The AC power-flow modes take outages (tests/grid/test_trans_ac_outages.py); AC-OPF does not.
    params = make_trans_params(load_case("5"), physics=1, solver_mode=2, max_steps=4)
    with pytest.raises(ValueError, match=r"ACOPFModel .* expected a DC or AC power-flow mode .*with_line_status"):
        params.with_line_outages(np.zeros(6, bool))


@pytest.mark.slow  # about 20 s of compiles (eager and jitted paths) on 2 cores
def test_env_with_outages_passes_the_conformance_kit():
    from powerzoojax.testing import check_env_api

    case = load_case("5")
    params = make_trans_params(case, max_steps=4).with_line_outages(jnp.zeros(case.n_lines, bool).at[2].set(True))
    check_env_api(TransGridEnv(), params)


def test_bundle_injections_see_the_outage():
    from powerzoojax.grid import make_battery_bundle

    case = load_case("14")
    ends = list(zip(np.asarray(case.line_from).tolist(), np.asarray(case.line_to).tolist()))
    k = ends.index((4, 5))
    mask = np.zeros(case.n_lines, bool)
    mask[k] = True

    def params_of(c):
        return make_trans_params(c, max_steps=4, resources=(make_battery_bundle(c, [4, 13], power_mw=30.0, energy_mwh=60.0),))

    action = jnp.concatenate([jnp.zeros(case.n_units), jnp.array([1.0, -1.0])])
    step = jax.jit(_first_step)
    _, state, *_ = step(params_of(case).with_line_outages(jnp.asarray(mask)), action)
    _, host_state, *_ = step(params_of(case.with_line_status(~mask)), action)
    np.testing.assert_allclose(np.asarray(state.line_flow_mw), np.asarray(host_state.line_flow_mw), atol=ATOL_MW, rtol=RTOL)
    assert float(state.line_flow_mw[k]) == 0.0
    reference = b_theta_flows(case, np.asarray(host_state.node_injection_mw, np.float64), ~mask)
    np.testing.assert_allclose(np.asarray(state.line_flow_mw), reference, atol=ATOL_MW, rtol=RTOL)


def test_outages_by_index_match_the_mask_screening(screen118):
    case, params, action, batched = screen118
    by_index = jax.jit(jax.vmap(lambda k: _first_step(params.with_line_outages_at(k[None]), action)))(
        jnp.arange(case.n_lines, dtype=jnp.int32)
    )
    np.testing.assert_allclose(
        np.asarray(by_index[1].line_flow_mw), np.asarray(batched[1].line_flow_mw), atol=ATOL_MW, rtol=RTOL
    )
    np.testing.assert_array_equal(np.asarray(by_index[5]["islanded"]), np.asarray(batched[5]["islanded"]))


def test_outage_indices_pad_and_repeat():
    case = load_case("14")
    params = make_trans_params(case, max_steps=4)
    flows = jax.jit(lambda lines: _first_step(params.with_line_outages_at(lines), jnp.zeros(case.n_units))[1].line_flow_mw)
    single = flows(jnp.array([2, -1, -1], jnp.int32))
    np.testing.assert_allclose(np.asarray(flows(jnp.array([2, 2, -1], jnp.int32))), np.asarray(single), atol=1e-4)
    mask = np.zeros(case.n_lines, bool)
    mask[[2, 8]] = True
    pair = flows(jnp.array([8, -1, 2], jnp.int32))
    _, host_state, *_ = _host_step(make_trans_params(case.with_line_status(~mask), max_steps=4), jnp.zeros(case.n_units))
    np.testing.assert_allclose(np.asarray(pair), np.asarray(host_state.line_flow_mw), atol=ATOL_MW, rtol=RTOL)
    assert float(single[2]) == 0.0 and float(pair[8]) == 0.0 and abs(float(single[8])) > 1.0


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        (np.array([[1]]), r"1-D integer array .* shape \(1, 1\)"),
        (np.array([0.0]), r"1-D integer array .* dtype float"),
        (np.array([3, 6, -2]), r"indices \[6, -2\] outside \[-1, 6\)"),
    ],
)
def test_bad_outage_indices_are_refused(lines, match):
    params = make_trans_params(load_case("5"), max_steps=4)
    with pytest.raises(ValueError, match=match):
        params.with_line_outages_at(lines)
