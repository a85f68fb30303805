"""GenCos market core: shapes, ramp coupling, truthful = cost-based dispatch, baselines."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def marl(case5):
    from powerzoojax.market import make_market_marl_params

    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    profiles = nominal[None, :] * np.linspace(0.7, 1.2, 8)[:, None]
    return make_market_marl_params(case5, profiles, max_steps=4)


def test_baselines_on_the_rollout_kernel(marl):
    import jax
    import jax.random as jr

    from powerzoojax.market import run_market_baseline

    run = jax.jit(run_market_baseline, static_argnums=(0, 3))
    totals = {}
    for name in ("truthful", "max_markup"):
        state, rewards, dones, info = run(name, jr.PRNGKey(0), marl, 5)
        assert rewards.shape == (5, 5) and dones.shape == (5,)
        assert np.array_equal(np.asarray(dones), [False, False, False, True, False])
        assert np.all(np.isfinite(np.asarray(rewards)))
        p, p_prev = np.asarray(info["unit_power"])[1:4], np.asarray(info["unit_power"])[0:3]
        # Ramp coupling: no unit moves more than its ramp limit between rounds of an episode.
        assert np.all(np.abs(p - p_prev) <= np.asarray(marl.ramp_up_mw_per_step) + 1e-2)
        totals[name] = float(np.sum(np.asarray(rewards)))
    # Marking every offer up cannot lower the market's total profit.
    assert totals["max_markup"] >= totals["truthful"] - 1e-3


def test_truthful_bids_give_the_cost_based_dispatch(marl):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.market import market_marl_observations, market_marl_reset, market_marl_step, offer_sced

    state = jax.jit(market_marl_reset)(jr.PRNGKey(3), marl)
    obs = market_marl_observations(state, marl)
    assert obs.shape == (5, 8 + marl.lmp_history_len)
    truthful = -jnp.ones(15)
    _, _, reward, info = jax.jit(market_marl_step)(jr.PRNGKey(4), state, truthful, marl)
    setup = marl.offer_sced_setup
    row = int(state.episode_start_idx) % marl.load_profiles.shape[0]
    load = marl.nodes_loads_map @ marl.load_profiles[row]
    lo = jnp.maximum(setup.p_min, state.unit_power_mw - marl.ramp_down_mw_per_step)
    hi = jnp.minimum(setup.p_max, state.unit_power_mw + marl.ramp_up_mw_per_step)
    ref = jax.jit(offer_sced)(setup, load, setup.base_seg_prices, lo, hi)
    np.testing.assert_allclose(float(info["offer_cost"]), float(ref.offer_cost) * marl.delta_t_hours, rtol=1e-4)
    assert reward.shape == (5,)


def test_bad_params_are_rejected(case5):
    from powerzoojax.market import make_market_marl_params

    with pytest.raises(ValueError, match="load_profiles must be"):
        make_market_marl_params(case5, np.zeros((4, 3)))
