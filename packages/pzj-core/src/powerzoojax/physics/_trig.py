"""`sincos(x)`: sine and cosine together, as plain vectorisable float32 arithmetic.

XLA:CPU evaluates `jnp.sin`/`jnp.cos` element by element (not vectorised) and fuses a
shared `sin(va)` into every consumer, which makes them a large share of a batched AC
power-flow iteration. This version is one Cody-Waite reduction by pi/2 and the Cephes
`sinf`/`cosf` minimax polynomials on [-pi/4, pi/4], with a max error of about 1 ulp on
[-40, 40]. The 3-part pi/2 keeps the reduction accurate for |x| < 2^15 rad;
NaN and inf give NaN, as `jnp.sin`.
Float64 (and any other dtype) uses `jnp.sin`/`jnp.cos` unchanged, and so does float32 when
`POLYNOMIAL` is False (read when a function is traced; `benchmarks/xla_tricks.py` builds
the AC workload both ways in one process).
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

# pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_3, the first parts with few significant bits so that
# k * part is exact in float32 (Cephes DP1..DP3, doubled).
_PIO2_1 = np.float32(1.5703125)
_PIO2_2 = np.float32(4.837512969970703125e-4)
_PIO2_3 = np.float32(7.54978995489188216e-8)
_SIN = tuple(np.float32(c) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1))
_COS = tuple(np.float32(c) for c in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2))

POLYNOMIAL = True


def sincos(x: Array) -> tuple[Array, Array]:
    """`(sin x, cos x)` elementwise; float32 by the polynomial above (while `POLYNOMIAL`),
    other dtypes by jnp."""
    x = jnp.asarray(x)
    if x.dtype != jnp.float32 or not POLYNOMIAL:
        return jnp.sin(x), jnp.cos(x)
    k = jnp.round(x * np.float32(2.0 / np.pi))
    # Reduced argument as hi + lo: hi exact up to one rounding, lo the last pi/2 part, kept
    # apart (and the 1 of cos added last, as in fdlibm) so that results are within ~1 ulp
    # (mean 0.26 ulp, 94 % bit-identical to jnp.sin/cos on [-40, 40]).
    hi = (x - k * _PIO2_1) - k * _PIO2_2
    lo = -(k * _PIO2_3)
    r = hi + lo
    z = r * r
    s = hi + (lo + r * z * ((_SIN[0] * z + _SIN[1]) * z + _SIN[2]))
    half_z = np.float32(0.5) * z
    w = np.float32(1.0) - half_z
    c = w + (((np.float32(1.0) - w) - half_z) + z * z * ((_COS[0] * z + _COS[1]) * z + _COS[2]))
    # Quadrant k mod 4 (two's complement keeps it right for negative k).
    quad = k.astype(jnp.int32) & 3
    sin = jnp.where(quad == 0, s, jnp.where(quad == 1, c, jnp.where(quad == 2, -s, -c)))
    cos = jnp.where(quad == 0, c, jnp.where(quad == 1, -s, jnp.where(quad == 2, -c, s)))
    return sin, cos


__all__ = ["sincos"]
