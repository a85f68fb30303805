"""Episode metrics of a TSO rollout: operating cost and its parts, reserve and thermal
violations, OPF convergence, and the gap to the baselines.
"""

import math

import jax
import numpy as np

from powerzoojax.core._task import EpisodeTrace


_VIOLATION_TOL = 1e-6


def _episode_mean(x: np.ndarray) -> float:
    """Sum over the time axis (last), mean over any leading (episode) axes."""
    return float(np.asarray(x, np.float64).sum(-1).mean())


def _record(rollout) -> dict[str, np.ndarray]:
    """Info arrays (and `reward`) of an `EpisodeTrace` or a rollout dict, as NumPy."""
    if isinstance(rollout, EpisodeTrace):
        rollout = {**dict(rollout.info), "reward": rollout.reward}
    return {k: np.asarray(v) for k, v in jax.tree.map(np.asarray, dict(rollout)).items()}


def _operating_cost(r: dict[str, np.ndarray]) -> np.ndarray:
    return r["gen_cost"] + r["startup_cost"] + r["no_load_cost"]


def compute_tso_metrics(rollout_results, baseline_results=None, merit_order=None) -> dict[str, float]:
    """Episode metrics of a TSO rollout.

    `total_operating_cost` = Σ (gen + start-up + no-load) [$]; `*_rate` = fraction of
    steps with the quantity above 1e-6 (reserve: the tracked shortfall, charged or not);
    `feasibility_rate` = fraction of safe steps. With `baseline_results`:
    `cost_vs_baseline_pct` = 100·(C − C_base)/C_base; with `merit_order` as well:
    `norm_score = (C_all_on − C)/(C_all_on − C_merit)`.

    **Arguments:**

    - `rollout_results`: an `EpisodeTrace` or the dict of
      [`tso_all_on_rollout`][powerzoojax.grid.tasks.tso.tso_all_on_rollout] (time on the
      last axis; leading episode axes averaged).
    - `baseline_results`: the same for a baseline (e.g. the all-on rollout), or `None`.
    - `merit_order`: the same for the merit-order baseline, or `None`.

    **Returns:**

    A dict of metric name to float.
    """
    r = _record(rollout_results)
    op_cost = _operating_cost(r)
    reserve = r["reserve_shortfall"]
    thermal = r["cost_thermal_overload"]
    out = {
        "total_operating_cost": _episode_mean(op_cost),
        "total_gen_cost": _episode_mean(r["gen_cost"]),
        "total_startup_cost": _episode_mean(r["startup_cost"]),
        "total_no_load_cost": _episode_mean(r["no_load_cost"]),
        "total_reward": _episode_mean(r["reward"]) if "reward" in r else float("nan"),
        "mean_reserve_shortfall": float(np.mean(reserve)),
        "total_reserve_shortfall": _episode_mean(reserve),
        "reserve_shortfall_rate": float((reserve > _VIOLATION_TOL).mean()),
        "mean_thermal_cost": float(np.mean(thermal)),
        "total_thermal_cost": _episode_mean(thermal),
        "total_thermal_overload": _episode_mean(thermal),
        "thermal_violation_rate": float((thermal > _VIOLATION_TOL).mean()),
        "total_commitment_switches": _episode_mean(r["commitment_switches"]),
        "commitment_switching_frequency": float(np.asarray(r["commitment_switches"], np.float64).mean()),
        "feasibility_rate": float(np.asarray(r["is_safe"], np.float64).mean()),
        "total_cost_violations": _episode_mean(r["cost_sum"]),
        "opf_convergence_rate": float(np.asarray(r["opf_converged"], np.float64).mean()),
    }
    if baseline_results is not None:
        base = _episode_mean(_operating_cost(_record(baseline_results)))
        if base > 0:
            out["cost_vs_baseline_pct"] = 100.0 * (out["total_operating_cost"] - base) / base
        if merit_order is not None:
            c_mer = _episode_mean(_operating_cost(_record(merit_order)))
            denom = base - c_mer
            out["norm_score"] = (base - out["total_operating_cost"]) / denom if abs(denom) > 1e-9 else float("nan")
    for k, v in out.items():
        if not math.isfinite(v):
            out[k] = float("nan")
    return out
