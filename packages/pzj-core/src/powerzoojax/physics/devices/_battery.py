"""Battery feasibility and state-of-charge update, shared by every battery model.

Units: power MW (positive = discharge/injection), energy MWh, `dt` hours, SOC and
efficiencies as fractions. All functions broadcast element-wise, so one call serves a
single battery (scalars) or a bundle of N batteries (arrays of shape `(N,)`).
"""

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float


def battery_limits(
    soc: Float[ArrayLike, "..."],
    e_mwh: Float[ArrayLike, "..."],
    p_rated: Float[ArrayLike, "..."],
    eta_c: Float[ArrayLike, "..."],
    eta_d: Float[ArrayLike, "..."],
    soc_min: Float[ArrayLike, "..."],
    soc_max: Float[ArrayLike, "..."],
    dt: Float[ArrayLike, "..."],
    p_chg_rated: Float[ArrayLike, "..."] | None = None,
) -> tuple[Float[Array, "..."], Float[Array, "..."]]:
    """Feasible discharge and charge power for one step.

    `p_dis_max = clip((soc − soc_min)·E·η_d/Δt, 0, P_rated)`,
    `p_chg_max = clip((soc_max − soc)·E/(η_c·Δt), 0, P_chg_rated)`.

    **Arguments:**

    - `soc`: state of charge [fraction].
    - `e_mwh`: energy capacity `E` [MWh].
    - `p_rated`: discharge rating [MW].
    - `eta_c`, `eta_d`: one-way charge and discharge efficiencies.
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `dt`: step length [hours].
    - `p_chg_rated`: charge rating [MW]; `None` takes `p_rated` (vehicles have asymmetric
      chargers).

    All arguments broadcast together.

    **Returns:**

    `(p_dis_max, p_chg_max)` [MW, ≥ 0].
    """
    soc = jnp.asarray(soc)
    p_chg_rated = p_rated if p_chg_rated is None else p_chg_rated
    p_dis_max = jnp.clip((soc - soc_min) * e_mwh * eta_d / dt, 0.0, p_rated)
    p_chg_max = jnp.clip((soc_max - soc) * e_mwh / (eta_c * dt), 0.0, p_chg_rated)
    return p_dis_max, p_chg_max


def battery_soc_update(
    soc: Float[ArrayLike, "..."],
    p_mw: Float[ArrayLike, "..."],
    e_mwh: Float[ArrayLike, "..."],
    eta_c: Float[ArrayLike, "..."],
    eta_d: Float[ArrayLike, "..."],
    soc_min: Float[ArrayLike, "..."],
    soc_max: Float[ArrayLike, "..."],
    dt: Float[ArrayLike, "..."],
) -> Float[Array, "..."]:
    """SOC after delivering `p_mw` for `dt` hours.

    `−PΔt/(η_d E)` when discharging (P ≥ 0), `−PΔt·η_c/E` when charging; clipped to
    `[soc_min, soc_max]`.

    **Arguments:**

    - `soc`: state of charge [fraction].
    - `p_mw`: delivered power [MW], positive when discharging.
    - `e_mwh`: energy capacity [MWh].
    - `eta_c`, `eta_d`: one-way efficiencies.
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `dt`: step length [hours].

    **Returns:**

    The next SOC [fraction], of the broadcast shape.
    """
    p = jnp.asarray(p_mw)
    delta = jnp.where(p >= 0.0, -p * dt / (eta_d * e_mwh), -p * dt * eta_c / e_mwh)
    return jnp.clip(soc + delta, soc_min, soc_max)


def battery_step(
    soc: Float[ArrayLike, "..."],
    p_des: Float[ArrayLike, "..."],
    e_mwh: Float[ArrayLike, "..."],
    p_rated: Float[ArrayLike, "..."],
    eta_c: Float[ArrayLike, "..."],
    eta_d: Float[ArrayLike, "..."],
    soc_min: Float[ArrayLike, "..."],
    soc_max: Float[ArrayLike, "..."],
    dt: Float[ArrayLike, "..."],
) -> tuple[Float[Array, "..."], Float[Array, "..."]]:
    """Clip a desired power to the feasible range and advance the SOC.

    `P = clip(P_des, −P_chg_max, P_dis_max)` (see
    [`battery_limits`][powerzoojax.physics.devices.battery_limits]), then
    [`battery_soc_update`][powerzoojax.physics.devices.battery_soc_update].

    **Arguments:**

    - `soc`: state of charge [fraction].
    - `p_des`: desired power [MW], positive when discharging.
    - `e_mwh`: energy capacity [MWh].
    - `p_rated`: power rating [MW].
    - `eta_c`, `eta_d`: one-way efficiencies.
    - `soc_min`, `soc_max`: SOC window [fraction].
    - `dt`: step length [hours].

    **Returns:**

    `(p_mw, soc_next)`.
    """
    p_dis_max, p_chg_max = battery_limits(soc, e_mwh, p_rated, eta_c, eta_d, soc_min, soc_max, dt)
    p = jnp.clip(p_des, -p_chg_max, p_dis_max)
    return p, battery_soc_update(soc, p, e_mwh, eta_c, eta_d, soc_min, soc_max, dt)


def one_way_efficiencies(
    eta_c: float | None, eta_d: float | None, eta_roundtrip: float | None
) -> tuple[float, float]:
    """Host-side: fill a missing one-way efficiency with `√eta_roundtrip`.

    **Arguments:**

    - `eta_c`, `eta_d`: one-way efficiencies, or `None`.
    - `eta_roundtrip`: round-trip efficiency, or `None` (then 0.95 is used for a missing
      one-way value).

    **Returns:**

    `(eta_c, eta_d)` as floats.
    """
    default = 0.95 if eta_roundtrip is None else float(eta_roundtrip) ** 0.5
    return (default if eta_c is None else float(eta_c), default if eta_d is None else float(eta_d))
