"""Renewable output with curtailment and the inverter capability circle.

Units: MW / MVAr; capacity factors in [0, 1]; actions in [-1, 1]. Element-wise.
"""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Shaped


def curtailment_fraction(
    action: Float[ArrayLike, "..."], allow_curtailment: Shaped[ArrayLike, "..."] | bool = True
) -> Float[Array, "..."]:
    """`c = (1 − a)/2` for `a` clipped to [-1, 1] (a = 1: no curtailment, a = −1: all).

    **Arguments:**

    - `action`: curtailment action `a`.
    - `allow_curtailment`: where curtailment is allowed; 0 is returned elsewhere.

    **Returns:**

    Curtailed fraction `c` in [0, 1], of the broadcast shape.
    """
    c = 0.5 * (1.0 - jnp.clip(action, -1.0, 1.0))
    return jnp.where(jnp.asarray(allow_curtailment), c, jnp.zeros_like(c))


def renewable_active_power(
    capacity_mw: Float[ArrayLike, "..."], cf: Float[ArrayLike, "..."], curtail_frac: Float[ArrayLike, "..."]
) -> Float[Array, "..."]:
    """`P = cap·CF·(1 − c)` (never above the available `cap·CF`).

    **Arguments:**

    - `capacity_mw`: installed capacity [MW].
    - `cf`: capacity factor [fraction].
    - `curtail_frac`: curtailed fraction `c`.

    **Returns:**

    Active power [MW].
    """
    return jnp.asarray(capacity_mw) * jnp.asarray(cf) * (1.0 - jnp.asarray(curtail_frac))


def inverter_q_limit(s_rated_mva: Float[ArrayLike, "..."], p_mw: Float[ArrayLike, "..."]) -> Float[Array, "..."]:
    """Reactive headroom of the inverter circle: `√max(S² − P², 0)`.

    **Arguments:**

    - `s_rated_mva`: inverter rating [MVA].
    - `p_mw`: active power [MW].

    **Returns:**

    The headroom [MVAr].
    """
    s = jnp.asarray(s_rated_mva)
    p = jnp.asarray(p_mw)
    return jnp.sqrt(jnp.maximum(s * s - p * p, 0.0))


def inverter_q_clip(
    q_des_mvar: Float[ArrayLike, "..."], p_mw: Float[ArrayLike, "..."], s_rated_mva: Float[ArrayLike, "..."]
) -> Float[Array, "..."]:
    """Clip a desired reactive power into the circle `P² + Q² ≤ S²`.

    **Arguments:**

    - `q_des_mvar`: desired reactive power [MVAr].
    - `p_mw`: active power [MW].
    - `s_rated_mva`: inverter rating [MVA].

    **Returns:**

    Reactive power [MVAr].
    """
    q_lim = inverter_q_limit(s_rated_mva, p_mw)
    return jnp.clip(q_des_mvar, -q_lim, q_lim)


def renewable_step(
    capacity_mw: Float[ArrayLike, "..."],
    cf: Float[ArrayLike, "..."],
    curtail_action: Float[ArrayLike, "..."],
    q_action: Float[ArrayLike, "..."],
    s_rated_mva: Float[ArrayLike, "..."],
    allow_curtailment: Shaped[ArrayLike, "..."] | bool = True,
) -> tuple[Float[Array, "..."], Float[Array, "..."], Float[Array, "..."], Float[Array, "..."]]:
    """One renewable step with `q_des = clip(q_action, −1, 1)·s_rated` and `Q` its clip into
    the inverter circle.

    **Arguments:**

    - `capacity_mw`: installed capacity [MW].
    - `cf`: capacity factor [fraction].
    - `curtail_action`: curtailment action in [-1, 1].
    - `q_action`: reactive action in [-1, 1].
    - `s_rated_mva`: inverter rating [MVA].
    - `allow_curtailment`: where curtailment is allowed.

    **Returns:**

    `(p_mw, q_mvar, curtail_frac, q_des_mvar)`.
    """
    c = curtailment_fraction(curtail_action, allow_curtailment)
    p = renewable_active_power(capacity_mw, cf, c)
    q_des = jnp.clip(q_action, -1.0, 1.0) * s_rated_mva
    return p, inverter_q_clip(q_des, p, s_rated_mva), c, q_des


def solar_bell_cf(hour: Float[ArrayLike, "..."]) -> Float[Array, "..."]:
    """Synthetic solar capacity factor `clip(sin(π(h − 6)/12), 0, 1)`.

    **Arguments:**

    - `hour`: hour of day `h`.

    **Returns:**

    Capacity factor [fraction], of the shape of `hour`.
    """
    return jnp.clip(jnp.sin(jnp.pi * (jnp.asarray(hour) - 6.0) / 12.0), 0.0, 1.0)


def wind_synthetic_cf(hour: Float[ArrayLike, "..."]) -> Float[Array, "..."]:
    """Synthetic wind capacity factor `clip(0.3 + 0.2 sin(2πh/24) + 0.1 cos(4πh/24), 0, 1)`.

    **Arguments:**

    - `hour`: hour of day `h`.

    **Returns:**

    Capacity factor [fraction], of the shape of `hour`.
    """
    h = jnp.asarray(hour)
    return jnp.clip(0.3 + 0.2 * jnp.sin(2 * jnp.pi * h / 24.0) + 0.1 * jnp.cos(4 * jnp.pi * h / 24.0), 0.0, 1.0)
