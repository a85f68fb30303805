"""Scalar and key aliases shared by every annotated signature in the project, and a
typed `where`.

jaxtyping shape strings use names (`"n_bus"`) so that beartype checks
consistency between arguments of one call at trace time.
"""

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray, Shaped

FloatScalar = Float[Array, ""]
IntScalar = Int[Array, ""]
BoolScalar = Bool[Array, ""]
Key = PRNGKeyArray
Info = dict[str, Shaped[Array, "..."]]

__all__ = ["BoolScalar", "FloatScalar", "Info", "IntScalar", "Key"]


def where(condition: ArrayLike, x: ArrayLike, y: ArrayLike) -> jax.Array:
    """`jnp.where(condition, x, y)`, typed as the one array it returns.

    JAX's stubs before release 0.10 also declare `where(condition)` (a tuple of index
    arrays) with `x=None`: when `x` or `y` is untyped, a type checker cannot rule that
    overload out and types every three-argument call as `Array | tuple[Array, ...]`.
    """
    return jnp.where(condition, x, y)
