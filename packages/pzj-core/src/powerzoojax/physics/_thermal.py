"""AC thermal check: each line's apparent-power loading against its rating.

The loading of a line is the larger of its two ends' apparent powers,
`max(√(P_f² + Q_f²), √(P_t² + Q_t²))` [MVA] (the ends differ by the line's losses and
charging); the overload is how far it exceeds `|cap|`. The DC counterpart,
`dc_thermal_check`, compares signed MW flows with `[floor, cap]`.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from powerzoojax.core._types import FloatScalar, IntScalar


def ac_thermal_check(
    p_from_mw: Float[Array, " n_lines"],
    q_from_mvar: Float[Array, " n_lines"],
    p_to_mw: Float[Array, " n_lines"],
    q_to_mvar: Float[Array, " n_lines"],
    line_cap: Float[Array, " n_lines"],
) -> tuple[FloatScalar, IntScalar]:
    """Total overload of the lines' loading beyond `|cap|` and the number of overloaded lines.

    **Arguments:**

    - `p_from_mw`, `q_from_mvar`: `(n_lines,)` from-end flows [MW, MVAr].
    - `p_to_mw`, `q_to_mvar`: `(n_lines,)` to-end flows [MW, MVAr].
    - `line_cap`: `(n_lines,)` ratings [MVA].

    **Returns:**

    `(overload_mva, n_overloaded)`: float scalar [MVA] and int scalar.
    """
    loading = jnp.maximum(jnp.hypot(p_from_mw, q_from_mvar), jnp.hypot(p_to_mw, q_to_mvar))
    violation = jnp.maximum(loading - jnp.abs(line_cap), 0.0)
    return jnp.sum(violation), jnp.sum((violation > 0).astype(jnp.int32))
