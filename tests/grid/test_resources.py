"""Standalone device envs and bundle factories (spec §4)."""

import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

ENV_NAMES = ["BatteryEnv", "RenewableEnv", "SolarEnv", "WindEnv", "FlexLoadEnv", "VehicleEnv"]


@pytest.mark.parametrize("name", ENV_NAMES)
def test_standalone_env_conformance(name):
    import powerzoojax.grid as grid
    from powerzoojax.testing import check_env_api, check_no_retrace

    env = getattr(grid, name)()
    params = env.default_params()
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}


def test_battery_env_discharges_until_soc_min():
    from powerzoojax.grid import BatteryEnv, make_battery_params

    env, params = BatteryEnv(), make_battery_params(energy_mwh=10.0, power_mw=5.0, max_steps=10)
    _, s = env.reset(jr.PRNGKey(0), params)
    for _ in range(8):
        obs, s, _, costs, _, info = env.step(jr.PRNGKey(1), s, jnp.ones(1), params)
    assert np.isclose(float(s.soc), 0.1, atol=1e-5)
    assert float(info["cost_action_clip"]) > 0.9  # wanted 5 MW, got 0


def test_renewable_bundle_obs_and_injection():
    from powerzoojax.case import load_case
    from powerzoojax.grid import make_renewable_bundle

    b = make_renewable_bundle(load_case("33bw"), [6, 7], cf_profiles=np.full(4, 0.5))
    s = b.reset(jr.PRNGKey(0))
    s, p, q, obs, info = b.step(s, jnp.array([1.0, 1.0, 0.0, -1.0]), {})
    np.testing.assert_allclose(np.asarray(p), [0.1, 0.05], atol=1e-6)
    assert np.isclose(float(q[0]), np.sqrt(0.22**2 - 0.1**2), atol=1e-5) and float(q[1]) <= 0
    assert obs.shape == (8,) and np.asarray(b.bus_idx).tolist() == [5, 6]


def test_battery_bundle_observe_zeroes_power_quirk():
    from powerzoojax.grid import make_battery_bundle

    b = make_battery_bundle(n_devices=2, power_mw=1.0, energy_mwh=2.0, enable_q_control=True)
    s = b.reset(jr.PRNGKey(0))
    s, p, q, obs, info = b.step(s, jnp.array([1.0, 0.0, -1.0, 0.5]), {})
    assert float(p[0]) == pytest.approx(1.0) and float(obs[1]) == pytest.approx(1.0)
    assert np.all(np.asarray(b.observe(s, {})).reshape(2, 3)[:, 1:] == 0)
    assert float(info["cost_sum"]) >= 0


@pytest.mark.parametrize(
    "factory, kwargs, match",
    [
        ("make_battery_bundle", {"bus_ids": [999]}, "bus id 999 is not in the case; valid bus ids are 1..33"),
        ("make_flexload_bundle", {"bus_ids": [2, 3], "cap_curtail_mw": [0.1, 0.2, 0.3]}, "length n_devices=2"),
        ("make_renewable_bundle", {"bus_ids": [2], "capacity_mw": -1.0}, "capacity_mw must be > 0"),
        ("make_battery_bundle", {"bus_ids": [2], "initial_soc": 0.95}, "initial_soc"),
        ("make_diesel_bundle", {"bus_ids": [2], "p_min_norm": 2.0}, "p_min_norm"),
    ],
)
def test_bundle_factory_errors(factory, kwargs, match):
    import powerzoojax.grid as grid
    from powerzoojax.case import load_case

    with pytest.raises(ValueError, match=match):
        getattr(grid, factory)(load_case("33bw"), **kwargs)


def test_make_battery_params_rejects_bad_soc():
    from powerzoojax.grid import make_battery_params

    with pytest.raises(ValueError, match="soc_min < soc_max"):
        make_battery_params(soc_min=0.9, soc_max=0.1)


def test_renewable_params_take_a_list_of_capacity_factors():
    from powerzoojax.grid import make_renewable_params

    params = make_renewable_params(cf_profile=[0.1, 0.2, 0.3])
    np.testing.assert_allclose(np.asarray(params.cf_profile), [0.1, 0.2, 0.3], rtol=1e-6)
    with pytest.raises(ValueError, match=r"make_renewable_params: capacity factors must be a non-empty finite sequence in \[0, 1\], got \[0.1, 1.5\]"):
        make_renewable_params(cf_profile=[0.1, 1.5])
