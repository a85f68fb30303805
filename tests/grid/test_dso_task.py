"""DSO task (spec §3.4): layout, data, baselines, metrics."""

import functools

import jax
import jax.random as jr
import numpy as np
import pytest


@functools.lru_cache(maxsize=None)
def _task():
    from powerzoojax.grid.tasks.dso import DSOTask

    return DSOTask()


@functools.lru_cache(maxsize=None)
def _baseline_fn(name):
    task = _task()
    env = task.make_env()
    return jax.jit(lambda p, k: task.baseline_rollout(env, p, k, name))


def test_layout_and_protocol():
    from powerzoojax.core import TaskSpec

    task = _task()
    assert isinstance(task, TaskSpec)
    params = task.make_params("iid", 0)
    env = task.make_env()
    assert env.obs_dim(params) == 195 and env.action_dim(params) == 12
    assert params.resources[0].obs_dim == 30
    assert np.asarray(params.resources[0].bus_idx).tolist() == [5, 13, 17, 21, 27, 32]
    np.testing.assert_allclose(np.asarray(params.resources[0].cap_curtail_mw), [0.165, 0.11, 0.11, 0.088, 0.132, 0.11])
    assert float(params.v_slack) == pytest.approx(1.045) and float(params.v_min) == pytest.approx(0.94)
    assert task.constraint_spec().selected_names == ("voltage_violation",)
    assert task.baseline_names()[0] == "no_control"


def test_conformance():
    from powerzoojax.testing import check_env_api, check_no_retrace

    task = _task()
    params = task.make_params("iid", 0, max_steps=3)
    env = task.make_env()
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}


def test_feeder_totals_preserved_by_bus_multipliers():
    task = _task()
    case = task.case
    ids = np.asarray(case.node_ids)
    p_nom = np.asarray(case.node_pd, np.float64) / float(case.base_mva) * 0.83
    for buses in ((2, 18), (19, 22), (23, 33)):
        m = (ids >= buses[0]) & (ids <= buses[1])
        assert np.isclose(task._base_p[m].sum(), p_nom[m].sum())
    # End-of-feeder buses carry relatively less than before.
    assert task._base_p[32] / task._base_p[31] < p_nom[32] / p_nom[31]


def test_profiles_follow_the_feeder_shape():
    from powerzoojax.grid.tasks.dso import feeder_shapes

    task = _task()
    params = task.make_params("iid", 100, max_steps=48)
    shapes = feeder_shapes("iid")
    p = np.asarray(params.p_load_profiles)
    np.testing.assert_allclose(p[:, 2] / task._base_p[2], shapes[100:148, 0], rtol=1e-5)  # bus 3: feeder A
    np.testing.assert_allclose(p[:, 25] / task._base_p[25], shapes[100:148, 2], rtol=1e-5)  # bus 26: feeder C
    assert np.allclose(shapes.mean(axis=0), 1.0)


def test_baselines_run_and_droop_reduces_violations():
    task = _task()
    # A peak-load December window where the unmanaged feeder leaves the band.
    params = task.make_params("summer_ood", 1022)
    traces = {name: _baseline_fn(name)(params, jr.PRNGKey(0)) for name in task.baseline_names()}
    metrics = {name: task.compute_metrics(tr, traces["no_control"]) for name, tr in traces.items()}
    assert metrics["no_control"]["voltage_violations"] > 0
    assert metrics["droop"]["voltage_violations"] < metrics["no_control"]["voltage_violations"]
    assert metrics["no_control"]["curtailed_mwh"] == 0.0
    # TOU acts only on day steps 16..20: 5 steps × Σ 0.8·cap curtailment × 0.5 h.
    expected = 5 * 0.8 * sum(task.caps_mw) * 0.5
    assert metrics["tou"]["curtailed_mwh"] == pytest.approx(expected, rel=1e-4)
    assert metrics["tou"]["served_flex_ratio"] == pytest.approx(1.0, abs=1e-4)
    for m in metrics.values():
        assert np.isfinite(m["total_reward"]) and m["total_loss_mwh"] > 0


def test_episode_params_strategies():
    task = _task()
    p0 = task.episode_params("iid", 0, 4, 48)
    p3 = task.episode_params("iid", 3, 4, 48)
    ps = task.episode_params("train", 0, 1, 48, strategy="seeded", seed=1)
    assert not np.allclose(np.asarray(p0.p_load_profiles), np.asarray(p3.p_load_profiles))
    assert ps.p_load_profiles.shape == (48, 33)
    with pytest.raises(ValueError, match="strategy"):
        task.episode_params("iid", 0, 1, 48, strategy="bogus")
    with pytest.raises(ValueError, match="unknown split"):
        task.make_params("nope")
