"""A small dense primal–dual interior-point solver for separable convex dispatch problems.

Problem (`n` variables, `m` two-sided row constraints, one balance row):

    min  Σ_i (r_i/3) x_i³ + (q_i/2) x_i² + c_i x_i  +  π Σ_j (t⁺_j + t⁻_j)
    s.t. Σ_i x_i = d
         lo ≤ x ≤ hi
         row_lo − t⁻ ≤ A x ≤ row_hi + t⁺,   t⁺, t⁻ ≥ 0

This is the shape of every economic dispatch in the project: generation cost per unit
(the house polynomial `TC = a/3 p³ + b/2 p² + c p` is `r = a, q = b`; it is convex on
`x ≥ 0` when `a, b ≥ 0`), one power balance, unit bounds, PTDF line limits. The row
limits are *elastic*: a violation costs `π` per unit, so an instance whose limits
cannot all be met still has a finite optimum (the best-effort dispatch) and the solver
never diverges on it; the caller reads `Σ t` to tell infeasible from feasible. The row
duals are then bounded by `π`.

Method: Mehrotra predictor–corrector on the KKT system, all slack and bound variables
eliminated so that one `(n × n)` matrix `H + Aᵀ W A` (`H` diagonal) is factored per
iteration and shared by predictor and corrector (its row-space Woodbury form loses
float32 accuracy to cancellation). A small proximal
floor on the scaled Hessian keeps linear-cost problems strictly convex. With `m = 0` that matrix is diagonal
and no factorisation happens at all (a static branch). The iteration ends at a relative
gap of `tol`, which on a (nearly) linear cost can leave the dispatch MW from the
optimal vertex; a final active-set polish (`_polish`) solves the KKT equations on the
bounds and rows the interior point found active and keeps that answer only when it is a
certified KKT point. The problem is solved in scaled
units (`x` ÷ the widest box, cost ÷ the largest marginal cost) so float32 reaches a
relative accuracy of about 1e-5 on well-conditioned
instances and 1e-4 on degenerate (linear-cost, congested) ones, hence the default `tol`. The loop is a `lax.while_loop` with a traced
convergence test and an iteration cap: it jits, vmaps and never branches on the host.

The SCED of `powerzoojax.market` solves the linear special case (`r = q = 0`, rows
`[M_S]`) with a hard-limit LP interior point of its own; it could call
[`solve_dispatch_qp`][powerzoojax.physics.solve_dispatch_qp] with `cubic = quad = 0`, `lin = offer prices`, `lo = 0`,
`hi = segment widths`, `total = D`, `a_t = M_Sᵀ` and `row_lo/hi = floor/cap − f0`.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.physics._costs import generation_cost
from powerzoojax.physics._status import SolverStatus, is_successful
from powerzoojax.physics._working_dtype import working_float_dtype
from powerzoojax.physics._small_linalg import inverse_cholesky, lu_factor, lu_solve, spd_solve
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp

_TAU = 0.995  # fraction of the distance to the boundary taken per step
_RIDGE = 1e-5  # relative to the equilibrated diagonal (float32 pivots fail below ~1e-6)
_RIDGE_F64 = 1e-10  # float64 pivots hold far below that
_DUAL_WEIGHT_ACCEPT = 0.02  # dual residual accepted up to 50·tol (see the convergence note)
_PROX = 1e-4  # strict-convexity floor on the scaled Hessian (linear costs are degenerate)
_REFINE = 3  # iterative-refinement steps per solve (they undo the ridge)
_ZCAP = 1e-3  # bound distance below which the initial bound dual stops growing (scaled)
_MU0 = 0.1  # initial complementarity in scaled units
_SLACK0 = 0.1  # initial row slack in scaled units
# Acceptance of the active-set polish (scaled units), per itemsize: primal residual (MW /
# widest box) and dual sign / stationarity slack (cost / largest marginal cost).
_POLISH_TOL = {4: (2e-5, 1e-3), 8: (1e-9, 1e-8)}
_POLISH_REG = {4: 1e-6, 8: 1e-10}
_POLISH_REFINE = 2  # refinement steps per polish solve
_POLISH_PASSES = 8  # active-set guesses tried (the interior point's, then corrections)


class DispatchProblem(eqx.Module):
    """One instance of the separable dispatch problem above, as the DC-OPF poses it to its
    solvers and to the KKT derivative (`powerzoojax.physics._dispatch_grad`).

    **Arguments:**

    - `cubic`, `quad`, `lin`: `(n,)` cost coefficients `r`, `q`, `c` (marginal cost
      `r x² + q x + c`).
    - `lo`, `hi`: `(n,)` bounds.
    - `total`: balance target.
    - `a_t`: `(n, m)` row coefficients, transposed.
    - `row_lo`, `row_hi`: `(m,)` row limits.
    """

    cubic: Float[Array, " n"]
    quad: Float[Array, " n"]
    lin: Float[Array, " n"]
    lo: Float[Array, " n"]
    hi: Float[Array, " n"]
    total: Float[Array, ""]
    a_t: Float[Array, "n m"]
    row_lo: Float[Array, " m"]
    row_hi: Float[Array, " m"]


class DispatchQPSolution(eqx.Module):
    """Primal–dual solution in the caller's units.

    **Arguments:**

    - `x`: `(n,)` the solution.
    - `nu`: dual of the balance row, in the sign convention
      `∇f + ν + Aᵀ(μ⁺ − μ⁻) = …`, so the system price is `−ν`.
    - `mu_upper`, `mu_lower`: `(m,)` duals (≥ 0, ≤ π) of the upper and lower row limits.
    - `row_violation`: `(m,)` `t⁺ + t⁻` per row.
    - `status`: a [`SolverStatus`][powerzoojax.physics.SolverStatus]: `successful` when the
      solver met its tolerance (`converged`), `infeasible` (the dual simplex: a row no
      column repairs), `max_steps_reached` (the budget ran out), `diverged` (the interior
      point stopped early on a non-finite step) or `nonfinite` (the dual simplex's
      optimal basis gave non-finite values).
    - `n_iter`: int scalar.
    - `residual`: largest scaled KKT residual at the end.
    - `certified`: bool scalar, an exact KKT point of the problem (the interior point's
      active-set polish, or an exact method); `False` leaves only the relative-gap
      guarantee of `converged`.
    """

    x: Float[Array, " n"]
    nu: Float[Array, ""]
    mu_upper: Float[Array, " m"]
    mu_lower: Float[Array, " m"]
    row_violation: Float[Array, " m"]
    status: SolverStatus
    n_iter: Int[Array, ""]
    residual: Float[Array, ""]
    certified: Bool[Array, ""]

    @property
    def converged(self) -> Bool[Array, "*batch"]:
        """The solver met its tolerance (`status` is `successful`)."""
        return is_successful(self.status)


def _poly_terms(x, cubic, quad, lin):
    grad = (cubic * x + quad) * x + lin
    hess = 2.0 * cubic * x + quad
    return grad, hess


def solve_dispatch_qp(
    cubic: Float[Array, " n"],
    quad: Float[Array, " n"],
    lin: Float[Array, " n"],
    lo: Float[Array, " n"],
    hi: Float[Array, " n"],
    total: Float[Array, ""],
    a_t: Float[Array, "n m"],
    row_lo: Float[Array, " m"],
    row_hi: Float[Array, " m"],
    penalty: float = 1e3,
    max_iter: int = 30,
    tol: float = 1e-4,
    x0: Float[Array, " n"] | None = None,
) -> DispatchQPSolution:
    """Solve the elastic separable dispatch QP with a primal–dual interior point.

    Minimises `Σ_i (r_i/3) x_i³ + (q_i/2) x_i² + c_i x_i + π Σ_j (t⁺_j + t⁻_j)` subject to
    `Σ_i x_i = total`, `lo ≤ x ≤ hi` and `row_lo − t⁻ ≤ A x ≤ row_hi + t⁺`. Requires
    `lo < hi` elementwise and `Σlo < total < Σhi` (the caller widens fixed variables and
    clips the total).

    **Arguments:**

    - `cubic`, `quad`, `lin`: `(n,)` cost coefficients `r`, `q`, `c`.
    - `lo`, `hi`: `(n,)` bounds.
    - `total`: balance target.
    - `a_t`: `(n, m)` `Aᵀ`, stored transposed so that the batched products are plain GEMMs.
    - `row_lo`, `row_hi`: `(m,)` row limits.
    - `penalty`: `π` per unit of row violation, as a multiple of the largest marginal
      cost of the problem.
    - `max_iter`: iteration budget.
    - `tol`: bound on the scaled residuals and complementarity.
    - `x0`: `(n,)` optional warm start (pulled into the box interior).

    **Returns:**

    A [`DispatchQPSolution`][powerzoojax.physics.DispatchQPSolution].
    """
    dtype = working_float_dtype(lin)
    n, m = a_t.shape
    # Solved in offsets from the lower bounds (the cost polynomial re-expanded around
    # `lo`): a sliver-wide box (a fixed unit) then keeps full float32 precision at any
    # output level, so it can be thin enough that clipping it off afterwards moves no
    # line flow measurably (1e-4 slivers left 0.0014 MW overloads on OPTIMAL DC-OPF
    # answers). The gap is still judged against the full cost, through `TC(lo)`.
    lo_shift = lo
    cost_lo = generation_cost(lo, cubic, quad, lin)
    quad, lin = quad + 2.0 * cubic * lo, (cubic * lo + quad) * lo + lin
    row_lo, row_hi = row_lo - hp.matmul(lo, a_t), row_hi - hp.matmul(lo, a_t)
    total = total - jnp.sum(lo)
    x0 = None if x0 is None else x0 - lo
    lo, hi = jnp.zeros_like(lo), hi - lo
    # Scaling: x in units of the widest box, cost in units of the largest marginal cost.
    sx = jnp.maximum(jnp.max(hi - lo), 1e-6)
    mc_hi = jnp.abs((cubic * hi + quad) * hi + lin)
    mc_lo = jnp.abs((cubic * lo + quad) * lo + lin)
    sc = jnp.maximum(jnp.max(jnp.maximum(mc_hi, mc_lo)), 1e-3)
    r_ = cubic * sx * sx / sc
    q_ = quad * sx / sc + _PROX
    c_ = lin / sc
    lo_, hi_ = lo / sx, hi / sx
    d_ = total / sx
    pi_ = jnp.asarray(penalty, dtype)
    obj_offset = cost_lo / (sc * sx)
    h = jnp.concatenate([row_hi, -row_lo]) / sx
    eye = jnp.eye(n, dtype=dtype)
    ridge = _RIDGE_F64 if dtype == jnp.float64 else _RIDGE

    def g_of(x):  # stacked rows [A x; −A x]
        ax = hp.matmul(x, a_t)
        return jnp.concatenate([ax, -ax])

    def gt_of(v):  # Gᵀ v
        return hp.matmul(a_t, v[:m] - v[m:])

    # Initial point: the warm start or the proportional fill, strictly inside the box.
    width = hi_ - lo_
    if x0 is None:
        frac = (d_ - jnp.sum(lo_)) / jnp.sum(width)
        x = lo_ + jnp.clip(frac, 0.05, 0.95) * width
    else:
        x = jnp.clip(x0 / sx, lo_ + 0.01 * width, hi_ - 0.01 * width)
    grad0, _ = _poly_terms(x, r_, q_, c_)
    # Capped so that a sliver-wide box (a fixed unit) does not start with a bound dual
    # of ~1e5 that takes the whole iteration budget to come down.
    zl = _MU0 / jnp.maximum(x - lo_, _ZCAP)
    zu = _MU0 / jnp.maximum(hi_ - x, _ZCAP)
    nu = -jnp.mean(grad0)
    gap = h - g_of(x)
    s = jnp.maximum(gap, 0.0) + _SLACK0
    t = s - gap
    z = jnp.minimum(_MU0 / s, 0.5 * pi_)
    y = pi_ - z
    n_compl = 2 * n + 4 * m

    def residuals(state):
        x, nu, zl, zu, s, t, z, y = state
        grad, hess = _poly_terms(x, r_, q_, c_)
        r_d = grad + nu + gt_of(z) - zl + zu
        r_e = jnp.sum(x) - d_
        r_p = g_of(x) + s - t - h
        r_t = pi_ - z - y
        xl, xu = x - lo_, hi_ - x
        mu = (hp.dot(zl, xl) + hp.dot(zu, xu) + hp.dot(z, s) + hp.dot(y, t)) / n_compl
        return r_d, r_e, r_p, r_t, xl, xu, mu, hess

    def error(state):
        """(drive, accept): scaled KKT errors with the dual residual at 10·tol / 50·tol."""
        r_d, r_e, r_p, r_t, _, _, mu, _ = residuals(state)
        # Dual residuals are judged at 10·tol: in float32 they plateau near 1e-4 of the
        # largest marginal cost on degenerate LPs (cents) while the gap keeps closing.
        err = jnp.abs(r_e)
        if m:
            # r_t lives on the scale of π (≫ 1): judge it relative to π.
            err = jnp.maximum(err, jnp.maximum(jnp.max(jnp.abs(r_p)), 0.1 * jnp.max(jnp.abs(r_t)) / jnp.maximum(pi_, 1.0)))
        # Complementarity as the total duality gap relative to the objective (judged at
        # 10·tol like the dual residuals), so `tol` bounds the relative cost error.
        x = state[0]
        obj = jnp.sum((((r_ / 3.0) * x + q_ / 2.0) * x + c_) * x) + obj_offset
        err = jnp.maximum(err, 0.1 * mu * n_compl / jnp.maximum(jnp.abs(obj), 1.0))
        dual = jnp.max(jnp.abs(r_d))
        return jnp.maximum(err, 0.1 * dual), jnp.maximum(err, _DUAL_WEIGHT_ACCEPT * dual)

    def max_step(v, dv):
        ratio = where(dv < 0, -v / where(dv < 0, dv, -1.0), jnp.inf)
        return jnp.min(ratio) if v.shape[0] else jnp.asarray(jnp.inf, dtype)

    def newton(state):
        x, nu, zl, zu, s, t, z, y = state
        r_d, r_e, r_p, r_t, xl, xu, mu, hess = residuals(state)
        kdiag = hess + zl / xl + zu / xu
        if m:
            dd = s / z + t / y
            wt = 1.0 / dd
            w_net = wt[:m] + wt[m:]

            def kmul(v):  # (H + Aᵀ W A) v for the columns of v, without forming the matrix
                return kdiag[:, None] * v + hp.matmul(a_t, w_net[:, None] * (hp.matmul(a_t.T, v)))

            kmat = hp.matmul(a_t, w_net[:, None] * a_t.T) + jnp.diag(kdiag)
            scale = lax.rsqrt(jnp.maximum(jnp.diag(kmat), 1e-30))
            # K⁻¹ ≈ S (S K S + ridge)⁻¹ S = Mᵀ M with M = W S, W the inverse factor.
            m_inv = inverse_cholesky(scale[:, None] * kmat * scale[None, :] + ridge * eye) * scale[None, :]

            def ksolve_once(b):
                return spd_solve(m_inv, b)

            def ksolve(b: Array) -> Array:
                # Refinement steps against the un-ridged operator: float32 round-off in
                # the factor otherwise leaves a residual floor above `tol`. From y = 0
                # the first pass is the plain solve.
                return lax.fori_loop(0, _REFINE + 1, lambda _, y: y + ksolve_once(b - kmul(y)), jnp.zeros_like(b))
        else:
            dd = jnp.zeros((0,), dtype)

            def ksolve(b: Array) -> Array:
                return b / kdiag[:, None]

        def rhs_of(c_l, c_u, c_s, c_t):
            if m:
                g = r_p - c_s / z + (c_t + t * r_t) / y
                return -r_d - gt_of(g / dd) - c_l / xl + c_u / xu, g
            return -r_d - c_l / xl + c_u / xu, None

        def direction(k_rhs, k_ones, g, c_l, c_u, c_s, c_t):
            dnu = (jnp.sum(k_rhs) + r_e) / jnp.sum(k_ones)
            dx = k_rhs - k_ones * dnu
            dzl = (-c_l - zl * dx) / xl
            dzu = (-c_u + zu * dx) / xu
            if m:
                dz = (g_of(dx) + g) / dd
                dy = r_t - dz
                ds = (-c_s - s * dz) / z
                dt = (-c_t - t * dy) / y
            else:
                dz = dy = ds = dt = jnp.zeros((0,), dtype)
            return dx, dnu, dzl, dzu, ds, dt, dz, dy

        def steps(d):
            dx, _, dzl, dzu, ds, dt, dz, dy = d
            a_p = jnp.minimum(jnp.minimum(max_step(xl, dx), max_step(xu, -dx)), jnp.minimum(max_step(s, ds), max_step(t, dt)))
            a_d = jnp.minimum(jnp.minimum(max_step(zl, dzl), max_step(zu, dzu)), jnp.minimum(max_step(z, dz), max_step(y, dy)))
            return jnp.minimum(1.0, a_p), jnp.minimum(1.0, a_d)

        # Predictor (affine scaling), then Mehrotra's centring + second-order corrector.
        # `K⁻¹1` (for the balance row) and the predictor go through one refined solve
        # as two columns (one refinement loop; `kmul` takes both in one product).
        c_aff = (zl * xl, zu * xu, z * s, y * t)
        rhs_aff, g_aff = rhs_of(*c_aff)
        k_both = ksolve(jnp.stack([jnp.ones_like(x), rhs_aff], axis=1))
        k_ones = k_both[:, 0]
        aff = direction(k_both[:, 1], k_ones, g_aff, *c_aff)
        ap, ad = steps(aff)
        dx, _, dzl, dzu, ds, dt, dz, dy = aff
        mu_aff = (
            hp.dot(zl + ad * dzl, xl + ap * dx)
            + hp.dot(zu + ad * dzu, xu - ap * dx)
            + hp.dot(z + ad * dz, s + ap * ds)
            + hp.dot(y + ad * dy, t + ap * dt)
        ) / n_compl
        sigma = jnp.clip(mu_aff / jnp.maximum(mu, 1e-30), 0.0, 1.0) ** 3
        smu = sigma * mu
        c_cor = (zl * xl + dzl * dx - smu, zu * xu - dzu * dx - smu, z * s + dz * ds - smu, y * t + dy * dt - smu)
        rhs_cor, g_cor = rhs_of(*c_cor)
        cor = direction(ksolve(rhs_cor[:, None])[:, 0], k_ones, g_cor, *c_cor)
        ap, ad = steps(cor)
        ap, ad = _TAU * ap, _TAU * ad
        dx, dnu, dzl, dzu, ds, dt, dz, dy = cor
        return (x + ap * dx, nu + ad * dnu, zl + ad * dzl, zu + ad * dzu, s + ap * ds, t + ap * dt, z + ad * dz, y + ad * dy)

    # Convergence. The iterate is driven toward the "drive" error (dual residual at
    # 10·tol) and continues to tol/10 while that helps; the best iterate by that error is
    # returned, as long as it passes the "accept" error (dual residual up to 50·tol, i.e.
    # prices within ~0.5 % of the largest marginal cost; primal and gap terms unchanged).
    # Otherwise the best iterate by the accept error is returned. Why: on congested
    # linear-cost instances with many monitored rows the float32 Newton directions stop
    # reducing the dual residual near 1e-3 of the largest marginal cost and the next step
    # is non-finite, with the objective already close to optimal. `converged` means
    # accept < tol.
    def cond(carry):
        return (carry[0] < max_iter) & ~carry[-1]

    def body(carry):
        # Float32 iterates can lose accuracy once complementarity is far below round-off:
        # the best iterates seen are what gets returned.
        it, state, best_d, err_d, best_a, err_a, _ = carry
        new = newton(state)
        drive, accept = error(new)
        ok = jnp.isfinite(drive) & jnp.all(jnp.stack([jnp.all(jnp.isfinite(v)) for v in new]))
        state = jax.tree.map(lambda a, b: where(ok, a, b), new, state)
        better_d = ok & (drive < err_d[0])
        best_d = jax.tree.map(lambda a, b: where(better_d, a, b), new, best_d)
        err_d = where(better_d, jnp.stack([drive, accept]), err_d)
        better_a = ok & (accept < err_a)
        best_a = jax.tree.map(lambda a, b: where(better_a, a, b), new, best_a)
        err_a = where(better_a, accept, err_a)
        # A non-finite step ends the loop with the best iterates.
        return it + 1, state, best_d, err_d, best_a, err_a, (~ok) | (err_d[0] < 0.1 * tol)

    state0 = (x, nu, zl, zu, s, t, z, y)
    drive0, accept0 = error(state0)
    carry0 = (jnp.asarray(0, jnp.int32), state0, state0, jnp.stack([drive0, accept0]), state0, accept0, drive0 < tol)
    n_it, _, best_d, err_d, best_a, err_a, _ = lax.while_loop(cond, body, carry0)
    use_d = err_d[1] < tol
    state = jax.tree.map(lambda a, b: where(use_d, a, b), best_d, best_a)
    err = where(use_d, err_d[1], err_a)
    converged = err < tol
    # Stopped before the budget without converging: the loop ended on a non-finite step.
    status = SolverStatus.where(
        converged,
        SolverStatus.successful,
        SolverStatus.where(n_it < max_iter, SolverStatus.diverged, SolverStatus.max_steps_reached),
    )
    x, nu, zl, zu, s, t, z, y = state
    x_pol, polished = _polish(x, zl, zu, s, z, r_, q_ - _PROX, c_, lo_, hi_, d_, a_t, h)
    x = where(polished, x_pol, x)
    return DispatchQPSolution(
        x=x * sx + lo_shift,
        nu=nu * sc,
        mu_upper=z[:m] * sc,
        mu_lower=z[m:] * sc,
        row_violation=(t[:m] + t[m:]) * sx,
        status=status,
        n_iter=n_it,
        residual=err,
        certified=polished,
    )


def _polish(x, zl, zu, s, z, cubic, quad, lin, lo, hi, total, a_t, h):
    """Exact solution on the interior point's active set, and whether it is certified.

    The interior point stops at a relative duality gap of `tol`; on a linear or nearly
    linear cost that leaves the dispatch up to several MW from the optimal vertex (a flat
    objective barely notices). The bounds and rows whose dual exceeds their slack are
    taken as active, and the stationarity, balance and active-row equations of the true
    cost (no proximal term) are solved as one square system: units at a bound stay there,
    inactive rows carry no dual. The answer is accepted only if it is a KKT point of the
    problem (primal feasible, every bound and row dual of the right sign, to round-off), i.e.
    optimal; a wrong active-set guess or a singular system (a non-unique LP optimum) keeps
    the interior-point iterate. Scaled units, as in the solver; `h = [row_hi; -row_lo]`.
    """
    n, m = a_t.shape
    dtype = x.dtype
    grad, hess = _poly_terms(x, cubic, quad, lin)
    eps, eps_dual = _POLISH_TOL[jnp.dtype(dtype).itemsize]
    # Dual regularisation of the active rows (A x - reg w = target): parallel lines give
    # identical rows, and both active would make the system singular.
    reg = _POLISH_REG[jnp.dtype(dtype).itemsize]
    eye_n, eye_m = jnp.eye(n, dtype=dtype), jnp.eye(m, dtype=dtype)

    def solve_on(at_lo, at_hi, up, down):
        # Unknowns [x; nu; w] (w: net row dual, upper minus lower). Free unit i:
        # hess_i x_i + nu + (A^T w)_i = hess_i x0_i - grad_i (one Newton step; exact for a
        # quadratic or linear cost). Fixed unit: x_i = bound_i. Active row: (A x)_j =
        # target_j; inactive row: w_j = 0.
        fixed = at_lo | at_hi
        active = up | down
        top = jnp.concatenate(
            [
                where(fixed[:, None], eye_n, jnp.diag(hess)),
                where(fixed, 0.0, 1.0)[:, None],
                where(fixed[:, None], 0.0, a_t),
            ],
            axis=1,
        )
        mid = jnp.concatenate([jnp.ones((1, n), dtype), jnp.zeros((1, 1 + m), dtype)], axis=1)
        bottom = jnp.concatenate(
            [where(active[:, None], a_t.T, 0.0), jnp.zeros((m, 1), dtype), eye_m * where(active, -reg, 1.0)[:, None]],
            axis=1,
        )
        kkt = jnp.concatenate([top, mid, bottom], axis=0)
        rhs = jnp.concatenate(
            [
                where(fixed, where(at_lo, lo, hi), hess * x - grad),
                total[None],
                where(active, where(up, h[:m], -h[m:]), 0.0),
            ]
        )
        # Refinement against the unregularised system removes the regularisation's bias
        # (and float32 round-off in the factorisation) where that system is regular.
        shift = jnp.concatenate([jnp.zeros((n + 1,), dtype), where(active, -reg, 0.0)])
        kkt_exact = kkt - jnp.diag(shift)
        factor = lu_factor(kkt)
        sol_reg = lu_solve(factor, rhs)
        sol_reg = sol_reg + lu_solve(factor, rhs - hp.matmul(kkt, sol_reg))
        sol_exact = sol_reg
        for _ in range(_POLISH_REFINE):
            sol_exact = sol_exact + lu_solve(factor, rhs - hp.matmul(kkt_exact, sol_exact))
        # The unregularised refinement diverges where that system is singular (a
        # degenerate vertex): then the regularised solution is checked instead.
        ok_exact, nxt = verify(sol_exact, at_lo, at_hi, up, down)
        ok_reg, nxt_reg = verify(sol_reg, at_lo, at_hi, up, down)
        sol = where(ok_exact | ~ok_reg, sol_exact, sol_reg)
        nxt = jax.tree.map(lambda a, b: where(ok_exact | ~ok_reg, a, b), nxt, nxt_reg)
        ok = ok_exact | ok_reg
        return where(ok, sol[:n], x), ok, nxt

    def verify(sol, at_lo, at_hi, up, down):
        """Whether `sol` is a KKT point with the guessed active set, and the next guess."""
        fixed = at_lo | at_hi
        xp, nu, w = sol[:n], sol[n], sol[n + 1 :]
        ax = hp.matmul(xp, a_t)
        reduced = _poly_terms(xp, cubic, quad, lin)[0] + nu + hp.matmul(a_t, w)
        primal = (
            (jnp.abs(jnp.sum(xp) - total) <= eps)
            & jnp.all(xp >= lo - eps)
            & jnp.all(xp <= hi + eps)
            & jnp.all(ax <= h[:m] + eps)
            & jnp.all(ax >= -h[m:] - eps)
        )
        dual = (
            jnp.all(where(at_lo, reduced >= -eps_dual, True))
            & jnp.all(where(at_hi, reduced <= eps_dual, True))
            & jnp.all(where(fixed, True, jnp.abs(reduced) <= eps_dual))
            & jnp.all(where(up, w >= -eps_dual, True))
            & jnp.all(where(down, w <= eps_dual, True))
        )
        finite = jnp.all(jnp.isfinite(sol))
        # Primal-dual active-set update for the next pass: a bound or row with a dual of
        # the wrong sign is released, a violated one is activated.
        nxt = (
            where(at_lo, reduced > 0, xp < lo),
            where(at_hi, reduced < 0, xp > hi),
            where(up, w > 0, ax > h[:m]),
            where(down, w < 0, ax < -h[m:]),
        )
        nxt = jax.tree.map(lambda a, b: where(finite, a, b), nxt, (at_lo, at_hi, up, down))
        return primal & dual & finite, nxt

    at_lo = zl > x - lo
    at_hi = (zu > hi - x) & ~at_lo
    up = z[:m] > s[:m]
    down = (z[m:] > s[m:]) & ~up

    def cond(c):
        return (c[0] < _POLISH_PASSES) & ~c[2]

    def body(c):
        k, _, _, sets = c
        xp, ok, nxt = solve_on(*sets)
        return k + 1, xp, ok, nxt

    _, xp, ok, _ = lax.while_loop(cond, body, (jnp.asarray(0, jnp.int32), x, jnp.asarray(False), (at_lo, at_hi, up, down)))
    return jnp.clip(where(ok, xp, x), lo, hi), ok


def rows_infeasible(
    a_t: Float[Array, "n m"],
    row_lo: Float[Array, " m"],
    row_hi: Float[Array, " m"],
    lo: Float[Array, " n"],
    hi: Float[Array, " n"],
    total: Float[Array, ""],
    mu_upper: Float[Array, " m"],
    mu_lower: Float[Array, " m"],
    rel_margin: float = 2e-4,
) -> Bool[Array, ""]:
    """Whether row duals `μ⁺, μ⁻ ≥ 0` prove `{Σx = total, lo ≤ x ≤ hi, row_lo ≤ Ax ≤ row_hi}`
    empty (a Farkas certificate for the hard-limit problem).

    Every feasible `x` has `μ⁺ᵀ(Ax − row_hi) + μ⁻ᵀ(row_lo − Ax) ≤ 0`; so if the minimum
    of that expression over the box with `Σx = total` is positive, no feasible `x`
    exists. The minimum is a continuous knapsack, bounded below by its Lagrangian dual
    `max_ν Σ_i min((g_i+ν) lo_i, (g_i+ν) hi_i) − ν·total − const` (`g = Aᵀ(μ⁺ − μ⁻)`),
    a concave piecewise-linear function of `ν` whose maximum lies at a breakpoint
    `ν = −g_j`: all `n` are evaluated at once (an `n × n` elementwise block, no
    loop). Valid for any `μ` — a feasible problem never yields a certificate — and
    conclusive for the elastic duals of [`solve_dispatch_qp`][powerzoojax.physics.solve_dispatch_qp] on infeasible problems,
    whose violated rows carry `μ ≈ π`, also when the iteration stopped before
    converging. `rel_margin` guards round-off: the bound must exceed that fraction of
    the magnitude of the terms it sums (2e-4, ~20x the worst-case float32 summation error
    over the 186 rows of case 118; 1e-3 missed marginally infeasible TSO steps, 0.5-1 MW
    over, whose margins were 5-7e-4, while feasible draws sit at <= -0.3).
    """
    mu_upper = where(jnp.isfinite(mu_upper), jnp.maximum(mu_upper, 0.0), 0.0)
    mu_lower = where(jnp.isfinite(mu_lower), jnp.maximum(mu_lower, 0.0), 0.0)
    g = hp.matmul(a_t, mu_upper - mu_lower)
    const = hp.dot(mu_upper, row_hi) - hp.dot(mu_lower, row_lo)
    gn = g[None, :] - g[:, None]  # row j: g + ν at ν = −g_j
    phi = jnp.sum(jnp.minimum(gn * lo[None, :], gn * hi[None, :]), axis=1) + g * total
    bound = jnp.max(phi) - const
    size = (
        hp.dot(mu_upper, jnp.abs(row_hi))
        + hp.dot(mu_lower, jnp.abs(row_lo))
        + jnp.sum(jnp.abs(g) * jnp.maximum(jnp.abs(lo), jnp.abs(hi)))
        + jnp.max(jnp.abs(g)) * jnp.abs(total)
    )
    return (bound > rel_margin * size) & (size > 0)


# Halvings of the price bracket: 2^-32 (2^-56) of the bracket is below the float32
# (float64) resolution of any price in it once the bracket spans < ~100x the price.
_PRICE_BISECTIONS = {4: 32, 8: 56}


def _unit_response(price, cubic, quad, lin, lo, hi):
    """Output of each unit facing `price`: `argmin_{lo ≤ x ≤ hi} TC(x) − price·x`.

    The stationary point solves `cubic x² + quad x + lin = price`; written as
    `2(price − lin) / (quad + √(quad² + 4 cubic (price − lin)))` it is stable for
    `cubic → 0` and covers the cubic, quadratic and linear cases at once (a linear
    unit gets ±huge, i.e. its bound, on either side of its cost).
    """
    excess = price - lin
    root = jnp.sqrt(jnp.maximum(quad * quad + 4.0 * cubic * excess, 0.0))
    denom = jnp.maximum(quad + root, jnp.finfo(excess.dtype).tiny)
    return jnp.clip(2.0 * excess / denom, lo, hi)


def solve_separable_dispatch(
    cubic: Float[Array, " n"],
    quad: Float[Array, " n"],
    lin: Float[Array, " n"],
    lo: Float[Array, " n"],
    hi: Float[Array, " n"],
    total: Float[Array, ""],
    n_bisect: int | None = None,
) -> DispatchQPSolution:
    """Exact economic dispatch without row constraints (the `m = 0` case of the QP above).

    With no line limit the KKT conditions say every unit sits where its marginal cost
    equals one system price `λ` (or at a bound), and total output is non-decreasing
    in `λ`. So `λ` is found by a fixed number of bisections of the bracket
    `[min MC(lo), max MC(hi)]` (32 in float32, 56 in float64 unless `n_bisect` says
    otherwise) — `O(n)` work each, no factorisation, no data-dependent
    iteration count (a vmapped `while_loop` runs as long as its slowest member; this
    loop does not). The dispatch interpolates between the responses at the two ends of
    the final bracket, which also splits the remainder among linear-cost units tied at
    the price (the merit-order solution). `lo ≤ hi` may be equal (fixed units);
    `total` is clipped to `[Σlo, Σhi]` and the caller reads the capacity status.
    Convexity (`MC` non-decreasing on `[lo, hi]`) is assumed, as everywhere here.
    """
    dtype = working_float_dtype(lin)
    if n_bisect is None:
        n_bisect = _PRICE_BISECTIONS[jnp.dtype(dtype).itemsize]
    hi = jnp.maximum(hi, lo)
    total = jnp.clip(total, jnp.sum(lo), jnp.sum(hi))
    mc_lo = (cubic * lo + quad) * lo + lin
    mc_hi = (cubic * hi + quad) * hi + lin
    p_lo, p_hi = jnp.min(jnp.minimum(mc_lo, mc_hi)), jnp.max(jnp.maximum(mc_lo, mc_hi))
    pad = 1e-3 * jnp.maximum(p_hi - p_lo, 1.0)
    response = lambda price: _unit_response(price, cubic, quad, lin, lo, hi)  # noqa: E731

    def halve(_, bracket):
        low, high = bracket
        mid = 0.5 * (low + high)
        short = jnp.sum(response(mid)) < total
        return where(short, mid, low), where(short, high, mid)

    low, high = lax.fori_loop(0, n_bisect, halve, (p_lo - pad, p_hi + pad))
    x_low, x_high = response(low), response(high)
    s_low, s_high = jnp.sum(x_low), jnp.sum(x_high)
    theta = jnp.clip((total - s_low) / jnp.maximum(s_high - s_low, jnp.finfo(dtype).tiny), 0.0, 1.0)
    x = x_low + theta * (x_high - x_low)
    scale = jnp.maximum(jnp.max(hi - lo), 1e-6)
    residual = jnp.abs(jnp.sum(x) - total) / scale
    empty = jnp.zeros((0,), dtype)
    return DispatchQPSolution(
        x=x,
        nu=-0.5 * (low + high),
        mu_upper=empty,
        mu_lower=empty,
        row_violation=empty,
        status=SolverStatus.where(residual < 1e-4, SolverStatus.successful, SolverStatus.max_steps_reached),
        n_iter=jnp.asarray(n_bisect, jnp.int32),
        residual=residual,
        certified=residual < 1e-4,
    )
