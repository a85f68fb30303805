"""One test per error message of make_trans_params and TransGridEnv.step."""

import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def test_profile_wrong_shape(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match=r"load_profiles must have shape \(T, n_loads\) = \(T, 5\).*got shape \(48, 4\)"):
        make_trans_params(case5, load_profiles=np.ones((48, 4)))


def test_profile_one_dimensional(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match=r"got shape \(5,\)"):
        make_trans_params(case5, load_profiles=np.ones(5))


def test_profile_non_finite(case5):
    from powerzoojax.envs import make_trans_params

    profiles = np.ones((10, 5))
    profiles[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"load_profiles must be finite; found nan at row 3, load 2"):
        make_trans_params(case5, load_profiles=profiles)


def test_profile_non_numeric(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match="load_profiles must be numeric"):
        make_trans_params(case5, load_profiles=np.full((2, 5), "x"))


@pytest.mark.parametrize("bad", [0, -3])
def test_max_steps_not_positive(case5, bad):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match=rf"max_steps must be a positive integer, got {bad!r}"):
        make_trans_params(case5, max_steps=bad)


@pytest.mark.parametrize("bad", [2.5, True])
def test_max_steps_not_an_int(case5, bad):
    # TypeError from our check, or from beartype when annotations are checked: both name the argument.
    from powerzoojax.envs import make_trans_params

    with pytest.raises(TypeError, match="max_steps"):
        make_trans_params(case5, max_steps=bad)


def test_delta_t_not_positive(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match=r"delta_t_hours must be > 0, got -0.5"):
        make_trans_params(case5, delta_t_hours=-0.5)


def test_reward_scale_non_finite(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match="reward_scale must be finite, got inf"):
        make_trans_params(case5, reward_scale=float("inf"))


def test_thermal_weight_negative(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match="cost_thermal_weight must be >= 0, got -1.0"):
        make_trans_params(case5, cost_thermal_weight=-1)


def test_case_not_case_data():
    from powerzoojax.envs import make_trans_params

    with pytest.raises(TypeError, match="case"):
        make_trans_params("5")


def test_unknown_physics(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match=r"physics must be 0 \(DC\) or 1 \(AC\), got 7"):
        make_trans_params(case5, physics=7)


def test_unknown_solver_mode(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match=r"solver_mode must be 0 .* got 3"):
        make_trans_params(case5, solver_mode=3)


@pytest.mark.parametrize(("name", "value"), [("acopf_max_iter", 0), ("acopf_tol", -1e-4), ("acopf_tol", float("nan"))])
def test_bad_ac_opf_settings(case5, name, value):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match=name):
        make_trans_params(case5, solver_mode=2, **{name: value})


def test_resources_must_be_bundles(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(TypeError, match=r"resources\[0\] must be a ResourceBundle, got str"):
        make_trans_params(case5, resources=("battery",))


def test_include_unit_dispatch_not_bool(case5):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(TypeError, match="include_unit_dispatch"):
        make_trans_params(case5, include_unit_dispatch="yes")


def test_action_of_wrong_shape(trans5):
    env, params = trans5
    _, state = env.reset(jr.PRNGKey(0), params)
    with pytest.raises(ValueError, match=r"action must have shape \(5,\) = \(n_units,\), got \(4,\)"):
        env.step(jr.PRNGKey(1), state, jnp.zeros(4), params)
