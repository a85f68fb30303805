"""DataCenterEnv (spec §4.7): contract, task bookkeeping, the greedy scheduler and the
countdown against plain-Python references, arrival statistics against scipy, power and thermal formulas against
NumPy, cooling direction, SLA and over-temperature diagnostics, factory errors."""

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powerzoojax.testing import env_property_test


def _params(**kw):
    from powerzoojax.grid import make_datacenter_params

    return make_datacenter_params(**kw)


@functools.lru_cache(maxsize=None)
def _env():
    from powerzoojax.grid import DataCenterEnv

    return DataCenterEnv()


@functools.lru_cache(maxsize=None)
def _step():
    return jax.jit(_env().step)


@functools.lru_cache(maxsize=None)
def _run(length: int):
    """Jitted rollout of ``length`` steps with fixed actions; returns every state."""
    from powerzoojax.core import bind_step, rollout

    env = _env()

    @jax.jit
    def run(key, params, actions):
        _, state = env.reset(key, params)

        def step(k, s, a):
            obs, s2, r, c, d, info = bind_step(env, params)(k, s, a)
            return obs, s2, s2, c, info

        _, _, (obs, states, costs, info) = rollout(step, key, state, actions, length=length)
        return states, costs, info

    return run


def test_conformance_kit():
    from powerzoojax.testing import check_env_api, check_no_retrace

    params = _params(max_steps=4)
    check_env_api(_env(), params, stochastic=True)
    assert check_no_retrace(_env(), params, n_episodes=2) == {"reset": 1, "step": 1, "rollout": 1}


def test_spaces_names_and_reset():
    params = _params()
    env = _env()
    assert env.observation_space(params).shape == (11,)
    assert env.action_space(params).shape == (3,)
    assert env.constraint_names(params) == ("sla", "overtemp")
    obs, state = env.reset(jr.PRNGKey(0), params)
    assert float(state.t_zone) == float(state.t_setpoint) == 22.0 and float(state.t_outdoor) == 20.0
    assert state.task_status.shape == (64,) and int(jnp.sum(state.task_status)) == 0
    assert float(obs[4]) == 1.0  # urgency with an empty queue


# A busy buffer: arrivals every step, long jobs, few GPUs, so slots fill, tasks expire and
# arrivals get dropped.
_STRESS = dict(
    n_gpus=300, infer_gpu_peak=100, mean_interarrival_steps=(0.4, 0.5),
    task_gpus_range=((40, 120), (10, 60)), task_duration_range=((20, 60), (10, 30)), max_steps=10_000,
)


@env_property_test(lambda: (_env(), _params(**_STRESS)), n_steps=150, max_examples=8)
def test_task_bookkeeping_never_loses_tasks(env, params, trajectory):
    """The kit checks the data centre's laws on every step, ``task_bookkeeping`` among them
    (arrived = waiting + running + finished + expired + dropped). Here: the buffer really
    filled up, and the counters and costs agree with the steps' reports."""
    states, info = trajectory.next_state, trajectory.info
    assert "task_bookkeeping" in [law.name for law in env.physics_invariants(params)]
    assert int(np.asarray(states.n_arrived)[-1]) > 64  # the buffer was really exercised
    assert int(np.asarray(states.n_dropped)[-1]) == int(np.asarray(info["n_dropped"]).sum())
    # Active GPUs never exceed the fleet (running jobs are not pre-empted when inference grows,
    # so the cap is on the active count).
    assert np.all(np.asarray(states.gpus_active) <= 300)
    # SLA cost is expired tasks / n_gpus.
    np.testing.assert_allclose(trajectory.costs[:, 0], np.asarray(info["n_expired"]) / 300.0, rtol=1e-6)


def test_datacenter_laws_catch_a_lost_task_and_a_wrong_zone_temperature():
    from powerzoojax.testing import record_trajectory

    env, params = _env(), _params(**_STRESS)
    actions = jnp.tile(jnp.array([0.5, 0.5, 0.5], jnp.float32), (150, 1))
    traj, _ = record_trajectory(env, params, jr.PRNGKey(0), actions)
    laws = {law.name: law for law in env.physics_invariants(params)}
    assert all(law.violations(traj, params) == [] for law in laws.values())

    def tampered(where, value):
        return traj._replace(next_state=eqx.tree_at(where, traj.next_state, value))

    lost = tampered(lambda s: s.n_finished, np.asarray(traj.next_state.n_finished) - 1)
    assert len(laws["task_bookkeeping"].violations(lost, params)) == 150
    warmer = tampered(lambda s: s.t_zone, np.asarray(traj.next_state.t_zone) + 0.1)
    assert laws["zone_heat_balance"].violations(warmer, params)
    assert laws["zone_temperature_bounds"].violations(tampered(lambda s: s.t_zone, np.full(150, 46.0, np.float32)), params)
    free_cooling = tampered(lambda s: s.p_cool_mw, 0.5 * np.asarray(traj.next_state.p_cool_mw))
    assert laws["chiller_cop"].violations(free_cooling, params) and laws["site_power"].violations(free_cooling, params)


def _reference_schedule(gpus, deadline, duration, ttype, status, remaining, t, n, infer, r_train, r_ft):
    """The §4.7 admission rule written as a plain loop over Python lists."""
    status = list(status)
    remaining = list(remaining)
    n_slots = len(status)

    def avail():
        return max(n - infer - sum(gpus[i] for i in range(n_slots) if status[i] == 2), 0)

    def admit(order, budget):
        used = 0
        for i in order:
            if used + gpus[i] > budget:
                break
            used += gpus[i]
            status[i] = 2
            remaining[i] = duration[i]

    slack = [deadline[i] - t - duration[i] for i in range(n_slots)]
    urgent = [i for i in range(n_slots) if status[i] == 1 and slack[i] <= 0]
    admit(sorted(urgent, key=lambda i: (deadline[i], i)), avail())
    for kind, frac in ((0, r_train), (1, r_ft)):
        budget = int(np.float32(frac) * np.float32(avail()))
        cands = [i for i in range(n_slots) if status[i] == 1 and ttype[i] == kind]
        admit(sorted(cands, key=lambda i: (slack[i], i)), budget)
    return status, remaining


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), r_train=st.floats(0, 1), r_ft=st.floats(0, 1), infer=st.integers(0, 300))
def test_scheduler_matches_plain_python_reference(seed, r_train, r_ft, infer):
    rng = np.random.default_rng(seed)
    n_slots, t, n = 64, 40, 600
    status = rng.choice([0, 1, 1, 2], n_slots)
    gpus = rng.integers(5, 120, n_slots)
    duration = rng.integers(1, 30, n_slots)
    deadline = t + rng.integers(-5, 40, n_slots)
    ttype = rng.integers(0, 2, n_slots)
    remaining = np.where(status == 2, rng.integers(1, 10, n_slots), 0)
    _assert_schedule_matches_reference(gpus, deadline, duration, remaining, ttype, status, t, n, infer, r_train, r_ft)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), r_train=st.floats(0, 1), r_ft=st.floats(0, 1), wide=st.booleans())
def test_scheduler_ties_and_wide_keys_match_reference(seed, r_train, r_ft, wide):
    """Sort-key packing: many equal deadlines and slacks (ties go by slot), or keys spread
    over the whole exact span around a late ``t``."""
    from powerzoojax.grid.microgrid._scheduler import KEY_SPAN

    rng = np.random.default_rng(seed)
    n_slots, n = 64, 800
    t = int(rng.integers(0, 10**6))
    status = rng.choice([0, 1, 1, 1, 2], n_slots)
    gpus = rng.integers(1, 90, n_slots)
    ttype = rng.integers(0, 2, n_slots)
    if wide:
        duration = rng.integers(1, KEY_SPAN // 2, n_slots)
        deadline = t + rng.integers(-KEY_SPAN // 2 + 1, KEY_SPAN // 2, n_slots)
    else:
        duration = rng.choice([1, 2, 3], n_slots)
        deadline = t + rng.choice([0, 1, 2, 3], n_slots)
    remaining = np.where(status == 2, 1, 0)
    infer = int(rng.integers(0, 400))
    _assert_schedule_matches_reference(gpus, deadline, duration, remaining, ttype, status, t, n, infer, r_train, r_ft)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), r_train=st.floats(0, 1), r_ft=st.floats(0, 1))
def test_scheduler_exact_with_the_largest_task_sizes(seed, r_train, r_ft):
    """Prefix sums run in float32 (a triangular matmul): GPU counts up to ``MAX_TASK_GPUS``
    on every slot keep the running totals exact, so admission still matches the reference
    at the last GPU."""
    from powerzoojax.grid.microgrid._scheduler import MAX_TASK_GPUS

    rng = np.random.default_rng(seed)
    n_slots, t = 64, 500
    status = rng.choice([0, 1, 1, 1, 2], n_slots)
    gpus = MAX_TASK_GPUS - rng.integers(0, 3, n_slots)
    gpus[rng.random(n_slots) < 0.2] = rng.integers(1, 5)
    duration = rng.integers(1, 30, n_slots)
    deadline = t + rng.integers(-5, 40, n_slots)
    ttype = rng.integers(0, 2, n_slots)
    remaining = np.where(status == 2, 1, 0)
    n = int(gpus.sum()) + 7
    infer = int(rng.integers(0, n // 4))
    _assert_schedule_matches_reference(gpus, deadline, duration, remaining, ttype, status, t, n, infer, r_train, r_ft)


def test_prefix_sum_is_exact_up_to_its_bound():
    from powerzoojax.grid.microgrid._scheduler import MAX_TASK_GPUS, _cumsum

    rng = np.random.default_rng(0)
    x = rng.integers(0, MAX_TASK_GPUS + 1, (200, 64))
    x[0] = MAX_TASK_GPUS  # the largest total the scheduler can meet: 64 * MAX_TASK_GPUS < 2**24
    x[1] = rng.integers(0, 2, 64)
    got = np.asarray(jax.jit(jax.vmap(_cumsum))(jnp.asarray(x, jnp.int32)))
    np.testing.assert_array_equal(got, np.cumsum(x, axis=1))


def _assert_schedule_matches_reference(gpus, deadline, duration, remaining, ttype, status, t, n, infer, r_train, r_ft):
    """One scheduler call on a 64-slot queue against the Python EDF reference."""
    from powerzoojax.grid.microgrid._scheduler import TaskQueue

    q = TaskQueue(*(jnp.asarray(x, jnp.int32) for x in (gpus, deadline, duration, remaining, ttype)),
                  jnp.full(len(gpus), 0.9, jnp.float32), jnp.asarray(status, jnp.int32))
    out, load = _schedule_jit()(q, jnp.int32(t), jnp.int32(n), jnp.int32(infer), jnp.float32(r_train), jnp.float32(r_ft))
    ref_status, ref_remaining = _reference_schedule(
        gpus.tolist(), deadline.tolist(), duration.tolist(), ttype.tolist(), status.tolist(), remaining.tolist(),
        t, n, infer, r_train, r_ft,
    )
    np.testing.assert_array_equal(np.asarray(out.status), ref_status)
    np.testing.assert_array_equal(np.asarray(out.remaining), ref_remaining)
    # The load the data centre uses for its power: the GPUs of every running task afterwards.
    assert int(load) == int(sum(g for g, st in zip(gpus.tolist(), ref_status) if st == 2))


@functools.lru_cache(maxsize=None)
def _schedule_jit():
    from powerzoojax.grid.microgrid._scheduler import schedule_with_load

    return jax.jit(schedule_with_load)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), r_train=st.floats(0, 1), r_ft=st.floats(0, 1))
def test_scheduler_exact_with_a_huge_fleet(seed, r_train, r_ft):
    """Stage budgets beyond 2**24 GPUs: each budget is stored once per env through a float
    division (``store_once``) in 12-bit halves, so it must stay exact (small train / fine-tune
    fractions put the cut inside the queue)."""
    from powerzoojax.grid.microgrid._scheduler import MAX_TASK_GPUS

    rng = np.random.default_rng(seed)
    n_slots, t = 64, 7
    status = rng.choice([0, 1, 1, 1, 2], n_slots)
    gpus = MAX_TASK_GPUS - rng.integers(0, 3, n_slots)
    duration = rng.integers(1, 30, n_slots)
    deadline = t + rng.integers(-5, 40, n_slots)
    ttype = rng.integers(0, 2, n_slots)
    remaining = np.where(status == 2, 1, 0)
    n = int(rng.integers(2**25, 2**28))
    infer = int(rng.integers(0, n - 2**24))  # over 2**24 free GPUs; small fractions cut the queue
    _assert_schedule_matches_reference(gpus, deadline, duration, remaining, ttype, status, t, n, infer, r_train, r_ft)


def _reference_advance(status, remaining, deadline, t):
    status, remaining = list(status), list(remaining)
    finished = expired = 0
    for i in range(len(status)):
        if status[i] == 2:
            remaining[i] = max(remaining[i] - 1, 0)
            if remaining[i] == 0:
                status[i], finished = 0, finished + 1
        elif status[i] == 1 and t >= deadline[i]:
            status[i], expired = 0, expired + 1
    return status, remaining, finished, expired


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_advance_matches_plain_python_reference(seed):
    """The countdown and expiry step (its status and events are stored once through a float
    division, ``store_once``) against a loop over Python lists."""
    from powerzoojax.grid.microgrid._scheduler import TaskQueue

    rng = np.random.default_rng(seed)
    n_slots, t = 64, int(rng.integers(0, 10**6))
    status = rng.choice([0, 1, 2], n_slots)
    remaining = rng.integers(0, 4, n_slots)
    deadline = t + rng.integers(-3, 4, n_slots)
    q = TaskQueue(*(jnp.asarray(x, jnp.int32) for x in (rng.integers(1, 90, n_slots), deadline, rng.integers(1, 30, n_slots),
                                                       remaining, rng.integers(0, 2, n_slots))),
                  jnp.full(n_slots, 0.9, jnp.float32), jnp.asarray(status, jnp.int32))
    out, n_finished, n_expired = _advance_jit()(q, jnp.int32(t))
    ref_status, ref_remaining, ref_finished, ref_expired = _reference_advance(status.tolist(), remaining.tolist(), deadline.tolist(), t)
    np.testing.assert_array_equal(np.asarray(out.status), ref_status)
    np.testing.assert_array_equal(np.asarray(out.remaining), ref_remaining)
    assert (int(n_finished), int(n_expired)) == (ref_finished, ref_expired)
    assert ref_finished + ref_expired > 0


@functools.lru_cache(maxsize=None)
def _advance_jit():
    from powerzoojax.grid.microgrid._scheduler import advance

    return jax.jit(advance)


def test_store_once_is_exact():
    """``store_once`` returns its integer input bit for bit, batched and unbatched, up to
    ``|x| < 2**24`` (the range its callers keep to)."""
    from powerzoojax.physics._pin import store_once

    rng = np.random.default_rng(0)
    x = rng.integers(-(2**24) + 1, 2**24, (256, 64)).astype(np.int32)
    x[0, :4] = [2**24 - 1, -(2**24) + 1, 0, 1]
    like = rng.integers(-(2**31), 2**31 - 1, (256, 64)).astype(np.int32)
    got = jax.jit(jax.vmap(store_once))(jnp.asarray(x), jnp.asarray(like))
    np.testing.assert_array_equal(np.asarray(got), x)
    np.testing.assert_array_equal(np.asarray(jax.jit(store_once)(jnp.asarray(x[1]), jnp.int32(3))), x[1])


def test_capped_poisson_matches_scipy():
    from scipy import stats

    from powerzoojax.grid.microgrid._scheduler import poisson_capped

    rate = np.array([0.125, 0.25, 1.5, 4.0], np.float32)
    u = jr.uniform(jr.PRNGKey(3), (40_000, 4))
    draws = np.asarray(jax.vmap(lambda x: poisson_capped(x, jnp.asarray(rate), 5))(u))
    for j, lam in enumerate(rate):
        pmf = stats.poisson.pmf(np.arange(5), lam)
        expected = np.append(pmf, 1.0 - pmf.sum())
        observed = np.bincount(draws[:, j], minlength=6) / draws.shape[0]
        np.testing.assert_allclose(observed, expected, atol=0.01)


def test_power_and_thermal_formulas_match_numpy():
    # No arrivals (huge inter-arrival): IT power is inference + idle GPUs + base.
    params = _params(mean_interarrival_steps=(1e9, 1e9), infer_fraction_profile=[0.7], outdoor_temp_profile=[31.0])
    env = _env()
    _, state = env.reset(jr.PRNGKey(0), params)
    state = eqx.tree_at(lambda s: s.t_zone, state, jnp.float32(26.0))
    obs, new, _, costs, _, info = _step()(jr.PRNGKey(1), state, jnp.array([0.0, 0.0, 0.25]), params)
    infer = math.floor(400 * np.float32(0.7))
    p_it = (infer * 580 * 0.5 + (1000 - infer) * 55) / 1e6 + 0.5
    t_set = 18 + 0.25 * 9
    cop = 5 * np.clip(1 - 0.04 * max(31 - 20, 0), 0.4, 1.2)
    q_cool = 200 * max(26 - t_set, 0)
    p_cool = q_cool / (1000 * cop)
    t_zone = np.clip(26 + 0.5 * (1000 * p_it - q_cool + 5 * (31 - 26)) / 500, 15, 45)
    np.testing.assert_allclose(float(info["p_it_mw"]), p_it, rtol=1e-5)
    np.testing.assert_allclose(float(info["p_cool_mw"]), p_cool, rtol=1e-5)
    np.testing.assert_allclose(float(info["p_dc_mw"]), p_it * 1.05 + p_cool, rtol=1e-5)
    np.testing.assert_allclose(float(new.t_zone), t_zone, rtol=1e-5)
    np.testing.assert_allclose(float(new.current_p_mw), -(p_it * 1.05 + p_cool), rtol=1e-5)
    assert int(new.gpus_infer) == infer and int(new.gpus_active) == infer


@settings(max_examples=10, deadline=None)
@given(t_zone=st.floats(16.0, 44.0), t_out=st.floats(-5.0, 40.0), low=st.floats(0.0, 0.5), high=st.floats(0.5, 1.0))
def test_zone_temperature_responds_to_cooling(t_zone, t_out, low, high):
    params = _params(outdoor_temp_profile=[t_out])
    _, state = _env().reset(jr.PRNGKey(0), params)
    state = eqx.tree_at(lambda s: s.t_zone, state, jnp.float32(t_zone))
    key = jr.PRNGKey(7)
    _, cold, *_, info_cold = _step()(key, state, jnp.array([0.3, 0.3, low]), params)
    _, warm, *_, info_warm = _step()(key, state, jnp.array([0.3, 0.3, high]), params)
    # A lower setpoint (more cooling) never leaves the zone warmer and never uses less cooling power.
    assert float(cold.t_zone) <= float(warm.t_zone) + 1e-5
    assert float(info_cold["p_cool_mw"]) >= float(info_warm["p_cool_mw"]) - 1e-7
    assert 15.0 <= float(cold.t_zone) <= 45.0 and np.isfinite(float(warm.t_zone))


def test_long_rollout_keeps_temperature_finite_and_ordered():
    params = _params(max_steps=10_000)
    run = _run(150)
    means = []
    for cool in (0.0, 1.0):
        actions = jnp.tile(jnp.array([0.5, 0.5, cool], jnp.float32), (150, 1))
        states, _, _ = run(jr.PRNGKey(0), params, actions)
        tz = np.asarray(states.t_zone)
        assert np.all(np.isfinite(tz)) and tz.min() >= 15.0 and tz.max() <= 45.0
        means.append(tz[50:].mean())
    assert means[0] < means[1] - 1.0


def test_overtemp_and_sla_diagnostics():
    # No cooling capacity and a hot start: the zone crosses t_critical.
    hot = _params(ua_cooling_kw_per_c=0.0, t_initial=44.0, outdoor_temp_profile=[40.0])
    _, state = _env().reset(jr.PRNGKey(0), hot)
    _, new, _, costs, _, info = _step()(jr.PRNGKey(0), state, jnp.array([0.0, 0.0, 1.0]), hot)
    np.testing.assert_allclose(float(costs[1]), (float(new.t_zone) - 35.0) / 10.0, rtol=1e-5)
    assert float(costs[1]) > 0 and float(info["cost_overtemp"]) == float(costs[1])
    # All GPUs busy with inference: batch tasks can never start and expire.
    busy = _params(infer_gpu_peak=1000, infer_fraction_profile=[1.0], max_steps=10_000, mean_interarrival_steps=(1.0, 1.0))
    actions = jnp.tile(jnp.array([1.0, 1.0, 0.5], jnp.float32), (150, 1))
    states, costs, info = _run(150)(jr.PRNGKey(2), busy, actions)
    assert int(np.asarray(states.sla_violations)[-1]) > 0
    assert int(np.asarray(states.n_finished)[-1]) == 0
    np.testing.assert_allclose(np.asarray(costs[:, 0]).sum(), int(np.asarray(states.sla_violations)[-1]) / 1000.0, rtol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_gpus": 0}, "n_gpus"),
        ({"t_set_min": 27.0, "t_set_max": 18.0}, "t_set_min"),
        ({"infer_gpu_peak": 2000}, "infer_gpu_peak"),
        ({"task_gpus_range": ((50, 20), (10, 50))}, "task_gpus_range"),
        ({"task_eta": (1.5, 0.5)}, "task_eta"),
        ({"infer_fraction_profile": [0.5, np.nan]}, "infer_fraction_profile"),
        ({"infer_fraction_profile": [[0.5]]}, "infer_fraction_profile"),
        ({"mean_interarrival_steps": (8.0,)}, "mean_interarrival_steps"),
        ({"cop_ref": -1.0}, "cop_ref"),
        ({"task_duration_range": ((10, 3_000_000), (5, 20))}, "deadline_slack"),
        ({"n_gpus": 10**6, "task_gpus_range": ((50, 300_000), (10, 50))}, "task_gpus_range"),
        ({"task_duration_range": ((10, 2**24), (5, 20)), "deadline_slack": (1e-3, 3.0)}, "task_duration_range"),
    ],
)
def test_factory_errors_name_the_bad_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _params(**kwargs)


def test_bad_action_shape():
    params = _params()
    _, state = _env().reset(jr.PRNGKey(0), params)
    with pytest.raises(ValueError, match="shape"):
        _env().step(jr.PRNGKey(0), state, jnp.zeros(5), params)


def test_step_uniforms_are_bit_identical_to_jax_random():
    """The unrolled hash draws exactly ``jr.uniform(jr.split(key)[0], (22,))``, so the env's
    random stream is the ``jax.random`` one (raw, derived, batched and typed keys)."""
    from powerzoojax.grid.microgrid._rng import step_uniforms

    keys = jnp.concatenate([jr.split(jr.PRNGKey(11), 64), jr.PRNGKey(2**31 - 1)[None], jr.PRNGKey(0)[None]])
    ours = jax.jit(jax.vmap(lambda k: step_uniforms(k, 22)))(keys)
    ref = jax.vmap(lambda k: jr.uniform(jr.split(k)[0], (22,)))(keys)
    np.testing.assert_array_equal(np.asarray(ours).view(np.uint32), np.asarray(ref).view(np.uint32))
    typed = jr.key(5)
    np.testing.assert_array_equal(np.asarray(step_uniforms(typed, 22)), np.asarray(jr.uniform(jr.split(typed)[0], (22,))))


def test_slot_reductions_match_numpy():
    """The folded integer reductions (halving the slot axis before reducing; measured 2026-12-01)
    against NumPy, batched and unbatched, with extreme int32 values and sums up to the
    scheduler's ``2**24`` bound."""
    from powerzoojax.grid.microgrid._scheduler import slot_max, slot_sum

    rng = np.random.default_rng(3)
    big = rng.integers(-(2**31), 2**31 - 1, (64, 64)).astype(np.int32)
    big[0] = -(2**31)
    big[1, 17] = 2**31 - 1
    got = np.asarray(jax.jit(jax.vmap(slot_max))(jnp.asarray(big)))
    np.testing.assert_array_equal(got, big.max(axis=1))
    small = rng.integers(0, 2**18, (64, 64)).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(slot_sum))(jnp.asarray(small))), small.sum(axis=1))
    np.testing.assert_array_equal(np.asarray(jax.jit(slot_sum)(jnp.asarray(small[5]))), small[5].sum())
    odd = rng.integers(-50, 50, (4, 10)).astype(np.int32)  # widths the fold leaves alone
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(slot_max))(jnp.asarray(odd))), odd.max(axis=1))


@functools.lru_cache(maxsize=None)
def _insert_jit():
    from powerzoojax.grid.microgrid._scheduler import insert_arrivals

    return jax.jit(insert_arrivals)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), huge=st.booleans())
def test_insert_matches_plain_python_reference(seed, huge):
    """Arrivals, training first, fill the lowest free slots (the candidate table is stored
    once through a float division; measured 2026-12-01), against a Python loop; with ``huge`` the
    GPU counts and durations reach the factory's bounds (``MAX_TASK_GPUS``,
    ``MAX_TASK_DURATION``), where the division must still be exact."""
    from powerzoojax.grid.microgrid._scheduler import (
        MAX_ARRIVALS,
        MAX_TASK_DURATION,
        MAX_TASK_GPUS,
        Arrivals,
        TaskQueue,
    )

    rng = np.random.default_rng(seed)
    n_slots, t = 64, int(rng.integers(0, 1000))
    status = rng.choice([0, 1, 2], n_slots, p=[0.2, 0.4, 0.4])
    fields = [rng.integers(1, 90, n_slots), rng.integers(0, 500, n_slots), rng.integers(1, 30, n_slots),
              rng.integers(0, 30, n_slots), rng.integers(0, 2, n_slots)]
    count = rng.integers(0, MAX_ARRIVALS + 1, 2)
    gpus = rng.integers(1, MAX_TASK_GPUS + 1, 2 * MAX_ARRIVALS)
    low, high = (2**23, MAX_TASK_DURATION + 1) if huge else (1, 4000)
    duration = rng.integers(low, high, 2 * MAX_ARRIVALS)
    if huge:
        gpus[0], duration[:2] = MAX_TASK_GPUS, MAX_TASK_DURATION
    slack = np.array([0.01, 0.02]) if huge else np.array([2.0, 3.0])
    eta = np.array([0.9, 0.75])
    q = TaskQueue(*(jnp.asarray(x, jnp.int32) for x in fields), jnp.full(n_slots, 0.5, jnp.float32),
                  jnp.asarray(status, jnp.int32))
    arr = Arrivals(jnp.asarray(count, jnp.int32), jnp.asarray(gpus, jnp.int32), jnp.asarray(duration, jnp.int32))
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    out, n_in, n_drop = _insert_jit()(q, arr, jnp.int32(t), f32(slack), f32(eta))

    ref = [list(map(int, f)) for f in fields] + [[0.5] * n_slots, list(map(int, status))]
    new = [(0, j) for j in range(count[0])] + [(1, j) for j in range(count[1])]
    free = [i for i in range(n_slots) if status[i] == 0]
    for (kind, j), i in zip(new, free):
        c = kind * MAX_ARRIVALS + j
        dl = t + int(np.float32(duration[c]) * np.float32(slack[kind]))
        for f, v in zip(ref, (gpus[c], dl, duration[c], 0, kind, np.float32(eta[kind]), 1)):
            f[i] = v
    for got, want in zip(out, ref):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want, np.asarray(got).dtype))
    assert int(n_in) == min(len(new), len(free)) and int(n_drop) == len(new) - int(n_in)
