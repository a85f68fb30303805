"""CostBasedMarketEnv and BidBasedMarketEnv: the env contract, retracing, economics, errors."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def cost_env(case5):
    from powerzoojax.market import CostBasedMarketEnv, make_cost_market_params

    return CostBasedMarketEnv(), make_cost_market_params(case5, max_steps=6)


@pytest.fixture(scope="module")
def bid_env(case5):
    from powerzoojax.market import BidBasedMarketEnv, make_bid_market_params

    return BidBasedMarketEnv(), make_bid_market_params(case5, max_steps=6, n_segments=3)


# The bid env shares all machinery but offers and obs with the cost env; its eager
# conformance pass (an interior point run op by op) costs a minute, so it runs with -m slow.
@pytest.mark.parametrize("which", ["cost_env", pytest.param("bid_env", marks=pytest.mark.slow)])
def test_env_api(which, request):
    from powerzoojax.testing import check_env_api

    env, params = request.getfixturevalue(which)
    check_env_api(env, params, stochastic=False)


@pytest.mark.parametrize("which", ["cost_env", "bid_env"])
def test_no_retrace(which, request):
    from powerzoojax.testing import check_no_retrace

    env, params = request.getfixturevalue(which)
    check_no_retrace(env, params, n_episodes=1)


def test_bid_offers_are_marked_up_and_increasing(bid_env):
    import jax
    import jax.random as jr

    env, params = bid_env
    _, state = jax.jit(env.reset)(jr.PRNGKey(5), params)
    offers, base = np.asarray(state.offer_prices), np.asarray(params.sced_setup.base_seg_prices)
    assert np.all(offers >= base - 1e-5) and np.all(np.diff(offers, axis=1) >= 0.01 - 1e-4)


def test_battery_bus_must_exist(case5):
    from powerzoojax.market import make_cost_market_params

    with pytest.raises(ValueError, match="battery_bus 9 is not a bus of the case"):
        make_cost_market_params(case5, battery_bus=9)
