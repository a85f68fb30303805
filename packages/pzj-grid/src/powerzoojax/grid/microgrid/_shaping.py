"""Training wrapper of the DCMG benchmark: diesel auto-balance and fixed reward shaping around"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from powerzoojax.core import Box, Environment, Invariant
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.grid.microgrid._dc_microgrid import DataCenterMicrogridEnv, DCMicrogridParams, DCMicrogridState

DG_ACTION = 4


class DCMicrogridShapingWrapper(Environment):
    """Diesel auto-balance and fixed reward shaping around
    [`DataCenterMicrogridEnv`][powerzoojax.grid.microgrid.DataCenterMicrogridEnv].

    DG auto-balance (`dg_autobalance=True`): the diesel set-point is
    `a4 = clip(D / p_max, 0, 1)` where `D` is the unserved load of the step with the
    diesel off (after battery, PV and grid import): the diesel covers what is left, up to
    its rating, and the agent's own `a4` is not applied. Nothing else in the step depends
    on `a4`, so the env computes `D` and the balanced step in one transition
    ([`step_with_dg_autobalance`][powerzoojax.grid.microgrid.DataCenterMicrogridEnv.step_with_dg_autobalance]).
    With a minimum stable load (`dg_p_min_norm > 0`) a small `D` may switch the diesel off
    or up to that load, as in the env.

    Shaped reward: `r − (w_sla·sla + w_overtemp·overtemp + w_deficit·deficit +
    w_spill·spill + w_tracking·tracking)` with `sla, overtemp, deficit` the env's cost
    channels, `spill = power_spill / max(P_load, 1e-6)` (surplus thrown away, normalised
    like the deficit) and `tracking = |clip(a4, 0, 1) − a4_auto|`, the gap between the
    agent's diesel request and the balanced set-point (0 without auto-balance). Tracking
    is what lets a policy trained here act on the plain env: it learns to request the
    balanced set-point itself. [`DCMicrogridTask`][powerzoojax.grid.tasks.dc_microgrid.DCMicrogridTask]
    trains on this wrapper and evaluates on the plain env.

    Observation, action, costs, termination and auto-reset are the inner env's; `info`
    adds `env_reward` (unshaped), `shaping_penalty`, `spill_fraction`,
    `dg_tracking_error` and `dg_autobalance_norm`. The stored last action (observation
    17–21) is the applied one.

    **Arguments:**

    - `env`: the inner env.
    - `dg_autobalance`: balance the diesel set-point (static).
    - `w_sla`, `w_overtemp`, `w_deficit`, `w_spill`, `w_tracking`: shaping weights, fixed
      by the benchmark at 50, 30, 200, 100 and 40 (static).
    """
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

    def iteration_count_keys(self, params: DCMicrogridParams) -> tuple[str, ...]:
        return self.env.iteration_count_keys(params)

    def ignored_action_entries(self, params: DCMicrogridParams) -> np.ndarray | None:
        return self.env.ignored_action_entries(params)

    def physics_invariants(self, params: DCMicrogridParams) -> tuple[Invariant, ...]:
        # The wrapper reshapes the reward only: the transitions are the inner env's.
        return self.env.physics_invariants(params)

    def default_params(self) -> DCMicrogridParams:
        return self.env.default_params()

    def observe(self, state: DCMicrogridState, params: DCMicrogridParams) -> Float[Array, "24"] | None:
        return self.env.observe(state, params)

    def action_layout(self, params: DCMicrogridParams) -> str | None:
        return self.env.action_layout(params)

    def reset_env(self, key: Key, params: DCMicrogridParams) -> tuple[Float[Array, "24"], DCMicrogridState]:
        return self.env.reset_env(key, params)

    def step_env(
        self, key: Key, state: DCMicrogridState, action: Float[Array, " action_dim"], params: DCMicrogridParams
    ) -> tuple[Float[Array, "24"], DCMicrogridState, FloatScalar, Float[Array, "3"], Bool[Array, ""], Info]:
        action = jnp.asarray(action, jnp.float32)
        requested = jnp.clip(action[DG_ACTION], 0.0, 1.0)
        # One env transition: the diesel set-point is balanced inside it.
        obs, next_state, reward, costs, done, info = self.env.step_with_dg_autobalance(
            key, state, action, params, autobalance=self.dg_autobalance
        )
        if self.dg_autobalance:
            dg_auto = info["dg_autobalance_norm"]
            tracking = jnp.abs(requested - dg_auto)
        else:
            dg_auto = requested
            tracking = jnp.zeros((), jnp.float32)
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
