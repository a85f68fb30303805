"""DistGrid3PhaseEnv: env contract, layouts, cost channels and its factory's errors."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

N_NODES = 7
FROM = np.array([0, 1, 2, 1, 4, 5])
TO = np.array([1, 2, 3, 4, 5, 6])


def _impedances():
    z = (0.01 + 0.02j) * (np.eye(3) + 0.3 * (np.ones((3, 3)) - np.eye(3)))
    z3 = np.stack([z] * 6)
    # Line 5 (bus 5 -> 6) is a two-phase lateral: no phase C.
    z3[5, 2, :] = 0
    z3[5, :, 2] = 0
    return z3


def _loads(rows=4, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.0, 0.05, (rows, 18))
    p[:, -1] = 0.0  # bus 6, phase C does not exist
    return p, 0.5 * p


@functools.lru_cache(maxsize=None)
def _env(**kwargs):
    from powerzoojax.grid import DistGrid3PhaseEnv, make_dist_3phase_params

    p, q = _loads()
    return DistGrid3PhaseEnv(), make_dist_3phase_params(N_NODES, FROM, TO, _impedances(), p, q, max_steps=4, **kwargs)


def _make(**kwargs):
    from powerzoojax.grid import make_dist_3phase_params

    p, q = _loads()
    args = dict(n_nodes=N_NODES, from_nodes=FROM, to_nodes=TO, Z_3ph_pu=_impedances(), load_P_3ph=p, load_Q_3ph=q)
    args.update(kwargs)
    return make_dist_3phase_params(**args)


def test_passes_conformance_kit():
    from powerzoojax.testing import check_env_api, check_no_retrace

    env = _env()[0]
    params = _make(max_steps=4, line_cap=np.ones(6))
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}


def test_spaces_names_and_info():
    env, params = _env()
    assert env.observation_space(params).shape == (9 * 7 + 6 * 6 + 2,)
    assert env.action_space(params).shape == (18,)
    assert env.constraint_names(params) == ("voltage_violation", "thermal_overload", "vuf_violation", "resource")
    obs, state = env.reset(jr.PRNGKey(0), params)
    out = jax.jit(env.step)(jr.PRNGKey(1), state, jnp.zeros(18), params)
    info = out[5]
    assert set(info) == {
        "cost_voltage_violation", "cost_thermal_overload", "cost_vuf_violation", "cost_resource",
        "cost_continuous", "cost_sum", "is_safe", "goal_met", "n_violations", "p_loss_MW", "q_loss_MVAr",
        "max_vuf_percent", "bfs_converged", "bfs_n_iter", "bfs_residual", "invalid_action",
    }
    assert bool(info["bfs_converged"])
    assert float(out[2]) == pytest.approx(-0.1 * float(info["p_loss_MW"]), rel=1e-6)
    assert float(info["cost_sum"]) == pytest.approx(float(out[3].sum()))


def test_observation_layout_and_state_order():
    from powerzoojax.physics import radial_3phase_power_flow

    env, params = _env()
    obs, state = env.reset(jr.PRNGKey(0), params)
    p, q = _loads()
    full_p = np.zeros((7, 3))
    full_p[1:] = p[0].reshape(6, 3)
    full_q = np.zeros((7, 3))
    full_q[1:] = q[0].reshape(6, 3)
    flow = radial_3phase_power_flow(params.network, jnp.asarray(full_p, jnp.float32), jnp.asarray(full_q, jnp.float32))
    v = np.asarray(flow.v_mag)
    obs = np.asarray(obs)
    np.testing.assert_allclose(obs[:21], ((v - 1.0) / 0.1).T.reshape(-1), atol=1e-4)
    assert obs[20] == pytest.approx(-10.0)  # bus 6, phase C absent: |V| = 0
    np.testing.assert_allclose(np.asarray(state.v_mag), v[1:].reshape(-1), atol=1e-6)
    # Lines are reported in input order (branch order is BFS order: 0,1,3,2,4,5).
    p_line = np.asarray(state.P_branch).reshape(6, 3)
    by_line = np.argsort(np.asarray(params.network.line_idx))
    np.testing.assert_allclose(p_line, np.asarray(flow.p_branch)[by_line], atol=1e-6)
    p_ref = float(p[0].sum())
    np.testing.assert_allclose(obs[21:39], (p_line / p_ref).T.reshape(-1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(obs[57:78], (full_p / p_ref).T.reshape(-1), rtol=1e-5)
    np.testing.assert_allclose(obs[-2:], [0.0, 1.0], atol=1e-6)


def test_voltage_thermal_and_vuf_costs():
    from powerzoojax.grid import make_dist_3phase_params

    p, q = _loads()
    p = p.copy()
    p[:, 0::3] *= 8.0  # phase A heavily loaded: undervoltage and unbalance
    q = q.copy()
    q[:, 0::3] *= 8.0
    params = make_dist_3phase_params(
        N_NODES, FROM, TO, _impedances(), p, q, max_steps=4, v_min=0.97, vuf_max=0.5,
        line_cap=np.array([1.5, 0, 0, 0, 0, 0]),
    )
    env = _env()[0]
    _, state = env.reset(jr.PRNGKey(0), params)
    _, state, _, costs, _, info = jax.jit(env.step)(jr.PRNGKey(1), state, jnp.zeros(18), params)
    v = np.asarray(state.v_mag)
    exists = np.ones(18, bool)
    exists[-1] = False
    assert float(costs[0]) == np.sum(exists & (v < 0.97)) > 0
    assert costs[2] > 0 and float(info["max_vuf_percent"]) > 0.5
    # Line 0 carries about 1.3 MVA on phase A (cap 1.5/3 = 0.5 per phase); others unlimited.
    assert costs[1] >= 1
    assert not bool(info["is_safe"])


def test_errors_name_the_bad_value():
    with pytest.raises(ValueError, match=r"Z_3ph_pu must have shape \(n_lines, 3, 3\) = \(6, 3, 3\), got \(6, 3\)"):
        _make(Z_3ph_pu=np.ones((6, 3)))
    with pytest.raises(ValueError, match=r"from_nodes and to_nodes must have shape \(n_nodes - 1,\) = \(6,\)"):
        _make(from_nodes=FROM[:5])
    with pytest.raises(ValueError, match=r"to_nodes must be 0-based bus indices in \[0, 6\], got values in \[2, 7\]"):
        _make(to_nodes=TO + 1)
    with pytest.raises(ValueError, match="not radial"):
        _make(to_nodes=np.array([1, 2, 3, 3, 5, 6]))
    with pytest.raises(ValueError, match="connects bus id 1 to itself"):
        _make(to_nodes=np.array([1, 2, 3, 1, 5, 6]))
    with pytest.raises(ValueError, match=r"load_P_3ph must be real with shape \(T, 3 \(n_nodes - 1\)\) = \(T, 18\)"):
        _make(load_P_3ph=np.zeros((4, 17)))
    bad = np.zeros((4, 18))
    bad[1, 4] = np.inf
    with pytest.raises(ValueError, match="load_Q_3ph must be finite; found inf at row 1, column 4"):
        _make(load_Q_3ph=bad)
    with pytest.raises(ValueError, match="must have the same number of rows, got 4 and 2"):
        _make(load_Q_3ph=np.zeros((2, 18)))
    with pytest.raises(ValueError, match=r"line_cap must be finite with shape \(n_lines,\) = \(6,\)"):
        _make(line_cap=np.zeros(5))
    with pytest.raises(ValueError, match="v_min must be < v_max"):
        _make(v_min=1.1, v_max=1.0)
    with pytest.raises(ValueError, match="vuf_max must be >= 0, got -1.0"):
        _make(vuf_max=-1.0)
    with pytest.raises(TypeError, match=r"resources\[0\] must be a ResourceBundle"):
        _make(resources=(object(),))
    # The options shared with make_dist_params go through the same validator (under the
    # test-time type checker a wrong type is refused at the call, naming the parameter).
    with pytest.raises(TypeError, match="include_der"):
        _make(include_der=1)
    with pytest.raises(ValueError, match="make_dist_3phase_params: bfs_max_iter must be a positive integer, got 0"):
        _make(bfs_max_iter=0)
    with pytest.raises(ValueError, match="make_dist_3phase_params: bfs_tol must be > 0"):
        _make(bfs_tol=0.0)
