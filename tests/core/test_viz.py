"""powerzoojax.viz: network and episode pictures rendered headlessly (Agg), checked for
size and for actually drawn content, the layouts, the GIF writer and the error messages."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("matplotlib")


def _ink(fig) -> tuple[tuple[int, int, int], float, float]:
    """``(image shape, fraction of non-white pixels, pixel std)`` of a rendered figure."""
    from powerzoojax.viz import figure_to_rgb

    img = figure_to_rgb(fig)
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    ink = float(np.mean(np.any(img < 245, axis=2)))
    return img.shape, ink, float(img.std())


def _assert_drawn(fig, min_ink: float = 0.02) -> np.ndarray:
    from powerzoojax.viz import figure_to_rgb

    shape, ink, std = _ink(fig)
    width, height = fig.get_size_inches() * fig.dpi
    assert shape == (round(height), round(width), 3)
    assert ink > min_ink and std > 10.0, (ink, std)
    return figure_to_rgb(fig)


def _dc_state(case):
    """Flows of a proportional dispatch through the PTDF: a DC state as a dict."""
    p_max = np.asarray(case.unit_p_max, np.float64)
    load = np.asarray(case.node_pd, np.float64)
    units = p_max / p_max.sum() * load.sum()
    injection = np.bincount(np.asarray(case.unit_node_idx), weights=units, minlength=case.n_nodes) - load
    return {"line_flow_mw": np.asarray(case.ptdf, np.float64) @ injection, "unit_power_mw": units,
            "vm": np.ones(case.n_nodes)}


def test_plot_network_of_a_dc_state_colours_rated_lines_by_loading(case5):
    from powerzoojax.viz import network_quantities, plot_network

    state = _dc_state(case5)
    q = network_quantities(case5, state)
    cap = np.abs(np.asarray(case5.line_cap, np.float64))
    rated = cap < 1e6
    assert rated.sum() == 2 and not q.ac and q.vm is None  # flat voltages: a DC state
    np.testing.assert_allclose(q.loading[rated], np.abs(state["line_flow_mw"])[rated] / cap[rated])
    assert np.all(np.isnan(q.loading[~rated]))
    fig = plot_network(case5, state)
    with_state = _assert_drawn(fig)
    assert len(fig.axes) == 2  # the network and the loading colour bar
    topology = _assert_drawn(plot_network(case5))
    assert with_state.shape == topology.shape and np.mean(with_state != topology) > 0.01


def test_plot_network_of_an_ac_state_colours_buses_by_voltage(case5):
    from powerzoojax.viz import network_quantities, plot_network

    state = _dc_state(case5)
    state["vm"] = np.linspace(0.95, 1.05, case5.n_nodes)
    state["line_flow_q_mw"] = np.full(case5.n_lines, 10.0)
    q = network_quantities(case5, state)
    assert q.ac
    np.testing.assert_allclose(q.vm, state["vm"])
    np.testing.assert_allclose(q.flow, np.hypot(state["line_flow_mw"], 10.0))
    fig = plot_network(case5, state)
    _assert_drawn(fig)
    labels = {ax.get_ylabel() for ax in fig.axes[1:]}
    assert labels == {"|V| [p.u.]", "|S| / rating (rated lines)"}


@pytest.mark.requires("powerzoojax.grid")
def test_plot_network_reads_a_transmission_env_state_through_its_wrapper_state(trans5):
    import jax.random as jr

    from powerzoojax.viz import network_quantities, plot_network

    env, params = trans5
    _, state = env.reset(jr.PRNGKey(0), params)
    q = network_quantities(params.case, type("WrapperState", (), {"env_state": state})())
    np.testing.assert_allclose(q.flow, np.abs(np.asarray(state.line_flow_mw)), rtol=1e-6)
    np.testing.assert_allclose(q.unit_power, np.asarray(state.unit_power_mw), rtol=1e-6)
    assert not q.ac
    _assert_drawn(plot_network(params.case, state))


@pytest.mark.requires("powerzoojax.grid")
def test_radial_feeder_without_coordinates_gets_a_tree_layout_and_branch_flows(case33bw_dist):
    import jax.random as jr

    from powerzoojax.viz import network_layout, network_quantities, plot_network

    env, params, case = case33bw_dist
    assert np.unique(np.column_stack([np.asarray(case.node_x), np.asarray(case.node_y)]), axis=0).shape[0] < case.n_nodes
    pos = network_layout(case)
    # Layered from the slack: depths are whole numbers, the slack on top, no two buses on one point.
    assert np.allclose(pos[:, 1], np.round(pos[:, 1])) and pos[case.slack_bus_idx, 1] == pos[:, 1].max()
    assert np.unique(pos, axis=0).shape[0] == case.n_nodes
    _, state = env.reset(jr.PRNGKey(0), params)
    q = network_quantities(case, state)
    assert q.ac and q.vm.shape == (case.n_nodes,) and q.vm.min() < 1.0
    line_idx = np.asarray(params.network.line_idx)
    expected = float(case.base_mva) * np.hypot(np.asarray(state.p_branch), np.asarray(state.q_branch))
    np.testing.assert_allclose(q.flow[line_idx], expected, rtol=1e-6)
    open_lines = np.setdiff1d(np.arange(case.n_lines), line_idx)
    assert open_lines.size == 5 and np.all(q.flow[open_lines] == 0.0)
    fig = plot_network(case, state)
    _assert_drawn(fig)
    assert "|V| [p.u.]" in {ax.get_ylabel() for ax in fig.axes}


@pytest.fixture(scope="module")
def case33bw_dist():
    pytest.importorskip("powerzoojax.grid")
    from powerzoojax.case import load_case
    from powerzoojax.grid import DistGridEnv, make_dist_params

    case = load_case("33bw")
    return DistGridEnv(), make_dist_params(case, max_steps=4), case


def test_meshed_case_without_coordinates_gets_a_deterministic_spring_layout():
    from powerzoojax.case import load_case
    from powerzoojax.case._inspect import _adjacency
    from powerzoojax.viz import network_layout

    case = load_case("14")
    pos = network_layout(case)
    np.testing.assert_array_equal(pos, network_layout(case))
    assert pos.shape == (14, 2) and np.all(np.isfinite(pos))
    dist = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    adjacency = _adjacency(case, in_service_only=True) > 0
    off_diagonal = ~np.eye(14, dtype=bool)
    assert dist[off_diagonal].min() > 0.02  # no two buses drawn on one another
    # Connected buses end up closer than unconnected ones, on average.
    assert dist[adjacency].mean() < 0.6 * dist[off_diagonal & ~adjacency].mean()
    with pytest.raises(ValueError, match="layout='tree' but the in-service lines are not a tree"):
        network_layout(case, "tree")
    with pytest.raises(ValueError, match="layout='coords' but the case has no distinct bus coordinates"):
        network_layout(case, "coords")


def test_plot_network_rejects_a_batch_a_wrong_shape_and_a_non_case(case5):
    from powerzoojax.viz import plot_network

    state = _dc_state(case5)
    with pytest.raises(ValueError, match=r"draws one state: line_flow_mw has shape \(3, 6\)"):
        plot_network(case5, {"line_flow_mw": np.stack([state["line_flow_mw"]] * 3)})
    with pytest.raises(ValueError, match=r"vm has shape \(4,\), expected \(5,\)"):
        plot_network(case5, {"vm": np.ones(4)})
    with pytest.raises(TypeError, match="CaseData"):  # beartype's check in the suite, ours without it
        plot_network({"line_flow_mw": state["line_flow_mw"]})


def test_figure_to_rgb_keeps_the_figures_own_canvas():
    import matplotlib.pyplot as plt

    from powerzoojax.viz import figure_to_rgb

    fig, ax = plt.subplots(figsize=(2, 1), dpi=50)
    ax.plot([0, 1], [0, 1])
    canvas = fig.canvas
    assert figure_to_rgb(fig).shape == (50, 100, 3)
    assert fig.canvas is canvas
    plt.close(fig)


@pytest.fixture(scope="module")
def toy_trajectory(toy):
    import jax.random as jr

    from powerzoojax.testing import record_trajectory

    env, params = toy
    actions = jr.uniform(jr.PRNGKey(1), (params.max_steps, 1), minval=-1.0, maxval=1.0)
    traj, _ = record_trajectory(env, params, jr.PRNGKey(2), actions)
    return traj


def test_plot_episode_of_a_recorded_trajectory_draws_reward_and_labelled_costs(toy_trajectory):
    from powerzoojax.viz import episode_series, plot_episode

    s = episode_series(toy_trajectory, cost_names=("out_of_band",), cost_units=("p.u.",))
    assert s.n_steps == 8 and s.costs.shape == (8, 1)
    # State fields are those each step returned, NaN on the terminal step (already a reset).
    assert np.all(np.isfinite(s.states["x"][:-1])) and np.isnan(s.states["x"][-1])
    fig = plot_episode(toy_trajectory, cost_names=("out_of_band",), cost_units=("p.u.",))
    _assert_drawn(fig)
    labels = [text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()]
    assert any(label.startswith("out_of_band [p.u.]") for label in labels), labels
    assert [ax.get_ylabel() for ax in fig.axes] == ["reward per step\n[env units]", "cost per step"]


def test_plot_episode_of_rollout_outputs_and_of_an_eval_trace_file(toy, tmp_path):
    import jax
    import jax.random as jr

    from powerzoojax.core import bind_step, rollout
    from powerzoojax.viz import episode_series, plot_episode

    env, params = toy
    _, state = env.reset(jr.PRNGKey(0), params)
    actions = np.zeros((params.max_steps, 1), np.float32)
    out = jax.jit(lambda k, s: rollout(bind_step(env, params), k, s, actions))(jr.PRNGKey(1), state)
    s = episode_series(out, cost_names=("out_of_band",))
    np.testing.assert_array_equal(s.reward, np.asarray(out[2][1], np.float64))
    assert s.cost_units == ("env units",)

    # The eval command's trace: flat arrays plus the labels, info and state entries.
    T, G, N = 6, 5, 5
    path = tmp_path / "episode.npz"
    np.savez(
        path, reward=-np.arange(T, dtype=np.float32), constraint_costs=np.ones((T, 2), np.float32),
        cost_names=np.asarray(["thermal_overload", "power_balance"]), cost_units=np.asarray(["MW·step", "MW·step"]),
        done=np.arange(T) == T - 1, delta_t_hours=np.float32(0.5), load_mw=np.full((T, 3), 100.0),
        **{"state/unit_power_mw": np.full((T, G), 60.0), "info/bus_lmp": np.tile(np.linspace(10, 30, N), (T, 1))},
    )
    s = episode_series(str(path))
    assert s.time[-1] == pytest.approx(2.5) and s.time_label == "time [h]"
    np.testing.assert_allclose(s.load, 300.0)
    fig = plot_episode(path)
    _assert_drawn(fig)
    assert [ax.get_ylabel() for ax in fig.axes] == [
        "power [MW]", "unit output [MW]", "price [$/MWh]", "reward per step\n[env units]", "cost per step"]


def test_episode_series_rejects_a_batch_and_unknown_inputs():
    from powerzoojax.viz import episode_series

    with pytest.raises(ValueError, match=r"reward has shape \(2, 5\); one episode is expected"):
        episode_series({"reward": np.zeros((2, 5))})
    with pytest.raises(ValueError, match="has no 'reward' series"):
        episode_series({"obs": np.zeros((5, 2))})
    with pytest.raises(TypeError, match="trace must be a Trajectory"):
        episode_series(3.0)


def test_animate_episode_writes_a_gif_with_one_frame_per_step(case5, tmp_path):
    from PIL import Image

    from powerzoojax.viz import animate_episode

    T = 5
    state = _dc_state(case5)
    scale = np.linspace(0.5, 1.4, T)[:, None]
    trace = {
        "reward": -np.linspace(1.0, 2.0, T), "constraint_costs": np.zeros((T, 1)), "cost_names": ["thermal_overload"],
        "state/line_flow_mw": scale * state["line_flow_mw"], "state/unit_power_mw": scale * state["unit_power_mw"],
    }
    path = animate_episode(trace, tmp_path / "episode.gif", case=case5, fps=5)
    assert os.path.getsize(path) > 1000
    with Image.open(path) as gif:
        assert gif.n_frames == T
        frames = []
        for i in (0, T - 1):
            gif.seek(i)
            frames.append(np.asarray(gif.convert("RGB"), np.int16))
    assert frames[0].shape[0] > 100 and frames[0].std() > 10
    assert np.mean(np.any(frames[0] != frames[1], axis=2)) > 0.005  # the network and the cursor move
    # Without a case the time series alone are animated; frames are capped by max_frames.
    with Image.open(animate_episode(trace, tmp_path / "series.gif", max_frames=3)) as gif:
        assert gif.n_frames == 3
    with pytest.raises(ValueError, match=r"path must name a \.gif file"):
        animate_episode(trace, tmp_path / "episode.mp4", case=case5)
    with pytest.raises(ValueError, match="max_frames must be a positive integer, got 0"):
        animate_episode(trace, tmp_path / "x.gif", max_frames=0)


def test_viz_imports_without_matplotlib_and_names_the_extra():
    code = textwrap.dedent(
        """
        import sys, importlib.abc
        class HideMatplotlib(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "matplotlib" or name.startswith("matplotlib."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, HideMatplotlib())
        import powerzoojax.viz as viz
        from powerzoojax.case import load_case
        try:
            viz.plot_network(load_case("5"))
        except ImportError as e:
            print("ERR", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "ERR plot_network needs matplotlib: pip install 'pzj-core[viz]'" in out.stdout, out.stderr


def _legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    return [] if legend is None else [text.get_text() for text in legend.get_texts()]


def test_plot_episode_reads_as_a_power_engineer_expects(case5):
    """A flat 750 MW episode with float noise: the power axis starts at 0 with no offset and
    draws the load; a slack unit past its rating is marked; the reward has its unit; the
    legends sit beside the panels, not over the curves."""
    from powerzoojax.viz import plot_episode

    T = 8
    rng = np.random.default_rng(0)
    dispatch = np.tile([64.0, 100.0, 270.0, 10.0, 306.0], (T, 1)) + rng.normal(0.0, 4e-5, (T, 5))  # unit 0: 64 of 40 MW
    trace = {"reward": np.full(T, -80.0), "constraint_costs": np.full((T, 1), 24.0), "cost_names": np.asarray(["power_balance"]),
             "cost_units": np.asarray(["MW"]), "load_mw": np.full(T, 750.0), "delta_t_hours": np.float32(0.5),
             "reward_unit": np.asarray("−0.01 × generation cost [$/h]"), "state/unit_power_mw": dispatch}
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plot_episode(trace, case=case5)
    FigureCanvasAgg(fig).draw()  # offsets and legend positions are computed at draw time
    power, units, reward, _ = fig.axes
    assert power.get_ylim()[0] == 0.0 and power.yaxis.get_major_formatter().get_offset() == ""
    assert _legend_texts(power) == ["load", "generation (Σ units)"]
    texts = _legend_texts(units)
    assert "unit 0 [5, 40] MW" in texts and "outside its limits (8 steps)" in texts
    assert reward.get_ylabel() == "reward per step\n[−0.01 × generation cost [$/h]]"
    for ax in fig.axes:  # every legend lies to the right of its axes
        legend = ax.get_legend()
        assert legend is not None
        assert legend.get_window_extent().x0 >= ax.get_window_extent().x1
    with pytest.raises(ValueError, match="the case has 5 units, the episode's dispatch 3"):
        plot_episode({"reward": np.zeros(T), "state/unit_power_mw": np.zeros((T, 3))}, case=case5)


def test_plot_network_labels_every_bus_clear_of_the_slack_box_and_flows_on_lines(case5):
    from powerzoojax.viz import plot_network

    state = _dc_state(case5)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plot_network(case5, state)
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    texts = [t for t in ax.texts]
    bus_labels = {t.get_text(): t for t in texts if t.get_text() in {"1", "2", "3", "4", "5"}}
    assert set(bus_labels) == {"1", "2", "3", "4", "5"} and all(t.get_fontsize() >= 8 for t in bus_labels.values())
    # Bus 1's label starts beyond the slack box drawn around it.
    slack = ax.collections[2]  # lines, buses, then the slack box
    centre = ax.transData.transform(slack.get_offsets()[0])
    half_side = 0.5 * np.sqrt(slack.get_sizes()[0]) * fig.dpi / 72.0
    assert bus_labels["1"].get_window_extent().x0 >= centre[0] + half_side
    # Every in-service line carries its MW and an arrow.
    flow = np.abs(state["line_flow_mw"])
    flow_texts = sorted(float(t.get_text()) for t in texts if t.get_text() not in bus_labels and t.get_text())
    np.testing.assert_allclose(flow_texts, np.sort(flow), rtol=5e-3)
    arrows = [t for t in texts if t.arrow_patch is not None]
    assert len(arrows) == case5.n_lines
    legend = _legend_texts(ax)
    assert "slack bus" in legend and "unrated line (no loading)" in legend
    assert any(t.startswith("units' output: ring grows with it") for t in legend)
    assert any("MW, arrow = P direction" in t for t in legend)


def test_an_unrated_case_colours_by_flow_and_labels_its_buses(case118):
    from powerzoojax.viz import plot_network

    fig = plot_network(case118, _dc_state(case118))
    assert [ax.get_ylabel() for ax in fig.axes[1:]] == ["|P| [MW] (the case rates no line)"]
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert len(labels) == case118.n_nodes and "69" in labels


def test_plot_network_title_counts_in_the_singular():
    from powerzoojax.case import load_case
    from powerzoojax.viz import plot_network

    case = load_case("33bw")
    assert case.n_units == 1
    fig = plot_network(case)
    assert fig.axes[0].get_title().endswith("1 unit (no state)")
    assert len(fig.axes) == 1  # no state, no colour bar
