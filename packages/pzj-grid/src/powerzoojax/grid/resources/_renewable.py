"""Renewables: standalone [`RenewableEnv`][powerzoojax.grid.resources.RenewableEnv] ([`SolarEnv`][powerzoojax.grid.resources.SolarEnv], [`WindEnv`][powerzoojax.grid.resources.WindEnv]) and the"""

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
from powerzoojax.grid.resources._invariants import renewable_bundle_laws, renewable_env_laws
from powerzoojax.grid.resources._standalone import DeviceParams, DeviceState
from powerzoojax.physics.devices import renewable_step, solar_bell_cf, wind_synthetic_cf


def _hours(n: int) -> np.ndarray:
    return 24.0 * np.arange(n) / n


def _cf_vector(caller: str, cf: Any) -> np.ndarray:
    # Any sequence of numbers (a list, a tuple, an array): the conversion below checks it.
    arr = np.asarray(cf, np.float64).reshape(-1)
    if arr.size < 1 or not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{caller}: capacity factors must be a non-empty finite sequence in [0, 1], got {cf!r}")
    return arr


# ----------------------------------------------------------------------------- standalone


class RenewableState(DeviceState):
    """State of [`RenewableEnv`][powerzoojax.grid.resources.RenewableEnv].

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `current_p_mw`, `current_q_mvar`: last output [MW, MVAr].
    """
    pass


class RenewableParams(DeviceParams):
    """Params of [`RenewableEnv`][powerzoojax.grid.resources.RenewableEnv]; build with
    [`make_renewable_params`][powerzoojax.grid.resources.make_renewable_params].

    **Arguments:**

    - `capacity_mw`: installed capacity [MW].
    - `s_rated_mva`: inverter rating [MVA].
    - `cf_profile`: `(T,)` capacity factors [fraction].
    - `enable_q_control`: the action has a Q entry (static).
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `bus_id`: bus number, `-1` when standalone (static).
    - `steps_per_day`: steps in one day (static).
    """
    capacity_mw: Float[Array, ""]
    s_rated_mva: Float[Array, ""]
    cf_profile: Float[Array, " n_profile_steps"]
    enable_q_control: bool = eqx.field(static=True, default=False, kw_only=True)


def make_renewable_params(
    capacity_mw: float = 100.0,
    cf_profile: Any = None,
    s_rated_mva: float | None = None,
    enable_q_control: bool = False,
    delta_t_hours: float = 0.5,
    steps_per_day: int = 48,
    max_steps: int = 48,
    bus_id: int = -1,
) -> RenewableParams:
    """Params of [`RenewableEnv`][powerzoojax.grid.resources.RenewableEnv].

    **Arguments:**

    - `capacity_mw`: installed capacity [MW].
    - `cf_profile`: `(T,)` capacity factors; `None` takes a flat 0.5 over 48 steps.
    - `s_rated_mva`: inverter rating [MVA]; `None` takes `capacity_mw`.
    - `enable_q_control`: add a Q entry to the action.
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `max_steps`: episode length [steps].
    - `bus_id`: bus number, `-1` when standalone.

    **Returns:**

    [`RenewableParams`][powerzoojax.grid.resources.RenewableParams].
    """
    c = "make_renewable_params"
    cap = finite_scalar(c, "capacity_mw", capacity_mw, positive=True)
    cf = np.full(48, 0.5) if cf_profile is None else _cf_vector(c, cf_profile)
    s = cap if s_rated_mva is None else finite_scalar(c, "s_rated_mva", s_rated_mva, positive=True)
    return RenewableParams(
        capacity_mw=jnp.asarray(cap, jnp.float32),
        s_rated_mva=jnp.asarray(s, jnp.float32),
        cf_profile=jnp.asarray(cf, jnp.float32),
        enable_q_control=bool(enable_q_control),
        delta_t_hours=finite_scalar(c, "delta_t_hours", delta_t_hours, positive=True),
        steps_per_day=positive_int(c, "steps_per_day", steps_per_day),
        max_steps=positive_int(c, "max_steps", max_steps),
        bus_id=int(bus_id),
    )


class RenewableEnv(Environment):
    """Single curtailable renewable plant.

    grid-attached [`RenewableBundle`][powerzoojax.grid.resources.RenewableBundle]. Physics: `renewable_step`.

    `RenewableEnv` — obs `[CF, P/cap, (Q/s_rated), sin, cos]` (CF of the next step);
    action `[a_curtail(, a_q)]` in [-1, 1] with curtailment `c = (1 − a)/2`; reward 0;
    costs `(cap·CF·c, |q·s_rated − Q|/s_rated)` named `("curtailment", "q_clip")` [MW, –].
    """
    def default_params(self) -> RenewableParams:
        return make_renewable_params()

    def _dims(self, params: RenewableParams) -> tuple[int, int]:
        return (2, 5) if params.enable_q_control else (1, 4)

    def observation_space(self, params: RenewableParams) -> Box:
        return make_box(-1.0, 1.0, (self._dims(params)[1],))

    def action_space(self, params: RenewableParams) -> Box:
        return make_box(-1.0, 1.0, (self._dims(params)[0],))

    def constraint_names(self, params: RenewableParams) -> tuple[str, ...]:
        return ("curtailment", "q_clip")

    def physics_invariants(self, params: RenewableParams) -> tuple[Invariant, ...]:
        # Output within the available cap·CF and inside the inverter circle.
        return renewable_env_laws()

    def _cf(self, time_step: Int[Array, ""], params: RenewableParams) -> Float[Array, ""]:
        return params.cf_profile[time_step % params.cf_profile.shape[0]]

    def _obs(self, state: RenewableState, params: RenewableParams) -> Float[Array, " obs_dim"]:
        head = [self._cf(state.time_step, params), state.current_p_mw / params.capacity_mw]
        if params.enable_q_control:
            head.append(state.current_q_mvar / params.s_rated_mva)
        return jnp.concatenate([jnp.stack(head), time_features(state.time_step, params.steps_per_day)])

    def observe(self, state: RenewableState, params: RenewableParams) -> Float[Array, " obs_dim"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: RenewableParams) -> tuple[Float[Array, " obs_dim"], RenewableState]:
        zero = jnp.zeros((), jnp.float32)
        state = RenewableState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False),
                               current_p_mw=zero, current_q_mvar=zero)
        return self._obs(state, params), state

    def step_env(
        self, key: Key, state: RenewableState, action: Float[ArrayLike, " act"], params: RenewableParams
    ) -> tuple[Float[Array, " obs_dim"], RenewableState, FloatScalar, Float[Array, "2"], Bool[Array, ""], Info]:
        a = jnp.asarray(action, jnp.float32).reshape(-1)
        cf = self._cf(state.time_step, params)
        q_act = a[1] if params.enable_q_control else jnp.zeros((), jnp.float32)
        p, q, c, q_des = renewable_step(params.capacity_mw, cf, a[0], q_act, params.s_rated_mva)
        curtailed = params.capacity_mw * cf * c
        q_clip = jnp.abs(q_des - q) / params.s_rated_mva
        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        nxt = RenewableState(time_step=time_step, done=done, current_p_mw=p, current_q_mvar=q)
        info = {"cost_curtailment": curtailed, "cost_q_clip": q_clip, "cost_sum": curtailed + q_clip,
                "p_mw": p, "q_mvar": q, "cf": cf}
        return self._obs(nxt, params), nxt, jnp.zeros((), jnp.float32), stack_costs(curtailed, q_clip), done, info


class SolarEnv(RenewableEnv):
    """[`RenewableEnv`][powerzoojax.grid.resources.RenewableEnv] with the solar bell CF `clip(sin(π(h − 6)/12), 0, 1)`."""

    def default_params(self) -> RenewableParams:
        return make_renewable_params(cf_profile=np.asarray(solar_bell_cf(_hours(48))))


class WindEnv(RenewableEnv):
    """[`RenewableEnv`][powerzoojax.grid.resources.RenewableEnv] with the synthetic wind CF of the reference"""

    def default_params(self) -> RenewableParams:
        return make_renewable_params(cf_profile=np.asarray(wind_synthetic_cf(_hours(48))))


# ----------------------------------------------------------------------------- bundle


class RenewableBundleState(eqx.Module):
    """State of a [`RenewableBundle`][powerzoojax.grid.resources.RenewableBundle].

    **Arguments:**

    - `t`: step counter (row of the CF profile).
    - `cf`: `(n_devices,)` current capacity factors.
    - `p_mw`, `q_mvar`: `(n_devices,)` last output [MW, MVAr].
    - `curtail_frac`: `(n_devices,)` last curtailed fraction.
    """
    t: Int[Array, ""]
    cf: Float[Array, " n_devices"]
    p_mw: Float[Array, " n_devices"]
    q_mvar: Float[Array, " n_devices"]
    curtail_frac: Float[Array, " n_devices"]


class RenewableBundle(ResourceBundle):
    """N renewables; build with [`make_renewable_bundle`][powerzoojax.grid.resources.make_renewable_bundle].

    Action per device `[curtail?, q?]` (hard flags); obs per device
    `[cf, p/cap, q/s_rated?, curtail_frac?]` (`[cf]` without controls); CF rows `t mod T`
    of `cf_profiles` by an internal counter. cost_info
    `cost_curtailment = Σ(cap·CF − P)·Δt·curtail_cost`, `cost_q_clip`, `cost_sum`, `cost`.

    **Arguments:**

    - `bus_idx`: `(n,)` internal bus of each unit.
    - `capacity_mw`: `(n,)` installed capacity [MW].
    - `s_rated`: `(n,)` inverter rating [MVA].
    - `cf_profiles`: `(T, n)` capacity factors [fraction].
    - `curtail_cost`: `(n,)` cost of curtailed energy [$/MWh].
    - `allow_curtailment`: `(n,)` where curtailment is allowed.
    - `n_devices`, `per_device_action_dim`, `per_device_obs_dim`: sizes (static).
    - `dt_hours`: step length [hours] (static).
    - `enable_curtailment`, `enable_q_control`: which action entries exist (static).
    """

    bus_idx: Int[Array, " n_devices"]
    capacity_mw: Float[Array, " n_devices"]
    s_rated: Float[Array, " n_devices"]
    cf_profiles: Float[Array, "n_profile_steps n_devices"]
    curtail_cost: Float[Array, " n_devices"]
    allow_curtailment: Bool[Array, " n_devices"]
    n_devices: int = eqx.field(static=True)
    per_device_action_dim: int = eqx.field(static=True)
    per_device_obs_dim: int = eqx.field(static=True)
    dt_hours: float = eqx.field(static=True)
    enable_curtailment: bool = eqx.field(static=True)
    enable_q_control: bool = eqx.field(static=True)

    def physics_invariants(self) -> tuple[Invariant, ...]:
        # Output within the available cap·CF of its profile row and inside the inverter circle.
        return renewable_bundle_laws()

    def reset(self, key: Key) -> RenewableBundleState:
        zero = jnp.zeros((self.n_devices,), jnp.float32)
        return RenewableBundleState(jnp.asarray(0, jnp.int32), self.cf_profiles[0], zero, zero, zero)

    def observe(self, bstate: RenewableBundleState, ctx: BundleCtx) -> Float[Array, " obs_dim"]:
        cols = [bstate.cf]
        if self.enable_curtailment or self.enable_q_control:
            cols.append(jnp.clip(bstate.p_mw / self.capacity_mw, 0.0, 1.0))
        if self.enable_q_control:
            cols.append(jnp.clip(bstate.q_mvar / self.s_rated, -1.0, 1.0))
        if self.enable_curtailment:
            cols.append(jnp.clip(bstate.curtail_frac, 0.0, 1.0))
        return jnp.stack(cols, axis=1).reshape(-1)

    def step(self, bstate: RenewableBundleState, action: Float[Array, " action_dim"], ctx: BundleCtx):
        a = action.reshape(self.n_devices, self.per_device_action_dim)
        cf = self.cf_profiles[bstate.t % self.cf_profiles.shape[0]]
        one = jnp.ones((self.n_devices,), jnp.float32)
        a_curt = a[:, 0] if self.enable_curtailment else one
        a_q = a[:, -1] if self.enable_q_control else 0.0 * one
        p, q, c, q_des = renewable_step(self.capacity_mw, cf, a_curt, a_q, self.s_rated, self.allow_curtailment)
        curtail = jnp.sum((self.capacity_mw * cf - p) * self.dt_hours * self.curtail_cost)
        q_clip = jnp.sum(jnp.abs(q_des - q) / self.s_rated)
        nxt = RenewableBundleState(bstate.t + 1, cf, p, q, c)
        info = {"cost_curtailment": curtail, "cost_q_clip": q_clip, "cost_sum": curtail + q_clip,
                "cost": curtail + q_clip}
        return nxt, p, q, self.observe(nxt, ctx), info


def make_renewable_bundle(
    case: CaseData | None = None,
    bus_ids: Any = None,
    n_devices: int | None = None,
    capacity_mw: Any = 0.20,
    s_rated_mva: Any = None,
    cf_profiles: Any = None,
    curtail_cost: Any = 0.0,
    allow_curtailment: bool = True,
    enable_curtailment: bool = True,
    enable_q_control: bool = True,
    dt_hours: float = 0.5,
    max_steps: int = 48,
) -> RenewableBundle:
    """Bundle of renewables.

    **Arguments:**

    - `case`: the grid; `None` for a busless bundle.
    - `bus_ids`: bus numbers of the units.
    - `n_devices`: number of units when `bus_ids` is `None`.
    - `capacity_mw`: installed capacity [MW].
    - `s_rated_mva`: inverter rating [MVA]; `None` takes `1.1·capacity`.
    - `cf_profiles`: `(T,)` (shared) or `(T, N)` capacity factors in [0, 1]; `None` takes
      the solar bell over `max_steps` steps of one day.
    - `curtail_cost`: cost of curtailed energy [$/MWh].
    - `allow_curtailment`: whether curtailment is allowed.
    - `enable_curtailment`, `enable_q_control`: which action entries exist.
    - `dt_hours`: step length [hours].
    - `max_steps`: steps of the default profile.

    **Returns:**

    A [`RenewableBundle`][powerzoojax.grid.resources.RenewableBundle].
    """
    c = "make_renewable_bundle"
    n = n_devices_of(c, n_devices, bus_ids)
    bus_idx = resolve_bus_ids(c, None if case is None else case.node_ids, bus_ids, n)
    cap = device_array(c, "capacity_mw", capacity_mw, n, positive=True)
    if cf_profiles is None:
        cf = np.tile(np.asarray(solar_bell_cf(_hours(positive_int(c, "max_steps", max_steps))))[:, None], (1, n))
    else:
        cf = np.asarray(cf_profiles, np.float64)
        if cf.ndim == 1:
            cf = np.tile(cf[:, None], (1, n))
        if cf.ndim != 2 or cf.shape[1] != n or cf.shape[0] < 1:
            raise ValueError(f"{c}: cf_profiles must have shape (T,) or (T, {n}), got {np.shape(cf_profiles)}")
        if not np.all(np.isfinite(cf)) or np.any(cf < 0) or np.any(cf > 1):
            raise ValueError(f"{c}: cf_profiles must be finite and in [0, 1]")
    return RenewableBundle(
        bus_idx=jnp.asarray(bus_idx, jnp.int32),
        capacity_mw=cap,
        s_rated=1.1 * cap if s_rated_mva is None else device_array(c, "s_rated_mva", s_rated_mva, n, positive=True),
        cf_profiles=jnp.asarray(cf, jnp.float32),
        curtail_cost=device_array(c, "curtail_cost", curtail_cost, n, non_negative=True),
        allow_curtailment=jnp.broadcast_to(jnp.asarray(bool(allow_curtailment)), (n,)),
        n_devices=n,
        per_device_action_dim=int(enable_curtailment) + int(enable_q_control),
        per_device_obs_dim=2 + int(enable_curtailment) + int(enable_q_control)
        if (enable_curtailment or enable_q_control) else 1,
        dt_hours=finite_scalar(c, "dt_hours", dt_hours, positive=True),
        enable_curtailment=bool(enable_curtailment),
        enable_q_control=bool(enable_q_control),
    )
