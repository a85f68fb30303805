"""Reference checkpoint constants of the benchmark tasks on their default case ids (the
reference benchmark tables): TSO obs 410 / action 108 (case 118), DSO obs 195 / action 12
(case 33bw), DERs 12 agents with local obs 15 (case 141), microgrid obs 24."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np


def test_tso_case118_obs_410_action_108():
    from powerzoojax.case import load_case
    from powerzoojax.tasks import get_task

    task = get_task("tso")
    params = task.make_params("iid")
    env = task.make_env()
    assert (env.obs_dim(params), env.action_dim(params)) == (410, 108)
    default = load_case("118")
    assert (params.case.n_units, params.case.n_lines) == (default.n_units, default.n_lines) == (54, 186)
    np.testing.assert_array_equal(params.case.unit_p_max, default.unit_p_max)
    assert float(np.sum(params.case.unit_p_max)) == 9634.0


def test_dso_case33bw_obs_195_action_12():
    from powerzoojax.tasks import get_task

    task = get_task("dso")
    params = task.make_params("iid", 0)
    env = task.make_env()
    assert (env.obs_dim(params), env.action_dim(params)) == (195, 12)
    assert params.resources[0].obs_dim == 30


def test_ders_case141_12_agents_local_obs_15():
    from powerzoojax.grid.tasks.ders import local_observations, make_local_obs_layout
    from powerzoojax.tasks import get_task

    task = get_task("ders")
    env, params = task.make_env(), task.make_params("iid", 0)
    assert sum(bundle.n_devices for bundle in params.resources) == 12
    assert sum(bundle.obs_dim for bundle in params.resources) == 48
    assert env.action_dim(params) == 24
    obs, _ = env.reset(jr.PRNGKey(0), params)
    local = jax.jit(local_observations)(obs, make_local_obs_layout(params))
    assert local.shape == (12, 15)
    assert bool(jnp.all(jnp.isfinite(local)))


def test_dc_microgrid_obs_24():
    from powerzoojax.envs import DataCenterMicrogridEnv, make_dcmicrogrid_params

    env, params = DataCenterMicrogridEnv(), make_dcmicrogrid_params()
    assert env.observation_space(params).shape == (24,)
    obs, _ = env.reset(jr.PRNGKey(0), params)
    assert obs.shape == (24,)
