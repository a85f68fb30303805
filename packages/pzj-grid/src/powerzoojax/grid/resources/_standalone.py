"""Shared base of the standalone single-device envs: state
`(current_p_mw, current_q_mvar, time_step)`, params `(bus_id=−1, Δt, steps_per_day,
max_steps)`, reward 0."""

import equinox as eqx
from jaxtyping import Array, Float

from powerzoojax.core import EnvParams, EnvState


class DeviceState(EnvState):
    current_p_mw: Float[Array, ""]
    current_q_mvar: Float[Array, ""]


class DeviceParams(EnvParams):
    bus_id: int = eqx.field(static=True, default=-1, kw_only=True)
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
