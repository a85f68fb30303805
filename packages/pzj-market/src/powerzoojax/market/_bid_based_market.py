"""Bid-based market: battery arbitrage when units mark their offers up at random."""

import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, ArrayLike, Float

from powerzoojax.case import CaseData
from powerzoojax.core import Box, make_box, time_features
from powerzoojax.core._types import Info, Key
from powerzoojax.market._market_env import AbstractMarketEnv, MarketParams, MarketState, build_market_params
from powerzoojax.market._offer_sced import OfferSCEDResult
from powerzoojax.market._segments import MONOTONE_STEP

OBS_LOW = (-5.0, -1.0, -1.0, 0.0, 0.0, 0.0)
OBS_HIGH = (5.0, 1.0, 1.0, 2.0, 5.0, 1.0)


def make_bid_market_params(
    case: CaseData,
    load_profiles: ArrayLike | None = None,
    lmp_scale: float = 100.0,
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    steps_per_day: int = 48,
    cost_thermal_weight: float = 1.0,
    n_segments: int = 5,
    markup_std: float = 0.05,
    battery_bus: int = 1,
    battery_power_mw: float = 50.0,
    battery_energy_mwh: float = 200.0,
    battery_efficiency: tuple[float, float] = (0.95, 0.95),
    battery_soc_range: tuple[float, float] = (0.1, 0.9),
    battery_soc_init: float = 0.5,
) -> MarketParams:
    """Params of [`BidBasedMarketEnv`][powerzoojax.market.BidBasedMarketEnv]: as
    [`make_cost_market_params`][powerzoojax.market.make_cost_market_params] plus the rivals'
    markup noise.

    **Arguments:**

    - `case`, `load_profiles`, `lmp_scale`, `max_steps`, `delta_t_hours`, `steps_per_day`,
      `cost_thermal_weight`, `n_segments`, `battery_bus`, `battery_power_mw`,
      `battery_energy_mwh`, `battery_efficiency`, `battery_soc_range`,
      `battery_soc_init`: as for `make_cost_market_params`.
    - `markup_std`: standard deviation of the other units' random markups [fraction of
      the truthful price].

    **Returns:**

    [`MarketParams`][powerzoojax.market.MarketParams].
    """
    return build_market_params(
        "make_bid_market_params", case, load_profiles, n_segments=n_segments, markup_std=markup_std,
        lmp_scale=lmp_scale, max_steps=max_steps, delta_t_hours=delta_t_hours, steps_per_day=steps_per_day,
        cost_thermal_weight=cost_thermal_weight, battery_bus=battery_bus, battery_power_mw=battery_power_mw,
        battery_energy_mwh=battery_energy_mwh, battery_efficiency=battery_efficiency,
        battery_soc_range=battery_soc_range, battery_soc_init=battery_soc_init,
    )


class BidBasedMarketEnv(AbstractMarketEnv):
    """Storage arbitrage under strategic (marked-up) offers.

    Observation `(6,)` float32 in `[-5, -1, -1, 0, 0, 0] .. [5, 1, 1, 2, 5, 1]` (clipped):
    `LMP at the battery bus / lmp_scale` · `sin φ, cos φ` · `total load / Σ p_max` ·
    width-weighted mean offer price `/ lmp_scale` · battery state of charge [fraction].
    Action, reward, costs and termination as [`CostBasedMarketEnv`][powerzoojax.market.CostBasedMarketEnv].

    Offers: at each reset every segment price is `truthful · (1 + |N(0, markup_std)|)`
    (upward only), made increasing per unit (+0.01 $/MWh), and fixed for the episode. The
    market clears them exactly (SCED); `info["true_cost"]` is the true generation cost of
    the dispatch, `info["offer_cost"]` what the accepted offers ask.
    """
    def observation_space(self, params: MarketParams) -> Box:
        return make_box(jnp.asarray(OBS_LOW), jnp.asarray(OBS_HIGH), (6,))

    def _episode_offers(self, key: Key, params: MarketParams) -> Float[Array, "n_units n_segments"]:
        base = params.sced_setup.base_seg_prices
        markup = jnp.abs(jr.normal(key, base.shape)) * params.markup_std
        offers = base * (1.0 + markup)
        columns = [offers[:, 0]]
        for k in range(1, base.shape[1]):
            columns.append(jnp.maximum(offers[:, k], columns[-1] + MONOTONE_STEP))
        return jnp.stack(columns, axis=1)

    def _obs(self, state: MarketState, params: MarketParams) -> Float[Array, " obs_dim"]:
        load = jnp.sum(self._node_load(state.time_step, params))
        widths = params.sced_setup.base_seg_widths
        mean_offer = jnp.sum(widths * state.offer_prices) / jnp.maximum(jnp.sum(widths), 1e-6)
        obs = jnp.concatenate(
            [
                (state.lmp[params.battery_node_idx] / params.lmp_scale)[None],
                time_features(state.time_step, params.steps_per_day),
                (load * params.inv_total_capacity)[None],
                (mean_offer / params.lmp_scale)[None],
                state.battery_soc[None],
            ]
        )
        return jnp.clip(obs, jnp.asarray(OBS_LOW), jnp.asarray(OBS_HIGH))

    def _extra_info(self, cleared: OfferSCEDResult, params: MarketParams) -> Info:
        return {
            "true_cost": cleared.total_cost * params.delta_t_hours,
            "cost_model": jnp.asarray(1.0, jnp.float32),
            "ed_converged": cleared.converged,
        }
