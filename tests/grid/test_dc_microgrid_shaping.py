"""DCMicrogridShapingWrapper (spec §5 benchmark wrapper): contract, the diesel auto-balance
(preview with DG off, replay with DG covering the preview's unserved load) and the fixed shaping
weights, each checked against separate calls of the bare env and a NumPy recomputation."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powerzoojax.testing import env_property_test


def _params(**kw):
    from powerzoojax.grid import make_dcmicrogrid_params

    return make_dcmicrogrid_params(**kw)


@functools.lru_cache(maxsize=None)
def _wrapper(autobalance: bool = True):
    from powerzoojax.grid import DCMicrogridShapingWrapper

    return DCMicrogridShapingWrapper(dg_autobalance=autobalance)


@functools.lru_cache(maxsize=None)
def _env_step():
    env = _wrapper().env
    return jax.jit(lambda k, s, a, p: env.step(k, s, a, p))


@functools.lru_cache(maxsize=None)
def _steps(autobalance: bool):
    """Jitted (bare env step, wrapper step); the bare step is compiled once for both flags."""
    w = _wrapper(autobalance)
    return _env_step(), jax.jit(lambda k, s, a, p: w.step(k, s, a, p))


def test_conformance_kit():
    from powerzoojax.testing import check_env_api, check_no_retrace

    params = _params(max_steps=4, grid_import_p_max_mw=0.2)
    check_env_api(_wrapper(), params, stochastic=True)
    assert check_no_retrace(_wrapper(), params, n_episodes=2) == {"reset": 1, "step": 1, "rollout": 1}


@env_property_test(lambda: (_wrapper(), _params(max_steps=4, grid_import_p_max_mw=0.2)), max_examples=6)
def test_the_wrapper_keeps_the_microgrid_laws(env, params, trajectory):
    """Auto-balanced diesel set-points keep the microgrid's laws (the PCC balance and
    dispatch order, the battery's, the data centre's): the wrapper declares the inner env's."""
    assert [law.name for law in env.physics_invariants(params)] == [law.name for law in env.env.physics_invariants(params)]
    assert "pcc_dispatch_order" in [law.name for law in env.physics_invariants(params)]


def _shaping(costs, info, requested, dg_auto):
    spill = float(info["power_spill"]) / max(float(info["p_load_mw"]), 1e-6)
    c = np.asarray(costs, np.float64)
    return 50 * c[0] + 30 * c[1] + 200 * c[2] + 100 * spill + 40 * abs(requested - dg_auto)


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    batt=st.floats(-1.0, 1.0),
    dg_request=st.floats(0.0, 1.0),
    dg_max=st.sampled_from([0.3, 2.5]),
)
def test_autobalance_covers_preview_deficit_and_shapes_reward(seed, batt, dg_request, dg_max):
    # Islanded, no PV, full cooling (~0.65 MW load at night): the battery (0.5 MW) never covers
    # the load, and its action sets how much is left unserved.
    params = _params(dg_p_max_mw=dg_max, pv_capacity_mw=0.0)
    env_step, wrap_step = _steps(True)
    key = jr.PRNGKey(seed)
    _, state = _wrapper().reset(key, params)
    action = jnp.array([0.5, 0.5, 0.0, batt, dg_request], jnp.float32)

    *_, preview = env_step(key, state, action.at[4].set(0.0), params)
    deficit0 = float(preview["power_deficit"])
    assert deficit0 > 0.0  # the base load alone exceeds what the battery can give
    dg_auto = min(deficit0 / dg_max, 1.0)

    obs, new, reward, costs, done, info = wrap_step(key, state, action, params)
    ref = env_step(key, state, action.at[4].set(dg_auto), params)
    for got, want in zip(jax.tree.leaves((obs, new, costs, done)), jax.tree.leaves((ref[0], ref[1], ref[3], ref[4]))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    # Same load as the preview; the diesel takes the deficit up to its rating.
    np.testing.assert_allclose(float(info["p_load_mw"]), float(preview["p_load_mw"]), rtol=1e-6)
    np.testing.assert_allclose(float(info["p_dg_mw"]), min(deficit0, dg_max), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(info["power_deficit"]), max(deficit0 - dg_max, 0.0), atol=1e-5)
    if dg_max > deficit0:
        assert float(costs[2]) < 1e-5
    np.testing.assert_allclose(float(info["dg_autobalance_norm"]), dg_auto, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(info["env_reward"]), float(ref[2]), rtol=1e-5, atol=1e-5)
    expected = float(ref[2]) - _shaping(costs, info, dg_request, dg_auto)
    np.testing.assert_allclose(float(reward), expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(float(info["shaping_penalty"]), float(ref[2]) - expected, rtol=1e-5, atol=1e-4)


def test_without_autobalance_applies_the_agent_action():
    params = _params(grid_import_p_max_mw=0.3, pv_capacity_mw=0.0)
    env_step, wrap_step = _steps(False)
    key = jr.PRNGKey(3)
    _, state = _wrapper(False).reset(key, params)
    action = jnp.array([0.2, 0.9, 0.1, -0.7, 0.25], jnp.float32)
    obs, new, reward, costs, done, info = wrap_step(key, state, action, params)
    ref = env_step(key, state, action, params)
    np.testing.assert_allclose(np.asarray(obs), np.asarray(ref[0]), rtol=1e-6)
    np.testing.assert_allclose(float(info["p_dg_mw"]), 0.25 * 0.6, rtol=1e-6)
    assert float(info["dg_tracking_error"]) == 0.0
    assert float(costs[2]) > 0.0  # the deficit is left for the shaping to punish
    np.testing.assert_allclose(float(reward), float(ref[2]) - _shaping(costs, info, 0.0, 0.0), rtol=1e-5, atol=1e-4)


def test_bad_weight_and_bad_action_shape():
    from powerzoojax.grid import DCMicrogridShapingWrapper

    with pytest.raises(ValueError, match="w_spill"):
        DCMicrogridShapingWrapper(w_spill=-1.0)
    params = _params()
    _, state = _wrapper().reset(jr.PRNGKey(0), params)
    with pytest.raises(ValueError, match="shape"):
        _wrapper().step(jr.PRNGKey(0), state, jnp.zeros(3), params)


def test_autobalance_runs_one_env_transition(monkeypatch):
    """The auto-balanced step runs the data-centre transition once (no preview step)."""
    import powerzoojax.grid.microgrid._dc_microgrid as mg

    calls = []
    inner = mg.datacenter_transition

    def counting(*args, **kwargs):
        calls.append(1)
        return inner(*args, **kwargs)

    monkeypatch.setattr(mg, "datacenter_transition", counting)
    params = _params(max_steps=4)
    w = _wrapper(True)
    _, state = w.reset(jr.PRNGKey(0), params)
    jax.make_jaxpr(lambda k, s, a: w.step(k, s, a, params))(jr.PRNGKey(1), state, jnp.full((5,), 0.5))
    assert len(calls) == 1
