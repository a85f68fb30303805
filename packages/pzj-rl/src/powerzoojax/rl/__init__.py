"""RL layer (pzj-rl): wrappers, trainers, presets and the command line.

Single-agent wrappers bind params and keep the jit / vmap / rollout-kernel contract:
``LogWrapper`` (5-tuple), ``SafeRLWrapper`` (6-tuple with the selected costs),
``SauteWrapper`` (budget in the observation), ``RewardWrapper`` (user reward), ``bind``;
``PenaltyRewardWrapper`` (an ``Environment``: costs folded into the reward, goes inside ``LogWrapper``).
Trainers (Equinox + Optax, data collected through ``powerzoojax.core.rollout``):
``make_ppo_train`` (Gaussian or Beta actor), ``make_cmdp_train`` (PPO-Lagrangian),
``make_sac_train``, ``make_ippo_train`` / ``make_ippo_typed_train`` /
``make_ippo_typed_lagrangian_train`` and ``make_ippo_act`` on the multi-agent adapters
(``GridMARLEnv``, ``DistGridMARLEnv``, ``make_ders_marl_env``, ``MarketMARLEnv``),
``make_train`` (dispatch on ``TrainConfig.algo``); ``train`` runs a preset or an env in one call.
Evaluation protocol (spec §4.3): ``RunRecord``, ``write_manifest`` / ``load_manifest``,
``summarize`` (mean, std, IQM, bootstrap CI, NormScore), ``paired_sign_flip_test``.
"""

from powerzoojax.rl._base import BoundWrapper
from powerzoojax.rl._bind import bind
from powerzoojax.rl._config import TrainConfig, load_config, save_config
from powerzoojax.rl._conformance import check_wrapper_api, check_wrapper_no_retrace
from powerzoojax.rl._log_wrapper import LogEnvState, LogWrapper
from powerzoojax.rl._networks import MLP, ActorCritic, BetaActorCritic
from powerzoojax.rl._penalty_wrapper import PenaltyRewardWrapper
from powerzoojax.rl._ppo import PPOTrainer, TrainState, gae, make_cmdp_train, make_ppo_train, ppo_loss
from powerzoojax.rl._presets import PresetDef, get_preset, list_presets
from powerzoojax.rl._protocol import (
    RunRecord,
    bootstrap_ci,
    iqm,
    load_manifest,
    norm_score,
    paired_sign_flip_test,
    summarize,
    write_manifest,
)
from powerzoojax.rl._result import TrainResult
from powerzoojax.rl._reward_wrapper import RewardEnvState, RewardWrapper
from powerzoojax.rl._runner import (
    latest_checkpoint,
    load_checkpoint,
    plot_learning_curve,
    run_training,
    save_checkpoint,
)
from powerzoojax.rl._safe_wrapper import SafeRLState, SafeRLWrapper
from powerzoojax.rl._saute_wrapper import SauteState, SauteWrapper
from powerzoojax.rl._train import evaluate, make_act, make_train, random_act, train
from powerzoojax.rl._multi_agent import MARLState, MultiAgentEnvironment
from powerzoojax.rl._grid_marl import GridMARLEnv
from powerzoojax.rl._dist_grid_marl import DistGridMARLEnv, make_ders_marl_env
from powerzoojax.rl._dist_grid_3phase_marl import DistGrid3PhaseMARLEnv
from powerzoojax.rl._market_marl_env import MarketMARLEnv
from powerzoojax.rl._ippo import (
    IPPOState,
    IPPOTrainer,
    make_ippo_act,
    make_ippo_train,
    make_ippo_typed_lagrangian_train,
    make_ippo_typed_train,
)
from powerzoojax.rl._sac import SACActor, SACState, SACTrainer, make_sac_train

__all__ = [
    "MLP", "ActorCritic", "BetaActorCritic", "BoundWrapper", "LogEnvState", "LogWrapper", "PPOTrainer", "PresetDef",
    "RewardEnvState", "RewardWrapper", "SafeRLState", "SafeRLWrapper", "SauteState", "SauteWrapper",
    "TrainConfig", "TrainResult", "TrainState", "bind", "check_wrapper_api", "check_wrapper_no_retrace",
    "evaluate", "gae", "get_preset", "latest_checkpoint", "list_presets", "load_checkpoint", "load_config",
    "make_act", "make_cmdp_train", "make_ppo_train", "make_train", "plot_learning_curve", "random_act",
    "run_training", "save_checkpoint", "save_config", "train",
    "MARLState", "MultiAgentEnvironment", "GridMARLEnv", "DistGridMARLEnv", "DistGrid3PhaseMARLEnv", "MarketMARLEnv",
    "IPPOState", "IPPOTrainer", "make_ippo_act", "make_ippo_train", "make_ippo_typed_train",
    "make_ippo_typed_lagrangian_train", "make_ders_marl_env", "ppo_loss",
    "SACActor", "SACState", "SACTrainer", "make_sac_train", "PenaltyRewardWrapper",
    "RunRecord", "bootstrap_ci", "iqm", "load_manifest", "norm_score", "paired_sign_flip_test", "summarize",
    "write_manifest",
]
