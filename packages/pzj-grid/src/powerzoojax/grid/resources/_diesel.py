"""Diesel generators as a grid bundle. Physics: `compute_dg_power` and friends."""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import Invariant
from powerzoojax.core._types import Key
from powerzoojax.core._validation import finite_scalar
from powerzoojax.grid.resources._bundle import (
    BundleCtx,
    ResourceBundle,
    device_array,
    n_devices_of,
    resolve_bus_ids,
)
from powerzoojax.grid.resources._invariants import diesel_bundle_laws
from powerzoojax.physics.devices import compute_dg_emissions, compute_dg_fuel_cost, compute_dg_power


class DieselParams(eqx.Module):
    """One diesel generator's constants (all static: compile-time under `jit`); the inputs of
    `compute_dg_power` / `compute_dg_fuel_cost` / `compute_dg_emissions`.

    **Arguments:**

    - `p_dg_max_mw`: nameplate [MW].
    - `fuel_cost_per_mwh`: [$/MWh].
    - `emission_factor`: [kg CO₂/kWh].
    """

    p_dg_max_mw: float = eqx.field(static=True, default=0.6)
    fuel_cost_per_mwh: float = eqx.field(static=True, default=300.0)
    emission_factor: float = eqx.field(static=True, default=0.80)


class DieselBundleState(eqx.Module):
    """State of a [`DieselBundle`][powerzoojax.grid.resources.DieselBundle].

    **Arguments:**

    - `p_dg_mw`: `(n_devices,)` last output [MW].
    """
    p_dg_mw: Float[Array, " n_devices"]


class DieselBundle(ResourceBundle):
    """N diesel generators; build with [`make_diesel_bundle`][powerzoojax.grid.resources.make_diesel_bundle].

    Action per device `[a]` in [0, 1] (clipped); obs per device `[P/p_max, 1 − P/p_max]`;
    Q = 0; cost_info `cost_sum = cost = 0` (fuel is an economic quantity, reported as
    `fuel_cost` [$] and `carbon_kg`).

    **Arguments:**

    - `bus_idx`: `(n,)` internal bus of each generator.
    - `p_max_mw`: `(n,)` rating [MW].
    - `p_min_norm`: `(n,)` minimum stable load [fraction of `p_max`].
    - `fuel_cost`: `(n,)` [$/MWh].
    - `emission_factor`: `(n,)` [kg CO₂/kWh].
    - `n_devices`, `per_device_action_dim`, `per_device_obs_dim`: sizes (static).
    - `dt_hours`: step length [hours] (static).
    """
    bus_idx: Int[Array, " n_devices"]
    p_max_mw: Float[Array, " n_devices"]
    p_min_norm: Float[Array, " n_devices"]
    fuel_cost: Float[Array, " n_devices"]
    emission_factor: Float[Array, " n_devices"]
    n_devices: int = eqx.field(static=True)
    per_device_action_dim: int = eqx.field(static=True)
    per_device_obs_dim: int = eqx.field(static=True)
    dt_hours: float = eqx.field(static=True)

    def physics_invariants(self) -> tuple[Invariant, ...]:
        # Each generator off or between its minimum stable load and its rating.
        return diesel_bundle_laws()

    def reset(self, key: Key) -> DieselBundleState:
        return DieselBundleState(jnp.zeros((self.n_devices,), jnp.float32))

    def observe(self, b: DieselBundleState, ctx: BundleCtx) -> Float[Array, " obs_dim"]:
        frac = b.p_dg_mw / self.p_max_mw
        return jnp.stack([frac, 1.0 - frac], axis=1).reshape(-1)

    def step(self, b: DieselBundleState, action: Float[Array, " action_dim"], ctx: BundleCtx):
        p = compute_dg_power(action, self.p_max_mw, self.p_min_norm)
        zero = jnp.zeros((), jnp.float32)
        info = {"cost_sum": zero, "cost": zero,
                "fuel_cost": compute_dg_fuel_cost(p, self.dt_hours, self.fuel_cost),
                "carbon_kg": compute_dg_emissions(p, self.dt_hours, self.emission_factor)}
        nxt = DieselBundleState(p)
        return nxt, p, jnp.zeros_like(p), self.observe(nxt, ctx), info


def make_diesel_bundle(
    case: CaseData | None = None,
    bus_ids: Any = None,
    n_devices: int | None = None,
    p_max_mw: Any = 0.6,
    p_min_norm: Any = 0.0,
    fuel_cost: Any = 300.0,
    emission_factor: Any = 0.80,
    dt_hours: float = 0.5,
) -> DieselBundle:
    """Bundle of diesel generators.

    **Arguments:**

    - `case`: the grid; `None` for a busless bundle.
    - `bus_ids`: bus numbers of the generators.
    - `n_devices`: number of generators when `bus_ids` is `None`.
    - `p_max_mw`: rating [MW].
    - `p_min_norm`: minimum stable load [fraction of `p_max`].
    - `fuel_cost`: [$/MWh].
    - `emission_factor`: [kg CO₂/kWh].
    - `dt_hours`: step length [hours].

    **Returns:**

    A [`DieselBundle`][powerzoojax.grid.resources.DieselBundle].
    """
    c = "make_diesel_bundle"
    n = n_devices_of(c, n_devices, bus_ids)
    bus_idx = resolve_bus_ids(c, None if case is None else case.node_ids, bus_ids, n)
    p_min = device_array(c, "p_min_norm", p_min_norm, n, non_negative=True)
    if bool(jnp.any(p_min > 1)):
        raise ValueError(f"{c}: p_min_norm must be in [0, 1], got {p_min_norm!r}")
    return DieselBundle(
        bus_idx=jnp.asarray(bus_idx, jnp.int32),
        p_max_mw=device_array(c, "p_max_mw", p_max_mw, n, positive=True),
        p_min_norm=p_min,
        fuel_cost=device_array(c, "fuel_cost", fuel_cost, n, non_negative=True),
        emission_factor=device_array(c, "emission_factor", emission_factor, n, non_negative=True),
        n_devices=n,
        per_device_action_dim=1,
        per_device_obs_dim=2,
        dt_hours=finite_scalar(c, "dt_hours", dt_hours, positive=True),
    )
