"""UnitCommitmentEnv: env contract, min up/down times, reserve, ramping, start-up costs."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_JIT: dict = {}


def _jitted(env):
    if "uc" not in _JIT:
        _JIT["uc"] = (jax.jit(env.reset), jax.jit(env.step))
    return _JIT["uc"]


UC_DATA = dict(min_up_steps=3, min_down_steps=2, startup_cost=500.0, no_load_cost=40.0, keep_time=5)


def _params(case, **kw):
    from powerzoojax.grid import make_uc_params

    base = dict(max_steps=6, forecast_horizon_steps=2, **UC_DATA)
    base.update(kw)
    return make_uc_params(case, **base)


@pytest.mark.parametrize("solver_mode", [0, 1])
def test_passes_conformance_kit(case5, solver_mode):
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.testing import check_env_api, check_no_retrace

    env = UnitCommitmentEnv()
    params = _params(case5, max_steps=3, solver_mode=solver_mode, ramp_up_frac=0.5, ramp_down_frac=0.5)
    # The interior point's count stops an iteration or more apart between eager, jitted and
    # vmapped steps (its stopping test sits at float32 round-off): the kit compares it only
    # within one program. solver_mode 0 solves no OPF and reports a constant 0.
    assert env.iteration_count_keys(params) == (("opf_iterations",) if solver_mode == 1 else ())
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}


def test_sampled_start_is_stochastic(case5):
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.testing import check_env_api

    rng = np.random.default_rng(0)
    profile = rng.uniform(50, 250, (20, 5))
    params = _params(case5, max_steps=3, solver_mode=0, load_profiles=profile, sample_start_on_reset=True)
    check_env_api(UnitCommitmentEnv(), params, stochastic=True)


def test_observation_layout(case5):
    from powerzoojax.grid import UnitCommitmentEnv

    env = UnitCommitmentEnv()
    rng = np.random.default_rng(1)
    profile = rng.uniform(50, 250, (10, 5))
    params = _params(case5, solver_mode=0, load_profiles=profile, fixed_episode_start_idx=2)
    g, n_lines = case5.n_units, case5.n_lines
    assert env.obs_dim(params) == 4 * g + n_lines + 4 + 2 and env.action_dim(params) == 2 * g
    obs, state = _jitted(env)[0](jr.PRNGKey(0), params)
    obs = np.asarray(obs)
    total = profile.sum(1)
    cap = float(np.asarray(case5.unit_p_max).sum())
    np.testing.assert_allclose(obs[:g], 1.0)  # all on
    np.testing.assert_allclose(obs[g : 2 * g], 5 / 200)
    assert obs[4 * g + n_lines] == pytest.approx(total[2] / cap, rel=1e-5)
    assert obs[4 * g + n_lines + 1] == pytest.approx((cap - total[2]) / total[2], rel=1e-5)
    np.testing.assert_allclose(obs[-2:], total[3:5] / cap, rtol=1e-5)  # preview of rows start+1, start+2


def _status_run(case, actions, solver_mode=0):
    from powerzoojax.core import episode_rollout
    from powerzoojax.grid import UnitCommitmentEnv

    env = UnitCommitmentEnv()
    params = _params(case, max_steps=actions.shape[0] + 1, solver_mode=solver_mode, keep_time=[5, 1, 2, 5, 1])
    seq = jnp.asarray(actions, jnp.float32)
    policy = lambda obs, state, key: seq[jnp.minimum(state.time_step, seq.shape[0] - 1)]  # noqa: E731
    trace = jax.jit(lambda k: episode_rollout(env, params, k, policy, n_steps=seq.shape[0]))(jr.PRNGKey(0))
    g = case.n_units
    obs = np.asarray(trace.obs)
    status = obs[:, :g].round().astype(int)
    time_in = np.rint(obs[:, g : 2 * g] * 200).astype(int)
    return params, trace, status, time_in


@functools.lru_cache(maxsize=None)
def _commitment_env():
    from powerzoojax.case import load_case
    from powerzoojax.grid import UnitCommitmentEnv

    return UnitCommitmentEnv(), _params(load_case("5"), max_steps=13, solver_mode=0, keep_time=[5, 1, 2, 5, 1])


@settings(max_examples=10, deadline=None)
@given(st.lists(st.lists(st.sampled_from([-1.0, 1.0]), min_size=5, max_size=5), min_size=12, max_size=12))
def test_min_up_down_respected(intents):
    """The kit checks that no unit switches before its minimum up / down time
    (``uc_min_up_down``) beside the contract; here: every request that is free to be
    followed is, the time-in-state counters and the switch count."""
    from powerzoojax.testing import check_invariants, record_trajectory

    env, params = _commitment_env()
    intents = np.asarray(intents, np.float32)
    actions = jnp.asarray(np.concatenate([intents, np.zeros_like(intents)], axis=1))
    assert "uc_min_up_down" in [law.name for law in env.physics_invariants(params)]
    assert check_invariants(env, params, jr.PRNGKey(0), actions) == []
    traj, _ = record_trajectory(env, params, jr.PRNGKey(0), actions)
    g = params.case.n_units
    status, status_next = np.asarray(traj.state.unit_status), np.asarray(traj.next_state.unit_status)
    time_in, time_in_next = np.asarray(traj.state.time_in_state), np.asarray(traj.next_state.time_in_state)
    np.testing.assert_array_equal(traj.obs[:, :g].round().astype(int), status_next)  # the observed status
    was_on = status == 1
    changed = status_next != status
    free = np.where(was_on, time_in >= UC_DATA["min_up_steps"], time_in >= UC_DATA["min_down_steps"])
    np.testing.assert_array_equal(status_next[free], (intents > 0)[free].astype(int))
    np.testing.assert_array_equal(time_in_next, np.where(changed, 1, time_in + 1))
    np.testing.assert_array_equal(np.asarray(traj.info["commitment_switches"]), changed.sum(axis=1))


def test_uc_min_up_down_law_catches_an_early_switch():
    from powerzoojax.testing import record_trajectory

    env, params = _commitment_env()
    actions = jnp.asarray(np.concatenate([np.ones((12, 5)), np.zeros((12, 5))], axis=1), jnp.float32)
    traj, _ = record_trajectory(env, params, jr.PRNGKey(0), actions)
    law = {law.name: law for law in env.physics_invariants(params)}["uc_min_up_down"]
    assert law.violations(traj, params) == []
    # Unit 1 (held 1 step at the start) switched off at once: before its 3-step minimum.
    status = np.asarray(traj.next_state.unit_status).copy()
    status[0, 1] = 0
    early = traj._replace(next_state=eqx.tree_at(lambda s: s.unit_status, traj.next_state, status))
    assert [t for t, _ in law.violations(early, params)] == [0]


def test_unit_limits_under_proportional_dispatch_spare_only_the_slack_units():
    """Under the proportional dispatch (``solver_mode=0``) the slack-bus units take up the
    imbalance beyond their limits by design: with every unit asked off, those held on by
    their minimum up time cannot meet the load and the slack unit overshoots its p_max.
    The limits law spares exactly those units and still catches any other."""
    from powerzoojax.testing import record_trajectory

    env, params = _commitment_env()
    actions = jnp.asarray(np.concatenate([-np.ones((12, 5)), np.zeros((12, 5))], axis=1), jnp.float32)
    traj, _ = record_trajectory(env, params, jr.PRNGKey(0), actions)
    law = {law.name: law for law in env.physics_invariants(params)}["uc_committed_unit_limits"]
    slack = np.asarray(params.network.slack_unit_weights) > 0
    p = np.asarray(traj.next_state.unit_power_mw)
    assert (p[:, slack] > np.asarray(params.case.unit_p_max)[slack] + 1.0).any()
    assert law.violations(traj, params) == []
    on_other = (np.asarray(traj.next_state.unit_status) > 0) & ~slack
    t, unit = np.argwhere(on_other)[0]
    beyond = p.copy()
    beyond[t, unit] = float(params.case.unit_p_max[unit]) + 10.0
    pushed = traj._replace(next_state=eqx.tree_at(lambda s: s.unit_power_mw, traj.next_state, beyond))
    assert [step for step, _ in law.violations(pushed, params)] == [t]


def test_startup_and_no_load_costs(case5):
    off_then_on = np.asarray([[-1.0] * 5] * 3 + [[1.0] * 5] * 3, np.float32)
    actions = np.concatenate([off_then_on, np.zeros_like(off_then_on)], axis=1)
    params, trace, status, _ = _status_run(case5, actions)
    startup = np.asarray(trace.info["startup_cost"])
    no_load = np.asarray(trace.info["no_load_cost"])
    n_on_after = status[1:].sum(1)
    np.testing.assert_allclose(no_load[:-1], n_on_after * 40.0 * 0.5, rtol=1e-6)
    started = ((status[1:] == 1) & (status[:-1] == 0)).sum(1)
    np.testing.assert_allclose(startup[:-1], started * 500.0, rtol=1e-6)
    assert startup.sum() > 0
    op = np.asarray(trace.info["gen_cost"]) + startup + no_load
    np.testing.assert_allclose(np.asarray(trace.reward), -1e-4 * op, rtol=1e-5)


def test_reserve_shortfall_when_capacity_short(case5):
    from powerzoojax.grid import UnitCommitmentEnv

    env = UnitCommitmentEnv()
    params = _params(case5, solver_mode=1, keep_time=10, min_up_steps=1, min_down_steps=1)
    _, state = _jitted(env)[0](jr.PRNGKey(0), params)
    only_last = jnp.asarray([-1, -1, -1, -1, 1, 0, 0, 0, 0, 0], jnp.float32)  # keep the 600 MW unit
    _, state2, _, costs, _, info = _jitted(env)[1](jr.PRNGKey(1), state, only_last, params)
    load = float(np.asarray(params.total_load_mw)[0])
    expected = load * 1.05 - 600.0
    assert expected > 0
    assert float(costs[1]) == pytest.approx(expected, rel=1e-5)
    assert float(info["reserve_shortfall"]) == pytest.approx(expected, rel=1e-5)
    assert not bool(info["is_safe"]) and int(info["n_violations"]) >= 1
    assert float(info["unserved_mw"]) == pytest.approx(load - 600.0, rel=1e-4)
    # Reserve disabled: the same step is not charged.
    params_off = _params(case5, solver_mode=1, keep_time=10, min_up_steps=1, min_down_steps=1, enable_reserve=False)
    _, s_off = _jitted(env)[0](jr.PRNGKey(0), params_off)
    _, _, _, costs_off, _, _ = _jitted(env)[1](jr.PRNGKey(1), s_off, only_last, params_off)
    assert float(costs_off[1]) == 0.0


@pytest.mark.parametrize("solver_mode", [0, 1])
def test_ramp_limits_hold(case5, solver_mode):
    from powerzoojax.core import episode_rollout
    from powerzoojax.grid import UnitCommitmentEnv

    env = UnitCommitmentEnv()
    # The benchmark table's reset dispatch is already the economic one, so the preference
    # must outweigh cost gaps of $1-4/MWh to move it: weight 0.1 tilts unit 1 by up to $17.
    params = _params(
        case5, max_steps=5, solver_mode=solver_mode, ramp_up_frac=0.2, ramp_down_frac=0.2, keep_time=10,
        dispatch_preference_weight=0.1,
    )
    prefs = jnp.asarray([[1.0] * 5, [-1.0] * 5, [1.0] * 5, [-1.0] * 5], jnp.float32)
    policy = lambda obs, state, key: jnp.concatenate([jnp.ones(5), prefs[state.time_step % 4]])  # noqa: E731
    trace = jax.jit(lambda k: episode_rollout(env, params, k, policy, n_steps=4))(jr.PRNGKey(0))
    pmax = np.asarray(case5.unit_p_max)
    last = np.asarray(trace.obs)[:, 10:15] * np.maximum(pmax, 1.0)  # last dispatch before each step
    ramp = 0.2 * pmax * 0.5
    step = np.diff(last, axis=0)
    slack = np.asarray(params.network.slack_unit_weights) > 0
    if solver_mode == 0:
        step = step[:, ~slack]  # the slack unit balances the network, unbounded by design
        ramp = ramp[~slack]
    assert np.all(np.abs(step) <= ramp + 1e-2)
    assert np.abs(step).max() > 1.0  # the preference does move the dispatch
    # Spec §2 info key: the DC-OPF's iteration count per step (no OPF in solver_mode 0).
    iters = np.asarray(trace.info["opf_iterations"])
    if solver_mode == 0:
        np.testing.assert_array_equal(iters, 0)
    else:
        # Linear costs: the dual simplex's pivots from the merit order (0 when no line
        # binds), within its budget of 4 (monitored lines + 1) + units.
        budget = max(params.dcopf_max_iter, 4 * (int(params.dcopf.mon_idx.shape[0]) + 1) + case5.n_units)
        assert np.all(iters >= 0) and np.all(iters < budget), iters
        assert np.all(np.asarray(trace.info["opf_converged"]))
        np.testing.assert_array_equal(np.asarray(trace.info["opf_status"]), 0)


def test_disabled_uc_keeps_everything_on(case5):
    from powerzoojax.grid import UnitCommitmentEnv

    env = UnitCommitmentEnv()
    params = _params(case5, solver_mode=0, enable_uc=False)
    _, state = _jitted(env)[0](jr.PRNGKey(0), params)
    _, state2, _, _, _, info = _jitted(env)[1](jr.PRNGKey(1), state, -jnp.ones(10), params)
    assert np.all(np.asarray(state2.unit_status) == 1)
    assert float(info["startup_cost"]) == 0.0 and float(info["no_load_cost"]) == 0.0


def test_factory_errors(case5):
    from powerzoojax.grid import make_uc_params

    with pytest.raises(ValueError, match="forecast_horizon_steps must be >= 0, got -1"):
        make_uc_params(case5, forecast_horizon_steps=-1)
    with pytest.raises(ValueError, match="needs at least fixed_episode_start_idx \\+ max_steps = 12"):
        make_uc_params(case5, load_profiles=np.ones((10, 5)), max_steps=10, fixed_episode_start_idx=2)
    with pytest.raises(ValueError, match=r"min_up_steps must be a scalar or have shape \(n_units,\) = \(5,\)"):
        make_uc_params(case5, min_up_steps=[1, 2])
    with pytest.raises(ValueError, match="init_state must hold 0"):
        make_uc_params(case5, init_state=[1, 0, 2, 1, 1])
    with pytest.raises(ValueError, match="solver_mode must be 0"):
        make_uc_params(case5, solver_mode=2)


def test_uc_data_come_from_the_case_columns_and_arguments_override_them(case118):
    from powerzoojax.case import load_case
    from powerzoojax.grid import make_uc_params

    params = make_uc_params(case118, max_steps=2)
    dt = float(params.delta_t_hours)
    p_max = np.asarray(case118.unit_p_max, np.float64)
    np.testing.assert_allclose(np.asarray(params.ramp_up_mw), np.asarray(case118.unit_ramp_up) * p_max * dt, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(params.min_up_steps), np.asarray(case118.unit_min_up_time))
    np.testing.assert_array_equal(np.asarray(params.min_down_steps), np.asarray(case118.unit_min_down_time))
    np.testing.assert_allclose(np.asarray(params.startup_cost), np.asarray(case118.unit_startup_cost), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(params.no_load_cost_per_step), np.asarray(case118.unit_no_load_cost) * dt, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(params.init_status), np.asarray(case118.unit_init_state))
    np.testing.assert_array_equal(np.asarray(params.init_time_in_state), np.abs(np.asarray(case118.unit_keep_time)))
    np.testing.assert_allclose(np.asarray(params.init_dispatch), np.asarray(case118.unit_init_power), rtol=1e-6)
    assert 0 < int(np.asarray(params.init_status).sum()) < case118.n_units  # the table starts some units off
    # An argument overrides the column; a case without columns takes the documented defaults.
    over = make_uc_params(case118, max_steps=2, min_up_steps=3, startup_cost=0.0)
    assert np.all(np.asarray(over.min_up_steps) == 3) and np.all(np.asarray(over.startup_cost) == 0.0)
    np.testing.assert_array_equal(np.asarray(over.min_down_steps), np.asarray(case118.unit_min_down_time))
    bare = make_uc_params(load_case("118", source="matpower"), max_steps=2)
    assert np.all(np.asarray(bare.min_up_steps) == 1) and np.all(np.asarray(bare.init_status) == 1)
    assert np.all(np.asarray(bare.startup_cost) == 0.0)


def test_dc_opf_objective_is_linear_by_default(case118):
    from powerzoojax.grid import make_uc_params

    linear = make_uc_params(case118, max_steps=2).dcopf
    assert np.all(np.asarray(linear.cost_a) == 0) and np.all(np.asarray(linear.cost_b) == 0)
    np.testing.assert_allclose(np.asarray(linear.cost_c), np.asarray(case118.unit_cost_c))
    poly = make_uc_params(case118, max_steps=2, opf_objective="polynomial").dcopf
    np.testing.assert_allclose(np.asarray(poly.cost_b), np.asarray(case118.unit_cost_b))
    with pytest.raises(ValueError, match=r"opf_objective must be one of \('polynomial', 'linear'\), got 'cubic'"):
        make_uc_params(case118, max_steps=2, opf_objective="cubic")
