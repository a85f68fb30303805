"""`TrainResult`: what a training run returns (a pytree, so runs can be vmapped over seeds)."""

import io
import json
import math
import os
import warnings
from typing import Any

import equinox as eqx
import numpy as np
from jaxtyping import Array, PyTree
from powerzoojax.rl.algos._config import TrainConfig

EVAL_SOURCE = "deterministic evaluation"
TRAINING_SOURCE = "training estimate"
# Metrics that are measured on every update: NaN there is a numerical failure, not a gap.
_HEALTH_METRICS = ("loss", "actor_loss", "critic_loss", "grad_norm")


class TrainResult(eqx.Module):
    """Policy, per-update metrics and the config of one run.

    A run vmapped over seeds returns one `TrainResult` whose arrays have a leading seed
    axis.

    **Arguments:**

    - `params`: the trained policy (an `ActorCritic`, or a dict of them).
    - `metrics`: metric name → array with one entry per update (NaN where a metric was
      not measured, e.g. between evaluations).
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig] (static).
    - `env_name`: name of the env or preset (static).
    - `obs_stats`: the running observation statistics the policy expects its inputs
      normalised with (`None` when `normalize_observations` is off).
    - `checkpoints`: `((env_steps, params), ...)` when the run kept any.
    - `cost_units`: each reported cost channel with its unit (set by the runner; static).
    """

    params: PyTree
    metrics: dict[str, Array | np.ndarray]
    config: TrainConfig = eqx.field(static=True)
    env_name: str = eqx.field(static=True, default="")
    obs_stats: PyTree = None
    checkpoints: PyTree = None
    cost_units: tuple[tuple[str, str], ...] = eqx.field(static=True, default=())

    def with_run_info(self, *, env_name: str | None = None, cost_units: dict[str, str] | None = None) -> "TrainResult":
        """A copy naming the env (e.g. the preset) and the units of the cost channels.

        **Arguments:**

        - `env_name`: the name; `None` keeps it.
        - `cost_units`: `{channel: unit}`; `None` keeps them.

        **Returns:**

        A new [`TrainResult`][powerzoojax.rl.algos.TrainResult].
        """
        return TrainResult(
            params=self.params, metrics=self.metrics, config=self.config,
            env_name=self.env_name if env_name is None else env_name, obs_stats=self.obs_stats,
            checkpoints=self.checkpoints,
            cost_units=self.cost_units if cost_units is None else tuple(cost_units.items()),
        )

    # -- reading the metrics -------------------------------------------------------------
    def _column(self, name: str) -> np.ndarray | None:
        """`name` per update, averaged over any leading (seed) axes."""
        if name not in self.metrics:
            return None
        values = np.asarray(self.metrics[name], np.float64)
        if values.ndim > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns between evaluations
                values = np.nanmean(values.reshape(-1, values.shape[-1]), axis=0)
        return values

    def _at(self, name: str, index: int) -> float | None:
        col = self._column(name)
        if col is None or not col.size:
            return None
        value = float(col[index])
        return value if math.isfinite(value) else None

    def _evaluated(self) -> bool:
        return self.config.eval_freq > 0 and self.config.eval_num_episodes > 0 and "eval_returns" in self.metrics

    def _diverged(self) -> bool:
        for name in _HEALTH_METRICS:
            col = self._column(name)
            if col is not None and col.size and not np.all(np.isfinite(col)):
                return True
        return False

    def _figures(self, index: int, *, initial: bool) -> dict[str, Any]:
        """Reward and cost from one source at one update: the deterministic evaluation at
        that update when the run evaluates, else the training episodes' estimate."""
        channels = [name for name, _ in self.cost_units] or sorted(
            k[len("eval_cost_"):] for k in self.metrics if k.startswith("eval_cost_") and k != "eval_cost_per_step"
        )
        if self._evaluated():
            n = self.config.eval_num_episodes
            return {
                "source": f"{EVAL_SOURCE} ({n} episodes, mean action, {'untrained' if initial else 'final'} policy)",
                "reward": self._at("eval_returns", index),
                "cost": self._at("eval_total_cost", index),
                "costs": {c: self._at(f"eval_cost_{c}", index) for c in channels if f"eval_cost_{c}" in self.metrics},
                "env_steps": 0 if initial else self._at("env_steps", index),
            }
        col = self._column("episode_return")
        finite = np.flatnonzero(np.isfinite(col)) if col is not None else np.asarray([], int)
        row = None if not finite.size else int(finite[0] if initial else finite[-1])
        cost_key = next((k for k in ("episode_cost_est_total", "episode_cost") if k in self.metrics), None)
        per_channel = {c: f"episode_cost_est_{c}" for c in channels if f"episode_cost_est_{c}" in self.metrics}
        return {
            "source": f"{TRAINING_SOURCE} (stochastic policy, episodes that ended during update "
                      f"{'?' if row is None else row + 1})",
            "reward": None if row is None else self._at("episode_return", row),
            "cost": None if row is None or cost_key is None else self._at(cost_key, row),
            "costs": {c: (None if row is None else self._at(k, row)) for c, k in per_channel.items()},
            "env_steps": None if row is None else self._at("env_steps", row),
        }

    @property
    def summary(self) -> dict[str, Any]:
        """Headline numbers, each with its source.

        `final_reward` and `final_cost` come from one and the same measurement, named
        in `final_source`: the deterministic evaluation after the last update when the
        run evaluates, else the training episodes that ended last (`final_env_steps`
        says when). `initial_*` likewise for the untrained policy. `final_costs`:
        that measurement per cost channel, with units when known. A run whose loss went
        non-finite has `status="diverged"` and no final figures (never an older value
        shown as final).
        """
        final, initial = self._figures(-1, initial=False), self._figures(0, initial=True)
        units = dict(self.cost_units)
        diverged = self._diverged()
        out = {
            "env": self.env_name,
            "algo": self.config.algo,
            "status": "diverged" if diverged else "ok",
            "total_timesteps": self.config.total_timesteps,
            "env_steps": int(self._at("env_steps", -1) or 0) if "env_steps" in self.metrics else 0,
            "seed": self.config.seed,
            "final_reward": None if diverged else final["reward"],
            "final_cost": None if diverged else final["cost"],
            "final_source": final["source"],
            "final_env_steps": None if diverged else final["env_steps"],
            "final_costs": {
                c: {"value": None if diverged else v, "unit": units.get(c, "env units")} for c, v in final["costs"].items()
            },
            "initial_reward": initial["reward"],
            "initial_cost": initial["cost"],
            "initial_source": initial["source"],
            # Only the on-policy family has budgets; the others report the reference's defaults.
            "cost_threshold": getattr(self.config, "cost_threshold", 0.0),
            "cost_thresholds": list(getattr(self.config, "cost_thresholds", ())),
        }
        return out

    # -- files -------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, *, preset: str | None = None, cost_units: dict[str, str] | None = None) -> None:
        """Write the run as JSON and its weights next to it; both files are replaced atomically.

        The JSON holds `{"summary", "config", "weights", ...}`; the weights (`params` and
        `obs_stats`, `eqx.tree_serialise_leaves`) go to `<stem>.eqx`, and `weights_sha256` is
        their checksum.

        **Arguments:**

        - `path`: the JSON file.
        - `preset`: name of the preset the run used.
        - `cost_units`: `{channel: unit}` of the reported costs.
        """
        from powerzoojax.rl.algos._files import atomic_write, sha256_bytes

        path = os.fspath(path)
        result = self if cost_units is None else self.with_run_info(cost_units=cost_units)
        buffer = io.BytesIO()
        eqx.tree_serialise_leaves(buffer, {"params": self.params, "obs_stats": self.obs_stats})
        weights = buffer.getvalue()
        weights_path = os.path.splitext(path)[0] + ".eqx"
        payload = {
            "summary": _jsonable(result.summary),
            "config": self.config._asdict(),
            "preset": preset,
            "weights": os.path.basename(weights_path),
            "weights_sha256": sha256_bytes(weights),
        }
        atomic_write(weights_path, weights)
        atomic_write(path, json.dumps(payload, indent=2))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
