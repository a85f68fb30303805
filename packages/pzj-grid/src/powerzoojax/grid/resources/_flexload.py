"""Flexible loads: standalone [`FlexLoadEnv`][powerzoojax.grid.resources.FlexLoadEnv] and the grid-attached [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle]"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import Box, Environment, Invariant, make_box, stack_costs, time_features
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.grid.resources._bundle import (
    BundleCtx,
    ResourceBundle,
    device_array,
    n_devices_of,
    resolve_bus_ids,
)
from powerzoojax.grid.resources._invariants import flexload_bundle_laws, flexload_env_laws
from powerzoojax.grid.resources._standalone import DeviceParams, DeviceState
from powerzoojax.physics.devices import FLEX_BUFFER_SLOTS, flexload_buffer_energy, flexload_step


def _flex_obs(curtail, shift_out, shift_in, size, buffer, cap_c, cap_s, horizon):
    h = horizon.astype(jnp.float32)
    cols = [
        curtail / cap_c,
        shift_out / cap_s,
        shift_in / cap_s,
        size.astype(jnp.float32) / h,
        flexload_buffer_energy(buffer) / (cap_s * h),
    ]
    return jnp.clip(jnp.stack(cols, axis=-1), 0.0, 1.0)


# ----------------------------------------------------------------------------- standalone


class FlexLoadState(DeviceState):
    """State of [`FlexLoadEnv`][powerzoojax.grid.resources.FlexLoadEnv].

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `current_p_mw`, `current_q_mvar`: last net injection [MW, MVAr].
    - `curtailed_mw`, `shift_out_mw`, `shift_in_mw`: last step's flows [MW].
    - `deferred_buffer`: `(slots,)` deferred load per future step [MW].
    - `buffer_head`, `buffer_size`: ring-buffer head and occupied length.
    - `lmp`: current price [$/MWh].
    """
    curtailed_mw: Float[Array, ""]
    shift_out_mw: Float[Array, ""]
    shift_in_mw: Float[Array, ""]
    deferred_buffer: Float[Array, " slots"]
    buffer_head: Int[Array, ""]
    buffer_size: Int[Array, ""]
    lmp: Float[Array, ""]


class FlexLoadParams(DeviceParams):
    """Params of [`FlexLoadEnv`][powerzoojax.grid.resources.FlexLoadEnv]; build with
    [`make_flexload_params`][powerzoojax.grid.resources.make_flexload_params].

    **Arguments:**

    - `cap_curtail_mw`, `cap_shift_mw`: capacities [MW].
    - `horizon`: steps a shifted load is spread over.
    - `curtail_cost`: [$/MWh].
    - `holding_cost`: cost of deferred energy [$/MWh].
    - `simultaneity_penalty`: [$/MW].
    - `price_ref`: reference price [$/MWh].
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `bus_id`: bus number, `-1` when standalone (static).
    - `steps_per_day`: steps in one day (static).
    """
    cap_curtail_mw: Float[Array, ""]
    cap_shift_mw: Float[Array, ""]
    horizon: Int[Array, ""]
    curtail_cost: Float[Array, ""]
    holding_cost: Float[Array, ""]
    simultaneity_penalty: Float[Array, ""]
    price_ref: Float[Array, ""]


def make_flexload_params(
    cap_curtail_mw: float = 10.0,
    cap_shift_mw: float = 10.0,
    horizon: int = 4,
    curtail_cost: float = 50.0,
    holding_cost: float = 10.0,
    simultaneity_penalty: float = 100.0,
    price_ref: float = 100.0,
    delta_t_hours: float = 0.5,
    steps_per_day: int = 48,
    max_steps: int = 48,
    bus_id: int = -1,
) -> FlexLoadParams:
    """Params of [`FlexLoadEnv`][powerzoojax.grid.resources.FlexLoadEnv].

    **Arguments:**

    - `cap_curtail_mw`, `cap_shift_mw`: capacities [MW].
    - `horizon`: steps a shifted load is spread over.
    - `curtail_cost`: [$/MWh].
    - `holding_cost`: cost of deferred energy [$/MWh].
    - `simultaneity_penalty`: cost of curtailing and shifting at once [$/MW].
    - `price_ref`: reference price [$/MWh].
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `max_steps`: episode length [steps].
    - `bus_id`: bus number, `-1` when standalone.

    **Returns:**

    [`FlexLoadParams`][powerzoojax.grid.resources.FlexLoadParams].
    """
    c = "make_flexload_params"
    h = positive_int(c, "horizon", horizon)
    if h > FLEX_BUFFER_SLOTS:
        raise ValueError(f"{c}: horizon must be <= {FLEX_BUFFER_SLOTS}, got {h}")
    f = lambda name, v, **kw: jnp.asarray(finite_scalar(c, name, v, **kw), jnp.float32)  # noqa: E731
    return FlexLoadParams(
        cap_curtail_mw=f("cap_curtail_mw", cap_curtail_mw, positive=True),
        cap_shift_mw=f("cap_shift_mw", cap_shift_mw, positive=True),
        horizon=jnp.asarray(h, jnp.int32),
        curtail_cost=f("curtail_cost", curtail_cost, non_negative=True),
        holding_cost=f("holding_cost", holding_cost, non_negative=True),
        simultaneity_penalty=f("simultaneity_penalty", simultaneity_penalty, non_negative=True),
        price_ref=f("price_ref", price_ref, positive=True),
        delta_t_hours=finite_scalar(c, "delta_t_hours", delta_t_hours, positive=True),
        steps_per_day=positive_int(c, "steps_per_day", steps_per_day),
        max_steps=positive_int(c, "max_steps", max_steps),
        bus_id=int(bus_id),
    )


class FlexLoadEnv(Environment):
    """Single flexible load.

    . Physics: `flexload_step` (ring buffer; shifted load comes back spread over
    the next H steps). The standalone env keeps the reference's 64 slots; a bundle's ring has
    `buffer_slots = max(horizon)` slots, which gives the same pops and buffer energies (see
    `powerzoojax.physics.devices._flexload`) at a fraction of the per-step work.

    `FlexLoadEnv` — obs `(8,)`: `[curtail/cap_c, shift_out/cap_s, shift_in/cap_s, size/H,
    buffer_energy/(cap_s·H)]` (each clipped to [0, 1]) `+ [sin, cos, clip(lmp/price_ref, −1, 2)]`;
    action `Box([0, 1]²)` = `[curtail, shift_out]` fractions; reward 0; costs
    `(curtail·Δt·c_curt, buffer_energy·Δt·c_hold, min(curtail, shift_out)·penalty)` [$] named
    `("curtailment", "shift_discomfort", "simultaneous_activation")`. The price observed is
    `step_env`'s `lmp` argument, 0 through `step`.
    """
    def default_params(self) -> FlexLoadParams:
        return make_flexload_params()

    def observation_space(self, params: FlexLoadParams) -> Box:
        return make_box(-1.0, 2.0, (8,))

    def action_space(self, params: FlexLoadParams) -> Box:
        return make_box(0.0, 1.0, (2,))

    def constraint_names(self, params: FlexLoadParams) -> tuple[str, ...]:
        return ("curtailment", "shift_discomfort", "simultaneous_activation")

    def physics_invariants(self, params: FlexLoadParams) -> tuple[Invariant, ...]:
        # Shifted load owed until it returns (no loss, no gain); actions within the caps.
        return flexload_env_laws()

    def _obs(self, s: FlexLoadState, params: FlexLoadParams) -> Float[Array, "8"]:
        dev = _flex_obs(s.curtailed_mw, s.shift_out_mw, s.shift_in_mw, s.buffer_size, s.deferred_buffer,
                        params.cap_curtail_mw, params.cap_shift_mw, params.horizon)
        price = jnp.clip(s.lmp / params.price_ref, -1.0, 2.0)[None]
        return jnp.concatenate([dev, time_features(s.time_step, params.steps_per_day), price])

    def observe(self, state: FlexLoadState, params: FlexLoadParams) -> Float[Array, "8"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: FlexLoadParams) -> tuple[Float[Array, "8"], FlexLoadState]:
        zero = jnp.zeros((), jnp.float32)
        izero = jnp.asarray(0, jnp.int32)
        state = FlexLoadState(
            time_step=izero, done=jnp.asarray(False), current_p_mw=zero, current_q_mvar=zero,
            curtailed_mw=zero, shift_out_mw=zero, shift_in_mw=zero,
            deferred_buffer=jnp.zeros((FLEX_BUFFER_SLOTS,), jnp.float32), buffer_head=izero, buffer_size=izero,
            lmp=zero,
        )
        return self._obs(state, params), state

    def step_env(
        self, key: Key, state: FlexLoadState, action: Float[ArrayLike, "2"], params: FlexLoadParams,
        lmp: Float[ArrayLike, ""] = 0.0,
    ) -> tuple[Float[Array, "8"], FlexLoadState, FloatScalar, Float[Array, "3"], Bool[Array, ""], Info]:
        a = jnp.asarray(action, jnp.float32).reshape(2)
        buf, head, size, curtail, s_out, s_in = flexload_step(
            state.deferred_buffer, state.buffer_head, state.buffer_size, a[0], a[1],
            params.cap_curtail_mw, params.cap_shift_mw, params.horizon,
        )
        dt = params.delta_t_hours
        c_curt = curtail * dt * params.curtail_cost
        c_hold = flexload_buffer_energy(buf) * dt * params.holding_cost
        c_sim = jnp.minimum(curtail, s_out) * params.simultaneity_penalty
        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        nxt = FlexLoadState(
            time_step=time_step, done=done, current_p_mw=curtail + s_out - s_in,
            current_q_mvar=jnp.zeros((), jnp.float32), curtailed_mw=curtail, shift_out_mw=s_out,
            shift_in_mw=s_in, deferred_buffer=buf, buffer_head=head, buffer_size=size,
            lmp=jnp.asarray(lmp, jnp.float32),
        )
        info = {"cost_curtailment": c_curt, "cost_shift_discomfort": c_hold, "cost_simultaneous_activation": c_sim,
                "cost_sum": c_curt + c_hold + c_sim, "p_mw": curtail + s_out - s_in}
        return self._obs(nxt, params), nxt, jnp.zeros((), jnp.float32), stack_costs(c_curt, c_hold, c_sim), done, info


# ----------------------------------------------------------------------------- bundle


class FlexLoadBundleState(eqx.Module):
    """State of a [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle].

    **Arguments:**

    - `curtailed_mw`, `shift_out_mw`, `shift_in_mw`: `(n_devices,)` last step's flows [MW].
    - `deferred_buffer`: `(n_devices, slots)` deferred load [MW].
    - `buffer_head`, `buffer_size`: `(n_devices,)` ring-buffer head and length.
    """
    curtailed_mw: Float[Array, " n_devices"]
    shift_out_mw: Float[Array, " n_devices"]
    shift_in_mw: Float[Array, " n_devices"]
    deferred_buffer: Float[Array, "n_devices slots"]
    buffer_head: Int[Array, " n_devices"]
    buffer_size: Int[Array, " n_devices"]


class FlexLoadBundle(ResourceBundle):
    """N flexible loads; build with [`make_flexload_bundle`][powerzoojax.grid.resources.make_flexload_bundle].

    Action per device `[curtail, shift_out]` (negatives clipped to 0); obs per device the
    first five channels of [`FlexLoadEnv`][powerzoojax.grid.resources.FlexLoadEnv];
    injection `curtail + shift_out − shift_in` [MW], Q = 0. cost_info `cost_curtailment`,
    `cost_shift_discomfort` (per device), `cost_sum` (total, no simultaneity term), `cost`,
    and the summed `curtailed_mw, shift_out_mw, shift_in_mw`.

    **Arguments:**

    - `bus_idx`: `(n,)` internal bus of each load.
    - `cap_curtail_mw`, `cap_shift_mw`: `(n,)` capacities [MW].
    - `horizon`: `(n,)` steps a shifted load is spread over.
    - `curtail_cost`: `(n,)` [$/MWh].
    - `holding_cost`: `(n,)` cost of deferred energy [$/MWh].
    - `n_devices`, `per_device_action_dim`, `per_device_obs_dim`: sizes (static).
    - `dt_hours`: step length [hours] (static).
    - `buffer_slots`: length of the deferral ring, `>= max(horizon)` (static).
    - `uniform_horizon`: every horizon equals `buffer_slots` (static).
    """

    bus_idx: Int[Array, " n_devices"]
    cap_curtail_mw: Float[Array, " n_devices"]
    cap_shift_mw: Float[Array, " n_devices"]
    horizon: Int[Array, " n_devices"]
    curtail_cost: Float[Array, " n_devices"]
    holding_cost: Float[Array, " n_devices"]
    n_devices: int = eqx.field(static=True)
    per_device_action_dim: int = eqx.field(static=True)
    per_device_obs_dim: int = eqx.field(static=True)
    dt_hours: float = eqx.field(static=True)
    # Ring length: any value >= max(horizon) behaves the same (make_flexload_bundle: max(horizon)).
    buffer_slots: int = eqx.field(static=True, default=FLEX_BUFFER_SLOTS)
    # Every device's horizon equals buffer_slots: the step skips the shift-window test.
    uniform_horizon: bool = eqx.field(static=True, default=False)

    def physics_invariants(self) -> tuple[Invariant, ...]:
        # Shifted load owed until it returns (no loss, no gain); actions within the caps.
        return flexload_bundle_laws()

    def reset(self, key: Key) -> FlexLoadBundleState:
        zero = jnp.zeros((self.n_devices,), jnp.float32)
        izero = jnp.zeros((self.n_devices,), jnp.int32)
        return FlexLoadBundleState(zero, zero, zero, jnp.zeros((self.n_devices, self.buffer_slots), jnp.float32),
                                   izero, izero)

    def observe(self, b: FlexLoadBundleState, ctx: BundleCtx) -> Float[Array, " obs_dim"]:
        return _flex_obs(b.curtailed_mw, b.shift_out_mw, b.shift_in_mw, b.buffer_size, b.deferred_buffer,
                         self.cap_curtail_mw, self.cap_shift_mw, self.horizon).reshape(-1)

    def step(self, b: FlexLoadBundleState, action: Float[Array, " action_dim"], ctx: BundleCtx):
        a = action.reshape(self.n_devices, 2)
        horizon = self.buffer_slots if self.uniform_horizon else self.horizon
        buf, head, size, curtail, s_out, s_in = flexload_step(
            b.deferred_buffer, b.buffer_head, b.buffer_size, a[:, 0], a[:, 1],
            self.cap_curtail_mw, self.cap_shift_mw, horizon,
        )
        c_curt = curtail * self.dt_hours * self.curtail_cost
        c_hold = flexload_buffer_energy(buf) * self.dt_hours * self.holding_cost
        total = jnp.sum(c_curt + c_hold)
        nxt = FlexLoadBundleState(curtail, s_out, s_in, buf, head, size)
        info = {"cost_curtailment": c_curt, "cost_shift_discomfort": c_hold, "cost_sum": total, "cost": total,
                "curtailed_mw": jnp.sum(curtail), "shift_out_mw": jnp.sum(s_out), "shift_in_mw": jnp.sum(s_in)}
        return nxt, curtail + s_out - s_in, jnp.zeros_like(curtail), self.observe(nxt, ctx), info


def make_flexload_bundle(
    case: CaseData | None = None,
    bus_ids: Any = None,
    n_devices: int | None = None,
    cap_curtail_mw: Any = 0.10,
    cap_shift_mw: Any = None,
    horizon: Any = 4,
    curtail_cost: Any = 50.0,
    holding_cost: Any = 10.0,
    dt_hours: float = 0.5,
) -> FlexLoadBundle:
    """Bundle of flexible loads.

    **Arguments:**

    - `case`: the grid; `None` for a busless bundle.
    - `bus_ids`: bus numbers of the loads.
    - `n_devices`: number of loads when `bus_ids` is `None`.
    - `cap_curtail_mw`: curtailment capacity [MW].
    - `cap_shift_mw`: shift capacity [MW]; `None` takes `cap_curtail_mw`.
    - `horizon`: steps a shifted load is spread over.
    - `curtail_cost`: [$/MWh].
    - `holding_cost`: cost of deferred energy [$/MWh].
    - `dt_hours`: step length [hours].

    **Returns:**

    A [`FlexLoadBundle`][powerzoojax.grid.resources.FlexLoadBundle].
    """
    c = "make_flexload_bundle"
    n = n_devices_of(c, n_devices, bus_ids)
    bus_idx = resolve_bus_ids(c, None if case is None else case.node_ids, bus_ids, n)
    cap_c = device_array(c, "cap_curtail_mw", cap_curtail_mw, n, positive=True)
    h = device_array(c, "horizon", horizon, n, positive=True)
    if bool(jnp.any((h != jnp.round(h)) | (h > FLEX_BUFFER_SLOTS))):
        raise ValueError(f"{c}: horizon must be integers in 1..{FLEX_BUFFER_SLOTS}, got {horizon!r}")
    slots = int(np.max(np.asarray(h)))
    return FlexLoadBundle(
        bus_idx=jnp.asarray(bus_idx, jnp.int32),
        cap_curtail_mw=cap_c,
        cap_shift_mw=cap_c if cap_shift_mw is None else device_array(c, "cap_shift_mw", cap_shift_mw, n, positive=True),
        horizon=h.astype(jnp.int32),
        curtail_cost=device_array(c, "curtail_cost", curtail_cost, n, non_negative=True),
        holding_cost=device_array(c, "holding_cost", holding_cost, n, non_negative=True),
        n_devices=n,
        per_device_action_dim=2,
        per_device_obs_dim=5,
        dt_hours=finite_scalar(c, "dt_hours", dt_hours, positive=True),
        buffer_slots=slots,
        uniform_horizon=bool(np.all(np.asarray(h) == slots)),
    )
