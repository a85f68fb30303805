"""The reference's public names, module by module (test data, imported by the
``test_public_names*`` files of every distribution).

Provenance: generated from the project's public-name checklist of the reference
implementation (2026-12-01 revision): every name exported by the reference's
``powerzoojax.envs``, ``.tasks``, ``.case``, ``.data``, ``.rl`` and ``.utils.jax_utils``.
``before`` are the names that already resolved on that date, ``added`` the 182 that did
not. Each must import from the same module path.

``signature_starts`` checks a callable against a signature written as the spec writes it.
"""

import inspect

PUBLIC_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "powerzoojax.envs": {
      "before": (
        "Environment", "EnvState", "EnvParams", "Space", "Box", "Discrete", "MultiDiscrete", "MultiBinary",
        "GridState", "TransGridEnv", "TransGridParams", "make_trans_params", "DistGridEnv", "DistGridState",
        "DistGridParams", "make_dist_params", "DistGrid3PhaseEnv", "make_dist_3phase_params", "BatteryEnv",
        "RenewableEnv", "SolarEnv", "WindEnv", "VehicleEnv", "FlexLoadEnv", "DataCenterEnv", "DataCenterState",
        "DataCenterParams", "make_datacenter_params", "DCMicrogridState", "DCMicrogridParams",
        "DataCenterMicrogridEnv", "make_dcmicrogrid_params", "make_dcmicrogrid_params_with_profiles",
        "CostBasedMarketEnv", "make_cost_market_params", "SimpleLMPArbitrageEnv", "LMPMarketState",
        "LMPMarketParams", "make_lmp_market_params", "BidBasedMarketEnv", "make_bid_market_params",
        "MarketMARLState", "MarketMARLParams", "make_market_marl_params", "market_marl_reset",
        "market_marl_step", "UCState", "UCParams", "UnitCommitmentEnv", "make_uc_params",
      ),
      "added": (
        "make_box", "make_discrete", "make_multi_discrete", "make_multi_binary", "GridParams",
        "TransGridState", "dc_power_flow", "dc_power_flow_with_check", "DistGrid3PhState", "DistGrid3PhParams",
        "BatteryState", "BatteryParams", "RenewableState", "RenewableParams", "VehicleState", "VehicleParams",
        "FlexLoadState", "FlexLoadParams", "DieselParams", "compute_dg_power", "compute_dg_fuel_cost",
        "compute_dg_emissions", "MarketState", "MarketParams", "CostMarketState", "CostMarketParams",
        "BidMarketState", "BidMarketParams", "make_cost_segments", "piecewise_ed", "OfferSCEDSetup",
        "OfferSCEDResult", "prepare_offer_sced", "offer_sced", "make_tso_case118_params",
        "make_tso_case14_params", "make_tso_ed_params", "make_tso_uc_params", "make_tso_scuc_params",
        "tso_all_on_rollout", "tso_merit_order_rollout", "compute_tso_metrics",
      ),
    },
    "powerzoojax.tasks": {
      "before": (
        "TaskSpec", "TASK_REGISTRY",
      ),
      "added": (
        "DSOTask", "TSOTask", "DERsTask", "GencosTask", "DCMicrogridTask", "DSO_FEEDER_BUS_MAP",
        "DSO_FLEXLOAD_CONFIG", "DSO_V_MIN", "DSO_V_MAX", "load_feeder_shape", "load_dso_feeder_shapes",
        "make_dso_flexload_bundle", "make_dso_load_profiles", "make_dso_params", "make_dso_params_from_split",
        "make_dso_1flex_params", "make_dso_params_nonstationary", "make_synthetic_feeder_shapes",
        "rollout_dso", "dso_no_control_rollout", "dso_tou_rule_based_rollout", "dso_droop_rule_based_rollout",
        "dso_tou_heuristic_rollout", "dso_droop_heuristic_rollout", "compute_dso_metrics",
        "make_tso_net_load_profiles", "make_tso_net_load_profiles_from_data", "make_case14_with_uc_defaults",
        "make_tso_case118_params", "make_tso_case14_params", "make_tso_ed_params", "make_tso_uc_params",
        "make_tso_scuc_params", "tso_all_on_rollout", "tso_merit_order_rollout", "compute_tso_metrics",
        "make_comparison_tso_load_trace", "make_comparison_tso_params", "TSO_COMPARISON_SCHEMA",
        "DERS_BENCHMARK_LOAD_CASE", "DERS_BATTERY_BUSES", "DERS_PV_BUSES", "DERS_FLEXLOAD_BUSES",
        "DERS_BATTERY_CONFIG", "DERS_PV_CONFIG", "DERS_FLEXLOAD_CONFIG", "DERS_V_MIN", "DERS_V_MAX",
        "DERS_LARGE_BATTERY_BUSES", "DERS_LARGE_PV_BUSES", "DERS_LARGE_FLEXLOAD_BUSES", "DERS_LARGE_V_MIN",
        "DERS_LARGE_V_MAX", "make_ders_battery_bundle", "make_ders_pv_bundle", "make_ders_flexload_bundle",
        "make_ders_params", "make_ders_params_from_split", "make_ders_params_with_profiles",
        "make_ders_marl_env", "make_ders_large_params", "make_ders_large_marl_env", "make_ders_ood_params",
        "make_ders_3phase_eval", "load_ders_load_shape", "rollout_ders", "ders_no_control_rollout",
        "ders_volt_droop_rollout", "agent_dropout_rollout", "compute_ders_metrics",
        "compute_ders_safety_metrics", "load_gencos_profiles", "make_gencos_params", "make_gencos_env",
        "compute_gencos_metrics", "make_dcmicrogrid_params", "make_dcmicrogrid_params_with_profiles",
        "DataCenterMicrogridEnv", "DCMicrogridParams", "DCMicrogridState", "compute_dcmicrogrid_metrics",
      ),
    },
    "powerzoojax.case": {
      "before": (
        "CaseData", "validate_case_data", "load_case", "list_cases", "get_meta", "CaseMeta",
      ),
      "added": (
        "compute_ptdf", "compute_adjacency_matrix", "compute_degree_matrix", "compute_laplacian_matrix",
        "build_case_matrices", "create_case5", "create_case14", "create_case33bw", "create_case118",
        "create_case118zh", "create_case123", "create_case123_1ph", "create_case141", "create_case300",
        "create_case533mt_hi", "create_case533mt_lo", "create_case1354pegase", "create_case2383wp",
        "create_case29gb", "create_case552gb", "CaseInfo", "print_case", "print_summary", "CasePlotter",
        "plot_case", "case_to_jax", "convert_case",
      ),
    },
    "powerzoojax.data": {
      "before": (
        "DataLoader", "DatasetManifest", "DatasetRegistry", "gb_windows", "EpisodeConfig",
        "NonstationarySampler", "apply_drift",
      ),
      "added": (
        "signals", "TimeAligner", "splits", "GB_TRAIN_START", "GB_TRAIN_END", "GB_IID_START", "GB_IID_END",
        "AUSGRID_TRAIN_START", "AUSGRID_TRAIN_END", "AUSGRID_IID_START", "AUSGRID_IID_END",
        "AUSGRID_SUMMER_START", "AUSGRID_SUMMER_END", "ausgrid_windows", "ausgrid_utils",
        "AUSGRID_FEEDER_POOLS", "AUSGRID_TRAIN_POOL", "AUSGRID_ZONE_HOLDOUT_POOL", "get_ausgrid_split",
        "get_feeder_substations", "select_full_coverage_substations", "dc_microgrid_profiles", "cycle_profile",
        "make_synthetic_cpu_profile", "make_synthetic_solar_profile", "make_real_solar_profile",
        "make_synthetic_outdoor_temp_profile", "make_all_synthetic_profiles", "load_workload_profiles",
        "apply_ood_transform", "VALID_SOURCES", "VALID_OOD_SCENARIOS",
      ),
    },
    "powerzoojax.rl": {
      "before": (
        "LogEnvState", "LogWrapper", "SafeRLState", "SafeRLWrapper", "SauteWrapper", "bind", "RewardEnvState",
        "RewardWrapper", "MultiAgentEnvironment", "MARLState", "GridMARLEnv", "DistGridMARLEnv", "TrainConfig",
        "load_config", "save_config", "TrainResult", "make_train", "make_cmdp_train", "make_ippo_train",
        "make_ippo_typed_lagrangian_train", "make_ippo_act", "train", "list_presets", "get_preset",
        "MarketMARLEnv",
      ),
      "added": (

      ),
    },
    "powerzoojax.utils.jax_utils": {
      "before": (
        "split_key_for_envs", "batch_reset", "batch_step", "scan_rollout",
      ),
      "added": (

      ),
    },
}

N_NAMES, N_ADDED = 276, 182


def all_names(module: str) -> tuple[str, ...]:
    return PUBLIC_NAMES[module]["before"] + PUBLIC_NAMES[module]["added"]


def signature_starts(fn, spec: str) -> None:
    """Assert ``fn``'s parameters begin with those of ``spec`` (e.g. ``"case, n_segments=5,
    *, key"``): same names in the same order, keyword-only after ``*``, and the spec's
    defaults where it gives one (``=...`` to check only that a default exists)."""
    params = list(inspect.signature(fn).parameters.values())
    keyword_only = False
    for k, item in enumerate(p.strip() for p in spec.split(",")):
        if item == "*":
            keyword_only = True
            params.insert(k, None)  # keep positions aligned with the spec's items
            continue
        name, _, default = (part.strip() for part in item.partition("="))
        assert k < len(params), f"{fn.__name__}: missing parameter {name!r} (spec {spec!r})"
        got = params[k]
        assert got.name == name, f"{fn.__name__}: parameter {k} is {got.name!r}, spec has {name!r} ({spec!r})"
        kinds = (inspect.Parameter.KEYWORD_ONLY,) if keyword_only else (inspect.Parameter.POSITIONAL_OR_KEYWORD,)
        assert got.kind in kinds, f"{fn.__name__}: {name!r} is {got.kind.description}, spec wants {kinds[0].description}"
        if default:
            assert got.default is not inspect.Parameter.empty, f"{fn.__name__}: {name!r} has no default"
            if default != "...":
                assert repr(got.default) == default or got.default == eval(default), (  # noqa: S307 - test data
                    f"{fn.__name__}: {name!r} defaults to {got.default!r}, spec has {default}"
                )
