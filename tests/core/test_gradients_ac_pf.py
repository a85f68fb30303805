"""Implicit derivatives of the AC power flow against central finite differences (float64).

Each check is a directional derivative: a random weighting of the solution's outputs
(voltages, angles, branch flows, slack and unit output) differentiated along a random
direction of one input group (unit set-points, loads P, loads Q, voltage set points),
``jax.grad`` against ``(L(x + h d) − L(x − h d)) / 2h``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powerzoojax.case import load_case
from powerzoojax.physics import ac_power_flow, make_ac_network
from powerzoojax.utils.jax_utils import enable_x64

REL_TOL = 1e-4
SOLVE = dict(tol=1e-12, max_iter=40)
INPUTS = ("p_gen", "load_p", "load_q", "v_set")
# Finite-difference step per input group, relative to the direction's scale (MW or p.u.).
STEP = {"p_gen": 1e-5, "load_p": 1e-5, "load_q": 1e-5, "v_set": 1e-6}


@pytest.fixture(autouse=True, scope="module")
def _float64():
    with enable_x64():
        yield


@functools.cache
def _network(case_id: str):
    case = load_case(case_id, source="matpower")
    return case, make_ac_network(case, dtype=jnp.float64)


def _operating_point(case_id: str, seed: int) -> dict:
    """Loads scaled per bus in [0.8, 1.1], units scaled with the mean, set points ±0.02 p.u."""
    case, net = _network(case_id)
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.8, 1.1, case.n_nodes)
    on = np.asarray(case.unit_status) > 0
    return {
        "p_gen": jnp.asarray(np.asarray(case.unit_pg, np.float64) * on * scale.mean()),
        "load_p": jnp.asarray(np.asarray(case.node_pd, np.float64) * scale),
        "load_q": jnp.asarray(np.asarray(case.node_qd, np.float64) * scale),
        "v_set": jnp.asarray(np.asarray(net.v_set) + rng.uniform(-0.02, 0.02, case.n_nodes)),
    }


def _loss(net, method, x, w):
    res = ac_power_flow(net, x["p_gen"], None, x["load_p"], x["load_q"], x["v_set"], method=method, **SOLVE)
    value = (
        w["vm"] @ res.vm
        + w["va"] @ res.va
        + 1e-2 * (w["line"] @ res.line_p_from_mw + w["line_q"] @ res.line_q_to_mvar)
        + 1e-2 * res.slack_p_mw
        + 1e-3 * w["unit"] @ res.unit_q_mvar
    )
    return value, res.converged


@functools.cache
def _programs(case_id: str, method: str):
    _, net = _network(case_id)
    loss = jax.jit(lambda x, w: _loss(net, method, x, w))
    grad = jax.jit(jax.grad(lambda x, w: _loss(net, method, x, w)[0]))
    return loss, grad


def _weights(case_id: str, seed: int) -> dict:
    case, _ = _network(case_id)
    rng = np.random.default_rng(seed + 1)
    sizes = {"vm": case.n_nodes, "va": case.n_nodes, "line": case.n_lines, "line_q": case.n_lines, "unit": case.n_units}
    return {k: jnp.asarray(rng.normal(size=n)) for k, n in sizes.items()}


def _direction(x: dict, name: str, seed: int) -> jax.Array:
    rng = np.random.default_rng(seed + 2)
    d = rng.normal(size=x[name].shape)
    if name == "v_set":
        return jnp.asarray(d * 1e-2)
    # Scale with the input (a zero load or unit stays nearly fixed), plus 1 MW.
    return jnp.asarray(d * (np.abs(np.asarray(x[name])) + 1.0))


def _check_directional(case_id: str, method: str, seed: int) -> None:
    loss, grad = _programs(case_id, method)
    x, w = _operating_point(case_id, seed), _weights(case_id, seed)
    value, converged = loss(x, w)
    assert bool(converged)
    g = grad(x, w)
    for name in INPUTS:
        d = _direction(x, name, seed)
        h = STEP[name]
        plus = loss({**x, name: x[name] + h * d}, w)[0]
        minus = loss({**x, name: x[name] - h * d}, w)[0]
        fd = float(plus - minus) / (2 * h)
        analytic = float(jnp.dot(g[name], d))
        assert np.isfinite(analytic)
        assert abs(analytic - fd) <= REL_TOL * max(abs(fd), 1e-8), (case_id, method, name, analytic, fd)


@pytest.mark.parametrize("case_id", ["5", "14", "118"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_newton_gradient_matches_finite_differences(case_id: str, seed: int) -> None:
    _check_directional(case_id, "newton", seed)


@pytest.mark.parametrize("case_id", ["5", "14", "118"])
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_fast_decoupled_gradient_matches_finite_differences(case_id: str, seed: int) -> None:
    _check_directional(case_id, "fdlf", seed)


def test_case118_gradient_with_switched_pv_buses() -> None:
    # Loads at 1.25x nominal push several PV buses onto a reactive limit: the derivative
    # holds them there (their generator pinned, their voltage free).
    case, net = _network("118")
    x = _operating_point("118", 11)
    x = {**x, "load_p": x["load_p"] * 1.25, "load_q": x["load_q"] * 1.25, "p_gen": x["p_gen"] * 1.25}
    res = ac_power_flow(net, x["p_gen"], None, x["load_p"], x["load_q"], x["v_set"], **SOLVE)
    assert bool(res.converged)
    assert int(jnp.sum(res.pv_switched)) >= 2
    loss, grad = _programs("118", "newton")
    w = _weights("118", 11)
    g = grad(x, w)
    for name in INPUTS:
        d = _direction(x, name, 11)
        h = STEP[name]
        fd = float(loss({**x, name: x[name] + h * d}, w)[0] - loss({**x, name: x[name] - h * d}, w)[0]) / (2 * h)
        assert abs(float(jnp.dot(g[name], d)) - fd) <= REL_TOL * abs(fd), name


def test_switched_bus_voltage_moves_and_regulating_bus_holds() -> None:
    # Case 14 at 1.25x load switches four PV buses. At a regulating PV bus the voltage is
    # its set point (dVm/dQload = 0, dVm/dv_set = 1); at a switched bus the generator sits
    # on its limit, so its own reactive load moves the voltage and its set point does not.
    case, net = _network("14")
    x = {k: (v * 1.25 if k != "v_set" else v) for k, v in _operating_point("14", 11).items()}

    def vm(load_q, v_set):
        return ac_power_flow(net, x["p_gen"], None, x["load_p"], load_q, v_set, **SOLVE).vm

    res = ac_power_flow(net, x["p_gen"], None, x["load_p"], x["load_q"], x["v_set"], **SOLVE)
    assert bool(res.converged) and int(jnp.sum(res.pv_switched)) >= 2
    d_load_q, d_v_set = jax.jacrev(vm, argnums=(0, 1))(x["load_q"], x["v_set"])
    for bus in np.flatnonzero(np.asarray(res.pv_switched)):
        assert float(d_load_q[bus, bus]) < 0.0  # more reactive load, lower voltage
        assert float(d_v_set[bus, bus]) == 0.0
    for bus in np.flatnonzero(np.asarray(net.is_pv & ~res.pv_switched)):
        assert float(jnp.max(jnp.abs(d_load_q[bus]))) <= 1e-12
        assert float(d_v_set[bus, bus]) == pytest.approx(1.0)


def test_closed_form_jacobian_is_the_residuals() -> None:
    # The derivative rule factors MATPOWER's dS/dV instead of jacfwd of the mismatch.
    from powerzoojax.physics import _ac_pf_grad

    case, net = _network("14")
    x = {k: (v * 1.25 if k != "v_set" else v) for k, v in _operating_point("14", 2).items()}
    res = ac_power_flow(net, x["p_gen"], None, x["load_p"], x["load_q"], x["v_set"], **SOLVE)
    assert int(jnp.sum(res.pv_switched)) >= 1
    theta = {
        "p_sched": jnp.zeros(case.n_nodes), "q_target": jnp.zeros(case.n_nodes), "vs": x["v_set"],
        "va_ref": jnp.asarray(net.va_ref), "y_real_t": jnp.asarray(net.y_real_t),
    }
    aux = (net.is_pv & ~res.pv_switched, net.pvpq_idx)
    unknowns = jnp.concatenate([res.va[net.pvpq_idx], res.vm[net.pvpq_idx]])
    closed = _ac_pf_grad._residual_jacobian(unknowns, theta, aux)
    automatic = jax.jacfwd(_ac_pf_grad._residual)(unknowns, theta, aux)
    np.testing.assert_allclose(np.asarray(closed), np.asarray(automatic), rtol=0, atol=1e-12)


def test_jvp_agrees_with_reverse_mode() -> None:
    _, net = _network("14")
    x, w = _operating_point("14", 5), _weights("14", 5)
    d = {name: _direction(x, name, 5) for name in INPUTS}
    f = lambda x: _loss(net, "newton", x, w)[0]  # noqa: E731
    _, forward = jax.jvp(f, (x,), (d,))
    g = _programs("14", "newton")[1](x, w)
    reverse = sum(jnp.dot(g[k], d[k]) for k in INPUTS)
    assert float(forward) == pytest.approx(float(reverse), rel=1e-10)


@pytest.mark.parametrize("method", ["newton", "fdlf"])
def test_vmapped_gradients_match_single_ones(method: str) -> None:
    # 64 instances: the batched loop compacts its unconverged lanes (custom_vmap rule).
    _, net = _network("5")
    x, w = _operating_point("5", 3), _weights("5", 3)
    scales = jnp.asarray(np.random.default_rng(0).uniform(0.9, 1.05, (64, 1)))
    loads = x["load_p"][None] * scales
    f = lambda load_p: _loss(net, method, {**x, "load_p": load_p}, w)[0]  # noqa: E731
    per_instance = jax.jit(jax.vmap(jax.grad(f)))(loads)
    of_sum = jax.jit(jax.grad(lambda loads: jnp.sum(jax.vmap(f)(loads))))(loads)
    np.testing.assert_allclose(np.asarray(of_sum), np.asarray(per_instance), rtol=1e-12, atol=1e-14)
    single = _programs("5", method)[1]  # the finite-difference tests' program
    for k in (0, 17, 63):
        expected = single({**x, "load_p": loads[k]}, w)["load_p"]
        np.testing.assert_allclose(np.asarray(per_instance[k]), np.asarray(expected), rtol=1e-10, atol=1e-14)


def test_non_converged_solve_gives_finite_zero_state_gradient() -> None:
    _, net = _network("14")
    x = _operating_point("14", 0)

    def vm_sum(load_p):
        res = ac_power_flow(net, x["p_gen"] * 5, None, load_p, x["load_q"] * 5, x["v_set"], **SOLVE)
        return jnp.sum(res.vm) + jnp.sum(res.line_p_from_mw), res.converged

    g, converged = jax.grad(vm_sum, has_aux=True)(x["load_p"] * 5)
    assert not bool(converged)
    assert np.all(np.asarray(g) == 0.0)


def test_gradient_program_traces_once() -> None:
    _, net = _network("5")
    traces = []

    def f(load_p):
        traces.append(1)
        x = _operating_point("5", 0)
        return jnp.sum(ac_power_flow(net, x["p_gen"], None, load_p, x["load_q"], **SOLVE).vm)

    grad = jax.jit(jax.grad(f))
    base = _operating_point("5", 0)["load_p"]
    for s in (1.0, 1.02, 0.97):
        assert np.all(np.isfinite(np.asarray(grad(base * s))))
    assert len(traces) == 1
