"""`make_train` (algorithm dispatch), `train` (one line from a preset or env) and evaluation helpers."""

import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jax.sharding import Mesh
from jaxtyping import Array
from powerzoojax.core import Environment, rollout
from powerzoojax.core._provider import missing_extra_message
from powerzoojax.core._types import Key
from powerzoojax.rl.algos._config import PPOConfig, TrainConfig, check_knobs, family_config
from powerzoojax.rl.algos._ppo import PPOTrainer, make_cmdp_train, make_ppo_train
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.training._runner import run_training
from powerzoojax.rl.wrappers._bind import bind
from powerzoojax.rl.wrappers._log import LogWrapper
from powerzoojax.rl.wrappers._reward import RewardWrapper
from powerzoojax.rl.wrappers._safe import SafeRLWrapper
from powerzoojax.rl.wrappers._saute import SauteWrapper
from powerzoojax.rl.wrappers._transition import transition_step

_MARL_ALGOS = ("ippo", "ippo_typed", "ippo_typed_lagrangian")


class MissingDistributionError(ModuleNotFoundError):
    """A preset's env needs pzj-grid or pzj-market, which is not installed.

    Its message is the one line `python -m powerzoojax` prints for the same preset, naming
    the pzj-rl extra that installs the distribution; `name` is the missing module. A
    subclass of `ModuleNotFoundError`, so code that catches the import error still does.
    """


def _preset_env(name: str, env_factory: Callable[[], Any]) -> Any:
    """`env_factory()`, with a missing grid or market distribution reported in one line."""
    try:
        return env_factory()
    except ImportError as err:
        message = missing_extra_message(err, f"preset {name!r}")
        if message is None:
            raise
        raise MissingDistributionError(message, name=_missing_module(err)) from None


def _missing_module(err: BaseException) -> str | None:
    """Name of the first `ModuleNotFoundError` in the chain of `err` (None if there is none)."""
    cause: BaseException | None = err
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ModuleNotFoundError):
            return cause.name
        cause = cause.__cause__ or cause.__context__
    return None


def make_train(env: Any, config: TrainConfig, *, mesh: Mesh | None = None) -> Any:
    """The trainer for `config.algo` on a bound wrapper: `trainer(key) -> TrainResult`.

    `ppo` takes any single-agent wrapper; `saute_ppo` needs a `SauteWrapper` (the caller
    applies it: `train()` does so from the config's `saute_*` fields); `ppo_lagrangian`
    needs a `SafeRLWrapper` (`TypeError` otherwise); `sac` and `apg` (analytic policy
    gradient through the differentiable env) take a single-agent wrapper;
    `ippo` / `ippo_typed` / `ippo_typed_lagrangian` take a multi-agent adapter
    (`GridMARLEnv`, `DistGridMARLEnv`, `MarketMARLEnv`; the Lagrangian one constrains
    every channel of `env.constraint_names()` with `config.cost_thresholds`). The
    reference's `td3`, `dqn` and `mappo` never get here: `TrainConfig` refuses them
    (`AlgoNotImplementedError`, a `NotImplementedError`).

    **Arguments:**

    - `env`: the bound wrapper or multi-agent adapter.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.

    **Returns:**

    The trainer.
    """
    from powerzoojax.rl.marl._multi_agent import MultiAgentEnvironment

    is_marl = isinstance(env, MultiAgentEnvironment)
    if is_marl and config.algo not in _MARL_ALGOS:
        raise TypeError(f"algo={config.algo!r} is single-agent; {env.name} is a multi-agent adapter: use ippo or ippo_typed")
    if not is_marl and config.algo in _MARL_ALGOS:
        raise TypeError(
            f"algo={config.algo!r} trains a multi-agent adapter (GridMARLEnv, DistGridMARLEnv, MarketMARLEnv), "
            f"got {type(env).__name__}"
        )
    if isinstance(env, Environment):
        raise TypeError(
            f"make_train takes a bound wrapper, got the bare env {env.name}: use bind(env, params) "
            "(or bind(env, params, safe=True) for ppo_lagrangian)"
        )
    algo = config.algo
    if algo == "ppo":
        return make_ppo_train(env, config, mesh=mesh)
    if algo == "sac":
        from powerzoojax.rl.algos._sac import make_sac_train

        return make_sac_train(env, config, mesh=mesh)
    if algo == "apg":
        from powerzoojax.rl.algos._apg import make_apg_train

        return make_apg_train(env, config, mesh=mesh)
    if algo in ("ippo", "ippo_typed", "ippo_typed_lagrangian"):
        from powerzoojax.rl.algos._ippo import make_ippo_train

        return make_ippo_train(env, config, mesh=mesh)
    if algo == "saute_ppo":
        inner = env.wrapped if isinstance(env, RewardWrapper) else env
        if not isinstance(inner, SauteWrapper):
            raise TypeError(
                "algo='saute_ppo' trains PPO on a SauteWrapper; wrap the env first, e.g. "
                "SauteWrapper(env, params, selected_names=..., cost_thresholds=..., unsafe_reward=...)"
            )
        return make_ppo_train(env, config, mesh=mesh)
    if algo == "ppo_lagrangian":
        return make_cmdp_train(env, config, mesh=mesh)
    raise ValueError(f"unknown algo {algo!r}")  # pragma: no cover - TrainConfig validates algo


def _as_saute(env: Any, config: TrainConfig) -> SauteWrapper:
    config = family_config(config, PPOConfig, "algo='saute_ppo'")
    if isinstance(env, SauteWrapper):
        return env
    if isinstance(env, SafeRLWrapper):
        names, thresholds = env.selected_constraint_names, env.cost_thresholds
    elif isinstance(env, LogWrapper):
        names, thresholds = None, None
    else:
        raise TypeError(f"algo='saute_ppo' needs a LogWrapper, SafeRLWrapper or SauteWrapper, got {type(env).__name__}")
    thresholds = config.resolved_cost_thresholds(len(names) if names is not None else len(env.constraint_names())) or thresholds
    return SauteWrapper(
        env.env,
        env.params,
        selected_names=names,
        cost_thresholds=thresholds,
        horizon=config.saute_horizon,
        unsafe_reward=config.saute_unsafe_reward,
        use_reward_shaping=config.saute_use_reward_shaping,
    )


def build_trainer(
    preset_or_env: str | Any, config: TrainConfig | None = None, reward_fn: Callable | None = None, seed: int = 42,
    *, mesh: Mesh | None = None, **overrides: Any,
) -> tuple[Any, str | None]:
    """The trainer `train` runs, and the preset name (None for an env): see [`train`][powerzoojax.rl.training.train]."""
    if isinstance(preset_or_env, str):
        from powerzoojax.rl.training._presets import get_preset

        preset = get_preset(preset_or_env)
        env = _preset_env(preset_or_env, preset.env_factory)
        config = preset.config if config is None else config
        reward_fn = preset.reward_fn if reward_fn is None else reward_fn
        preset_name = preset_or_env
    else:
        env = preset_or_env
        config = TrainConfig() if config is None else config
        preset_name = None
    assert config is not None
    check_knobs(overrides.get("algo", config.algo), overrides)
    config = config.replace(seed=seed, **overrides)
    from powerzoojax.rl.marl._multi_agent import MultiAgentEnvironment

    if isinstance(env, MultiAgentEnvironment) and reward_fn is not None:
        raise TypeError("train: reward_fn applies to single-agent envs only (RewardWrapper); the MARL adapters shape rewards themselves")
    if isinstance(env, Environment):
        env = bind(env, safe=config.algo == "ppo_lagrangian")
    if config.algo == "saute_ppo":
        env = _as_saute(env, config)
    if reward_fn is not None:
        env = RewardWrapper(env, reward_fn)
    return make_train(env, config, mesh=mesh), preset_name


def train(
    preset_or_env: str | Any,
    config: TrainConfig | None = None,
    reward_fn: Callable | None = None,
    seed: int = 42,
    *,
    output_dir: str | os.PathLike | None = None,
    progress: bool | None = None,
    resume_from: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    mesh: Mesh | None = None,
    **overrides: Any,
) -> TrainResult:
    """Train from a preset name or an env in one call.

    A preset name brings its env, config and reward function (each replaced by the
    arguments when given). A bare `Environment` is bound with its default params
    (`safe=True` for `ppo_lagrangian`). `algo="saute_ppo"` wraps the env in a
    `SauteWrapper` built from the `saute_*` fields; a `reward_fn` adds a `RewardWrapper`.

    **Arguments:**

    - `preset_or_env`: a preset name (see `list_presets`), an `Environment` or a bound
      wrapper.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig]; `None` takes the
      preset's (or the defaults).
    - `reward_fn`: reward function of a `RewardWrapper`, or `None`.
    - `seed`: seed of the run.
    - `output_dir`, `progress`, `resume_from` (a checkpoint or a run folder: its newest
      checkpoint), `checkpoint_every`: passed to the host driver
      [`run_training`][powerzoojax.rl.run_training] (metrics files, plot, checkpoints,
      status line, divergence and signal handling).
    - `mesh`: train data-parallel over its devices (see `make_train`); in a multi-process
      run every process calls `train` with the same arguments and process 0 writes the files.
    - `**overrides`: config fields, applied with `config.replace(seed=seed, **overrides)`;
      each must be a field of the family of the run's `algo` (a `TypeError` names the
      algorithms a stray knob configures).

    **Returns:**

    The [`TrainResult`][powerzoojax.rl.algos.TrainResult]. A preset whose env needs a
    distribution that is not installed raises `MissingDistributionError` (an
    `ImportError`) naming the extra to install, e.g. `preset 'gencos-case5-ippo-dev' needs
    pzj-market, which is not installed: pip install 'pzj-rl[market]' (or 'pzj-rl[all]')`.
    """
    from powerzoojax.rl.training._checkpoint import resolve_checkpoint

    trainer, preset_name = build_trainer(preset_or_env, config, reward_fn, seed, mesh=mesh, **overrides)
    return run_training(
        trainer,
        jr.PRNGKey(seed),
        output_dir=None if output_dir is None else os.fspath(output_dir),
        progress=progress,
        resume_from=None if resume_from is None else resolve_checkpoint(os.fspath(resume_from)),
        checkpoint_every=checkpoint_every,
        preset=preset_name,
    )


def make_act(result: TrainResult, env: Any) -> Callable[[Key, Array], Array]:
    """Deterministic `act(key, obs) -> action` of a trained policy on `env` (key unused).

    PPO-family and SAC results on single-agent wrappers; for IPPO use `make_ippo_act`.

    **Arguments:**

    - `result`: the [`TrainResult`][powerzoojax.rl.algos.TrainResult].
    - `env`: the bound wrapper it was trained on.

    **Returns:**

    `act(key, obs) -> action`.
    """
    if result.config.algo == "sac":
        from powerzoojax.rl.algos._sac import SACTrainer

        sac = SACTrainer(env, result.config)
        return lambda key, obs: sac.deterministic_action(result.params, obs)
    if result.config.algo == "apg":
        from powerzoojax.rl.algos._apg import APGTrainer

        trainer: PPOTrainer | APGTrainer = APGTrainer(env, result.config)
    else:
        trainer = PPOTrainer(env, result.config.replace(algo="ppo"))
    policy, stats = result.params, result.obs_stats

    def act(key: Key, obs: Array) -> Array:
        return trainer.deterministic_action(policy, stats, obs)

    return act


def random_act(env: Any) -> Callable[[Key, Array], Array]:
    """Uniform random actions from `env.action_space()`.

    **Arguments:**

    - `env`: a bound wrapper.

    **Returns:**

    `act(key, obs) -> action` (`obs` unused).
    """
    space = env.action_space()
    return lambda key, obs: space.sample(key)


def evaluate(env: Any, act: Callable[[Key, Array], Array], key: Key, n_episodes: int = 32) -> dict[str, np.ndarray]:
    """Run `n_episodes` full episodes from reset in parallel (through the rollout kernel).

    **Arguments:**

    - `env`: a bound wrapper.
    - `act`: `act(key, obs) -> action`.
    - `key`: PRNG key.
    - `n_episodes`: episodes.

    **Returns:**

    Per-episode arrays: `return` (sum of the wrapper's rewards), `env_return` (sum of
    `info["env_reward"]` when a reward-changing wrapper is present, else `return`),
    `cost_sum` (sum of `info["cost_sum"]`), `constraint_costs` `(n, k)` per-channel sums
    of the transitions' costs (`info["constraint_costs"]`) and `violation_steps` `(n, k)` steps with a positive
    cost per channel.
    """
    horizon = env.max_steps
    k_reset, k_roll = jr.split(key)

    def policy(k, obs, _):
        return act(k, obs), ()

    @jax.jit
    def run(k_reset, k_roll):
        obs, states = jax.vmap(env.reset)(jr.split(k_reset, n_episodes))

        def one(k, s, o):
            return rollout(transition_step(env), k, s, length=horizon, policy=policy, init_obs=o)

        _, _, (_, rewards, costs, _, info, _) = jax.vmap(one)(jr.split(k_roll, n_episodes), states, obs)
        env_rewards = info.get("env_reward", rewards)
        return {
            "return": jnp.sum(rewards, axis=1),
            "env_return": jnp.sum(env_rewards, axis=1),
            "cost_sum": jnp.sum(info["cost_sum"], axis=1),
            "constraint_costs": jnp.sum(costs, axis=1),
            "violation_steps": jnp.sum(costs > 0, axis=1),
        }

    return {k: np.asarray(v) for k, v in run(k_reset, k_roll).items()}
