"""Transmission grid env: the agent dispatches generating units, the network is a DC power flow.

Observation ``(L + D + G + 2,)`` float32, unbounded:
  ``line_flow_mw / max(|cap|, 1)`` (L) · ``load_mw / max(Σ p_max, 1)`` (D, the load the
  next action will meet) · ``unit_power_mw / max(p_max, 1)`` (G) · ``sin φ, cos φ`` of
  the time of day.
Action ``(G,)`` in [-1, 1] (clipped): unit set-points mapped onto ``[p_min, p_max]``;
  the slack-bus units then take up the imbalance.
Reward ``−reward_scale · TC(p)`` with ``TC`` the generation cost [$/h].
Costs (non-negative, in this order): ``thermal_overload`` (Σ MW beyond line limits ×
  ``cost_thermal_weight``), ``voltage_violation`` (0 in DC), ``power_balance`` (Σ MW of
  realised output outside unit limits, i.e. slack overload), ``resource`` (0 until
  resource bundles are attached).
Termination: ``done`` when ``time_step + 1 >= max_steps``; the env auto-resets inside
  ``step``. Loads come from ``load_profiles[t mod T]`` [MW per load].

Only the DC mode (``physics=0, solver_mode=0``) exists so far; the AC power flow and
OPF modes arrive with the transmission-physics work and are refused by name until then.
"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core import (
    Box,
    Environment,
    EnvParams,
    EnvState,
    auto_reset,
    denormalize_action,
    make_box,
    stack_costs,
    time_features,
)
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.core._validation import finite_scalar, positive_int
from powerzoojax.physics import (
    DCNetwork,
    dc_power_flow,
    dc_thermal_check,
    generation_cost,
    load_line_flows,
    make_dc_network,
    proportional_dispatch,
    short_sum,
    unit_limit_violation,
)

CONSTRAINT_NAMES = ("thermal_overload", "voltage_violation", "power_balance", "resource")

_MODE_NAMES = {
    (0, 0): "DC power flow, agent dispatch",
    (1, 0): "AC power flow, agent dispatch",
    (0, 1): "DC-OPF dispatch, DC power flow",
    (1, 1): "DC-OPF dispatch, AC power flow",
    (0, 2): "AC-OPF",
    (1, 2): "AC-OPF",
}


class GridState(EnvState):
    """Transmission state; every field exists in every physics mode (mode-invariant pytree)."""

    unit_power_mw: Float[Array, " n_units"]
    line_flow_mw: Float[Array, " n_lines"]
    node_injection_mw: Float[Array, " n_nodes"]
    is_safe: Bool[Array, ""]
    n_violations: Int[Array, ""]
    total_cost: Float[Array, ""]
    vm: Float[Array, " n_nodes"]
    va: Float[Array, " n_nodes"]
    q_gen: Float[Array, " n_units"]
    line_flow_q_mw: Float[Array, " n_lines"]
    resource_states: tuple = ()


class TransGridParams(EnvParams):
    """Params of :class:`TransGridEnv`; build with :func:`make_trans_params`."""

    case: CaseData
    network: DCNetwork
    load_profiles: Float[Array, "n_profile_steps n_loads"]
    # Line flows caused by each profile row's loads, tabulated once: keeps the (N × L)
    # load product out of the step. Derived from load_profiles; swap profiles with
    # with_load_profiles so the two stay consistent.
    load_line_flow_mw: Float[Array, "n_profile_steps n_lines"]
    cost_thermal_weight: Float[Array, ""]
    reward_scale: Float[Array, ""]
    # Observation normalisers, inverted once on the host.
    inv_line_scale: Float[Array, " n_lines"]
    inv_unit_scale: Float[Array, " n_units"]
    inv_total_capacity: Float[Array, ""]
    steps_per_day: int = eqx.field(static=True, default=48, kw_only=True)
    physics: int = eqx.field(static=True, default=0, kw_only=True)
    solver_mode: int = eqx.field(static=True, default=0, kw_only=True)
    include_unit_dispatch: bool = eqx.field(static=True, default=True, kw_only=True)
    resources: tuple = eqx.field(static=True, default=(), kw_only=True)

    def with_load_profiles(self, load_profiles: Float[Array, "n_rows n_loads"]) -> "TransGridParams":
        """These params with new ``(T', n_loads)`` profiles [MW] (usable inside ``jit``/``vmap``)."""
        profiles = jnp.asarray(load_profiles, jnp.float32)
        return eqx.tree_at(
            lambda p: (p.load_profiles, p.load_line_flow_mw),
            self,
            (profiles, load_line_flows(self.network, profiles)),
        )


def _finite_scalar(name: str, value: Any, *, positive: bool = False, non_negative: bool = False) -> float:
    return finite_scalar("make_trans_params", name, value, positive=positive, non_negative=non_negative)


def _positive_int(name: str, value: Any) -> int:
    return positive_int("make_trans_params", name, value)


def make_trans_params(
    case: CaseData,
    load_profiles: ArrayLike | None = None,
    max_steps: int = 48,
    delta_t_hours: float | int = 0.5,
    steps_per_day: int = 48,
    cost_thermal_weight: float | int = 1.0,
    reward_scale: float | int = 0.01,
    physics: int = 0,
    solver_mode: int = 0,
    resources: tuple = (),
    include_unit_dispatch: bool = True,
) -> TransGridParams:
    """Validate inputs on the host and build :class:`TransGridParams`.

    ``load_profiles``: ``(T, n_loads)`` MW per load, row ``t mod T`` used at step ``t``;
    default: the case's nominal ``(d_max + d_min) / 2`` tiled over ``max_steps`` rows.
    Raises ``ValueError`` naming a bad value, ``TypeError`` for an argument of the wrong
    type, ``NotImplementedError`` for modes that have not landed yet.
    """
    if not isinstance(case, CaseData):
        raise TypeError(
            f"make_trans_params: case must be a CaseData from powerzoojax.case.load_case, got {type(case).__name__}"
        )
    max_steps = _positive_int("max_steps", max_steps)
    steps_per_day = _positive_int("steps_per_day", steps_per_day)
    delta_t_hours = _finite_scalar("delta_t_hours", delta_t_hours, positive=True)
    cost_thermal_weight = _finite_scalar("cost_thermal_weight", cost_thermal_weight, non_negative=True)
    reward_scale = _finite_scalar("reward_scale", reward_scale)
    if physics not in (0, 1) or isinstance(physics, bool):
        raise ValueError(f"make_trans_params: physics must be 0 (DC) or 1 (AC), got {physics!r}")
    if solver_mode not in (0, 1, 2) or isinstance(solver_mode, bool):
        raise ValueError(
            f"make_trans_params: solver_mode must be 0 (agent dispatch), 1 (DC-OPF) or 2 (AC-OPF), got {solver_mode!r}"
        )
    if (physics, solver_mode) != (0, 0):
        raise NotImplementedError(
            f"TransGridEnv mode physics={physics}, solver_mode={solver_mode} "
            f"({_MODE_NAMES[(physics, solver_mode)]}) is not implemented yet; "
            "only physics=0, solver_mode=0 (DC power flow, agent dispatch) is available"
        )
    if tuple(resources):
        raise NotImplementedError(
            "make_trans_params: resource bundles are not available yet; pass resources=()"
        )
    if not isinstance(include_unit_dispatch, (bool, np.bool_)):
        raise TypeError(f"make_trans_params: include_unit_dispatch must be a bool, got {include_unit_dispatch!r}")

    n_loads = case.n_loads
    if load_profiles is None:
        nominal = 0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
        profiles = np.tile(nominal, (max_steps, 1))
    else:
        profiles = np.asarray(load_profiles)
        if profiles.ndim != 2 or profiles.shape[1] != n_loads or profiles.shape[0] < 1:
            raise ValueError(
                f"make_trans_params: load_profiles must have shape (T, n_loads) = (T, {n_loads}) with T >= 1, "
                f"got shape {profiles.shape}"
            )
        if not np.issubdtype(profiles.dtype, np.number):
            raise ValueError(f"make_trans_params: load_profiles must be numeric, got dtype {profiles.dtype}")
        bad = ~np.isfinite(profiles)
        if bad.any():
            t, d = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"make_trans_params: load_profiles must be finite; found {profiles[t, d]} at row {t}, load {d} "
                f"({int(bad.sum())} non-finite values in all)"
            )

    p_max = np.asarray(case.unit_p_max, np.float64)
    ptdf_loads = np.asarray(case.ptdf, np.float64) @ np.asarray(case.nodes_loads_map, np.float64)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return TransGridParams(
        case=case,
        network=make_dc_network(case),
        load_profiles=f32(profiles),
        load_line_flow_mw=f32(np.asarray(profiles, np.float64) @ ptdf_loads.T),
        cost_thermal_weight=f32(cost_thermal_weight),
        reward_scale=f32(reward_scale),
        inv_line_scale=f32(1.0 / np.maximum(np.abs(np.asarray(case.line_cap, np.float64)), 1.0)),
        inv_unit_scale=f32(1.0 / np.maximum(p_max, 1.0)),
        inv_total_capacity=f32(1.0 / max(float(p_max.sum()), 1.0)),
        max_steps=max_steps,
        delta_t_hours=delta_t_hours,
        steps_per_day=steps_per_day,
        physics=int(physics),
        solver_mode=int(solver_mode),
        include_unit_dispatch=bool(include_unit_dispatch),
        resources=tuple(resources),
    )


class TransGridEnv(Environment):
    """Transmission grid economic-dispatch env (DC power flow mode). See the module docstring."""

    def action_dim(self, params: TransGridParams) -> int:
        return params.case.n_units if params.include_unit_dispatch else 0

    def obs_dim(self, params: TransGridParams) -> int:
        case = params.case
        return case.n_lines + case.n_loads + case.n_units + 2

    def observation_space(self, params: TransGridParams) -> Box:
        return make_box(-np.inf, np.inf, (self.obs_dim(params),))

    def action_space(self, params: TransGridParams) -> Box:
        return make_box(-1.0, 1.0, (self.action_dim(params),))

    def constraint_names(self, params: TransGridParams) -> tuple[str, ...]:
        return CONSTRAINT_NAMES

    def _row(self, time_step: Int[Array, ""], params: TransGridParams) -> Int[Array, ""]:
        return time_step % params.load_profiles.shape[0]

    def _obs(self, state: GridState, params: TransGridParams) -> Float[Array, " obs_dim"]:
        load = params.load_profiles[self._row(state.time_step, params)]
        return jnp.concatenate(
            [
                state.line_flow_mw * params.inv_line_scale,
                load * params.inv_total_capacity,
                state.unit_power_mw * params.inv_unit_scale,
                time_features(state.time_step, params.steps_per_day),
            ]
        )

    def reset(self, key: Key, params: TransGridParams) -> tuple[Float[Array, " obs_dim"], GridState]:
        # Deterministic in DC mode: the key is unused, which lets XLA compute the
        # auto-reset state once per rollout instead of once per env and step.
        case = params.case
        load = params.load_profiles[0]
        dispatch = proportional_dispatch(short_sum(load), case.unit_p_min, case.unit_p_max)
        flow = dc_power_flow(params.network, dispatch, load, params.load_line_flow_mw[0])
        state = GridState(
            time_step=jnp.asarray(0, jnp.int32),
            done=jnp.asarray(False),
            unit_power_mw=flow.unit_power_mw,
            line_flow_mw=flow.line_flow_mw,
            node_injection_mw=flow.node_injection_mw,
            is_safe=jnp.asarray(True),
            n_violations=jnp.asarray(0, jnp.int32),
            total_cost=jnp.asarray(0.0, jnp.float32),
            vm=jnp.ones(case.n_nodes, jnp.float32),
            va=jnp.zeros(case.n_nodes, jnp.float32),
            q_gen=jnp.zeros(case.n_units, jnp.float32),
            line_flow_q_mw=jnp.zeros(case.n_lines, jnp.float32),
            resource_states=(),
        )
        return self._obs(state, params), state

    def step(
        self,
        key: Key,
        state: GridState,
        action: Float[Array | np.ndarray, " action_dim"],
        params: TransGridParams,
    ) -> tuple[Float[Array, " obs_dim"], GridState, FloatScalar, Float[Array, "4"], Bool[Array, ""], Info]:
        expected = self.action_dim(params)
        if action.shape != (expected,):
            raise ValueError(
                f"TransGridEnv.step: action must have shape ({expected},) = (n_units,), got {action.shape}"
            )
        case = params.case
        action = jnp.asarray(action, jnp.float32)
        row = self._row(state.time_step, params)
        load = params.load_profiles[row]
        if params.include_unit_dispatch:
            dispatch = denormalize_action(action, case.unit_p_min, case.unit_p_max)
        else:
            dispatch = proportional_dispatch(short_sum(load), case.unit_p_min, case.unit_p_max)
        flow = dc_power_flow(params.network, dispatch, load, params.load_line_flow_mw[row])
        thermal_mw, n_violations = dc_thermal_check(
            flow.line_flow_mw, params.network.line_cap, params.network.line_floor
        )
        gen_cost = generation_cost(flow.unit_power_mw, case.unit_cost_a, case.unit_cost_b, case.unit_cost_c)
        power_balance = unit_limit_violation(flow.unit_power_mw, case.unit_p_min, case.unit_p_max)

        zero = jnp.zeros((), jnp.float32)
        thermal_cost = params.cost_thermal_weight * thermal_mw
        costs = stack_costs(thermal_cost, zero, power_balance, zero)
        reward = -params.reward_scale * gen_cost
        is_safe = n_violations == 0

        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        next_state = GridState(
            time_step=time_step,
            done=done,
            unit_power_mw=flow.unit_power_mw,
            line_flow_mw=flow.line_flow_mw,
            node_injection_mw=flow.node_injection_mw,
            is_safe=is_safe,
            n_violations=n_violations,
            total_cost=state.total_cost + gen_cost,
            vm=state.vm,
            va=state.va,
            q_gen=state.q_gen,
            line_flow_q_mw=state.line_flow_q_mw,
            resource_states=state.resource_states,
        )
        next_state = auto_reset(self, key, next_state, params)
        info = {
            "gen_cost": gen_cost,
            "cost_thermal_overload": thermal_cost,
            "cost_voltage_violation": zero,
            "cost_power_balance": power_balance,
            "cost_resource": zero,
            "cost_load_shedding": zero,
            "cost_sum": short_sum(costs),
            "is_safe": is_safe,
            "n_violations": n_violations,
            "goal_met": is_safe,
            "line_viol_mva": zero,
        }
        return self._obs(next_state, params), next_state, reward, costs, done, info
