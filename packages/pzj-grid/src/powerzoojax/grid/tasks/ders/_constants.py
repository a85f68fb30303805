"""The DERs task's layout and constants: the devices' buses and ratings, the agent names,
the local-observation neighbourhood, the splits, the voltage bands, and the
scalability, out-of-distribution and three-phase variants.
"""

DERS_BATTERY_BUSES = (9, 55, 17, 122)
DERS_PV_BUSES = (6, 73, 72, 82)
DERS_FLEX_BUSES = (41, 70, 135, 24)
DERS_AGENT_NAMES = tuple(f"{kind}_{k}" for kind in ("battery", "renewable", "flexload") for k in range(4))
DERS_LOCAL_K = 4
_SPLITS = {
    "train": ("train", 1.0, 1.0, (0.94, 1.06)),
    "iid": ("iid", 1.0, 1.0, (0.94, 1.06)),
    "voltage_tightening": ("iid", 1.0, 1.0, (0.96, 1.04)),
    "pv_penetration_shift": ("iid", 1.0, 2.0, (0.94, 1.06)),
    "load_stress": ("iid", 1.15, 1.0, (0.94, 1.06)),
}

# The reference API's device configs and band.
DERS_BENCHMARK_LOAD_CASE = "case141"
DERS_FLEXLOAD_BUSES = DERS_FLEX_BUSES
DERS_BATTERY_CONFIG = {
    "power_mw": 0.10, "capacity_mwh": 0.30, "s_rated_mva": 0.15, "enable_q_control": True, "soc_min": 0.1,
    "soc_max": 0.9, "initial_soc": 0.5,
}
DERS_PV_CONFIG = {"capacity_mw": 0.20, "s_rated_mva": 0.22, "allow_curtailment": True, "curtail_cost_per_mwh": 0.0}
DERS_FLEXLOAD_CONFIG = {"curtail_cap_mw": 0.10, "shift_cap_mw": 0.10, "shift_horizon": 4}
DERS_V_MIN, DERS_V_MAX = 0.94, 1.06

# Scalability variant: 20 devices on case141 in a tighter band.
DERS_LARGE_BATTERY_BUSES = (33, 7, 39, 11, 92, 54, 44)
DERS_LARGE_PV_BUSES = (15, 104, 57, 106, 62, 136, 83)
DERS_LARGE_FLEXLOAD_BUSES = (121, 84, 123, 125, 128, 30)
DERS_LARGE_V_MIN, DERS_LARGE_V_MAX = 0.96, 1.04
DERS_OOD_SCENARIOS = ("voltage_tightening", "pv_penetration_shift", "load_stress")
DERS_3PHASE_BATTERY_BUSES = (10, 30, 50, 70, 90, 110)
_ROLE_WINDOWS = {"train": "train", "iid": "iid", "summer_ood": "stress", "zone_holdout": "iid"}
