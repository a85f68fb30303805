"""Exact linear-cost economic dispatch with elastic row limits, by the bounded dual simplex.

Problem (`n` units, `m` two-sided row constraints, one balance row):

    min  cᵀx  +  π Σ_j (e⁺_j + e⁻_j)
    s.t. Σ_i x_i = d
         lo ≤ x ≤ hi
         row_lo ≤ A x − e⁺ + e⁻ ≤ row_hi,   e⁺, e⁻ ≥ 0

the linear special case of `powerzoojax.physics._qp_ipm`'s problem, with the same
elastic rows (an instance whose limits cannot all be met has a finite best-effort optimum).
An interior point stops at a relative duality gap, which on a linear cost leaves the
dispatch up to several MW from the optimal vertex wherever units' costs are close; a
vertex method compares the costs themselves and stops exactly on the vertex.

As an LP over `[x, g, e⁺, e⁻]` with rows `Σx = d` and `A x − g − e⁺ + e⁻ = 0`
(`row_lo ≤ g ≤ row_hi`): the network-blind merit order (units cheaper than the marginal
one at `hi`, dearer at `lo`) with every `g` basic is dual feasible and its basis is
its own inverse, so the dual simplex starts without a factorisation and pivots only when
a row binds. Solved in scaled units (MW ÷ the widest unit range, cost ÷ the largest
`|c|`) so that float32 tolerances are relative.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from powerzoojax.physics._dual_simplex import SOLVED, bounded_dual_simplex, matvec, merit_order_start
from powerzoojax.physics._qp_ipm import DispatchQPSolution

_FEAS_TOL = 1e-5  # scaled primal tolerance of the simplex and of "rows met"


def solve_dispatch_lp(
    lin: Float[Array, " n"],
    lo: Float[Array, " n"],
    hi: Float[Array, " n"],
    total: Float[Array, ""],
    a_t: Float[Array, "n m"],
    row_lo: Float[Array, " m"],
    row_hi: Float[Array, " m"],
    penalty: float = 1e3,
    max_pivots: int | None = None,
) -> DispatchQPSolution:
    """Optimal vertex of the linear dispatch above, in the caller's units.

    **Arguments:**

    - `lin`: `(n,)` marginal cost of each unit [$/MWh].
    - `lo`, `hi`: `(n,)` unit bounds [MW], `lo ≤ hi` (equal bounds fix a unit).
    - `total`: the balance target `d` [MW]; clipped to `[Σlo, Σhi]`, the caller reads
      the capacity status.
    - `a_t`: `(n, m)` row coefficients, transposed (the units' PTDF of the monitored lines).
    - `row_lo`, `row_hi`: `(m,)` row limits [MW].
    - `penalty`: cost of one MW of row violation, in multiples of the largest `|lin|`.
    - `max_pivots`: pivot budget (static); default `4 (m + 1) + n`.

    **Returns:** a `DispatchQPSolution`: `x` [MW]; `nu` the balance dual (system price
    `−nu` [$/MWh]); `mu_upper`/`mu_lower` (`≥ 0`) the row duals; `row_violation`
    `e⁺ + e⁻` [MW]; `converged` when the simplex reached an optimal basis; `n_iter` its
    pivots; `residual` the largest scaled bound violation of the final basis.
    """
    n, m = a_t.shape
    dtype = jnp.result_type(lin.dtype, jnp.float32)
    hi = jnp.maximum(hi, lo)
    width = hi - lo
    sx = jnp.maximum(jnp.max(width), 1.0)
    sc = jnp.maximum(jnp.max(jnp.abs(lin)), 1e-3)
    a = a_t.T
    base_flow = matvec(a, lo)
    cs, ws, ds, rlo, rhi = (
        lin / sc, width / sx, (jnp.clip(total, jnp.sum(lo), jnp.sum(hi)) - jnp.sum(lo)) / sx,
        (row_lo - base_flow) / sx, (row_hi - base_flow) / sx,
    )
    # |A x| ≤ Σ width / sx ≤ n in scaled units (|PTDF| ≤ 1), so no violation exceeds this.
    e_hi = n + jnp.maximum(jnp.max(jnp.abs(rlo), initial=0.0), jnp.max(jnp.abs(rhi), initial=0.0)) + 1.0
    eye = jnp.eye(m, dtype=dtype)
    a_lp = jnp.concatenate(
        [
            jnp.concatenate([jnp.ones((1, n), dtype), jnp.zeros((1, 3 * m), dtype)], axis=1),
            jnp.concatenate([a.astype(dtype), -eye, -eye, eye], axis=1),
        ],
        axis=0,
    )
    b = jnp.zeros((m + 1,), dtype).at[0].set(ds)
    pen = jnp.full((2 * m,), penalty, dtype)
    cost = jnp.concatenate([cs, jnp.zeros((m,), dtype), pen])
    lo_lp = jnp.concatenate([jnp.zeros((n,), dtype), rlo, jnp.zeros((2 * m,), dtype)])
    hi_lp = jnp.concatenate([ws, rhi, jnp.full((2 * m,), e_hi, dtype)])

    idx = jnp.arange(n)
    before, marginal, ahead_of_marginal = merit_order_start(cs, ws, ds)
    at_upper = jnp.concatenate([ahead_of_marginal, jnp.zeros((3 * m,), bool)])
    basis = jnp.concatenate([marginal[None], n + jnp.arange(m)]).astype(jnp.int32)
    marginal_col = matvec(a.astype(dtype), (idx == marginal).astype(dtype))
    # Assembled from blocks, not by `.at[1:, 1:].set(-eye)`: that scatter's (m², 2) index
    # array is a program constant (67 MB on case 2383wp) which XLA then constant-folds.
    binv = jnp.concatenate(
        [
            jnp.concatenate([jnp.ones((1, 1), dtype), jnp.zeros((1, m), dtype)], axis=1),
            jnp.concatenate([marginal_col[:, None], -eye], axis=1),
        ],
        axis=0,
    )
    budget = 4 * (m + 1) + n if max_pivots is None else int(max_pivots)
    lp = bounded_dual_simplex(a_lp, b, cost, lo_lp, hi_lp, basis, binv, at_upper, budget, primal_tol=_FEAS_TOL)
    solved = (lp.status == SOLVED) & jnp.all(jnp.isfinite(lp.x)) & jnp.all(jnp.isfinite(lp.y))
    # Budget spent or a non-finite pivot: the network-blind merit fill keeps the balance.
    merit = jnp.clip(ds - before, 0.0, ws)
    x = jnp.where(solved, jnp.clip(lp.x[:n], 0.0, ws), merit)
    y = jnp.where(solved, lp.y, 0.0) * sc
    violation = jnp.where(solved, lp.x[n + m : n + 2 * m] + lp.x[n + 2 * m :], 0.0) * sx
    residual = jnp.max(jnp.maximum(lo_lp - lp.x, lp.x - hi_lp))
    return DispatchQPSolution(
        x=lo + x * sx,
        nu=-y[0],
        mu_upper=jnp.maximum(-y[1:], 0.0),
        mu_lower=jnp.maximum(y[1:], 0.0),
        row_violation=violation,
        converged=solved,
        n_iter=lp.iterations,
        residual=jnp.where(jnp.isfinite(residual), residual, jnp.inf),
        certified=solved,
    )

