"""DERs task (spec §3.5): layout, local observations, volt_droop baseline."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


@functools.lru_cache(maxsize=None)
def _setup():
    from powerzoojax.grid.tasks.ders import DERsTask

    task = DERsTask()
    return task, task.make_env(), task.make_params("iid", 0)


def test_layout():
    from powerzoojax.core import TaskSpec

    task, env, params = _setup()
    assert isinstance(task, TaskSpec)
    assert sum(b.obs_dim for b in params.resources) == 48
    assert env.action_dim(params) == 24
    assert env.obs_dim(params) == 3 * 141 + 2 * 140 + 2 + 48
    batt, pv, flex = params.resources
    assert np.asarray(batt.bus_idx).tolist() == [8, 54, 16, 121]
    assert np.asarray(pv.bus_idx).tolist() == [5, 72, 71, 81]
    assert np.asarray(flex.bus_idx).tolist() == [40, 69, 134, 23]
    assert (batt.per_device_obs_dim, pv.per_device_obs_dim, flex.per_device_obs_dim) == (3, 4, 5)
    stress = task.make_params("load_stress", 0)
    np.testing.assert_allclose(np.asarray(stress.p_load_profiles), 1.15 * np.asarray(params.p_load_profiles), rtol=1e-5)
    assert float(task.make_params("voltage_tightening", 0).v_min) == pytest.approx(0.96)


def test_local_observations_match_hand_computation():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order

    from powerzoojax.grid.tasks.ders import local_observations, make_local_obs_layout

    task, env, params = _setup()
    obs, state = env.reset(jr.PRNGKey(0), params)
    obs, state, *_ = env.step(jr.PRNGKey(1), state, jnp.full((24,), 0.3), params)
    layout = make_local_obs_layout(params)
    local = np.asarray(jax.jit(local_observations)(obs, layout))
    assert local.shape == (12, 15)

    case = task.case
    n = case.n_nodes
    on = np.asarray(case.line_status) > 0
    f, t = np.asarray(case.line_from_idx)[on], np.asarray(case.line_to_idx)[on]
    adj = coo_matrix((np.ones(2 * f.size), (np.r_[f, t], np.r_[t, f])), shape=(n, n)).tocsr()
    adj.sort_indices()
    o = np.asarray(obs)
    v = (np.asarray(state.v_mag) - 1.0) / 0.1
    dev_obs = o[3 * n + 2 * 140 + 2 :]
    dims = [3] * 4 + [4] * 4 + [5] * 4
    starts = np.cumsum([0] + dims[:-1])
    buses = [8, 54, 16, 121, 5, 72, 71, 81, 40, 69, 134, 23]
    for a, bus in enumerate(buses):
        order = breadth_first_order(adj, bus, directed=False, return_predecessors=False)[1:5]
        row = np.concatenate([
            [v[bus]], v[order], [v.min(), v.max(), v.mean()], o[3 * n + 280 : 3 * n + 282],
            np.pad(dev_obs[starts[a] : starts[a] + dims[a]], (0, 5 - dims[a])),
        ])
        np.testing.assert_allclose(local[a], row, atol=1e-5, err_msg=f"agent {a}")


@pytest.mark.slow
def test_conformance():
    # case141 with 12 devices: several compilations; the same env code (DistGridEnv +
    # bundles) passes the kit on case33bw in test_dist_resources.py.
    from powerzoojax.testing import check_env_api, check_no_retrace

    task, env, _ = _setup()
    short = task.make_params("iid", 0, max_steps=2)
    check_env_api(env, short)
    assert check_no_retrace(env, short, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}


def test_droop_baseline():
    task, env, _ = _setup()
    params = task.make_params("pv_penetration_shift", 0)
    traces = {name: task.baseline_rollout(env, params, jr.PRNGKey(0), name) for name in task.baseline_names()}
    m = task.compute_metrics(traces["volt_droop"], traces["no_control"])
    assert np.isfinite(m["total_reward"]) and "loss_reduction_pct" in m
    assert traces["volt_droop"].action.shape == (48, 24)
    assert task.constraint_spec().fallback_weights == (4.0, 1.0, 1.0)
