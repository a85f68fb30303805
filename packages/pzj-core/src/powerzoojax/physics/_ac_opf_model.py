"""The AC-OPF's network functions in polar form: branch flows and MATPOWER's analytic
first and second derivatives of bus and branch power (`dSbus_dV`, `d2Sbus_dV2`,
`dSbr_dV`, `d2ASbr_dV2`), on dense complex matrices.

Shared by the interior point (`powerzoojax.physics._ac_opf`) and its KKT derivative
(`powerzoojax.physics._ac_opf_grad`); `tests/core/test_ac_opf.py` checks them against
JAX autodiff.
"""

import jax.numpy as jnp
from powerzoojax.core import _precision as hp


def branch_flows(net, vm, va, dtype):
    """From- and to-end `(P, Q)` of every line [p.u.] at voltages `vm, va`."""
    e, f = vm * jnp.cos(va), vm * jnp.sin(va)
    bg, bb = net.branch_g.astype(dtype), net.branch_b.astype(dtype)
    ef, ff, et, ft = e[net.line_from], f[net.line_from], e[net.line_to], f[net.line_to]

    def end(gs, bs, go, bo, es, fs, eo, fo):
        i_re = gs * es - bs * fs + go * eo - bo * fo
        i_im = bs * es + gs * fs + bo * eo + go * fo
        return es * i_re + fs * i_im, fs * i_re - es * i_im

    pf, qf = end(bg[:, 0], bb[:, 0], bg[:, 1], bb[:, 1], ef, ff, et, ft)
    pt, qt = end(bg[:, 3], bb[:, 3], bg[:, 2], bb[:, 2], et, ft, ef, ff)
    return pf, qf, pt, qt


def bus_derivatives(y, v, vn):
    """`S = V conj(Y V)` and MATPOWER's `dSbus_dV` (polar): `dS/dVa, dS/dVm`."""
    ibus = hp.matmul(y, v)
    ds_dva = 1j * v[:, None] * jnp.conj(jnp.diag(ibus) - y * v[None, :])
    ds_dvm = v[:, None] * jnp.conj(y * vn[None, :]) + jnp.diag(jnp.conj(ibus) * vn)
    return v * jnp.conj(ibus), ibus, ds_dva, ds_dvm


def bus_hessian(y, v, ibus, lam):
    """`Re` of MATPOWER's `d2Sbus_dV2`: the (Va, Vm) Hessian of `Re(lamᵀ S)`, so a
    complex `lam = λ_P − j λ_Q` gives that of `λ_Pᵀ P + λ_Qᵀ Q`."""
    a = lam * v
    c = a[:, None] * jnp.conj(y * v[None, :])
    d = jnp.conj(y).T * v[None, :]
    e = jnp.conj(v)[:, None] * (d * lam[None, :] - jnp.diag(hp.matmul(d, lam)))
    f = c - jnp.diag(a * jnp.conj(ibus))
    gi = (1.0 / jnp.abs(v)).astype(v.dtype)  # complex, as the products below promote it
    gva = 1j * gi[:, None] * (e - f)
    gvv = gi[:, None] * (c + c.T) * gi[None, :]
    return jnp.block([[e + f, gva.T], [gva, gvv]]).real


def branch_derivatives(ybr, cbr, v, vn):
    """Branch-end power `S_br = (Cbr V) conj(Ybr V)` and MATPOWER's `dSbr_dV` (polar)."""
    cbr = cbr.astype(v.dtype)  # complex, as the products below promote it
    i_br = hp.matmul(ybr, v)
    v_br = hp.matmul(cbr, v)
    ds_dva = 1j * (jnp.conj(i_br)[:, None] * (cbr * v[None, :]) - v_br[:, None] * jnp.conj(ybr * v[None, :]))
    ds_dvm = v_br[:, None] * jnp.conj(ybr * vn[None, :]) + jnp.conj(i_br)[:, None] * (cbr * vn[None, :])
    return v_br * jnp.conj(i_br), ds_dva, ds_dvm


def branch_sq_hessian(ybr, cbr, v, s_br, ds_dva, ds_dvm, mu):
    """MATPOWER's `d2ASbr_dV2`: the (Va, Vm) Hessian of `Σ μ |S_br|²` (real `μ`)."""
    # Complex, as the products below promote them.
    cbr, mu = cbr.astype(v.dtype), mu.astype(v.dtype)
    lam = jnp.conj(s_br) * mu
    a = hp.matmul(jnp.conj(ybr).T, lam[:, None] * cbr)
    b = jnp.conj(v)[:, None] * a * v[None, :]
    d = jnp.diag((hp.matmul(a, v)) * jnp.conj(v))
    e = jnp.diag((hp.matmul(a.T, jnp.conj(v))) * v)
    f = b + b.T
    gi = (1.0 / jnp.abs(v)).astype(v.dtype)
    sva = 1j * gi[:, None] * (b - b.T - d + e)
    m = mu[:, None]
    haa = f - d - e + hp.matmul(ds_dva.T, m * jnp.conj(ds_dva))
    hva = sva + hp.matmul(ds_dvm.T, m * jnp.conj(ds_dva))
    hvv = gi[:, None] * f * gi[None, :] + hp.matmul(ds_dvm.T, m * jnp.conj(ds_dvm))
    return 2.0 * jnp.block([[haa, hva.T], [hva, hvv]]).real


__all__ = ["branch_flows", "bus_derivatives", "bus_hessian", "branch_derivatives", "branch_sq_hessian"]


def reported_solution(net, x, lam, n, g_units, cost_abc, line_norm):
    """The solver's reported tuple at a primal-dual point: unit P [MW] and Q [MVAr], `vm`,
    `va`, from-end P and Q flows, from- and to-end |S| [MVA], bus prices [$/MWh] and the
    generation cost [$/h]. The forward solve and its implicit derivative both report
    through here; they differ only in `line_norm` (a plain `sqrt` forward, a norm whose
    derivative at an idle line is zero for the derivative)."""
    base = net.base_mva
    va, vm, pg, qg = x[:n], x[n : 2 * n], x[2 * n : 2 * n + g_units], x[2 * n + g_units :]
    pf, qf, pt, qt = branch_flows(net, vm, va, x.dtype)
    p_mw = pg * base
    a, b, c = cost_abc
    return (
        p_mw,
        qg * base,
        vm,
        va,
        pf * base,
        qf * base,
        line_norm(pf, qf) * base,
        line_norm(pt, qt) * base,
        lam[:n],  # cost was divided by base and P-balance is in p.u.: λ is $/MWh
        jnp.sum((((a / 3.0) * p_mw + b / 2.0) * p_mw + c) * p_mw),
    )
