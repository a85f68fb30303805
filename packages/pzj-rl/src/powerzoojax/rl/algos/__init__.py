"""Trainers (Equinox + Optax; data collected through `powerzoojax.core.rollout`): PPO
(Gaussian or Beta actor) and PPO-Lagrangian sharing one loss, SAC, APG (analytic policy
gradient through the differentiable env), IPPO / typed IPPO /
typed IPPO-Lagrangian on the multi-agent adapters, their networks and the update loop
they share; `TrainConfig` (the knobs every trainer reads, and the reference's way to build
a config: it returns the family's `PPOConfig`, `SACConfig` or `APGConfig`) and
`TrainResult` (what a trainer returns) live here because the trainers take and give them."""

from powerzoojax.rl.algos._apg import APGTrainer, make_apg_train
from powerzoojax.rl.algos._config import APGConfig, PPOConfig, SACConfig, TrainConfig, load_config, save_config
from powerzoojax.rl.algos._ippo import (
    IPPOState,
    IPPOTrainer,
    make_ippo_act,
    make_ippo_train,
    make_ippo_typed_lagrangian_train,
    make_ippo_typed_train,
)
from powerzoojax.rl.algos._networks import MLP, ActorCritic, BetaActorCritic
from powerzoojax.rl.algos._ppo import PPOTrainer, TrainState, gae, make_cmdp_train, make_ppo_train, ppo_loss
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.algos._sac import SACActor, SACState, SACTrainer, make_sac_train

__all__ = [
    "APGConfig", "APGTrainer", "MLP", "ActorCritic", "BetaActorCritic", "IPPOState", "IPPOTrainer", "PPOConfig", "PPOTrainer", "SACActor", "SACConfig", "SACState",
    "SACTrainer", "TrainConfig", "TrainResult", "TrainState", "gae", "load_config", "make_cmdp_train",
    "make_apg_train", "make_ippo_act", "make_ippo_train", "make_ippo_typed_lagrangian_train", "make_ippo_typed_train",
    "make_ppo_train", "make_sac_train", "ppo_loss", "save_config",
]
