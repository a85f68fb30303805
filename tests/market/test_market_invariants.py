"""The market envs pass the shipped property tests (drawn keys and actions, the shared
contract and each market's declared laws), and the GenCos laws catch a trajectory that
breaks them."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from powerzoojax.testing import env_property_test, record_trajectory


@functools.lru_cache(maxsize=None)
def _gencos():
    from powerzoojax.case import load_case
    from powerzoojax.market import make_market_marl_params
    from powerzoojax.market.tasks.gencos import GenCosJointEnv

    case = load_case("5")
    d_min, d_max = np.asarray(case.load_d_min, np.float64), np.asarray(case.load_d_max, np.float64)
    # Eight episode starts from light to heavy load; tight ramps so the windows bind.
    profiles = d_min + np.linspace(0.1, 0.9, 8)[:, None] * (d_max - d_min)
    params = make_market_marl_params(case, profiles, max_steps=3, ramp_rate_fraction=0.1)
    return GenCosJointEnv(), params


@env_property_test(_gencos, invalid_actions=True, max_examples=8)
def test_gencos_market(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["market_balance", "ramp_window", "uncongested_single_price"]
    assert (np.asarray(trajectory.info["sced_status"]) == 0).any()  # the laws were exercised


def test_gencos_laws_catch_unserved_demand_and_a_ramp_jump():
    env, params = _gencos()
    n_actions = params.offer_sced_setup.n_units * params.offer_sced_setup.n_segments
    traj, _ = record_trajectory(env, params, jax.random.PRNGKey(0), jnp.zeros((4, n_actions), jnp.float32))
    balance, ramps, one_price = env.physics_invariants(params)
    assert all(law.violations(traj, params) == [] for law in (balance, ramps, one_price))
    power = np.asarray(traj.info["unit_power"])
    short = traj._replace(info={**traj.info, "unit_power": power * 0.9})
    assert balance.violations(short, params)
    # One unit jumps by its whole rating: beyond a ramp of 10 % of p_max per step.
    jump = power.copy()
    jump[:, 0] += float(params.offer_sced_setup.p_max[0])
    assert ramps.violations(traj._replace(info={**traj.info, "unit_power": jump}), params)


def _battery_market(kind):
    from powerzoojax.case import load_case
    from powerzoojax.market import BidBasedMarketEnv, CostBasedMarketEnv, make_bid_market_params, make_cost_market_params

    case = load_case("5")
    if kind == "cost":
        return lambda: (CostBasedMarketEnv(), make_cost_market_params(case, max_steps=4))
    return lambda: (BidBasedMarketEnv(), make_bid_market_params(case, max_steps=4, n_segments=3))


@env_property_test(_battery_market("cost"), max_examples=6)
def test_cost_based_market(env, params, trajectory):
    assert [law.name for law in env.physics_invariants(params)] == ["battery_soc_bounds", "market_balance", "uncongested_single_price"]


@env_property_test(_battery_market("bid"), max_examples=6)
def test_bid_based_market(env, params, trajectory):
    assert (np.asarray(trajectory.info["sced_status"]) == 0).any()
