"""In-graph AC optimal power flow (polar, full space), solved by a primal–dual interior point.

Variables ``x = [Va (N), Vm (N), Pg (G), Qg (G)]`` in p.u. on ``base_mva``::

    min  Σ_g TC_g(Pg·base)                          (house polynomial a/3 p³ + b/2 p² + c p)
    s.t. P(V) = A_u Pg − Pd/base,  Q(V) = A_u Qg − Qd/base,  Va[slack] = Va_ref (the case's slack angle)
         |S_from|² ≤ cap², |S_to|² ≤ cap²           (lines with a finite rating, p.u.)
         Vmin ≤ Vm ≤ Vmax,  Pmin ≤ Pg ≤ Pmax,  Qmin ≤ Qg ≤ Qmax

The bus injections reuse ``_bus_power`` of :mod:`powerzoojax.physics._ac_pf` (the same
Ybus GEMM as the Newton–Raphson power flow). The method is MATPOWER's PIPS (a primal–dual
interior point with slacks for every inequality, Newton steps on the reduced KKT system,
``σ = 0.1`` centring, fraction-to-boundary 0.99995); gradients, Jacobians and the Lagrangian
Hessian come from JAX autodiff, and the KKT system is dense (``2N + 2G + 2N + 1`` rows), so
this is meant for small and medium cases. The loop is a ``lax.while_loop`` with an
iteration cap: it jits and vmaps. Dtype follows the load inputs; use float64 (the spec's
AC-OPF dtype) — float32 does not reach the tolerances. Unlike the reference (reduced-space
L-BFGS-B inside augmented-Lagrangian rounds, spec §2.3) this solves the full-space KKT
system; the golden of spec §6.4 is the acceptance target, not the iterates.

API::

    setup = make_ac_opf_setup(case, dtype=jnp.float64)    # host; inside enable_x64 for float64
    res = ac_opf(setup, load_p_mw (N), load_q_mvar (N), p_min=None, p_max=None, max_iter=60, tol=1e-6)

``ACOPFResult``: ``p_mw, q_mvar (G)``, ``vm, va (N)``, ``line_p_from_mw, line_q_from_mvar,
line_s_from_mva, line_s_to_mva (L)``, ``lmp (N)`` ($/MWh, from the P-balance duals),
``objective`` ($/h), ``converged``, ``n_iter``, ``max_mismatch`` (p.u.).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.physics._ac_pf import ACNetwork, _bus_power, make_ac_network

_XI = 0.99995
_SIGMA = 0.1
_Z0 = 1.0
_UNLIMITED_MVA = 1e5
# Barrier-parameter floor in units of the dtype's machine epsilon (see `ac_opf`).
_MU_FLOOR_EPS = 8.0


class ACOPFSetup(eqx.Module):
    net: ACNetwork
    unit_map: Float[Array, "n_nodes n_units"]
    mon_idx: Int[Array, " n_mon"]
    rate_pu: Float[Array, " n_mon"]
    v_min: Float[Array, " n_nodes"]
    v_max: Float[Array, " n_nodes"]
    p_min: Float[Array, " n_units"]
    p_max: Float[Array, " n_units"]
    q_min: Float[Array, " n_units"]
    q_max: Float[Array, " n_units"]
    cost_a: Float[Array, " n_units"]
    cost_b: Float[Array, " n_units"]
    cost_c: Float[Array, " n_units"]


class ACOPFResult(eqx.Module):
    p_mw: Float[Array, " n_units"]
    q_mvar: Float[Array, " n_units"]
    vm: Float[Array, " n_nodes"]
    va: Float[Array, " n_nodes"]
    line_p_from_mw: Float[Array, " n_lines"]
    line_q_from_mvar: Float[Array, " n_lines"]
    line_s_from_mva: Float[Array, " n_lines"]
    line_s_to_mva: Float[Array, " n_lines"]
    lmp: Float[Array, " n_nodes"]
    objective: Float[Array, ""]
    converged: Bool[Array, ""]
    n_iter: Int[Array, ""]
    max_mismatch: Float[Array, ""]


def make_ac_opf_setup(case, dtype=jnp.float64, va_ref_deg: float | None = None) -> ACOPFSetup:
    """Host-side operators; lines rated at 0 or ≥ 1e5 MVA are unconstrained.
    ``va_ref_deg``: slack-bus angle, as in :func:`~powerzoojax.physics.make_ac_network`."""
    net = make_ac_network(case, dtype=dtype, va_ref_deg=va_ref_deg)
    cap = np.asarray(case.line_cap, np.float64)
    mon = np.flatnonzero((cap > 0) & (cap < _UNLIMITED_MVA))
    cast = lambda x: jnp.asarray(np.asarray(x, np.float64), dtype)  # noqa: E731
    return ACOPFSetup(
        net=net,
        unit_map=cast(case.nodes_units_map),
        mon_idx=jnp.asarray(mon, jnp.int32),
        rate_pu=cast(cap[mon] / float(case.base_mva)),
        v_min=cast(case.node_v_min),
        v_max=cast(case.node_v_max),
        p_min=cast(case.unit_p_min),
        p_max=cast(case.unit_p_max),
        q_min=cast(case.unit_q_min),
        q_max=cast(case.unit_q_max),
        cost_a=cast(case.unit_cost_a),
        cost_b=cast(case.unit_cost_b),
        cost_c=cast(case.unit_cost_c),
    )


def _branch_flows(net, vm, va, dtype):
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


def ac_opf(
    setup: ACOPFSetup,
    load_p_mw: Float[Array, " n_nodes"],
    load_q_mvar: Float[Array, " n_nodes"],
    p_min: Float[Array, " n_units"] | None = None,
    p_max: Float[Array, " n_units"] | None = None,
    max_iter: int = 60,
    tol: float = 1e-6,
) -> ACOPFResult:
    """Solve one AC-OPF for nodal loads [MW, MVAr] (see module docstring)."""
    net = setup.net
    dtype = jnp.result_type(jnp.asarray(load_p_mw).dtype, jnp.float32)
    base = net.base_mva
    n, g_units = net.n_nodes, net.n_units
    cast = lambda v: jnp.asarray(v, dtype)  # noqa: E731
    pd, qd = cast(load_p_mw) / base, cast(load_q_mvar) / base
    plo = cast(setup.p_min if p_min is None else p_min) / base
    phi = cast(setup.p_max if p_max is None else p_max) / base
    qlo, qhi = cast(setup.q_min) / base, cast(setup.q_max) / base
    vlo, vhi = cast(setup.v_min), cast(setup.v_max)
    a, b, c = cast(setup.cost_a), cast(setup.cost_b), cast(setup.cost_c)
    umap = setup.unit_map.astype(dtype)
    rate2 = cast(setup.rate_pu) ** 2
    slack = net.slack_idx
    va_ref = net.va_ref.astype(dtype)
    n_x = 2 * n + 2 * g_units

    def split(x):
        return x[:n], x[n : 2 * n], x[2 * n : 2 * n + g_units], x[2 * n + g_units :]

    def cost(x):
        pmw = split(x)[2] * base
        # Scaled by 1/base so that multipliers are O(1) in p.u. terms.
        return jnp.sum((((a / 3.0) * pmw + b / 2.0) * pmw + c) * pmw) / base

    def h_of(x):
        va, vm, pg, qg = split(x)
        p, q, _ = _bus_power(net, dtype, vm, va)
        return jnp.concatenate([p - (umap @ pg - pd), q - (umap @ qg - qd), va[slack : slack + 1] - va_ref])

    def g_of(x):
        va, vm, pg, qg = split(x)
        pf, qf, pt, qt = _branch_flows(net, vm, va, dtype)
        sf2 = (pf * pf + qf * qf)[setup.mon_idx] - rate2
        st2 = (pt * pt + qt * qt)[setup.mon_idx] - rate2
        return jnp.concatenate([sf2, st2, vm - vhi, vlo - vm, pg - phi, plo - pg, qg - qhi, qlo - qg])

    def lagrangian(x, lam, z):
        return cost(x) + jnp.dot(lam, h_of(x)) + jnp.dot(z, g_of(x))

    grad_f = jax.grad(cost)
    jac_h = jax.jacfwd(h_of)
    jac_g = jax.jacfwd(g_of)
    hess_l = jax.hessian(lagrangian, argnums=0)

    # Start: flat voltages mid-band, generation mid-range.
    x0 = jnp.concatenate([jnp.full((n,), va_ref, dtype), 0.5 * (vlo + vhi), 0.5 * (plo + phi), 0.5 * (qlo + qhi)])
    g0 = g_of(x0)
    n_eq = 2 * n + 1
    n_in = g0.shape[0]
    s0 = jnp.where(g0 < -1.0, -g0, 1.0)
    z0 = jnp.full((n_in,), _Z0, dtype)
    lam0 = jnp.zeros((n_eq,), dtype)

    # Barrier floor: in float32 the complementarity cannot usefully go below ~eps (z/s then
    # spans ~14 decades and the KKT solve returns noise, which sent the iterates away from
    # a solution they had reached). In float64 the floor is ~1e-15, i.e. absent.
    mu_floor = _MU_FLOOR_EPS * jnp.finfo(dtype).eps
    big = jnp.asarray(jnp.finfo(dtype).max, dtype)

    def body(carry):
        # One derivative evaluation per iteration: the termination test of the incoming
        # iterate reuses the Jacobians of its Newton step (compiling them twice doubled
        # the compile time), at the price of one extra evaluation at the end.
        it, x, lam, z, s, best, _ = carry
        h, gv = h_of(x), g_of(x)
        jh, jg = jac_h(x), jac_g(x)
        lx = grad_f(x) + jh.T @ lam + jg.T @ z
        x_scale = 1.0 + jnp.max(jnp.abs(x))
        feas = jnp.maximum(jnp.max(jnp.abs(h)), jnp.max(jnp.maximum(gv, 0.0))) / x_scale
        grad = jnp.max(jnp.abs(lx)) / (1.0 + jnp.maximum(jnp.max(jnp.abs(lam)), jnp.max(jnp.abs(z))))
        comp = jnp.dot(z, s) / x_scale
        err = jnp.maximum(jnp.maximum(feas, grad), comp)
        err = jnp.where(jnp.isfinite(err), err, big)
        # Keep the best iterate seen: in float32 the error stalls around 1e-5..1e-3 and
        # oscillates there, so the last iterate is not always the best one.
        better = err < best[2]
        best = jax.tree.map(lambda nv, ov: jnp.where(better, nv, ov), (x, lam, err, jnp.max(jnp.abs(h))), best)
        done = err < tol

        mu = jnp.maximum(_SIGMA * jnp.dot(z, s) / n_in, mu_floor)
        m_mat = hess_l(x, lam, z) + jg.T @ ((z / s)[:, None] * jg)
        n_vec = lx + jg.T @ ((mu + z * gv) / s)
        kkt = jnp.block([[m_mat, jh.T], [jh, jnp.zeros((n_eq, n_eq), dtype)]])
        # Symmetric Jacobi scaling: z/s spans many decades near the optimum; equilibrating
        # rows and columns keeps the float32 LU usable there.
        d = 1.0 / jnp.sqrt(jnp.maximum(jnp.max(jnp.abs(kkt), axis=1), jnp.finfo(dtype).tiny))
        sol = d * jnp.linalg.solve(d[:, None] * kkt * d[None, :], -d * jnp.concatenate([n_vec, h]))
        dx, dlam = sol[:n_x], sol[n_x:]
        ds = -gv - s - jg @ dx
        dz = -z + (mu - z * ds) / s
        ap = jnp.minimum(_XI * jnp.min(jnp.where(ds < 0, -s / jnp.where(ds < 0, ds, -1.0), jnp.inf)), 1.0)
        ad = jnp.minimum(_XI * jnp.min(jnp.where(dz < 0, -z / jnp.where(dz < 0, dz, -1.0), jnp.inf)), 1.0)
        new = (x + ap * dx, lam + ad * dlam, z + ad * dz, s + ap * ds)
        ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(v)) for v in new])) & ~done
        x, lam, z, s = (jnp.where(ok, nv, ov) for nv, ov in zip(new, (x, lam, z, s)))
        # Stop at convergence, or when the step is no longer finite (the best iterate so
        # far is returned).
        return it + ok.astype(jnp.int32), x, lam, z, s, best, done | ~ok

    def cond(carry):
        it, *_, stop = carry
        return (it < max_iter) & ~stop

    best0 = (x0, lam0, big, big)
    init = (jnp.asarray(0, jnp.int32), x0, lam0, z0, s0, best0, jnp.asarray(False))
    it, x_last, lam_last, z, s, best, _ = lax.while_loop(cond, body, init)
    x, lam, err, mism = best
    # The loop may end on the iteration cap right after a step: the last iterate was not
    # scored, which only means a possibly better final iterate is ignored.
    va, vm, pg, qg = split(x)
    pf, qf, pt, qt = _branch_flows(net, vm, va, dtype)
    p_mw = pg * base
    return ACOPFResult(
        p_mw=p_mw,
        q_mvar=qg * base,
        vm=vm,
        va=va,
        line_p_from_mw=pf * base,
        line_q_from_mvar=qf * base,
        line_s_from_mva=jnp.sqrt(pf * pf + qf * qf) * base,
        line_s_to_mva=jnp.sqrt(pt * pt + qt * qt) * base,
        lmp=lam[:n],  # cost was divided by base and P-balance is in p.u.: λ is $/MWh
        objective=jnp.sum((((a / 3.0) * p_mw + b / 2.0) * p_mw + c) * p_mw),
        converged=err < tol,
        n_iter=it,
        max_mismatch=mism,
    )
