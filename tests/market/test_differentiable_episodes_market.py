"""`jax.grad` of a short episode's return through the rollout kernel for the
cost-based market env (case 5, the agent's battery at bus 1).

Episodes of 3 steps, rollouts of 5 (the boundary falls after step 2); see
`tests/episode_gradients.py` for what is computed. The offer SCED clears at a vertex of
its LP, so the prices are piecewise constant in the loads: the battery's revenue
`price · power` moves with its power at the cleared price, and through its state of
charge the action reaches the observation of later steps.
"""

import functools

import numpy as np
from episode_gradients import episode_gradients, off_diagonal

BOUNDARY = 3


@functools.lru_cache(maxsize=None)
def _gradients():
    from powerzoojax.case import load_case
    from powerzoojax.market import CostBasedMarketEnv, make_cost_market_params

    return episode_gradients(CostBasedMarketEnv(), make_cost_market_params(load_case("5"), max_steps=3))


def test_episode_return_gradient_matches_central_differences():
    g = _gradients()
    assert all(np.all(np.isfinite(x)) for x in g.grad_leaves)
    assert np.asarray(g.dones).tolist() == [False, False, True, False, False]
    assert abs(g.directional) > 1e-6
    np.testing.assert_allclose(g.directional, g.central_difference, rtol=2e-3)


def test_gradients_flow_within_an_episode_and_not_across_its_end():
    g = _gradients()
    jac = g.jac_step.reshape(g.jac_step.shape[0], g.jac_step.shape[1], -1)
    np.testing.assert_array_equal(jac[BOUNDARY:, :BOUNDARY], 0.0)
    for t in range(jac.shape[0]):
        np.testing.assert_array_equal(jac[t, t + 1 :], 0.0)
    assert np.abs(jac[1, 0]).max() > 0.0 and np.abs(jac[4, 3]).max() > 0.0


def test_step_auto_reset_still_stops_every_gradient_through_state():
    g = _gradients()
    jac_auto = g.jac_auto.reshape(g.jac_auto.shape[0], g.jac_auto.shape[1], -1)
    np.testing.assert_array_equal(off_diagonal(jac_auto), 0.0)
    diag = np.arange(jac_auto.shape[0])
    np.testing.assert_allclose(jac_auto[diag, diag], g.jac_step.reshape(jac_auto.shape)[diag, diag], rtol=1e-5, atol=1e-7)
