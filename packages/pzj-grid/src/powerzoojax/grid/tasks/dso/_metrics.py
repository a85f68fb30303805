"""Episode metrics of the DSO task: of an `EpisodeTrace` (the task's) and of a
dict-of-arrays rollout record (the reference API's).
"""

import math

import jax
import numpy as np

from powerzoojax.core import EpisodeTrace


def dso_metrics(trace: EpisodeTrace, baseline: EpisodeTrace | None = None, dt_hours: float = 0.5) -> dict[str, float]:
    """Episode metrics of an `EpisodeTrace` (leading time axis; extra leading axes are
    averaged).

    **Arguments:**

    - `trace`: the agent's trace.
    - `baseline`: a baseline trace, or `None`.
    - `dt_hours`: step length [hours].

    **Returns:**

    A dict of metric name to float.
    """
    info = jax.tree.map(np.asarray, trace.info)
    loss = info["p_loss_MW"]
    out = {
        "total_reward": float(np.asarray(trace.reward).sum(-1).mean()),
        "total_loss_mwh": float((loss * dt_hours).sum(-1).mean()),
        "mean_loss_mw": float(loss.mean()),
        "voltage_violations": float(info["cost_voltage_violation"].sum(-1).mean()),
        "voltage_violation_steps": float((info["cost_voltage_violation"] > 0).sum(-1).mean()),
        "thermal_violations": float(info["cost_thermal_overload"].sum(-1).mean()),
        "curtailed_mwh": float((info["resource_curtailed_mw"] * dt_hours).sum(-1).mean()),
        "shifted_mwh": float((info["resource_shift_out_mw"] * dt_hours).sum(-1).mean()),
        "served_flex_ratio": float(
            info["resource_shift_in_mw"].sum() / max(float(info["resource_shift_out_mw"].sum()), 1e-9)
        ),
        "peak_head_mw": float(info["p_head_MW"].max(-1).mean()),
    }
    if baseline is not None:
        b = jax.tree.map(np.asarray, baseline.info)
        b_loss = float(b["p_loss_MW"].sum())
        b_peak = float(b["p_head_MW"].max(-1).mean())
        out["network_loss_reduction_pct"] = 100.0 * (b_loss - float(loss.sum())) / max(b_loss, 1e-9)
        out["peak_shaving_pct"] = 100.0 * (b_peak - out["peak_head_mw"]) / max(b_peak, 1e-9)
    for k, v in out.items():
        if not math.isfinite(v):
            out[k] = float("nan")
    return out


def compute_dso_metrics(rollout_results: dict, baseline_results: dict | None = None, dt_hours: float = 0.5) -> dict[str, float | None]:
    """Episode metrics of a [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.

    Rewards, losses [MWh, MW], violation counts (totals and per step), curtailed /
    shifted / released energy [MWh], `served_flex_ratio` (released / shifted out; 0
    without shifting); with a baseline, `network_loss_reduction_pct` and
    `peak_shaving_pct` (of the peak loss), else `None`.

    **Arguments:**

    - `rollout_results`: the agent's record.
    - `baseline_results`: the no-control record, or `None`.
    - `dt_hours`: step length [hours].

    **Returns:**

    A dict of metric name to float (or `None`).
    """
    r = {k: np.asarray(v, np.float64) for k, v in rollout_results.items()}
    losses, shifted, shift_in = r["losses"], r["shifted"], r["shift_in"]
    volt = r["voltage_violations"]
    therm = r.get("thermal_violations", np.zeros_like(volt))
    n = max(int(losses.shape[-1]), 1)
    out: dict[str, float | None] = {
        "total_reward": float(r["rewards"].sum()),
        "total_loss_mwh": float(losses.sum() * dt_hours),
        "mean_loss_mw": float(losses.mean()),
        "total_voltage_violations": float(volt.sum()),
        "total_thermal_overloads": float(therm.sum()),
        "total_violations": float(volt.sum() + therm.sum()),
        "voltage_violation_count_per_step": float(volt.sum() / n),
        "thermal_overload_count_per_step": float(therm.sum() / n),
        "total_curtailed_mwh": float(r["curtailed"].sum() * dt_hours),
        "total_shifted_mwh": float(shifted.sum() * dt_hours),
        "total_shift_in_mwh": float(shift_in.sum() * dt_hours),
        "served_flex_ratio": float(shift_in.sum() / shifted.sum()) if shifted.sum() > 0 else 0.0,
        "network_loss_reduction_pct": None,
        "peak_shaving_pct": None,
    }
    if baseline_results is not None:
        base = np.asarray(baseline_results["losses"], np.float64)
        out["network_loss_reduction_pct"] = float(100.0 * (base.sum() - losses.sum()) / base.sum()) if base.sum() > 1e-8 else 0.0
        out["peak_shaving_pct"] = float(100.0 * (base.max() - losses.max()) / base.max()) if base.max() > 1e-8 else 0.0
    return out
