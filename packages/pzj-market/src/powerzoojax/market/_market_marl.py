"""Multi-agent generation-company market core: pure reset/step functions.

Each of the U units is a GenCo offering K segments. Agent actions (flattened `(U·K,)` in
[-1, 1]) become markups `m = sort((a + 1) / 2)` per unit, offers
`truthful · (1 + m · max_markup)` [$/MWh]. The market clears the profile row
`(episode_start_idx + t) mod T` by the exact SCED with ramp coupling: each unit's
runtime window is `[max(p_min, P_prev − ramp_down), min(p_max, P_prev + ramp_up)]`.
Reward per unit: realised profit `(LMP[node] · P − TC(P)) · Δt` [$], with TC the true
generation cost. `info["cost_thermal_overload"]` is the weighted line overload [MW]
(nonzero only when the SCED cannot meet the limits).

The dict-per-agent adapter (`MarketMARLEnv`) lives in the RL package; everything it
needs is here, including [`market_marl_observations`][powerzoojax.market.market_marl_observations].
"""

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import EnvParams, EnvState, rollout, select_tree, time_features
from powerzoojax.core._types import Info, Key
from powerzoojax.market._market_env import THERMAL_SLACK_MW
from powerzoojax.physics._dual_simplex import matvec
from powerzoojax.market._offer_sced import OfferSCEDSetup, offer_sced, prepare_offer_sced
from powerzoojax.physics import dc_thermal_check, status_code

RAMP_BINDING_MW = 0.5
BASELINE_ACTIONS = {"truthful": -1.0, "uniform_mid": 0.0, "max_markup": 1.0}


class MarketMARLState(EnvState):
    """Market state after the last clearing, plus each unit's profit and the LMP history.

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `lmp`: `(n_nodes,)` last clearing prices [$/MWh].
    - `unit_power_mw`: `(n_units,)` last dispatch [MW].
    - `line_flow_mw`: `(n_lines,)` last flows [MW].
    - `last_dispatch_profit`: `(n_units,)` each unit's profit of the last round [$].
    - `lmp_history`: `(history,)` recent mean prices [$/MWh].
    - `episode_start_idx`: first profile row of the episode.
    - `resource_states`: the bundles' states.
    """

    lmp: Float[Array, " n_nodes"]
    unit_power_mw: Float[Array, " n_units"]
    line_flow_mw: Float[Array, " n_lines"]
    last_dispatch_profit: Float[Array, " n_units"]
    lmp_history: Float[Array, " history"]
    episode_start_idx: Int[Array, ""]
    resource_states: tuple = ()


class MarketMARLParams(EnvParams):
    """Params of the GenCos market; build with
    [`make_market_marl_params`][powerzoojax.market.make_market_marl_params].

    **Arguments:**

    - `offer_sced_setup`: the [`OfferSCEDSetup`][powerzoojax.market.OfferSCEDSetup].
    - `load_profiles`: `(T, n_loads)` loads [MW].
    - `nodes_loads_map`: `(n_nodes, n_loads)` load-to-node map.
    - `unit_node_idx`: `(n_units,)` node of each unit.
    - `ramp_up_mw_per_step`, `ramp_down_mw_per_step`: `(n_units,)` ramp limits [MW per
      step].
    - `cost_thermal_weight`: weight of the thermal overload in the reward.
    - `reset_lmp`, `reset_unit_power`, `reset_line_flow`: the truthful, ramp-free clearing
      of every profile row, precomputed on the host so a reset is a table look-up.
    - `max_steps`, `delta_t_hours`: as [`EnvParams`][powerzoojax.core.EnvParams].
    - `max_markup`: largest markup [multiple of the truthful price] (static).
    - `lmp_history_len`: length of the LMP history in the observation (static).
    - `lmp_scale`: price normaliser [$/MWh] (static).
    - `steps_per_day`: steps in one day (static).
    - `sced_max_iter`: SCED pivot budget (static).
    - `resources`: resource bundles (static).
    """

    offer_sced_setup: OfferSCEDSetup
    load_profiles: Float[Array, "n_profile_steps n_loads"]
    nodes_loads_map: Float[Array, "n_nodes n_loads"]
    unit_node_idx: Int[Array, " n_units"]
    ramp_up_mw_per_step: Float[Array, " n_units"]
    ramp_down_mw_per_step: Float[Array, " n_units"]
    cost_thermal_weight: Float[Array, ""]
    # Truthful, ramp-free clearing of every profile row, precomputed on the host: a reset
    # is then a table look-up, so a vmapped step (which evaluates the reset branch of
    # its auto-reset for every env) clears one market, not two.
    reset_lmp: Float[Array, "n_profile_steps n_nodes"]
    reset_unit_power: Float[Array, "n_profile_steps n_units"]
    reset_line_flow: Float[Array, "n_profile_steps n_lines"]
    max_markup: float = eqx.field(static=True, default=2.0, kw_only=True)
    lmp_history_len: int = eqx.field(static=True, default=4, kw_only=True)
    lmp_scale: float = eqx.field(static=True, default=100.0, kw_only=True)
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
    sced_max_iter: int = eqx.field(static=True, default=25, kw_only=True)
    resources: tuple = eqx.field(static=True, default=(), kw_only=True)


def _check(name: str, ok: bool, value: object, expected: str) -> None:
    if not ok:
        raise ValueError(f"make_market_marl_params: {name} must be {expected}, got {value!r}")


def make_market_marl_params(
    case: CaseData,
    load_profiles: ArrayLike,
    *,
    n_segments: int = 3,
    max_markup: float = 2.0,
    max_steps: int = 48,
    delta_t_hours: float = 0.5,
    steps_per_day: int = 48,
    lmp_scale: float = 100.0,
    cost_thermal_weight: float = 1.0,
    lmp_history_len: int = 4,
    ramp_up_mw_per_step: ArrayLike | None = None,
    ramp_down_mw_per_step: ArrayLike | None = None,
    ramp_rate_fraction: float = 0.5,
    ramps_from_case: bool = True,
) -> MarketMARLParams:
    """Validate on the host and build [`MarketMARLParams`][powerzoojax.market.MarketMARLParams].

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `load_profiles`: `(T, n_loads)` loads [MW].
    - `n_segments`: offer segments per unit.
    - `max_markup`: largest markup [multiple of the truthful price].
    - `max_steps`: episode length [steps].
    - `delta_t_hours`: step length [hours].
    - `steps_per_day`: steps in one day.
    - `lmp_scale`: price normaliser [$/MWh].
    - `cost_thermal_weight`: weight of the thermal overload in the reward.
    - `lmp_history_len`: length of the LMP history in the observation.
    - `ramp_up_mw_per_step`, `ramp_down_mw_per_step`: `(n_units,)` ramp limits [MW per
      step]. `None`: a case that carries unit-commitment ramp columns (`unit_ramp_up` /
      `unit_ramp_down`, fractions of `p_max` per hour; e.g. 29gb) ramps by
      `fraction · p_max · delta_t_hours` per step, any other takes `ramp_rate_fraction · p_max`.
    - `ramp_rate_fraction`: default ramp limit [fraction of `p_max` per step].
    - `ramps_from_case`: `False` ignores the case's ramp columns.

    **Returns:**

    [`MarketMARLParams`][powerzoojax.market.MarketMARLParams]. Raises `ValueError` naming
    a bad value.
    """
    if not isinstance(case, CaseData):
        raise TypeError(f"make_market_marl_params: case must be a CaseData, got {type(case).__name__}")
    for name, value in (("max_steps", max_steps), ("steps_per_day", steps_per_day), ("lmp_history_len", lmp_history_len), ("n_segments", n_segments)):
        _check(name, isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0, value, "a positive integer")
    for name, value in (("max_markup", max_markup), ("cost_thermal_weight", cost_thermal_weight)):
        _check(name, isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, value, "a finite number >= 0")
    for name, value in (("delta_t_hours", delta_t_hours), ("lmp_scale", lmp_scale), ("ramp_rate_fraction", ramp_rate_fraction)):
        _check(name, isinstance(value, (int, float)) and math.isfinite(value) and value > 0, value, "a finite number > 0")
    profiles = np.asarray(load_profiles, np.float64)
    _check("load_profiles", profiles.ndim == 2 and profiles.shape[0] >= 1 and profiles.shape[1] == case.n_loads and bool(np.all(np.isfinite(profiles))),
           profiles.shape, f"a finite (T, n_loads) = (T, {case.n_loads}) array with T >= 1")
    p_max = np.asarray(case.unit_p_max, np.float64)
    ramps = []
    for name, value, column in (
        ("ramp_up_mw_per_step", ramp_up_mw_per_step, case.unit_ramp_up),
        ("ramp_down_mw_per_step", ramp_down_mw_per_step, case.unit_ramp_down),
    ):
        if value is not None:
            ramp = np.broadcast_to(np.asarray(value, np.float64), p_max.shape)
        elif ramps_from_case and column is not None:
            ramp = np.asarray(column, np.float64) * p_max * float(delta_t_hours)
        else:
            ramp = ramp_rate_fraction * p_max
        _check(name, bool(np.all(np.isfinite(ramp)) and np.all(ramp >= 0)), value, f"finite and >= 0, shape ({case.n_units},)")
        ramps.append(ramp)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    setup = prepare_offer_sced(case, int(n_segments))
    reset_lmp, reset_power, reset_flow = _truthful_clearings(setup, np.asarray(case.nodes_loads_map, np.float64) @ profiles.T)
    return MarketMARLParams(
        offer_sced_setup=setup,
        reset_lmp=reset_lmp,
        reset_unit_power=reset_power,
        reset_line_flow=reset_flow,
        load_profiles=f32(profiles),
        nodes_loads_map=f32(case.nodes_loads_map),
        unit_node_idx=jnp.asarray(case.unit_node_idx, jnp.int32),
        ramp_up_mw_per_step=f32(ramps[0]),
        ramp_down_mw_per_step=f32(ramps[1]),
        cost_thermal_weight=f32(cost_thermal_weight),
        max_markup=float(max_markup),
        lmp_history_len=int(lmp_history_len),
        lmp_scale=float(lmp_scale),
        steps_per_day=int(steps_per_day),
        max_steps=int(max_steps),
        delta_t_hours=float(delta_t_hours),
    )


_RESET_CHUNK = 512  # rows cleared per call: one compilation serves every profile length


@functools.partial(jax.jit, static_argnames="max_iter")
def _clear_rows(setup: OfferSCEDSetup, node_loads: Float[Array, "rows n_nodes"], max_iter: int) -> tuple[Array, Array, Array]:
    r = jax.vmap(lambda load: offer_sced(setup, load, max_iter=max_iter))(node_loads)
    return r.lmp, r.unit_power, r.line_flow


def _truthful_clearings(setup: OfferSCEDSetup, node_loads_t: np.ndarray, max_iter: int = 25) -> tuple[Array, Array, Array]:
    """Host-side: truthful ramp-free clearing of each column of `node_loads_t` (n_nodes, T)."""
    loads = np.asarray(node_loads_t, np.float32).T
    n_rows = loads.shape[0]
    padded = np.concatenate([loads, np.repeat(loads[-1:], (-n_rows) % _RESET_CHUNK, axis=0)])
    parts = [_clear_rows(setup, jnp.asarray(padded[i : i + _RESET_CHUNK]), max_iter) for i in range(0, padded.shape[0], _RESET_CHUNK)]
    lmp, unit_power, line_flow = (jnp.concatenate([part[j] for part in parts])[:n_rows] for j in range(3))
    return lmp, unit_power, line_flow


def _node_load(row: Int[Array, ""], params: MarketMARLParams) -> Float[Array, " n_nodes"]:
    return matvec(params.nodes_loads_map, params.load_profiles[row % params.load_profiles.shape[0]])


def market_marl_reset(key: Key, params: MarketMARLParams) -> MarketMARLState:
    """New episode at a random profile row, cleared with truthful offers and no ramp window
    (looked up in the params' precomputed clearing of every row).

    **Arguments:**

    - `key`: PRNG key of the start row.
    - `params`: the market params.

    **Returns:**

    [`MarketMARLState`][powerzoojax.market.MarketMARLState].
    """
    # One draw of 32 random bits: a vmapped step evaluates this reset for every env, and
    # each threefry hash is a loop of its own on CPU (`randint` hashes three times).
    # The modulo bias is below T / 2³² for a T-row profile.
    start = (jr.bits(key, (), jnp.uint32) % jnp.uint32(params.load_profiles.shape[0])).astype(jnp.int32)
    lmp = params.reset_lmp[start]
    mean_lmp = jnp.sum(lmp, axis=-1) / lmp.shape[0]
    return MarketMARLState(
        time_step=jnp.asarray(0, jnp.int32),
        done=jnp.asarray(False),
        lmp=lmp,
        unit_power_mw=params.reset_unit_power[start],
        line_flow_mw=params.reset_line_flow[start],
        last_dispatch_profit=jnp.zeros(params.offer_sced_setup.n_units, jnp.float32),
        lmp_history=jnp.full((params.lmp_history_len,), mean_lmp, jnp.float32),
        episode_start_idx=start,
        resource_states=(),
    )


def market_marl_step(
    key: Key, state: MarketMARLState, flat_actions: Float[Array | np.ndarray, " n_actions"], params: MarketMARLParams
) -> tuple[MarketMARLState, Bool[Array, ""], Float[Array, " n_units"], Info]:
    """One market round; auto-resets.

    **Arguments:**

    - `key`: PRNG key.
    - `state`: the market state.
    - `flat_actions`: `(n_units · n_segments,)` markups in [-1, 1], unit-major.
    - `params`: the market params.

    **Returns:**

    `(final_state, done, reward (n_units,) [$], info)`.
    """
    next_state, done, profit, info = market_marl_transition(key, state, flat_actions, params)
    _, k_reset = jr.split(key)
    final_state = select_tree(done, jax.lax.stop_gradient(market_marl_reset(k_reset, params)), next_state)
    return final_state, done, profit, info


def market_marl_transition(
    key: Key, state: MarketMARLState, flat_actions: Float[Array | np.ndarray, " n_actions"], params: MarketMARLParams
) -> tuple[MarketMARLState, Bool[Array, ""], Float[Array, " n_units"], Info]:
    """One market round without the auto-reset of
    [`market_marl_step`][powerzoojax.market.market_marl_step] (an env's `step_env`).

    **Arguments:**

    - `key`, `state`, `flat_actions`, `params`: as for `market_marl_step`.

    **Returns:**

    `(next_state, done, reward (n_units,) [$], info)`; `next_state.done` on the episode's
    last round.
    """
    setup = params.offer_sced_setup
    n_units, n_seg = setup.n_units, setup.n_segments
    if flat_actions.shape != (n_units * n_seg,):
        raise ValueError(f"market_marl_step: actions must have shape ({n_units * n_seg},) = (n_units · n_segments,), got {flat_actions.shape}")
    actions = jnp.clip(jnp.asarray(flat_actions, jnp.float32), -1.0, 1.0).reshape(n_units, n_seg)
    markup = _sort_rows(0.5 * (actions + 1.0))
    offers = setup.base_seg_prices * (1.0 + markup * params.max_markup)

    node_load = _node_load(state.episode_start_idx + state.time_step, params)
    p_min_rt = jnp.maximum(setup.p_min, state.unit_power_mw - params.ramp_down_mw_per_step)
    p_max_rt = jnp.minimum(setup.p_max, state.unit_power_mw + params.ramp_up_mw_per_step)
    cleared = offer_sced(setup, node_load, offers, p_min_rt, p_max_rt, max_iter=params.sced_max_iter)

    thermal_mw, n_violations = dc_thermal_check(cleared.line_flow, setup.line_cap + THERMAL_SLACK_MW, setup.line_floor - THERMAL_SLACK_MW)
    thermal_cost = params.cost_thermal_weight * thermal_mw
    p = cleared.unit_power
    unit_cost = (((setup.mc_a / 3.0) * p + setup.mc_b / 2.0) * p + setup.mc_c) * p
    profit = (cleared.lmp[params.unit_node_idx] * p - unit_cost) * params.delta_t_hours
    at_up = (p_max_rt < setup.p_max) & (p >= p_max_rt - RAMP_BINDING_MW)
    at_down = (p_min_rt > setup.p_min) & (p <= p_min_rt + RAMP_BINDING_MW)
    ramp_binding_rate = jnp.sum((at_up | at_down).astype(jnp.float32), axis=-1) / n_units

    time_step = state.time_step + 1
    done = time_step >= params.max_steps
    history = jnp.concatenate([state.lmp_history[1:], (jnp.sum(cleared.lmp, axis=-1) / setup.n_nodes)[None]])
    next_state = MarketMARLState(
        time_step=time_step,
        done=done,
        lmp=cleared.lmp,
        unit_power_mw=p,
        line_flow_mw=cleared.line_flow,
        last_dispatch_profit=profit,
        lmp_history=history,
        episode_start_idx=state.episode_start_idx,
        resource_states=state.resource_states,
    )
    info = {
        "cost": thermal_cost,
        "cost_thermal_overload": thermal_cost,
        "cost_sum": thermal_cost,
        "offer_cost": cleared.offer_cost * params.delta_t_hours,
        "lmp": cleared.lmp,
        "lambda_balance": cleared.lambda_balance,
        "unit_power": p,
        "segment_delta": cleared.segment_delta,
        "gen_cost": jnp.sum(unit_cost, axis=-1) * params.delta_t_hours,
        "is_safe": n_violations == 0,
        "n_violations": n_violations,
        "sced_converged": cleared.converged,
        "sced_feasible": cleared.is_feasible,
        "sced_status": status_code(cleared.status),
        "ramp_binding_rate": ramp_binding_rate,
    }
    return next_state, done, profit, info


def _sort_rows(x: Float[Array, "rows k"]) -> Float[Array, "rows k"]:
    """`jnp.sort(x, axis=1)` by an odd–even transposition network of min/max pairs.

    A batched sort of small rows runs row by row on a CPU; the network is element-wise,
    so it vectorises over the batch, and XLA may fuse it into the clearing's pairwise
    merit-order comparison at little cost (it recomputes fused producers per element).
    """
    k = x.shape[1]
    cols = [x[:, i] for i in range(k)]
    for step in range(k):
        for i in range(step % 2, k - 1, 2):
            cols[i], cols[i + 1] = jnp.minimum(cols[i], cols[i + 1]), jnp.maximum(cols[i], cols[i + 1])
    return jnp.stack(cols, axis=1)


def market_marl_observations(state: MarketMARLState, params: MarketMARLParams) -> Float[Array, "n_units obs_dim"]:
    """Per-agent observations in the reference's order.

    **Arguments:**

    - `state`: the market state.
    - `params`: the market params.

    **Returns:**

    A `(n_units, 8 + lmp_history_len)` array.
    """
    setup = params.offer_sced_setup
    p_max = setup.p_max
    p = state.unit_power_mw
    n_units = setup.n_units
    next_load = jnp.sum(_node_load(state.episode_start_idx + state.time_step + 1, params), axis=-1)
    scalars = jnp.stack(
        [
            setup.base_seg_prices[:, 0] / params.lmp_scale,
            p_max / (jnp.max(p_max) + 1e-6),
            p / (p_max + 1e-6),
            state.last_dispatch_profit / (params.lmp_scale * p_max * params.delta_t_hours + 1e-6),
            jnp.minimum(p_max - p, params.ramp_up_mw_per_step) / (p_max + 1e-6),
            jnp.broadcast_to(next_load / (jnp.sum(p_max) + 1e-6), (n_units,)),
        ],
        axis=1,
    )
    shared = jnp.concatenate([time_features(state.time_step, params.steps_per_day), state.lmp_history / params.lmp_scale])
    return jnp.concatenate([scalars, jnp.broadcast_to(shared, (n_units, shared.shape[0]))], axis=1)


def run_market_baseline(
    name: str, key: Key, params: MarketMARLParams, n_steps: int
) -> tuple[MarketMARLState, Float[Array, "n_steps n_units"], Bool[Array, " n_steps"], Info]:
    """Roll a non-learning baseline on the rollout kernel.

    Every agent plays the same constant action each step: markup 0 (`truthful`), half
    (`uniform_mid`) or all (`max_markup`) of `max_markup`.

    **Arguments:**

    - `name`: `"truthful"`, `"uniform_mid"` or `"max_markup"`.
    - `key`: PRNG key.
    - `params`: the market params.
    - `n_steps`: rollout length [steps].

    **Returns:**

    `(final_state, rewards (T, U), dones (T,), info)`, info entries with a leading `T`
    axis.
    """
    if name not in BASELINE_ACTIONS:
        raise ValueError(f"Unknown market baseline {name!r}; valid choices: {', '.join(BASELINE_ACTIONS)}")
    setup = params.offer_sced_setup
    k_reset, k_roll = jr.split(key)
    actions = jnp.full((n_steps, setup.n_units * setup.n_segments), BASELINE_ACTIONS[name], jnp.float32)

    def step_fn(k, state, action):
        state, done, reward, info = market_marl_step(k, state, action, params)
        return market_marl_observations(state, params), state, reward, done, info

    final_state, _, (_, rewards, dones, info) = rollout(step_fn, k_roll, market_marl_reset(k_reset, params), actions)
    return final_state, rewards, dones, info
