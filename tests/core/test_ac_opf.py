"""In-graph AC-OPF against PYPOWER ``runopf`` (MATPOWER's PIPS) on case 5.

The reference case is read from the MATPOWER file (``matpowercaseframes``), not from our
registry, so a registry conversion error would show up here too.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference_matpower import matpower_ppc
from pypower.api import ppoption, runopf

from powerzoojax.case import load_case
from powerzoojax.physics import ac_opf, make_ac_opf_setup
from powerzoojax.utils.jax_utils import enable_x64

PD, QD, VM, LAM_P = 2, 3, 7, 13
PG = 1


@functools.cache
def _reference_ppc():
    return matpower_ppc("case5")


@functools.cache
def _solver():
    with enable_x64():
        setup = make_ac_opf_setup(load_case("5", source="matpower"), dtype=jnp.float64)
    return jax.jit(lambda pd, qd: ac_opf(setup, pd, qd))


@pytest.mark.parametrize("scale", [1.0, 0.8, 1.12])
def test_case5_matches_pypower_runopf(scale):
    ppc = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in _reference_ppc().items()}
    ppc["bus"][:, PD] *= scale
    ppc["bus"][:, QD] *= scale
    ref = runopf(ppc, ppoption(VERBOSE=0, OUT_ALL=0))
    assert ref["success"]
    with enable_x64():
        res = _solver()(jnp.asarray(ppc["bus"][:, PD]), jnp.asarray(ppc["bus"][:, QD]))
        assert res.p_mw.dtype == jnp.float64
        assert bool(res.converged)
        assert float(res.max_mismatch) < 1e-6
        assert float(res.objective) == pytest.approx(ref["f"], rel=1e-3)
        np.testing.assert_allclose(np.asarray(res.p_mw), ref["gen"][:, PG], atol=0.5)
        np.testing.assert_allclose(np.asarray(res.vm), ref["bus"][:, VM], atol=1e-3)
        np.testing.assert_allclose(np.asarray(res.lmp), ref["bus"][:, LAM_P], rtol=1e-3, atol=0.05)


def test_line_limits_respected_and_values_finite_when_overloaded():
    case = load_case("5", source="matpower")
    with enable_x64():
        solve = _solver()
        pd = jnp.asarray(np.asarray(case.node_pd, np.float64))
        qd = jnp.asarray(np.asarray(case.node_qd, np.float64))
        res = solve(pd, qd)
        cap = np.asarray(case.line_cap, np.float64)
        rated = cap < 1e5
        s_max = np.maximum(np.asarray(res.line_s_from_mva), np.asarray(res.line_s_to_mva))
        assert np.all(s_max[rated] <= cap[rated] + 1e-3)
        # Load beyond generation capacity (Σp_max = 1530 MW): no solution exists.
        res = solve(pd * 3.0, qd * 3.0)
        assert not bool(res.converged)
        for leaf in jax.tree.leaves(res):
            assert np.all(np.isfinite(np.asarray(leaf)))


def test_analytic_derivatives_match_autodiff():
    """The MATPOWER-style first and second derivatives the interior point uses equal JAX
    autodiff of ``S = V conj(Ybus V)`` and ``|S_br|²`` at a random point (case 14, every
    line, float64)."""
    from powerzoojax.case._matrices import build_branch_admittances, build_ybus
    from powerzoojax.physics._ac_opf_model import branch_derivatives as _branch_derivatives
    from powerzoojax.physics._ac_opf_model import branch_sq_hessian as _branch_sq_hessian
    from powerzoojax.physics._ac_opf_model import bus_derivatives as _bus_derivatives
    from powerzoojax.physics._ac_opf_model import bus_hessian as _bus_hessian

    case = load_case("14")
    rng = np.random.default_rng(14)
    n = case.n_nodes
    y_from, y_to = build_branch_admittances(case)
    eye = np.eye(n)
    with enable_x64():
        ybus = jnp.asarray(build_ybus(case))
        ybr = jnp.asarray(np.concatenate([y_from, y_to]))
        cbr = jnp.asarray(np.concatenate([eye[np.asarray(case.line_from_idx)], eye[np.asarray(case.line_to_idx)]]))
        x0 = jnp.asarray(np.concatenate([rng.uniform(-0.4, 0.4, n), rng.uniform(0.9, 1.1, n)]))
        lam_p, lam_q = jnp.asarray(rng.normal(size=n)), jnp.asarray(rng.normal(size=n))
        mu = jnp.asarray(rng.uniform(0.0, 2.0, ybr.shape[0]))

        def cplx(r):
            # The real-to-complex cast that promotion would do, written out (strict promotion).
            return r.astype(jnp.complex128)

        def s_bus(x):
            v = cplx(x[n:]) * jnp.exp(1j * cplx(x[:n]))
            return v * jnp.conj(ybus @ v)

        def s_br_sq(x):
            v = cplx(x[n:]) * jnp.exp(1j * cplx(x[:n]))
            return jnp.abs((cplx(cbr) @ v) * jnp.conj(ybr @ v)) ** 2

        @jax.jit
        def both(x):
            vn = jnp.exp(1j * cplx(x[:n]))
            v = cplx(x[n:]) * vn
            s, ibus, ds_dva, ds_dvm = _bus_derivatives(ybus, v, vn)
            sb, db_dva, db_dvm = _branch_derivatives(ybr, cbr, v, vn)
            analytic = (
                s,
                jnp.hstack([ds_dva.real, ds_dvm.real]),
                jnp.hstack([ds_dva.imag, ds_dvm.imag]),
                _bus_hessian(ybus, v, ibus, cplx(lam_p) - 1j * cplx(lam_q)),
                2.0 * (jnp.conj(sb)[:, None] * jnp.hstack([db_dva, db_dvm])).real,
                _branch_sq_hessian(ybr, cbr, v, sb, db_dva, db_dvm, mu),
            )
            auto = (
                s_bus(x),
                jax.jacfwd(lambda x: s_bus(x).real)(x),
                jax.jacfwd(lambda x: s_bus(x).imag)(x),
                jax.hessian(lambda x: lam_p @ s_bus(x).real + lam_q @ s_bus(x).imag)(x),
                jax.jacfwd(s_br_sq)(x),
                jax.hessian(lambda x: mu @ s_br_sq(x))(x),
            )
            return analytic, auto

        analytic, auto = both(x0)
        for name, got, want in zip(("S", "dP/dV", "dQ/dV", "d2(λP+μQ)", "d|Sbr|²/dV", "d2(μ|Sbr|²)"), analytic, auto):
            assert float(jnp.max(jnp.abs(want))) > 1e-3, name  # non-trivial
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-9, err_msg=name)
