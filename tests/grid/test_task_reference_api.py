"""Behaviour of the reference's task API on the grid tasks: TSO, DSO and DERs factories,
dict-record rollouts and metrics (checked against NumPy sums and formulas), DCMG metrics,
the Ausgrid path (a synthetic file in the published layout) and the OOD forwarding."""

import functools
import math

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

KEY = jr.PRNGKey(0)


# ============================================================================ TSO


@functools.lru_cache(maxsize=None)
def _tso():
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.grid.tasks import tso

    env = UnitCommitmentEnv()
    params = tso.make_tso_case14_params(max_steps=6, split="iid")
    all_on = jax.jit(lambda k: tso.tso_all_on_rollout(env, params, k))(KEY)
    merit = jax.jit(lambda k: tso.tso_merit_order_rollout(env, params, k))(KEY)
    return env, params, jax.device_get(all_on), jax.device_get(merit)


def test_tso_rollout_records():
    _, params, all_on, merit = _tso()
    keys = {"gen_cost", "startup_cost", "no_load_cost", "reserve_shortfall", "cost_thermal_overload", "cost_sum",
            "commitment_switches", "is_safe", "opf_converged", "opf_iterations", "opf_box_residual_mw",
            "opf_line_residual_mw", "opf_balance_residual_mw", "reward"}
    for record in (all_on, merit):
        assert keys <= set(record) and all(np.shape(record[k]) == (6,) for k in keys)
    # The table starts some units off: all-on switches those on at the first step (their
    # minimum down time already served), then nothing moves.
    off = (np.asarray(params.init_status) == 0) & (np.asarray(params.init_time_in_state) >= np.asarray(params.min_down_steps))
    assert off.any() and all_on["commitment_switches"][0] == off.sum()
    assert np.all(all_on["commitment_switches"][1:] == 0)
    np.testing.assert_allclose(
        all_on["reward"], -1e-4 * (all_on["gen_cost"] + all_on["startup_cost"] + all_on["no_load_cost"]), rtol=1e-5
    )


def test_tso_metrics_are_sums_of_the_record():
    from powerzoojax.grid.tasks.tso import compute_tso_metrics

    _, _, all_on, merit = _tso()
    op = lambda r: float(np.sum(r["gen_cost"] + r["startup_cost"] + r["no_load_cost"]))  # noqa: E731
    m = compute_tso_metrics(merit, all_on)
    assert m["total_operating_cost"] == pytest.approx(op(merit), rel=1e-6)
    assert m["total_gen_cost"] == pytest.approx(float(np.sum(merit["gen_cost"])), rel=1e-6)
    assert m["cost_vs_baseline_pct"] == pytest.approx(100 * (op(merit) - op(all_on)) / op(all_on), rel=1e-6)
    assert m["total_commitment_switches"] == float(np.sum(merit["commitment_switches"]))
    assert m["feasibility_rate"] == pytest.approx(float(np.mean(merit["is_safe"])))
    assert m["reserve_shortfall_rate"] == pytest.approx(float(np.mean(merit["reserve_shortfall"] > 1e-6)))
    assert m["mean_thermal_cost"] == pytest.approx(float(np.mean(merit["cost_thermal_overload"])))
    assert m["total_cost_violations"] == pytest.approx(float(np.sum(merit["cost_sum"])), rel=1e-6)
    assert m["total_reward"] == pytest.approx(float(np.sum(merit["reward"])), rel=1e-6)
    assert "cost_vs_baseline_pct" not in compute_tso_metrics(merit)
    both = compute_tso_metrics(merit, all_on, merit)
    assert both["norm_score"] == pytest.approx(1.0)


def test_tso_metrics_take_a_trace_too():
    from powerzoojax.core import episode_rollout
    from powerzoojax.grid.tasks.tso import compute_tso_metrics, tso_all_on_policy

    env, params, all_on, _ = _tso()
    trace = jax.jit(lambda k: episode_rollout(env, params, k, tso_all_on_policy(params)))(KEY)
    a, b = compute_tso_metrics(trace), compute_tso_metrics(all_on)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-9) or (math.isnan(a[k]) and math.isnan(b[k])), k


def test_tso_merit_order_with_a_fixed_count():
    from powerzoojax.grid.tasks.tso import tso_merit_order_rollout

    env, params, all_on, _ = _tso()
    every = jax.device_get(tso_merit_order_rollout(env, params, KEY, n_commit=params.case.n_units))
    np.testing.assert_allclose(every["gen_cost"], all_on["gen_cost"], rtol=1e-5)
    with pytest.raises(ValueError, match="n_commit must be in 1..5"):
        tso_merit_order_rollout(env, params, KEY, n_commit=0)


def test_tso_net_load_from_data_is_the_spec_composition():
    from powerzoojax.case import load_case
    from powerzoojax.data import LOAD_ACTUAL_MW, SOLAR_AVAILABLE_PU, WIND_AVAILABLE_PU, DataLoader
    from powerzoojax.grid.tasks.tso import (
        make_comparison_tso_load_trace,
        make_tso_net_load_profiles,
        make_tso_net_load_profiles_from_data,
    )

    case = load_case("14")
    out = np.asarray(make_tso_net_load_profiles_from_data(None, case, "iid", 48, 12))
    rows = np.asarray(DataLoader().load_signals([LOAD_ACTUAL_MW, WIND_AVAILABLE_PU, SOLAR_AVAILABLE_PU], source="simbench",
                                                split="iid", resample="30min").values, np.float64)[48:60]
    load, wind, solar = (rows[:, k] / rows[:, k].max() for k in range(3))
    net = np.clip(load - 0.7 * wind - 0.5 * solar, 0.05, 1.0)
    np.testing.assert_allclose(out, net[:, None] * np.asarray(case.load_d_max)[None, :], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(make_comparison_tso_load_trace(12, split="iid", episode_start_idx=48), net, rtol=1e-5)
    with pytest.raises(RuntimeError, match="outside the 'iid' window"):
        make_tso_net_load_profiles_from_data(None, case, "iid", 10**6, 12)
    with pytest.warns(UserWarning, match="SYNTHETIC"):
        fallback = make_tso_net_load_profiles_from_data(None, case, "iid", 10**6, 12, allow_synthetic_fallback=True)
    np.testing.assert_allclose(np.asarray(fallback), make_tso_net_load_profiles(12, load_d_max=np.asarray(case.load_d_max)), rtol=1e-6)


def test_tso_variants_and_comparison_recipe():
    from powerzoojax.grid import UnitCommitmentEnv
    from powerzoojax.grid.tasks.tso import (
        TSO_COMPARISON_SCHEMA,
        make_comparison_tso_params,
        make_tso_ed_params,
        make_tso_scuc_params,
        make_tso_uc_params,
    )

    ed = make_tso_ed_params("14", 6, 0.5)
    uc = make_tso_uc_params("14", 6, 0.5)
    scuc = make_tso_scuc_params("14", 6, 0.5, 0.1)
    assert (ed.enable_uc, ed.enable_reserve, uc.enable_uc, uc.enable_reserve, scuc.enable_uc, scuc.enable_reserve) == (
        False, False, True, False, True, True)
    assert float(scuc.reserve_margin_frac) == pytest.approx(0.1) and scuc.max_steps == 6
    comparison = make_comparison_tso_params(split="iid")
    env = UnitCommitmentEnv()
    assert (env.obs_dim(comparison),) == TSO_COMPARISON_SCHEMA["obs_shape_jax"]
    assert (env.action_dim(comparison),) == TSO_COMPARISON_SCHEMA["action_shape"]
    assert comparison.enable_uc and comparison.enable_reserve and comparison.case.n_units == TSO_COMPARISON_SCHEMA["n_units"]


def test_case14_uc_defaults():
    from powerzoojax.case import load_case
    from powerzoojax.grid.tasks.tso import CASE14_UC_DEFAULTS, make_case14_with_uc_defaults

    # The benchmark table carries its own UC columns: returned unchanged.
    own = load_case("14")
    assert own.unit_min_up_time is not None and make_case14_with_uc_defaults(own) is own
    # MATPOWER's file has none: every column is filled with the case14 defaults.
    bare = load_case("14", source="matpower")
    assert bare.unit_ramp_up is None
    filled = make_case14_with_uc_defaults(bare)
    for name, value in CASE14_UC_DEFAULTS.items():
        column = np.asarray(getattr(filled, name))
        assert column.shape == (bare.n_units,) and np.all(column == value), name
    assert np.asarray(filled.unit_min_up_time).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(filled.unit_init_power), np.asarray(bare.unit_p_min))
    assert make_case14_with_uc_defaults(filled) is filled


# ============================================================================ DSO


def test_synthetic_feeder_shapes():
    from powerzoojax.grid.tasks.dso import make_synthetic_feeder_shapes

    shapes = make_synthetic_feeder_shapes(96, peak_ratio=2.0, steps_per_day=48)
    h = 24.0 * (np.arange(96) % 48) / 48
    a = 1 + 1.0 * np.exp(-0.5 * ((h - 18.5) / 2) ** 2)
    c = 1 + 0.4 * np.exp(-0.5 * ((h - 12) / 2) ** 2) + 0.5 * np.exp(-0.5 * ((h - 19) / 1.5) ** 2)
    np.testing.assert_allclose(shapes["feeder_A"], a / a.mean(), rtol=1e-5)
    np.testing.assert_allclose(shapes["feeder_C"], c / c.mean(), rtol=1e-5)
    assert all(abs(v.mean() - 1) < 1e-5 for v in shapes.values())
    np.testing.assert_allclose(shapes["feeder_A"][:48], shapes["feeder_A"][48:], rtol=1e-6)  # one day repeats


def test_dso_load_profiles():
    from powerzoojax.case import load_case
    from powerzoojax.grid.tasks.dso import DSO_FEEDER_BUS_MAP, make_dso_load_profiles

    case = load_case("33bw")
    ids = np.asarray(case.node_ids)
    base_p = np.asarray(case.node_pd, np.float64) / case.base_mva
    base_q = np.asarray(case.node_qd, np.float64) / case.base_mva
    shapes = {"feeder_A": np.arange(1, 11, dtype=float), "feeder_B": np.full(10, 2.0), "feeder_C": np.full(10, 0.5)}
    p, q = (np.asarray(x, np.float64) for x in make_dso_load_profiles(case, shapes, max_steps=4, episode_start=8, load_scale=0.5))
    assert p.shape == (4, 33)
    rows = (8 + np.arange(4)) % 10
    a = np.isin(ids, DSO_FEEDER_BUS_MAP["feeder_A"])
    np.testing.assert_allclose(p[:, a], 0.5 * base_p[a][None, :] * (rows + 1.0)[:, None], rtol=1e-6)
    np.testing.assert_allclose(q[:, ids == 20][:, 0], 0.5 * base_q[ids == 20][0] * 2.0, rtol=1e-6)
    np.testing.assert_allclose(p[:, 0], 0.5 * base_p[0], rtol=1e-6)  # slack bus: no shape
    over = np.asarray(make_dso_load_profiles(case, shapes, max_steps=1, bus_load_scale_overrides={18: 0.5, 33: 0.25},
                                             preserve_feeder_totals=True)[0][0], np.float64)
    plain = np.asarray(make_dso_load_profiles(case, shapes, max_steps=1)[0][0], np.float64)
    for buses in DSO_FEEDER_BUS_MAP.values():
        m = np.isin(ids, buses)
        assert over[m].sum() == pytest.approx(plain[m].sum(), rel=1e-5)  # feeder totals kept
    # ... while load moves away from the scaled-down buses.
    assert over[ids == 18][0] / plain[ids == 18][0] < over[ids == 17][0] / plain[ids == 17][0]
    with pytest.raises(ValueError, match="unknown feeders"):
        make_dso_load_profiles(case, {"feeder_Z": np.ones(3)})
    with pytest.raises(ValueError, match="load_scale"):
        make_dso_load_profiles(case, shapes, load_scale=0.0)


def test_dso_params_variants():
    from powerzoojax.grid import DistGridEnv
    from powerzoojax.grid.tasks.dso import (
        DSO_FLEXLOAD_CONFIG,
        make_dso_1flex_params,
        make_dso_params,
        make_dso_params_nonstationary,
        make_synthetic_feeder_shapes,
    )

    env = DistGridEnv()
    p = make_dso_params(max_steps=8)
    assert env.obs_dim(p) == 195 and env.action_dim(p) == 12 and not p.include_der
    flex = p.resources[0]
    np.testing.assert_allclose(np.asarray(flex.cap_curtail_mw), [c["curtail_cap_mw"] for c in DSO_FLEXLOAD_CONFIG])
    assert (float(p.v_min), float(p.v_max)) == pytest.approx((0.94, 1.06))
    one = make_dso_1flex_params(max_steps=8)
    assert env.action_dim(one) == 2 and np.asarray(one.resources[0].bus_idx).tolist() == [17]
    moved = make_dso_params(max_steps=8, flexload_bus_ids=[2, 3, 4, 5, 6, 7])
    assert np.asarray(moved.resources[0].bus_idx).tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="must name 6 buses"):
        make_dso_params(flexload_bus_ids=[2])
    with pytest.raises(ValueError, match="cost_mode"):
        make_dso_params(cost_mode="penalty")
    # Non-stationary: the sampler's start and drift, applied to the same shapes.
    from powerzoojax.data import NonstationarySampler

    shapes = make_synthetic_feeder_shapes(480)
    key = jr.PRNGKey(3)
    config = NonstationarySampler(480, 100, max_steps=8).sample(7, key, mode="drift_shock")
    drifted = make_dso_params_nonstationary(feeder_shapes=shapes, episode_idx=7, total_episodes=100, key=key,
                                            mode="drift_shock", max_steps=8)
    plain = make_dso_params(feeder_shapes=shapes, episode_start=config.episode_start, max_steps=8)
    assert config.drift_factor == pytest.approx(1.25)
    np.testing.assert_allclose(np.asarray(drifted.p_load_profiles), 1.25 * np.asarray(plain.p_load_profiles), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(drifted.q_load_profiles), 1.25 * np.asarray(plain.q_load_profiles), rtol=1e-6)


@functools.lru_cache(maxsize=None)
def _dso_runs():
    from powerzoojax.grid import DistGridEnv
    from powerzoojax.grid.tasks import dso

    env = DistGridEnv()
    params = dso.make_dso_params(max_steps=24)
    runs = {
        "no_control": dso.dso_no_control_rollout(env, params, KEY),
        "tou": dso.dso_tou_rule_based_rollout(env, params, KEY),
        "droop": dso.dso_droop_rule_based_rollout(env, params, KEY),
        "zeros": dso.rollout_dso(env, params, KEY, lambda obs, state, k: jnp.zeros((12,), jnp.float32)),
    }
    return params, jax.device_get(runs)


def test_dso_rollouts():
    params, runs = _dso_runs()
    keys = {"rewards", "losses", "violations", "voltage_violations", "thermal_violations", "curtailed", "shifted", "shift_in"}
    for run in runs.values():
        assert set(run) == keys and all(np.shape(v) == (24,) for v in run.values())
    for k in keys:
        np.testing.assert_array_equal(runs["zeros"][k], runs["no_control"][k])
    assert np.all(runs["no_control"]["curtailed"] == 0)
    # TOU: 80 % of every curtailment capacity on day steps 16..20, nothing elsewhere.
    window = (np.arange(24) >= 16) & (np.arange(24) < 21)
    caps = float(np.sum(np.asarray(params.resources[0].cap_curtail_mw)))
    np.testing.assert_allclose(runs["tou"]["curtailed"][window], 0.8 * caps, rtol=1e-5)
    np.testing.assert_allclose(runs["tou"]["curtailed"][~window], 0.0)
    # Droop: undervoltage at the end of the feeder (below 0.96 p.u. without control) triggers it.
    assert runs["droop"]["curtailed"].max() > 0 and runs["droop"]["curtailed"].max() <= caps + 1e-6
    assert runs["droop"]["voltage_violations"].sum() <= runs["no_control"]["voltage_violations"].sum()


def test_dso_metrics_formulas():
    from powerzoojax.grid.tasks.dso import compute_dso_metrics

    run = {"rewards": np.array([-1.0, -2.0]), "losses": np.array([0.2, 0.4]), "violations": np.array([1, 3]),
           "voltage_violations": np.array([1.0, 2.0]), "thermal_violations": np.array([0.0, 1.0]),
           "curtailed": np.array([0.1, 0.0]), "shifted": np.array([0.2, 0.2]), "shift_in": np.array([0.0, 0.1])}
    base = {**run, "losses": np.array([0.4, 0.6])}
    m = compute_dso_metrics(run, base)
    assert m["total_reward"] == -3.0 and m["total_loss_mwh"] == pytest.approx(0.3) and m["mean_loss_mw"] == pytest.approx(0.3)
    assert m["total_voltage_violations"] == 3 and m["total_thermal_overloads"] == 1 and m["total_violations"] == 4
    assert m["voltage_violation_count_per_step"] == 1.5 and m["thermal_overload_count_per_step"] == 0.5
    assert m["total_curtailed_mwh"] == pytest.approx(0.05) and m["total_shifted_mwh"] == pytest.approx(0.2)
    assert m["total_shift_in_mwh"] == pytest.approx(0.05) and m["served_flex_ratio"] == pytest.approx(0.25)
    assert m["network_loss_reduction_pct"] == pytest.approx(40.0) and m["peak_shaving_pct"] == pytest.approx(100 / 3)
    alone = compute_dso_metrics({**run, "shifted": np.zeros(2)})
    assert alone["network_loss_reduction_pct"] is None and alone["served_flex_ratio"] == 0.0


def _ausgrid_file(folder, substations, days=8):
    import pandas as pd

    stamps = pd.date_range(pd.Timestamp("2024-05-01", tz="Australia/Sydney"), periods=days * 96, freq="15min")
    hour = stamps.hour.to_numpy() + stamps.minute.to_numpy() / 60
    frames = [pd.DataFrame({"interval_start": stamps.tz_convert("UTC"), "zone_substation": name,
                            "load_mw": 10.0 + k + np.sin(2 * np.pi * hour / 24)}) for k, name in enumerate(substations)]
    pd.concat(frames).to_csv(folder / "Ausgrid_Zone_Substation_FY25_imputed_15min.csv", index=False)


def test_dso_feeder_shapes_from_ausgrid_or_the_substitute(tmp_path):
    pytest.importorskip("pandas")
    from powerzoojax.data import AUSGRID_TRAIN_POOL, DataLoader
    from powerzoojax.grid.tasks.dso import feeder_shapes, load_dso_feeder_shapes, load_feeder_shape

    substitute = load_dso_feeder_shapes(DataLoader(), "iid")
    np.testing.assert_allclose(substitute["feeder_B"], feeder_shapes("iid")[:, 1], rtol=1e-6)
    with pytest.raises(FileNotFoundError, match="Ausgrid"):
        load_dso_feeder_shapes(None, "iid", source="ausgrid")
    _ausgrid_file(tmp_path, AUSGRID_TRAIN_POOL)
    shapes = load_dso_feeder_shapes(DataLoader(data_dir=tmp_path), "iid")
    assert set(shapes) == {"feeder_A", "feeder_B", "feeder_C"}
    # iid = local days 0 and 4 of the eight: 2 × 48 half hours, each the mean of its two
    # 15-minute samples; feeder A = the mean of substations k = 0, 1, 2 (10 + k + sin).
    shape_a = load_feeder_shape(tmp_path, "feeder_A", "iid")
    np.testing.assert_allclose(shapes["feeder_A"], shape_a, rtol=1e-6)
    np.testing.assert_allclose(shape_a, _bucket_shape(11.0, days=2, normalise="mean"), rtol=1e-5)


def _bucket_shape(offset: float, days: int, normalise: str) -> np.ndarray:
    h0 = np.tile(np.arange(48) * 0.5, days)
    b = offset + 0.5 * (np.sin(2 * np.pi * h0 / 24) + np.sin(2 * np.pi * (h0 + 0.25) / 24))
    return b / (b.mean() if normalise == "mean" else b.max())


# ============================================================================ DERs


def test_ders_constants_and_noop():
    from powerzoojax.grid.tasks import ders

    assert ders.DERS_BENCHMARK_LOAD_CASE == "case141"
    assert list(ders.DERS_BATTERY_BUSES) == [9, 55, 17, 122] and list(ders.DERS_FLEXLOAD_BUSES) == [41, 70, 135, 24]
    assert ders.DERS_BATTERY_CONFIG["capacity_mwh"] == 0.30 and ders.DERS_PV_CONFIG["s_rated_mva"] == 0.22
    assert ders.DERS_FLEXLOAD_CONFIG["shift_horizon"] == 4 and (ders.DERS_V_MIN, ders.DERS_V_MAX) == (0.94, 1.06)
    assert len(ders.DERS_LARGE_BATTERY_BUSES) + len(ders.DERS_LARGE_PV_BUSES) + len(ders.DERS_LARGE_FLEXLOAD_BUSES) == 20
    params = ders.make_ders_params(max_steps=4)
    noop = np.asarray(ders.ders_noop_action(params)).reshape(12, 2)
    np.testing.assert_array_equal(noop[:4], 0.0)
    np.testing.assert_array_equal(noop[4:8], [[1.0, 0.0]] * 4)  # PV: no curtailment, no Q
    np.testing.assert_array_equal(noop[8:], 0.0)


def test_ders_params_and_variants():
    from powerzoojax.grid import DistGridEnv
    from powerzoojax.grid.tasks import ders

    env = DistGridEnv()
    p = ders.make_ders_params(max_steps=4)
    assert env.action_dim(p) == 24 and sum(b.obs_dim for b in p.resources) == 48
    cf = np.asarray(p.resources[1].cf_profiles)
    assert cf.shape[0] == 4 and np.all((cf >= 0) & (cf <= 1))
    loads = np.full((4, 141), 0.001)  # p.u.
    q = ders.make_ders_params_with_profiles(max_steps=4, load_profiles_p=loads)
    np.testing.assert_allclose(np.asarray(q.p_load_profiles), loads, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(q.q_load_profiles), np.asarray(p.q_load_profiles))
    large = ders.make_ders_large_params(max_steps=4)
    assert sum(b.n_devices for b in large.resources) == 20 and env.action_dim(large) == 40
    assert (float(large.v_min), float(large.v_max)) == pytest.approx((0.96, 1.04))
    tight = ders.make_ders_ood_params(p, scenario="voltage_tightening")
    assert (float(tight.v_min), float(tight.v_max)) == pytest.approx((0.96, 1.04))
    pv = ders.make_ders_ood_params(p, scenario="pv_penetration_shift")
    np.testing.assert_allclose(np.asarray(pv.resources[1].capacity_mw), 2 * np.asarray(p.resources[1].capacity_mw))
    stress = ders.make_ders_ood_params(p, scenario="load_stress")
    np.testing.assert_allclose(np.asarray(stress.p_load_profiles), 1.15 * np.asarray(p.p_load_profiles), rtol=1e-6)
    heavy = ders.make_ders_ood_params(p, scenario="load_stress", pv_scale=1.3)
    np.testing.assert_allclose(np.asarray(heavy.q_load_profiles), 1.3 * np.asarray(p.q_load_profiles), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown DERs OOD scenario"):
        ders.make_ders_ood_params(p, scenario="phase_swap")


def test_ders_params_from_split():
    from powerzoojax.case import load_case
    from powerzoojax.grid.tasks import ders

    case = load_case("141")
    shape, pv = ders.ders_shapes("iid")
    np.testing.assert_allclose(ders.load_ders_load_shape(role="iid"), shape, rtol=1e-6)
    split = ders.make_ders_params_from_split(role="iid", episode_start=10, max_steps=4, load_scale=1.1, pv_scale=2.0)
    rows = (10 + np.arange(4)) % shape.size
    expected = 1.1 * shape[rows][:, None] * np.asarray(case.node_pd, np.float64)[None, :] / case.base_mva
    np.testing.assert_allclose(np.asarray(split.p_load_profiles), expected, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(np.asarray(split.resources[1].cf_profiles)[:, 0], pv[rows], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(split.resources[1].capacity_mw), 0.4)
    with pytest.raises(KeyError, match="unknown DERs split role"):
        ders.load_ders_load_shape(role="winter")


@functools.lru_cache(maxsize=None)
def _ders_runs():
    from powerzoojax.grid import DistGridEnv
    from powerzoojax.grid.tasks import ders

    env = DistGridEnv()
    params = ders.make_ders_params(max_steps=4)
    noop = ders.ders_noop_action(params)
    runs = {
        "no_control": ders.ders_no_control_rollout(env, params, KEY),
        "droop": ders.ders_volt_droop_rollout(env, params, KEY),
        "noop_policy": ders.rollout_ders(env, params, KEY, lambda obs, k: noop),
        "zeros_dropped": ders.agent_dropout_rollout(env, params, KEY, lambda obs, k: jnp.zeros((24,)), n_dropout=12),
        "zeros": ders.rollout_ders(env, params, KEY, lambda obs, k: jnp.zeros((24,))),
        "zeros_3_dropped": ders.agent_dropout_rollout(env, params, KEY, lambda obs, k: jnp.zeros((24,)), n_dropout=3, seed=1),
    }
    return params, {k: {kk: (vv if kk == "dropped_agent_indices" else np.asarray(vv)) for kk, vv in v.items()} for k, v in runs.items()}


def test_ders_rollouts():
    params, runs = _ders_runs()
    keys = {"reward", "cost_continuous", "p_loss_MW", "v_min_episode", "v_max_episode", "metric_v_min", "metric_v_max"}
    assert keys <= set(runs["no_control"]) and runs["no_control"]["reward"].shape == (4,)
    assert float(runs["no_control"]["metric_v_min"]) == pytest.approx(0.94)
    assert np.all(runs["no_control"]["v_min_episode"] <= runs["no_control"]["v_max_episode"])
    np.testing.assert_array_equal(runs["no_control"]["reward"], runs["noop_policy"]["reward"])
    # Every device dropped: the no-op everywhere, whatever the policy asks.
    np.testing.assert_array_equal(runs["zeros_dropped"]["reward"], runs["no_control"]["reward"])
    assert runs["zeros_dropped"]["dropped_agent_indices"] == list(range(12))
    dropped = runs["zeros_3_dropped"]["dropped_agent_indices"]
    assert len(dropped) == 3 and dropped == sorted(set(dropped))
    # Zero action curtails PV by half; putting three devices back to their no-op changes the episode.
    assert not np.array_equal(runs["zeros"]["reward"], runs["no_control"]["reward"])


def test_ders_metrics_formulas():
    from powerzoojax.grid.tasks.ders import compute_ders_metrics, compute_ders_safety_metrics

    run = {"reward": np.array([-1.0, -3.0]), "cost_continuous": np.array([0.0, 0.2]), "p_loss_MW": np.array([0.2, 0.4]),
           "v_min_episode": np.array([0.95, 0.92]), "v_max_episode": np.array([1.02, 1.07])}
    base = {**run, "cost_continuous": np.array([0.4, 0.4]), "p_loss_MW": np.array([0.4, 0.4])}
    m = compute_ders_metrics(run, base)
    assert m == pytest.approx({"total_reward": -4.0, "total_cost": 0.2, "mean_p_loss_mw": 0.3, "voltage_violation_steps": 1,
                               "loss_reduction_pct": 25.0, "cost_reduction_pct": 75.0})
    assert compute_ders_metrics(run, base, v_min=0.96)["voltage_violation_steps"] == 2
    s = compute_ders_safety_metrics(run)
    assert s["voltage_safety_rate"] == 0.5 and s["voltage_violation_rate"] == 0.5
    assert (s["undervoltage_steps"], s["overvoltage_steps"]) == (1, 1)
    assert s["max_undervoltage_dev"] == pytest.approx(0.02) and s["max_overvoltage_dev"] == pytest.approx(0.01)
    assert s["mean_v_min"] == pytest.approx(0.935) and s["mean_v_max"] == pytest.approx(1.045)


def test_ders_metrics_on_rollouts():
    from powerzoojax.grid.tasks.ders import compute_ders_metrics

    _, runs = _ders_runs()
    m = compute_ders_metrics(runs["droop"], runs["no_control"])
    base = float(np.mean(runs["no_control"]["p_loss_MW"]))
    assert m["loss_reduction_pct"] == pytest.approx(100 * (base - float(np.mean(runs["droop"]["p_loss_MW"]))) / base, rel=1e-5)


def test_ders_load_shape_from_ausgrid(tmp_path):
    pytest.importorskip("pandas")
    from powerzoojax.data import AUSGRID_TRAIN_POOL
    from powerzoojax.grid.tasks.ders import load_ders_load_shape

    _ausgrid_file(tmp_path, AUSGRID_TRAIN_POOL)
    shape = load_ders_load_shape(tmp_path, role="train")
    # train = the six days that are not iid; mean of the 9 substations = 14 + sin; ÷ peak
    np.testing.assert_allclose(shape, _bucket_shape(14.0, days=6, normalise="max"), rtol=1e-5)


# ============================================================================ DC microgrid


@functools.lru_cache(maxsize=None)
def _dcmg_run():
    from powerzoojax.core import episode_rollout
    from powerzoojax.grid import DataCenterMicrogridEnv, make_dcmicrogrid_params
    from powerzoojax.grid.tasks.dc_microgrid import max_renewable_policy, rollout_dcmicrogrid

    env = DataCenterMicrogridEnv()
    params = make_dcmicrogrid_params(max_steps=12)
    history = rollout_dcmicrogrid(env, params, KEY, max_renewable_policy)
    trace = jax.device_get(episode_rollout(env, params, KEY, max_renewable_policy))
    return history, trace


def test_dcmicrogrid_metrics():
    from powerzoojax.grid.tasks.dc_microgrid import compute_dcmicrogrid_metrics

    history, trace = _dcmg_run()
    assert len(history) == 12 and "reward" in history[0] and isinstance(history[0]["p_pv_mw"], float)
    m = compute_dcmicrogrid_metrics(history)
    from_trace = compute_dcmicrogrid_metrics(trace)
    assert m.keys() == from_trace.keys()
    for k in m:
        assert m[k] == pytest.approx(from_trace[k], rel=1e-5, abs=1e-9), k
    info = {k: np.asarray(v, np.float64) for k, v in trace.info.items() if np.ndim(v) == 1}
    dt = 5 / 60
    assert m["episode_reward"] == pytest.approx(float(np.sum(trace.reward)), rel=1e-5)
    assert m["total_energy_cost"] == pytest.approx(float(info["p_dc_mw"].sum() * dt), rel=1e-5)
    assert m["grid_import_mwh"] == pytest.approx(float(info["p_grid_import_mw"].sum() * dt), rel=1e-5)
    assert m["total_carbon_kg"] == pytest.approx(float((info["carbon_kg"] + info["grid_carbon_kg"]).sum()), rel=1e-5)
    assert m["feasibility_rate"] == pytest.approx(float(np.mean(info["cost_sum"] == 0)))
    assert m["battery_cycles"] == pytest.approx(float(np.abs(info["p_batt_mw"]).sum() * dt) / (2 * 2.0 * 0.75), rel=1e-5)
    assert m["soc_min"] <= m["mean_soc"] <= m["soc_max"]
    assert compute_dcmicrogrid_metrics([]) == {}


def test_data_apply_ood_transform_forwards_with_factors():
    from powerzoojax.data import apply_ood_transform
    from powerzoojax.grid import make_dcmicrogrid_params

    base = make_dcmicrogrid_params(max_steps=12)
    dry = apply_ood_transform(base, "renewable_drought", drought_factor=0.5)
    np.testing.assert_allclose(np.asarray(dry.pv_cf_profile), 0.5 * np.asarray(base.pv_cf_profile), rtol=1e-6)
    hot = apply_ood_transform(base, "cooling_stress", temp_delta=2.0)
    np.testing.assert_allclose(np.asarray(hot.dc.outdoor_temp_profile), np.asarray(base.dc.outdoor_temp_profile) + 2.0, rtol=1e-6)
    weak = apply_ood_transform(base, "dg_derating", dg_derating_factor=0.5)
    assert float(weak.dg_p_max_mw) == pytest.approx(0.5 * float(base.dg_p_max_mw))
    tight = apply_ood_transform(base, "sla_tighten", sla_slack=1.5)
    np.testing.assert_allclose(np.asarray(tight.dc.deadline_slack), 1.5)
    with pytest.raises(ValueError, match="unknown OOD scenario"):
        apply_ood_transform(base, "heatwave")
