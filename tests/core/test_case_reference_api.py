"""The reference's case API: per-id factories, graph matrices from branch lists, four-table
conversion (case_to_jax), text inspection and pictures; DC flow on a case."""

import io
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

# Case 5 in the reference's four-table layout (its benchmark table: MIT-licensed
# PowerZooJax data, commit 3285b39; the same numbers as spec rl-market-tasks §2 "case5").
CASE5_TABLES = {
    "builder_kwargs": {"base_mva": 100.0},
    "tables": {
        "nodes": {
            "columns": ["id", "type", "Pd", "Qd", "Gs", "Bs", "x", "y"],
            "rows": [[1, 3, 0, 0, 0, 0, 0, 0], [2, 1, 300, 98.6, 0, 0, 3, 0], [3, 2, 300, 98.6, 0, 0, 4.5, 1],
                     [4, 2, 400, 131.5, 0, 0, 2, 2], [5, 2, 0, 0, 0, 0, 0, 2]],
        },
        "units": {
            "columns": ["id", "bus_id", "mc_a", "mc_b", "mc_c", "p_max", "p_min", "Pg", "Qg", "Vg", "Qmax", "Qmin"],
            "rows": [[1, 1, 0, 0, 14, 40, 5, 40, 0, 1.06, 30, -30], [2, 1, 0, 0, 15, 170, 10, 170, 0, 1.06, 127.5, -127.5],
                     [3, 3, 0, 0, 30, 520, 20, 323.49, 0, 1.01, 390, -390], [4, 4, 0, 0, 40, 200, 10, 0, 0, 1.01, 150, -150],
                     [5, 5, 0, 0, 10, 600, 20, 466.51, 0, 1.01, 450, -450]],
        },
        "lines": {
            "columns": ["id", "from", "to", "r", "x", "b", "floor", "cap", "status"],
            "rows": [[1, 1, 2, 0.0094, 0.0281, 0.0211, -400, 400, 1], [2, 1, 4, 0.0101, 0.0304, 0.0228, 0, 0, 1],
                     [3, 1, 5, 0.0021, 0.0064, 0.0048, 0, 0, 1], [4, 2, 3, 0.0036, 0.0108, 0.0081, 0, 0, 1],
                     [5, 3, 4, 0.0099, 0.0297, 0.0223, 0, 0, 1], [6, 4, 5, 0.0099, 0.0297, 0.0223, -240, 240, 1]],
        },
        "loads": {
            "columns": ["id", "bus_id", "mc_a", "mc_b", "mc_c", "d_max", "d_min"],
            "rows": [[1, 1, 0, 0, 0, 0, 0], [2, 2, 0, 0, 0, 500, 0], [3, 3, 0, 0, 0, 600, 0], [4, 4, 0, 0, 0, 400, 0],
                     [5, 5, 0, 0, 0, 0, 0]],
        },
    },
}
# Spec §6.1: this dispatch against these nodal loads puts 214.6589 MW on line 1 (bus 1 → 2).
DISPATCH = [40.0, 80.0, 20.0, 10.0, 600.0]
NODE_LOAD = [100.0, 150.0, 200.0, 180.0, 120.0]
LINE1_FLOW = 214.6589


def _b_theta_flows(x, f, t, slack, injection):
    """Independent DC flow: solve B θ = P with θ_slack = 0, flow = (θ_f − θ_t)/x."""
    n = len(injection)
    b = np.zeros((n, n))
    for xl, i, j in zip(x, f, t):
        b[i, i] += 1 / xl
        b[j, j] += 1 / xl
        b[i, j] -= 1 / xl
        b[j, i] -= 1 / xl
    keep = [k for k in range(n) if k != slack]
    theta = np.zeros(n)
    theta[keep] = np.linalg.solve(b[np.ix_(keep, keep)], np.asarray(injection)[keep])
    return (theta[f] - theta[t]) / np.asarray(x)


# ----------------------------------------------------------------------------- factories


def test_factories_are_thin_load_case_calls(monkeypatch):
    import powerzoojax.case as case_pkg
    from powerzoojax.case import _factories

    asked = []
    some_case = case_pkg.load_case("5")
    monkeypatch.setattr(_factories, "load_case", lambda case_id: asked.append(case_id) or some_case)
    for case_id, factory in _factories.CASE_FACTORIES.items():
        assert getattr(case_pkg, factory.__name__) is factory
        assert factory() is some_case
    assert asked == list(_factories.CASE_FACTORIES)
    assert len(asked) == 15 and {"123", "123_1ph", "552gb"} <= set(asked)


def test_factories_of_shipped_ids_return_the_registry_case():
    from powerzoojax.case import create_case5, create_case33bw, create_case141, list_cases, load_case
    from powerzoojax.case._factories import CASE_FACTORIES

    assert create_case5() is load_case("5") and create_case33bw() is load_case("33bw") and create_case141() is load_case("141")
    shipped = set(list_cases())
    for case_id, factory in CASE_FACTORIES.items():
        if case_id not in shipped:  # 123, 123_1ph, 552gb until the registry ships them
            with pytest.raises(ValueError, match="valid ids"):
                factory()


# ----------------------------------------------------------------------------- graph matrices


def test_compute_ptdf_gives_the_spec_line_flow():
    from powerzoojax.case import compute_ptdf, load_case

    case = load_case("5")
    ptdf = compute_ptdf(case.line_from_idx, case.line_to_idx, case.line_x, case.n_nodes, case.slack_bus_idx)
    assert ptdf.shape == (6, 5) and ptdf.dtype == jnp.float32
    injection = np.asarray(case.nodes_units_map) @ np.asarray(DISPATCH) - np.asarray(NODE_LOAD)
    flows = np.asarray(ptdf, np.float64) @ injection
    assert flows[0] == pytest.approx(LINE1_FLOW, abs=1e-3)
    expected = _b_theta_flows(np.asarray(case.line_x, np.float64), np.asarray(case.line_from_idx), np.asarray(case.line_to_idx), 0, injection)
    np.testing.assert_allclose(flows, expected, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(np.asarray(ptdf)[:, 0], 0.0)
    with pytest.raises(ValueError, match="slack_idx"):
        compute_ptdf(case.line_from_idx, case.line_to_idx, case.line_x, 5, 7)


def test_adjacency_degree_laplacian():
    from powerzoojax.case import compute_adjacency_matrix, compute_degree_matrix, compute_laplacian_matrix, load_case

    case = load_case("14")
    f, t = np.asarray(case.line_from_idx), np.asarray(case.line_to_idx)
    a = np.asarray(jax.jit(compute_adjacency_matrix, static_argnums=2)(case.line_from_idx, case.line_to_idx, 14))
    expected = np.zeros((14, 14))
    for i, j in zip(f, t):
        expected[i, j] = expected[j, i] = 1.0
    np.testing.assert_array_equal(a, expected)
    d = np.asarray(compute_degree_matrix(a))
    np.testing.assert_array_equal(d, np.diag(expected.sum(axis=1)))
    lap = np.asarray(compute_laplacian_matrix(a), np.float64)
    a_self = expected + np.eye(14)
    deg = a_self.sum(axis=1)
    np.testing.assert_allclose(lap, np.eye(14) - a_self / np.sqrt(np.outer(deg, deg)), atol=1e-6)
    eig = np.linalg.eigvalsh(lap)
    assert eig.min() > -1e-6 and eig.max() < 2.0
    assert abs(eig.min()) < 1e-5  # a connected graph: one zero eigenvalue (eigenvector ∝ sqrt(deg))


def test_build_case_matrices_from_bus_numbers():
    from powerzoojax.case import build_case_matrices, load_case

    case = load_case("14")
    m = build_case_matrices(case.node_ids, case.unit_bus_ids, case.load_bus_ids, case.line_from, case.line_to, case.line_x, 1)
    assert m["slack_bus_idx"] == 0
    np.testing.assert_array_equal(np.asarray(m["line_from_idx"]), np.asarray(case.line_from_idx))
    np.testing.assert_array_equal(np.asarray(m["unit_node_idx"]), np.asarray(case.unit_node_idx))
    np.testing.assert_allclose(np.asarray(m["PTDF"]), np.asarray(case.ptdf), atol=1e-5)
    np.testing.assert_array_equal(np.asarray(m["nodes_units_map"]), np.asarray(case.nodes_units_map))
    np.testing.assert_array_equal(np.asarray(m["nodes_loads_map"]), np.asarray(case.nodes_loads_map))
    assert float(m["adjacency"].sum()) == 2 * 20
    with pytest.raises(ValueError, match=r"bus numbers \[99.0\]"):
        build_case_matrices(case.node_ids, [99], case.load_bus_ids, case.line_from, case.line_to, case.line_x)


# ----------------------------------------------------------------------------- case_to_jax


def test_case_to_jax_builds_the_reference_table():
    from powerzoojax.case import CaseData, case_to_jax, convert_case

    assert convert_case is case_to_jax
    case = case_to_jax(CASE5_TABLES)
    assert isinstance(case, CaseData)
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads, case.base_mva) == (5, 5, 6, 5, 100.0)
    assert case.slack_bus_idx == 0 and int(case.node_type[0]) == 3
    # spec §1.1 table sums for case 5
    assert float(case.node_pd.sum()) == pytest.approx(1000.0)
    assert float(case.node_qd.sum()) == pytest.approx(328.7, abs=1e-3)
    assert float(case.load_d_max.sum()) == 1500.0 and float(case.load_d_min.sum()) == 0.0
    assert float(case.unit_p_max.sum()) == 1530.0
    np.testing.assert_allclose(np.asarray(case.load_d_max), [0, 500, 600, 400, 0])
    np.testing.assert_allclose(np.asarray(case.unit_cost_c), [14, 15, 30, 40, 10], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(case.unit_cost_a), 0.0)
    np.testing.assert_allclose(np.asarray(case.unit_p_min), [5, 10, 20, 10, 20])
    np.testing.assert_allclose(np.asarray(case.line_cap), [400, 1e6, 1e6, 1e6, 1e6, 240])
    np.testing.assert_allclose(np.asarray(case.line_floor), [-400, -1e6, -1e6, -1e6, -1e6, -240])
    np.testing.assert_allclose(np.asarray(case.unit_vg), [1.06, 1.06, 1.01, 1.01, 1.01], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(case.node_x), [0, 3, 4.5, 2, 0])
    injection = np.asarray(case.nodes_units_map) @ np.asarray(DISPATCH) - np.asarray(NODE_LOAD)
    assert float((np.asarray(case.ptdf, np.float64) @ injection)[0]) == pytest.approx(LINE1_FLOW, abs=1e-3)


def test_case_to_jax_cost_polynomial_and_fallbacks():
    from powerzoojax.case import case_to_jax

    tables = json.loads(json.dumps(CASE5_TABLES))
    units = tables["tables"]["units"]
    units["columns"] = ["id", "bus_id", "mc_a", "mc_b", "mc_c", "Pmax", "Pmin", "type"]
    units["rows"] = [[k + 1, b, 0.01 * k, 0.5, 10 + k, 100 + k, 1, "gas"] for k, b in enumerate([1, 1, 3, 4, 5])]
    tables["tables"]["nodes"]["columns"][1] = "kind"  # no "type": the slack falls back to the first node
    tables["tables"]["lines"]["columns"][4] = "reactance"  # no "x": 0.01 p.u.
    case = case_to_jax(tables, slack_bus_id=3)
    assert case.slack_bus_idx == 2
    np.testing.assert_allclose(np.asarray(case.unit_cost_a), [0.0, 0.01, 0.02, 0.03, 0.04], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(np.asarray(case.unit_cost_b), 0.5, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(case.unit_p_max), [100, 101, 102, 103, 104])
    np.testing.assert_allclose(np.asarray(case.unit_q_max), 0.75 * np.asarray(case.unit_p_max), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(case.line_x), 0.01)
    with pytest.raises(ValueError, match="slack_bus_id 9"):
        case_to_jax(tables, slack_bus_id=9)
    del tables["tables"]["loads"]
    with pytest.raises(ValueError, match="lacks tables"):
        case_to_jax(tables)


def test_case_to_jax_per_phase_loads_and_clearcase_objects():
    pd = pytest.importorskip("pandas")
    from powerzoojax.case import case_to_jax

    t = CASE5_TABLES["tables"]
    frames = {k: pd.DataFrame(v["rows"], columns=v["columns"]) for k, v in t.items()}
    nodes = frames["nodes"].drop(columns=["Pd", "Qd"])
    pd_bus = np.array([0, 300, 300, 400, 0.0])
    for k, phase in enumerate("ABC"):
        nodes[f"Pd_{phase}"] = pd_bus * (k + 1) / 6
        nodes[f"Qd_{phase}"] = 0.1 * (k + 1)

    class ClearCase:  # the shape of a PowerZoo case object
        baseMVA = 10.0
        units, lines, loads = frames["units"], frames["lines"], frames["loads"]

    ClearCase.nodes = nodes
    case = case_to_jax(ClearCase())
    assert case.base_mva == 10.0
    np.testing.assert_allclose(np.asarray(case.node_pd), pd_bus, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(case.node_qd), 0.6, rtol=1e-6)
    with pytest.raises(TypeError, match="lacks tables"):
        case_to_jax(object())


# ----------------------------------------------------------------------------- inspection


def test_case_info_tables_and_summary(capsys):
    from powerzoojax.case import CaseInfo, load_case, print_case, print_summary

    case = load_case("5")
    info = CaseInfo(case, name="case5")
    assert info.nodes.data.shape == (5, 10) and info.units.columns[:3] == ["id", "bus_id", "mc_a"]
    np.testing.assert_allclose(info.units.data[:, info.units.columns.index("p_max")], np.asarray(case.unit_p_max))
    np.testing.assert_allclose(info.lines.data[:, info.lines.columns.index("cap")], np.asarray(case.line_cap))
    assert len(info.loads) == 5
    np.testing.assert_allclose(info.get_ptdf_numpy(), np.asarray(case.ptdf))
    assert info.get_adjacency_numpy().sum() == 12
    summary = info.summary()
    assert "5 buses, 5 units, 6 lines (6 in service)" in summary and "sum p_max 1530 MW" in summary
    print_summary(case)
    assert "sum Pd 1000 MW" in capsys.readouterr().out
    print_case(case)
    out = capsys.readouterr().out
    assert "units (5 rows)" in out and "lines (6 rows)" in out
    with pytest.raises(TypeError, match="CaseData"):
        CaseInfo("5")


def test_case_table_dataframe():
    pytest.importorskip("pandas")
    from powerzoojax.case import CaseInfo, load_case

    df = CaseInfo(load_case("14")).lines.df
    assert list(df.columns)[:3] == ["id", "from", "to"] and len(df) == 20


@pytest.fixture
def pyplot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def _drawn_pixels(fig) -> int:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=40)
    import matplotlib.image as mpimg

    buffer.seek(0)
    image = mpimg.imread(buffer)
    return int((np.abs(image[..., :3] - 1.0).sum(axis=-1) > 0.05).sum())


def test_plots_draw_something(pyplot):
    from powerzoojax.case import CasePlotter, load_case, plot_case

    fig, ax = plot_case(load_case("14"), figsize=(4, 3))
    assert _drawn_pixels(fig) > 500 and len(ax.lines) == 20
    plotter = CasePlotter(load_case("5"))
    flows = np.array([214.7, 108.7, -303.4, 64.7, -115.3, -176.6])
    fig, ax = plotter.plot_line_flows(flows, figsize=(4, 3))
    assert _drawn_pixels(fig) > 500 and len(ax.lines) == 6
    fig, ax = plotter.plot_ptdf_heatmap(figsize=(4, 3))
    assert _drawn_pixels(fig) > 500
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        plotter.plot_line_flows(np.zeros(3))


def test_plot_layouts(pyplot):
    from powerzoojax.case import CasePlotter, load_case

    feeder = CasePlotter(load_case("33bw"))
    pos = feeder.layout("tree")
    assert pos.shape == (33, 2) and np.unique(pos, axis=0).shape[0] == 33
    assert pos[0, 1] == 0.0 and (pos[1:, 1] < 0).all()  # the substation on top
    np.testing.assert_array_equal(feeder.layout("auto"), pos)
    mesh = CasePlotter(load_case("14"))
    assert np.unique(np.round(mesh.layout("auto"), 9), axis=0).shape[0] == 14
    with pytest.raises(ValueError, match="not radial"):
        mesh.layout("tree")
    with pytest.raises(ValueError, match="no distinct node coordinates"):
        mesh.layout("coords")
    with pytest.raises(ValueError, match="unknown layout"):
        mesh.layout("circle")
    np.testing.assert_allclose(CasePlotter(__import__("powerzoojax.case", fromlist=["case_to_jax"]).case_to_jax(CASE5_TABLES)).layout("auto"),
                               [[0, 0], [3, 0], [4.5, 1], [2, 2], [0, 2]])


# ----------------------------------------------------------------------------- DC flow on a case


def test_dc_power_flow_on_case_matches_the_golden_and_an_independent_solve():
    import powerzoojax.envs as envs
    from powerzoojax.case import load_case

    case = load_case("5")
    flow, injection, actual = jax.jit(envs.dc_power_flow)(case, jnp.asarray(DISPATCH), jnp.asarray(NODE_LOAD))
    assert float(flow[0]) == pytest.approx(LINE1_FLOW, abs=1e-3)
    np.testing.assert_allclose(np.asarray(actual), DISPATCH)
    np.testing.assert_allclose(np.asarray(injection), [20, -150, -180, -170, 480], atol=1e-4)
    expected = _b_theta_flows(np.asarray(case.line_x, np.float64), np.asarray(case.line_from_idx), np.asarray(case.line_to_idx), 0,
                              np.asarray(injection, np.float64))
    np.testing.assert_allclose(np.asarray(flow), expected, rtol=1e-5, atol=1e-3)


def test_dc_power_flow_on_case_slack_takes_the_imbalance():
    import powerzoojax.envs as envs
    from powerzoojax.case import load_case

    case = load_case("5")
    short = np.array(DISPATCH) - [0, 0, 0, 0, 100]  # 100 MW short
    flow, injection, actual = envs.dc_power_flow(case, jnp.asarray(short), jnp.asarray(NODE_LOAD))
    np.testing.assert_allclose(np.asarray(actual), [90, 130, 20, 10, 500])  # both bus-1 units +50
    assert float(jnp.sum(injection)) == pytest.approx(0.0, abs=1e-3)
    expected = _b_theta_flows(np.asarray(case.line_x, np.float64), np.asarray(case.line_from_idx), np.asarray(case.line_to_idx), 0,
                              np.asarray(case.nodes_units_map) @ np.asarray(actual) - NODE_LOAD)
    np.testing.assert_allclose(np.asarray(flow), expected, rtol=1e-5, atol=1e-3)
    # Batched over dispatches.
    batch = jax.vmap(envs.dc_power_flow, in_axes=(None, 0, None))(case, jnp.stack([jnp.asarray(DISPATCH), jnp.asarray(short)]), jnp.asarray(NODE_LOAD))
    np.testing.assert_allclose(np.asarray(batch[0][1]), np.asarray(flow), rtol=1e-6)


def test_dc_power_flow_with_check_counts_overloads():
    import powerzoojax.envs as envs
    from powerzoojax.case import load_case

    case = load_case("5")
    scale = 1.5
    out = envs.dc_power_flow_with_check(case, scale * jnp.asarray(DISPATCH), scale * jnp.asarray(NODE_LOAD))
    flow, _, _, is_safe, n_violations, cost = out
    cap, floor = np.asarray(case.line_cap), np.asarray(case.line_floor)
    f = np.asarray(flow, np.float64)
    over = np.maximum(f - cap, 0) + np.maximum(floor - f, 0)
    assert int(n_violations) == int((over > 0).sum()) == 1  # line 4-5 beyond its 240 MW
    assert float(cost) == pytest.approx(float(over.sum()), rel=1e-5) and not bool(is_safe)
    assert bool(envs.dc_power_flow_with_check(case, jnp.asarray(DISPATCH), jnp.asarray(NODE_LOAD))[3])
