"""Every market env under non-finite actions."""

import numpy as np
import pytest

from non_finite_actions import check_non_finite_actions


def _env(name, case5):
    import powerzoojax.market as market
    from powerzoojax.market.tasks.gencos import GenCosJointEnv, make_gencos_params

    if name == "CostBasedMarketEnv":
        return market.CostBasedMarketEnv(), market.make_cost_market_params(case5, max_steps=3)
    if name == "BidBasedMarketEnv":
        return market.BidBasedMarketEnv(), market.make_bid_market_params(case5, max_steps=3, n_segments=2)
    if name == "SimpleLMPArbitrageEnv":
        return market.SimpleLMPArbitrageEnv(), market.make_lmp_market_params(case5, max_steps=3)
    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    return GenCosJointEnv(), make_gencos_params(case5, np.tile(nominal, (4, 1)), n_segments=2, max_steps=3)


@pytest.mark.parametrize("name", ["CostBasedMarketEnv", "BidBasedMarketEnv", "SimpleLMPArbitrageEnv", "GenCosJointEnv"])
def test_non_finite_actions_are_replaced_and_flagged(name, case5):
    check_non_finite_actions(*_env(name, case5))
