"""TSO task: security-constrained unit commitment on case118.

Env [`UnitCommitmentEnv`][powerzoojax.grid.UnitCommitmentEnv] (DC-OPF dispatch, 48 × 30 min, 5 % reserve,
4-step load preview: obs 410, action 108 on case118). Net load per bus =
`clip(load − 0.7·wind − 0.5·solar, 0.05, 1) · load_d_max` with each signal divided by
its max over the 48-step window. Data: the shipped SimBench EHV 2016 series (load, wind,
solar availability; `powerzoojax.data`), because the GB NESO files the reference uses are
not shipped; a `DataLoader`/`source` argument reads GB files when present. Splits:
`train` / `iid` (the dataset's frozen windows), `load_stress` (iid × 1.15),
`line_tightening` (iid, ratings × 0.85).

Case data: the benchmark tables of cases 118 and 14 carry their own unit-commitment
columns (ramps, minimum up/down times, start-up and no-load costs, initial state and keep
time), which [`make_uc_params`][powerzoojax.grid.make_uc_params] reads; a case without them gets the
case14 defaults (`CASE14_UC_DEFAULTS`: ramp 0.5 p_max/h, min up/down 2 steps, start-up
$1000, no-load $100/h, all on for 10 steps, initial output p_min). case118 gets the
benchmark line ratings `base_mva · deg2rad(8°) / |x|`.
"""

# Modules, bottom to top (each imports only those before it): `_constants` (splits, factors, UC defaults),
# `_profiles` (net-load profiles), `_params` (the case and the params factories),
# `_comparison` (the fixed comparison recipe), `_baselines` (rule-based policies and
# rollouts), `_metrics` and `_task` (`TSOTask`); every public name is re-exported here.
from powerzoojax.grid.tasks.tso._constants import (
    BENCHMARK_ANGLE_DEG,
    CASE14_UC_DEFAULTS,
    LINE_TIGHTENING_FACTOR,
    LOAD_STRESS_FACTOR,
    SOLAR_FRAC,
    TSO_FORECAST_HORIZON,
    TSO_SPLITS,
    WINDOW_STEPS,
    WIND_FRAC,
)
from powerzoojax.grid.tasks.tso._profiles import (
    make_tso_net_load_profiles,
    make_tso_net_load_profiles_from_data,
    tso_net_load_shape,
)
from powerzoojax.grid.tasks.tso._params import (
    make_case14_with_uc_defaults,
    make_tso_case118_params,
    make_tso_case14_params,
    make_tso_ed_params,
    make_tso_scuc_params,
    make_tso_uc_params,
    tso_case,
)
from powerzoojax.grid.tasks.tso._comparison import (
    TSO_COMPARISON_SCHEMA,
    make_comparison_tso_load_trace,
    make_comparison_tso_params,
)
from powerzoojax.grid.tasks.tso._baselines import (
    tso_all_on_policy,
    tso_all_on_rollout,
    tso_merit_order_policy,
    tso_merit_order_rollout,
    unit_merit_cost,
)
from powerzoojax.grid.tasks.tso._metrics import compute_tso_metrics
from powerzoojax.grid.tasks.tso._task import TSOTask

__all__ = [
    "CASE14_UC_DEFAULTS", "LINE_TIGHTENING_FACTOR", "LOAD_STRESS_FACTOR",
    "TSO_COMPARISON_SCHEMA", "TSO_FORECAST_HORIZON", "TSO_SPLITS", "TSOTask",
    "compute_tso_metrics", "make_case14_with_uc_defaults", "make_comparison_tso_load_trace",
    "make_comparison_tso_params", "make_tso_case14_params", "make_tso_case118_params", "make_tso_ed_params",
    "make_tso_net_load_profiles", "make_tso_net_load_profiles_from_data", "make_tso_scuc_params",
    "make_tso_uc_params", "tso_all_on_policy", "tso_all_on_rollout", "tso_case", "tso_merit_order_policy",
    "tso_merit_order_rollout", "tso_net_load_shape", "unit_merit_cost",
]
