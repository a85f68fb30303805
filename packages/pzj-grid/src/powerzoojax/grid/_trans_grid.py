"""Transmission grid env: units dispatched by the agent or an OPF over a DC or AC network.

Modes (spec §2.1; ``physics`` / ``solver_mode`` in :func:`make_trans_params`):

==========  ===========  ======================  ========================  =====================
physics     solver_mode  dispatch                network result            thermal metric
==========  ===========  ======================  ========================  =====================
0           0            agent                   DC PTDF                   MW vs [floor, cap]
1           0            agent (DC slack-adj.)   AC PF (fdlf / Newton)     max(|S_from|, |S_to|)
0           1            DC-OPF                  DC-OPF flows              MW
1           1            DC-OPF                  AC PF on the OPF dispatch max(|S_from|, |S_to|)
any         2            AC-OPF                  AC-OPF voltages and flows |S_from|
==========  ===========  ======================  ========================  =====================

AC-OPF mode: the in-graph primal–dual interior point of :mod:`powerzoojax.physics._ac_opf`
  runs in float32 (as the env) with a barrier floor and best-iterate tracking that make
  it converge there (see ``make_trans_params``' ``acopf_tol``); reactive loads are the
  case's Qd; info adds ``opf_converged``, ``opf_status`` (0 optimal, 1 not converged),
  ``opf_objective`` [$/h], ``opf_max_mismatch`` [p.u.], ``pf_converged`` (the OPF's own
  power-flow solution: same as ``opf_converged``) and ``line_viol_mva`` (Σ MVA beyond
  the rating at either end). No iteration count: see ``_solve_acopf``. The reset state
  is the spec's (proportional dispatch, DC power flow, flat voltages).

Observation float32, unbounded, ``L (+N in AC) + D + G + 2 + Σ bundle obs``:
  line loading ``/ max(|cap|, 1)`` (DC: signed MW; AC: ``√(P²+Q²)`` at the from end) ·
  ``vm`` (AC only) · ``load_mw / max(Σ p_max, 1)`` (D, the load the next action will
  meet) · ``unit_power_mw / max(p_max, 1)`` (G) · ``sin φ, cos φ`` of the time of day ·
  each resource bundle's observation.
Action in [-1, 1]: ``[unit set-points (G, if include_unit_dispatch) | bundle slices]``;
  unit set-points map onto ``[p_min, p_max]`` and the slack-bus units take up the
  imbalance; in OPF modes the unit entries are ignored.
Reward ``−reward_scale · TC(p)`` with ``TC`` the generation cost [$/h].
Costs (non-negative, in this order): ``thermal_overload`` (Σ MW / MVA beyond line limits ×
  ``cost_thermal_weight``), ``voltage_violation`` (Σ p.u. outside ``[v_min, v_max]``; 0 in
  DC), ``power_balance`` (Σ MW of realised output outside unit limits, plus load the OPF
  could not serve, plus ``pf_failure_cost`` on a step whose AC power flow did not
  converge), ``resource`` (Σ of the bundles' ``cost_sum``).
Numerical failure never yields NaN: ``info["pf_converged"]``/``info["opf_status"]`` flag
  it and the cost above prices it.
Termination: ``done`` when ``time_step + 1 >= max_steps``; the env auto-resets inside
  ``step``. Loads come from ``load_profiles[t mod T]`` [MW per load].
"""

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.core import (
    Box,
    Environment,
    EnvState,
    auto_reset,
    denormalize_action,
    make_box,
    stack_costs,
    time_features,
)
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.grid._trans_grid_params import MODE_NAMES, TransGridParams, make_trans_params
from powerzoojax.grid.resources._bundle import bundles_action_dim, bundles_obs_dim, observe_bundles, reset_bundles, step_bundles
from powerzoojax.physics import (
    DCFlow,
    ac_power_flow,
    dc_power_flow,
    dc_thermal_check,
    generation_cost,
    proportional_dispatch,
    short_sum,
    unit_limit_violation,
)
from powerzoojax.physics._ac_opf import ac_opf
from powerzoojax.physics._dc_opf import DCOPF_OPTIMAL, dc_opf

__all__ = ["CONSTRAINT_NAMES", "MODE_NAMES", "GridState", "TransGridEnv", "TransGridParams", "make_trans_params"]

CONSTRAINT_NAMES = ("thermal_overload", "voltage_violation", "power_balance", "resource")


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



class _Network(NamedTuple):
    """What one network solve produced, in every mode."""

    unit_power_mw: Array
    line_flow_mw: Array
    line_flow_q_mvar: Array
    node_injection_mw: Array
    vm: Array
    va: Array
    q_gen: Array
    thermal: Array
    n_line_violations: Array
    voltage: Array
    n_voltage_violations: Array
    unserved_mw: Array
    info: dict


def _finite(x: Array) -> Array:
    return jnp.where(jnp.isfinite(x), x, 0.0)


class TransGridEnv(Environment):
    """Transmission grid dispatch env (all modes of spec §2.1). See the module docstring."""

    def action_dim(self, params: TransGridParams) -> int:
        units = params.case.n_units if params.include_unit_dispatch else 0
        return units + bundles_action_dim(params.resources)

    def _is_ac(self, params: TransGridParams) -> bool:
        return params.acpf is not None or params.acopf is not None

    def obs_dim(self, params: TransGridParams) -> int:
        case = params.case
        ac = case.n_nodes if self._is_ac(params) else 0
        return case.n_lines + ac + case.n_loads + case.n_units + 2 + bundles_obs_dim(params.resources)

    def observation_space(self, params: TransGridParams) -> Box:
        return make_box(-np.inf, np.inf, (self.obs_dim(params),))

    def action_space(self, params: TransGridParams) -> Box:
        return make_box(-1.0, 1.0, (self.action_dim(params),))

    def constraint_names(self, params: TransGridParams) -> tuple[str, ...]:
        return CONSTRAINT_NAMES

    def iteration_count_keys(self, params: TransGridParams) -> tuple[str, ...]:
        # The AC power flow's Newton / fast-decoupled count (physics mode 1 only).
        return ("pf_n_iter",) if params.acpf is not None else ()

    def _row(self, time_step: Int[Array, ""], params: TransGridParams) -> Int[Array, ""]:
        return time_step % params.load_profiles.shape[0]

    def _ctx(self, state: GridState) -> dict[str, Any]:
        return {"time_step": state.time_step, "v_mag": state.vm}

    def _obs(self, state: GridState, params: TransGridParams) -> Float[Array, " obs_dim"]:
        load = params.load_profiles[self._row(state.time_step, params)]
        if self._is_ac(params):
            loading = jnp.sqrt(state.line_flow_mw**2 + state.line_flow_q_mw**2)
            network = [loading * params.inv_line_scale, state.vm]
        else:
            network = [state.line_flow_mw * params.inv_line_scale]
        parts = [
            *network,
            load * params.inv_total_capacity,
            state.unit_power_mw * params.inv_unit_scale,
            time_features(state.time_step, params.steps_per_day),
        ]
        if params.resources:
            parts.append(observe_bundles(params.resources, state.resource_states, self._ctx(state)))
        return jnp.concatenate(parts)

    def _dc_flow(
        self, params: TransGridParams, dispatch: Array, load: Array, row: Int[Array, ""], p_bus: Array | None
    ) -> DCFlow:
        flow = dc_power_flow(params.network, dispatch, load, params.load_line_flow_mw[row])
        if p_bus is None:
            return flow
        # Bundle injections displace slack output: the slack units give up Σ p_bus and the
        # flows see the injections at their buses.
        net = params.network
        total = short_sum(p_bus)
        slack_shift = total * net.slack_unit_weights
        return DCFlow(
            unit_power_mw=flow.unit_power_mw - slack_shift,
            line_flow_mw=flow.line_flow_mw - slack_shift @ net.ptdf_units_t + p_bus @ params.ptdf_nodes_t,
            node_injection_mw=flow.node_injection_mw + p_bus - params.case.nodes_units_map @ slack_shift,
        )

    def _solve(
        self,
        params: TransGridParams,
        dispatch: Array | None,
        row: Int[Array, ""],
        p_bus: Array | None,
        *,
        at_reset: bool = False,
        warm: GridState | None = None,
    ) -> _Network:
        """Dispatch (agent set-points, or the OPF of the mode when ``dispatch`` is None) and
        solve the network. ``at_reset``: the AC-OPF mode starts from the spec's reset
        (proportional dispatch, DC power flow, flat voltages) rather than an AC-OPF: it
        keeps the interior point out of the auto-reset branch of every step."""
        case = params.case
        load = params.load_profiles[row]
        zero = jnp.zeros((), jnp.float32)
        info: dict[str, Array] = {}
        unserved = zero
        if params.acopf is not None and not at_reset:
            return self._solve_acopf(params, load, p_bus)
        if params.dcopf is not None:
            node_load = load if params.network.loads_are_nodes else params.network.loads_to_nodes @ load
            if p_bus is not None:
                node_load = node_load - p_bus
            opf = dc_opf(params.dcopf, node_load, max_iter=params.opf_max_iter, tol=params.opf_tol)
            unserved = jnp.abs(short_sum(node_load) - short_sum(opf.p_mw))
            flow = DCFlow(unit_power_mw=opf.p_mw, line_flow_mw=opf.line_flow_mw, node_injection_mw=opf.node_injection_mw)
            info = {
                "opf_status": opf.status,
                "opf_converged": opf.converged,
                "opf_objective": opf.objective,
                "opf_lambda": opf.lambda_balance,
                "opf_ok": opf.status == DCOPF_OPTIMAL,
            }
        else:
            if dispatch is None:
                dispatch = proportional_dispatch(short_sum(load), case.unit_p_min, case.unit_p_max)
            flow = self._dc_flow(params, dispatch, load, row, p_bus)

        n_lines, n_nodes = case.n_lines, case.n_nodes
        if params.acpf is not None:
            load_p, load_q = load, params.load_q_mvar
            if params.resources:
                # One load per bus in bus order (checked in make_trans_params): injections
                # are negative load; bundle Q is ignored (spec §7.8).
                load_p = load - p_bus
            init_vm, init_va, init_pv_limit = (
                self._warm_start(params, warm) if (warm is not None and params.pf_warm_start) else (None, None, None)
            )
            pf = ac_power_flow(
                params.acpf, flow.unit_power_mw, None, load_p, load_q,
                init_vm=init_vm, init_va=init_va, init_pv_limit=init_pv_limit,
                max_iter=params.pf_max_iter, tol=params.pf_tol,
                method=params.pf_method,
            )
            loading = _finite(pf.line_loading_mva)
            thermal_v = jnp.maximum(loading - jnp.abs(case.line_cap), 0.0)
            vm = _finite(pf.vm)
            over = jnp.maximum(vm - params.node_v_max, 0.0) + jnp.maximum(params.node_v_min - vm, 0.0)
            info = {**info, "pf_converged": pf.converged, "pf_n_iter": pf.n_iter, "pf_max_mismatch": _finite(pf.max_mismatch)}
            failure = jnp.where(pf.converged, zero, params.pf_failure_cost)
            return _Network(
                unit_power_mw=flow.unit_power_mw,
                line_flow_mw=_finite(pf.line_p_from_mw),
                line_flow_q_mvar=_finite(pf.line_q_from_mvar),
                node_injection_mw=_finite(pf.p_inj_mw),
                vm=vm,
                va=_finite(pf.va),
                q_gen=_finite(pf.unit_q_mvar),
                thermal=short_sum(thermal_v),
                n_line_violations=short_sum((thermal_v > 0).astype(jnp.int32)),
                voltage=short_sum(over),
                n_voltage_violations=short_sum((over > 0).astype(jnp.int32)) + (~pf.converged).astype(jnp.int32),
                unserved_mw=unserved + failure,
                info=info,
            )
        thermal, n_over = dc_thermal_check(flow.line_flow_mw, params.network.line_cap, params.network.line_floor)
        if params.dcopf is not None:
            # OPF flows sit exactly on binding limits: count beyond 0.01 MW so float32 noise
            # cannot flip is_safe.
            over = jnp.maximum(flow.line_flow_mw - params.network.line_cap, 0.0) + jnp.maximum(
                params.network.line_floor - flow.line_flow_mw, 0.0
            )
            n_over = short_sum((over > 1e-2).astype(jnp.int32))
        return _Network(
            unit_power_mw=flow.unit_power_mw,
            line_flow_mw=flow.line_flow_mw,
            line_flow_q_mvar=jnp.zeros((n_lines,), jnp.float32),
            node_injection_mw=flow.node_injection_mw,
            vm=jnp.ones((n_nodes,), jnp.float32),
            va=jnp.zeros((n_nodes,), jnp.float32),
            q_gen=jnp.zeros((case.n_units,), jnp.float32),
            thermal=thermal,
            n_line_violations=n_over,
            voltage=zero,
            n_voltage_violations=jnp.asarray(0, jnp.int32),
            unserved_mw=unserved,
            info=info,
        )

    def _warm_start(self, params: TransGridParams, state: GridState) -> tuple[Array, Array, Array]:
        """AC PF warm start from the previous step's state: its voltages and its PV->PQ
        switches (``pf_warm_start``). The state holds no switch flags: a PV bus is switched
        iff its voltage left the set point (unswitched PV voltages are pinned to it
        exactly), at the limit its generated Q is nearer to (Q from ``q_gen``). A state
        with voltages outside [0.8, 1.2] p.u. (a failed solve) starts flat instead."""
        net = params.acpf
        sane = jnp.all((state.vm > 0.8) & (state.vm < 1.2))
        switched = net.is_pv & (state.vm != net.v_set) & sane
        bus_q = params.case.nodes_units_map @ state.q_gen
        at_max = bus_q >= 0.5 * (net.q_min_mvar + net.q_max_mvar)
        side = jnp.where(switched, jnp.where(at_max, 1, -1), 0).astype(jnp.int32)
        vm = jnp.where(sane, state.vm, 1.0)
        va = jnp.where(sane, state.va, net.va_ref)
        return vm, va, side

    def _solve_acopf(self, params: TransGridParams, load: Array, p_bus: Array | None) -> _Network:
        """Mode 2: the AC-OPF sets dispatch, voltages and flows (spec §2.2 step 6)."""
        case, net = params.case, params.network
        node_p = load if net.loads_are_nodes else net.loads_to_nodes @ load
        node_q = params.load_q_mvar if net.loads_are_nodes else net.loads_to_nodes @ params.load_q_mvar
        if p_bus is not None:
            node_p = node_p - p_bus  # bundle Q is ignored (spec §7.8)
        opf = ac_opf(params.acopf, node_p, node_q, max_iter=params.acopf_max_iter, tol=params.acopf_tol)
        zero = jnp.zeros((), jnp.float32)
        # A failed solve keeps its best iterate (finite by construction); _finite guards
        # the outputs anyway so that nothing non-finite can reach the state.
        p = _finite(opf.p_mw)
        s_from, s_to = _finite(opf.line_s_from_mva), _finite(opf.line_s_to_mva)
        cap = jnp.abs(case.line_cap)
        thermal_v = jnp.maximum(s_from - cap, 0.0)
        vm = _finite(opf.vm)
        over = jnp.maximum(vm - params.node_v_max, 0.0) + jnp.maximum(params.node_v_min - vm, 0.0)
        converged = opf.converged
        # No iteration count in info: in float32 the interior point's last iterations are
        # round-off driven, so a vmapped and a single solve of one instance may stop one
        # iteration apart (a count reported would go in iteration_count_keys).
        info = {
            "opf_converged": converged,
            "opf_status": jnp.where(converged, 0, 1).astype(jnp.int32),
            "opf_objective": _finite(opf.objective),
            "opf_max_mismatch": _finite(opf.max_mismatch),
            "pf_converged": converged,
            "line_viol_mva": short_sum(jnp.maximum(jnp.maximum(s_from, s_to) - cap, 0.0)),
        }
        return _Network(
            unit_power_mw=p,
            line_flow_mw=_finite(opf.line_p_from_mw),
            line_flow_q_mvar=_finite(opf.line_q_from_mvar),
            node_injection_mw=case.nodes_units_map @ p - node_p,
            vm=vm,
            va=_finite(opf.va),
            q_gen=_finite(opf.q_mvar),
            thermal=short_sum(thermal_v),
            n_line_violations=short_sum((thermal_v > 1e-2).astype(jnp.int32)),
            voltage=short_sum(over),
            n_voltage_violations=short_sum((over > 1e-5).astype(jnp.int32)) + (~converged).astype(jnp.int32),
            unserved_mw=jnp.where(converged, zero, params.pf_failure_cost),
            info=info,
        )

    def reset(self, key: Key, params: TransGridParams) -> tuple[Float[Array, " obs_dim"], GridState]:
        # Deterministic without bundles: the key is unused, which lets XLA compute the
        # auto-reset state once per rollout instead of once per env and step.
        case = params.case
        row = jnp.asarray(0, jnp.int32)
        p_bus = jnp.zeros((case.n_nodes,), jnp.float32) if params.resources else None
        net = self._solve(params, None, row, p_bus, at_reset=True)
        state = GridState(
            time_step=jnp.asarray(0, jnp.int32),
            done=jnp.asarray(False),
            unit_power_mw=net.unit_power_mw,
            line_flow_mw=net.line_flow_mw,
            node_injection_mw=net.node_injection_mw,
            is_safe=jnp.asarray(True),
            n_violations=jnp.asarray(0, jnp.int32),
            total_cost=jnp.asarray(0.0, jnp.float32),
            vm=net.vm,
            va=net.va,
            q_gen=net.q_gen,
            line_flow_q_mw=net.line_flow_q_mvar,
            resource_states=reset_bundles(params.resources, key),
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
            layout = "n_units" if params.include_unit_dispatch else ""
            if params.resources:
                layout = f"{layout} + Σ bundle action_dim" if layout else "Σ bundle action_dim"
            raise ValueError(f"TransGridEnv.step: action must have shape ({expected},) = ({layout},), got {action.shape}")
        case = params.case
        action = jnp.asarray(action, jnp.float32)
        n_unit_act = case.n_units if params.include_unit_dispatch else 0
        row = self._row(state.time_step, params)
        load = params.load_profiles[row]
        zero = jnp.zeros((), jnp.float32)

        resource_states, p_bus, resource_cost = state.resource_states, None, zero
        if params.resources:
            bundles = step_bundles(
                params.resources, state.resource_states, action[n_unit_act:], self._ctx(state), case.n_nodes
            )
            resource_states, p_bus, resource_cost = bundles.states, bundles.p_bus_mw, bundles.cost_sum

        dispatch = None
        if params.dcopf is None and params.acopf is None:
            if params.include_unit_dispatch:
                dispatch = denormalize_action(action[:n_unit_act], case.unit_p_min, case.unit_p_max)
            else:
                dispatch = proportional_dispatch(short_sum(load), case.unit_p_min, case.unit_p_max)
        net = self._solve(params, dispatch, row, p_bus, warm=state)

        gen_cost = generation_cost(net.unit_power_mw, case.unit_cost_a, case.unit_cost_b, case.unit_cost_c)
        power_balance = unit_limit_violation(net.unit_power_mw, case.unit_p_min, case.unit_p_max) + net.unserved_mw
        thermal_cost = params.cost_thermal_weight * net.thermal
        costs = stack_costs(thermal_cost, net.voltage, power_balance, resource_cost)
        reward = -params.reward_scale * gen_cost
        n_violations = net.n_line_violations + net.n_voltage_violations
        is_safe = n_violations == 0

        time_step = state.time_step + 1
        done = time_step >= params.max_steps
        next_state = GridState(
            time_step=time_step,
            done=done,
            unit_power_mw=net.unit_power_mw,
            line_flow_mw=net.line_flow_mw,
            node_injection_mw=net.node_injection_mw,
            is_safe=is_safe,
            n_violations=n_violations,
            total_cost=state.total_cost + gen_cost,
            vm=net.vm,
            va=net.va,
            q_gen=net.q_gen,
            line_flow_q_mw=net.line_flow_q_mvar,
            resource_states=resource_states,
        )
        next_state = auto_reset(self, key, next_state, params)
        info = {
            "gen_cost": gen_cost,
            "cost_thermal_overload": thermal_cost,
            "cost_voltage_violation": net.voltage,
            "cost_power_balance": power_balance,
            "cost_resource": resource_cost,
            "cost_load_shedding": zero,
            "cost_sum": short_sum(costs),
            "is_safe": is_safe,
            "n_violations": n_violations,
            "goal_met": is_safe,
            "line_viol_mva": zero,
            **net.info,
        }
        return self._obs(next_state, params), next_state, reward, costs, done, info
