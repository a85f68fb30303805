"""In-graph AC optimal power flow (polar, full space), solved by a primal–dual interior point.

Variables `x = [Va (N), Vm (N), Pg (G), Qg (G)]` in p.u. on `base_mva`:

    min  Σ_g TC_g(Pg·base)                          (house polynomial a/3 p³ + b/2 p² + c p)
    s.t. P(V) = A_u Pg − Pd/base,  Q(V) = A_u Qg − Qd/base,  Va[slack] = Va_ref (the case's slack angle)
         |S_from|² ≤ cap², |S_to|² ≤ cap²           (lines with a finite rating, p.u.)
         Vmin ≤ Vm ≤ Vmax,  Pmin ≤ Pg ≤ Pmax,  Qmin ≤ Qg ≤ Qmax

The bus and branch quantities are complex dense products with the case's Ybus and the
monitored lines' `Yf, Yt` (built on the host by `make_ac_opf_setup`). The method is
MATPOWER's PIPS (a primal–dual interior point with slacks for every inequality, Newton steps on the reduced KKT system,
`σ = 0.1` centring, fraction-to-boundary 0.99995). Gradients, Jacobians and the Lagrangian
Hessian are MATPOWER's analytic polar formulas (`dSbus_dV`, `d2Sbus_dV2`, `dSbr_dV`,
`d2ASbr_dV2`) on dense complex matrices, which compile to a smaller program than JAX
autodiff of the same functions (`tests/core/test_ac_opf.py` checks them against
autodiff). The inequality Jacobian is applied by structure (flow rows dense,
bound rows ±identity); the KKT system is dense (`2N + 2G + 2N + 1` rows), so this is
meant for small and medium cases. The loop is a `lax.while_loop` with an
iteration cap: it jits and vmaps. It runs with its inputs' tangents stopped; derivatives
come from the KKT conditions at the optimum (`powerzoojax.physics._ac_opf_grad`). Dtype follows the load inputs; use float64 (the reference's
AC-OPF dtype) — float32 does not reach the tolerances. Unlike the reference (reduced-space
L-BFGS-B inside augmented-Lagrangian rounds) this solves the full-space KKT
system; the reference's published case-5 solution is the acceptance target, not the iterates.

API:

    setup = make_ac_opf_setup(case, dtype=jnp.float64)    # host; inside enable_x64 for float64
    res = ac_opf(setup, load_p_mw (N), load_q_mvar (N), p_min=None, p_max=None, max_iter=60, tol=1e-6)

`ACOPFResult`: `p_mw, q_mvar (G)`, `vm, va (N)`, `line_p_from_mw, line_q_from_mvar,
line_s_from_mva, line_s_to_mva (L)`, `lmp (N)` ($/MWh, from the P-balance duals),
`objective` ($/h), `status` (a `SolverStatus`; `converged` reads it), `n_iter`, `max_mismatch` (p.u.).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case._matrices import build_branch_admittances, build_ybus
from powerzoojax.physics._ac_opf_model import (
    branch_derivatives,
    branch_sq_hessian,
    bus_derivatives,
    bus_hessian,
    reported_solution,
)
from powerzoojax.physics._ac_opf_grad import ac_opf_kkt_derivatives, kkt_parameters
from powerzoojax.physics._ac_pf import ACNetwork, make_ac_network
from powerzoojax.physics._entry import solver_entry as _solver_entry
from powerzoojax.physics._status import SolverStatus, is_successful, raise_if_failed
from powerzoojax.physics._working_dtype import working_float_dtype
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp

_XI = 0.99995
_SIGMA = 0.1
_Z0 = 1.0
_UNLIMITED_MVA = 1e5
# Barrier-parameter floor in units of the dtype's machine epsilon (see `ac_opf`).
_MU_FLOOR_EPS = 8.0


class ACOPFSetup(eqx.Module):
    """Host-side AC-OPF operators of one case; build with
    [`make_ac_opf_setup`][powerzoojax.physics.make_ac_opf_setup].

    **Arguments:**

    - `net`: the case's [`ACNetwork`][powerzoojax.physics.ACNetwork].
    - `unit_map`: `(N, G)` unit-to-node map.
    - `mon_idx`: `(n_mon,)` lines with a finite rating.
    - `rate_pu`: `(n_mon,)` their ratings [p.u.].
    - `v_min`, `v_max`: `(N,)` voltage limits [p.u.].
    - `p_min`, `p_max`, `q_min`, `q_max`: `(G,)` unit limits [p.u.].
    - `cost_a`, `cost_b`, `cost_c`: `(G,)` marginal-cost coefficients.
    - `y_re`, `y_im`: `(N, N)` `Ybus` [p.u.].
    - `yf_re`, `yf_im`, `yt_re`, `yt_im`: `(n_mon, N)` from/to-end branch admittance rows
      of the monitored lines.
    - `cf`, `ct`: `(n_mon, N)` their from/to bus incidences.
    """
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
    # Ybus, and the from/to-end branch admittance rows `Yf, Yt` (`I_f = Yf V`) and
    # bus incidences `Cf, Ct` of the monitored lines, for the analytic derivatives.
    y_re: Float[Array, "n_nodes n_nodes"]
    y_im: Float[Array, "n_nodes n_nodes"]
    yf_re: Float[Array, "n_mon n_nodes"]
    yf_im: Float[Array, "n_mon n_nodes"]
    yt_re: Float[Array, "n_mon n_nodes"]
    yt_im: Float[Array, "n_mon n_nodes"]
    cf: Float[Array, "n_mon n_nodes"]
    ct: Float[Array, "n_mon n_nodes"]


class ACOPFResult(eqx.Module):
    """One AC-OPF solution.

    **Arguments:**

    - `p_mw`, `q_mvar`: `(G,)` dispatch [MW, MVAr].
    - `vm`, `va`: `(N,)` voltage magnitude [p.u.] and angle [rad].
    - `line_p_from_mw`, `line_q_from_mvar`: `(L,)` from-end flows [MW, MVAr].
    - `line_s_from_mva`, `line_s_to_mva`: `(L,)` end apparent powers [MVA].
    - `lmp`: `(N,)` prices from the P-balance duals [$/MWh].
    - `objective`: generation cost [$/h].
    - `status`: a [`SolverStatus`][powerzoojax.physics.SolverStatus]: `successful` (the
      KKT error met `tol`), `max_steps_reached` (`max_iter` spent) or `diverged` (stopped
      before it on a non-finite step; the best iterate is returned).
    - `n_iter`: int scalar.
    - `max_mismatch`: largest power mismatch [p.u.].

    `converged` (`status` is `successful`) is read from `status`.
    """
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
    status: SolverStatus
    n_iter: Int[Array, ""]
    max_mismatch: Float[Array, ""]

    @property
    def converged(self) -> Bool[Array, "*batch"]:
        """The KKT error met `tol` (`status` is `successful`)."""
        return is_successful(self.status)


def make_ac_opf_setup(case, dtype=jnp.float64, va_ref_deg: float | None = None) -> ACOPFSetup:
    """Host-side AC-OPF operators; lines rated at 0 or ≥ 1e5 MVA are unconstrained.

    **Arguments:**

    - `case`: the case.
    - `dtype`: dtype of the operators; float64 (build inside `powerzoojax.utils.jax_utils.enable_x64()`).
    - `va_ref_deg`: slack-bus angle [degrees], as in
      [`make_ac_network`][powerzoojax.physics.make_ac_network].

    **Returns:**

    An [`ACOPFSetup`][powerzoojax.physics.ACOPFSetup].
    """
    net = make_ac_network(case, dtype=dtype, va_ref_deg=va_ref_deg)
    cap = np.asarray(case.line_cap, np.float64)
    mon = np.flatnonzero((cap > 0) & (cap < _UNLIMITED_MVA))
    cast = lambda x: jnp.asarray(np.asarray(x, np.float64), dtype)  # noqa: E731
    n = int(case.n_nodes)
    y_bus = build_ybus(case)
    y_from, y_to = build_branch_admittances(case)
    yf, yt = y_from[mon], y_to[mon]
    eye = np.eye(n)
    cf = eye[np.asarray(case.line_from_idx, np.int64)[mon]].reshape(len(mon), n)
    ct = eye[np.asarray(case.line_to_idx, np.int64)[mon]].reshape(len(mon), n)
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
        y_re=cast(np.real(y_bus)),
        y_im=cast(np.imag(y_bus)),
        yf_re=cast(np.real(yf)),
        yf_im=cast(np.imag(yf)),
        yt_re=cast(np.real(yt)),
        yt_im=cast(np.imag(yt)),
        cf=cast(cf),
        ct=cast(ct),
    )


@_solver_entry(static_argnames=("max_iter", "tol", "throw"))
def ac_opf(
    setup: ACOPFSetup,
    load_p_mw: Float[Array, " n_nodes"],
    load_q_mvar: Float[Array, " n_nodes"],
    p_min: Float[Array, " n_units"] | None = None,
    p_max: Float[Array, " n_units"] | None = None,
    max_iter: int = 60,
    tol: float = 1e-6,
    throw: bool = False,
) -> ACOPFResult:
    """Solve one AC-OPF (polar, full space) for nodal loads with a primal–dual interior point.

    Minimises the generation cost subject to the AC power balance, line ratings, voltage
    and unit limits (MATPOWER's PIPS method with its analytic derivatives). The KKT system
    is dense, so it suits small and medium cases. It jits and vmaps; use float64, as
    float32 does not reach the tolerances. `jax.grad`, `jax.jvp` and their `vmap`s apply:
    the derivative is that of the KKT point with the limits it holds (zero where
    `converged` is false); ask for a tight `tol` (1e-10) when derivatives matter.

    **Arguments:**

    - `setup`: the [`ACOPFSetup`][powerzoojax.physics.ACOPFSetup].
    - `load_p_mw`, `load_q_mvar`: `(N,)` nodal loads [MW, MVAr].
    - `p_min`, `p_max`: `(G,)` runtime unit bounds [MW]; `None` takes the setup's.
    - `max_iter`: iteration budget (static).
    - `tol`: convergence tolerance (static).
    - `throw`: raise (at run time, also under `jit`) with the status's message unless it
      is `successful` (static); by default failure is only reported in `status`.

    **Returns:**

    An [`ACOPFResult`][powerzoojax.physics.ACOPFResult].
    """
    # The loop sees no tangents: derivatives come from the KKT conditions at the solution
    # (`_ac_opf_grad`), with the data `theta` as the call gave it.
    theta = kkt_parameters(setup, load_p_mw, load_q_mvar, p_min, p_max)
    setup, load_p_mw, load_q_mvar, p_min, p_max = lax.stop_gradient((setup, load_p_mw, load_q_mvar, p_min, p_max))
    net = setup.net
    dtype = working_float_dtype(load_p_mw)
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

    # Complex network matrices; the monitored from- and to-ends stacked (one set of
    # derivative formulas covers both, and the flow rows of g are [from; to]).
    cplx = lambda re, im: lax.complex(re.astype(dtype), im.astype(dtype))  # noqa: E731
    ybus = cplx(setup.y_re, setup.y_im)
    ybr = jnp.concatenate([cplx(setup.yf_re, setup.yf_im), cplx(setup.yt_re, setup.yt_im)])
    cbr = jnp.concatenate([setup.cf, setup.ct]).astype(dtype)
    n_flow = ybr.shape[0]
    zeros_ng = jnp.zeros((n, g_units), dtype)
    slack_row = jnp.zeros((1, n_x), dtype).at[0, slack].set(1.0)

    def split(x):
        return x[:n], x[n : 2 * n], x[2 * n : 2 * n + g_units], x[2 * n + g_units :]

    def evaluate(x):
        """Constraint values, Jacobians and the objective gradient at `x`, plus what
        the Lagrangian Hessian needs."""
        va, vm, pg, qg = split(x)
        vn = lax.complex(jnp.cos(va), jnp.sin(va))
        v = vm.astype(vn.dtype) * vn
        s_bus, ibus, dsb_dva, dsb_dvm = bus_derivatives(ybus, v, vn)
        h = jnp.concatenate([s_bus.real - (hp.matmul(umap, pg) - pd), s_bus.imag - (hp.matmul(umap, qg) - qd), va[slack : slack + 1] - va_ref])
        jh = jnp.concatenate(
            [
                jnp.concatenate([dsb_dva.real, dsb_dvm.real, -umap, zeros_ng], axis=1),
                jnp.concatenate([dsb_dva.imag, dsb_dvm.imag, zeros_ng, -umap], axis=1),
                slack_row,
            ]
        )
        s_br, dsr_dva, dsr_dvm = branch_derivatives(ybr, cbr, v, vn)
        flow = s_br.real**2 + s_br.imag**2 - jnp.concatenate([rate2, rate2])
        # d|S|²/dV = 2 Re(conj(S) dS/dV)
        j_flow = 2.0 * (jnp.conj(s_br)[:, None] * jnp.concatenate([dsr_dva, dsr_dvm], axis=1)).real
        gv = jnp.concatenate([flow, vm - vhi, vlo - vm, pg - phi, plo - pg, qg - qhi, qlo - qg])
        pmw = pg * base
        # The cost is scaled by 1/base so that multipliers are O(1) in p.u. terms.
        df = jnp.concatenate([jnp.zeros((2 * n,), dtype), (a * pmw + b) * pmw + c, jnp.zeros((g_units,), dtype)])
        d2f = (2.0 * a * pmw + b) * base
        return h, gv, jh, j_flow, df, d2f, (v, ibus, s_br, dsr_dva, dsr_dvm)

    def split_g(r):
        """Rows of g: flows, then the six bound blocks."""
        k = n_flow
        out = [r[:k]]
        for size in (n, n, g_units, g_units, g_units, g_units):
            out.append(r[k : k + size])
            k += size
        return out

    def jg_t(j_flow, r):
        """`Jgᵀ r` (bound rows are ±identity)."""
        rf, vhi_, vlo_, phi_, plo_, qhi_, qlo_ = split_g(r)
        jv = hp.matmul(rf, j_flow)
        return jnp.concatenate([jv[:n], jv[n:] + vhi_ - vlo_, phi_ - plo_, qhi_ - qlo_])

    def jg_dot(j_flow, dx):
        """`Jg dx`."""
        _, dvm, dpg, dqg = split(dx)
        return jnp.concatenate([hp.matmul(j_flow, dx[: 2 * n]), dvm, -dvm, dpg, -dpg, dqg, -dqg])

    def newton_matrix(lam, z, w, j_flow, d2f, aux):
        """`∇²L + Jgᵀ diag(w) Jg` with `w = z/s`."""
        v, ibus, s_br, dsr_dva, dsr_dvm = aux
        lam_s = lax.complex(lam[:n], -lam[n : 2 * n])
        h_v = bus_hessian(ybus, v, ibus, lam_s) + branch_sq_hessian(ybr, cbr, v, s_br, dsr_dva, dsr_dvm, z[:n_flow])
        wf, wvhi, wvlo, wphi, wplo, wqhi, wqlo = split_g(w)
        h_v = h_v + hp.matmul(j_flow.T, wf[:, None] * j_flow)
        h_v = h_v + jnp.diag(jnp.concatenate([jnp.zeros((n,), dtype), wvhi + wvlo]))
        h_g = jnp.diag(jnp.concatenate([d2f + wphi + wplo, wqhi + wqlo]))
        z_vg = jnp.zeros((2 * n, 2 * g_units), dtype)
        return jnp.block([[h_v, z_vg], [z_vg.T, h_g]])

    def g_of(x):
        return evaluate(x)[1]

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
        h, gv, jh, j_flow, df, d2f, aux = evaluate(x)
        lx = df + hp.matmul(lam, jh) + jg_t(j_flow, z)
        x_scale = 1.0 + jnp.max(jnp.abs(x))
        feas = jnp.maximum(jnp.max(jnp.abs(h)), jnp.max(jnp.maximum(gv, 0.0))) / x_scale
        grad = jnp.max(jnp.abs(lx)) / (1.0 + jnp.maximum(jnp.max(jnp.abs(lam)), jnp.max(jnp.abs(z))))
        comp = hp.dot(z, s) / x_scale
        err = jnp.maximum(jnp.maximum(feas, grad), comp)
        err = jnp.where(jnp.isfinite(err), err, big)
        # Keep the best iterate seen: in float32 the error stalls around 1e-5..1e-3 and
        # oscillates there, so the last iterate is not always the best one.
        better = err < best[2]
        best = jax.tree.map(lambda nv, ov: jnp.where(better, nv, ov), (x, lam, err, jnp.max(jnp.abs(h))), best)
        done = err < tol

        mu = jnp.maximum(_SIGMA * hp.dot(z, s) / n_in, mu_floor)
        m_mat = newton_matrix(lam, z, z / s, j_flow, d2f, aux)
        n_vec = lx + jg_t(j_flow, (mu + z * gv) / s)
        kkt = jnp.block([[m_mat, jh.T], [jh, jnp.zeros((n_eq, n_eq), dtype)]])
        # Symmetric Jacobi scaling: z/s spans many decades near the optimum; equilibrating
        # rows and columns keeps the float32 LU usable there.
        d = 1.0 / jnp.sqrt(jnp.maximum(jnp.max(jnp.abs(kkt), axis=1), jnp.finfo(dtype).tiny))
        sol = d * jnp.linalg.solve(d[:, None] * kkt * d[None, :], -d * jnp.concatenate([n_vec, h]))
        dx, dlam = sol[:n_x], sol[n_x:]
        ds = -gv - s - jg_dot(j_flow, dx)
        dz = -z + (mu - z * ds) / s
        ap = jnp.minimum(_XI * jnp.min(where(ds < 0, -s / where(ds < 0, ds, -1.0), jnp.inf)), 1.0)
        ad = jnp.minimum(_XI * jnp.min(where(dz < 0, -z / where(dz < 0, dz, -1.0), jnp.inf)), 1.0)
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
    converged = err < tol
    # The loop counts finite steps only: one that ends short of the budget unconverged
    # stopped on a non-finite step.
    status = SolverStatus.where(
        converged,
        SolverStatus.successful,
        SolverStatus.where(it < max_iter, SolverStatus.diverged, SolverStatus.max_steps_reached),
    )
    values = reported_solution(net, x, lam, n, g_units, (a, b, c), lambda re, im: jnp.sqrt(re * re + im * im))
    # Converged, the loop stopped on the best iterate, so its last `z, s` are the
    # best iterate's (the active set of the derivative).
    p_mw, q_mvar, vm, va, pf_mw, qf_mvar, s_from, s_to, lmp, objective = ac_opf_kkt_derivatives(
        values, x, lam, z, s, theta, converged
    )
    result = ACOPFResult(
        p_mw=p_mw,
        q_mvar=q_mvar,
        vm=vm,
        va=va,
        line_p_from_mw=pf_mw,
        line_q_from_mvar=qf_mvar,
        line_s_from_mva=s_from,
        line_s_to_mva=s_to,
        lmp=lmp,
        objective=objective,
        status=status,
        n_iter=it,
        max_mismatch=mism,
    )
    return raise_if_failed(result, status, throw)
