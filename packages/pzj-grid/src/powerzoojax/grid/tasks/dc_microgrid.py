"""DCMG task (): the data-centre microgrid on real workload traces.

Frozen case: DG 1.2 MW, PV 0.8 MW, grid import cap 1.5 MW (price ref 150 $/MWh,
0.18 kgCO2/kWh), battery SOC [0.15, 0.90] from 0.55 with terminal target 0.55 and penalty
2e4, reward weights `w_cost 0.2`, `w_carbon 0.1`; one episode = one day of 288 five-minute
steps. Data: Google 2019 workload (days 0–20 train, 21–27 iid), solar and price of the same
day of the year (see [`powerzoojax.data.load_dc_profiles`][powerzoojax.data.load_dc_profiles]), the deterministic temperature.
Splits: `train`, `iid` and the OOD splits (iid windows under
[`powerzoojax.grid.apply_ood_transform`][powerzoojax.grid.apply_ood_transform]): `cooling_stress`, `renewable_drought`
(main) and `workload_swap`, `workload_shock`, `dg_derating`, `sla_tighten` (appendix).
Baselines `no_control` (reference), `max_renewable`, `rule_based`. Primary metric
`episode_reward` ↑; gate `sla_deficit_rate = 0`.

Training vs evaluation env. [`DCMicrogridTask.make_train_env`][powerzoojax.grid.tasks.dc_microgrid.DCMicrogridTask.make_train_env]
returns [`DCMicrogridShapingWrapper`][powerzoojax.grid.microgrid.DCMicrogridShapingWrapper]
(diesel auto-balance on, the benchmark's fixed shaping weights: sla 50, overtemp 30,
deficit 200, spill 100, tracking 40), for trainers, while `make_env` returns the plain
env, on which baselines and evaluation rollouts run and `episode_reward` (the unshaped
reward `r_energy + 0.2·r_cost + 0.1·r_carbon` the primary metric names) is measured.
"""

from collections.abc import Callable
from typing import Any, cast

import jax.numpy as jnp
import numpy as np

from powerzoojax.core import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.data import DC_STEPS_PER_DAY
from powerzoojax.grid.microgrid import (
    DataCenterMicrogridEnv,
    DCMicrogridParams,
    DCMicrogridShapingWrapper,
    DCMicrogridState,
    apply_ood_transform,
    make_dcmicrogrid_params,  # noqa: F401 - re-exported (the reference's task surface)
    make_dcmicrogrid_params_with_profiles,
)

MAIN_SPLITS = ("train", "iid", "cooling_stress", "renewable_drought")
APPENDIX_SPLITS = ("workload_swap", "workload_shock", "dg_derating", "sla_tighten")
ALL_SPLITS = MAIN_SPLITS + APPENDIX_SPLITS
TRAIN_DAYS = tuple(range(0, 21))
IID_DAYS = tuple(range(21, 28))
TASK_CONFIG: dict[str, Any] = {
    "dg_p_max_mw": 1.2,
    "pv_capacity_mw": 0.8,
    "grid_import_p_max_mw": 1.5,
    "grid_price_ref_per_mwh": 150.0,
    "grid_carbon_kg_per_kwh": 0.18,
    "battery_soc_min": 0.15,
    "battery_soc_max": 0.90,
    "battery_soc_init": 0.55,
    "terminal_soc_target": 0.55,
    "terminal_soc_penalty": 20000.0,
    "w_cost": 0.2,
    "w_carbon": 0.1,
}
GAMMA = 0.99
_SEED_SALT = 0xDC
# Step windows of one 288-step day used by the fixed-schedule baselines.
SOLAR_START, SOLAR_END, EVENING_START, NIGHT_START = 72, 144, 240, 240


def max_renewable_policy(obs, state: DCMicrogridState, key) -> jnp.ndarray:
    """`[0.5, 0.5, 0.5, b, 0]`: charge (b = −1) over steps 72–143, discharge (+1) from 240 and
    before 72, idle otherwise.

    **Arguments:**

    - `obs`: observation (unused).
    - `state`: the env state (its step count).
    - `key`: PRNG key (unused).

    **Returns:**

    A `(5,)` float32 action.
    """
    t = state.time_step % DC_STEPS_PER_DAY
    b = jnp.where((t >= SOLAR_START) & (t < SOLAR_END), -1.0, jnp.where((t >= EVENING_START) | (t < SOLAR_START), 1.0, 0.0))
    return jnp.stack([0.5, 0.5, 0.5, b, 0.0]).astype(jnp.float32)


def previous_deficit_fraction(state: DCMicrogridState, grid_cap_mw) -> jnp.ndarray:
    """Last step's unserved load as a fraction of the load, rebuilt from the state.

    **Arguments:**

    - `state`: the env state.
    - `grid_cap_mw`: grid import capacity [MW].

    **Returns:**

    A float scalar [fraction].
    """
    raw = state.p_batt_mw + state.p_pv_mw + state.p_dg_mw - state.p_load_mw
    grid = jnp.minimum(jnp.maximum(-raw, 0.0), grid_cap_mw)
    return jnp.maximum(-(raw + grid), 0.0) / jnp.maximum(state.p_load_mw, 1e-6)


def make_rule_based_policy(params: DCMicrogridParams) -> Callable:
    """The rule-based baseline.

    Solar window 72–143: train 1, fine-tune 0.5, battery 0; otherwise no batch work and the
    battery at −1 before 72, +0.5 for 144–239, −1 from 240; cooling 0; diesel 1 when the
    previous step left more than 5 % of the load unserved.

    **Arguments:**

    - `params`: the episode's params.

    **Returns:**

    `policy(obs, state, key) -> action (5,)`.
    """

    def policy(obs, state: DCMicrogridState, key) -> jnp.ndarray:
        t = state.time_step % DC_STEPS_PER_DAY
        solar = (t >= SOLAR_START) & (t < SOLAR_END)
        train = jnp.where(solar, 1.0, 0.0)
        ft = jnp.where(solar, 0.5, 0.0)
        batt = jnp.where(solar, 0.0, jnp.where(t < SOLAR_START, -1.0, jnp.where(t < NIGHT_START, 0.5, -1.0)))
        dg = jnp.where(previous_deficit_fraction(state, params.grid_import_p_max_mw) > 0.05, 1.0, 0.0)
        return jnp.stack([train, ft, 0.0, batt, dg]).astype(jnp.float32)

    return policy


def no_control_policy(obs, state, key) -> jnp.ndarray:
    """The no-control baseline: the zero action.

    **Arguments:**

    - `obs`, `state`, `key`: unused.

    **Returns:**

    A `(5,)` float32 array of zeros.
    """
    return jnp.zeros((5,), jnp.float32)


class DCMicrogridTask:
    """The frozen DCMG task; implements [`TaskSpec`][powerzoojax.core.TaskSpec].

    **Arguments:**

    - `source`: workload trace (`"google"`, `"azure"`, `"alibaba"`).
    - `require_real_data`: raise instead of falling back to synthetic profiles.
    - `**overrides`: entries of `TASK_CONFIG` to change.
    """

    task_name = "dc_microgrid"
    default_splits = MAIN_SPLITS

    def __init__(self, *, source: str = "google", require_real_data: bool = False, **overrides: Any):
        self.source = source
        self.require_real_data = require_real_data
        self.config = {**TASK_CONFIG, **overrides}
        self.gamma = GAMMA

    # -- params -----------------------------------------------------------------------

    def _days(self, split: str) -> tuple[int, ...]:
        if split not in ALL_SPLITS:
            raise ValueError(f"unknown DCMG split {split!r}; expected one of {ALL_SPLITS}")
        return TRAIN_DAYS if split == "train" else IID_DAYS

    def make_params(self, split: str = "train", day: int | None = None, *, max_steps: int = DC_STEPS_PER_DAY) -> DCMicrogridParams:
        """Params of one episode.

        **Arguments:**

        - `split`: data split (an OOD split applies its scenario).
        - `day`: workload day; `None` takes the split's first day.
        - `max_steps`: episode length [5-minute steps].

        **Returns:**

        [`DCMicrogridParams`][powerzoojax.grid.microgrid.DCMicrogridParams].
        """
        days = self._days(split)
        day = days[0] if day is None else int(day)
        start = day * DC_STEPS_PER_DAY
        # Without return_sources the call returns the params alone.
        params = cast(DCMicrogridParams, make_dcmicrogrid_params_with_profiles(
            self.source, start, require_real_data=self.require_real_data, max_steps=max_steps, **self.config
        ))
        if split in ("train", "iid"):
            return params
        return apply_ood_transform(params, split, episode_start_step=start, require_real_data=self.require_real_data)

    def make_env(self, split: str = "train") -> DataCenterMicrogridEnv:
        """The plain env: evaluation, baselines and `episode_reward`."""
        self._days(split)
        return DataCenterMicrogridEnv()

    def make_train_env(self, split: str = "train") -> DCMicrogridShapingWrapper:
        """The training env: fixed shaping and diesel auto-balance.

        **Arguments:**

        - `split`: data split (unused: the env holds no data).

        **Returns:**

        A [`DCMicrogridShapingWrapper`][powerzoojax.grid.microgrid.DCMicrogridShapingWrapper].
        """
        self._days(split)
        return DCMicrogridShapingWrapper(dg_autobalance=True)

    def episode_params(
        self,
        split: str,
        episode_idx: int,
        n_episodes: int,
        max_steps: int = DC_STEPS_PER_DAY,
        *,
        strategy: str = "uniform",
        seed: int = 0,
    ) -> DCMicrogridParams:
        """`uniform`: the split's days spread evenly over `n_episodes` (evaluation);
        `seeded`: one day drawn from `default_rng(seed·997 + salt)` (training)."""
        days = self._days(split)
        if strategy == "uniform":
            if n_episodes < 1 or not 0 <= episode_idx < n_episodes:
                raise ValueError(f"need 0 <= episode_idx < n_episodes, got {episode_idx} and {n_episodes}")
            positions = np.linspace(0, len(days) - 1, n_episodes).round().astype(int)
            day = days[int(positions[episode_idx])]
        elif strategy == "seeded":
            rng = np.random.default_rng(seed * 997 + _SEED_SALT + episode_idx)
            day = days[int(rng.integers(len(days)))]
        else:
            raise ValueError(f"unknown strategy {strategy!r}; expected 'uniform' or 'seeded'")
        return self.make_params(split, day, max_steps=max_steps)

    # -- rollouts ---------------------------------------------------------------------

    def rollout(self, env, params, key, policy_fn) -> EpisodeTrace:
        return episode_rollout(env, params, key, policy_fn)

    def baseline_names(self) -> tuple[str, ...]:
        return ("no_control", "max_renewable", "rule_based")

    def baseline_policy(self, name: str, params: DCMicrogridParams) -> Callable:
        """The policy of a named baseline.

        **Arguments:**

        - `name`: one of `baseline_names()`.
        - `params`: the episode's params.

        **Returns:**

        `policy(obs, state, key) -> action (5,)`.
        """
        if name == "no_control":
            return no_control_policy
        if name == "max_renewable":
            return max_renewable_policy
        if name == "rule_based":
            return make_rule_based_policy(params)
        raise ValueError(f"unknown DCMG baseline {name!r}; expected one of {self.baseline_names()}")

    def baseline_rollout(self, env, params, key, name: str) -> EpisodeTrace:
        return episode_rollout(env, params, key, self.baseline_policy(name, params))

    # -- metrics ----------------------------------------------------------------------

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout: EpisodeTrace | None = None) -> dict[str, float]:
        metrics = dcmg_metrics(agent_rollout, dt_hours=5.0 / 60.0, battery_e_mwh=2.0)
        if baseline_rollout is not None:
            base = dcmg_metrics(baseline_rollout, dt_hours=5.0 / 60.0, battery_e_mwh=2.0)
            metrics["baseline_episode_reward"] = base["episode_reward"]
            metrics["reward_gain_vs_baseline"] = metrics["episode_reward"] - base["episode_reward"]
        return metrics

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("sla", "overtemp", "power_deficit"), (0.0, 0.0, 0.0), (50.0, 30.0, 200.0))


def norm_score(score: float, floor: float, ceiling: float) -> float:
    """`(score − floor)/(ceiling − floor)`; NaN when the baselines tie.

    **Arguments:**

    - `score`: the agent's score.
    - `floor`, `ceiling`: scores of the weak and the strong baseline.

    **Returns:**

    A float.
    """
    span = ceiling - floor
    return float("nan") if abs(span) < 1e-12 else (score - floor) / span


def dcmg_metrics(trace: EpisodeTrace, *, dt_hours: float = 5.0 / 60.0, battery_e_mwh: float = 2.0) -> dict[str, float]:
    """Episode metrics, averaged over any leading episode axes (time is the last axis of the
    reward).

    **Arguments:**

    - `trace`: an `EpisodeTrace`.
    - `dt_hours`: step length [hours].
    - `battery_e_mwh`: battery capacity [MWh].

    **Returns:**

    A dict of metric name to float.
    """
    info = {k: np.asarray(v) for k, v in trace.info.items()}
    reward = np.asarray(trace.reward)
    costs = np.asarray(trace.costs)  # (..., T, 3)

    def per_episode(x: np.ndarray) -> float:
        return float(np.mean(np.sum(x, axis=-1)))

    sla, overtemp, deficit = costs[..., 0], costs[..., 1], costs[..., 2]
    pv = info["p_pv_mw"]
    pv_used = pv - np.minimum(info["power_spill"], pv)
    pv_total = np.sum(pv, axis=-1)
    return {
        "episode_reward": per_episode(reward),
        "total_fuel_cost": per_episode(info["fuel_cost"]),
        "total_grid_cost": per_episode(info["grid_cost"]),
        "total_carbon_kg": per_episode(info["carbon_kg"] + info["grid_carbon_kg"]),
        "grid_import_mwh": per_episode(info["p_grid_import_mw"] * dt_hours),
        "energy_mwh": per_episode(info["p_load_mw"] * dt_hours),
        "sla_violation_rate": float(np.mean(sla > 0)),
        "overtemp_rate": float(np.mean(overtemp > 0)),
        "deficit_rate": float(np.mean(deficit > 0)),
        "sla_deficit_rate": float(np.mean((sla > 0) | (deficit > 0))),
        "feasibility_rate": float(np.mean(np.all(costs <= 0, axis=-1))),
        "n_expired_tasks": per_episode(info["n_expired"].astype(np.float64)),
        "pv_utilization": float(np.mean(np.where(pv_total > 0, np.sum(pv_used, axis=-1) / np.maximum(pv_total, 1e-12), 1.0))),
        "battery_cycles": per_episode(np.abs(info["p_batt_mw"]) * dt_hours / (2.0 * battery_e_mwh)),
    }


# ----------------------------------------------------------------------------- reference API


def _info_columns(info_history: Any) -> dict[str, np.ndarray]:
    """Per-step records → `{key: (T,) float64}`: a list of per-step info dicts, a dict of
    stacked arrays, or an `EpisodeTrace` (its info and reward)."""
    if isinstance(info_history, EpisodeTrace):
        info_history = {**dict(info_history.info), "reward": info_history.reward}
    if isinstance(info_history, dict):
        return {k: np.asarray(v, np.float64).reshape(-1) for k, v in info_history.items() if np.ndim(v) <= 1}
    keys = [k for k in info_history[0] if np.ndim(info_history[0][k]) == 0]
    return {k: np.asarray([float(step.get(k, 0.0)) for step in info_history], np.float64) for k in keys}


def rollout_dcmicrogrid(env: DataCenterMicrogridEnv, params: DCMicrogridParams, key, policy_fn) -> list[dict[str, float]]:
    """One episode (`max_steps` steps, one `lax.scan`) as per-step info dicts.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key.
    - `policy_fn`: `policy(obs, state, key) -> action`.

    **Returns:**

    A list of per-step dicts (Python floats, scalar entries only, plus `reward`), as
    [`compute_dcmicrogrid_metrics`][powerzoojax.grid.tasks.dc_microgrid.compute_dcmicrogrid_metrics]
    takes.
    """
    trace = episode_rollout(env, params, key, policy_fn)
    columns = {k: np.asarray(v) for k, v in trace.info.items() if np.ndim(v) == 1}
    columns["reward"] = np.asarray(trace.reward)
    n = columns["reward"].shape[0]
    return [{k: float(v[t]) for k, v in columns.items()} for t in range(n)]


def compute_dcmicrogrid_metrics(
    info_history: Any, *, dt_hours: float = 5.0 / 60.0, battery_e_mwh: float = 2.0, soc_range: tuple[float, float] = (0.15, 0.90)
) -> dict[str, float]:
    """Episode metrics of a microgrid rollout.

    Energy [MWh of data-centre demand], fuel, grid and terminal costs [$], carbon [kg]
    (diesel, grid, total), grid import [MWh], mean price, rates of SLA / over-temperature /
    deficit / spill steps, `feasibility_rate` (steps with `cost_sum == 0`), PV utilisation
    (mean `P_pv / max P_pv`), battery throughput [MWh] and full cycles over the usable
    window `battery_e_mwh·(soc_max − soc_min)`, SOC statistics, `episode_reward`.

    **Arguments:**

    - `info_history`: the list of
      [`rollout_dcmicrogrid`][powerzoojax.grid.tasks.dc_microgrid.rollout_dcmicrogrid], a
      dict of per-step arrays or an `EpisodeTrace`.
    - `dt_hours`: step length [hours].
    - `battery_e_mwh`: battery capacity [MWh].
    - `soc_range`: `(soc_min, soc_max)` usable window [fraction].

    **Returns:**

    A dict of metric name to float; `{}` for an empty input.
    """
    if len(info_history) == 0:
        return {}
    c = _info_columns(info_history)
    zeros = np.zeros_like(next(iter(c.values())))
    col = lambda key: c.get(key, zeros)  # noqa: E731
    p_pv, p_batt, soc = col("p_pv_mw"), col("p_batt_mw"), col("soc")
    max_pv = float(p_pv.max()) if float(p_pv.max()) > 0 else 1.0
    throughput = float(np.abs(p_batt).sum() * dt_hours)
    usable = float(battery_e_mwh) * (float(soc_range[1]) - float(soc_range[0]))
    return {
        "total_energy_cost": float(col("p_dc_mw").sum() * dt_hours),
        "total_fuel_cost": float(col("fuel_cost").sum()),
        "total_grid_cost": float(col("grid_cost").sum()),
        "total_terminal_soc_cost": float(col("terminal_soc_cost").sum()),
        "total_carbon_kg": float((col("carbon_kg") + col("grid_carbon_kg")).sum()),
        "total_diesel_carbon_kg": float(col("carbon_kg").sum()),
        "total_grid_carbon_kg": float(col("grid_carbon_kg").sum()),
        "grid_import_mwh": float(col("p_grid_import_mw").sum() * dt_hours),
        "mean_grid_price_per_mwh": float(col("grid_price_per_mwh").mean()),
        "sla_violation_rate": float(col("cost_sla").mean()),
        "overtemp_rate": float((col("cost_overtemp") > 0).mean()),
        "power_deficit_rate": float((col("cost_power_deficit") > 0).mean()),
        "power_spill_rate": float((col("cost_power_spill") > 0).mean()),
        "feasibility_rate": float((col("cost_sum") == 0).mean()),
        "pv_utilization": float((p_pv / max_pv).mean()),
        "battery_throughput_mwh": throughput,
        "battery_cycles": throughput / max(2.0 * usable, 1e-6),
        "episode_reward": float(col("reward").sum()),
        "mean_cost_sla": float(col("cost_sla").mean()),
        "mean_cost_overtemp": float(col("cost_overtemp").mean()),
        "mean_cost_power_deficit": float(col("cost_power_deficit").mean()),
        "mean_cost_power_spill": float(col("cost_power_spill").mean()),
        "mean_cost_power_balance": float(col("cost_power_balance").mean()),
        "mean_p_dc_mw": float(col("p_dc_mw").mean()),
        "mean_soc": float(soc.mean()),
        "soc_min": float(soc.min()),
        "soc_max": float(soc.max()),
    }


__all__ = [
    "ALL_SPLITS", "APPENDIX_SPLITS", "DCMicrogridParams", "DCMicrogridShapingWrapper", "DCMicrogridState",
    "DCMicrogridTask", "DataCenterMicrogridEnv", "GAMMA", "IID_DAYS", "MAIN_SPLITS", "TASK_CONFIG", "TRAIN_DAYS",
    "apply_ood_transform", "compute_dcmicrogrid_metrics", "dcmg_metrics", "make_dcmicrogrid_params",
    "make_dcmicrogrid_params_with_profiles", "make_rule_based_policy", "max_renewable_policy", "no_control_policy",
    "norm_score", "previous_deficit_fraction", "rollout_dcmicrogrid",
]
