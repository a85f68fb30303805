"""Transmission grid env: units dispatched by the agent or an OPF over a DC or AC network."""

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PyTree

from powerzoojax.core import (
    Invariant,
    Box,
    Environment,
    EnvState,
    denormalize_action,
    make_box,
    stack_costs,
    time_features,
)
from powerzoojax.core._types import FloatScalar, Info, Key
from powerzoojax.grid.resources._bundle import bundles_action_dim, bundles_obs_dim, observe_bundles, reset_bundles, step_bundles
from powerzoojax.grid.transmission._invariants import trans_grid_laws
from powerzoojax.grid.transmission._network_models import NetworkInputs
from powerzoojax.grid.transmission._trans_grid_params import MODE_NAMES, TransGridParams, make_trans_params
from powerzoojax.physics import generation_cost, proportional_dispatch, unit_limit_violation

__all__ = ["CONSTRAINT_NAMES", "MODE_NAMES", "GridState", "TransGridEnv", "TransGridParams", "make_trans_params"]

CONSTRAINT_NAMES = ("thermal_overload", "voltage_violation", "power_balance", "resource")


class GridState(EnvState):
    """Transmission state; every field exists in every physics mode (mode-invariant pytree).

    **Arguments:**

    - `time_step`, `done`: as [`EnvState`][powerzoojax.core.EnvState].
    - `unit_power_mw`: `(n_units,)` realised unit output [MW].
    - `line_flow_mw`: `(n_lines,)` active flows [MW], from → to positive.
    - `node_injection_mw`: `(n_nodes,)` net injections [MW].
    - `is_safe`: no limit violated on the last step.
    - `n_violations`: number of violated limits on the last step.
    - `total_cost`: generation cost of the last step [$].
    - `vm`, `va`: `(n_nodes,)` voltage magnitude [p.u.] and angle [rad] (1 and 0 in the DC
      modes).
    - `q_gen`: `(n_units,)` reactive output [MVAr] (0 in the DC modes).
    - `line_flow_q_mw`: `(n_lines,)` reactive flows [MVAr] (0 in the DC modes).
    - `resource_states`: the states of the params' resource bundles.
    - `network_memory`: what the network model keeps from one step to the next (the
      DC-OPF's last basis when it warm-starts; `()` for most models).
    """

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
    network_memory: PyTree = ()


class TransGridEnv(Environment):
    """Transmission grid dispatch env (every physics mode, one network model each).

    Modes (`physics` / `solver_mode` in [`make_trans_params`][powerzoojax.grid.transmission.make_trans_params]), each a network model
    (`powerzoojax.grid.transmission._network_models`, chosen once in `make_trans_params`
    and kept in `params.network_model`; `reset` and `step` call it without branching on
    the mode, and a model of your own can take its place):

    | `physics` | `solver_mode` | dispatch | network result | thermal metric |
    |---|---|---|---|---|
    | 0 | 0 | agent | DC PTDF | MW vs [floor, cap] |
    | 1 | 0 | agent (DC slack-adj.) | AC PF (fdlf / Newton) | larger of the end magnitudes `abs(S_from)`, `abs(S_to)` |
    | 0 | 1 | DC-OPF | DC-OPF flows | MW |
    | 1 | 1 | DC-OPF | AC PF on the OPF dispatch | larger of the end magnitudes `abs(S_from)`, `abs(S_to)` |
    | any | 2 | AC-OPF | AC-OPF voltages and flows | `abs(S_from)` |

    AC-OPF mode: the in-graph primal–dual interior point of `powerzoojax.physics._ac_opf`
      runs in float32 (as the env) with a barrier floor and best-iterate tracking that make
      it converge there (see `make_trans_params`' `acopf_tol`); reactive loads are the
      case's Qd; info adds `opf_converged`, `opf_status` (0 optimal, 1 not converged),
      `opf_objective` [$/h], `opf_max_mismatch` [p.u.], `pf_converged` (the OPF's own
      power-flow solution: same as `opf_converged`) and `line_viol_mva` (Σ MVA beyond
      the rating at either end). No iteration count: see `ACOPFModel.solve`. The reset
      state is proportional dispatch on a DC power flow with flat voltages.

    Observation float32, unbounded, `L (+N in AC) + D + G + 2 + Σ bundle obs`:
      line loading `/ max(|cap|, 1)` (DC: signed MW; AC: `√(P²+Q²)` at the from end) ·
      `vm` (AC only) · `load_mw / max(Σ p_max, 1)` (D, the load the next action will
      meet) · `unit_power_mw / max(p_max, 1)` (G) · `sin φ, cos φ` of the time of day ·
      each resource bundle's observation.
    Action in [-1, 1]: `[unit set-points (G, if include_unit_dispatch) | bundle slices]`;
      unit set-points map onto `[p_min, p_max]` and the slack-bus units take up the
      imbalance; in OPF modes the unit entries are ignored.
    Reward `−reward_scale · TC(p)` with `TC` the generation cost [$/h] of the realised
      output (the reference's model, which a slack unit outside its limits can exploit:
      below zero its cubic cost is negative), or with `unit_limit_price=π` in
      `make_trans_params`, `TC(clip(p, p_min, p_max)) + π · Σ MW outside the limits`.
    Costs (non-negative, in this order): `thermal_overload` (Σ MW / MVA beyond line limits ×
      `cost_thermal_weight`), `voltage_violation` (Σ p.u. outside `[v_min, v_max]`; 0 in
      DC), `power_balance` (Σ MW of realised output outside unit limits, plus load the OPF
      could not serve, plus `pf_failure_cost` on a step whose AC power flow did not
      converge, plus `islanding_cost` and the cut-off load while line outages island buses),
      `resource` (Σ of the bundles' `cost_sum`).
    Line outages: `params.with_line_outages(mask)` (DC modes, traceable, vmappable);
      `info["islanded"]` flags an outage set that cuts buses off the slack (`is_safe` is
      then False).
    Numerical failure never yields NaN: `info["pf_converged"]`/`info["opf_status"]` flag
      it and the cost above prices it.
    Termination: `done` when `time_step + 1 >= max_steps`; the env auto-resets inside
      `step`. Loads come from `load_profiles[t mod T]` [MW per load].
    """
    def action_dim(self, params: TransGridParams) -> int:
        """Length of the action vector.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        `n_units` (when the params include unit dispatch) plus the bundles' action length.
        """
        units = params.case.n_units if params.include_unit_dispatch else 0
        return units + bundles_action_dim(params.resources)

    def obs_dim(self, params: TransGridParams) -> int:
        """Length of the observation vector.

        **Arguments:**

        - `params`: the env's params.

        **Returns:**

        `n_lines + n_loads + n_units + 2` (plus `n_nodes` bus voltages in the AC layout) plus
        the bundles' observation length.
        """
        case = params.case
        ac = case.n_nodes if params.network_model.is_ac else 0
        return case.n_lines + ac + case.n_loads + case.n_units + 2 + bundles_obs_dim(params.resources)

    def observation_space(self, params: TransGridParams) -> Box:
        return make_box(-np.inf, np.inf, (self.obs_dim(params),))

    def action_space(self, params: TransGridParams) -> Box:
        return make_box(-1.0, 1.0, (self.action_dim(params),))

    def constraint_names(self, params: TransGridParams) -> tuple[str, ...]:
        return CONSTRAINT_NAMES

    def ignored_action_entries(self, params: TransGridParams) -> np.ndarray | None:
        # An OPF model sets the dispatch: the unit set-points are never read.
        if not params.include_unit_dispatch or params.network_model.reads_setpoints:
            return None
        ignored = np.zeros((self.action_dim(params),), bool)
        ignored[: params.case.n_units] = True
        return ignored

    def iteration_count_keys(self, params: TransGridParams) -> tuple[str, ...]:
        # The AC power flow's Newton / fast-decoupled count (AC power-flow modes only).
        return ("pf_n_iter",) if params.acpf is not None else ()

    def physics_invariants(self, params: TransGridParams) -> tuple[Invariant, ...]:
        # DC: balance and PTDF flows; DC-OPF: limits when OPTIMAL; AC: bus power equations.
        return trans_grid_laws(params)

    def _row(self, time_step: Int[Array, ""], params: TransGridParams) -> Int[Array, ""]:
        return time_step % params.load_profiles.shape[0]

    def _ctx(self, state: GridState) -> dict[str, Any]:
        return {"time_step": state.time_step, "v_mag": state.vm}

    def _obs(self, state: GridState, params: TransGridParams) -> Float[Array, " obs_dim"]:
        load = params.load_profiles[self._row(state.time_step, params)]
        if params.network_model.is_ac:
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

    def action_layout(self, params: TransGridParams) -> str:
        layout = "n_units" if params.include_unit_dispatch else ""
        if params.resources:
            layout = f"{layout} + Σ bundle action_dim" if layout else "Σ bundle action_dim"
        return f"({layout},)"

    def observe(self, state: GridState, params: TransGridParams) -> Float[Array, " obs_dim"]:
        return self._obs(state, params)

    def reset_env(self, key: Key, params: TransGridParams) -> tuple[Float[Array, " obs_dim"], GridState]:
        # Deterministic without bundles: the key is unused, which lets XLA compute the
        # auto-reset state once per rollout instead of once per env and step.
        case = params.case
        row = jnp.asarray(0, jnp.int32)
        load = params.load_profiles[row]
        p_bus = jnp.zeros((case.n_nodes,), jnp.float32) if params.resources else None
        dispatch = proportional_dispatch(jnp.sum(load), case.unit_p_min, case.unit_p_max)
        net = params.network_model.solve_reset(
            NetworkInputs(load, row, dispatch, p_bus, load_flow_mw=params.load_line_flow_mw[row])
        )
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
            network_memory=params.network_model.initial_memory(),
        )
        return self._obs(state, params), state

    def step_env(
        self,
        key: Key,
        state: GridState,
        action: Float[Array | np.ndarray, " action_dim"],
        params: TransGridParams,
    ) -> tuple[Float[Array, " obs_dim"], GridState, FloatScalar, Float[Array, "4"], Bool[Array, ""], Info]:
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

        # Set-points for the models that take them (OPF models ignore them).
        if params.include_unit_dispatch:
            dispatch = denormalize_action(action[:n_unit_act], case.unit_p_min, case.unit_p_max)
        else:
            dispatch = proportional_dispatch(jnp.sum(load), case.unit_p_min, case.unit_p_max)
        net = params.network_model.solve(
            NetworkInputs(load, row, dispatch, p_bus, state, load_flow_mw=params.load_line_flow_mw[row])
        )

        outside_limits = unit_limit_violation(net.unit_power_mw, case.unit_p_min, case.unit_p_max)
        if params.unit_limit_price is None:  # the reference: the polynomial of the realised output
            gen_cost = generation_cost(net.unit_power_mw, case.unit_cost_a, case.unit_cost_b, case.unit_cost_c)
        else:  # output within the limits at the polynomial, the MW outside at the limit price
            within = jnp.clip(net.unit_power_mw, case.unit_p_min, case.unit_p_max)
            gen_cost = (
                generation_cost(within, case.unit_cost_a, case.unit_cost_b, case.unit_cost_c)
                + params.unit_limit_price * outside_limits
            )
        power_balance = outside_limits + net.unserved_mw + params.islanding_penalty(load)
        thermal_cost = params.cost_thermal_weight * net.thermal
        costs = stack_costs(thermal_cost, net.voltage, power_balance, resource_cost)
        reward = -params.reward_scale * gen_cost
        n_violations = net.n_line_violations + net.n_voltage_violations
        is_safe = (n_violations == 0) & ~params.islanded

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
            network_memory=net.memory,
        )
        info = {
            "gen_cost": gen_cost,
            "cost_thermal_overload": thermal_cost,
            "cost_voltage_violation": net.voltage,
            "cost_power_balance": power_balance,
            "cost_resource": resource_cost,
            "cost_load_shedding": zero,
            "cost_sum": jnp.sum(costs),
            "is_safe": is_safe,
            "n_violations": n_violations,
            "goal_met": is_safe,
            "line_viol_mva": zero,
            "islanded": params.islanded,
            **net.info,
        }
        return self._obs(next_state, params), next_state, reward, costs, done, info
