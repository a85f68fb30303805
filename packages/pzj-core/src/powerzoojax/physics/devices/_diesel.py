"""Diesel generator output, fuel cost and emissions. Element-wise, MW / hours."""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float


def compute_dg_power(
    action: Float[ArrayLike, "..."], p_max_mw: Float[ArrayLike, "..."], p_min_norm: Float[ArrayLike, "..."] = 0.0
) -> Float[Array, "..."]:
    """Generator output for a set-point `a` clipped to [0, 1].

    With a minimum stable load `p_min_norm` (fraction of `p_max`): off when
    `a ≤ p_min_norm/2`, else `max(a, p_min_norm)`. `P = that·p_max`.

    **Arguments:**

    - `action`: set-point `a` [fraction of `p_max`], any shape.
    - `p_max_mw`: rated power [MW], broadcastable.
    - `p_min_norm`: minimum stable load [fraction of `p_max`].

    **Returns:**

    Output [MW], of the broadcast shape.
    """
    a = jnp.clip(action, 0.0, 1.0)
    eff = jnp.where(a <= 0.5 * jnp.asarray(p_min_norm), 0.0, jnp.maximum(a, p_min_norm))
    return eff * p_max_mw


def compute_dg_fuel_cost(
    p_mw: Float[ArrayLike, "..."], dt_hours: Float[ArrayLike, ""], fuel_cost_per_mwh: Float[ArrayLike, "..."]
) -> Float[Array, ""]:
    """Fuel cost of the step summed over generators: `Σ P·Δt·fuel_cost`.

    **Arguments:**

    - `p_mw`: generator outputs [MW].
    - `dt_hours`: step length [hours].
    - `fuel_cost_per_mwh`: fuel cost [$/MWh], broadcastable.

    **Returns:**

    A scalar [$].
    """
    return jnp.sum(jnp.asarray(p_mw) * dt_hours * fuel_cost_per_mwh)


def compute_dg_emissions(
    p_mw: Float[ArrayLike, "..."], dt_hours: Float[ArrayLike, ""], ef_kg_per_kwh: Float[ArrayLike, "..."]
) -> Float[Array, ""]:
    """CO₂ of the step summed over generators: `Σ P·Δt·1000·ef`.

    **Arguments:**

    - `p_mw`: generator outputs [MW].
    - `dt_hours`: step length [hours].
    - `ef_kg_per_kwh`: emission factor [kg/kWh], broadcastable.

    **Returns:**

    A scalar [kg].
    """
    return jnp.sum(jnp.asarray(p_mw) * dt_hours * 1000.0 * ef_kg_per_kwh)
