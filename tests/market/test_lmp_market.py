"""The reference's LMP-arbitrage names: SimpleLMPArbitrageEnv is the cost-based SCED market."""

import importlib
import sys

import pytest


def test_lmp_market_names_are_the_cost_based_env():
    import powerzoojax.envs as envs
    from powerzoojax.market import CostBasedMarketEnv, MarketParams, MarketState, make_cost_market_params

    assert envs.SimpleLMPArbitrageEnv is CostBasedMarketEnv
    assert envs.LMPMarketState is MarketState and envs.LMPMarketParams is MarketParams
    assert envs.make_lmp_market_params is make_cost_market_params


def test_deprecated_module_warns_and_reexports():
    sys.modules.pop("powerzoojax.market.lmp_market", None)
    with pytest.warns(DeprecationWarning, match="lmp_market is deprecated"):
        shim = importlib.import_module("powerzoojax.market.lmp_market")
    from powerzoojax.market import SimpleLMPArbitrageEnv

    assert shim.SimpleLMPArbitrageEnv is SimpleLMPArbitrageEnv
