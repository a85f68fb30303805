"""RL layer (pzj-rl): wrappers, multi-agent adapters, trainers, presets and the command line.

One room per concern, each importing only the rooms above it in this list (and core):

- [`powerzoojax.rl.wrappers`][powerzoojax.rl.wrappers]: single-agent wrappers that bind params and keep the
  jit / vmap / rollout-kernel contract: `LogWrapper` (5-tuple), `SafeRLWrapper`
  (6-tuple with the selected costs), `SauteWrapper` (budget in the observation),
  `RewardWrapper` (user reward), `bind`; `PenaltyRewardWrapper` (an
  `Environment`: costs folded into the reward, goes inside `LogWrapper`);
  `NormalizeObservation`, `ClipObservation`, `FrameStack`, `ClipAction`,
  `RescaleAction`, `TimeLimit`;
- [`powerzoojax.rl.marl`][powerzoojax.rl.marl]: the multi-agent adapters `GridMARLEnv`,
  `DistGridMARLEnv`, `make_ders_marl_env`, `MarketMARLEnv` (the grid and market
  envs are imported lazily: rl itself needs only core);
- [`powerzoojax.rl.algos`][powerzoojax.rl.algos]: trainers (Equinox + Optax, data collected through
  `powerzoojax.core.rollout`): `make_ppo_train` (Gaussian or Beta actor),
  `make_cmdp_train` (PPO-Lagrangian), `make_sac_train`, `make_apg_train` (analytic
  policy gradient through the differentiable env), `make_ippo_train` /
  `make_ippo_typed_train` / `make_ippo_typed_lagrangian_train` and `make_ippo_act`;
  `TrainConfig` (with its per-family classes `PPOConfig`, `SACConfig`, `APGConfig`) and `TrainResult`;
- [`powerzoojax.rl.training`][powerzoojax.rl.training]: `make_train` (dispatch on `TrainConfig.algo`),
  `train` (a preset or an env in one call), presets, the host-side runner
  (checkpoints, divergence and signal stops), `load_policy` / `evaluate_run` (reload
  and evaluate a run), the CLI (`python -m powerzoojax`) and the evaluation protocol: `RunRecord`,
  `write_manifest` / `load_manifest`, `summarize` (mean, std, IQM, bootstrap CI,
  NormScore), `paired_sign_flip_test`.

This package re-exports their public names. Beside them, `powerzoojax.rl.adapters`
holds the Gymnasium and PettingZoo adapters (extras `[gym]`, `[pettingzoo]`); it is
not re-exported, so `import powerzoojax.rl` never needs those packages.
"""

from powerzoojax.rl.wrappers import (
    BoundWrapper,
    ClipAction,
    ClipObservation,
    FrameStack,
    NormalizeObservation,
    RescaleAction,
    RunningStats,
    TimeLimit,
    LogEnvState,
    LogWrapper,
    PenaltyRewardWrapper,
    RewardEnvState,
    RewardWrapper,
    SafeRLState,
    SafeRLWrapper,
    SauteState,
    SauteWrapper,
    bind,
    check_wrapper_api,
    check_wrapper_no_retrace,
)
from powerzoojax.rl.marl import (
    DistGrid3PhaseMARLEnv,
    DistGridMARLEnv,
    GridMARLEnv,
    MARLState,
    MarketMARLEnv,
    MultiAgentEnvironment,
    make_ders_marl_env,
)
from powerzoojax.rl.algos import (
    APGConfig,
    APGTrainer,
    MLP,
    ActorCritic,
    BetaActorCritic,
    IPPOState,
    IPPOTrainer,
    PPOConfig,
    PPOTrainer,
    SACActor,
    SACConfig,
    SACState,
    SACTrainer,
    TrainConfig,
    TrainResult,
    TrainState,
    gae,
    load_config,
    make_apg_train,
    make_cmdp_train,
    make_ippo_act,
    make_ippo_train,
    make_ippo_typed_lagrangian_train,
    make_ippo_typed_train,
    make_ppo_train,
    make_sac_train,
    ppo_loss,
    save_config,
)
from powerzoojax.rl.training import (
    CheckpointError,
    CheckpointWarning,
    LoadedPolicy,
    PresetDef,
    RunRecord,
    TrainingDiverged,
    TrainingInterrupted,
    bootstrap_ci,
    evaluate,
    evaluate_run,
    get_preset,
    iqm,
    latest_checkpoint,
    list_presets,
    load_checkpoint,
    load_manifest,
    load_policy,
    make_act,
    make_train,
    norm_score,
    paired_sign_flip_test,
    plot_learning_curve,
    random_act,
    run_training,
    save_checkpoint,
    summarize,
    train,
    write_manifest,
)

__all__ = [
    "MLP", "ActorCritic", "BetaActorCritic", "BoundWrapper", "LogEnvState", "LogWrapper", "PPOTrainer", "PresetDef",
    "RewardEnvState", "RewardWrapper", "SafeRLState", "SafeRLWrapper", "SauteState", "SauteWrapper",
    "TrainConfig", "PPOConfig", "SACConfig", "APGConfig", "TrainResult", "TrainState", "bind", "check_wrapper_api", "check_wrapper_no_retrace",
    "evaluate", "gae", "get_preset", "latest_checkpoint", "list_presets", "load_checkpoint", "load_config",
    "make_act", "make_cmdp_train", "make_ppo_train", "make_train", "plot_learning_curve", "random_act",
    "run_training", "save_checkpoint", "save_config", "train",
    "MARLState", "MultiAgentEnvironment", "GridMARLEnv", "DistGridMARLEnv", "DistGrid3PhaseMARLEnv", "MarketMARLEnv",
    "IPPOState", "IPPOTrainer", "make_ippo_act", "make_ippo_train", "make_ippo_typed_train",
    "make_ippo_typed_lagrangian_train", "make_ders_marl_env", "ppo_loss",
    "SACActor", "SACState", "SACTrainer", "make_sac_train", "APGTrainer", "make_apg_train", "PenaltyRewardWrapper",
    "RunRecord", "bootstrap_ci", "iqm", "load_manifest", "norm_score", "paired_sign_flip_test", "summarize",
    "write_manifest", "CheckpointError", "CheckpointWarning", "LoadedPolicy", "TrainingDiverged", "TrainingInterrupted", "evaluate_run",
    "load_policy", "ClipAction", "ClipObservation", "FrameStack", "NormalizeObservation", "RescaleAction",
    "RunningStats", "TimeLimit",
]
