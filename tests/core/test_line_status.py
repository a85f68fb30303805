"""Line status in the DC matrices: open lines carry nothing, islands are refused on the host.

References are independent of the package's PTDF code: a NumPy B-θ solve on the reduced
susceptance matrix of the in-service lines (``reference_dc``) and HiGHS on the B-θ form
of the DC-OPF.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference_dc import b_theta_flows
from scipy.optimize import linprog

from powerzoojax.case import case_data_from_matpower, case_with_line_status, load_case, nodes_off_slack
from powerzoojax.physics import SolverStatus, dc_opf, dc_power_flow_on_case, make_dc_opf_setup


def _line(case, from_bus: int, to_bus: int) -> int:
    ends = list(zip(np.asarray(case.line_from).tolist(), np.asarray(case.line_to).tolist()))
    return ends.index((from_bus, to_bus))


def _without(case, *lines: int):
    status = np.ones(case.n_lines, int)
    status[list(lines)] = 0
    return case.with_line_status(status), status > 0


@pytest.fixture(scope="module")
def case14():
    return load_case("14")


@pytest.fixture(scope="module")
def dc_flow():
    return jax.jit(dc_power_flow_on_case)


def test_open_line_has_a_zero_ptdf_row_and_flows_match_the_reduced_b_solve(case14, dc_flow):
    k = _line(case14, 4, 5)
    opened, in_service = _without(case14, k)
    assert np.all(np.asarray(opened.ptdf[k]) == 0.0)
    assert int(opened.line_status[k]) == 0 and int(opened.line_status.sum()) == case14.n_lines - 1
    dispatch = jnp.asarray(np.linspace(40.0, 80.0, case14.n_units), jnp.float32)
    load = jnp.asarray(np.asarray(case14.load_d_max) * 0.8, jnp.float32)
    flow, injection, _ = dc_flow(opened, dispatch, load)
    assert float(flow[k]) == 0.0
    reference = b_theta_flows(case14, np.asarray(injection, np.float64), in_service)
    np.testing.assert_allclose(np.asarray(flow, np.float64), reference, rtol=1e-4, atol=1e-3)
    # The intact case's flow on that line is far from zero, so the test can fail.
    intact, _, _ = dc_flow(case14, dispatch, load)
    assert abs(float(intact[k])) > 1.0


def test_case_without_a_line_is_rebuilt_not_patched(case14):
    k = _line(case14, 2, 3)
    opened, _ = _without(case14, k)
    # Other lines' factors change (the power reroutes), and reclosing restores the case.
    assert np.abs(np.asarray(opened.ptdf) - np.asarray(case14.ptdf)).max() > 0.05
    reclosed = case_with_line_status(opened, np.ones(case14.n_lines, bool))
    np.testing.assert_allclose(np.asarray(reclosed.ptdf), np.asarray(case14.ptdf), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(opened.incidence), np.asarray(case14.incidence))


@pytest.mark.parametrize(("case_id", "source"), [("33bw", "reference"), ("118zh", "matpower")])
def test_shipped_out_of_service_lines_carry_no_power(case_id, source):
    case = load_case(case_id, source=source)
    in_service = np.asarray(case.line_status) > 0
    assert not in_service.all()
    assert np.all(np.asarray(case.ptdf)[~in_service] == 0.0)
    rng = np.random.default_rng(7)
    injection = rng.uniform(-1.0, 1.0, case.n_nodes)
    injection -= injection.mean()
    flows = np.asarray(case.ptdf, np.float64) @ injection
    reference = b_theta_flows(case, injection, in_service)
    np.testing.assert_allclose(flows, reference, rtol=1e-4, atol=1e-5)


def test_islanding_status_names_the_buses_and_the_lines_out(case14):
    k = _line(case14, 7, 8)
    status = np.ones(case14.n_lines, int)
    status[k] = 0
    with pytest.raises(ValueError, match=r"buses \[8\].*slack bus 1.*\[14 \(7-8\)\]"):
        case14.with_line_status(status)
    both = np.ones(case14.n_lines, int)
    both[[_line(case14, 9, 14), _line(case14, 13, 14)]] = 0
    with pytest.raises(ValueError, match=r"buses \[14\].*17 \(9-14\), 20 \(13-14\)"):
        case_with_line_status(case14, both)


def test_nodes_off_slack_finds_the_island(case14):
    status = np.ones(case14.n_lines, bool)
    status[[_line(case14, 6, 11), _line(case14, 10, 11), _line(case14, 9, 10)]] = False
    off = nodes_off_slack(case14.line_from_idx, case14.line_to_idx, status, case14.n_nodes, case14.slack_bus_idx)
    np.testing.assert_array_equal(np.asarray(case14.node_ids)[off], [10, 11])


def _three_bus_tables(status_of_line_2_3: float):
    bus = np.array([
        [1, 3, 0, 0, 0, 0, 1, 1, 0, 135, 1, 1.1, 0.9],
        [2, 1, 50, 0, 0, 0, 1, 1, 0, 135, 1, 1.1, 0.9],
        [3, 1, 30, 0, 0, 0, 1, 1, 0, 135, 1, 1.1, 0.9],
    ], float)
    gen = np.array([[1, 0, 0, 100, -100, 1, 100, 1, 200, 0]], float)
    branch = np.array([
        [1, 2, 0.01, 0.1, 0, 0, 0, 0, 0, 0, 1],
        [2, 3, 0.01, 0.1, 0, 0, 0, 0, 0, 0, status_of_line_2_3],
    ], float)
    gencost = np.array([[2, 0, 0, 2, 10, 0]], float)
    return 100.0, bus, gen, branch, gencost


def test_case_builder_refuses_an_islanding_status():
    case_data_from_matpower(*_three_bus_tables(1.0))  # connected: builds
    with pytest.raises(ValueError, match=r"case_data_from_matpower: .*buses \[3\].*\[2 \(2-3\)\]"):
        case_data_from_matpower(*_three_bus_tables(0.0))


@pytest.mark.parametrize(
    ("status", "error", "match"),
    [
        (np.ones(19, int), ValueError, r"shape \(19,\), expected \(20,\)"),
        (np.full(20, 2), ValueError, r"0 or 1 .*\[2, 2"),
    ],
)
def test_with_line_status_rejects_bad_input(case14, status, error, match):
    with pytest.raises(error, match=match):
        case14.with_line_status(status)


def test_with_line_status_refuses_a_traced_status(case14):
    with pytest.raises(TypeError, match="with_line_outages"):
        jax.jit(lambda s: case14.with_line_status(s).ptdf)(jnp.ones(case14.n_lines, bool))


def test_dc_opf_on_a_case_with_a_line_out_matches_highs():
    case = load_case("5")
    k = _line(case, 1, 2)  # the 400 MW line: limits must follow the rerouted power
    opened, in_service = _without(case, k)
    setup = make_dc_opf_setup(opened, objective="linear")
    assert k not in np.asarray(setup.mon_idx).tolist()
    load = 0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
    res = jax.jit(dc_opf)(setup, jnp.asarray(load, jnp.float32))
    assert bool(res.status == SolverStatus.successful)
    assert float(res.line_flow_mw[k]) == 0.0

    # HiGHS on the B-θ form over the in-service lines: variables (p, θ without the slack).
    n, g = case.n_nodes, case.n_units
    x = np.asarray(case.line_x, np.float64)
    f_idx, t_idx = np.asarray(case.line_from_idx), np.asarray(case.line_to_idx)
    keep = [i for i in range(n) if i != case.slack_bus_idx]
    b_bus = np.zeros((n, n))
    branch_rows = []
    for line in np.flatnonzero(in_service):
        f, t, y = f_idx[line], t_idx[line], 1.0 / x[line]
        b_bus[np.ix_([f, t], [f, t])] += [[y, -y], [-y, y]]
        row = np.zeros(n)
        row[f], row[t] = y, -y
        branch_rows.append(row[keep])
    a_units = np.asarray(case.nodes_units_map, np.float64)
    a_eq = np.hstack([a_units, -b_bus[:, keep]])
    flows = np.asarray(branch_rows)
    caps = np.asarray(case.line_cap, np.float64)[in_service]
    a_ub = np.vstack([np.hstack([np.zeros((len(flows), g)), flows]), np.hstack([np.zeros((len(flows), g)), -flows])])
    cost = np.concatenate([np.asarray(case.unit_cost_c, np.float64), np.zeros(n - 1)])
    bounds = [(float(lo), float(hi)) for lo, hi in zip(np.asarray(case.unit_p_min), np.asarray(case.unit_p_max))]
    reference = linprog(
        cost, A_ub=a_ub, b_ub=np.concatenate([caps, caps]), A_eq=a_eq, b_eq=load,
        bounds=bounds + [(None, None)] * (n - 1), method="highs",
    )
    assert reference.status == 0
    assert float(res.objective) == pytest.approx(reference.fun, rel=1e-4)
    ref_flows = np.zeros(case.n_lines)
    ref_flows[in_service] = flows @ reference.x[g:]
    np.testing.assert_allclose(np.asarray(res.line_flow_mw, np.float64), ref_flows, atol=0.05)
    # The outage changes the answer (the intact optimum differs), so the check has teeth.
    intact = jax.jit(dc_opf)(make_dc_opf_setup(case, objective="linear"), jnp.asarray(load, jnp.float32))
    assert abs(float(intact.objective) - reference.fun) > 1.0
