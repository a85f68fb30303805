"""Newton–Krylov step of the AC power flow (networks of `KRYLOV_MIN_BUSES` buses and more).

The shipped cases at or above the threshold take minutes per dense solve here, so the
solver tests lower the threshold to run the Krylov step on small cases, against the dense
Newton step and PYPOWER. The threshold is read when `ac_power_flow` is traced: each of
those solves traces its own program (the unjitted body of the entry point inside a fresh
`jax.jit`), so no cached program of the other step is reused, and none is left behind.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pypower.api import ppoption, runpf
from reference_matpower import matpower_ppc

from powerzoojax.case import load_case
from powerzoojax.physics import _ac_pf_krylov as krylov
from powerzoojax.physics import ac_power_flow, make_ac_network
from powerzoojax.physics._ac_pf_krylov import fgmres

PD, QD, PG, GEN_STATUS, VM, VA, BUS_TYPE = 2, 3, 1, 7, 7, 8, 1


def _solver(threshold: int, **options):
    """A freshly traced `ac_power_flow` with the Krylov threshold at `threshold` buses."""
    body = ac_power_flow.__wrapped__  # pyright: ignore[reportAttributeAccessIssue]

    def solve(net, pg, pd, qd):
        return body(net, pg, None, pd, qd, **options)

    old = krylov.KRYLOV_MIN_BUSES
    krylov.KRYLOV_MIN_BUSES = threshold
    try:
        return jax.jit(solve).lower(*_inputs_118()).compile()
    finally:
        krylov.KRYLOV_MIN_BUSES = old


@functools.cache
def _reference_118():
    """Case 118 with per-bus loads scaled in [0.85, 1.1] (float32-rounded tables) and its
    PYPOWER solution without reactive limits."""
    rng = np.random.default_rng(3)
    ppc = matpower_ppc("case118")
    ppc = {k: (v.astype(np.float32).astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in ppc.items()}
    scale = rng.uniform(0.85, 1.1, ppc["bus"].shape[0])
    ppc["bus"][:, PD] *= scale
    ppc["bus"][:, QD] *= scale
    ppc["gen"][:, PG] *= float(np.mean(scale))
    res, ok = runpf(ppc, ppoption(VERBOSE=0, OUT_ALL=0, PF_TOL=1e-10, PF_MAX_IT=30))
    assert ok
    return ppc, res


@functools.cache
def _inputs_118():
    ppc, _ = _reference_118()
    bus = ppc["bus"]
    va_ref = float(bus[bus[:, BUS_TYPE] == 3, VA][0])
    net = make_ac_network(load_case("118", source="matpower"), va_ref_deg=va_ref)
    on = ppc["gen"][:, GEN_STATUS] > 0
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return net, f32(ppc["gen"][:, PG] * on), f32(bus[:, PD]), f32(bus[:, QD])


@functools.cache
def _dense_and_krylov(**options):
    inputs = _inputs_118()
    return _solver(10**9, **options)(*inputs), _solver(1, **options)(*inputs)


def test_fgmres_solves_a_nonsymmetric_system_to_its_tolerance():
    rng = np.random.default_rng(0)
    n = 30
    a = rng.standard_normal((n, n)) + 15.0 * np.eye(n)
    b = rng.standard_normal(n)
    a32, b32 = jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
    diag = jnp.diagonal(a32)
    x, steps = jax.jit(lambda a, b: fgmres(lambda v: a @ v, lambda r: r / diag, b, max_steps=n, rtol=1e-5))(a32, b32)
    assert 0 < int(steps) < n
    assert np.linalg.norm(a @ np.asarray(x, np.float64) - b) <= 2e-5 * np.linalg.norm(b)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), atol=1e-5)


def test_fgmres_breakdowns_give_finite_steps():
    eye = jnp.eye(4, dtype=jnp.float32)
    solve = jax.jit(lambda a, b: fgmres(lambda v: a @ v, lambda r: r, b, max_steps=4, rtol=1e-6))
    # Exact in one step (lucky breakdown), a zero right-hand side, a singular matrix.
    b = jnp.asarray([1.0, 2.0, 3.0, 4.0], jnp.float32)
    x, steps = solve(2.0 * eye, b)
    assert int(steps) == 1
    np.testing.assert_allclose(np.asarray(x), np.asarray(b) / 2.0, rtol=1e-6)
    x, steps = solve(eye, jnp.zeros(4, jnp.float32))
    assert int(steps) == 0 and np.all(np.asarray(x) == 0.0)
    x, _ = solve(jnp.zeros((4, 4), jnp.float32), b)
    assert np.all(np.isfinite(np.asarray(x)))


def test_krylov_step_matches_the_dense_step_and_pypower_on_case118():
    dense, kry = _dense_and_krylov(enforce_q_limits=False)
    _, ref = _reference_118()
    assert bool(dense.converged) and bool(kry.converged)
    assert abs(int(kry.n_iter) - int(dense.n_iter)) <= 1
    np.testing.assert_allclose(np.asarray(kry.vm), np.asarray(dense.vm), atol=1e-5)
    np.testing.assert_allclose(np.asarray(kry.va), np.asarray(dense.va), atol=1e-5)
    np.testing.assert_allclose(np.asarray(kry.vm), ref["bus"][:, VM], atol=1e-4)
    np.testing.assert_allclose(np.asarray(kry.va), np.deg2rad(ref["bus"][:, VA]), atol=1e-4)


def test_krylov_step_with_q_limits_switches_the_buses_the_dense_step_switches():
    dense, kry = _dense_and_krylov(enforce_q_limits=True)
    assert bool(dense.converged) and bool(kry.converged)
    assert int(np.sum(np.asarray(dense.pv_switched))) > 0
    np.testing.assert_array_equal(np.asarray(kry.pv_limit), np.asarray(dense.pv_limit))
    np.testing.assert_allclose(np.asarray(kry.vm), np.asarray(dense.vm), atol=1e-5)
    np.testing.assert_allclose(np.asarray(kry.va), np.asarray(dense.va), atol=1e-5)


def test_krylov_step_reports_divergence_with_finite_outputs():
    net, pg, pd, qd = _inputs_118()
    solve = _solver(1, enforce_q_limits=True)
    res = solve(net, pg * 5.0, pd * 5.0, qd * 5.0)
    assert not bool(res.converged)
    for leaf in jax.tree.leaves(res):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert np.all(np.isfinite(np.asarray(leaf)))


def test_krylov_fallback_under_vmap_matches_single_solves():
    """The default method's Newton fallback takes the Krylov step too; 64 batched lanes go
    through the compacting loop and agree with single solves (case 118 scaled up to the
    point where the fast-decoupled loop runs out of iterations, then beyond the nose)."""
    net, pg, pd, qd = _inputs_118()
    scales = jnp.linspace(0.7, 3.0, 64, dtype=jnp.float32)
    body = ac_power_flow.__wrapped__  # pyright: ignore[reportAttributeAccessIssue]
    one = lambda s: body(net, pg * s, None, pd * s, qd * s, method="fdlf")  # noqa: E731
    old = krylov.KRYLOV_MIN_BUSES
    krylov.KRYLOV_MIN_BUSES = 1
    try:
        batched = jax.jit(jax.vmap(one))(scales)
        single = jax.jit(one).lower(scales[0]).compile()
    finally:
        krylov.KRYLOV_MIN_BUSES = old
    conv, n_iter = np.asarray(batched.converged), np.asarray(batched.n_iter)
    by_newton = np.flatnonzero(conv & (n_iter > 30))
    assert conv[0] and not conv[-1] and by_newton.size > 0
    assert np.all(np.isfinite(np.asarray(batched.vm))) and np.all(np.isfinite(np.asarray(batched.va)))
    for k in (0, int(by_newton[-1]), 63):
        res = single(scales[k])
        assert bool(res.converged) == bool(conv[k])
        if bool(res.converged):
            assert abs(int(res.n_iter) - int(n_iter[k])) <= 1
            np.testing.assert_allclose(np.asarray(batched.vm[k]), np.asarray(res.vm), atol=1e-5)
            np.testing.assert_allclose(np.asarray(batched.va[k]), np.asarray(res.va), atol=1e-5)


def _primitives(jaxpr) -> set[str]:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    names |= _primitives(inner)
    return names


@pytest.mark.parametrize(("case_id", "krylov_step"), [("300", False), ("552gb", True)])
def test_size_threshold_picks_the_step(case_id, krylov_step):
    """Cases below the threshold keep the dense LU (`lu` in the program), larger ones do not
    factorise at all."""
    net = make_ac_network(load_case(case_id))
    g, d = net.n_units, net.n_loads
    z = lambda k: jnp.zeros((k,), jnp.float32)  # noqa: E731
    jaxpr = jax.make_jaxpr(lambda p, l: ac_power_flow(net, p, None, l, l, method="newton"))(z(g), z(d))
    assert ("lu" in _primitives(jaxpr.jaxpr)) != krylov_step
    assert (net.n_nodes >= krylov.KRYLOV_MIN_BUSES) == krylov_step
