"""TransGridEnv's DC-OPF warm start: each step's dual simplex starts from the last step's
basis, kept in `GridState.network_memory`; the dispatch costs what a cold solve's does."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from powerzoojax.case import load_case

_STEPS, _MAX_STEPS = 7, 4


@functools.cache
def _case29():
    return load_case("29gb")


@functools.cache
def _params(warm: bool | None):
    from powerzoojax.grid import make_trans_params

    case = _case29()
    base = make_trans_params(case, solver_mode=1).load_profiles[0]
    # Loads a few % apart from row to row, so that the binding lines move between steps.
    rng = np.random.default_rng(3)
    rows = np.asarray(base)[None] * (1 + 0.08 * rng.standard_normal((_STEPS, base.shape[0])))
    return make_trans_params(case, rows, max_steps=_MAX_STEPS, solver_mode=1, opf_warm_start=warm)


@functools.cache
def _episode(warm: bool):
    from powerzoojax.grid import TransGridEnv

    env, params = TransGridEnv(), _params(warm)
    step = jax.jit(env.step)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    action = jnp.zeros(env.action_space(params).shape)
    out = [state]
    infos = []
    for t in range(_STEPS):
        _, state, _, _, _, info = step(jax.random.PRNGKey(t), state, action, params)
        out.append(state)
        infos.append(info)
    return out, infos


def test_the_default_warm_starts_large_lps_only(case5):
    from powerzoojax.grid import make_trans_params

    assert not make_trans_params(case5, solver_mode=1).network_model.warm_start  # 2 monitored lines
    assert _params(None).network_model.warm_start  # 99
    assert make_trans_params(case5, solver_mode=1, opf_warm_start=True).network_model.warm_start
    assert not _params(False).network_model.warm_start
    ac = make_trans_params(_case29(), physics=1, solver_mode=1, opf_warm_start=True).network_model
    assert ac.dispatch_model.warm_start


def test_the_state_carries_the_basis_from_step_to_step():
    states, _ = _episode(True)
    valid = [bool(s.network_memory.valid) for s in states]
    # Reset starts cold; every solved step leaves its basis; the auto-reset at the end of
    # the episode (step _MAX_STEPS) puts the cold one back.
    assert valid == [False, True, True, True, False, True, True, True]
    assert _episode(False)[0][1].network_memory == ()


def test_warm_steps_cost_what_cold_steps_cost():
    _, warm = _episode(True)
    _, cold = _episode(False)
    for t, (w, c) in enumerate(zip(warm, cold)):
        assert int(w["opf_status"]) == int(c["opf_status"]), t
        np.testing.assert_allclose(float(w["opf_objective"]), float(c["opf_objective"]), rtol=2e-5, err_msg=str(t))
        np.testing.assert_allclose(float(w["opf_lambda"]), float(c["opf_lambda"]), rtol=1e-4, atol=1e-3, err_msg=str(t))


def test_a_warm_rollout_compiles_once():
    from powerzoojax.grid import TransGridEnv
    from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

    env, params = TransGridEnv(), _params(True)
    traces = []

    def rollout(key):
        traces.append(1)
        _, states = batch_reset(env, jax.random.split(key, 2), params)
        actions = jnp.zeros((2, _STEPS) + env.action_space(params).shape)
        return jax.vmap(lambda s, k, a: scan_rollout(env, k, s, params, a))(states, jax.random.split(key, 2), actions)

    f = jax.jit(rollout)
    first = jax.block_until_ready(f(jax.random.PRNGKey(0)))
    jax.block_until_ready(f(jax.random.PRNGKey(1)))
    assert len(traces) == 1
    assert bool(jnp.all(jnp.isfinite(jax.tree_util.tree_leaves(first)[0])))


@pytest.mark.parametrize("bad", ["yes", 1])
def test_opf_warm_start_must_be_a_bool_or_none(case5, bad):
    from powerzoojax.grid import make_trans_params

    with pytest.raises(TypeError, match="opf_warm_start"):
        make_trans_params(case5, solver_mode=1, opf_warm_start=bad)


def test_a_forced_warm_start_on_a_small_lp_costs_what_a_cold_one_costs(case5):
    # Case 5's LP keeps the dense matrix and inverse: the warm start rebuilds a dense one.
    from powerzoojax.grid import TransGridEnv, make_trans_params

    env = TransGridEnv()
    base = make_trans_params(case5, solver_mode=1).load_profiles[0]
    rows = np.asarray(base)[None] * (1 + 0.1 * np.random.default_rng(0).standard_normal((6, base.shape[0])))
    objectives = {}
    for warm in (False, True):
        params = make_trans_params(case5, rows, max_steps=20, solver_mode=1, opf_warm_start=warm)
        _, state = env.reset(jax.random.PRNGKey(0), params)
        step = jax.jit(env.step)
        objectives[warm] = []
        for t in range(6):
            _, state, _, _, _, info = step(jax.random.PRNGKey(t), state, jnp.zeros(case5.n_units), params)
            objectives[warm].append(float(info["opf_objective"]))
    assert bool(state.network_memory.valid)
    np.testing.assert_allclose(objectives[True], objectives[False], rtol=2e-5)
