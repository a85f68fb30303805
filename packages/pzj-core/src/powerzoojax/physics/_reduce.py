"""Reductions over short axes, with an optional add-chain spelling.

Sums over axes of at most `SHORT_AXIS` elements can be spelled out as elementwise adds
instead of XLA's `reduce`. On JAX 0.10.2's CPU backend the plain `reduce` is faster in
every measured rollout (1.04-1.42x, and first calls 10-35 % shorter; dated A/B in
`benchmarks/results/xla-tricks.md`), because fusion copies an add chain into each
consumer kernel; so `SHORT_AXIS` is 0 and every sum is XLA's reduce.
"""

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Shaped

SHORT_AXIS = 0


def short_sum(x: Shaped[Array, "..."], axis: int = -1) -> Shaped[Array, "..."]:
    """`jnp.sum(x, axis)`, as an unrolled add chain when the axis is short.

    **Arguments:**

    - `x`: array.
    - `axis`: axis to sum over.

    **Returns:**

    `x` summed over `axis`.
    """
    n = x.shape[axis]
    if n == 0 or n > SHORT_AXIS:
        return jnp.sum(x, axis=axis)
    total = lax.index_in_dim(x, 0, axis, keepdims=False)
    for i in range(1, n):
        total = total + lax.index_in_dim(x, i, axis, keepdims=False)
    return total


def short_dot(x: Shaped[Array, " k"], y: Shaped[Array, " k"]) -> Shaped[Array, ""]:
    """`x @ y` for vectors, as an add chain when they are short.

    **Arguments:**

    - `x`, `y`: `(k,)` vectors.

    **Returns:**

    A scalar.
    """
    return short_sum(x * y)


def short_matvec(x: Shaped[Array, " k"], m: Shaped[Array, "k n"]) -> Shaped[Array, " n"]:
    """`x @ m`, as a multiply and an add chain over `k` when `k` is short.

    **Arguments:**

    - `x`: `(k,)` vector.
    - `m`: `(k, n)` matrix.

    **Returns:**

    An `(n,)` vector.
    """
    if x.shape[0] > SHORT_AXIS:
        return x @ m
    return short_sum(x[:, None] * m, axis=0)
