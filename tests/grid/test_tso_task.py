"""TSO task: TaskSpec conformance, profiles, splits, baselines and metrics."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


@pytest.fixture(scope="module")
def task14():
    from powerzoojax.grid.tasks.tso import TSOTask

    return TSOTask("14", synthetic=True, max_steps=12, forecast_horizon_steps=2)


@pytest.fixture(scope="module")
def baselines14(task14):
    """Both baselines over 2 evaluation windows, one jitted vmapped rollout each."""
    env = task14.make_env()
    params = [task14.episode_params("iid", i, 2, 12) for i in range(2)]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *params)
    keys = jr.split(jr.PRNGKey(0), 2)
    out = {}
    for name in ("all_on", "merit_order"):
        run = jax.jit(jax.vmap(lambda k, p, name=name: task14.baseline_rollout(env, p, k, name)))
        out[name] = run(keys, stacked)
    return out


def test_registry_and_protocol():
    from powerzoojax.core import TaskSpec
    from powerzoojax.grid.tasks.tso import TSOTask
    from powerzoojax.tasks import get_task

    task = get_task("tso", case_id="14", synthetic=True)
    assert isinstance(task, TSOTask) and isinstance(task, TaskSpec)
    assert task.default_splits == ("train", "iid", "load_stress", "line_tightening")
    assert task.baseline_names()[0] == "all_on" and "no_control" in task.baseline_names()
    assert task.constraint_spec() == (("thermal_overload", "reserve_shortfall"), (0.0, 0.0), (1.0, 1.0))


def test_case118_benchmark_shapes():
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.grid.tasks.tso import make_tso_case118_params

    params = make_tso_case118_params(forecast_horizon_steps=4, split="iid")
    env = UnitCommitmentEnv()
    assert env.obs_dim(params) == 410 and env.action_dim(params) == 108
    # The case factory keeps the spec's default horizon 0: 4·54 + 186 + 4 entries.
    assert env.obs_dim(make_tso_case118_params(split="iid")) == 406
    case = params.case
    x = np.abs(np.asarray(case.line_x, np.float64))
    np.testing.assert_allclose(np.asarray(case.line_cap), 100.0 * np.deg2rad(8.0) / x, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(case.line_floor), -np.asarray(case.line_cap))
    load = np.asarray(params.load_profiles)
    d_max = np.asarray(case.load_d_max)
    ratio = load[:, d_max > 0] / d_max[d_max > 0]
    assert ratio.min() >= 0.05 - 1e-6 and ratio.max() <= 1.0 + 1e-6
    np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones_like(ratio), rtol=1e-5)  # one shape for every bus


def test_benchmark_variants_are_obs_410_action_108():
    """The frozen TSO benchmark (case118, 48 × 0.5 h, 4-step load preview): obs 410 =
    [status, time-in-state, last dispatch, cost_b (54 each) | flows (186) | load | reserve
    ratio | sin | cos | 4 previews], action 108 — for the ED / UC / SCUC variants the RL
    presets build and for the task object."""
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.grid.tasks.tso import TSOTask, make_tso_ed_params, make_tso_scuc_params, make_tso_uc_params

    env = UnitCommitmentEnv()
    for factory in (make_tso_ed_params, make_tso_uc_params, make_tso_scuc_params):
        params = factory(split="iid")
        assert params.max_steps == 48 and params.delta_t_hours == 0.5 and params.forecast_horizon_steps == 4
        assert (params.case.n_units, params.case.n_lines) == (54, 186)
        assert env.obs_dim(params) == 4 * 54 + 186 + 4 + 4 == 410 and env.action_dim(params) == 108
    scuc = make_tso_scuc_params(split="iid")
    assert bool(scuc.enable_uc) and bool(scuc.enable_reserve) and float(scuc.reserve_margin_frac) == pytest.approx(0.05)
    assert env.obs_dim(TSOTask().make_params("iid")) == 410
    assert env.obs_dim(make_tso_scuc_params(split="iid", forecast_horizon_steps=0)) == 406


def test_preview_block_layout(task14, baselines14):
    """The last H obs entries are the perfect total-load preview of rows
    ``start + min(t + k, max_steps − 1)``, k = 1..H, over Σ p_max; before them come the
    current load, the reserve ratio and sin/cos (spec §2.4)."""
    params = task14.episode_params("iid", 1, 2, 12)
    obs = np.asarray(baselines14["all_on"].obs)[1]  # window 1, (T, obs)
    g, n_lines, horizon = params.case.n_units, params.case.n_lines, params.forecast_horizon_steps
    assert horizon == 2 and obs.shape == (12, 4 * g + n_lines + 4 + horizon)
    start = int(params.fixed_episode_start_idx)
    total = np.asarray(params.load_profiles, np.float64).sum(axis=1)
    cap = float(np.asarray(params.case.unit_p_max, np.float64).sum())
    for t in range(12):
        rows = start + np.minimum(t + np.arange(1, horizon + 1), 11)
        np.testing.assert_allclose(obs[t, -horizon:], total[rows] / cap, rtol=1e-5)
        assert obs[t, 4 * g + n_lines] == pytest.approx(total[start + t] / cap, rel=1e-5)
        angle = 2 * np.pi * t / 48
        np.testing.assert_allclose(obs[t, 4 * g + n_lines + 2 : 4 * g + n_lines + 4], [np.sin(angle), np.cos(angle)], atol=1e-5)


def test_synthetic_net_load_formula():
    from powerzoojax.grid.tasks.tso import make_tso_net_load_profiles

    net = make_tso_net_load_profiles(48)[:, 0]
    h = np.arange(48) * 0.5
    # Independent points: at h = 0 (night) solar is 0, demand 0.75 − 0.25·sin(π/4), wind 0.3 + 0.2·sin(−π/6 + π).
    assert net[0] == pytest.approx(0.75 + 0.25 * np.sin(-np.pi / 4) - 0.7 * (0.3 + 0.2 * np.sin(np.pi - np.pi / 6)))
    # At noon solar peaks at 0.4.
    noon = int(np.flatnonzero(h == 12.0)[0])
    demand = 0.75 + 0.25 * np.sin(2 * np.pi * 9 / 24)
    wind = 0.3 + 0.2 * np.sin(2 * np.pi * 10 / 24 + np.pi)
    assert net[noon] == pytest.approx(max(demand - 0.7 * wind - 0.5 * 0.4, 0.05))
    scaled = make_tso_net_load_profiles(48, load_d_max=np.asarray([10.0, 0.0, 4.0]))
    np.testing.assert_allclose(scaled, net[:, None] * [10.0, 0.0, 4.0])
    given = make_tso_net_load_profiles(4, gross_demand_mw=[50, 100, 100, 50], wind_mw=[0, 0, 0, 0], solar_mw=[0, 0, 0, 0])
    np.testing.assert_allclose(given[:, 0], [0.5, 1.0, 1.0, 0.5])
    with pytest.raises(ValueError, match=r"wind_mw must be finite with shape \(4,\)"):
        make_tso_net_load_profiles(4, wind_mw=[1.0, 2.0])


def test_ood_splits(task14):
    iid = task14.make_params("iid")
    stress = task14.make_params("load_stress")
    tight = task14.make_params("line_tightening")
    np.testing.assert_allclose(np.asarray(stress.load_profiles), 1.15 * np.asarray(iid.load_profiles), rtol=1e-6)
    cap = np.asarray(iid.case.line_cap)
    rated = cap < 1e5
    np.testing.assert_allclose(np.asarray(tight.case.line_cap)[rated], 0.85 * cap[rated], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tight.network.line_cap)[rated], 0.85 * cap[rated], rtol=1e-6)


def test_episode_params_only_move_the_start(task14):
    a = task14.episode_params("iid", 0, 3, 12)
    b = task14.episode_params("iid", 2, 3, 12)
    assert int(a.fixed_episode_start_idx) == 0 and int(b.fixed_episode_start_idx) == 96 - 12
    assert jax.tree.structure(a) == jax.tree.structure(b)
    seeded = [int(task14.episode_params("train", 0, 1, 12, strategy="seeded", seed=s).fixed_episode_start_idx) for s in range(4)]
    assert len(set(seeded)) > 1
    with pytest.raises(ValueError, match="strategy must be"):
        task14.episode_params("iid", 0, 1, 12, strategy="bogus")


def test_merit_order_cheaper_than_all_on(task14, baselines14):
    from powerzoojax.grid.tasks.tso import compute_tso_metrics

    m_all = compute_tso_metrics(baselines14["all_on"])
    m_mer = compute_tso_metrics(baselines14["merit_order"])
    assert m_mer["total_operating_cost"] < m_all["total_operating_cost"]
    # The merit order commits fewer units; case 14's table has no no-load costs at all.
    committed = {k: float(np.mean(np.asarray(baselines14[k].info["n_committed"]))) for k in ("all_on", "merit_order")}
    assert committed["merit_order"] < committed["all_on"]
    from powerzoojax.grid.tasks.tso import tso_case

    assert np.all(np.asarray(tso_case("14").unit_no_load_cost) == 0)
    assert m_mer["total_no_load_cost"] == m_all["total_no_load_cost"] == 0.0
    # All-on switches only at the first step (the units the table starts off).
    assert np.all(np.asarray(baselines14["all_on"].info["commitment_switches"])[..., 1:] == 0)
    assert m_mer["commitment_switching_frequency"] > 0
    for m in (m_all, m_mer):
        assert all(np.isfinite(v) for v in m.values())
        assert 0.0 <= m["feasibility_rate"] <= 1.0
    both = {"all_on": baselines14["all_on"], "merit_order": baselines14["merit_order"]}
    assert task14.compute_metrics(baselines14["merit_order"], both)["norm_score"] == pytest.approx(1.0)
    assert task14.compute_metrics(baselines14["all_on"], both)["norm_score"] == pytest.approx(0.0, abs=1e-9)


def test_metrics_match_info_sums(baselines14):
    from powerzoojax.grid.tasks.tso import compute_tso_metrics

    trace = baselines14["merit_order"]
    info = jax.tree.map(np.asarray, dict(trace.info))
    m = compute_tso_metrics(trace)
    op = (info["gen_cost"] + info["startup_cost"] + info["no_load_cost"]).sum(-1).mean()
    assert m["total_operating_cost"] == pytest.approx(float(op), rel=1e-6)
    assert m["feasibility_rate"] == pytest.approx(float(info["is_safe"].mean()))
    assert m["total_reward"] == pytest.approx(-1e-4 * float(op), rel=1e-5)


def test_merit_order_commits_enough_capacity(task14, baselines14):
    """The merit-order policy asks for capacity ≥ load·1.05 at every step it is free to."""
    params = task14.episode_params("iid", 0, 2, 12)
    trace = jax.tree.map(lambda x: x[0], baselines14["merit_order"])
    g = params.case.n_units
    asked = np.asarray(trace.action)[:, :g] > 0
    pmax = np.asarray(params.case.unit_p_max)
    load = np.asarray(params.total_load_mw)[:12]
    assert np.all(asked @ pmax >= 1.05 * load - 1e-3)
    # and not more than one unit beyond it
    for t in range(12):
        on = np.flatnonzero(asked[t])
        assert (asked[t] @ pmax) - pmax[on].min() < 1.05 * load[t] + 1e-3
