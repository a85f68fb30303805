"""Shared anatomy of the single-agent storage-arbitrage market envs.

One battery sits at a bus of the case; the agent sets its power, the market clears the
net load with the in-graph SCED ([`offer_sced`][powerzoojax.market.offer_sced]) and pays the battery the LMP of its
bus. `_cost_based_market` clears truthful (cost-reflective) offers,
`_bid_based_market` offers marked up at random once per episode.

Battery: power `P = a · battery_power_mw` for action `a` in [-1, 1] (> 0 discharges),
clipped so the state of charge stays in `[soc_min, soc_max]`; charging stores
`η_ch · P · Δt`, discharging draws `P · Δt / η_dis` [MWh].
"""

import abc
import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import Box, Environment, EnvParams, EnvState, Invariant, make_box, stack_costs
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.market._offer_sced import OfferSCEDResult, OfferSCEDSetup, offer_sced, prepare_offer_sced
from powerzoojax.market._invariants import market_laws
from powerzoojax.physics import dc_thermal_check, status_code
from powerzoojax.core import _precision as hp

CONSTRAINT_NAMES = ("thermal_overload",)
# Pivot budget of the SCED's dual simplex (it stops at the exact vertex: `tol` is passed
# for the reference signature only).
SCED_MAX_ITER, SCED_TOL = 25, 1e-7
# Flows the SCED holds at a limit may sit a float32 round-off beyond it: not an overload.
THERMAL_SLACK_MW = 1e-2


class MarketState(EnvState):
    """State of a market env: last clearing, battery, offers of the episode.

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `lmp`: `(n_nodes,)` last clearing prices [$/MWh].
    - `unit_power_mw`: `(n_units,)` last dispatch [MW].
    - `line_flow_mw`: `(n_lines,)` last flows [MW].
    - `battery_soc`: battery state of charge [fraction].
    - `offer_prices`: `(n_units, n_segments)` offers of the episode [$/MWh].
    - `is_safe`: no limit violated on the last step.
    - `n_violations`: violations on the last step.
    - `total_gen_cost`: generation cost of the last clearing [$/h].
    - `resource_states`: the bundles' states.
    """

    lmp: Float[Array, " n_nodes"]
    unit_power_mw: Float[Array, " n_units"]
    line_flow_mw: Float[Array, " n_lines"]
    battery_soc: Float[Array, ""]
    offer_prices: Float[Array, "n_units n_segments"]
    is_safe: Bool[Array, ""]
    n_violations: Int[Array, ""]
    total_gen_cost: Float[Array, ""]
    resource_states: tuple = ()


class MarketParams(EnvParams):
    """Params of the market envs; build with `make_cost_market_params` /
    `make_bid_market_params`.

    **Arguments:**

    - `sced_setup`: the [`OfferSCEDSetup`][powerzoojax.market.OfferSCEDSetup].
    - `load_profiles`: `(T, n_loads)` loads [MW].
    - `nodes_loads_map`: `(n_nodes, n_loads)` load-to-node map.
    - `battery_power_mw`, `battery_energy_mwh`: rating [MW] and capacity [MWh].
    - `battery_eta_charge`, `battery_eta_discharge`: one-way efficiencies.
    - `battery_soc_min`, `battery_soc_max`, `battery_soc_init`: SOC window and initial SOC.
    - `markup_std`: standard deviation of the rivals' markups (bid-based env).
    - `cost_thermal_weight`: weight of the thermal overload in the reward.
    - `inv_total_capacity`: observation normaliser [1/MW].
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `battery_node_idx`: 0-based node of the battery (static).
    - `lmp_scale`: price normaliser [$/MWh] (static).
    - `steps_per_day`: steps in one day (static).
    - `n_segments`: offer segments per unit (static).
    - `resources`: resource bundles (static).
    """

    sced_setup: OfferSCEDSetup
    load_profiles: Float[Array, "n_profile_steps n_loads"]
    nodes_loads_map: Float[Array, "n_nodes n_loads"]
    battery_power_mw: Float[Array, ""]
    battery_energy_mwh: Float[Array, ""]
    battery_eta_charge: Float[Array, ""]
    battery_eta_discharge: Float[Array, ""]
    battery_soc_min: Float[Array, ""]
    battery_soc_max: Float[Array, ""]
    battery_soc_init: Float[Array, ""]
    markup_std: Float[Array, ""]
    cost_thermal_weight: Float[Array, ""]
    inv_total_capacity: Float[Array, ""]
    battery_node_idx: int = eqx.field(static=True, default=0, kw_only=True)
    lmp_scale: float = eqx.field(static=True, default=100.0, kw_only=True)
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
    n_segments: int = eqx.field(static=True, default=5, kw_only=True)
    resources: tuple = eqx.field(static=True, default=(), kw_only=True)


def _real(fn: str, name: str, value: Any, *, positive: bool = False, unit_interval: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{fn}: {name} must be a real number, got {value!r}") from None
    if not math.isfinite(x) or x < 0 or (positive and x == 0) or (unit_interval and x > 1):
        expected = "in (0, 1]" if unit_interval and positive else "in [0, 1]" if unit_interval else "> 0" if positive else ">= 0"
        raise ValueError(f"{fn}: {name} must be finite and {expected}, got {value!r}")
    return x


def _positive_int(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{fn}: {name} must be a positive integer, got {value!r}")
    return int(value)


def build_market_params(
    fn: str,
    case: CaseData,
    load_profiles: ArrayLike | None,
    *,
    n_segments: int,
    markup_std: float,
    lmp_scale: float,
    max_steps: int,
    delta_t_hours: float,
    steps_per_day: int,
    cost_thermal_weight: float,
    battery_bus: int,
    battery_power_mw: float,
    battery_energy_mwh: float,
    battery_efficiency: tuple[float, float],
    battery_soc_range: tuple[float, float],
    battery_soc_init: float,
) -> MarketParams:
    """Validate on the host and build [`MarketParams`][powerzoojax.market.MarketParams] (`fn` names the caller in errors)."""
    if not isinstance(case, CaseData):
        raise TypeError(f"{fn}: case must be a CaseData from powerzoojax.case.load_case, got {type(case).__name__}")
    max_steps = _positive_int(fn, "max_steps", max_steps)
    steps_per_day = _positive_int(fn, "steps_per_day", steps_per_day)
    n_segments = _positive_int(fn, "n_segments", n_segments)
    delta_t_hours = _real(fn, "delta_t_hours", delta_t_hours, positive=True)
    lmp_scale = _real(fn, "lmp_scale", lmp_scale, positive=True)
    weight = _real(fn, "cost_thermal_weight", cost_thermal_weight)
    markup_std = _real(fn, "markup_std", markup_std)
    power = _real(fn, "battery_power_mw", battery_power_mw)
    energy = _real(fn, "battery_energy_mwh", battery_energy_mwh, positive=True)
    eta_ch, eta_dis = (_real(fn, "battery_efficiency", e, positive=True, unit_interval=True) for e in battery_efficiency)
    soc_min, soc_max = (_real(fn, "battery_soc_range", s, unit_interval=True) for s in battery_soc_range)
    if soc_min > soc_max:
        raise ValueError(f"{fn}: battery_soc_range must be (low, high) with low <= high, got {battery_soc_range!r}")
    soc_init = _real(fn, "battery_soc_init", battery_soc_init, unit_interval=True)
    if not soc_min <= soc_init <= soc_max:
        raise ValueError(f"{fn}: battery_soc_init must lie in battery_soc_range {battery_soc_range!r}, got {soc_init}")
    node_ids = [int(i) for i in np.asarray(case.node_ids)]
    if battery_bus not in node_ids:
        raise ValueError(f"{fn}: battery_bus {battery_bus!r} is not a bus of the case; valid buses: {node_ids}")

    if load_profiles is None:
        nominal = 0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
        profiles = np.tile(nominal, (max_steps, 1))
    else:
        profiles = np.asarray(load_profiles, np.float64)
        if profiles.ndim != 2 or profiles.shape[1] != case.n_loads or profiles.shape[0] < 1:
            raise ValueError(
                f"{fn}: load_profiles must have shape (T, n_loads) = (T, {case.n_loads}) with T >= 1, got {profiles.shape}"
            )
        if not np.all(np.isfinite(profiles)):
            raise ValueError(f"{fn}: load_profiles must be finite; found {int((~np.isfinite(profiles)).sum())} non-finite values")

    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return MarketParams(
        sced_setup=prepare_offer_sced(case, n_segments),
        load_profiles=f32(profiles),
        nodes_loads_map=f32(case.nodes_loads_map),
        battery_power_mw=f32(power),
        battery_energy_mwh=f32(energy),
        battery_eta_charge=f32(eta_ch),
        battery_eta_discharge=f32(eta_dis),
        battery_soc_min=f32(soc_min),
        battery_soc_max=f32(soc_max),
        battery_soc_init=f32(soc_init),
        markup_std=f32(markup_std),
        cost_thermal_weight=f32(weight),
        inv_total_capacity=f32(1.0 / max(float(np.asarray(case.unit_p_max).sum()), 1.0)),
        battery_node_idx=node_ids.index(battery_bus),
        lmp_scale=lmp_scale,
        steps_per_day=steps_per_day,
        n_segments=n_segments,
        max_steps=max_steps,
        delta_t_hours=delta_t_hours,
    )


def battery_power(
    action: Float[Array, ""], soc: Float[Array, ""], params: MarketParams
) -> tuple[Float[Array, ""], Float[Array, ""], Float[Array, ""]]:
    """`(requested_mw, realised_mw, next_soc)` for an action in [-1, 1] (> 0 discharges)."""
    dt = params.delta_t_hours
    requested = jnp.clip(action, -1.0, 1.0) * params.battery_power_mw
    max_discharge = jnp.maximum(soc - params.battery_soc_min, 0.0) * params.battery_energy_mwh * params.battery_eta_discharge / dt
    max_charge = jnp.maximum(params.battery_soc_max - soc, 0.0) * params.battery_energy_mwh / (params.battery_eta_charge * dt)
    realised = jnp.clip(requested, -max_charge, max_discharge)
    drawn = jnp.where(realised > 0, realised / params.battery_eta_discharge, realised * params.battery_eta_charge)
    next_soc = jnp.clip(soc - drawn * dt / params.battery_energy_mwh, params.battery_soc_min, params.battery_soc_max)
    return requested, realised, next_soc


class AbstractMarketEnv(Environment):
    """Battery arbitrage against an SCED-cleared market; subclasses choose the offers and obs."""

    @abc.abstractmethod
    def _episode_offers(self, key: Key, params: MarketParams) -> Float[Array, "n_units n_segments"]:
        """Offer prices [$/MWh] for a new episode."""

    @abc.abstractmethod
    def _obs(self, state: MarketState, params: MarketParams) -> Float[Array, " obs_dim"]:
        """Observation of `state`."""

    def observe(self, state: MarketState, params: MarketParams) -> Float[Array, " obs_dim"]:
        return self._obs(state, params)

    def action_space(self, params: MarketParams) -> Box:
        return make_box(-1.0, 1.0, (1,))

    def constraint_names(self, params: MarketParams) -> tuple[str, ...]:
        return CONSTRAINT_NAMES

    def action_layout(self, params: MarketParams) -> str:
        return "[battery power]"

    def _node_load(self, time_step: Int[Array, ""], params: MarketParams) -> Float[Array, " n_nodes"]:
        row = time_step % params.load_profiles.shape[0]
        return hp.matmul(params.nodes_loads_map, params.load_profiles[row])

    def _clear(
        self, node_load: Float[Array, " n_nodes"], offers: Float[Array, "n_units n_segments"], params: MarketParams
    ) -> OfferSCEDResult:
        return offer_sced(params.sced_setup, node_load, offers, max_iter=SCED_MAX_ITER, tol=SCED_TOL)

    def reset_env(self, key: Key, params: MarketParams) -> tuple[Float[Array, " obs_dim"], MarketState]:
        offers = self._episode_offers(key, params)
        cleared = self._clear(self._node_load(jnp.asarray(0, jnp.int32), params), offers, params)
        setup = params.sced_setup
        _, n_violations = dc_thermal_check(cleared.line_flow, setup.line_cap + THERMAL_SLACK_MW, setup.line_floor - THERMAL_SLACK_MW)
        state = MarketState(
            time_step=jnp.asarray(0, jnp.int32),
            done=jnp.asarray(False),
            lmp=cleared.lmp,
            unit_power_mw=cleared.unit_power,
            line_flow_mw=cleared.line_flow,
            battery_soc=params.battery_soc_init,
            offer_prices=offers,
            is_safe=n_violations == 0,
            n_violations=n_violations,
            total_gen_cost=jnp.asarray(0.0, jnp.float32),
            resource_states=(),
        )
        return self._obs(state, params), state

    def physics_invariants(self, params: MarketParams) -> tuple[Invariant, ...]:
        # SOC band, supply = net demand when OPTIMAL, one price when nothing is congested.
        return market_laws(params)

    def step_env(
        self, key: Key, state: MarketState, action: Float[Array | np.ndarray, "1"], params: MarketParams
    ) -> tuple[Float[Array, " obs_dim"], MarketState, FloatScalar, Float[Array, "1"], Bool[Array, ""], Info]:
        action = jnp.asarray(action, jnp.float32)
        requested, realised, soc = battery_power(action[0], state.battery_soc, params)
        node_load = self._node_load(state.time_step, params)
        net_load = node_load.at[params.battery_node_idx].add(-realised)
        cleared = self._clear(net_load, state.offer_prices, params)
        setup = params.sced_setup
        thermal_mw, n_violations = dc_thermal_check(cleared.line_flow, setup.line_cap + THERMAL_SLACK_MW, setup.line_floor - THERMAL_SLACK_MW)
        thermal_cost = params.cost_thermal_weight * thermal_mw
        costs = stack_costs(thermal_cost)
        bus_lmp = cleared.lmp[params.battery_node_idx]
        reward = bus_lmp * realised * params.delta_t_hours
        gen_cost = cleared.total_cost * params.delta_t_hours
        is_safe = n_violations == 0

        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        next_state = MarketState(
            time_step=time_step,
            done=done,
            lmp=cleared.lmp,
            unit_power_mw=cleared.unit_power,
            line_flow_mw=cleared.line_flow,
            battery_soc=soc,
            offer_prices=state.offer_prices,
            is_safe=is_safe,
            n_violations=n_violations,
            total_gen_cost=state.total_gen_cost + gen_cost,
            resource_states=state.resource_states,
        )
        info = {
            "gen_cost": gen_cost,
            "offer_cost": cleared.offer_cost * params.delta_t_hours,
            "cost_thermal_overload": thermal_cost,
            "cost_sum": thermal_cost,
            "is_safe": is_safe,
            "n_violations": n_violations,
            "bus_lmp": bus_lmp,
            "realized_p_mw": realised,
            "requested_p_mw": requested,
            "sced_status": status_code(cleared.status),
            "sced_converged": cleared.converged,
            **self._extra_info(cleared, params),
        }
        return self._obs(next_state, params), next_state, reward, costs, done, info

    def _extra_info(self, cleared: OfferSCEDResult, params: MarketParams) -> Info:
        """Env-specific info entries."""
        return {}
