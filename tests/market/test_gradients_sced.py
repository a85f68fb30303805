"""KKT derivatives of the offer SCED (float32, as the clearing runs) against finite
differences and the LP's closed forms: every MW of load is served by the marginal
segments, and an uncongested price is the marginal offer."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from powerzoojax.physics import status_code

pytestmark = pytest.mark.requires("powerzoojax.market")


@functools.cache
def _clearing(congested: bool):
    from powerzoojax.case import load_case
    from powerzoojax.market import offer_sced, prepare_offer_sced

    case = load_case("5")
    cap = np.asarray(case.line_cap, np.float64).copy()
    cap = np.where(np.arange(case.n_lines) == 0, 150.0, cap) if congested else np.full(case.n_lines, 1e6)
    setup = prepare_offer_sced(case, 3, line_cap=cap, line_floor=-cap)
    return case, setup, jax.jit(lambda load, prices: offer_sced(setup, load, prices))


def _point(congested: bool, seed: int):
    case, setup, _ = _clearing(congested)
    rng = np.random.default_rng(seed)
    load = jnp.asarray(np.asarray(case.node_pd) * rng.uniform(0.8, 1.1, case.n_nodes), jnp.float32)
    prices = setup.base_seg_prices * jnp.asarray(rng.uniform(1.0, 1.3, setup.base_seg_prices.shape), jnp.float32)
    return load, prices


@pytest.mark.parametrize("congested", [False, True])
def test_load_is_served_by_the_marginal_segments(congested: bool) -> None:
    case, _, solve = _clearing(congested)
    load, prices = _point(congested, 0)
    assert int(status_code(solve(load, prices).status)) == 0
    jac = jax.jacrev(lambda load: solve(load, prices).unit_power)(load)
    # Power balance: one more MW anywhere is one more MW of generation in total.
    np.testing.assert_allclose(np.asarray(jnp.sum(jac, axis=0)), 1.0, atol=1e-5)
    if not congested:
        # One marginal segment takes every increment, whatever the bus.
        moving = np.flatnonzero(np.abs(np.asarray(jac[:, 0])) > 1e-6)
        assert moving.size == 1
        np.testing.assert_allclose(np.asarray(jac[moving[0]]), 1.0, atol=1e-5)


def test_uncongested_price_follows_the_marginal_offer() -> None:
    _, setup, solve = _clearing(False)
    load, prices = _point(False, 1)
    res = solve(load, prices)
    d_price = jax.jacrev(lambda prices: solve(load, prices).lambda_balance)(prices)
    flat = np.asarray(d_price).ravel()
    marginal = int(np.argmax(np.abs(flat)))
    np.testing.assert_allclose(flat[marginal], 1.0, atol=1e-6)
    assert np.all(flat[np.arange(flat.size) != marginal] == 0.0)
    assert float(prices.ravel()[marginal]) == pytest.approx(float(res.lambda_balance), rel=1e-5)


def _check_finite_differences(congested: bool, seed: int, weight_seed: int, random_point: bool = False) -> None:
    # Piecewise linear between jumps (an LMP is a step function of the load): inside one
    # piece a central difference is exact up to the clearing's float32 rounding, ~1e-5 of
    # the loss, so the step is wide (0.2) to keep that rounding below the tolerance. The
    # loss of each end is summed in float64 from the clearing's float32 outputs: the
    # test's own sum would add rounding of the same size.
    case, _, solve = _clearing(congested)
    rng = np.random.default_rng(weight_seed)
    w_lmp = jnp.asarray(rng.normal(size=case.n_nodes), jnp.float32)
    w_p = jnp.asarray(rng.normal(size=case.n_units), jnp.float32)

    def loss(load, prices):
        res = solve(load, prices)
        return w_lmp @ res.lmp + 0.1 * (w_p @ res.unit_power)

    def loss_value(load, prices) -> float:
        res = solve(load, prices)
        lmp, power = np.asarray(res.lmp, np.float64), np.asarray(res.unit_power, np.float64)
        return float(np.asarray(w_lmp, np.float64) @ lmp + 0.1 * (np.asarray(w_p, np.float64) @ power))

    load, prices = _point(congested, seed)
    grad = jax.grad(loss, argnums=(0, 1))
    g_load, g_prices = grad(load, prices)
    for which, g, d in (
        (0, g_load, load * jnp.asarray(rng.normal(size=load.shape), jnp.float32) / 100.0),
        (1, g_prices, jnp.asarray(rng.normal(size=prices.shape), jnp.float32)),
    ):
        h = 0.2

        def at(step):
            return (load + step * d, prices) if which == 0 else (load, prices + step * d)

        slope = float(jnp.sum(g * d))
        # The difference is only a derivative when both ends lie on the centre's piece: the
        # same active set (their own directional derivatives equal the centre's) and no
        # jump in between (the two one-sided differences agree).
        ends = [float(jnp.sum(grad(*at(step))[which] * d)) for step in (h, -h)]
        upper, centre, lower = loss_value(*at(h)), loss_value(load, prices), loss_value(*at(-h))
        same_piece = all(e == pytest.approx(slope, rel=1e-4, abs=1e-5) for e in ends) and (
            (upper - centre) / h == pytest.approx((centre - lower) / h, abs=2e-4)
        )
        if random_point:
            assume(same_piece)
        else:
            assert same_piece, (ends, slope, upper, centre, lower)
        fd = (upper - lower) / (2 * h)
        assert slope == pytest.approx(fd, rel=1e-3, abs=2e-4)


@pytest.mark.parametrize("congested", [False, True])
def test_gradient_matches_finite_differences(congested: bool) -> None:
    _check_finite_differences(congested, 2, 7)


@pytest.mark.parametrize("congested", [False, True])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_gradient_matches_finite_differences_at_random_points(congested: bool, seed: int) -> None:
    _check_finite_differences(congested, seed, seed + 1, random_point=True)


def test_vmapped_gradient_matches_single_ones() -> None:
    _, _, solve = _clearing(True)
    load, prices = _point(True, 3)
    loads = load[None] * jnp.asarray(np.random.default_rng(4).uniform(0.9, 1.05, (8, 1)), jnp.float32)
    f = lambda load: jnp.sum(solve(load, prices).lmp)  # noqa: E731
    per_instance = jax.vmap(jax.grad(f))(loads)
    of_sum = jax.grad(lambda loads: jnp.sum(jax.vmap(f)(loads)))(loads)
    np.testing.assert_allclose(np.asarray(of_sum), np.asarray(per_instance), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(per_instance[5]), np.asarray(jax.grad(f)(loads[5])), rtol=1e-5, atol=1e-6)
