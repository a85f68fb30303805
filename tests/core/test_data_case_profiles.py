"""case_load_profiles: a real demand shape scaled onto any case's loads, fed to TransGridEnv."""

import numpy as np
import pytest


@pytest.mark.parametrize("case_id", ["5", "14", "33bw", "118", "141", "300"])
def test_mean_scaling_on_every_shipped_case(case_id):
    from powerzoojax.case import load_case
    from powerzoojax.data import DataLoader, case_load_profiles

    case = load_case(case_id)
    profile = case_load_profiles(case, split="iid")
    nominal = 0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
    assert profile.shape == (61 * 48, case.n_loads) and profile.dtype == np.float32
    assert np.isfinite(np.asarray(profile)).all()
    np.testing.assert_allclose(np.asarray(profile, np.float64).mean(0), nominal, rtol=1e-5, atol=1e-5)
    shape = DataLoader().load_signals(["load.actual_mw"], split="iid").values[:, 0]
    loaded = np.flatnonzero(nominal != 0)[0]
    np.testing.assert_allclose(np.asarray(profile)[:, loaded] / nominal[loaded], shape / shape.mean(), rtol=1e-5)


def test_minmax_scaling_spans_each_load_range(case5):
    from powerzoojax.data import case_load_profiles

    profile = np.asarray(case_load_profiles(case5, source="simbench", scaling="minmax",
                                            start_date="2016-12-01", end_date="2016-12-07"))
    d_min, d_max = np.asarray(case5.load_d_min), np.asarray(case5.load_d_max)
    np.testing.assert_allclose(profile.min(0), d_min, atol=1e-3)
    np.testing.assert_allclose(profile.max(0), d_max, atol=1e-3)
    assert profile.shape == (7 * 48, case5.n_loads)


def test_helper_errors(case5):
    from powerzoojax.data import case_load_profiles

    with pytest.raises(ValueError, match=r"Unknown scaling 'log'; valid choices: mean, minmax"):
        case_load_profiles(case5, scaling="log")
    with pytest.raises(ValueError, match=r"scaling='minmax' needs a non-constant series"):
        case_load_profiles(case5, source="simbench", signal="solar.available_pu", scaling="minmax",
                           start_date="2016-01-01T00:00", end_date="2016-01-01T02:00")
    with pytest.raises(ValueError, match=r"scaling='mean' needs a series with positive mean"):
        case_load_profiles(case5, source="simbench", signal="solar.available_pu",
                           start_date="2016-01-01T00:00", end_date="2016-01-01T02:00")
    with pytest.raises(ValueError, match=r"Unknown signal 'load'"):
        case_load_profiles(case5, signal="load")


def test_profile_feeds_make_trans_params_and_env_steps(case5):
    grid = pytest.importorskip("powerzoojax.grid", reason="TransGridEnv is provided by pzj-grid")
    del grid
    import equinox as eqx
    import jax.numpy as jnp
    import jax.random as jr
    from powerzoojax.data import case_load_profiles
    from powerzoojax.envs import TransGridEnv, make_trans_params

    profile = case_load_profiles(case5, start_date="2014-01-15", end_date="2014-01-15")  # heatwave day
    params = make_trans_params(case5, load_profiles=profile, max_steps=4)
    assert params.load_profiles.shape == (48, case5.n_loads)
    env = TransGridEnv()
    obs, state = env.reset(jr.PRNGKey(0), params)
    step = eqx.filter_jit(env.step)
    action = jnp.zeros(env.action_dim(params), jnp.float32)
    for t in range(3):
        obs, state, reward, _costs, _done, _info = step(jr.PRNGKey(t + 1), state, action, params)
        assert np.isfinite(float(reward)) and np.isfinite(np.asarray(obs)).all()
        # DC balance: the units (slack included) serve this step's real load row.
        assert float(state.unit_power_mw.sum()) == pytest.approx(float(profile[t].sum()), rel=1e-4)
    assert float(profile[:, 1].max()) > float(profile[:, 1].min()) * 1.3  # a real daily shape
