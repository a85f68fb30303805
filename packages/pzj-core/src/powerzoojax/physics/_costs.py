"""Generation cost from marginal-cost coefficients.

Cases store marginal cost `MC(p) = a p² + b p + c` [$/MWh]; the generation cost is
its integral `TC(p) = Σ (a/3) p³ + (b/2) p² + c p` [$/h] (not MATPOWER's TC form).
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

from powerzoojax.core._types import FloatScalar


def generation_cost(
    unit_power_mw: Float[Array, " n_units"],
    cost_a: Float[Array, " n_units"],
    cost_b: Float[Array, " n_units"],
    cost_c: Float[Array, " n_units"],
) -> FloatScalar:
    """Total generation cost [$/h] of a dispatch (Horner form of Σ a/3 p³ + b/2 p² + c p).

    **Arguments:**

    - `unit_power_mw`: `(n_units,)` dispatch [MW].
    - `cost_a`, `cost_b`, `cost_c`: `(n_units,)` marginal-cost coefficients,
      `MC = a p² + b p + c` [$/MWh].

    **Returns:**

    A float scalar [$/h].
    """
    p = unit_power_mw
    return jnp.sum((((cost_a / 3.0) * p + cost_b / 2.0) * p + cost_c) * p)


def marginal_cost(
    unit_power_mw: Float[Array, " n_units"],
    cost_a: Float[Array, " n_units"],
    cost_b: Float[Array, " n_units"],
    cost_c: Float[Array, " n_units"],
) -> Float[Array, " n_units"]:
    """Per-unit marginal cost at the given dispatch.

    **Arguments:**

    - `unit_power_mw`: `(n_units,)` dispatch [MW].
    - `cost_a`, `cost_b`, `cost_c`: `(n_units,)` marginal-cost coefficients.

    **Returns:**

    `(n_units,)` marginal costs [$/MWh].
    """
    p = unit_power_mw
    return (cost_a * p + cost_b) * p + cost_c
