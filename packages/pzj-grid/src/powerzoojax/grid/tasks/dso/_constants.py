"""The DSO task's layout and constants: the flexible loads' buses and capacities, the
end-of-feeder load multipliers, the frozen training windows, the three feeders and the
data behind each split, and the reference API's feeder map, device list and band.
"""

DSO_FLEX_BUSES = (6, 14, 18, 22, 28, 33)
DSO_MODULE_CAPS_MW = (0.15, 0.10, 0.10, 0.08, 0.12, 0.10)
DSO_FROZEN_CAPS_MW = (0.165, 0.110, 0.110, 0.088, 0.132, 0.110)
DSO_BUS_MULTIPLIERS = {15: 0.88, 16: 0.75, 17: 0.64, 18: 0.56, 29: 0.88, 30: 0.75, 31: 0.64, 32: 0.56, 33: 0.50}
DSO_TRAIN_WINDOW_STARTS = (0, 360, 721, 1081, 1442, 1802, 2163, 2524)

# Feeder → external bus ids (bus 1, the slack, keeps shape 1).
DSO_FEEDERS = {"A": tuple(range(2, 19)), "B": tuple(range(19, 23)), "C": tuple(range(23, 34))}
_SPLIT_DATA = {
    "train": ("train", ("mv_semiurb", "mv_comm", "mv_urban")),
    "iid": ("iid", ("mv_semiurb", "mv_comm", "mv_urban")),
    "summer_ood": ("stress", ("mv_semiurb", "mv_comm", "mv_urban")),
    "zone_holdout": ("iid", ("lv_semiurb4", "lv_semiurb5", "lv_urban6")),
}

# The reference API's names: feeders "feeder_A/B/C", the module-default capacities, the band.
DSO_FEEDER_BUS_MAP: dict[str, list[int]] = {f"feeder_{name}": list(buses) for name, buses in DSO_FEEDERS.items()}
DSO_FLEXLOAD_CONFIG: list[dict] = [
    {"bus_id": bus, "curtail_cap_mw": cap, "shift_cap_mw": cap} for bus, cap in zip(DSO_FLEX_BUSES, DSO_MODULE_CAPS_MW)
]
DSO_V_MIN = 0.94
DSO_V_MAX = 1.06
