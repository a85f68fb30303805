"""Implicit derivatives of the balanced and three-phase radial power flows (case 33bw,
float64) against central finite differences, under ``vmap`` and at a collapsed feeder."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powerzoojax.case import load_case
from powerzoojax.physics import (
    make_radial_3phase_network,
    make_radial_network,
    radial_3phase_power_flow,
    radial_power_flow,
)
from powerzoojax.utils.jax_utils import enable_x64

REL_TOL = 1e-4
SOLVE = dict(tol=1e-13, max_iter=200)
STEP = 1e-6  # [p.u.] along directions of unit scale


@pytest.fixture(autouse=True, scope="module")
def _float64():
    with enable_x64():
        yield


@functools.cache
def _feeder():
    case = load_case("33bw")
    net = make_radial_network(case)
    lines = np.asarray(net.line_idx)
    z = np.asarray(case.line_r, np.float64)[lines] + 1j * np.asarray(case.line_x, np.float64)[lines]
    z3 = z[:, None, None] * (np.eye(3) + 0.3 * (np.ones((3, 3)) - np.eye(3)))
    net3 = make_radial_3phase_network(
        33, np.asarray(case.line_from_idx)[lines], np.asarray(case.line_to_idx)[lines], z3
    )
    return case, net, net3


def _point(seed: int) -> dict:
    """Loads scaled per bus in [0.5, 1.5] and a DER at every bus of up to ±0.5 MW [p.u.]."""
    case, _, _ = _feeder()
    rng = np.random.default_rng(seed)
    base = float(case.base_mva)
    scale = rng.uniform(0.5, 1.5, (33, 3))
    return {
        "p": jnp.asarray(np.asarray(case.node_pd, np.float64)[:, None] / base * scale),
        "q": jnp.asarray(np.asarray(case.node_qd, np.float64)[:, None] / base * scale),
        "der": jnp.asarray(rng.uniform(-0.5, 0.5, 33) / base),
        "v_slack": jnp.asarray(rng.uniform(0.98, 1.05)),
    }


def _balanced_loss(x, w):
    _, net, _ = _feeder()
    res = radial_power_flow(net, x["p"][:, 0] - x["der"], x["q"][:, 0], x["v_slack"], **SOLVE)
    value = w["v"] @ res.v_mag + 10.0 * jnp.sum(res.p_loss) + w["b"] @ res.p_branch + w["b2"] @ res.q_branch + res.q_slack
    return value, res.converged


def _three_phase_loss(x, w):
    _, _, net3 = _feeder()
    res = radial_3phase_power_flow(net3, x["p"], x["q"], **SOLVE)
    value = (
        jnp.sum(w["v3"] * res.v_mag)
        + 10.0 * jnp.sum(res.p_loss)
        + jnp.sum(w["b3"] * res.q_branch)
        + jnp.sum(res.q_loss)
    )
    return value, res.converged


LOSSES = {"balanced": (_balanced_loss, ("p", "q", "der", "v_slack")), "three_phase": (_three_phase_loss, ("p", "q"))}


@functools.cache
def _programs(kind: str):
    loss = LOSSES[kind][0]
    return jax.jit(loss), jax.jit(jax.grad(lambda x, w: loss(x, w)[0]))


def _weights(seed: int) -> dict:
    rng = np.random.default_rng(seed + 1)
    shapes = {"v": (33,), "b": (32,), "b2": (32,), "v3": (33, 3), "b3": (32, 3)}
    return {k: jnp.asarray(rng.normal(size=s)) for k, s in shapes.items()}


@pytest.mark.parametrize("kind", ["balanced", "three_phase"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_gradient_matches_finite_differences(kind: str, seed: int) -> None:
    loss, grad = _programs(kind)
    x, w = _point(seed), _weights(seed)
    assert bool(loss(x, w)[1])
    g = grad(x, w)
    rng = np.random.default_rng(seed + 2)
    for name in LOSSES[kind][1]:
        d = jnp.asarray(rng.normal(size=np.shape(x[name])))
        fd = float(loss({**x, name: x[name] + STEP * d}, w)[0] - loss({**x, name: x[name] - STEP * d}, w)[0]) / (2 * STEP)
        analytic = float(jnp.sum(g[name] * d))
        assert abs(analytic - fd) <= REL_TOL * max(abs(fd), 1e-8), (kind, name, analytic, fd)


def test_der_injection_raises_voltage_downstream() -> None:
    # More DER output at the feeder end raises every voltage on its path.
    _, net, _ = _feeder()
    x = _point(0)
    grad = jax.grad(lambda der: radial_power_flow(net, x["p"][:, 0] - der, x["q"][:, 0], **SOLVE).v_mag[17])(x["der"])
    assert float(grad[17]) > 0.0
    path = np.asarray(net.path_matrix)[17] @ np.asarray(net.recv_to_bus)  # buses on the path to bus 17
    assert np.all(np.asarray(grad)[path > 0] > 0.0)


@pytest.mark.parametrize(("kind", "batch"), [("balanced", 256), ("three_phase", 8)])
def test_vmapped_gradients_match_single_ones(kind: str, batch: int) -> None:
    # 256 feeders: the balanced sweep's batching rule compacts the slow ones.
    loss, grad = _programs(kind)
    x, w = _point(4), _weights(4)
    scales = jnp.asarray(np.random.default_rng(1).uniform(0.6, 1.4, (batch, 1, 1)))
    p = x["p"][None] * scales
    f = lambda p: loss({**x, "p": p}, w)[0]  # noqa: E731
    per_instance = jax.jit(jax.vmap(jax.grad(f)))(p)
    of_sum = jax.jit(jax.grad(lambda p: jnp.sum(jax.vmap(f)(p))))(p)
    np.testing.assert_allclose(np.asarray(of_sum), np.asarray(per_instance), rtol=1e-12, atol=1e-12)
    for k in (0, batch // 2, batch - 1):
        expected = grad({**x, "p": p[k]}, w)["p"]
        np.testing.assert_allclose(np.asarray(per_instance[k]), np.asarray(expected), rtol=1e-9, atol=1e-12)


def test_collapsed_feeder_gives_finite_zero_voltage_gradient() -> None:
    # 40x the loads: both sweeps end on their voltage floor, converged=False; the
    # voltages carry a zero derivative (finite), the flag says why.
    _, net, net3 = _feeder()
    x = _point(0)
    p, q = 40.0 * x["p"], 40.0 * x["q"]

    def balanced(p):
        res = radial_power_flow(net, p, q[:, 0], **SOLVE)
        return jnp.sum(res.v_mag), res.converged

    def three_phase(p):
        res = radial_3phase_power_flow(net3, p, q, **SOLVE)
        return jnp.sum(res.v_mag), res.converged

    for f, p0 in ((balanced, p[:, 0]), (three_phase, p)):
        g, converged = jax.grad(f, has_aux=True)(p0)
        assert not bool(converged)
        assert np.all(np.asarray(g) == 0.0)
