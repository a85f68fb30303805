"""GenCos task (spec §4.2): data splits, the joint env's contract, baselines, metrics."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def task():
    from powerzoojax.market.tasks.gencos import GenCosTask

    return GenCosTask(max_steps=6)


@pytest.fixture(scope="module")
def baselines(task):
    import jax.random as jr

    env, params = task.make_env("iid")
    return {name: task.baseline_rollout(env, params, jr.PRNGKey(0), name) for name in task.baseline_names()}


def test_task_satisfies_the_protocol(task):
    from powerzoojax.core import TaskSpec

    assert isinstance(task, TaskSpec)
    assert task.default_splits == ("train", "iid", "demand_shift", "renewable_shock")
    assert task.baseline_names()[0] == "truthful"
    assert task.constraint_spec() == (("thermal_overload",), (0.0,), (1.0,))


def test_profiles_follow_the_spec_pipeline(task):
    from powerzoojax.market.tasks.gencos import OOD_FACTORS, load_gencos_profiles

    case = task.case
    lo, hi = float(np.sum(case.unit_p_min)) + 1.0, float(np.sum(case.unit_p_max)) - 1.0
    iid = load_gencos_profiles(case, "iid")
    for split in ("train", "iid", "demand_shift", "renewable_shock"):
        p = load_gencos_profiles(case, split)
        assert p.ndim == 2 and p.shape[1] == case.n_loads and np.all(np.isfinite(p))
        assert np.all(p.sum(axis=1) >= lo - 1e-6) and np.all(p.sum(axis=1) <= hi + 1e-6)
    # OOD splits are the iid window times their factor wherever the projection is inactive.
    for split, factor in OOD_FACTORS.items():
        p = load_gencos_profiles(case, split)
        # Rows the iid projection clipped up to ``lo`` (within round-off) are not inside.
        total = iid.sum(axis=1)
        inside = (total * factor > lo) & (total * factor < hi) & (total > lo + 1e-6 * lo)
        assert inside.any()
        np.testing.assert_allclose(p[inside], iid[inside] * factor, rtol=1e-9)
    # The wording maps onto the spec's splits.
    np.testing.assert_array_equal(load_gencos_profiles(case, "high_demand"), load_gencos_profiles(case, "demand_shift"))
    with pytest.raises(ValueError, match="Unknown GenCos split 'summer'"):
        load_gencos_profiles(case, "summer")


def test_joint_env_passes_the_conformance_kit(task):
    from powerzoojax.testing import check_no_retrace

    env, params = task.make_env("train")
    check_no_retrace(env, params, n_episodes=1)


@pytest.mark.slow
def test_joint_env_api(task):
    from powerzoojax.testing import check_env_api

    env, params = task.make_env("train")
    check_env_api(env, params, stochastic=True)


def test_baselines_rank_by_markup_and_keep_the_dispatch(task, baselines):
    metrics = {name: task.compute_metrics(trace) for name, trace in baselines.items()}
    for m in metrics.values():
        assert set(m) >= {"total_profit", "mean_profit_per_agent", "total_gen_cost", "mean_lmp", "price_volatility",
                          "hhi", "sced_convergence_rate", "ramp_binding_rate"}
        assert m["sced_convergence_rate"] == 1.0 and 0.0 < m["hhi"] <= 1.0
    assert metrics["truthful"]["total_profit"] < metrics["uniform_mid"]["total_profit"] < metrics["max_markup"]["total_profit"]
    # A uniform markup scales every offer alike: merit order, dispatch and true cost stay.
    for name in ("uniform_mid", "max_markup"):
        np.testing.assert_allclose(metrics[name]["total_gen_cost"], metrics["truthful"]["total_gen_cost"], rtol=1e-4)
        np.testing.assert_allclose(np.asarray(baselines[name].info["unit_power"]), np.asarray(baselines["truthful"].info["unit_power"]), atol=0.05)
    # Profits are what the LMPs pay minus true cost, per agent.
    tr = baselines["truthful"]
    np.testing.assert_allclose(np.asarray(tr.reward), np.asarray(tr.info["unit_profit"]).sum(axis=-1), rtol=1e-5, atol=1e-3)


def test_unknown_baseline_is_rejected(task):
    import jax.random as jr

    env, params = task.make_env("iid")
    with pytest.raises(ValueError, match="Unknown GenCos baseline 'random'"):
        task.baseline_rollout(env, params, jr.PRNGKey(0), "random")


@pytest.mark.slow  # a second compile of the episode program (~40 s on a busy 2-core box)
def test_policy_rollout(task):
    import jax.numpy as jnp
    import jax.random as jr

    env, params = task.make_env("iid")
    trace = task.rollout(env, params, jr.PRNGKey(1), lambda obs, state, key: -jnp.ones((5, 3)))
    assert trace.reward.shape == (6,) and trace.obs.shape == (6, 5, 12)


def test_case29gb_market_uses_its_fuel_types_and_ramps():
    """29gb's units carry unit-commitment ramp columns (fraction of p_max per hour) and
    fuel types: the market ramps by them and the metrics report each fuel's share."""
    import jax.random as jr

    from powerzoojax.market.tasks.gencos import FUEL_NAMES, GenCosTask

    task = GenCosTask(max_steps=3, case_id="29gb")
    env, params = task.make_env("iid")
    case = task.case
    p_max = np.asarray(case.unit_p_max, np.float64)
    np.testing.assert_allclose(np.asarray(params.ramp_up_mw_per_step), np.asarray(case.unit_ramp_up) * p_max * 0.5, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(params.ramp_down_mw_per_step), np.asarray(case.unit_ramp_down) * p_max * 0.5, rtol=1e-6)
    trace = task.baseline_rollout(env, params, jr.PRNGKey(0), "truthful")
    metrics = task.compute_metrics(trace)
    fuels = {FUEL_NAMES[int(f)] for f in np.unique(np.asarray(case.unit_fuel_type))}
    shares = {k.removeprefix("dispatch_share_"): v for k, v in metrics.items() if k.startswith("dispatch_share_")}
    assert set(shares) == fuels
    power = np.asarray(trace.info["unit_power"], np.float64).reshape(-1, case.n_units).sum(axis=0)
    gas = np.asarray(case.unit_fuel_type) == 3
    assert shares["gas"] == pytest.approx(power[gas].sum() / power.sum(), rel=1e-9)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert metrics["sced_convergence_rate"] == 1.0


def test_unknown_market_case_is_rejected():
    from powerzoojax.market.tasks.gencos import GenCosTask

    with pytest.raises(ValueError, match="case_id must be one of"):
        GenCosTask(case_id="118")


def test_case5_market_keeps_the_fraction_ramps():
    """Case 5 has no ramp columns: the reference's 0.5 · p_max per step stays."""
    from powerzoojax.market.tasks.gencos import GenCosTask

    task = GenCosTask(max_steps=3)
    params = task.params("iid")
    np.testing.assert_allclose(np.asarray(params.ramp_up_mw_per_step), 0.5 * np.asarray(task.case.unit_p_max), rtol=1e-6)
