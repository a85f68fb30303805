"""Training wrapper of the DCMG benchmark (spec §5 "frozen benchmark overrides",
rl-market-tasks §4.2 DCMG): diesel auto-balance and fixed reward shaping around
:class:`~powerzoojax.grid.DataCenterMicrogridEnv`.

DG auto-balance (``dg_autobalance=True``): each step is first previewed with the diesel off
(``a4 = 0``, same key and state, so the same arrivals, load, battery and PV), then replayed
with the diesel set-point ``a4 = clip(D / p_max, 0, 1)`` where ``D`` is the preview's unserved
load after battery, PV and grid import (``info["power_deficit"]``): the diesel covers what
is left, up to its rating, and the agent's own ``a4`` is not applied. The environment and its
costs are those of the replay; with a minimum stable load (``dg_p_min_norm > 0``) a small
``D`` may switch the diesel off or up to that load, as in the env.

Shaped reward (weights fixed by the benchmark): ``r − (50·sla + 30·overtemp + 200·deficit
+ 100·spill + 40·tracking)`` with ``sla, overtemp, deficit`` the env's cost channels,
``spill = power_spill / max(P_load, 1e-6)`` (surplus thrown away, normalised like the
deficit) and ``tracking = |clip(a4, 0, 1) − a4_auto|``, the distance between the agent's
diesel request and the balanced set-point (0 without auto-balance). The spec names the
weights but not the spill and tracking terms; these two forms are this package's reading.

Observation, action, costs, termination and auto-reset are the inner env's; ``info`` adds
``env_reward`` (unshaped), ``shaping_penalty``, ``spill_fraction``, ``dg_tracking_error``
and ``dg_autobalance_norm``. The stored last action (observation 17–21) is the applied one.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from powerzoojax.core import Box, Environment
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.grid._dc_microgrid import DataCenterMicrogridEnv, DCMicrogridParams, DCMicrogridState

DG_ACTION = 4


class DCMicrogridShapingWrapper(Environment):
    """Diesel auto-balance and fixed shaping; see the module docstring."""

    env: DataCenterMicrogridEnv = DataCenterMicrogridEnv()
    dg_autobalance: bool = eqx.field(static=True, default=True)
    w_sla: float = eqx.field(static=True, default=50.0)
    w_overtemp: float = eqx.field(static=True, default=30.0)
    w_deficit: float = eqx.field(static=True, default=200.0)
    w_spill: float = eqx.field(static=True, default=100.0)
    w_tracking: float = eqx.field(static=True, default=40.0)

    def __check_init__(self) -> None:
        for name in ("w_sla", "w_overtemp", "w_deficit", "w_spill", "w_tracking"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and value >= 0):
                raise ValueError(f"DCMicrogridShapingWrapper: {name} must be a finite number >= 0, got {value!r}")

    def observation_space(self, params: DCMicrogridParams) -> Box:
        return self.env.observation_space(params)

    def action_space(self, params: DCMicrogridParams) -> Box:
        return self.env.action_space(params)

    def constraint_names(self, params: DCMicrogridParams) -> tuple[str, ...]:
        return self.env.constraint_names(params)

    def default_params(self) -> DCMicrogridParams:
        return self.env.default_params()

    def reset(self, key: Key, params: DCMicrogridParams) -> tuple[Float[Array, "24"], DCMicrogridState]:
        return self.env.reset(key, params)

    def step(
        self, key: Key, state: DCMicrogridState, action: Float[Array | np.ndarray, " action_dim"], params: DCMicrogridParams
    ) -> tuple[Float[Array, "24"], DCMicrogridState, FloatScalar, Float[Array, "3"], Bool[Array, ""], Info]:
        action = jnp.asarray(action, jnp.float32)
        requested = jnp.clip(action[DG_ACTION], 0.0, 1.0) if action.ndim == 1 and action.shape[0] > DG_ACTION else None
        if self.dg_autobalance and requested is not None:
            *_, preview = self.env.step(key, state, action.at[DG_ACTION].set(0.0), params)
            dg_auto = jnp.clip(preview["power_deficit"] / params.dg_p_max_mw, 0.0, 1.0)
            applied = action.at[DG_ACTION].set(dg_auto)
            tracking = jnp.abs(requested - dg_auto)
        else:
            applied = action  # a wrong shape is reported by the inner env
            dg_auto = jnp.zeros((), jnp.float32) if requested is None else requested
            tracking = jnp.zeros((), jnp.float32)
        obs, next_state, reward, costs, done, info = self.env.step(key, state, applied, params)
        spill = info["power_spill"] / jnp.maximum(info["p_load_mw"], 1e-6)
        penalty = (
            self.w_sla * costs[0] + self.w_overtemp * costs[1] + self.w_deficit * costs[2]
            + self.w_spill * spill + self.w_tracking * tracking
        )
        info = {
            **info,
            "env_reward": reward,
            "shaping_penalty": penalty,
            "spill_fraction": spill,
            "dg_tracking_error": tracking,
            "dg_autobalance_norm": dg_auto,
        }
        return obs, next_state, reward - penalty, costs, done, info
