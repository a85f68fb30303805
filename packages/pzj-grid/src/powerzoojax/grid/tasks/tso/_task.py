"""The TSO benchmark task, [`TSOTask`][powerzoojax.grid.tasks.tso.TSOTask]."""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from powerzoojax.core._task import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.grid.tasks.tso._baselines import _BASELINES
from powerzoojax.grid.tasks.tso._constants import TSO_FORECAST_HORIZON, TSO_SPLITS, WINDOW_STEPS
from powerzoojax.grid.tasks.tso._metrics import compute_tso_metrics
from powerzoojax.grid.tasks.tso._params import _tso_params
from powerzoojax.grid.tasks.tso._profiles import make_tso_net_load_profiles, tso_net_load_shape
from powerzoojax.grid.transmission import UCParams, UnitCommitmentEnv


class TSOTask:
    """The TSO benchmark task (implements [`TaskSpec`][powerzoojax.core.TaskSpec]).

    **Arguments:**

    - `case_id`: `"118"` (the benchmark) or `"14"`.
    - `max_steps`: episode length [steps].
    - `forecast_horizon_steps`: load preview [steps].
    - `reserve_margin_frac`: reserve requirement [fraction of load].
    - `dcopf_max_iter`, `dcopf_tol`: DC-OPF iteration budget and tolerance.
    - `source`: dataset of the net-load profiles.
    - `data_loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the
      shipped data.
    - `synthetic`: use the synthetic net-load profile instead of data.
    """

    task_name = "tso"
    default_splits = TSO_SPLITS

    def __init__(
        self,
        case_id: str = "118",
        *,
        max_steps: int = 48,
        forecast_horizon_steps: int = TSO_FORECAST_HORIZON,
        reserve_margin_frac: float = 0.05,
        dcopf_max_iter: int = 30,
        dcopf_tol: float = 1e-3,
        source: str = "simbench",
        data_loader=None,
        synthetic: bool = False,
    ):
        self.case_id = str(case_id)
        self.max_steps = int(max_steps)
        self.synthetic = bool(synthetic)
        self._kwargs: dict[str, Any] = dict(
            forecast_horizon_steps=forecast_horizon_steps, reserve_margin_frac=reserve_margin_frac,
            dcopf_max_iter=dcopf_max_iter, dcopf_tol=dcopf_tol, source=source, data_loader=data_loader,
        )
        self._cache: dict[tuple[str, int], UCParams] = {}

    def _shape(self, split: str) -> np.ndarray:
        if self.synthetic:
            return np.tile(make_tso_net_load_profiles(WINDOW_STEPS)[:, 0], 2)
        return tso_net_load_shape(split, source=self._kwargs["source"], data_loader=self._kwargs["data_loader"])

    def make_params(self, split: str = "train", start: int = 0, *, max_steps: int | None = None) -> UCParams:
        """Params over the whole split pool, episodes starting at row `start`.

        **Arguments:**

        - `split`: data split.
        - `start`: first row of the episode (a traced leaf: changing it does not retrace).
        - `max_steps`: episode length [steps]; `None` takes the task's.

        **Returns:**

        [`UCParams`][powerzoojax.grid.transmission.UCParams].
        """
        n = self.max_steps if max_steps is None else int(max_steps)
        if (split, n) not in self._cache:
            self._cache[(split, n)] = _tso_params(
                self.case_id, self._shape(split), max_steps=n, split=split, **self._kwargs
            )
        params = self._cache[(split, n)]
        n_rows = params.load_profiles.shape[0]
        if not 0 <= int(start) <= n_rows - n:
            raise ValueError(f"TSOTask: start {start} outside 0..{n_rows - n} for split {split!r}")
        return eqx.tree_at(lambda p: p.fixed_episode_start_idx, params, jnp.asarray(int(start), jnp.int32))

    def make_env(self, split: str = "train") -> UnitCommitmentEnv:
        return UnitCommitmentEnv()

    def episode_params(
        self, split: str, episode_idx: int, n_episodes: int, max_steps: int, *, strategy: str = "uniform", seed: int = 0
    ) -> UCParams:
        n_rows = self._shape(split).shape[0]
        span = max(n_rows - int(max_steps), 0)
        if strategy == "uniform":
            start = int(round(episode_idx * span / max(n_episodes - 1, 1))) if n_episodes > 1 else 0
        elif strategy == "seeded":
            start = int(np.random.default_rng(seed * 997 + episode_idx).integers(0, span + 1))
        else:
            raise ValueError(f"TSOTask.episode_params: strategy must be 'uniform' or 'seeded', got {strategy!r}")
        return self.make_params(split, start, max_steps=max_steps)

    def rollout(self, env, params, key, policy_fn) -> EpisodeTrace:
        return episode_rollout(env, params, key, policy_fn)

    def baseline_names(self) -> tuple[str, ...]:
        return ("all_on", "merit_order", "no_control")

    def baseline_policy(self, name: str, params: UCParams):
        """The policy of a named baseline.

        **Arguments:**

        - `name`: one of `baseline_names()`.
        - `params`: the episode's params.

        **Returns:**

        `policy(obs, state, key) -> action (2 * n_units,)`.
        """
        if name == "no_control":
            name = "all_on"  # the reference point: commit everything, no dispatch bias
        if name not in _BASELINES:
            raise ValueError(f"TSOTask: unknown baseline {name!r}; valid: {self.baseline_names()}")
        return _BASELINES[name](params)

    def baseline_rollout(self, env, params, key, name: str) -> EpisodeTrace:
        return episode_rollout(env, params, key, self.baseline_policy(name, params))

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout=None) -> dict[str, float]:
        """`baseline_rollout`: None, one trace (its operating-cost gap is reported), or a
        dict with `all_on` and `merit_order` traces (adds `norm_score`)."""
        if isinstance(baseline_rollout, dict) and "all_on" in baseline_rollout:
            return compute_tso_metrics(agent_rollout, baseline_rollout["all_on"], baseline_rollout.get("merit_order"))
        out = compute_tso_metrics(agent_rollout)
        if baseline_rollout is not None:
            base = compute_tso_metrics(baseline_rollout)["total_operating_cost"]
            out["cost_reduction_pct"] = 100.0 * (base - out["total_operating_cost"]) / max(abs(base), 1e-9)
        return out

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("thermal_overload", "reserve_shortfall"), (0.0, 0.0), (1.0, 1.0))
