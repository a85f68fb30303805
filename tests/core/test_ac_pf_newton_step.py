"""The Newton step choice of `ac_power_flow` (`newton_step`) and the Newton stall stop.

`newton_step="krylov"` (the products-only step that accelerators take) must agree with the
dense LU step that CPUs take: same converged flags on batches of random unit set-points
(some beyond what any method solves), voltages within 1e-4. The stall stop (an instance
without a new smallest mismatch in `_NEWTON_STALL_ITERS` iterations stops) must not lose
an instance the loop without it solves. Solves that change a module constant trace the
unjitted body in a fresh `jax.jit`, so no cached program of the other setting is reused.
"""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

from powerzoojax.case import load_case
from powerzoojax.physics import _ac_pf
from powerzoojax.physics import ac_power_flow, make_ac_network
from powerzoojax.physics._ac_pf_krylov import fgmres


@functools.cache
def _case(case_id: str):
    case = load_case(case_id)
    return case, make_ac_network(case)


@functools.cache
def _random_set_points(case_id: str, n: int, max_load_scale: float):
    """`n` instances like TransGridEnv's AC mode under uniform random actions: unit
    set-points uniform in [p_min, p_max] (the slack takes the imbalance), loads the env's
    nominal profile `(d_max + d_min) / 2` and the case's Qd, scaled per instance by a factor
    in [1, max_load_scale] (1: the env's loads)."""
    case, _ = _case(case_id)
    rng = np.random.default_rng(7)
    lo, hi = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    pg = lo + (hi - lo) * rng.uniform(size=(n, lo.size))
    scale = rng.uniform(1.0, max_load_scale, size=(n, 1))
    load_p = 0.5 * (np.asarray(case.load_d_max) + np.asarray(case.load_d_min)) * scale
    load_q = np.asarray(case.node_qd)[np.asarray(case.load_node_idx)] * scale
    return tuple(jnp.asarray(x, jnp.float32) for x in (pg, load_p, load_q))


def _batched(case_id: str, method: str, newton_step: str, stall_iters: int | None = None):
    """A freshly traced `jit(vmap(ac_power_flow))` (with `_NEWTON_STALL_ITERS` at
    `stall_iters` while tracing, when given)."""
    _, net = _case(case_id)
    body = ac_power_flow.__wrapped__  # pyright: ignore[reportAttributeAccessIssue]

    def solve(pg, load_p, load_q):
        return body(net, pg, None, load_p, load_q, method=method, newton_step=newton_step)

    old = _ac_pf._NEWTON_STALL_ITERS
    if stall_iters is not None:
        _ac_pf._NEWTON_STALL_ITERS = stall_iters
    try:
        return jax.jit(jax.vmap(solve)).lower(*_instances(case_id)).compile()
    finally:
        _ac_pf._NEWTON_STALL_ITERS = old


# Case 14 with loads up to 4x: about 40 % of the instances converge. Case 118 at the env's
# loads: about 85 % (Newton; 77 % by fast-decoupled iterations alone).
_BATCHES = {"14": (64, 4.0), "118": (128, 1.0)}


def _instances(case_id: str):
    return _random_set_points(case_id, *_BATCHES[case_id])


@functools.cache
def _solve(case_id: str, method: str, newton_step: str, stall_iters: int | None = None):
    return _batched(case_id, method, newton_step, stall_iters)(*_instances(case_id))


def _assert_same_solutions(got, ref, n_mixed: bool = True):
    conv, conv_ref = np.asarray(got.converged), np.asarray(ref.converged)
    np.testing.assert_array_equal(conv, conv_ref)
    if n_mixed:
        assert 0 < conv.sum() < conv.size, "the batch must hold solvable and unsolvable instances"
    np.testing.assert_array_equal(np.asarray(got.pv_limit)[conv], np.asarray(ref.pv_limit)[conv])
    assert np.max(np.abs(np.asarray(got.vm) - np.asarray(ref.vm))[conv]) <= 1e-4
    assert np.max(np.abs(np.asarray(got.va) - np.asarray(ref.va))[conv]) <= 1e-4
    for leaf in (got.vm, got.va, got.max_mismatch):
        assert np.all(np.isfinite(np.asarray(leaf)))


def _check_krylov_matches_dense(case_id: str, method: str):
    _assert_same_solutions(_solve(case_id, method, "krylov"), _solve(case_id, method, "dense"))


def _check_stall_stop_keeps_every_solution(case_id: str):
    stalled = _solve(case_id, "newton", "dense")
    full = _solve(case_id, "newton", "dense", 10**6)
    _assert_same_solutions(stalled, full)
    # The stop did fire: unsolved instances end well before the loop without it.
    unsolved = ~np.asarray(full.converged)
    assert np.mean(np.asarray(stalled.n_iter)[unsolved]) < np.mean(np.asarray(full.n_iter)[unsolved]) - 5


def test_krylov_step_matches_the_dense_step_on_random_set_points_case14():
    _check_krylov_matches_dense("14", "newton")


def test_stall_stop_keeps_every_newton_solution_case14():
    _check_stall_stop_keeps_every_solution("14")


@pytest.mark.slow  # four case-118 batched programs, about a minute each to compile here
@pytest.mark.parametrize("method", ["fdlf", "newton"])
def test_krylov_step_matches_the_dense_step_on_random_set_points_case118(method: str):
    _check_krylov_matches_dense("118", method)


@pytest.mark.slow
def test_stall_stop_keeps_every_newton_solution_case118():
    _check_stall_stop_keeps_every_solution("118")


def _custom_calls(fn, args, platform: str) -> set[str]:
    text = export.export(fn, platforms=(platform,))(*args).mlir_module()
    return set(re.findall(r"custom_call @([A-Za-z_0-9]+)", text))


def test_auto_step_factorises_on_cpu_only():
    """`"auto"` lowers to the LAPACK LU on a CPU and to no factorisation at all (the
    Krylov step) for a TPU or a CUDA GPU, as `"krylov"` does; `"dense"` factorises
    everywhere. Lowered for each platform here, without the devices."""
    _, net = _case("14")
    args = (jnp.zeros((net.n_units,), jnp.float32), jnp.zeros((net.n_loads,), jnp.float32))

    def program(step):
        return jax.jit(lambda p, d: ac_power_flow(net, p, None, d, d, method="fdlf", newton_step=step))

    assert any("getrf" in c for c in _custom_calls(program("auto"), args, "cpu"))
    for platform in ("tpu", "cuda"):
        calls = _custom_calls(program("auto"), args, platform)
        assert not any("lu" in c.lower() or "getrf" in c for c in calls), (platform, calls)
    assert "LuDecomposition" in _custom_calls(program("dense"), args, "tpu")
    assert not _custom_calls(program("krylov"), args, "cpu")


def test_unknown_newton_step_is_rejected():
    _, net = _case("14")
    z = jnp.zeros((net.n_units,), jnp.float32)
    d = jnp.zeros((net.n_loads,), jnp.float32)
    with pytest.raises(ValueError, match="newton_step must be one of .*'lu'"):
        ac_power_flow(net, z, None, d, d, newton_step="lu")


def test_fgmres_fixed_trip_loop_equals_the_while_loop():
    """The fixed-trip Arnoldi loop masks its steps after the residual test passes: same
    solution and step count as the loop that stops there, under `vmap` too."""
    rng = np.random.default_rng(1)
    n = 24
    a = jnp.asarray(rng.standard_normal((3, n, n)) + 8.0 * np.eye(n), jnp.float32)
    b = jnp.asarray(rng.standard_normal((3, n)), jnp.float32)

    def solve(loop):
        def one(a, b):
            diag = jnp.diagonal(a)
            return fgmres(lambda v: jnp.matmul(a, v, precision="highest"), lambda r: r / diag, b,
                          max_steps=n, rtol=1e-4, loop=loop)

        return jax.jit(jax.vmap(one))(a, b)

    (x_w, k_w), (x_f, k_f) = solve("while"), solve("fixed")
    np.testing.assert_array_equal(np.asarray(k_f), np.asarray(k_w))
    assert np.all((np.asarray(k_w) > 1) & (np.asarray(k_w) < n))
    np.testing.assert_allclose(np.asarray(x_f), np.asarray(x_w), rtol=1e-5, atol=1e-6)
    for k in range(3):
        ref = np.linalg.solve(np.asarray(a[k], np.float64), np.asarray(b[k], np.float64))
        assert np.linalg.norm(np.asarray(x_w[k]) - ref) <= 1e-3 * np.linalg.norm(ref)
    with pytest.raises(ValueError, match="loop must be one of .*'unrolled'"):
        fgmres(lambda v: v, lambda r: r, b[0], max_steps=4, rtol=1e-3, loop="unrolled")
