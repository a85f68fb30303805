"""Metrics of a DERs rollout record: voltage safety, and reward, cost, losses and
violations against a no-control baseline.
"""

import numpy as np

from powerzoojax.grid.tasks.ders._constants import DERS_V_MAX, DERS_V_MIN


def compute_ders_safety_metrics(rollout: dict, *, v_min: float = DERS_V_MIN, v_max: float = DERS_V_MAX) -> dict:
    """Voltage safety of a [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record.

    **Arguments:**

    - `rollout`: the record.
    - `v_min`, `v_max`: the band [p.u.].

    **Returns:**

    A dict: safe / violating step rates, under / over-voltage step counts, worst
    deviations beyond the band [p.u.], mean lowest / highest voltage [p.u.].
    """
    lo, hi = np.asarray(rollout["v_min_episode"], np.float64), np.asarray(rollout["v_max_episode"], np.float64)
    under, over = lo < v_min, hi > v_max
    safe = ~under & ~over
    return {
        "voltage_safety_rate": float(np.mean(safe)),
        "voltage_violation_rate": float(np.mean(~safe)),
        "undervoltage_steps": int(np.sum(under)),
        "overvoltage_steps": int(np.sum(over)),
        "max_undervoltage_dev": float(np.max(np.maximum(v_min - lo, 0.0))),
        "max_overvoltage_dev": float(np.max(np.maximum(hi - v_max, 0.0))),
        "mean_v_min": float(np.mean(lo)),
        "mean_v_max": float(np.mean(hi)),
    }


def compute_ders_metrics(rollout: dict, baseline: dict, *, v_min: float = DERS_V_MIN, v_max: float = DERS_V_MAX) -> dict:
    """Metrics of a [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record against a
    no-control baseline record.

    **Arguments:**

    - `rollout`: the agent's record.
    - `baseline`: the no-control record.
    - `v_min`, `v_max`: band of the violation count [p.u.]; pass the OOD band when it
      differs.

    **Returns:**

    `{"total_reward", "total_cost", "mean_p_loss_mw", "voltage_violation_steps",
    "loss_reduction_pct", "cost_reduction_pct"}`.
    """
    lo, hi = np.asarray(rollout["v_min_episode"]), np.asarray(rollout["v_max_episode"])
    base_loss = float(np.mean(baseline["p_loss_MW"]))
    loss = float(np.mean(rollout["p_loss_MW"]))
    base_cost = float(np.sum(baseline["cost_continuous"]))
    cost = float(np.sum(rollout["cost_continuous"]))
    return {
        "total_reward": float(np.sum(rollout["reward"])),
        "total_cost": cost,
        "mean_p_loss_mw": loss,
        "voltage_violation_steps": int(np.sum((lo < v_min) | (hi > v_max))),
        "loss_reduction_pct": 100.0 * (base_loss - loss) / max(base_loss, 1e-8),
        "cost_reduction_pct": 100.0 * (base_cost - cost) / max(base_cost, 1e-8),
    }
