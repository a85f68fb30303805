"""The data centre's per-step uniforms, bit-identical to `jr.uniform(jr.split(key)[0], (n,))`
but computed by an unrolled Threefry-2x32 that fuses into one elementwise kernel.

Why: on a CPU JAX lowers every Threefry hash to a rolled `while` loop (to keep compile
time down), so inside a vmapped rollout scan the split and the draw are two extra loops
of small kernels per step (`benchmarks/results/dcmg.md`). Spelling the 20 rounds out
costs a few integer ops per number instead.

Raw `uint32[2]` keys and typed Threefry keys use this path; keys of another PRNG
implementation fall back to `jax.random` (same distribution, their own stream).
"""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jaxtyping import Array, Float, UInt32

from powerzoojax.core._types import Key

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(x: UInt32[Array, "..."], d: int) -> UInt32[Array, "..."]:
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def threefry2x32(
    k1: UInt32[Array, ""], k2: UInt32[Array, ""], x1: UInt32[Array, "..."], x2: UInt32[Array, "..."]
) -> tuple[UInt32[Array, "..."], UInt32[Array, "..."]]:
    """Threefry-2x32 (20 rounds), the hash behind `jax.random`'s default PRNG, unrolled."""
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x1 = x1 + ks[0]
    x2 = x2 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = x1 + x2
            x2 = _rotl(x2, r) ^ x1
        x1 = x1 + ks[(i + 1) % 3]
        x2 = x2 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x1, x2


def step_uniforms(key: Key, n: int) -> Float[Array, " n"]:
    """`jr.uniform(jr.split(key)[0], (n,))` (float32 in [0, 1)), without the rolled loops."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if jr.key_impl(key) != "threefry2x32":
            return jr.uniform(jr.split(key)[0], (n,))
        key = jr.key_data(key)
    k = key.astype(jnp.uint32)
    zero = jnp.zeros((), jnp.uint32)
    # First key of the fold-like split: the hash of the 64-bit counter 0.
    s1, s2 = threefry2x32(k[0], k[1], zero, zero)
    # Hashed once per env: fused into the draw below it would be redone for every number.
    s1, s2 = jnp.take(jnp.stack([s1, s2]), jnp.arange(2), axis=0)
    b1, b2 = threefry2x32(s1, s2, jnp.zeros((n,), jnp.uint32), jnp.arange(n, dtype=jnp.uint32))
    mantissa = ((b1 ^ b2) >> np.uint32(9)) | np.uint32(0x3F800000)
    return jnp.maximum(jax.lax.bitcast_convert_type(mantissa, jnp.float32) - 1.0, 0.0)
