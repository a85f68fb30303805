"""The floating dtype a solver computes in, from the dtypes of its inputs."""

import jax
import jax.numpy as jnp
import numpy as np


def working_float_dtype(*values) -> np.dtype:
    """The dtype JAX's standard promotion gives the inputs' dtypes joined with float32.

    float64 inputs (under x64) keep float64; float32, half-precision, integer and boolean
    inputs compute in float32. The join is taken under standard promotion on purpose:
    it names the dtype the solver casts every operand to, so the arithmetic after it
    mixes no dtypes and runs unchanged under strict promotion.

    **Arguments:**

    - `values`: arrays (or anything `jnp.asarray` takes) whose dtypes set the precision.

    **Returns:**

    The NumPy dtype.
    """
    with jax.numpy_dtype_promotion("standard"):
        return jnp.result_type(*(jnp.asarray(v).dtype for v in values), jnp.float32)


def complex_dtype_of(dtype) -> np.dtype:
    """The complex dtype of `dtype`'s precision: complex128 for float64, complex64 otherwise."""
    return np.dtype(np.complex128 if jnp.dtype(dtype) == jnp.float64 else np.complex64)


def cast_floating_leaves(tree, dtype):
    """`tree` with its real floating-point array leaves cast to `dtype` and its complex
    ones to the complex dtype of that precision (others unchanged).

    A network built in float32 meets float64 loads in a float64 solve; casting its
    arrays once at the solver's entry names the dtype the products take, so no product
    mixes dtypes. In float32 the cast is the identity.
    """

    complex_dtype = complex_dtype_of(dtype)

    def cast(leaf):
        if isinstance(leaf, jax.Array | np.ndarray):
            if jnp.issubdtype(leaf.dtype, jnp.floating):
                return jnp.asarray(leaf, dtype)
            if jnp.issubdtype(leaf.dtype, jnp.complexfloating):
                return jnp.asarray(leaf, complex_dtype)
        return leaf

    return jax.tree.map(cast, tree)
