"""Deprecated module name of the LMP-arbitrage market env (the reference's `lmp_market`).

`SimpleLMPArbitrageEnv` is [`CostBasedMarketEnv`][powerzoojax.market.CostBasedMarketEnv]: a battery
trading against LMPs cleared by the exact SCED on truthful offers. Import these names from
`powerzoojax.market` (or `powerzoojax.envs`); importing this module warns.
"""

import warnings

from powerzoojax.market._cost_based_market import (
    LMPMarketParams,
    LMPMarketState,
    SimpleLMPArbitrageEnv,
    make_lmp_market_params,
)

warnings.warn(
    "powerzoojax.market.lmp_market is deprecated; import SimpleLMPArbitrageEnv, LMPMarketState, "
    "LMPMarketParams and make_lmp_market_params from powerzoojax.market (they are CostBasedMarketEnv, "
    "MarketState, MarketParams and make_cost_market_params)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["LMPMarketParams", "LMPMarketState", "SimpleLMPArbitrageEnv", "make_lmp_market_params"]
