"""DERs task: twelve devices on case141 cooperating on
voltage and losses; the multi-agent adapter (pzj-rl `DistGridMARLEnv`) gives one agent
per device.

Env: [`DistGridEnv`][powerzoojax.grid.DistGridEnv] (`include_der=False`) with bundles, in order:
4 batteries at buses 9, 55, 17, 122 (0.10 MW, 0.30 MWh, S 0.15, [P, Q] → act 2 / obs 3),
4 PV at 6, 73, 72, 82 (0.20 MW, S 0.22, [curtail, Q] → act 2 / obs 4), 4 flex loads at 41,
70, 135, 24 (0.10 MW, horizon 4 → act 2 / obs 5). Bundle obs 48, action 24. Band
[0.94, 1.06], loss weight 0.1, 48 steps.

Data substitution (Ausgrid is not shipped): load shape = mean of the SimBench 2016 MV
feeder profiles (`simbench_feeders_2016`) normalised by its peak; PV = SimBench `PV1`
(`simbench_pv_2016`) normalised by its peak; both windowed with wrap-around and
multiplied into the case's base load / PV capacity. Splits: `train`, `iid`,
`voltage_tightening` ([0.96, 1.04]), `pv_penetration_shift` (PV × 2), `load_stress`
(load × 1.15), the three OOD splits on the iid window.

Local observations (Dec-POMDP, K = 4): [`make_local_obs_layout`][powerzoojax.grid.tasks.ders.make_local_obs_layout] precomputes index
arrays on the host; [`local_observations`][powerzoojax.grid.tasks.ders.local_observations] is a pure gather usable inside `jit`.
"""

# Modules, bottom to top (each imports only those before it): `_constants` (layout,
# ratings, splits), `_profiles` (load and PV shapes), `_local_obs` (the agents' local
# observations), `_params` (bundles and params factories), `_marl` (the multi-agent
# envs), `_baselines` (no-op, droop and dropout rollouts), `_metrics` and `_task`
# (`DERsTask`); every public name is re-exported here.
from powerzoojax.grid.tasks.ders._constants import (
    DERS_3PHASE_BATTERY_BUSES,
    DERS_AGENT_NAMES,
    DERS_BATTERY_BUSES,
    DERS_BATTERY_CONFIG,
    DERS_BENCHMARK_LOAD_CASE,
    DERS_FLEXLOAD_BUSES,
    DERS_FLEXLOAD_CONFIG,
    DERS_FLEX_BUSES,
    DERS_LARGE_BATTERY_BUSES,
    DERS_LARGE_FLEXLOAD_BUSES,
    DERS_LARGE_PV_BUSES,
    DERS_LARGE_V_MAX,
    DERS_LARGE_V_MIN,
    DERS_LOCAL_K,
    DERS_OOD_SCENARIOS,
    DERS_PV_BUSES,
    DERS_PV_CONFIG,
    DERS_V_MAX,
    DERS_V_MIN,
)
from powerzoojax.grid.tasks.ders._profiles import ders_shapes, load_ders_load_shape, load_ders_pv_profile
from powerzoojax.grid.tasks.ders._local_obs import (
    LocalObsLayout,
    bfs_neighbours,
    ders_local_observations,
    local_observations,
    make_local_obs_layout,
)
from powerzoojax.grid.tasks.ders._params import (
    make_ders_battery_bundle,
    make_ders_flexload_bundle,
    make_ders_large_params,
    make_ders_ood_params,
    make_ders_params,
    make_ders_params_from_split,
    make_ders_params_with_profiles,
    make_ders_pv_bundle,
)
from powerzoojax.grid.tasks.ders._marl import make_ders_3phase_eval, make_ders_large_marl_env, make_ders_marl_env
from powerzoojax.grid.tasks.ders._baselines import (
    agent_dropout_rollout,
    ders_no_control_rollout,
    ders_noop_action,
    ders_volt_droop_rollout,
    rollout_ders,
)
from powerzoojax.grid.tasks.ders._metrics import compute_ders_metrics, compute_ders_safety_metrics
from powerzoojax.grid.tasks.ders._task import DERsTask

__all__ = [
    "DERS_3PHASE_BATTERY_BUSES", "DERS_AGENT_NAMES", "DERS_BATTERY_BUSES", "DERS_BATTERY_CONFIG",
    "DERS_BENCHMARK_LOAD_CASE", "DERS_FLEXLOAD_BUSES", "DERS_FLEXLOAD_CONFIG", "DERS_FLEX_BUSES",
    "DERS_LARGE_BATTERY_BUSES", "DERS_LARGE_FLEXLOAD_BUSES", "DERS_LARGE_PV_BUSES", "DERS_LARGE_V_MAX",
    "DERS_LARGE_V_MIN", "DERS_LOCAL_K", "DERS_OOD_SCENARIOS", "DERS_PV_BUSES", "DERS_PV_CONFIG", "DERS_V_MAX",
    "DERS_V_MIN", "DERsTask", "LocalObsLayout", "agent_dropout_rollout", "bfs_neighbours",
    "compute_ders_metrics", "compute_ders_safety_metrics", "ders_local_observations",
    "ders_no_control_rollout", "ders_noop_action", "ders_shapes", "ders_volt_droop_rollout",
    "load_ders_load_shape", "load_ders_pv_profile", "local_observations", "make_ders_3phase_eval",
    "make_ders_battery_bundle", "make_ders_flexload_bundle", "make_ders_large_marl_env",
    "make_ders_large_params", "make_ders_marl_env", "make_ders_ood_params", "make_ders_params",
    "make_ders_params_from_split", "make_ders_params_with_profiles", "make_ders_pv_bundle",
    "make_local_obs_layout", "rollout_ders",
]
