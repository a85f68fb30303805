"""Names of the reference that pzj-grid provides: they resolve from the facades, the
aliases are our objects, the spec's signatures hold (behaviour: test_task_reference_api.py)."""

import importlib

import pytest
from reference_public_names import all_names, signature_starts


def _grid_names(facade: str) -> list[str]:
    module = importlib.import_module(facade)
    return [n for n in all_names(facade) if module._LAZY.get(n, (None, None))[1] == "pzj-grid"]


@pytest.mark.parametrize("facade", ["powerzoojax.envs", "powerzoojax.tasks"])
def test_grid_names_resolve(facade):
    module = importlib.import_module(facade)
    names = _grid_names(facade)
    assert len(names) == {"powerzoojax.envs": 50, "powerzoojax.tasks": 76}[facade]
    for name in names:
        assert getattr(module, name) is not None, name


def test_aliases_are_our_objects():
    import powerzoojax.envs as envs
    import powerzoojax.grid as grid
    import powerzoojax.grid.resources as res
    import powerzoojax.tasks as tasks
    from powerzoojax.grid.tasks import dso, tso

    assert envs.TransGridState is grid.GridState
    assert envs.GridParams is grid.TransGridParams
    assert envs.DistGrid3PhState is grid.DistGrid3PhaseState and envs.DistGrid3PhParams is grid.DistGrid3PhaseParams
    for name in ("BatteryState", "BatteryParams", "RenewableState", "RenewableParams", "VehicleState", "VehicleParams",
                 "FlexLoadState", "FlexLoadParams", "DieselParams"):
        assert getattr(envs, name) is getattr(res, name)
    assert envs.make_tso_scuc_params is tasks.make_tso_scuc_params is tso.make_tso_scuc_params
    assert tasks.dso_tou_heuristic_rollout is dso.dso_tou_rule_based_rollout
    assert tasks.dso_droop_heuristic_rollout is dso.dso_droop_rule_based_rollout
    assert tasks.DataCenterMicrogridEnv is grid.DataCenterMicrogridEnv
    assert tasks.make_dcmicrogrid_params is grid.make_dcmicrogrid_params


def test_registry_classes_are_the_exported_classes():
    import powerzoojax.tasks as tasks

    for key, (module, class_name, dist) in tasks.TASK_REGISTRY.items():
        if dist != "pzj-grid":
            continue
        cls = getattr(tasks, class_name)
        assert cls is getattr(importlib.import_module(module), class_name)
        assert cls.task_name == key


def test_diesel_params():
    import jax
    from powerzoojax.envs import DieselParams, compute_dg_emissions, compute_dg_fuel_cost, compute_dg_power

    p = DieselParams()
    assert (p.p_dg_max_mw, p.fuel_cost_per_mwh, p.emission_factor) == (0.6, 300.0, 0.8)
    power = compute_dg_power(0.5, p.p_dg_max_mw)
    assert float(power) == pytest.approx(0.3)
    assert float(compute_dg_fuel_cost(power, 0.5, p.fuel_cost_per_mwh)) == pytest.approx(0.3 * 0.5 * 300.0)
    assert float(compute_dg_emissions(power, 0.5, p.emission_factor)) == pytest.approx(0.3 * 0.5 * 1000 * 0.8)
    assert jax.tree.leaves(DieselParams(1.2)) == []  # all static: compile-time constants


# Signatures the spec writes out (rl-market-tasks §3.4 / physics §2.5) or the reference's.
GRID_SIGNATURES = [
    ("make_tso_net_load_profiles", "n_steps=48, wind_frac=0.7, solar_frac=0.5, load_d_max=None, gross_demand_mw=None, "
                                   "wind_mw=None, solar_mw=None, delta_t_hours=0.5"),
    ("make_tso_case118_params", "load_profiles=None, max_steps=48, delta_t_hours=0.5, reserve_margin_frac=0.05, "
                                "enable_uc=True, enable_reserve=True, forecast_horizon_steps=0, reward_scale=0.0001, "
                                "cost_thermal_weight=1.0, solver_mode=1, dcopf_max_iter=..., dcopf_tol=..., "
                                "sample_start_on_reset=False, fixed_episode_start_idx=0, data_loader=None, split='train'"),
    ("make_tso_case14_params", "load_profiles=None, max_steps=48, delta_t_hours=0.5, reserve_margin_frac=0.05, "
                               "enable_uc=True, enable_reserve=True, forecast_horizon_steps=0, reward_scale=0.0001, "
                               "solver_mode=1, dcopf_max_iter=..., dcopf_tol=..."),
    ("make_tso_ed_params", "case_id='118', max_steps=48, delta_t_hours=0.5"),
    ("make_tso_uc_params", "case_id='118', max_steps=48, delta_t_hours=0.5"),
    ("make_tso_scuc_params", "case_id='118', max_steps=48, delta_t_hours=0.5, reserve_margin_frac=0.05"),
    ("make_tso_net_load_profiles_from_data", "data_loader, case, split='train', episode_start_idx=0, n_steps=48, "
                                             "wind_frac=0.7, solar_frac=0.5, allow_synthetic_fallback=False"),
    ("make_comparison_tso_load_trace", "n_steps=48, delta_t_hours=0.5, *, split='train', episode_start_idx=0"),
    ("make_comparison_tso_params", "max_steps=48, delta_t_hours=0.5, reserve_margin_frac=0.05, *, split='train'"),
    ("tso_all_on_rollout", "env, params, key"),
    ("tso_merit_order_rollout", "env, params, key, n_commit=None"),
    ("compute_tso_metrics", "rollout_results, baseline_results=None"),
    ("make_case14_with_uc_defaults", "base_case"),
    ("load_feeder_shape", "data_loader, feeder, role='train', *, resample='30min'"),
    ("load_dso_feeder_shapes", "data_loader=None, role='train', *, resample='30min'"),
    ("make_dso_load_profiles", "case, feeder_shapes, *, max_steps=48, episode_start=0, load_scale=1.0, "
                               "bus_load_scale_overrides=None, preserve_feeder_totals=False"),
    ("make_synthetic_feeder_shapes", "max_steps=48, *, peak_ratio=1.5, peak_hour_start=17, peak_hour_end=21, steps_per_day=48"),
    ("make_dso_flexload_bundle", "case, *, shift_horizon=4, curtail_cost_per_mwh=50.0, shift_cost_per_mwh=10.0, dt_hours=0.5"),
    ("make_dso_params", "case=None, *, feeder_shapes=None, max_steps=48, steps_per_day=48, episode_start=0, load_scale=1.0, "
                        "v_slack=1.0, v_min=0.94, v_max=1.06, loss_penalty_weight=0.1, shift_horizon=4, "
                        "curtail_cost_per_mwh=50.0, shift_cost_per_mwh=10.0, dt_hours=0.5, flexload_config=None, "
                        "flexload_bus_ids=None, bus_load_scale_overrides=None, preserve_feeder_totals=False, "
                        "cost_mode='voltage_only'"),
    ("make_dso_params_from_split", "case=None, *, role='train', data_loader=None, resample='30min'"),
    ("make_dso_1flex_params", "case=None, *, bus_id=18, curtail_cap_mw=0.1, shift_cap_mw=0.1"),
    ("make_dso_params_nonstationary", "case=None, *, feeder_shapes=None, episode_idx=0, total_episodes=500, key=None, "
                                      "drift_rate=0.0003, rolling_sigma_steps=720.0, mode='train', max_steps=48"),
    ("rollout_dso", "env, params, key, policy_fn, max_steps=None"),
    ("dso_no_control_rollout", "env, params, key"),
    ("dso_tou_rule_based_rollout", "env, params, key, peak_start=16, peak_end=21"),
    ("dso_droop_rule_based_rollout", "env, params, key, v_low=0.96, v_high=1.04"),
    ("compute_dso_metrics", "rollout_results, baseline_results=None"),
    ("make_ders_battery_bundle", "case, *, max_steps=48, dt_hours=0.5"),
    ("make_ders_pv_bundle", "case, *, max_steps=48, profiles=None, dt_hours=0.5"),
    ("make_ders_flexload_bundle", "case, *, dt_hours=0.5"),
    ("make_ders_params", "case=None, *, max_steps=48, dt_hours=0.5, v_min=0.94, v_max=1.06, loss_penalty_weight=0.1, "
                         "pv_profiles=None, load_profiles_p=None, load_profiles_q=None"),
    ("make_ders_params_with_profiles", "case=None, *, max_steps=48, dt_hours=0.5, v_min=0.94, v_max=1.06, "
                                       "loss_penalty_weight=0.1, pv_profiles=None, load_profiles_p=None, load_profiles_q=None"),
    ("make_ders_params_from_split", "case=None, *, role='train', data_loader=None, resample='30min', episode_start=0, "
                                    "max_steps=48, dt_hours=0.5, v_min=0.94, v_max=1.06, loss_penalty_weight=0.1, "
                                    "load_scale=1.0, pv_scale=1.0"),
    ("make_ders_marl_env", "case=None, *, max_steps=48, v_min=0.94, v_max=1.06, voltage_penalty=8.0, pv_profiles=None, "
                           "observation_mode='local'"),
    ("make_ders_large_params", "case=None, *, max_steps=48, dt_hours=0.5, v_min=0.96, v_max=1.04, pv_profiles=None"),
    ("make_ders_large_marl_env", "case=None, *, max_steps=48, voltage_penalty=12.0"),
    ("make_ders_ood_params", "base_params, *, scenario, pv_scale=1.0, v_min=None, v_max=None"),
    ("make_ders_3phase_eval", "case=None, *, max_steps=48, battery_buses=None, v_min=0.94, v_max=1.06, "
                              "voltage_penalty=8.0, compat_obs_dim=None"),
    ("load_ders_load_shape", "data_loader=None, *, role='train', resample='30min'"),
    ("rollout_ders", "env, params, key, policy_fn"),
    ("ders_no_control_rollout", "env, params, key"),
    ("ders_volt_droop_rollout", "env, params, key"),
    ("agent_dropout_rollout", "env, params, key, policy_fn=None, n_dropout=2, seed=0"),
    ("compute_ders_metrics", "rollout, baseline, *, v_min=0.94, v_max=1.06"),
    ("compute_ders_safety_metrics", "rollout, *, v_min=0.94, v_max=1.06"),
    ("compute_dcmicrogrid_metrics", "info_history"),
    ("make_dcmicrogrid_params_with_profiles", "source='google', episode_start_step=0"),
]


@pytest.mark.parametrize(("name", "spec"), GRID_SIGNATURES, ids=[n for n, _ in GRID_SIGNATURES])
def test_signatures(name, spec):
    import powerzoojax.tasks as tasks

    signature_starts(getattr(tasks, name), spec)
