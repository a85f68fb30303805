"""Inverse Cholesky factor and solves for the small dense SPD systems of the dispatch
solvers, written in plain XLA operations (no LAPACK custom call).

Why not `jnp.linalg.cholesky` / `jax.scipy.linalg.cho_solve`: a batched LAPACK call
blocks a thread of the CPU's intra-op pool until its pieces are done, so two of them
running at once can occupy every pool thread of a small machine and wait forever (the
hang is recorded in `benchmarks/results/opf.md`). The loop below has no such wait; under
`vmap` the batch is a plain array axis.

Why the inverse factor: the solvers solve each factored system several times (a
predictor, a corrector and their refinement steps). With `W = L⁻¹` every solve is two
matrix products, where substitution is two more `O(n)`-step sequential loops per
solve; one loop (factor and inverse together) is all that is left. The matrices are at
most the unit count of a case (dozens), so the loop's vectorised row updates are cheap.
Refinement against the original matrix, which the callers do anyway, absorbs the extra
round-off of solving through an explicit triangular inverse.
"""

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float, Int
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp


def inverse_cholesky(a: Float[Array, "n n"]) -> Float[Array, "n n"]:
    """`W = L⁻¹` for the lower Cholesky factor `L` of a symmetric positive definite
    `a` (so `W a Wᵀ = I` and `a⁻¹ = WᵀW`); lower triangular.

    One step per row: row `j` of `Lᵀ` (left-looking), then row `j` of `W` by
    forward substitution, which needs only rows `< j` of both. A non-positive pivot
    gives NaN entries (as LAPACK's `potrf` does through `jnp.linalg.cholesky`),
    which callers detect.
    """
    n = a.shape[-1]
    idx = jnp.arange(n)
    eye = jnp.eye(n, dtype=a.dtype)

    def row(j, both):
        # `both` = [Lᵀ | W], rows >= j still zero. Column j of Lᵀ holds row j of L
        # (entries < j so far), so one vector-matrix product gives both updates:
        # Lᵀ[j] = (a[j] − Σ_{i<j} L[j,i] Lᵀ[i]) / pivot, W[j] = (e_j − Σ_{i<j} L[j,i] W[i]) / pivot.
        r = hp.matmul(both[:, j], both)
        col = a[j] - r[:n]
        pivot = jnp.sqrt(col[j])
        new = jnp.concatenate([where(idx >= j, col, 0.0), eye[j] - r[n:]]) / pivot
        return both.at[j].set(new)

    return lax.fori_loop(0, n, row, jnp.zeros((n, 2 * n), a.dtype))[:, n:]


def spd_solve(inv_factor: Float[Array, "n n"], b: Float[Array, "n *k"]) -> Float[Array, "n *k"]:
    """Solve `a x = b` given `inv_factor = inverse_cholesky(a)` (`b` a vector or columns)."""
    if b.ndim == 2:
        # Column by column: a vmapped batch of matrix-vector products is cheaper on a CPU
        # than the same batch of (n, n) @ (n, 2) products (`benchmarks/results/opf.md`).
        return jnp.stack([spd_solve(inv_factor, b[:, i]) for i in range(b.shape[1])], axis=1)
    return hp.matmul(inv_factor.T, hp.matmul(inv_factor, b))


def lu_factor(a: Float[Array, "n n"]) -> tuple[Float[Array, "n n"], Int[Array, " n"]]:
    """LU factors with partial pivoting of a general square `a`, in plain XLA operations
    (for the same reason as `inverse_cholesky`: no batched LAPACK call under `vmap`).

    Returns `(lu, perm)`: `a[perm] = L U` with `L` unit lower triangular (stored below
    the diagonal of `lu`) and `U` upper triangular (on and above it). A zero pivot (a
    singular `a`) is left in place; `lu_solve` then returns a finite, wrong answer,
    so callers check their solution (the dispatch solvers verify it as a KKT point).
    """
    n = a.shape[-1]
    idx = jnp.arange(n)

    def eliminate(k, carry):
        lu, perm = carry
        p = jnp.argmax(where(idx >= k, jnp.abs(lu[:, k]), -1.0))
        row_k, row_p = lu[k], lu[p]
        lu = lu.at[k].set(row_p).at[p].set(row_k)
        perm_k, perm_p = perm[k], perm[p]
        perm = perm.at[k].set(perm_p).at[p].set(perm_k)
        pivot = lu[k, k]
        below = idx > k
        mult = where(below, lu[:, k] / where(pivot == 0, 1.0, pivot), 0.0)
        lu = lu - mult[:, None] * where(below, lu[k], 0.0)[None, :]
        lu = lu.at[:, k].set(where(below, mult, lu[:, k]))
        return lu, perm

    return lax.fori_loop(0, n, eliminate, (a, idx))


def lu_solve(factors: tuple[Float[Array, "n n"], Int[Array, " n"]], b: Float[Array, " n"]) -> Float[Array, " n"]:
    """`x` with `a x = b` from `lu_factor`'s `(lu, perm)` (two substitution loops)."""
    lu, perm = factors
    n = lu.shape[-1]
    idx = jnp.arange(n)

    def forward(i, y):
        return y.at[i].set(y[i] - hp.matmul(where(idx < i, lu[i], 0.0), y))

    def backward(k, x):
        i = n - 1 - k
        pivot = lu[i, i]
        return x.at[i].set((x[i] - hp.matmul(where(idx > i, lu[i], 0.0), x)) / where(pivot == 0, 1.0, pivot))

    return lax.fori_loop(0, n, backward, lax.fori_loop(0, n, forward, b[perm]))


def lu_solve_transposed(
    factors: tuple[Float[Array, "n n"], Int[Array, " n"]], b: Float[Array, " n"]
) -> Float[Array, " n"]:
    """`y` with `aᵀ y = b` from `lu_factor`'s `(lu, perm)` of `a`.

    `a[perm] = L U` gives `aᵀ = Uᵀ Lᵀ P`: a forward substitution with `Uᵀ`, a
    backward one with `Lᵀ` (unit diagonal), then the rows un-permuted. The reverse-mode
    derivative of a solve with `a` is a solve with `aᵀ`, so one factorisation serves both.
    """
    lu, perm = factors
    n = lu.shape[-1]
    idx = jnp.arange(n)

    def forward(i, z):
        pivot = lu[i, i]
        return z.at[i].set((z[i] - hp.matmul(where(idx < i, lu[:, i], 0.0), z)) / where(pivot == 0, 1.0, pivot))

    def backward(k, w):
        i = n - 1 - k
        return w.at[i].set(w[i] - hp.matmul(where(idx > i, lu[:, i], 0.0), w))

    w = lax.fori_loop(0, n, backward, lax.fori_loop(0, n, forward, b))
    return jnp.zeros_like(w).at[perm].set(w)
