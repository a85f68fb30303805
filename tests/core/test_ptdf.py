"""PTDF and Ybus of the shipped cases against independent NumPy constructions."""

import equinox as eqx
import hypothesis.extra.numpy as hnp
import jax.numpy as jnp
import numpy as np
from reference_dc import b_theta_flows
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from powerzoojax.case import build_branch_admittances, build_ptdf, build_ybus, load_case

# ---------------------------------------------------------------------------------------
# PTDF


def test_case5_spec_checkpoint_line1_flow():
    """Spec §6.1: dispatch [40, 80, 20, 10, 600] at buses 1, 1, 3, 4, 5 and nodal load
    [100, 150, 200, 180, 120] MW give 214.6589 MW on line 1 (bus 1 -> 2)."""
    case = load_case("5")
    dispatch = jnp.array([40.0, 80.0, 20.0, 10.0, 600.0])
    load = jnp.array([100.0, 150.0, 200.0, 180.0, 120.0])
    injection = case.nodes_units_map @ dispatch - load
    flows = case.ptdf @ injection
    assert (int(case.line_from[0]), int(case.line_to[0])) == (1, 2)
    assert float(flows[0]) == pytest.approx(214.6589, abs=1e-3)

    ptdf64 = _ptdf64(case)
    assert (ptdf64 @ np.asarray(injection, np.float64))[0] == pytest.approx(214.6589, abs=1e-3)


def _ptdf64(case, slack_bus_idx=None):
    return build_ptdf(
        case.line_from_idx,
        case.line_to_idx,
        np.asarray(case.line_x, np.float64),
        case.n_nodes,
        case.slack_bus_idx if slack_bus_idx is None else slack_bus_idx,
    )


def _balanced(values: np.ndarray) -> np.ndarray:
    return values - values.mean()


@pytest.mark.parametrize("case_id", ["5", "14", "118", "300"])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_ptdf_flows_match_b_theta_solve(case_id, data):
    case = load_case(case_id)
    raw = data.draw(
        hnp.arrays(np.float64, case.n_nodes, elements=st.floats(-500.0, 500.0, width=64)),
        label="injection_mw",
    )
    injection = _balanced(raw)
    reference = b_theta_flows(case, injection)
    scale = np.abs(injection).sum() + 1.0

    flows64 = _ptdf64(case) @ injection
    np.testing.assert_allclose(flows64, reference, rtol=1e-4, atol=1e-9 * scale)

    flows32 = np.asarray(case.ptdf, np.float64) @ injection
    np.testing.assert_allclose(flows32, reference, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("case_id", ["5", "14", "118"])
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_balanced_flows_do_not_depend_on_the_slack(case_id, data):
    case = load_case(case_id)
    other_slack = data.draw(st.integers(0, case.n_nodes - 1), label="slack")
    raw = data.draw(hnp.arrays(np.float64, case.n_nodes, elements=st.floats(-100.0, 100.0)))
    injection = _balanced(raw)
    np.testing.assert_allclose(
        _ptdf64(case, other_slack) @ injection,
        _ptdf64(case) @ injection,
        rtol=1e-6,
        atol=1e-9 * (np.abs(injection).sum() + 1.0),
    )


def test_ptdf_of_a_radial_feeder_is_path_membership():
    # In a tree every MW injected at a bus and withdrawn at the slack crosses each line of
    # the bus's path to the slack once, in the to->from direction (slack upstream).
    case = load_case("33bw")
    in_service = np.asarray(case.line_status) > 0
    tree = eqx.tree_at(lambda c: c.line_x, case, jnp.where(in_service, case.line_x, 1e9))
    ptdf = _ptdf64(tree)[in_service]
    assert set(np.round(np.unique(ptdf), 6)) <= {-1.0, 0.0}
    # Bus 18 (index 17) is fed through lines 1..17.
    np.testing.assert_allclose(ptdf[:17, 17], -1.0, atol=1e-6)
    np.testing.assert_allclose(ptdf[17:, 17], 0.0, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Ybus


def _ybus_loop(case) -> np.ndarray:
    """MATPOWER pi-model Ybus, one branch at a time."""
    n = case.n_nodes
    y_bus = np.zeros((n, n), dtype=np.complex128)
    for line in range(case.n_lines):
        if int(case.line_status[line]) <= 0:
            continue
        f, t = int(case.line_from_idx[line]), int(case.line_to_idx[line])
        r, x, b = (float(case.line_r[line]), float(case.line_x[line]), float(case.line_b[line]))
        ratio, shift = float(case.line_ratio[line]), float(case.line_angle[line])
        y_s = 1.0 / complex(r, x)
        tap = ratio * np.exp(1j * np.pi / 180.0 * shift)
        y_bus[f, f] += (y_s + 0.5j * b) / abs(tap) ** 2
        y_bus[f, t] += -y_s / np.conj(tap)
        y_bus[t, f] += -y_s / tap
        y_bus[t, t] += y_s + 0.5j * b
    for k in range(n):
        y_bus[k, k] += complex(float(case.node_gs[k]), float(case.node_bs[k])) / case.base_mva
    return y_bus


@pytest.mark.parametrize("case_id", ["5", "14", "33bw", "300"])
def test_ybus_matches_branch_loop(case_id):
    case = load_case(case_id)
    y_bus = build_ybus(case)
    assert y_bus.dtype == np.complex128 and y_bus.shape == (case.n_nodes, case.n_nodes)
    np.testing.assert_allclose(y_bus, _ybus_loop(case), rtol=1e-12, atol=1e-9)


def test_ybus_with_phase_shifter_tap_and_open_branch():
    case = load_case("14")
    case = eqx.tree_at(
        lambda c: (c.line_angle, c.line_ratio, c.line_status, c.node_gs),
        case,
        (
            case.line_angle.at[2].set(-7.5).at[7].set(3.0),
            case.line_ratio.at[2].set(0.97),
            case.line_status.at[5].set(0),
            case.node_gs.at[4].set(2.5),
        ),
    )
    np.testing.assert_allclose(build_ybus(case), _ybus_loop(case), rtol=1e-12, atol=1e-9)
    # A phase shifter makes Ybus non-symmetric.
    y_bus = build_ybus(case)
    assert not np.allclose(y_bus, y_bus.T)


def test_branch_admittances_assemble_ybus():
    case = load_case("300")
    y_from, y_to = build_branch_admittances(case)
    assert y_from.shape == y_to.shape == (case.n_lines, case.n_nodes)
    incidence_from = np.zeros((case.n_lines, case.n_nodes))
    incidence_to = np.zeros((case.n_lines, case.n_nodes))
    incidence_from[np.arange(case.n_lines), case.line_from_idx] = 1.0
    incidence_to[np.arange(case.n_lines), case.line_to_idx] = 1.0
    shunt = np.asarray(case.node_gs, np.float64) + 1j * np.asarray(case.node_bs, np.float64)
    assembled = incidence_from.T @ y_from + incidence_to.T @ y_to + np.diag(shunt / case.base_mva)
    np.testing.assert_allclose(assembled, build_ybus(case), rtol=1e-12, atol=1e-9)


def _newton_pf_all_pq(y_bus: np.ndarray, s_load_pu: np.ndarray, slack: int) -> np.ndarray:
    """Polar Newton-Raphson with the slack at 1∠0 and every other bus PQ."""
    n = y_bus.shape[0]
    pq = np.array([k for k in range(n) if k != slack])
    v = np.ones(n, dtype=np.complex128)
    for _ in range(20):
        current = y_bus @ v
        mismatch = (v * np.conj(current) + s_load_pu)[pq]
        if np.max(np.abs(mismatch)) < 1e-10:
            break
        v_norm = v / np.abs(v)
        ds_dvm = np.diag(v) @ np.conj(y_bus @ np.diag(v_norm)) + np.conj(
            np.diag(current)
        ) @ np.diag(v_norm)
        ds_dva = 1j * np.diag(v) @ np.conj(np.diag(current) - y_bus @ np.diag(v))
        jac = np.block(
            [
                [ds_dva[np.ix_(pq, pq)].real, ds_dvm[np.ix_(pq, pq)].real],
                [ds_dva[np.ix_(pq, pq)].imag, ds_dvm[np.ix_(pq, pq)].imag],
            ]
        )
        step = np.linalg.solve(jac, -np.concatenate([mismatch.real, mismatch.imag]))
        angle, magnitude = np.angle(v), np.abs(v)
        angle[pq] += step[: pq.size]
        magnitude[pq] += step[pq.size :]
        v = magnitude * np.exp(1j * angle)
    return v


def test_case33bw_ac_power_flow_matches_spec_bfs_checkpoint():
    """Spec §6.3 (BFS on case33bw, base 100, atol 1e-3): an exact AC power flow on our
    Ybus lands within that tolerance, which pins the Ohm -> p.u. conversion and the base."""
    case = load_case("33bw")
    s_load = np.asarray(case.node_pd, np.float64) + 1j * np.asarray(case.node_qd, np.float64)
    v = _newton_pf_all_pq(build_ybus(case), s_load / case.base_mva, case.slack_bus_idx)
    v_mag = np.abs(v)
    np.testing.assert_allclose(v_mag[[1, 17, 32]], [0.99704452, 0.91329013, 0.91679245], atol=1e-3)
    y_from, _ = build_branch_admittances(case)
    s_from = v[case.line_from_idx] * np.conj(y_from @ v)
    assert s_from[0].real == pytest.approx(0.03901482, abs=1e-3)
    assert s_from[0].imag == pytest.approx(0.02425106, abs=1e-3)
