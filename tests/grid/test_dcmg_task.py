"""DCMG task: TaskSpec conformance, splits and windows, OOD transforms (each changes what it
names and nothing else), baselines on the rollout kernel, metrics against NumPy sums."""

import functools

import jax
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@functools.lru_cache(maxsize=None)
def _task():
    from powerzoojax.tasks import get_task

    return get_task("dc_microgrid")


def _leaves(params):
    return {jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in jax.tree_util.tree_leaves_with_path(params)}


def test_task_is_registered_and_conforms():
    from powerzoojax.core import TaskSpec
    from powerzoojax.grid import DataCenterMicrogridEnv, DCMicrogridShapingWrapper

    task = _task()
    assert isinstance(task, TaskSpec)
    assert task.task_name == "dc_microgrid"
    assert task.default_splits == ("train", "iid", "cooling_stress", "renewable_drought")
    assert task.baseline_names()[0] == "no_control"
    assert isinstance(task.make_env("iid"), DataCenterMicrogridEnv)
    # Training env (spec DCMG row: training shaping, DG auto-balances); evaluation stays plain.
    train_env = task.make_train_env("train")
    assert isinstance(train_env, DCMicrogridShapingWrapper) and train_env.dg_autobalance
    assert (train_env.w_sla, train_env.w_overtemp, train_env.w_deficit, train_env.w_spill, train_env.w_tracking) == (
        50.0, 30.0, 200.0, 100.0, 40.0)
    spec = task.constraint_spec()
    assert spec.selected_names == ("sla", "overtemp", "power_deficit") and spec.thresholds == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="split"):
        task.make_env("summer")
    with pytest.raises(ValueError, match="baseline"):
        task.baseline_policy("oracle", task.make_params("iid"))


def test_frozen_case_and_windows():
    from powerzoojax.data import load_workload_profile

    task = _task()
    trace = load_workload_profile("google").cpu_util
    p = task.episode_params("train", 0, 1, 288)
    assert float(p.dg_p_max_mw) == pytest.approx(1.2) and float(p.pv_capacity_mw) == pytest.approx(0.8)
    assert float(p.grid_import_p_max_mw) == pytest.approx(1.5) and float(p.terminal_soc_penalty) == 20000.0
    assert float(p.batt_soc_init) == pytest.approx(0.55) and float(p.w_cost) == pytest.approx(0.2)
    assert bool(p.price_observed)
    # uniform windows: first and last iid day for two episodes; train and iid days disjoint.
    first = task.episode_params("iid", 0, 2, 288)
    last = task.episode_params("iid", 1, 2, 288)
    np.testing.assert_allclose(np.asarray(first.dc.infer_fraction_profile), trace[21 * 288 : 22 * 288], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(last.dc.infer_fraction_profile), trace[27 * 288 : 28 * 288], rtol=1e-6)
    seeded = [task.episode_params("train", 0, 1, 288, strategy="seeded", seed=s) for s in range(4)]
    again = task.episode_params("train", 0, 1, 288, strategy="seeded", seed=2)
    np.testing.assert_array_equal(np.asarray(seeded[2].dc.infer_fraction_profile), np.asarray(again.dc.infer_fraction_profile))
    for s in seeded:
        cpu = np.asarray(s.dc.infer_fraction_profile)
        day = [d for d in range(28) if np.allclose(cpu, trace[d * 288 : (d + 1) * 288], rtol=1e-6)]
        assert day and day[0] < 21
    with pytest.raises(ValueError, match="strategy"):
        task.episode_params("train", 0, 1, 288, strategy="random")


_EXPECTED_PATHS = {
    "renewable_drought": {".pv_cf_profile"},
    "cooling_stress": {".dc.outdoor_temp_profile"},
    "dg_derating": {".dg_p_max_mw"},
    "sla_tighten": {".dc.deadline_slack"},
    "workload_swap": {".dc.infer_fraction_profile"},
    "workload_shock": {".dc.infer_fraction_profile"},
}


@settings(max_examples=10, deadline=None)
@given(
    scenario=st.sampled_from(sorted(_EXPECTED_PATHS)),
    seed=st.integers(0, 2**31 - 1),
    start=st.integers(0, 20_000),
)
def test_each_ood_transform_changes_only_what_it_names(scenario, seed, start):
    from powerzoojax.data import load_workload_profile
    from powerzoojax.grid import apply_ood_transform, make_dcmicrogrid_params

    rng = np.random.default_rng(seed)
    base = make_dcmicrogrid_params(
        cpu_profile=rng.uniform(0.1, 0.9, 288), pv_cf_profile=rng.uniform(0.05, 1.0, 288),
        outdoor_temp_profile=rng.uniform(0.0, 35.0, 288), price_profile=rng.uniform(20.0, 300.0, 288),
        dg_p_max_mw=float(rng.uniform(0.2, 2.0)), deadline_slack=tuple(rng.uniform(1.5, 4.0, 2)),
    )
    out = apply_ood_transform(base, scenario, episode_start_step=start)
    assert jax.tree.structure(out) == jax.tree.structure(base)
    before, after = _leaves(base), _leaves(out)
    changed = {k for k in before if not np.array_equal(before[k], after[k])}
    assert changed == _EXPECTED_PATHS[scenario]
    if scenario == "renewable_drought":
        np.testing.assert_allclose(after[".pv_cf_profile"], before[".pv_cf_profile"] * 0.2, rtol=1e-6)
    elif scenario == "cooling_stress":
        np.testing.assert_allclose(after[".dc.outdoor_temp_profile"], before[".dc.outdoor_temp_profile"] + 5.0, rtol=1e-6)
    elif scenario == "dg_derating":
        np.testing.assert_allclose(after[".dg_p_max_mw"], before[".dg_p_max_mw"] * 0.6, rtol=1e-6)
    elif scenario == "sla_tighten":
        np.testing.assert_array_equal(after[".dc.deadline_slack"], np.float32([1.2, 1.2]))
    else:
        trace = load_workload_profile("azure" if scenario == "workload_swap" else "alibaba").cpu_util
        expected = trace[(start + np.arange(288)) % trace.shape[0]]
        np.testing.assert_allclose(after[".dc.infer_fraction_profile"], expected, rtol=1e-6)


def test_unknown_ood_scenario():
    from powerzoojax.grid import apply_ood_transform, make_dcmicrogrid_params

    with pytest.raises(ValueError, match="OOD scenario"):
        apply_ood_transform(make_dcmicrogrid_params(), "heatwave")


@functools.lru_cache(maxsize=None)
def _baselines_run():
    """One compiled episode runner for all three baselines (the baseline index is traced)."""
    from powerzoojax.core import episode_rollout

    task = _task()
    env = task.make_env("iid")

    @jax.jit
    def run(params, key, index):
        policies = [task.baseline_policy(n, params) for n in task.baseline_names()]

        def policy(obs, state, k):
            return jax.lax.switch(index, [lambda o, s, kk, p=p: p(o, s, kk) for p in policies], obs, state, k)

        return episode_rollout(env, params, key, policy)

    return run


def test_baselines_run_and_follow_their_schedules():
    task = _task()
    params = task.episode_params("iid", 0, 1, 288)
    traces = {n: _baselines_run()(params, jr.PRNGKey(0), i) for i, n in enumerate(task.baseline_names())}
    for name, tr in traces.items():
        assert tr.reward.shape == (288,) and np.all(np.isfinite(np.asarray(tr.reward))), name
        m = task.compute_metrics(tr)
        np.testing.assert_allclose(m["episode_reward"], float(np.sum(np.asarray(tr.reward, np.float64))), rtol=1e-5)
        info = {k: np.asarray(v, np.float64) for k, v in tr.info.items()}
        np.testing.assert_allclose(m["grid_import_mwh"], np.sum(info["p_grid_import_mw"]) * 5 / 60, rtol=1e-5)
        np.testing.assert_allclose(m["total_fuel_cost"], np.sum(info["fuel_cost"]), rtol=1e-5)
        assert 0.0 <= m["feasibility_rate"] <= 1.0 and 0.0 <= m["pv_utilization"] <= 1.0
    np.testing.assert_array_equal(np.asarray(traces["no_control"].action), 0.0)
    mr = np.asarray(traces["max_renewable"].action)
    assert np.all(mr[72:144, 3] == -1) and np.all(mr[:72, 3] == 1) and np.all(mr[240:, 3] == 1)
    assert np.all(mr[144:240, 3] == 0) and np.all(mr[:, :3] == 0.5) and np.all(mr[:, 4] == 0)
    rb = np.asarray(traces["rule_based"].action)
    np.testing.assert_array_equal(rb[100, :4], [1.0, 0.5, 0.0, 0.0])
    assert rb[50, 3] == -1 and rb[200, 3] == 0.5 and rb[260, 3] == -1 and np.all(rb[:, 2] == 0)
    # Diesel follows the previous step's deficit fraction.
    deficit = np.asarray(traces["rule_based"].costs)[:, 2]
    np.testing.assert_array_equal(rb[1:, 4], (deficit[:-1] > 0.05).astype(np.float32))
    # Scheduling batch work only in the solar window moves energy there.
    solar = slice(72, 144)
    p_load_rb = np.asarray(traces["rule_based"].info["p_load_mw"])
    p_load_nc = np.asarray(traces["no_control"].info["p_load_mw"])
    assert p_load_rb[solar].mean() >= p_load_nc[solar].mean()
    # The battery baselines cycle the battery; no_control does not.
    assert task.compute_metrics(traces["no_control"])["battery_cycles"] == 0.0
    assert task.compute_metrics(traces["rule_based"])["battery_cycles"] > 0.1


def test_baseline_rollout_api_and_comparison_metrics():
    task = _task()
    env = task.make_env("iid")
    params = task.episode_params("iid", 0, 1, 288)
    direct = task.baseline_rollout(env, params, jr.PRNGKey(0), "no_control")
    shared = _baselines_run()(params, jr.PRNGKey(0), 0)
    np.testing.assert_allclose(np.asarray(direct.reward), np.asarray(shared.reward), rtol=1e-5, atol=1e-6)
    m = task.compute_metrics(shared, direct)
    assert m["reward_gain_vs_baseline"] == pytest.approx(0.0, abs=1e-3)


def test_params_with_profiles_and_replacing_profiles():
    from powerzoojax.data import load_workload_profile
    from powerzoojax.grid import make_dcmicrogrid_params_with_profiles

    params, sources = make_dcmicrogrid_params_with_profiles("google", 288 * 5, return_sources=True)
    assert sources["cpu_profile"] == "measured:google_dc_2019" and sources["price_profile"].startswith("synthetic:")
    trace = load_workload_profile("google").cpu_util
    np.testing.assert_allclose(np.asarray(params.dc.infer_fraction_profile), trace[288 * 5 : 288 * 6], rtol=1e-6)
    assert bool(params.price_observed) and params.price_profile.shape == (288,)
    plain = make_dcmicrogrid_params_with_profiles("google", 0)
    assert not isinstance(plain, tuple)
    # Replacing the price recomputes the 6-h look-ahead maximum (cyclic).
    price = np.arange(288, dtype=np.float64)
    swapped = plain.with_profiles(price_profile=price)
    expected = np.array([price[(t + np.arange(72)) % 288].max() for t in range(288)])
    np.testing.assert_allclose(np.asarray(swapped.price_max_6h_profile), expected)
