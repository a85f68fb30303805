"""``TrainResult``: what a training run returns (a pytree, so runs can be vmapped over seeds)."""

import json
import math
import os
from typing import Any

import equinox as eqx
import numpy as np
from jaxtyping import Array, PyTree
from powerzoojax.rl.algos._config import TrainConfig


class TrainResult(eqx.Module):
    """Policy, per-update metrics and the config of one run.

    ``params`` is the trained policy (an ``ActorCritic``); ``obs_stats`` the running
    observation statistics the policy expects its inputs normalised with (None when
    ``normalize_observations`` is off); ``metrics`` maps names to arrays with one entry
    per update (NaN where a metric was not measured, e.g. between evaluations);
    ``checkpoints`` is ``((env_steps, params), ...)`` when the run kept any.
    A run vmapped over seeds returns one ``TrainResult`` whose arrays have a leading
    seed axis.
    """

    params: PyTree
    metrics: dict[str, Array | np.ndarray]
    config: TrainConfig = eqx.field(static=True)
    env_name: str = eqx.field(static=True, default="")
    obs_stats: PyTree = None
    checkpoints: PyTree = None

    def _last_finite(self, name: str) -> float | None:
        if name not in self.metrics:
            return None
        values = np.asarray(self.metrics[name], np.float64).ravel()
        finite = values[np.isfinite(values)]
        return float(finite[-1]) if finite.size else None

    def _first_finite(self, name: str) -> float | None:
        if name not in self.metrics:
            return None
        values = np.asarray(self.metrics[name], np.float64).ravel()
        finite = values[np.isfinite(values)]
        return float(finite[0]) if finite.size else None

    @property
    def summary(self) -> dict[str, Any]:
        """Headline numbers: final/initial episode return (deterministic evaluation when
        there was one, else the training episodes'), final episode cost, thresholds."""
        reward_key = "eval_returns" if self._last_finite("eval_returns") is not None else "episode_return"
        cost_key = next(
            (k for k in ("episode_cost_est", "eval_cost", "episode_cost") if self._last_finite(k) is not None), None
        )
        return {
            "env": self.env_name,
            "algo": self.config.algo,
            "total_timesteps": self.config.total_timesteps,
            "env_steps": int(self._last_finite("env_steps") or 0),
            "seed": self.config.seed,
            "final_reward": self._last_finite(reward_key),
            "initial_reward": self._first_finite("episode_return"),
            "final_cost": self._last_finite(cost_key) if cost_key else None,
            "cost_threshold": self.config.cost_threshold,
            "cost_thresholds": list(self.config.cost_thresholds),
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write ``{"summary": ..., "config": ...}`` as JSON to ``path``."""
        payload = {"summary": _jsonable(self.summary), "config": self.config._asdict()}
        with open(path, "w") as f:
            json.dump(payload, f, indent=2)


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
