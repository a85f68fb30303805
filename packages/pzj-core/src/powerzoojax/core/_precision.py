"""The precision of every matrix product in the physics.

A float32 `dot_general` with no precision runs at the backend's default, which on TPUs
is a single bfloat16 pass (about three significant digits) and on recent NVIDIA GPUs
TF32. AC power-flow mismatches, PTDF flows and simplex ratio tests need float32
products, so the physics never leaves the choice to the backend or to the user's
`jax_default_matmul_precision`: every product in env `reset`/`step`, the solvers, the
sensitivities and the implicit gradients goes through these wrappers, which pin
`PHYSICS_PRECISION`. Policy networks are not physics and keep the user's setting.
"""

from jax import lax
import jax.numpy as jnp

# HIGHEST is float32 arithmetic on every backend (six bfloat16 passes on a TPU); on a CPU
# it is what the default already does.
PHYSICS_PRECISION = lax.Precision.HIGHEST


def matmul(a, b):
    """`a @ b` at `PHYSICS_PRECISION`."""
    return jnp.matmul(a, b, precision=PHYSICS_PRECISION)


def dot(a, b):
    """`jnp.dot(a, b)` at `PHYSICS_PRECISION`."""
    return jnp.dot(a, b, precision=PHYSICS_PRECISION)


def einsum(subscripts: str, *operands):
    """`jnp.einsum(subscripts, *operands)` at `PHYSICS_PRECISION`."""
    return jnp.einsum(subscripts, *operands, precision=PHYSICS_PRECISION)
