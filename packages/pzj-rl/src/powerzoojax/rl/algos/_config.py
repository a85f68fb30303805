"""Training configs: frozen, hashable dataclasses, one class per algorithm family.

`TrainConfig` holds what every trainer reads (run size, optimiser, evaluation, logging)
and is the reference's way to build a config: `TrainConfig(algo=..., **fields)` returns
the family's subclass, `PPOConfig` (PPO, PPO-Lagrangian, Sauté PPO, the IPPO variants),
`SACConfig` or `APGConfig`, each holding only the knobs its trainers read, so a knob an
algorithm would ignore is refused rather than taken. `load_config` / `save_config` read
and write them as YAML (or take a dict).
"""

import dataclasses
import difflib
import math
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

# The algorithms that train here, and the families that share a config class.
IMPLEMENTED_ALGOS = ("ppo", "ppo_lagrangian", "saute_ppo", "sac", "apg", "ippo", "ippo_typed", "ippo_typed_lagrangian")
ON_POLICY_ALGOS = ("ppo", "ppo_lagrangian", "saute_ppo", "ippo", "ippo_typed", "ippo_typed_lagrangian")
OFF_POLICY_ALGOS = ("sac",)
# Names of the reference's config that no trainer here (nor the reference's) trains: a config
# naming one is refused when it is built, with the reason.
NOT_IMPLEMENTED_ALGOS = {
    "td3": "TD3 is not implemented; use 'sac' for off-policy continuous control",
    "dqn": "DQN is not implemented: the benchmark envs have continuous actions (use 'ppo' or 'sac')",
    "mappo": "MAPPO is not part of the RL layer (the reference raises too); use ippo or ippo_typed",
}
# Keywords of the reference's config that configure nothing here, with the value that asks
# for nothing (accepted) and why another value cannot be honoured (refused when given).
REFERENCE_ONLY_KEYWORDS: dict[str, tuple[Any, str]] = {
    "eval_episodes": (
        128,
        "the reference's trainer never read it; the evaluation size is eval_num_episodes (set that field)",
    ),
    "n_eval_envs": (
        0,
        "no trainer here runs the reference's extra greedy evaluation after every PPO-Lagrangian update; every "
        "trainer evaluates every eval_freq env steps over eval_num_episodes episodes (set those fields)",
    ),
    "wall_time_warmup_timesteps": (
        None,
        "the wall-time warm-up compiles the chunk program ahead of time instead of running warm-up steps "
        "(wall_time_warmup turns it on or off)",
    ),
}


# Fields of earlier versions of this config that a saved run folder may still hold: accepted
# at the value every run used, refused at any other.
_RETIRED_KEYS: dict[str, tuple[Any, str]] = {
    "minibatch_shuffle": ("blocks", "minibatches are always cut as blocks of time steps and envs"),
}


class AlgoNotImplementedError(NotImplementedError, ValueError):
    """A config names an algorithm of the reference that no trainer here implements
    (`td3`, `dqn`, `mappo`): a `NotImplementedError`, and a `ValueError` like every other
    refused config value."""


# Fields that may be given as a scalar or as one value per selected constraint.
_PER_CONSTRAINT = ("lambda_lr", "cost_scale")
_TUPLE_FIELDS = ("hidden_dims", "cost_thresholds", "lambda_lr", "cost_scale")
_ALIASES = {"lr": "learning_rate"}
# Metric sinks beyond metrics.csv / metrics.jsonl, and the progress displays.
LOGGERS = ("tensorboard", "wandb")
PROGRESS_BARS = ("line", "tqdm")
WANDB_MODES = ("offline", "online", "disabled")
# Fields that change only what the host shows and writes, never a trained number: a
# resumed run may change them, and a complete config file may leave them out.
HOST_ONLY_FIELDS = ("loggers", "wandb_project", "wandb_mode", "progress_bar", "keep_checkpoints")


class _ConfigMeta(type):
    """Builds a config: takes out the reference-only keywords (`REFERENCE_ONLY_KEYWORDS`),
    accepted at the value that asks for nothing and refused, naming the value and why, at any
    other; `TrainConfig(...)` itself builds the config of `algo`'s family
    (`PPOConfig`, `SACConfig` or `APGConfig`); a keyword that is no field of that family is a
    `TypeError` naming the algorithms it configures."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        for name, (inert, why) in REFERENCE_ONLY_KEYWORDS.items():
            if name in kwargs:
                value = kwargs.pop(name)
                if not _is_inert(value, inert):
                    raise ValueError(f"TrainConfig: {name}={value!r} is not supported: {why}")
        target = config_class(kwargs.get("algo", "ppo")) if cls is TrainConfig else cls
        own = _family_fields(target)
        foreign = [name for name in kwargs if name not in own]
        if foreign:
            raise TypeError(f"TrainConfig: {_not_fields(foreign, target)}")
        return type.__call__(target, *args, **kwargs)


def _is_inert(value: Any, inert: Any) -> bool:
    return value is None if inert is None else (value is not None and value == inert)


@dataclasses.dataclass(frozen=True)
class TrainConfig(metaclass=_ConfigMeta):
    """Training configuration: what every trainer takes, and the reference's way to build one
    (frozen: derive variants with `replace`).

    `TrainConfig(algo=..., **fields)` returns the config of the algorithm's family, a
    subclass holding these common fields and the family's own:
    [`PPOConfig`][powerzoojax.rl.algos.PPOConfig] (`ppo`, `ppo_lagrangian`, `saute_ppo`,
    `ippo`, `ippo_typed`, `ippo_typed_lagrangian`),
    [`SACConfig`][powerzoojax.rl.algos.SACConfig] (`sac`) or
    [`APGConfig`][powerzoojax.rl.algos.APGConfig] (`apg`). A field the family does not have
    is a `TypeError` naming the algorithms it configures, so no knob is taken and ignored.
    `replace(algo=...)` may switch family: the fields both families have are kept, the
    old family's own fields stay behind, and a change the new family has no field for is a
    `TypeError`, as in the constructor.

    **Arguments:**

    - `algo`: one of `IMPLEMENTED_ALGOS` (`"ppo"`, `"ppo_lagrangian"`, `"saute_ppo"`, `"sac"`,
      `"apg"`, `"ippo"`, `"ippo_typed"`, `"ippo_typed_lagrangian"`); the reference's
      `"td3"`, `"dqn"` and `"mappo"` are refused here (`AlgoNotImplementedError`, a
      `NotImplementedError` saying what to use instead).
    - `total_timesteps`: env steps of the run.
    - `num_envs`: parallel envs.
    - `seed`: seed of the run.
    - `learning_rate`: Adam step size.
    - `gamma`: discount.
    - `max_grad_norm`: global-norm gradient clipping (every trainer, APG included).
    - `eval_freq`: env steps between evaluations (and one after the last update); 0 turns
      evaluation off.
    - `n_steps`: steps per env per update (for `"apg"` the truncation length of the
      backpropagated window).
    - `n_checkpoints`: policy snapshots kept in memory in `TrainResult.checkpoints`, at
      evenly spaced updates (1: the final policy only, so the result has none beside
      `params`); not files on disk (see `keep_checkpoints`).
    - `hidden_dims`: hidden widths of the networks.
    - `normalize_observations`: running observation normalisation.
    - `eval_num_episodes`: parallel episodes per evaluation.
    - `record_eval_wall_time`: add `eval_wall_time_s` (see
      [`run_training`][powerzoojax.rl.run_training]).
    - `wall_time_warmup`: compile the chunk program ahead of time when timing.
    - `loggers`: extra metric sinks besides `metrics.csv` / `metrics.jsonl` (host side
      only, see `HOST_ONLY_FIELDS`; they need an output folder): `"tensorboard"` (event
      files in `<output>/tensorboard`, `pip install 'pzj-rl[tensorboard]'`) and `"wandb"`
      (Weights & Biases, files under `<output>/wandb`, `pip install 'pzj-rl[wandb]'`).
    - `wandb_project`, `wandb_mode`: the W&B project and mode (offline by default).
    - `progress_bar`: `"line"` (the built-in status line) or `"tqdm"` (tqdm's terminal or
      notebook bar, `pip install 'pzj-rl[progress]'`).
    - `keep_checkpoints`: checkpoint files a run folder keeps: the newest
      `keep_checkpoints` plus the one with the best evaluation return (host side only).

    The reference's keywords `eval_episodes`, `n_eval_envs` and `wall_time_warmup_timesteps`
    configure nothing here: each is accepted at its default (128, 0, `None`) and refused with
    a `ValueError` naming the value at any other (see `REFERENCE_ONLY_KEYWORDS`). Config files
    and the command line read `eval_episodes` as `eval_num_episodes`.
    """

    # The algorithms a family's config trains (set by each family).
    ALGOS: ClassVar[tuple[str, ...]] = ()

    # common
    algo: str = "ppo"
    total_timesteps: int = 100_000
    num_envs: int = 64
    seed: int = 42
    # optimiser
    learning_rate: float = 3e-4
    gamma: float = 0.99
    max_grad_norm: float = 0.5
    eval_freq: int = 10_000
    # rollout
    n_steps: int = 128
    n_checkpoints: int = 1
    # network
    hidden_dims: tuple[int, ...] = (64, 64)
    # scaling
    normalize_observations: bool = False
    # metrics
    eval_num_episodes: int = 128
    record_eval_wall_time: bool = False
    wall_time_warmup: bool = True
    # logging (host side)
    loggers: tuple[str, ...] = ()
    wandb_project: str = "powerzoojax"
    wandb_mode: str = "offline"
    progress_bar: str = "line"
    keep_checkpoints: int = 3

    def __post_init__(self):
        if self.algo not in IMPLEMENTED_ALGOS:
            config_class(self.algo)  # raises, naming what to use instead
        if self.algo not in self.ALGOS:
            raise ValueError(
                f"TrainConfig: {type(self).__name__} configures {list(self.ALGOS)}, not algo={self.algo!r} "
                f"(TrainConfig(algo={self.algo!r}, ...) builds {config_class(self.algo).__name__})"
            )
        for name in ("total_timesteps", "num_envs", "n_steps", "n_checkpoints", "keep_checkpoints"):
            _check_positive_int(name, getattr(self, name))
        for name in ("eval_num_episodes", "eval_freq"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"TrainConfig: {name} must be a non-negative integer, got {value!r}")
        if not self.hidden_dims or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in self.hidden_dims):
            raise ValueError(f"TrainConfig: hidden_dims must be a non-empty tuple of positive ints, got {self.hidden_dims!r}")
        _check_unit_interval("gamma", self.gamma)
        for name in ("learning_rate", "max_grad_norm"):
            _check_positive_number(name, getattr(self, name))
        unknown = [name for name in self.loggers if name not in LOGGERS]
        if unknown or len(set(self.loggers)) != len(self.loggers):
            raise ValueError(f"TrainConfig: loggers must be distinct names from {list(LOGGERS)}, got {list(self.loggers)!r}")
        if self.progress_bar not in PROGRESS_BARS:
            raise ValueError(f"TrainConfig: progress_bar must be one of {list(PROGRESS_BARS)}, got {self.progress_bar!r}")
        if self.wandb_mode not in WANDB_MODES:
            raise ValueError(f"TrainConfig: wandb_mode must be one of {list(WANDB_MODES)}, got {self.wandb_mode!r}")
        if not self.wandb_project:
            raise ValueError("TrainConfig: wandb_project must be a non-empty name")

    # -- derived values ----------------------------------------------------------------
    @property
    def steps_per_update(self) -> int:
        """Env steps per update, `num_envs · n_steps`."""
        return self.num_envs * self.n_steps

    @property
    def n_updates(self) -> int:
        """Updates in a run: `max(1, total_timesteps // (num_envs · n_steps))`."""
        return max(1, self.total_timesteps // self.steps_per_update)

    def replace(self, **changes: Any) -> "TrainConfig":
        """A copy with `changes` applied (values coerced to the field types, e.g. 1 → 1.0).

        A new `algo` of another family builds that family's config: the fields both
        families have carry over and this family's own fields stay behind. A change the
        new family has no field for is refused, as `TrainConfig(...)` refuses it: a knob
        given with the switch would otherwise configure nothing.

        **Arguments:**

        - `**changes`: field values.

        **Returns:**

        A new config of `algo`'s family (a [`TrainConfig`][powerzoojax.rl.algos.TrainConfig]).
        """
        changes = _coerce(changes)
        target = config_class(changes.get("algo", self.algo))
        if target is type(self):
            return dataclasses.replace(self, **changes)
        mine, theirs = _family_fields(type(self)), _family_fields(target)
        foreign = [name for name in changes if name not in theirs]
        if foreign:
            raise TypeError(f"TrainConfig.replace: {_not_fields(foreign, target)}")
        carried = {k: getattr(self, k) for k in theirs if k in mine and k not in changes}
        return target(**carried, **changes)

    def to_rejax_kwargs(self) -> dict[str, Any]:
        """The fields under the keyword names of the reference's backend (Rejax).

        `n_steps → num_steps`, `n_epochs → num_epochs`, `n_minibatches → num_minibatches`,
        `hidden_dims → hidden_layer_sizes`; for `sac` `num_epochs` is `sac_num_epochs`
        (default `n_steps`), with `target_entropy_ratio` when set. Only a name map: the
        trainers here take the config itself.

        **Returns:**

        A dict of keyword arguments.
        """
        return {
            "total_timesteps": self.total_timesteps, "num_envs": self.num_envs, "learning_rate": self.learning_rate,
            "gamma": self.gamma, "max_grad_norm": self.max_grad_norm, "eval_freq": self.eval_freq,
            "normalize_observations": self.normalize_observations, "hidden_layer_sizes": tuple(self.hidden_dims),
        }

    def _asdict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


@dataclasses.dataclass(frozen=True)
class PPOConfig(TrainConfig):
    """The on-policy family's config: PPO, PPO-Lagrangian, Sauté PPO and the IPPO
    variants (the common fields are [`TrainConfig`][powerzoojax.rl.algos.TrainConfig]'s).

    **Arguments:**

    - `n_epochs`: passes over each batch.
    - `n_minibatches`: minibatches per epoch.
    - `clip_eps`: PPO clip range.
    - `ent_coef`, `vf_coef`: weights of the entropy bonus and the value loss.
    - `gae_lambda`: GAE λ.
    - `log_std_init`: initial Gaussian log standard deviation.
    - `cost_threshold`, `cost_thresholds`: per-episode cost budgets (PPO-Lagrangian);
      `()` and 0 use the wrapper's.
    - `lambda_lr`: dual step size, one number or one per constraint.
    - `cost_gamma`: discount of the cost returns.
    - `cost_scale`: divisor of costs and thresholds, one number or one per constraint.
    - `log_lambda_max`: bound of `|log λ|`.
    - `saute_horizon`, `saute_unsafe_reward`, `saute_use_reward_shaping`: the
      [`SauteWrapper`][powerzoojax.rl.wrappers.SauteWrapper] options of `"saute_ppo"`.
    - `shared_torso`: one tanh torso for actor and critic heads.
    - `continuous_action_dist`: `"gaussian"` or `"beta"`.
    - `normalize_rewards`: scale rewards by the running std of the discounted return.
    """

    ALGOS: ClassVar[tuple[str, ...]] = ON_POLICY_ALGOS

    # PPO
    n_epochs: int = 4
    n_minibatches: int = 4
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    gae_lambda: float = 0.95
    log_std_init: float = -0.5
    # CMDP (PPO-Lagrangian)
    cost_threshold: float = 0.0
    cost_thresholds: tuple[float, ...] = ()
    lambda_lr: float | tuple[float, ...] = 5e-3
    cost_gamma: float = 1.0
    cost_scale: float | tuple[float, ...] = 1.0
    log_lambda_max: float = 5.0
    # Sauté
    saute_horizon: int | None = None
    saute_unsafe_reward: float = 0.0
    saute_use_reward_shaping: bool = True
    # network
    shared_torso: bool = True
    continuous_action_dist: str = "gaussian"
    # scaling
    normalize_rewards: bool = False

    def __post_init__(self):
        super().__post_init__()
        for name in ("n_epochs", "n_minibatches"):
            _check_positive_int(name, getattr(self, name))
        for name in ("gae_lambda", "cost_gamma"):
            _check_unit_interval(name, getattr(self, name))
        for name in ("clip_eps", "log_lambda_max"):
            _check_positive_number(name, getattr(self, name))
        if self.continuous_action_dist not in ("gaussian", "beta"):
            raise ValueError(
                f"TrainConfig: continuous_action_dist must be 'gaussian' or 'beta', got {self.continuous_action_dist!r}"
            )
        for name in _PER_CONSTRAINT:
            values = getattr(self, name)
            values = values if isinstance(values, tuple) else (values,)
            if not values or any(not math.isfinite(v) or v <= 0 for v in values):
                raise ValueError(f"TrainConfig: {name} must be positive (a number or one per constraint), got {getattr(self, name)!r}")
        if any(not math.isfinite(t) or t < 0 for t in self.cost_thresholds):
            raise ValueError(f"TrainConfig: cost_thresholds must be finite and >= 0, got {self.cost_thresholds!r}")

    def to_rejax_kwargs(self) -> dict[str, Any]:
        return {
            **super().to_rejax_kwargs(),
            "num_steps": self.n_steps, "num_epochs": self.n_epochs, "num_minibatches": self.n_minibatches,
            "clip_eps": self.clip_eps, "ent_coef": self.ent_coef, "vf_coef": self.vf_coef,
            "gae_lambda": self.gae_lambda, "normalize_rewards": self.normalize_rewards,
        }

    def _resolve(self, name: str, values: Any, k: int) -> tuple[float, ...]:
        values = values if isinstance(values, tuple) else (values,) * k
        if len(values) == 1 and k != 1:
            values = values * k
        if len(values) != k:
            raise ValueError(f"TrainConfig: {name} has {len(values)} entries, expected 1 or {k} (one per constraint)")
        return tuple(float(v) for v in values)

    def resolved_cost_thresholds(self, k: int) -> tuple[float, ...] | None:
        """Thresholds from the config broadcast to `k`.

        **Arguments:**

        - `k`: number of selected constraints.

        **Returns:**

        A tuple of `k` floats, or `None` when the config sets none (`cost_thresholds=()` and
        `cost_threshold == 0`: use the wrapper's).
        """
        if self.cost_thresholds:
            return self._resolve("cost_thresholds", self.cost_thresholds, k)
        if self.cost_threshold != 0.0:
            return (float(self.cost_threshold),) * k
        return None

    def resolved_lambda_lr(self, k: int) -> tuple[float, ...]:
        """`lambda_lr` broadcast to `k` constraints.

        **Arguments:**

        - `k`: number of selected constraints.

        **Returns:**

        A tuple of `k` floats. Raises `ValueError` for a tuple of another length.
        """
        return self._resolve("lambda_lr", self.lambda_lr, k)

    def resolved_cost_scale(self, k: int) -> tuple[float, ...]:
        """`cost_scale` broadcast to `k` constraints.

        **Arguments:**

        - `k`: number of selected constraints.

        **Returns:**

        A tuple of `k` floats. Raises `ValueError` for a tuple of another length.
        """
        return self._resolve("cost_scale", self.cost_scale, k)


@dataclasses.dataclass(frozen=True)
class SACConfig(TrainConfig):
    """The off-policy family's config: SAC (the common fields are
    [`TrainConfig`][powerzoojax.rl.algos.TrainConfig]'s).

    **Arguments:**

    - `normalize_rewards`: scale sampled rewards by the running std of the rewards seen.
    - `sac_num_epochs`: SAC gradient steps per update; `None` takes `n_steps`.
    - `sac_target_entropy_ratio`: SAC target entropy as a fraction of `-action_dim`.
    """

    ALGOS: ClassVar[tuple[str, ...]] = OFF_POLICY_ALGOS

    algo: str = "sac"
    normalize_rewards: bool = False
    sac_num_epochs: int | None = None
    sac_target_entropy_ratio: float | None = None

    def to_rejax_kwargs(self) -> dict[str, Any]:
        kw = {**super().to_rejax_kwargs(), "num_epochs": self.sac_num_epochs if self.sac_num_epochs is not None else self.n_steps}
        if self.sac_target_entropy_ratio is not None:
            kw["target_entropy_ratio"] = self.sac_target_entropy_ratio
        return kw


@dataclasses.dataclass(frozen=True)
class APGConfig(TrainConfig):
    """The analytic-policy-gradient config (the common fields are
    [`TrainConfig`][powerzoojax.rl.algos.TrainConfig]'s; `n_steps` is the truncation length
    of the backpropagated window).

    **Arguments:**

    - `log_std_init`: initial log standard deviation of the network's Gaussian head (APG
      trains the mean only; the head is kept so the result loads like PPO's).
    - `shared_torso`: one tanh torso for actor and critic heads.
    - `continuous_action_dist`: `"gaussian"`, the only one: APG trains a deterministic
      squashed mean action.
    """

    ALGOS: ClassVar[tuple[str, ...]] = ("apg",)

    algo: str = "apg"
    log_std_init: float = -0.5
    shared_torso: bool = True
    continuous_action_dist: str = "gaussian"

    def __post_init__(self):
        super().__post_init__()
        if self.continuous_action_dist != "gaussian":
            raise ValueError(
                f"TrainConfig: APG trains a deterministic squashed mean action; continuous_action_dist must be "
                f"'gaussian', got {self.continuous_action_dist!r}"
            )

    def to_rejax_kwargs(self) -> dict[str, Any]:
        return {**super().to_rejax_kwargs(), "num_steps": self.n_steps}


CONFIG_CLASSES: tuple[type[TrainConfig], ...] = (PPOConfig, SACConfig, APGConfig)
_Family = TypeVar("_Family", bound=TrainConfig)


def family_config(config: TrainConfig, cls: type[_Family], trainer: str) -> _Family:
    """`config` as the family config `cls` a trainer reads; another family's config is a
    `TypeError` saying which `algo` builds the right one."""
    if not isinstance(config, cls):
        raise TypeError(
            f"{trainer} takes a {cls.__name__} (TrainConfig(algo=...) with algo one of {list(cls.ALGOS)}), got "
            f"{type(config).__name__} (algo={getattr(config, 'algo', None)!r})"
        )
    return config


def config_class(algo: str) -> type[TrainConfig]:
    """The config class of `algo`'s family; an algorithm nothing here trains is an
    `AlgoNotImplementedError` (the reference's `td3`, `dqn`, `mappo`) or a `ValueError`."""
    if algo in NOT_IMPLEMENTED_ALGOS:
        raise AlgoNotImplementedError(
            f"TrainConfig: algo {algo!r} is not implemented; algorithms: {list(IMPLEMENTED_ALGOS)} "
            f"({NOT_IMPLEMENTED_ALGOS[algo]})"
        )
    for cls in CONFIG_CLASSES:
        if algo in cls.ALGOS:
            return cls
    raise ValueError(f"TrainConfig: algo must be one of {list(IMPLEMENTED_ALGOS)}, got {algo!r}")


def check_knobs(algo: str, names: Any) -> None:
    """Refuse (`TypeError`, naming the algorithms each configures) knobs given for `algo` that
    its family's config has no field for: what `train(..., **overrides)` and the command line
    check, where every knob is the caller's request, before `replace` leaves another family's
    fields behind."""
    target = config_class(algo)
    own = _family_fields(target)
    foreign = [name for name in names if name not in own and name not in REFERENCE_ONLY_KEYWORDS]
    if foreign:
        raise TypeError(f"TrainConfig: {_not_fields(foreign, target)}")


def _family_fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def config_fields() -> dict[str, dataclasses.Field]:
    """Every field of every family, common ones first, each once (what the command line offers)."""
    out: dict[str, dataclasses.Field] = {}
    for cls in (TrainConfig, *CONFIG_CLASSES):
        for f in dataclasses.fields(cls):
            out.setdefault(f.name, f)
    return out


def _not_fields(names: list[str], cls: type) -> str:
    """Why `names` cannot go into `cls`: the algorithms each configures, or that none does."""
    parts = []
    for name in names:
        users = [a for c in CONFIG_CLASSES if name in _family_fields(c) for a in c.ALGOS]
        parts.append(f"{name} (configures {', '.join(users)})" if users else f"{name} (no such field)")
    algos = ", ".join(getattr(cls, "ALGOS", ()))
    return f"{cls.__name__} (algo {algos}) has no field(s) {', '.join(parts)}"


def _check_positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"TrainConfig: {name} must be a positive integer, got {value!r}")


def _check_unit_interval(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"TrainConfig: {name} must be in [0, 1], got {value!r}")


def _check_positive_number(name: str, value: float) -> None:
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"TrainConfig: {name} must be a positive number, got {value!r}")


_FIELDS = config_fields()


def _coerce_value(name: str, value: Any) -> Any:
    default = _FIELDS[name].default
    if name == "loggers":
        # A YAML list, a tuple, or one comma-separated string ("tensorboard,wandb").
        items = value.split(",") if isinstance(value, str) else value
        return tuple(str(v).strip() for v in items if str(v).strip()) if isinstance(items, (list, tuple)) else value
    if name in _TUPLE_FIELDS and isinstance(value, (list, tuple)):
        cast = int if name == "hidden_dims" else float
        return tuple(cast(v) for v in value)
    if value is None:
        return None
    if isinstance(default, bool) or name in ("saute_use_reward_shaping",):
        if isinstance(value, str):
            low = value.strip().lower()
            if low in ("true", "1", "yes", "on"):
                return True
            if low in ("false", "0", "no", "off"):
                return False
            raise ValueError(f"TrainConfig: {name} must be a boolean, got {value!r}")
        return bool(value)
    if isinstance(default, float) and not isinstance(value, bool) and isinstance(value, (int, float)):
        return float(value)
    if name in ("lambda_lr", "cost_scale") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(default, int) and isinstance(value, float) and value.is_integer():
        return int(value)
    if name in ("saute_horizon", "sac_num_epochs") and isinstance(value, float) and value.is_integer():
        return int(value)
    if name in ("sac_target_entropy_ratio",) and isinstance(value, int):
        return float(value)
    return value


def _coerce(changes: Mapping[str, Any]) -> dict[str, Any]:
    unknown = [k for k in changes if k not in _FIELDS and k not in REFERENCE_ONLY_KEYWORDS]
    if unknown:
        raise TypeError(f"TrainConfig has no field(s) {unknown}; fields are {sorted(_FIELDS)}")
    # The reference-only keywords go on as given: building the config accepts or refuses them.
    return {k: v if k in REFERENCE_ONLY_KEYWORDS else _coerce_value(k, v) for k, v in changes.items()}


def saved_fields(saved: Mapping[str, Any]) -> dict[str, Any]:
    """A config dict saved by an earlier version (a checkpoint's sidecar) without the keys
    that configure nothing now while they hold the value that asked for nothing: the
    reference-only keywords and retired fields, and the fields of the other algorithm
    families (an earlier config held every field), so it compares with `_asdict()` of
    today's config."""
    out = dict(saved)
    for name, (inert, _) in {**REFERENCE_ONLY_KEYWORDS, **_RETIRED_KEYS}.items():
        if name in out and _is_inert(out[name], inert):
            del out[name]
    try:
        own = _family_fields(config_class(out.get("algo", "ppo")))
    except (TypeError, ValueError):
        return out
    for name in [k for k in out if k not in own and k in _FIELDS]:
        try:
            value = _coerce_value(name, out[name])
        except (TypeError, ValueError):
            continue
        if _is_inert(value, _FIELDS[name].default):
            del out[name]
    return out


class ConfigFileError(ValueError):
    """A config file that cannot be read as a complete, valid `TrainConfig`."""


def _read_yaml(path: str | os.PathLike) -> dict[str, Any]:
    try:
        import yaml
    except ImportError as err:  # pragma: no cover - pyyaml is a dependency of pzj-rl
        raise ImportError("load_config needs PyYAML: pip install pyyaml") from err
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise ConfigFileError(f"config file {os.fspath(path)} does not exist") from None
    except OSError as err:
        raise ConfigFileError(f"config file {os.fspath(path)} cannot be read ({err.strerror or type(err).__name__})") from None
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise ConfigFileError(f"config file {os.fspath(path)} is not valid YAML{line}: {getattr(err, 'problem', err)}") from None
    data = {} if data is None else data
    if not isinstance(data, Mapping):
        raise ConfigFileError(f"config file {os.fspath(path)} must hold a YAML mapping of config fields, got {type(data).__name__}")
    return dict(data)


def load_config(
    source: str | os.PathLike | Mapping[str, Any], config_cls: type = TrainConfig, *, complete: bool = False,
    base: TrainConfig | None = None,
) -> TrainConfig:
    """A config from a YAML file path or a dict.

    Lists become tuples, numbers are coerced to the field types, `lr` is read as
    `learning_rate`; in a file, `eval_episodes` is read as `eval_num_episodes` (the
    field that counts) unless the file also gives `eval_num_episodes`. Unknown keys are
    dropped with a `UserWarning` naming them (an error with `base` or `complete`). The
    reference's keys that configure nothing here (`REFERENCE_ONLY_KEYWORDS`) and
    `minibatch_shuffle` (which an older run folder's file may hold) are dropped at the value
    that asks for nothing and a `ConfigFileError` naming the value at any other.

    **Arguments:**

    - `source`: a YAML file path or a mapping.
    - `config_cls`: the config class to build.
    - `complete`: every field must be present (bar the logging fields of
      `HOST_ONLY_FIELDS`) and no key may be unknown, so a file cut short or mistyped is a
      `ConfigFileError` naming the file and the missing or bad keys.
    - `base`: the config the source overrides (what the command line passes: the preset's):
      keys not given keep `base`'s values, and an unknown key is a `ConfigFileError`
      naming it.

    Values that do not fit their field are reported the same way in every mode.

    **Returns:**

    The config.
    """
    where = "config" if isinstance(source, Mapping) else f"config file {os.fspath(source)}"
    data = dict(source) if isinstance(source, Mapping) else _read_yaml(source)
    if not isinstance(source, Mapping) and "eval_episodes" in data:
        alias = data.pop("eval_episodes")
        data.setdefault("eval_num_episodes", alias)
    data = {_ALIASES.get(k, k): v for k, v in data.items()}
    # Keys that configure nothing here (the reference's, and those an older file may hold):
    # dropped at the value that asks for nothing, refused at any other.
    for name, (inert, why) in {**REFERENCE_ONLY_KEYWORDS, **_RETIRED_KEYS}.items():
        if name in data:
            value = data.pop(name)
            if not _is_inert(value, inert):
                raise ConfigFileError(f"{where}: {name}={value!r} is not supported: {why}")
    algo = data.get("algo", base.algo if base is not None else getattr(config_cls, "algo", "ppo"))
    if config_cls is TrainConfig:
        try:
            target = config_class(algo)
        except (TypeError, ValueError) as err:
            raise ConfigFileError(f"{where} has bad value(s): algo: {err}") from None
    else:
        target = config_cls
    fields = _family_fields(target)
    known = list(fields)
    # An earlier version's file holds the other families' fields too: at their defaults they
    # ask for nothing.
    data = {k: v for k, v in saved_fields({**data, "algo": algo}).items() if k != "algo" or "algo" in data}
    unknown = sorted(str(k) for k in data if k not in known)
    if complete:
        missing = [k for k in known if k not in data and k not in HOST_ONLY_FIELDS]
        if missing or unknown:
            parts = ([f"missing key(s) {missing}"] if missing else []) + ([f"unknown key(s) {unknown}"] if unknown else [])
            raise ConfigFileError(f"{where} is incomplete or malformed: {'; '.join(parts)}")
    elif unknown and base is not None:
        close = {k: difflib.get_close_matches(k, known, n=1) for k in unknown}
        hints = "".join(f" ({k!r}: did you mean {m[0]!r}?)" for k, m in close.items() if m)
        other = [k for k in unknown if k in _FIELDS]
        why = f"; {_not_fields(other, target)}" if other else ""
        raise ConfigFileError(f"{where}: unknown key(s) {unknown}{hints}; keys are {target.__name__}'s fields{why}")
    elif unknown:
        warnings.warn(f"load_config: ignoring unknown config key(s) {unknown}", UserWarning, stacklevel=2)
    values = {k: v for k, v in data.items() if k in known}
    if isinstance(source, Mapping) and base is None:
        return target(**_coerce(values))
    bad = []
    for k, v in values.items():
        try:
            target(**_coerce({"algo": algo, k: v}))
        except Exception as err:  # noqa: BLE001 - a type checker's error is as much a bad value as ours
            own = isinstance(err, ValueError) and str(err).startswith("TrainConfig:")
            expected = getattr(fields[k].type, "__name__", None) or str(fields[k].type)
            bad.append(f"{k}: {err}" if own else f"{k}: expected {expected}, got {v!r}")
    if bad:
        raise ConfigFileError(f"{where} has bad value(s): " + "; ".join(bad))
    try:
        return base.replace(**values) if base is not None else target(**_coerce(values))
    except (TypeError, ValueError) as err:
        raise ConfigFileError(f"{where}: {err}") from None


def field_docs() -> dict[str, str]:
    """One line per config field, from the argument lists of the docstrings of `TrainConfig`
    and the family classes (what `--help` and the comments of `config_yaml` show)."""
    cached = getattr(field_docs, "_cache", None)
    if cached is not None:
        return cached
    out: dict[str, str] = {}
    for cls in (TrainConfig, *CONFIG_CLASSES):
        doc = cls.__doc__ or ""
        bullets = re.findall(r"^    - (`[^:]+`): (.*?)(?=^    - `|^    \S|\Z)", doc, flags=re.MULTILINE | re.DOTALL)
        for names, text in bullets:
            text = " ".join(text.split())
            text = re.sub(r"\[`?([^\]`]+)`?\]\[[^\]]+\]", r"\1", text).replace("`", "")
            for name in re.findall(r"`(\w+)`", names):
                out.setdefault(name, text)
    field_docs._cache = out  # pyright: ignore[reportFunctionMemberAccess]
    return out


def config_yaml(config: TrainConfig) -> str:
    """`config` as YAML text: one `key: value` line per field in declaration order, each
    with a comment saying what the field does."""
    import yaml

    docs = field_docs()
    lines = []
    for key, value in config._asdict().items():
        text = yaml.safe_dump({key: value}, default_flow_style=True, width=1 << 16).strip()
        text = text[1:-1] if text.startswith("{") and text.endswith("}") else text
        doc = docs.get(key, "")
        lines.append(f"{text}  # {doc}" if doc else text)
    return "\n".join(lines) + "\n"


def save_config(config: TrainConfig, path: str | os.PathLike) -> None:
    """Write `config` as YAML (fields in declaration order).

    **Arguments:**

    - `config`: the config.
    - `path`: the file to write.
    """
    with open(path, "w") as f:
        f.write(config_yaml(config))
