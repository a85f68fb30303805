"""Electricity markets (pzj-market): in-graph clearing kernels and market environments.

Clearing: [`make_cost_segments`][powerzoojax.market.make_cost_segments] (truthful offer curves), [`offer_sced`][powerzoojax.market.offer_sced] (exact
offer-based SCED with PTDF line limits and ramp bounds, a bounded dual simplex in the
graph, LMPs from the optimal basis) and [`piecewise_ed`][powerzoojax.market.piecewise_ed] (the same
clearing under the reference's bid-based interface).
"""

from powerzoojax.market._bid_based_market import BidBasedMarketEnv, make_bid_market_params
from powerzoojax.market._clearing import (
    PiecewiseEDResult,
    PiecewiseEDSetup,
    piecewise_ed,
    prepare_piecewise_ed,
)
from powerzoojax.market._cost_based_market import (
    CostBasedMarketEnv,
    LMPMarketParams,
    LMPMarketState,
    SimpleLMPArbitrageEnv,
    make_cost_market_params,
    make_lmp_market_params,
)
from powerzoojax.market._market_marl import (
    BASELINE_ACTIONS,
    MarketMARLParams,
    MarketMARLState,
    make_market_marl_params,
    market_marl_observations,
    market_marl_reset,
    market_marl_step,
    run_market_baseline,
)
from powerzoojax.market._market_env import AbstractMarketEnv, MarketParams, MarketState
from powerzoojax.market._offer_sced import (
    OfferSCEDResult,
    OfferSCEDSetup,
    offer_sced,
    prepare_offer_sced,
)
from powerzoojax.market._segments import CostSegments, make_cost_segments, merit_order_fill

__all__ = [
    "BASELINE_ACTIONS", "MarketMARLParams", "MarketMARLState", "make_market_marl_params",
    "market_marl_observations", "market_marl_reset", "market_marl_step", "run_market_baseline",
    "AbstractMarketEnv", "BidBasedMarketEnv", "CostBasedMarketEnv", "LMPMarketParams", "LMPMarketState",
    "MarketParams", "MarketState", "SimpleLMPArbitrageEnv", "make_bid_market_params",
    "make_cost_market_params", "make_lmp_market_params",
    "CostSegments", "OfferSCEDResult",
    "OfferSCEDSetup", "PiecewiseEDResult", "PiecewiseEDSetup", "make_cost_segments",
    "merit_order_fill", "offer_sced", "piecewise_ed", "prepare_offer_sced", "prepare_piecewise_ed",
]
