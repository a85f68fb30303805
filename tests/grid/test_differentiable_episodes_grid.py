"""`jax.grad` of a short episode's return through the rollout kernel, for every
TransGridEnv mode, DistGridEnv (33bw) and UnitCommitmentEnv (case 5: dispatch
preferences as set-points with every unit committed, and the DC-OPF dispatch).

Episodes of 3 steps, rollouts of 5: the boundary falls after step 2. The transmission
envs carry two 20 MW batteries (buses 1 and 3) so that the action moves the loads the
OPF modes dispatch. See `tests/episode_gradients.py` for what is computed.
"""

import functools

import numpy as np
import pytest
from episode_gradients import EPS, episode_gradients, off_diagonal

TRANS_MODES = {"dc": (0, 0), "ac": (1, 0), "dcopf": (0, 1), "dcopf_ac": (1, 1), "acopf": (0, 2)}
ENVS = [*(f"trans_{m}" for m in TRANS_MODES), "dist_33bw", "uc_case5_setpoints", "uc_case5_opf"]
BOUNDARY = 3  # first step of the second episode
# Envs whose return has an exactly zero gradient w.r.t. the actions: unit commitment with
# the DC-OPF dispatch. The commitment intent is thresholded and the dispatch preference
# tilts the OPF's linear costs; at the LP's vertex the dispatch is piecewise constant in
# those costs, so its derivative is zero (the differences jump where the vertex changes).
# The AC-OPF mode is differentiated through ac_opf's KKT rule: at this probe's points its
# float32 solves converge (scaled KKT error 9e-5 < the env's tol 1e-4) and the KKT matrix
# is rank-deficient (units 0 and 1 share bus A with its voltage on its limit, so their
# reactive split is free), which the rule's minimum-norm solve leaves out of the result.
ZERO_BY_DESIGN = ("uc_case5_opf",)


@functools.lru_cache(maxsize=None)
def _gradients(name: str):
    from powerzoojax.case import load_case

    if name.startswith("trans_"):
        from powerzoojax.grid import TransGridEnv, make_trans_params
        from powerzoojax.grid.resources import make_battery_bundle

        physics, solver = TRANS_MODES[name.removeprefix("trans_")]
        case = load_case("5")
        batteries = make_battery_bundle(case, (1, 3), power_mw=20.0, energy_mwh=50.0)
        params = make_trans_params(case, max_steps=3, physics=physics, solver_mode=solver, resources=(batteries,))
        # The AC-OPF's float32 interior point stops at a KKT tolerance, so each return it
        # gives carries round-off of about 1e-6 relative that moves with the compiled
        # program: at ε = 1e-2 that is up to 2e-3 of this difference quotient (measured
        # 7e-4 and 2.1e-3 in two programs), at ε = 3e-2 a third of it, while the
        # truncation error stays at 5e-5 (ε = 5e-2 already shows 1.8e-3 of curvature).
        return episode_gradients(TransGridEnv(), params, eps=3e-2 if name == "trans_acopf" else EPS)
    if name == "dist_33bw":
        from powerzoojax.grid import DistGridEnv, make_dist_params

        return episode_gradients(DistGridEnv(), make_dist_params(load_case("33bw"), max_steps=3))
    from powerzoojax.grid import UnitCommitmentEnv, make_uc_params

    if name == "uc_case5_opf":
        params = make_uc_params(load_case("5"), max_steps=3, forecast_horizon_steps=2, solver_mode=1)
    else:
        # Commitment off (every unit on): the thresholded intent would make the differences
        # jump wherever a perturbation flips a unit, while its derivative is zero.
        params = make_uc_params(load_case("5"), max_steps=3, forecast_horizon_steps=2, solver_mode=0, enable_uc=False)
    return episode_gradients(UnitCommitmentEnv(), params)


@pytest.mark.parametrize("name", ENVS)
def test_episode_return_gradient_matches_central_differences(name):
    g = _gradients(name)
    assert all(np.all(np.isfinite(x)) for x in g.grad_leaves)
    assert np.asarray(g.dones).tolist() == [False, False, True, False, False]
    if name in ZERO_BY_DESIGN:
        assert all(np.all(x == 0.0) for x in g.grad_leaves)
        return
    assert abs(g.directional) > 1e-6
    np.testing.assert_allclose(g.directional, g.central_difference, rtol=2e-3)


@pytest.mark.parametrize("name", ENVS)
def test_gradients_flow_within_an_episode_and_not_across_its_end(name):
    g = _gradients(name)
    jac = g.jac_step.reshape(g.jac_step.shape[0], g.jac_step.shape[1], -1)  # (T, T, A)
    np.testing.assert_array_equal(jac[BOUNDARY:, :BOUNDARY], 0.0)
    for t in range(jac.shape[0]):  # causal
        np.testing.assert_array_equal(jac[t, t + 1 :], 0.0)
    if name in ZERO_BY_DESIGN:
        np.testing.assert_array_equal(jac, 0.0)
        return
    # An action reaches the rewards of later steps of its episode through the state and the
    # observation the linear policy reads (earlier it was stopped at every step).
    assert np.abs(jac[1, 0]).max() > 0.0 and np.abs(jac[4, 3]).max() > 0.0
    assert np.abs(jac[np.arange(5), np.arange(5)]).max() > 0.0


@pytest.mark.parametrize("name", ENVS)
def test_step_auto_reset_still_stops_every_gradient_through_state(name):
    g = _gradients(name)
    jac_auto = g.jac_auto.reshape(g.jac_auto.shape[0], g.jac_auto.shape[1], -1)
    np.testing.assert_array_equal(off_diagonal(jac_auto), 0.0)
    diag = np.arange(jac_auto.shape[0])
    jac_step = g.jac_step.reshape(jac_auto.shape)
    np.testing.assert_allclose(jac_auto[diag, diag], jac_step[diag, diag], rtol=1e-5, atol=1e-7)
