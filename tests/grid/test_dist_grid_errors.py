"""One test per error message of make_dist_params and DistGridEnv.step."""

import functools

import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


@functools.lru_cache(maxsize=None)
def _case():
    from powerzoojax.case import load_case

    return load_case("33bw")


def _make(**kwargs):
    from powerzoojax.grid import make_dist_params

    return make_dist_params(_case(), **kwargs)


def test_case_not_casedata():
    from powerzoojax.grid import make_dist_params

    # TypeError from our check, or from beartype when annotations are checked: both name the argument.
    with pytest.raises(TypeError, match="case"):
        make_dist_params("33bw")


@pytest.mark.parametrize("name", ["max_steps", "steps_per_day", "bfs_max_iter"])
def test_positive_int_wrong_type(name):
    with pytest.raises(TypeError, match=name):
        _make(**{name: 2.5})


@pytest.mark.parametrize("name", ["max_steps", "steps_per_day", "bfs_max_iter"])
def test_positive_int_not_positive(name):
    with pytest.raises(ValueError, match=f"{name} must be a positive integer, got 0"):
        _make(**{name: 0})


def test_scalar_not_a_number():
    # Our ValueError, or beartype's TypeError when annotations are checked.
    with pytest.raises((ValueError, TypeError), match="v_slack"):
        _make(v_slack="high")


def test_scalar_not_finite():
    with pytest.raises(ValueError, match="loss_penalty_weight must be finite, got inf"):
        _make(loss_penalty_weight=float("inf"))


@pytest.mark.parametrize("name", ["delta_t_hours", "v_slack", "v_max", "bfs_tol"])
def test_scalar_not_positive(name):
    with pytest.raises(ValueError, match=f"{name} must be > 0, got 0.0"):
        _make(**{name: 0.0})


@pytest.mark.parametrize("name", ["v_min", "loss_penalty_weight", "der_limit_pu"])
def test_scalar_negative(name):
    with pytest.raises(ValueError, match=f"{name} must be >= 0, got -0.1"):
        _make(**{name: -0.1})


def test_band_inverted():
    with pytest.raises(ValueError, match="v_min must be < v_max, got v_min=1.05, v_max=0.95"):
        _make(v_min=1.05, v_max=0.95)


def test_resources_must_be_bundles():
    with pytest.raises(TypeError, match=r"resources\[0\] must be a ResourceBundle"):
        _make(resources=(object(),))


def test_include_der_not_bool():
    with pytest.raises(TypeError, match="include_der"):
        _make(include_der=1)


def test_cost_mode_unknown():
    with pytest.raises(ValueError, match=r"cost_mode must be one of \('aggregate',\), got 'per_bus'"):
        _make(cost_mode="per_bus")


def test_profiles_only_one_given():
    with pytest.raises(ValueError, match="give both p_load_profiles and q_load_profiles or neither"):
        _make(p_load_profiles=np.zeros((4, 33)))


def test_profiles_wrong_shape():
    with pytest.raises(ValueError, match=r"p_load_profiles must have shape \(T, n_nodes\) = \(T, 33\).*got shape \(4, 32\)"):
        _make(p_load_profiles=np.zeros((4, 32)), q_load_profiles=np.zeros((4, 33)))


def test_profiles_not_real():
    with pytest.raises(ValueError, match="q_load_profiles must be real numbers, got dtype complex128"):
        _make(p_load_profiles=np.zeros((4, 33)), q_load_profiles=np.zeros((4, 33), complex))


def test_profiles_not_finite():
    q = np.zeros((4, 33))
    q[2, 7] = np.nan
    with pytest.raises(ValueError, match=r"q_load_profiles must be finite; found nan at row 2, bus index 7"):
        _make(p_load_profiles=np.zeros((4, 33)), q_load_profiles=q)


def test_profiles_shapes_differ():
    with pytest.raises(ValueError, match=r"must have the same shape, got \(4, 33\) and \(5, 33\)"):
        _make(p_load_profiles=np.zeros((4, 33)), q_load_profiles=np.zeros((5, 33)))


def test_meshed_feeder_refused():
    import equinox as eqx

    case = _case()
    from powerzoojax.grid import make_dist_params

    meshed = eqx.tree_at(lambda c: c.line_status, case, jnp.ones_like(case.line_status))
    with pytest.raises(ValueError, match="in-service lines are not radial"):
        make_dist_params(meshed)


def test_step_wrong_action_shape():
    from powerzoojax.grid import DistGridEnv

    env, params = DistGridEnv(), _make(max_steps=2)
    _, state = env.reset(jr.PRNGKey(0), params)
    with pytest.raises(ValueError, match=r"action must have shape \(32,\) = \(n_nodes - 1,\), got \(33,\)"):
        env.step(jr.PRNGKey(1), state, jnp.zeros(33), params)
