"""Cost-based market: battery arbitrage when every unit offers its true marginal cost."""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from powerzoojax.case import CaseData
from powerzoojax.core import Box, make_box, time_features
from powerzoojax.core._types import Info, Key
from powerzoojax.market._market_env import AbstractMarketEnv, MarketParams, MarketState, build_market_params
from powerzoojax.market._offer_sced import OfferSCEDResult


def make_cost_market_params(
    case: CaseData,
    load_profiles: ArrayLike | None = None,
    lmp_scale: float = 100.0,
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    steps_per_day: int = 48,
    cost_thermal_weight: float = 1.0,
    n_segments: int = 3,
    battery_bus: int = 1,
    battery_power_mw: float = 50.0,
    battery_energy_mwh: float = 200.0,
    battery_efficiency: tuple[float, float] = (0.95, 0.95),
    battery_soc_range: tuple[float, float] = (0.1, 0.9),
    battery_soc_init: float = 0.5,
) -> MarketParams:
    """Params of [`CostBasedMarketEnv`][powerzoojax.market.CostBasedMarketEnv].

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `load_profiles`: `(T, n_loads)` loads [MW]; `None` takes a flat nominal profile.
    - `lmp_scale`: price normaliser of the observation [$/MWh].
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `cost_thermal_weight`: weight of the thermal overload in the reward.
    - `n_segments`: offer segments per unit.
    - `battery_bus`: the case's bus number of the agent's battery (not a 0-based index).
    - `battery_power_mw`, `battery_energy_mwh`: battery rating [MW] and capacity [MWh].
    - `battery_efficiency`: `(charge, discharge)` one-way efficiencies.
    - `battery_soc_range`: `(soc_min, soc_max)` [fraction].
    - `battery_soc_init`: SOC at reset [fraction].

    **Returns:**

    [`MarketParams`][powerzoojax.market.MarketParams]. Raises `ValueError` naming a bad
    value.
    """
    return build_market_params(
        "make_cost_market_params", case, load_profiles, n_segments=n_segments, markup_std=0.0,
        lmp_scale=lmp_scale, max_steps=max_steps, delta_t_hours=delta_t_hours, steps_per_day=steps_per_day,
        cost_thermal_weight=cost_thermal_weight, battery_bus=battery_bus, battery_power_mw=battery_power_mw,
        battery_energy_mwh=battery_energy_mwh, battery_efficiency=battery_efficiency,
        battery_soc_range=battery_soc_range, battery_soc_init=battery_soc_init,
    )


class CostBasedMarketEnv(AbstractMarketEnv):
    """Storage arbitrage under cost-reflective SCED clearing.

    Observation `(5,)` float32, unbounded: `LMP at the battery bus / lmp_scale` · `sin φ,
    cos φ` of the time of day · `total load / Σ p_max` (the load the next action meets) ·
    battery state of charge [fraction].
    Action `(1,)` in [-1, 1] (clipped): battery power as a fraction of its rating, > 0
    discharges into the grid.
    Reward `LMP[bus] · P · Δt` [$]: what the market pays (or charges) the battery.
    Costs `thermal_overload`: Σ MW beyond line limits × `cost_thermal_weight` (nonzero only
    when the SCED cannot meet the limits: status `UNCONVERGED`).
    Termination: `done` when `time_step + 1 >= max_steps`; auto-resets inside `step`.

    Clearing: the net load (profile row `t mod T` minus the battery's injection) is cleared
    by the exact SCED on K-segment truthful offers (for quadratic costs a piecewise-linear
    approximation of the reference's DC-OPF; exact for case 5, whose marginal costs are flat).
    """
    def observation_space(self, params: MarketParams) -> Box:
        return make_box(-float("inf"), float("inf"), (5,))

    def _episode_offers(self, key: Key, params: MarketParams) -> Float[Array, "n_units n_segments"]:
        # Deterministic reset: the key is unused, so XLA hoists the reset out of rollouts.
        return params.sced_setup.base_seg_prices

    def _obs(self, state: MarketState, params: MarketParams) -> Float[Array, " obs_dim"]:
        load = jnp.sum(self._node_load(state.time_step, params))
        lmp = state.lmp[params.battery_node_idx] / params.lmp_scale
        return jnp.concatenate(
            [
                lmp[None],
                time_features(state.time_step, params.steps_per_day),
                (load * params.inv_total_capacity)[None],
                state.battery_soc[None],
            ]
        )

    def _extra_info(self, cleared: OfferSCEDResult, params: MarketParams) -> Info:
        return {"opf_converged": cleared.converged}


# Reference names of the same env (its LMP-arbitrage alias).
SimpleLMPArbitrageEnv = CostBasedMarketEnv
LMPMarketState = MarketState
LMPMarketParams = MarketParams
make_lmp_market_params = make_cost_market_params
