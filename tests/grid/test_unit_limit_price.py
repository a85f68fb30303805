"""`make_trans_params(unit_limit_price=...)`: output outside a unit's limits priced in the
generation cost, against the reference's cost of the realised output."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def _cost(p, case):
    a, b, c = (np.asarray(x, np.float64) for x in (case.unit_cost_a, case.unit_cost_b, case.unit_cost_c))
    return float(np.sum(((a / 3.0) * p + b / 2.0) * p * p + c * p))


@pytest.fixture(scope="module")
def step5(case5):
    from powerzoojax.envs import TransGridEnv, make_trans_params

    env = TransGridEnv()
    reference = make_trans_params(case5, max_steps=4)
    priced = make_trans_params(case5, max_steps=4, unit_limit_price=300.0)
    step = jax.jit(lambda params, a: env.step(jr.PRNGKey(1), env.reset(jr.PRNGKey(0), params)[1], a, params))
    return case5, reference, priced, step


def test_a_slack_unit_past_its_rating_is_charged_the_limit_price(step5):
    case, reference, priced, step = step5
    # All set-points at their minimums: the slack-bus units (bus 1: 40 and 170 MW) take up
    # 750 - 65 MW and run past their ratings.
    action = -jnp.ones(5)
    _, s_ref, r_ref, c_ref, _, info_ref = step(reference, action)
    _, s_pr, r_pr, c_pr, _, info_pr = step(priced, action)
    p = np.asarray(s_ref.unit_power_mw, np.float64)
    p_min, p_max = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    outside = float(np.sum(np.maximum(p - p_max, 0) + np.maximum(p_min - p, 0)))
    assert outside > 100.0  # the dispatch does break the limits
    np.testing.assert_allclose(float(info_ref["gen_cost"]), _cost(p, case), rtol=1e-5)
    np.testing.assert_allclose(float(info_pr["gen_cost"]), _cost(np.clip(p, p_min, p_max), case) + 300.0 * outside, rtol=1e-5)
    assert float(r_pr) == pytest.approx(-0.01 * float(info_pr["gen_cost"]), rel=1e-6)
    # Same physics and the same power-balance channel either way; only the reward differs.
    np.testing.assert_allclose(np.asarray(s_pr.unit_power_mw), p, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c_pr), np.asarray(c_ref), rtol=1e-6)
    assert float(c_pr[2]) == pytest.approx(outside, rel=1e-5)
    assert float(r_pr) < float(r_ref)


def test_within_limits_the_price_changes_nothing(step5):
    _, reference, priced, step = step5
    action = jnp.asarray([0.0, 0.0, -0.5, -0.8, 0.5])  # set-points sum to 741.5 of 750 MW: the slack units stay within limits
    _, _, r_ref, c_ref, _, _ = step(reference, action)
    _, _, r_pr, _, _, _ = step(priced, action)
    assert float(c_ref[2]) == 0.0
    assert float(r_pr) == float(r_ref)


def test_case118_random_actions_no_longer_earn_a_positive_return(case118):
    """The reference's cost of a slack unit far below zero is negative (cubic term): random
    set-points on case 118 earn a positive return. Priced, every return is a cost."""
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

    env = TransGridEnv()
    n_envs, horizon = 8, 6

    def returns(params):
        _, states = batch_reset(env, jr.split(jr.PRNGKey(0), n_envs), params)
        actions = jr.uniform(jr.PRNGKey(1), (n_envs, horizon, case118.n_units), minval=-1.0, maxval=1.0)
        keys = jr.split(jr.PRNGKey(2), n_envs)
        out = jax.jit(jax.vmap(lambda k, s, a: scan_rollout(env, k, s, params, a)))(keys, states, actions)
        return np.asarray(out[2]).sum(axis=1), np.asarray(out[3])[..., 2].sum(axis=1)

    ref_returns, ref_balance = returns(make_trans_params(case118, max_steps=horizon))
    pr_returns, pr_balance = returns(make_trans_params(case118, max_steps=horizon, unit_limit_price=300.0))
    assert np.all(ref_returns > 0), ref_returns  # the exploit the price removes
    assert np.all(pr_returns < 0), pr_returns
    np.testing.assert_allclose(pr_balance, ref_balance, rtol=1e-5)
    assert np.all(pr_balance > 0)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_limit_price_is_refused_with_its_value(case5, bad):
    from powerzoojax.envs import make_trans_params

    with pytest.raises(ValueError, match="unit_limit_price"):
        make_trans_params(case5, unit_limit_price=bad)
