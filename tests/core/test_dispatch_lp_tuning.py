"""Tunings of the dispatch LP's dual simplex (`DispatchLPTuning`: masked pivots unrolled
before the loop or into each trip of it, the start's optimality test, one-hot basis
selections) change the
program, not the answer: on rated-line LPs of cases 5, 14 and 118 every tuning returns
the loop's own solution and basis, which agree with HiGHS; lanes that finish inside the
unrolled pivots and lanes that need the loop after them are both covered; the device's
own choice is the loop alone on a CPU; a tuning traces once; bad tunings are refused."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from powerzoojax.case import load_case
from powerzoojax.physics import DispatchLPTuning, SolverStatus, dc_opf, make_dc_opf_setup, status_code
from powerzoojax.physics._dispatch_lp import ACCELERATOR_TUNING, CPU_TUNING, solve_dispatch_lp
from powerzoojax.physics._dual_simplex import bounded_dual_simplex
from reference_lp import highs_elastic_dispatch

OPTIMAL, INFEASIBLE, UNCONVERGED = (int(status_code(s)) for s in (SolverStatus.successful, SolverStatus.infeasible, SolverStatus.max_steps_reached))

_AXES = (None, None, None, 0, None, 0, 0)


@functools.cache
def _rated(case_id: str, rating: float, lanes: int, seed: int = 0):
    """A linear-cost setup of the case with every line rated `rating` MW, and the LP
    arguments of `lanes` random loads (0.35–0.6 of capacity, ±20 % per bus)."""
    case = load_case(case_id)
    cap = np.full(case.n_lines, rating)
    setup = make_dc_opf_setup(case, cap, -cap, objective="linear")
    rng = np.random.default_rng(seed)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    level = rng.uniform(0.35, 0.6, (lanes, 1)) * np.asarray(case.unit_p_max).sum() / node_dmax.sum()
    loads = jnp.asarray(node_dmax[None] * level * rng.uniform(0.8, 1.2, (lanes, case.n_nodes)), jnp.float32)
    flow = loads @ setup.mon_ptdf_t
    args = (
        setup.cost_c, setup.p_min, setup.p_max, jnp.sum(loads, axis=-1), setup.mon_ptdf_units_t,
        setup.line_floor[setup.mon_idx][None, :] + flow, setup.line_cap[setup.mon_idx][None, :] + flow,
    )
    return setup, loads, args


@functools.cache
def _solver(tuning: DispatchLPTuning | None):
    return jax.jit(jax.vmap(lambda *a: solve_dispatch_lp(*a, tuning=tuning), in_axes=_AXES))


def _assert_same(sol_a, basis_a, sol_b, basis_b):
    np.testing.assert_array_equal(np.asarray(sol_a.n_iter), np.asarray(sol_b.n_iter))
    np.testing.assert_array_equal(np.asarray(sol_a.converged), np.asarray(sol_b.converged))
    np.testing.assert_array_equal(np.asarray(basis_a.columns), np.asarray(basis_b.columns))
    np.testing.assert_array_equal(np.asarray(basis_a.at_upper), np.asarray(basis_b.at_upper))
    for name in ("x", "nu", "mu_upper", "mu_lower", "row_violation"):
        np.testing.assert_allclose(
            np.asarray(getattr(sol_a, name)), np.asarray(getattr(sol_b, name)), rtol=1e-6, atol=1e-5, err_msg=name
        )


def _assert_highs(args, sol, lanes):
    lin = np.asarray(args[0], np.float64)
    for lane in range(lanes):
        lin_, lo, hi, total, a_t, row_lo, row_hi = (
            np.asarray(v[lane]) if i in (3, 5, 6) else np.asarray(v) for i, v in enumerate(args)
        )
        violation, cost = highs_elastic_dispatch(lin_, lo, hi, total, a_t, row_lo, row_hi)
        assert bool(sol.converged[lane]), lane
        ours = float(lin @ np.asarray(sol.x[lane], np.float64))
        ours += 1e3 * np.max(np.abs(lin)) * float(np.sum(sol.row_violation[lane]))
        assert ours == pytest.approx(cost, rel=2e-5, abs=1e-2), (lane, ours, cost)
        assert float(np.sum(sol.row_violation[lane])) == pytest.approx(violation, abs=1e-2)


@pytest.mark.parametrize(
    "case_id, rating, lanes, tunings",
    [
        ("5", 150.0, 48, (DispatchLPTuning(3), DispatchLPTuning(1, True, True, pivots_per_trip=3))),
        ("14", 150.0, 24, (ACCELERATOR_TUNING,)),
        pytest.param("118", 150.0, 8, (DispatchLPTuning(2, True, True),), marks=pytest.mark.slow),
    ],
)
def test_every_tuning_returns_the_loops_solution_which_agrees_with_highs(case_id, rating, lanes, tunings):
    _, _, args = _rated(case_id, rating, lanes)
    base_sol, base_basis = _solver(CPU_TUNING)(*args)
    assert np.all(np.asarray(base_sol.n_iter) > 0)  # lines bind: every LP pivots
    _assert_highs(args, base_sol, min(lanes, 12))
    for tuning in tunings:
        sol, basis = _solver(tuning)(*args)
        _assert_same(sol, basis, base_sol, base_basis)


def test_lanes_finish_inside_the_unrolled_pivots_and_after_them_in_the_loop():
    """K = 3 on case 5 rated at 150 MW: lanes of 2 and 3 iterations finish inside the
    prefix, lanes of 4 or more need the loop after it; every lane as the loop alone. (With
    3 pivots a trip, the parametrised test above, lanes stop inside a trip too.)"""
    _, _, args = _rated("5", 150.0, 48)
    base_sol, base_basis = _solver(CPU_TUNING)(*args)
    iters = np.asarray(base_sol.n_iter)
    assert np.any(iters <= 3) and np.any(iters > 3), np.bincount(iters)
    sol, basis = _solver(DispatchLPTuning(3))(*args)
    _assert_same(sol, basis, base_sol, base_basis)


def test_a_prefix_longer_than_every_lane_leaves_the_loop_nothing_and_stops_at_the_budget():
    """The masked prefix keeps the loop's budget: with a budget of 2 and 4 unrolled
    iterations a lane stops after 2, as the loop alone does."""
    _, _, args = _rated("5", 150.0, 48)
    capped = {
        t: jax.jit(jax.vmap(lambda *a, t=t: solve_dispatch_lp(*a, max_pivots=2, tuning=t), in_axes=_AXES))(*args)
        for t in (CPU_TUNING, DispatchLPTuning(4))
    }
    (sol_a, basis_a), (sol_b, basis_b) = capped[CPU_TUNING], capped[DispatchLPTuning(4)]
    assert int(np.max(np.asarray(sol_b.n_iter))) == 2 and not np.all(np.asarray(sol_b.converged))
    _assert_same(sol_b, basis_b, sol_a, basis_a)


def test_the_cpu_program_of_the_device_choice_is_the_loop_alone():
    _, loads, _ = _rated("5", 150.0, 8)
    texts = []
    for tuning in (None, CPU_TUNING):
        s = make_dc_opf_setup(load_case("5"), np.full(6, 150.0), np.full(6, -150.0), objective="linear", lp_tuning=tuning)
        texts.append(jax.jit(jax.vmap(lambda load, s=s: dc_opf(s, load).p_mw)).lower(loads).compile().as_text())
    assert "while" in texts[1]
    # The same optimised program: the other device's branch is gone at lowering.
    strip = lambda t: [  # noqa: E731
        re.sub(r", metadata=\{[^}]*\}", "", line) for line in t.splitlines() if not line.startswith("HloModule")
    ]
    assert strip(texts[0]) == strip(texts[1])


def test_dc_opf_with_a_tuning_traces_once_and_agrees_with_the_loop():
    setup, loads, _ = _rated("5", 150.0, 8)
    traces = []

    @jax.jit
    def solve(s, load):
        traces.append(1)
        return jax.vmap(lambda row: dc_opf(s, row))(load)

    tuned = lambda: make_dc_opf_setup(  # noqa: E731
        load_case("5"), np.full(6, 150.0), np.full(6, -150.0), objective="linear", lp_tuning=DispatchLPTuning(2, True, True)
    )
    a = solve(tuned(), loads)
    b = solve(tuned(), loads * 1.05)  # an equal tuning on a new setup: the same program
    assert len(traces) == 1
    plain = jax.jit(jax.vmap(lambda row: dc_opf(setup, row)))(loads)  # the device's choice: the loop on a CPU
    np.testing.assert_array_equal(np.asarray(status_code(a.status)), np.asarray(status_code(plain.status)))
    np.testing.assert_array_equal(np.asarray(a.n_iter), np.asarray(plain.n_iter))
    np.testing.assert_allclose(np.asarray(a.p_mw), np.asarray(plain.p_mw), rtol=1e-6, atol=1e-4)
    assert np.any(np.asarray(status_code(a.status)) == OPTIMAL)
    np.testing.assert_allclose(np.asarray(b.p_mw).sum(-1), np.asarray(loads * 1.05).sum(-1), rtol=1e-5)


@pytest.mark.parametrize(
    "tuning, match",
    [
        (DispatchLPTuning(-1), "fixed_pivots must be an int >= 0, got -1"),
        (DispatchLPTuning(True), "fixed_pivots must be an int >= 0, got True"),
        (DispatchLPTuning(pivots_per_trip=0), "pivots_per_trip must be an int >= 1, got 0"),
        (DispatchLPTuning(2, 1, False), "start_test and .one_hot must be bools, got 1, False"),  # pyright: ignore[reportArgumentType]
    ],
)
def test_bad_tunings_are_refused_with_the_bad_value(tuning, match):
    with pytest.raises(ValueError, match=match):
        make_dc_opf_setup(load_case("5"), objective="linear", lp_tuning=tuning)


def test_the_simplex_refuses_a_negative_prefix():
    a = jnp.ones((1, 2), jnp.float32)
    with pytest.raises(ValueError, match="fixed_pivots must be an int >= 0, got -2"):
        bounded_dual_simplex(
            a, jnp.ones(1), jnp.ones(2), jnp.zeros(2), jnp.ones(2), jnp.zeros(1, jnp.int32), jnp.eye(1),
            jnp.zeros(2, bool), 4, fixed_pivots=-2,
        )


@pytest.mark.requires("powerzoojax.grid")
def test_an_env_with_a_tuning_traces_its_step_once_and_steps_as_the_loop():
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.testing import check_no_retrace

    case = load_case("5")
    env = TransGridEnv()
    tuned = make_trans_params(case, max_steps=4, solver_mode=1, opf_lp_tuning=ACCELERATOR_TUNING)
    assert tuned.network_model.setup.lp_tuning == ACCELERATOR_TUNING
    assert check_no_retrace(env, tuned, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}
    plain = make_trans_params(case, max_steps=4, solver_mode=1, opf_lp_tuning=CPU_TUNING)
    key = jax.random.PRNGKey(3)
    outs = []
    for params in (tuned, plain):
        _, state = env.reset(key, params)
        action = jnp.zeros(env.action_space(params).shape)
        _, _, reward, _, _, info = env.step(key, state, action, params)
        outs.append((float(reward), int(info["opf_status"])))
    assert outs[0] == outs[1]
    with pytest.raises(ValueError, match="fixed_pivots must be an int >= 0, got -3"):
        make_trans_params(case, max_steps=4, solver_mode=1, opf_lp_tuning=DispatchLPTuning(-3))
