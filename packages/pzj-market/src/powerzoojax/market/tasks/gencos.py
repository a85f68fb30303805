"""GenCos: generation companies bid into an SCED market (case 5 by default; 29gb on request).

`GenCosTask(case_id="29gb")` clears the reduced GB network instead: 66 agents, ramp
limits from the case's unit-commitment columns, and metrics that also report the dispatch
share of each fuel type (`dispatch_share_gas` ...). The shapes below are case 5's.

Env: the MarketMARL core (`powerzoojax.market._market_marl`) seen jointly by
[`GenCosJointEnv`][powerzoojax.market.tasks.gencos.GenCosJointEnv] so it runs on the one rollout kernel: observation `(5, 12)`
(one row per agent), action `(15,)` = 5 agents × 3 segment markups in
[-1, 1], reward the market's total realised profit [$] (per-agent profits in
`info["unit_profit"]`), cost `thermal_overload` (diagnostic). The dict-per-agent
`MarketMARLEnv` of `powerzoojax.rl` wraps the same params.

Data ([`load_gencos_profiles`][powerzoojax.market.tasks.gencos.load_gencos_profiles]): a measured demand series `x` → min-max over the
window → per-load affine map onto `[d_min, d_max]` → OOD factor → every row's total
projected into `[Σp_min + 1, Σp_max − 1]` keeping the spatial mix. Source: the GB
Elexon demand (the reference's windows: train 2025-04..12, iid 2026-01..03) when the loader has GB
files (`DataLoader(data_dir=...)`), else the shipped measured England & Wales demand
(2000, its own train / iid windows). Splits: `train`, `iid`, `demand_shift` (iid
× 1.10) and `renewable_shock` (iid × 1.05, the reference's net-load proxy); `high_demand` /
`low_renewable` are aliases of the last two.
"""

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from powerzoojax.case import CaseData, load_case
from powerzoojax.core import Box, ConstraintSpec, Environment, EpisodeTrace, Invariant, episode_rollout, make_box
from powerzoojax.core._types import Info, Key
from powerzoojax.core._provider import import_provider
from powerzoojax.data import LOAD_ACTUAL_MW, DataLoader
from powerzoojax.market._invariants import gencos_laws
from powerzoojax.market._market_marl import (
    BASELINE_ACTIONS,
    MarketMARLParams,
    MarketMARLState,
    make_market_marl_params,
    market_marl_observations,
    market_marl_reset,
    market_marl_transition,
)

SPLITS: tuple[str, ...] = ("train", "iid", "demand_shift", "renewable_shock")
OOD_FACTORS: dict[str, float] = {"demand_shift": 1.10, "renewable_shock": 1.05}
SPLIT_ALIASES: dict[str, str] = {"high_demand": "demand_shift", "low_renewable": "renewable_shock"}
FALLBACK_SOURCE = "england_wales"  # shipped measured demand, used when no GB files are given
CASE_ID = "5"
# Cases the task clears: the reference's five-unit market, and the reduced GB network,
# whose units carry fuel types and unit-commitment ramp limits.
MARKET_CASE_IDS: tuple[str, ...] = ("5", "29gb")
FUEL_NAMES: dict[int, str] = {0: "other", 1: "nuclear", 2: "coal", 3: "gas", 4: "oil", 5: "hydro", 6: "wind", 7: "solar"}


def fuel_dispatch_shares(case: CaseData, unit_power: Any) -> dict[str, float]:
    """Mean share of dispatched energy by fuel, `{"dispatch_share_<fuel>": share}`.

    **Arguments:**

    - `case`: the market's case; one with no `unit_fuel_type` column gives an empty dict.
    - `unit_power`: `(..., T, n_units)` dispatch [MW] over episodes.

    **Returns:** one entry per fuel present in the case, shares of total energy (they sum to 1).
    """
    if case.unit_fuel_type is None:
        return {}
    fuel = np.asarray(case.unit_fuel_type, np.int64)
    energy = np.asarray(unit_power, np.float64).reshape(-1, fuel.size).sum(axis=0)
    total = max(float(energy.sum()), 1e-9)
    return {f"dispatch_share_{FUEL_NAMES.get(int(f), 'other')}": float(energy[fuel == f].sum() / total) for f in np.unique(fuel)}


def _canonical_split(split: str) -> str:
    split = SPLIT_ALIASES.get(split, split)
    if split not in SPLITS:
        raise ValueError(f"Unknown GenCos split {split!r}; valid splits: {', '.join(SPLITS)} (aliases: {', '.join(SPLIT_ALIASES)})")
    return split


def load_gencos_profiles(
    case: CaseData,
    split: str = "train",
    ood_axis: str | None = None,
    *,
    loader: DataLoader | None = None,
    source: str | None = None,
) -> Float[np.ndarray, "T n_loads"]:
    """Load profiles of a GenCos split (host NumPy, float64).

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `split`: data split; an OOD split implies its own axis on the iid window.
    - `ood_axis`: `demand_shift` / `renewable_shock` (or an alias) applies that OOD factor.
    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.
    - `source`: `None` takes `"gb"` when `loader` knows GB files, else the shipped England
      & Wales demand.

    **Returns:**

    A `(T, n_loads)` array [MW].
    """
    split = _canonical_split(split)
    axis = split if split in OOD_FACTORS else None
    if ood_axis is not None:
        axis = _canonical_split(ood_axis)
        if axis not in OOD_FACTORS:
            raise ValueError(f"ood_axis must be one of {', '.join(OOD_FACTORS)} (or None), got {ood_axis!r}")
    loader = DataLoader() if loader is None else loader
    if source is None:
        source = "gb" if "gb" in loader.list_sources() else FALLBACK_SOURCE
    window = "iid" if split in OOD_FACTORS else split
    series = loader.load_signals([LOAD_ACTUAL_MW], source=source, split=window, resample="30min").values[:, 0]
    low, high = float(np.min(series)), float(np.max(series))
    if not high > low:
        raise ValueError(f"load_gencos_profiles: the {source!r} {window} demand is constant; cannot min-max scale it")
    unit = (np.asarray(series, np.float64) - low) / (high - low)
    d_min, d_max = np.asarray(case.load_d_min, np.float64), np.asarray(case.load_d_max, np.float64)
    profiles = d_min[None, :] + unit[:, None] * (d_max - d_min)[None, :]
    if axis is not None:
        profiles = profiles * OOD_FACTORS[axis]
    # Keep every row servable: totals inside the fleet's range, spatial mix unchanged.
    lo = float(np.sum(case.unit_p_min)) + 1.0
    hi = float(np.sum(case.unit_p_max)) - 1.0
    totals = profiles.sum(axis=1)
    mix = np.where(totals[:, None] > 0, profiles / np.maximum(totals, 1e-12)[:, None], (d_max / max(d_max.sum(), 1e-12))[None, :])
    return mix * np.clip(totals, lo, hi)[:, None]


class GenCosJointEnv(Environment):
    """The GenCos market as one env with a joint action, so it runs on the one rollout kernel.

    Observation `(n_units, 8 + lmp_history_len)` (one row per agent), action
    `(n_units · n_segments,)` markups in [-1, 1], reward the market's total realised profit
    [$] (per-agent profits in `info["unit_profit"]`), cost `thermal_overload` (diagnostic).
    """

    def observation_space(self, params: MarketMARLParams) -> Box:
        shape = (params.offer_sced_setup.n_units, 8 + params.lmp_history_len)
        return make_box(-float("inf"), float("inf"), shape)

    def action_space(self, params: MarketMARLParams) -> Box:
        setup = params.offer_sced_setup
        return make_box(-1.0, 1.0, (setup.n_units * setup.n_segments,))

    def constraint_names(self, params: MarketMARLParams) -> tuple[str, ...]:
        return ("thermal_overload",)

    def physics_invariants(self, params: MarketMARLParams) -> tuple[Invariant, ...]:
        # OPTIMAL rounds: supply = demand, units inside their ramp windows, one price uncongested.
        return gencos_laws(params)

    def observe(self, state: MarketMARLState, params: MarketMARLParams) -> Float[Array, "n_agents obs_dim"]:
        return market_marl_observations(state, params)

    def action_layout(self, params: MarketMARLParams) -> str:
        return "(n_units · n_segments,)"

    def reset_env(self, key: Key, params: MarketMARLParams) -> tuple[Float[Array, "n_agents obs_dim"], MarketMARLState]:
        state = market_marl_reset(key, params)
        return market_marl_observations(state, params), state

    def step_env(
        self, key: Key, state: MarketMARLState, action: Float[Array, " n_actions"], params: MarketMARLParams
    ) -> tuple[Float[Array, "n_agents obs_dim"], MarketMARLState, Float[Array, ""], Float[Array, "1"], Bool[Array, ""], Info]:
        next_state, done, profit, info = market_marl_transition(key, state, action, params)
        costs = jnp.stack([info["cost_thermal_overload"]]).astype(jnp.float32)
        info = {**info, "unit_profit": profit}
        return market_marl_observations(next_state, params), next_state, jnp.sum(profit, axis=-1), costs, done, info


class GenCosTask:
    """The GenCos task: `make_env(split)` → `(GenCosJointEnv(), params)`.

    **Arguments:**

    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.
    - `source`: dataset of the load profiles; `None` picks GB when the loader has it.
    - `max_steps`: episode length [steps].
    - `case_id`: `"5"` (the reference's five-unit market) or `"29gb"` (66 units with fuel
      types and unit-commitment ramps).
    """

    task_name = "gencos"
    default_splits = SPLITS

    def __init__(
        self, loader: DataLoader | None = None, source: str | None = None, max_steps: int = 48, case_id: str = CASE_ID
    ):
        if case_id not in MARKET_CASE_IDS:
            raise ValueError(f"GenCosTask: case_id must be one of {MARKET_CASE_IDS}, got {case_id!r}")
        self.loader = loader
        self.source = source
        self.max_steps = int(max_steps)
        self.case_id = case_id
        self.case = load_case(case_id)
        self._params: dict[str, MarketMARLParams] = {}

    def params(self, split: str = "train") -> MarketMARLParams:
        """The split's (cached) [`MarketMARLParams`][powerzoojax.market.MarketMARLParams].

        **Arguments:**

        - `split`: data split.

        **Returns:**

        [`MarketMARLParams`][powerzoojax.market.MarketMARLParams].
        """
        split = _canonical_split(split)
        if split not in self._params:
            profiles = load_gencos_profiles(self.case, split, loader=self.loader, source=self.source)
            self._params[split] = make_market_marl_params(self.case, profiles, max_steps=self.max_steps)
        return self._params[split]

    def make_env(self, split: str = "train") -> tuple[GenCosJointEnv, MarketMARLParams]:
        return GenCosJointEnv(), self.params(split)

    def episode_params(
        self, split: str, episode_idx: int, n_episodes: int, max_steps: int, *, strategy: str = "uniform", seed: int = 0
    ) -> MarketMARLParams:
        # MARL: the whole window is the episode-start pool, drawn at reset; params are fixed.
        if strategy not in ("uniform", "seeded"):
            raise ValueError(f"strategy must be 'uniform' or 'seeded', got {strategy!r}")
        return self.params(split)

    def rollout(self, env: GenCosJointEnv, params: MarketMARLParams, key: Key, policy_fn: Callable[..., Any]) -> EpisodeTrace:
        """One episode; `policy_fn(obs (U, obs_dim), state, key) -> action (U·K,)` or `(U, K)`."""

        def policy(obs: Any, state: Any, k: Key) -> Any:
            return jnp.reshape(policy_fn(obs, state, k), (-1,))

        return _episode(env, params, key, policy)

    def baseline_rollout(self, env: GenCosJointEnv, params: MarketMARLParams, key: Key, name: str) -> EpisodeTrace:
        """`truthful` (−1, also `no_control`), `uniform_mid` (0), `max_markup` (+1) as fixed actions."""
        name = "truthful" if name == "no_control" else name
        if name not in BASELINE_ACTIONS:
            raise ValueError(f"Unknown GenCos baseline {name!r}; valid: {', '.join(self.baseline_names())}, no_control")
        return _baseline_episode(env, params, key, jnp.asarray(BASELINE_ACTIONS[name], jnp.float32))

    def baseline_names(self) -> tuple[str, ...]:
        return tuple(BASELINE_ACTIONS)

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout: EpisodeTrace | None = None) -> dict[str, float]:
        """Per-episode sums averaged over any leading episode axes (T on the last axis of `reward`)."""
        info = agent_rollout.info
        profit = np.asarray(info["unit_profit"], np.float64)  # (..., T, U)
        lmp = np.asarray(info["lmp"], np.float64)  # (..., T, N)
        power = np.asarray(info["unit_power"], np.float64)  # (..., T, U)
        episode_profit = profit.sum(axis=-2)  # (..., U)
        mean_lmp_t = lmp.mean(axis=-1)  # (..., T)
        cv = mean_lmp_t.std(axis=-1) / np.maximum(np.abs(mean_lmp_t.mean(axis=-1)), 1e-9)
        share = power / np.maximum(power.sum(axis=-1, keepdims=True), 1e-9)
        metrics = {
            "total_profit": float(episode_profit.sum(axis=-1).mean()),
            "mean_profit_per_agent": float(episode_profit.mean()),
            "total_gen_cost": float(np.asarray(info["gen_cost"], np.float64).sum(axis=-1).mean()),
            "mean_lmp": float(lmp.mean()),
            "price_volatility": float(np.mean(cv)),
            "hhi": float(np.mean(np.sum(share**2, axis=-1))),
            "sced_convergence_rate": float(np.mean(np.asarray(info["sced_converged"], np.float64))),
            "ramp_binding_rate": float(np.mean(np.asarray(info["ramp_binding_rate"], np.float64))),
        }
        metrics.update(fuel_dispatch_shares(self.case, power))
        if baseline_rollout is not None:
            base = float(np.asarray(baseline_rollout.info["unit_profit"], np.float64).sum(axis=(-1, -2)).mean())
            metrics["profit_vs_baseline"] = metrics["total_profit"] - base
        return metrics

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("thermal_overload",), (0.0,), (1.0,))


@functools.partial(jax.jit, static_argnums=(0, 3))
def _episode(env: GenCosJointEnv, params: MarketMARLParams, key: Key, policy: Callable[..., Any]) -> EpisodeTrace:
    return episode_rollout(env, params, key, policy)


@functools.partial(jax.jit, static_argnums=0)
def _baseline_episode(env: GenCosJointEnv, params: MarketMARLParams, key: Key, value: Float[Array, ""]) -> EpisodeTrace:
    """A constant action `value` for every segment of every agent (one compile for all baselines)."""
    n_actions = params.offer_sced_setup.n_units * params.offer_sced_setup.n_segments
    return episode_rollout(env, params, key, lambda obs, state, k: jnp.full((n_actions,), value, jnp.float32))


# ----------------------------------------------------------------------------- reference API
# Factories, rollouts over the dict-per-agent MarketMARLEnv (pzj-rl) and the metrics of
# their records. GenCosTask above runs the same market through GenCosJointEnv.

GencosTask = GenCosTask


def make_gencos_params(
    case: CaseData, load_profiles: Any, n_segments: int = 3, max_markup: float = 2.0, max_steps: int = 48
) -> MarketMARLParams:
    """[`make_market_marl_params`][powerzoojax.market.make_market_marl_params] with the GenCos
    defaults named.

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `load_profiles`: `(T, n_loads)` loads [MW] (every row a possible episode start).
    - `n_segments`: offer segments per unit.
    - `max_markup`: largest markup [multiple of the truthful price].
    - `max_steps`: half-hour rounds per episode.

    **Returns:**

    [`MarketMARLParams`][powerzoojax.market.MarketMARLParams].
    """
    return make_market_marl_params(case, load_profiles, n_segments=n_segments, max_markup=max_markup, max_steps=max_steps)


def _market_marl_env_class() -> Any:
    # The adapter lives one layer up (pzj-rl): reached at call time, never imported here.
    return import_provider("powerzoojax.rl", "MarketMARLEnv", "pzj-rl").MarketMARLEnv


def make_gencos_env(
    case: CaseData, load_profiles: Any, n_segments: int = 3, max_markup: float = 2.0, max_steps: int = 48
) -> tuple[Any, MarketMARLParams]:
    """The GenCos env: one agent per unit (`genco_i`), ready for IPPO or
    [`rollout_gencos`][powerzoojax.market.tasks.gencos.rollout_gencos].

    **Arguments:**

    - `case`, `load_profiles`, `n_segments`, `max_markup`, `max_steps`: as for
      [`make_gencos_params`][powerzoojax.market.tasks.gencos.make_gencos_params].

    **Returns:**

    `(MarketMARLEnv(params), params)`.
    """
    params = make_gencos_params(case, load_profiles, n_segments, max_markup, max_steps)
    return _market_marl_env_class()(params), params


_BASELINE_ALIASES = {"zero_markup": "truthful", "uniform_markup": "uniform_mid"}


def rollout_gencos(env_marl: Any, key: Key, policy_fn: Callable[[dict[str, Array]], Any]) -> dict[str, Any]:
    """One episode of a `MarketMARLEnv` (its bound params).

    **Arguments:**

    - `env_marl`: the multi-agent env.
    - `key`: PRNG key.
    - `policy_fn`: `policy(obs_dict) -> actions` (a dict by agent or the stacked `(U, K)`
      array; traced, so JAX ops only).

    **Returns:**

    `{"profits": {agent: (T,)}, "gen_cost" (T,), "lmp" (T, N), "unit_power" (T, U),
    "sced_converged" (T,), "ramp_binding_rate" (T,)}` as NumPy arrays.
    """
    from powerzoojax.core import rollout

    agents = env_marl.agent_names
    obs0, state0 = env_marl.reset_arrays(key)

    def policy(k: Key, obs: Array, x: Any) -> tuple[Array, tuple]:
        return env_marl.stack(policy_fn(env_marl.unstack(obs))), ()

    @jax.jit
    def run(k: Key, s: Any, o: Array) -> Any:
        _, _, (_, rewards, _, info, _) = rollout(
            env_marl.step_arrays, jax.random.split(k)[1], s, length=env_marl.max_steps, policy=policy, init_obs=o,
        )
        return rewards, info

    rewards, info = jax.device_get(run(key, state0, obs0))
    return {
        "profits": {a: np.asarray(rewards[:, i]) for i, a in enumerate(agents)},
        "gen_cost": np.asarray(info["gen_cost"]),
        "lmp": np.asarray(info["lmp"]),
        "unit_power": np.asarray(info["unit_power"]),
        "sced_converged": np.asarray(info["sced_converged"]),
        "ramp_binding_rate": np.asarray(info["ramp_binding_rate"]),
    }


def rollout_gencos_baseline(env_marl: Any, key: Key, strategy: str = "truthful") -> dict[str, Any]:
    """[`rollout_gencos`][powerzoojax.market.tasks.gencos.rollout_gencos] with every agent
    bidding a fixed markup.

    **Arguments:**

    - `env_marl`: the multi-agent env.
    - `key`: PRNG key.
    - `strategy`: `truthful` (true segment costs), `uniform_mid` (mid markup) or
      `max_markup`; `zero_markup` / `uniform_markup` are aliases of the first two.

    **Returns:**

    The [`rollout_gencos`][powerzoojax.market.tasks.gencos.rollout_gencos] record.
    """
    name = _BASELINE_ALIASES.get(strategy, strategy)
    if name not in BASELINE_ACTIONS:
        raise ValueError(f"unknown GenCos strategy {strategy!r}; valid: {', '.join(BASELINE_ACTIONS)}")
    action = jnp.full((env_marl.num_agents, env_marl.action_dim), BASELINE_ACTIONS[name], jnp.float32)
    return rollout_gencos(env_marl, key, lambda obs: action)


def compute_gencos_metrics(rollout: dict[str, Any], agent_names: list[str]) -> dict[str, float]:
    """Market metrics of one [`rollout_gencos`][powerzoojax.market.tasks.gencos.rollout_gencos]
    record.

    **Arguments:**

    - `rollout`: the record.
    - `agent_names`: the agents whose profit is summed.

    **Returns:**

    `{"total_profit" [$], "mean_profit_per_agent", "total_gen_cost", "mean_lmp",
    "price_volatility" (coefficient of variation of the mean-LMP series), "hhi" (mean
    Σ dispatch share²), "sced_convergence_rate", "ramp_binding_rate"}`.
    """
    profits = rollout["profits"]
    total = float(sum(float(np.sum(profits[a])) for a in agent_names))
    lmp = np.asarray(rollout["lmp"], np.float64)
    power = np.asarray(rollout["unit_power"], np.float64)
    mean_lmp_t = lmp.mean(axis=-1)
    share = power / (power.sum(axis=-1, keepdims=True) + 1e-8)
    return {
        "total_profit": total,
        "mean_profit_per_agent": total / max(len(agent_names), 1),
        "total_gen_cost": float(np.sum(rollout["gen_cost"])),
        "mean_lmp": float(lmp.mean()),
        "price_volatility": float(mean_lmp_t.std() / (mean_lmp_t.mean() + 1e-8)),
        "hhi": float(np.mean(np.sum(share**2, axis=-1))),
        "sced_convergence_rate": float(np.mean(rollout["sced_converged"])),
        "ramp_binding_rate": float(np.mean(rollout["ramp_binding_rate"])),
    }


__all__ = [
    "CASE_ID", "FALLBACK_SOURCE", "FUEL_NAMES", "MARKET_CASE_IDS", "fuel_dispatch_shares", "OOD_FACTORS", "SPLITS", "SPLIT_ALIASES", "GenCosJointEnv", "GenCosTask",
    "GencosTask", "compute_gencos_metrics", "load_gencos_profiles", "make_gencos_env", "make_gencos_params",
    "rollout_gencos", "rollout_gencos_baseline",
]
