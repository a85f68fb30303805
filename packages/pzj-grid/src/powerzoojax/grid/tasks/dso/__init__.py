"""DSO task: voltage support on case33bw with six
flexible loads.

Env: [`DistGridEnv`][powerzoojax.grid.DistGridEnv] with `include_der=False` and one 6-device
[`FlexLoadBundle`][powerzoojax.grid.FlexLoadBundle] at buses 6, 14, 18, 22, 28, 33 → action
`Box(12)` = 6 × `[curtail, shift_out]`, obs 3·33 + 2·32 + 2 + 30 = 195. Band
[0.94, 1.06], loss weight 0.1, 48 half-hour steps. Canonical config = the reference's
frozen YAML: caps 0.165/0.110/0.110/0.088/0.132/0.110 MW, `v_slack` 1.045,
`load_scale` 0.83, end-of-feeder bus multipliers with feeder totals preserved.

Data substitution: the reference uses mean Ausgrid substation load per feeder; Ausgrid is
not shipped (and not reachable offline). We use the shipped SimBench 2016 aggregated
feeder profiles (`powerzoojax.data`, dataset `simbench_feeders_2016`): feeder A
(buses 2–18) ← `mv_semiurb`, B (19–22) ← `mv_comm`, C (23–33) ← `mv_urban`, each
normalised to mean 1 over its split. Splits: `train` (Jan–Sep 2016), `iid` (Oct–Nov),
`summer_ood` (December — the Australian summer months the reference holds out; here the
data's `stress` window), `zone_holdout` (iid window, feeders read from the low-voltage
grids `lv_semiurb4` / `lv_semiurb5` / `lv_urban6` instead). `synthetic=True` uses
the reference's analytic feeder shapes instead.
"""

# Modules, bottom to top (each imports only those before it): `_constants` (layout,
# capacities, splits), `_profiles` (bus loads and feeder shapes), `_params` (the reference
# API's factories), `_baselines` (rule-based rollouts), `_metrics` and `_task` (`DSOTask`);
# every public name is re-exported here.
from powerzoojax.grid.tasks.dso._constants import (
    DSO_BUS_MULTIPLIERS,
    DSO_FEEDERS,
    DSO_FEEDER_BUS_MAP,
    DSO_FLEXLOAD_CONFIG,
    DSO_FLEX_BUSES,
    DSO_FROZEN_CAPS_MW,
    DSO_MODULE_CAPS_MW,
    DSO_TRAIN_WINDOW_STARTS,
    DSO_V_MAX,
    DSO_V_MIN,
)
from powerzoojax.grid.tasks.dso._profiles import (
    concat_dso_feeder_windows,
    dso_base_loads,
    feeder_shapes,
    feeder_to_bus_shapes,
    load_dso_feeder_shapes,
    load_feeder_shape,
    make_dso_load_profiles,
    make_synthetic_feeder_shapes,
    synthetic_feeder_shapes,
)
from powerzoojax.grid.tasks.dso._params import (
    make_dso_1flex_params,
    make_dso_flexload_bundle,
    make_dso_params,
    make_dso_params_from_split,
    make_dso_params_nonstationary,
    resolve_dso_flexload_config,
)
from powerzoojax.grid.tasks.dso._baselines import (
    dso_droop_heuristic_rollout,
    dso_droop_rule_based_rollout,
    dso_no_control_rollout,
    dso_tou_heuristic_rollout,
    dso_tou_rule_based_rollout,
    rollout_dso,
)
from powerzoojax.grid.tasks.dso._metrics import compute_dso_metrics, dso_metrics
from powerzoojax.grid.tasks.dso._task import DSOTask

__all__ = [
    "DSO_BUS_MULTIPLIERS", "DSO_FEEDERS", "DSO_FEEDER_BUS_MAP", "DSO_FLEXLOAD_CONFIG", "DSO_FLEX_BUSES",
    "DSO_FROZEN_CAPS_MW", "DSO_MODULE_CAPS_MW", "DSO_TRAIN_WINDOW_STARTS", "DSO_V_MAX", "DSO_V_MIN", "DSOTask",
    "compute_dso_metrics", "concat_dso_feeder_windows", "dso_base_loads", "dso_droop_heuristic_rollout",
    "dso_droop_rule_based_rollout", "dso_metrics", "dso_no_control_rollout", "dso_tou_heuristic_rollout",
    "dso_tou_rule_based_rollout", "feeder_shapes", "feeder_to_bus_shapes", "load_dso_feeder_shapes",
    "load_feeder_shape", "make_dso_1flex_params", "make_dso_flexload_bundle", "make_dso_load_profiles",
    "make_dso_params", "make_dso_params_from_split", "make_dso_params_nonstationary",
    "make_synthetic_feeder_shapes", "resolve_dso_flexload_config", "rollout_dso", "synthetic_feeder_shapes",
]
