"""Every grid env under non-finite actions, and ``with_load_profiles`` under bad profiles."""

import functools
import re

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

from non_finite_actions import check_non_finite_actions


@functools.lru_cache(maxsize=None)
def _case(case_id: str):
    from powerzoojax.case import load_case

    return load_case(case_id)


def _three_phase():
    from powerzoojax.grid import DistGrid3PhaseEnv, make_dist_3phase_params

    z = (0.01 + 0.02j) * (np.eye(3) + 0.3 * (np.ones((3, 3)) - np.eye(3)))
    p = np.full((3, 6), 0.02)
    return DistGrid3PhaseEnv(), make_dist_3phase_params(3, np.array([0, 1]), np.array([1, 2]), np.stack([z, z]), p, 0.5 * p, max_steps=3)


def _env(name: str):
    import powerzoojax.grid as grid

    if name == "TransGridEnv":
        return grid.TransGridEnv(), grid.make_trans_params(_case("5"), max_steps=3)
    if name == "UnitCommitmentEnv":
        return grid.UnitCommitmentEnv(), grid.make_uc_params(_case("5"), max_steps=3)
    if name == "DistGridEnv":
        return grid.DistGridEnv(), grid.make_dist_params(_case("33bw"), max_steps=3)
    if name == "DistGrid3PhaseEnv":
        return _three_phase()
    if name == "DCMicrogridShapingWrapper":
        from powerzoojax.grid.microgrid import DCMicrogridShapingWrapper

        env = DCMicrogridShapingWrapper()
        return env, env.default_params()
    env = getattr(grid, name)()
    return env, env.default_params()


ENVS = [
    "TransGridEnv", "UnitCommitmentEnv", "DistGridEnv", "DistGrid3PhaseEnv", "BatteryEnv", "RenewableEnv",
    "FlexLoadEnv", "VehicleEnv", "DataCenterEnv", "DataCenterMicrogridEnv", "DCMicrogridShapingWrapper",
]


@pytest.mark.parametrize("name", ENVS)
def test_non_finite_actions_are_replaced_and_flagged(name):
    check_non_finite_actions(*_env(name))


def test_wrong_params_class_names_both_classes():
    env, _ = _env("TransGridEnv")
    _, dist_params = _env("DistGridEnv")
    with pytest.raises(TypeError, match=r"TransGridEnv.reset: params must be TransGridParams .* got DistGridParams"):
        env.reset(jr.PRNGKey(0), dist_params)


@pytest.mark.parametrize("name", ["TransGridEnv", "UnitCommitmentEnv"])
def test_with_load_profiles_inside_jit_replaces_non_finite_values(name):
    env, params = _env(name)
    good = params.load_profiles
    bad = good.at[0, 0].set(jnp.nan).at[1, -1].set(jnp.inf)

    @jax.jit
    def first_step(profiles):
        p = params.with_load_profiles(profiles)
        _, state = env.reset(jr.PRNGKey(0), p)
        return p.load_profiles, env.step(jr.PRNGKey(1), state, jnp.zeros(env.action_space(p).shape), p)

    clean, (obs, _, reward, costs, _, info) = first_step(bad)
    assert bool(info["invalid_load_profiles"]) and bool(jnp.isfinite(reward)) and bool(jnp.all(jnp.isfinite(obs)))
    assert bool(jnp.all(jnp.isfinite(costs)))
    expected = np.asarray(good).copy()
    expected[0, 0] = expected[1, -1] = 0.0
    np.testing.assert_array_equal(np.asarray(clean), expected)
    _, (*_, info_ok) = first_step(good)
    assert not bool(info_ok["invalid_load_profiles"])


def test_dist_with_load_profiles_inside_jit_flags_either_profile():
    env, params = _env("DistGridEnv")
    p, q = params.p_load_profiles, params.q_load_profiles
    flag = jax.jit(lambda p, q: params.with_load_profiles(p, q).invalid_load_profiles)
    assert not bool(flag(p, q))
    assert bool(flag(p, q.at[0, 3].set(-jnp.inf)))
    assert bool(flag(p.at[2, 1].set(jnp.nan), q))


@pytest.mark.parametrize("name", ["TransGridEnv", "UnitCommitmentEnv", "DistGridEnv"])
def test_with_load_profiles_rejects_bad_shapes_and_host_non_finite_values(name):
    env, params = _env(name)
    if name == "DistGridEnv":
        p, q = np.asarray(params.p_load_profiles), np.asarray(params.q_load_profiles)
        call = lambda prof: params.with_load_profiles(prof, q)  # noqa: E731
        owner, arg, good = "DistGridParams", "p_load_profiles", p
    else:
        good = np.asarray(params.load_profiles)
        call = params.with_load_profiles
        owner, arg = type(params).__name__, "load_profiles"
    n = good.shape[1]
    with pytest.raises(ValueError, match=rf"{owner}.with_load_profiles: {arg} must have shape \(T, {n}\) with T >= 1, got shape \(3, {n + 1}\)"):
        call(np.ones((3, n + 1)))
    with pytest.raises(ValueError, match=rf"{arg} must have shape \(T, {n}\) with T >= 1, got shape \({n},\)"):
        call(np.ones(n))
    bad = good.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=rf"{owner}.with_load_profiles: {arg} must be finite; found nan at row 1, column 0"):
        call(bad)
    with pytest.raises(ValueError, match=rf"{arg} must be real numbers"):
        call(good.astype(np.complex64))


@functools.lru_cache(maxsize=None)
def _opf_with_batteries():
    from powerzoojax.grid import TransGridEnv, make_trans_params
    from powerzoojax.grid.resources import make_battery_bundle

    case = _case("5")
    batteries = make_battery_bundle(case, (1, 3), power_mw=20.0, energy_mwh=50.0)
    return TransGridEnv(), make_trans_params(case, max_steps=3, solver_mode=1, resources=(batteries,))


def test_opf_modes_declare_the_unit_set_points_ignored():
    import powerzoojax.grid as grid

    env = grid.TransGridEnv()
    assert env.ignored_action_entries(grid.make_trans_params(_case("5"), max_steps=3)) is None
    opf = grid.make_trans_params(_case("5"), max_steps=3, solver_mode=1)
    np.testing.assert_array_equal(env.ignored_action_entries(opf), np.ones(5, bool))
    ac_on_opf = grid.make_trans_params(_case("5"), max_steps=3, physics=1, solver_mode=1)
    np.testing.assert_array_equal(env.ignored_action_entries(ac_on_opf), np.ones(5, bool))
    ac_pf = grid.make_trans_params(_case("5"), max_steps=3, physics=1)
    assert env.ignored_action_entries(ac_pf) is None
    _, with_batteries = _opf_with_batteries()
    np.testing.assert_array_equal(env.ignored_action_entries(with_batteries), [True] * 5 + [False] * 2)


def test_ignored_entries_are_not_read_and_not_flagged():
    """Under an OPF a NaN unit set-point changes nothing and is not an invalid action,
    while a NaN battery entry still is; the step's program does not take the unit
    entries at all (so a rollout does not compute them)."""
    env, params = _opf_with_batteries()
    _, state = env.reset(jr.PRNGKey(0), params)
    step = jax.jit(jax.vmap(lambda a: env.step(jr.PRNGKey(1), state, a, params)))
    base = np.array([0.0] * 5 + [0.4, -0.3], np.float32)
    noisy_units = base.copy()
    noisy_units[:5] = [np.nan, np.inf, -np.inf, 0.9, -0.7]
    bad_battery = base.copy()
    bad_battery[5] = np.nan
    obs, next_state, reward, costs, _, info = step(jnp.asarray(np.stack([base, noisy_units, bad_battery])))
    np.testing.assert_array_equal(np.asarray(info["invalid_action"]), [False, False, True])
    for leaf in (obs, reward, costs, next_state.unit_power_mw, next_state.resource_states):
        for row in jax.tree.leaves(leaf):
            np.testing.assert_array_equal(np.asarray(row[1]), np.asarray(row[0]))
    import powerzoojax.grid as grid

    units_only = grid.make_trans_params(_case("5"), max_steps=3, solver_mode=1)
    _, state0 = env.reset(jr.PRNGKey(0), units_only)
    text = jax.jit(lambda a: env.step(jr.PRNGKey(1), state0, a, units_only)).lower(jnp.zeros(5)).as_text()
    assert re.search(r"func\.func public @main\(\s*\)", text), "the compiled step still takes the action"
