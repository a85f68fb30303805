"""AC power flow with reactive limits on case 300 against a MATPOWER-style reference.

PYPOWER's own ``ENFORCE_Q_LIMS`` path raises an IndexError with this NumPy, and
pandapower's ``runpp(enforce_q_lims=True)`` converged on 2 of 40 of these instances (5 %),
so the reference is MATPOWER's outer loop written around PYPOWER ``runpf``: solve, turn
every PV bus whose generators' Q leaves ``[ΣQmin, ΣQmax]`` into a PQ bus with Q at the
violated limit, solve again, until no bus violates (or the power flow fails).

Per-bus loads are scaled by U(0.85, 1.15) (generation by the mean factor). About 10 % of
such instances have no solution with the limits enforced: the reference fails on the same
ones as our solvers (instances 4 and 8 of this seed are two of them).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference_matpower import matpower_ppc, runpf_with_q_limits

from powerzoojax.case import load_case
from powerzoojax.physics import ac_power_flow, make_ac_network

PD, QD, BUS_TYPE, VM, VA = 2, 3, 1, 7, 8
PG, QG, GEN_STATUS = 1, 2, 7
N_INSTANCES = 10


def _instances():
    base = matpower_ppc("case300")
    rng = np.random.default_rng(0)
    out = []
    for _ in range(N_INSTANCES):
        ppc = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.items()}
        scale = rng.uniform(0.85, 1.15, ppc["bus"].shape[0])
        ppc["bus"][:, PD] *= scale
        ppc["bus"][:, QD] *= scale
        ppc["gen"][:, PG] *= float(np.mean(scale))
        out.append(ppc)
    return out


@functools.cache
def _reference():
    return [runpf_with_q_limits(ppc) for ppc in _instances()]


def _ours(method: str, max_iter: int):
    ppcs = _instances()
    base = matpower_ppc("case300")
    va_ref = float(base["bus"][base["bus"][:, BUS_TYPE] == 3, VA][0])
    net = make_ac_network(load_case("300", source="matpower"), va_ref_deg=va_ref)
    on = [p["gen"][:, GEN_STATUS] > 0 for p in ppcs]
    stack = lambda f: jnp.asarray(np.stack([f(p, o) for p, o in zip(ppcs, on)]), jnp.float32)  # noqa: E731
    solve = jax.jit(
        jax.vmap(
            lambda pg, qg, pd, qd: ac_power_flow(
                net, pg, qg, pd, qd, tol=1e-5, max_iter=max_iter, enforce_q_limits=True, method=method
            )
        )
    )
    return solve(
        stack(lambda p, o: p["gen"][:, PG] * o),
        stack(lambda p, o: p["gen"][:, QG] * o),
        stack(lambda p, o: p["bus"][:, PD]),
        stack(lambda p, o: p["bus"][:, QD]),
    )


def _compare(res):
    ref = _reference()
    ref_ok = np.asarray([ok for ok, _ in ref])
    assert ref_ok.sum() >= N_INSTANCES - 3 and not ref_ok[4] and not ref_ok[8]
    converged = np.asarray(res.converged)
    # Same verdict as the reference on every instance, and the same voltages where solved.
    assert converged.tolist() == ref_ok.tolist()
    vm = np.asarray(res.vm)
    for k in np.flatnonzero(ref_ok):
        np.testing.assert_allclose(vm[k], ref[k][1], atol=1e-4, err_msg=f"instance {k}")
    for leaf in jax.tree.leaves(res):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert np.all(np.isfinite(np.asarray(leaf)))


def test_fdlf_q_limits_match_matpower_loop():
    """fdlf needs more than the default 30 iterations on some of these (measured on 40
    instances: 80 % at 30, 90 % = the reference at 100)."""
    _compare(_ours("fdlf", 100))


@pytest.mark.slow  # ~28 s contended: the batched (598 x 598) LU of case 300
def test_newton_q_limits_match_matpower_loop():
    _compare(_ours("newton", 30))
