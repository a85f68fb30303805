"""Reductions over short axes written as add chains.

XLA:CPU lowers a `reduce` over a handful of elements to a kernel call of its own (and,
in recent releases, to an XNNPACK/YNN fusion) that costs far more than the additions.
Batched under `vmap` inside a rollout scan that overhead is paid every step, so sums
over axes of at most `SHORT_AXIS` elements are spelled out as elementwise adds, which
fuse with their neighbours. Longer axes use the ordinary reduction.
"""

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Shaped

SHORT_AXIS = 16


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
