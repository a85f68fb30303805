"""DC power flow of TransGridEnv against an independent B-θ solve (tests/reference_dc.py),
and its invariants."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_dc import b_theta_flows

from powerzoojax.testing import check_invariants, env_property_test


def _params_with_profile(params, profile_row):
    return params.with_load_profiles(jnp.broadcast_to(profile_row, params.load_profiles.shape))


@functools.lru_cache(maxsize=None)
def _stepper(case_id):
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params

    case = load_case(case_id)
    env = TransGridEnv()
    params = make_trans_params(case, max_steps=4)

    @jax.jit
    def step(profile_row, action):
        p = _params_with_profile(params, profile_row)
        _, s = env.reset(jr.PRNGKey(0), p)
        return env.step(jr.PRNGKey(1), s, action, p)

    return case, params, step


@pytest.mark.parametrize("case_id", ["5", "14", "118", "300"])
def test_env_flows_match_independent_b_theta_solve(case_id):
    case, params, step = _stepper(case_id)
    rng = np.random.default_rng(int(case_id))
    d_max = np.maximum(np.asarray(case.load_d_max), 0.0)
    for _ in range(5):
        load = rng.uniform(0.3, 1.0, case.n_loads) * d_max
        action = rng.uniform(-1, 1, case.n_units).astype(np.float32)
        obs, state, reward, costs, done, info = step(jnp.asarray(load, jnp.float32), jnp.asarray(action))
        injection = np.asarray(state.node_injection_mw, np.float64)
        ref = b_theta_flows(case, injection)
        flows = np.asarray(state.line_flow_mw, np.float64)
        scale = max(np.abs(ref).max(), 1.0)
        np.testing.assert_allclose(flows, ref, rtol=1e-4, atol=1e-4 * scale)
        # and the injections themselves are the dispatch minus the loads at their buses
        expected_inj = np.zeros(case.n_nodes)
        np.add.at(expected_inj, np.asarray(case.unit_node_idx), np.asarray(state.unit_power_mw, np.float64))
        np.add.at(expected_inj, np.asarray(case.load_node_idx), -load)
        np.testing.assert_allclose(injection, expected_inj, atol=1e-3 * max(load.sum(), 1.0) / case.n_nodes + 1e-2)


_settings = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _scaled_rows(params):
    """Every profile row the nominal load times its own factor in [0, 1.5]: from an empty
    grid to loads beyond the fleet's reach, where the slack units take up the imbalance."""
    nominal = np.asarray(params.load_profiles[0], np.float32)
    rows = params.load_profiles.shape[0]
    scales = st.lists(st.floats(0.0, 1.5), min_size=rows, max_size=rows)
    return scales.map(lambda f: params.with_load_profiles(jnp.asarray(np.asarray(f, np.float32)[:, None] * nominal)))


def _dc_env(case_id):
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params

    return lambda: (TransGridEnv(), make_trans_params(load_case(case_id), max_steps=4))


# The kit checks the DC laws on every step: injections sum to zero after the slack
# adjustment and the line flows are PTDF · injections.
@env_property_test(_dc_env("5"), vary_load_profiles=False, vary_params=_scaled_rows, max_examples=10)
def test_flow_and_balance_invariants_case5(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["dc_power_balance", "dc_flows_are_ptdf_injections"]


@env_property_test(_dc_env("14"), vary_load_profiles=False, vary_params=_scaled_rows, max_examples=10)
def test_flow_and_balance_invariants_case14(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["dc_power_balance", "dc_flows_are_ptdf_injections"]


@pytest.mark.parametrize("case_id", ["5", "118"])
@_settings
@given(seed=st.integers(0, 2**31 - 1), magnitude=st.sampled_from([1.0, 10.0, 1e3, 1e6]))
def test_obs_finite_and_actions_clipped(case_id, seed, magnitude):
    case, params, step = _stepper(case_id)
    action = np.random.default_rng(seed).uniform(-1, 1, case.n_units) * magnitude
    obs, state, reward, costs, done, info = step(params.load_profiles[0], jnp.asarray(action, jnp.float32))
    assert bool(jnp.all(jnp.isfinite(obs))) and bool(jnp.isfinite(reward)) and bool(jnp.all(jnp.isfinite(costs)))
    # far-outside actions act like the clipped ones
    clipped = np.clip(action, -1, 1)
    obs_c, state_c, reward_c, *_ = step(params.load_profiles[0], jnp.asarray(clipped, jnp.float32))
    np.testing.assert_allclose(obs, obs_c, rtol=1e-6)
    assert float(reward) == float(reward_c)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_episode_return_finite(trans5, seed):
    """A whole episode of actions far outside [-1, 1]: the kit's contract (obs, reward,
    costs and state finite, ``done`` exactly at the last step) and the DC laws hold."""
    env, params = trans5
    key = jr.PRNGKey(seed)
    actions = jr.uniform(key, (48, 5), minval=-3.0, maxval=3.0)
    assert check_invariants(env, params, key, actions) == []


def test_generation_cost_checkpoints():
    """Spec §6.5: TC with MC = p² at 6 → 72; MC = 2p + 5 at 100 → 10500; MC = 0.5p²+2p+1 at 10 → 276.67."""
    from powerzoojax.physics import generation_cost

    p = jnp.array([6.0, 100.0, 10.0])
    a, b, c = jnp.array([1.0, 0.0, 0.5]), jnp.array([0.0, 2.0, 2.0]), jnp.array([0.0, 5.0, 1.0])
    for i, expected in enumerate([72.0, 10500.0, 276.6667]):
        sel = jnp.arange(3) == i
        assert float(generation_cost(p * sel.astype(p.dtype), a, b, c)) == pytest.approx(expected, rel=1e-5)


def test_dc_thermal_checkpoint():
    """Spec §6.5: DC flow 500 vs cap 400 → 1 violation, cost 100."""
    from powerzoojax.physics import dc_thermal_check

    overload, n = dc_thermal_check(jnp.array([500.0, -50.0]), jnp.array([400.0, 400.0]), jnp.array([-400.0, -400.0]))
    assert float(overload) == 100.0 and int(n) == 1
