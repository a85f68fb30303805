"""Cholesky factor and solves for the small dense SPD systems of the dispatch solvers,
written in plain XLA operations (no LAPACK custom call).

Why not ``jnp.linalg.cholesky`` / ``jax.scipy.linalg.cho_solve``: on XLA:CPU (jaxlib
0.10) a batched LAPACK call (a vmapped batch of a few hundred matrices) splits the batch
over the intra-op thread pool and *blocks* a pool thread until the pieces are done. Two
such calls running at once (e.g. the two independent solves of one Newton step, which
the runtime starts concurrently) can occupy every pool thread on a 2-core machine and
wait forever: the DC-OPF of case 118 with rated lines hung at N >= 192, with every
thread idle (gdb: ``BlockingCounter::Wait`` under ``jax::ParallelBatchMap`` in
``lapack_strsm_ffi``). The loops below have no such wait; under ``vmap`` the batch is a
plain array axis.

The matrices here are at most the unit count of a case (dozens), so an ``O(n)``-step
loop of vectorised row/column updates is cheap; small systems are unrolled outright.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float

_UNROLL_MAX = 8  # systems up to this size are unrolled (no loop at all)


def _loop(n: int, body, init):
    return lax.fori_loop(0, n, body, init, unroll=n if n <= _UNROLL_MAX else 1)


def cholesky(a: Float[Array, "n n"]) -> Float[Array, "n n"]:
    """Lower Cholesky factor ``L`` of a symmetric positive definite ``a`` (``L Lᵀ = a``).

    Left-looking, one column per step. A non-positive pivot gives NaN entries (as
    LAPACK's ``potrf`` does through ``jnp.linalg.cholesky``), which callers detect.
    """
    n = a.shape[-1]
    idx = jnp.arange(n)

    # Built as Lᵀ, one row per step. Cost at n = 54, N = 256, one core: 11.8 ms against
    # LAPACK's 4.4 ms (each step reads the whole factor; the O(n)-step loop is the price
    # of having no blocking call).
    def row(j, upper):
        col = a[j] - upper[:, j] @ upper  # rows >= j of ``upper`` are still zero
        pivot = jnp.sqrt(col[j])
        return upper.at[j].set(jnp.where(idx >= j, col / pivot, 0.0))

    return _loop(n, row, jnp.zeros_like(a)).T


def cho_solve(lower: Float[Array, "n n"], b: Float[Array, "n *k"]) -> Float[Array, "n *k"]:
    """Solve ``(L Lᵀ) x = b`` given the lower factor ``L`` (``b`` a vector or columns)."""
    if b.ndim == 2:
        # Columns as a vmapped axis: one substitution loop for all of them (solving an
        # (n, k) block row by row was 2x slower, measured at n = 54, k = 2).
        return jax.vmap(cho_solve, in_axes=(None, 1), out_axes=1)(lower, b)
    n = lower.shape[-1]

    def forward(j, y):  # L y = b; entries >= j of y are still zero
        return y.at[j].set((b[j] - lower[j] @ y) / lower[j, j])

    def backward(i, x):  # Lᵀ x = y, last entry first; entries <= j of x are still zero
        j = n - 1 - i
        return x.at[j].set((y[j] - lower[:, j] @ x) / lower[j, j])

    y = _loop(n, forward, jnp.zeros_like(b))
    return _loop(n, backward, jnp.zeros_like(b))
