"""Network models of [`TransGridEnv`][powerzoojax.grid.TransGridEnv]: one small module per physics mode.

A network model turns one step's loads, set-points and bundle injections into unit
outputs, flows, voltages and the violation measures the env prices. It holds every array
it reads (the case's DC network, the OPF and AC setups, voltage limits, ratings) and its
solver options, so its solve needs nothing but the step's
[`NetworkInputs`][powerzoojax.grid.transmission.NetworkInputs]. `make_trans_params` stores
it in the params (`params.network_model`); `TransGridEnv.reset` / `step` call it without
knowing the mode:

| model | (`physics`, `solver_mode`) | dispatch |
|---|---|---|
| [`DCPowerFlowModel`][powerzoojax.grid.transmission.DCPowerFlowModel] | (0, 0) | agent set-points, DC slack |
| [`DCOPFModel`][powerzoojax.grid.transmission.DCOPFModel] | (0, 1) | DC-OPF |
| `ACPowerFlowModel(..., DCPowerFlowModel)` | (1, 0) | agent set-points, DC slack |
| `ACPowerFlowModel(..., DCOPFModel)` | (1, 1) | DC-OPF, then AC power flow |
| [`ACOPFModel`][powerzoojax.grid.transmission.ACOPFModel] | (any, 2) | AC-OPF |

Each built-in model has a factory `of_case(case, ...)` that builds its arrays from a
[`CaseData`][powerzoojax.case.CaseData] and takes its solver options.

The model lives in the params, not in the env, because it holds arrays: as params leaves
they can be vmapped (e.g. over line ratings) and a new params of the same mode reuses the
compiled step. Its iteration caps, tolerances and method are static fields, so they are
part of the compiled program, like the mode itself.

Protocol. A model is an `eqx.Module` subclassing [`NetworkModel`][powerzoojax.grid.transmission.NetworkModel] with

- `solve(inputs) -> NetworkSolution`: the step's network solve;
  `inputs` ([`NetworkInputs`][powerzoojax.grid.transmission.NetworkInputs]) carries the profile row's loads [MW per load]
  and the line flows they cause [MW], the row index, the set-points [MW] (the agent's, or
  proportional to the load when the action has no unit entries; OPF models ignore them),
  the bundles' bus injections [MW] (None without bundles) and the state before the step
  (None at reset);
- `solve_reset(inputs)` (optional): the solve behind `reset`; defaults to `solve`. The
  built-in models start every episode from a DC power flow of the proportional set-points
  (with flat voltages in the AC layout);
- `is_ac` (class variable): whether the observation carries bus voltages (the AC
  layout, `L + N + D + G + 2`);
- `reads_setpoints` (property, True unless overridden): whether `solve` uses the
  set-points; when it does not, the action's unit entries are ignored entries of the
  env (`TransGridEnv.ignored_action_entries`).

Every array of the [`NetworkSolution`][powerzoojax.grid.transmission.NetworkSolution] must be finite; `thermal`, `voltage` and
`unserved_mw` are the non-negative amounts the `thermal_overload`, `voltage_violation`
and `power_balance` costs charge; `info` entries are added to the step's info (the
same keys on every step). A model of your own goes in with
`make_trans_params(case, network_model=...)`. Example: a DC power flow whose slack units
also cover losses of a fixed fraction of the load (the fraction an array leaf, so params
can be vmapped over it):

```python
import dataclasses

import jax.numpy as jnp
from jaxtyping import Array, Float

from powerzoojax.case import load_case
from powerzoojax.grid import TransGridEnv, make_trans_params
from powerzoojax.grid.transmission import DCPowerFlowModel, NetworkModel

class LossyDCModel(NetworkModel):
    power_flow: DCPowerFlowModel
    loss_fraction: Float[Array, ""]

    def solve(self, inputs):
        lossless = self.power_flow.solve(inputs)
        losses = self.loss_fraction * jnp.sum(inputs.load_mw)
        units = lossless.unit_power_mw + losses * self.power_flow.network.slack_unit_weights
        return dataclasses.replace(lossless, unit_power_mw=units)

case = load_case("5")
params = make_trans_params(case, network_model=LossyDCModel(DCPowerFlowModel.of_case(case), jnp.asarray(0.03)))
```
"""

import abc
from typing import ClassVar, Protocol, runtime_checkable

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, PyTree

from powerzoojax.case import CaseData
from powerzoojax.physics import (
    ACNetwork, DCFlow, DCNetwork, ac_power_flow, dc_power_flow, dc_thermal_check, make_ac_network, make_dc_network,
)
from powerzoojax.physics._ac_opf import ACOPFSetup, ac_opf, make_ac_opf_setup
from powerzoojax.physics._ac_pf import AC_PF_METHODS, NEWTON_STEPS
from powerzoojax.physics._dc_opf import DCOPFSetup, dc_opf, make_dc_opf_setup
from powerzoojax.physics._status import SolverStatus, status_code
from powerzoojax.physics._dispatch_lp import DispatchLPTuning, cold_dispatch_basis
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp
from powerzoojax.core._validation import finite_scalar, positive_int

__all__ = [
    "ACCaseData", "ACOPFModel", "ACPowerFlowModel", "DCOPFModel", "DCPowerFlowModel", "NetworkInputs", "NetworkModel",
    "NetworkSolution", "PreviousState",
]

# Monitored lines from which `DCOPFModel.of_case` warm-starts by default (`warm_start=None`).
WARM_START_MIN_LINES = 16


def _check_solver_options(owner: str, max_iter: object, tol: object) -> None:
    """The iteration cap is a positive int and the tolerance a finite positive number,
    checked when a model is built: both are static, and a bad one would compile a loop
    that never iterates or never meets its test."""
    positive_int(owner, "max_iter", max_iter)
    finite_scalar(owner, "tol", tol, positive=True)


@runtime_checkable
class PreviousState(Protocol):
    """What a network model reads of the state before a step: the transmission env's
    [`GridState`][powerzoojax.grid.transmission.GridState] has it."""

    @property
    def vm(self) -> Float[Array, " n_nodes"]:
        """Voltage magnitudes [p.u.] of the last solution (the AC models' warm start)."""
        ...

    @property
    def va(self) -> Float[Array, " n_nodes"]:
        """Voltage angles [rad] of the last solution (the AC models' warm start)."""
        ...

    @property
    def q_gen(self) -> Float[Array, " n_units"]:
        """Units' reactive output [MVAr] of the last solution."""
        ...

    @property
    def network_memory(self) -> PyTree:
        """What the model carries from step to step (a warm-start basis, or nothing)."""
        ...


class NetworkInputs(eqx.Module):
    """What a network model solves for on one step.

    **Arguments:**

    - `load_mw`: `(n_loads,)` the profile row's loads [MW].
    - `row`: index of that profile row.
    - `dispatch_mw`: `(n_units,)` set-points [MW] (the agent's, or proportional to the
      load when the action has no unit entries; OPF models ignore them).
    - `p_bus_mw`: `(n_nodes,)` the bundles' bus injections [MW], `None` without bundles.
    - `previous`: the state before the step, `None` at reset.
    - `load_flow_mw` (keyword): `(n_lines,)` the line flows the row's loads cause [MW]
      (`params.load_line_flow_mw[row]`, tabulated once per profile).
    """

    load_mw: Float[Array, " n_loads"]
    row: Int[Array, ""]
    dispatch_mw: Float[Array, " n_units"]
    p_bus_mw: Float[Array, " n_nodes"] | None = None
    previous: PreviousState | None = None
    load_flow_mw: Float[Array, " n_lines"] = eqx.field(kw_only=True)


class NetworkSolution(eqx.Module):
    """What one network solve produced, in every mode.

    AC-only fields are flat (`vm` 1, `va` 0, reactive quantities 0) in the DC models.

    **Arguments:**

    - `unit_power_mw`: `(n_units,)` realised output [MW].
    - `line_flow_mw`, `line_flow_q_mvar`: `(n_lines,)` flows [MW, MVAr].
    - `node_injection_mw`: `(n_nodes,)` net injections [MW].
    - `vm`, `va`: `(n_nodes,)` voltages [p.u., rad].
    - `q_gen`: `(n_units,)` reactive output [MVAr].
    - `thermal`: overload the `thermal_overload` cost charges (≥ 0).
    - `n_line_violations`: number of overloaded lines.
    - `voltage`: voltage violation the `voltage_violation` cost charges (≥ 0).
    - `n_voltage_violations`: buses outside their limits, including a failed AC solve.
    - `unserved_mw`: load not served, charged on `power_balance` [MW].
    - `info`: entries added to the step's info (the same keys on every step).
    - `memory`: what the model keeps for its next step (`GridState.network_memory`), with
      the structure of its `initial_memory`; `()` for a model that keeps nothing.
    """

    unit_power_mw: Float[Array, " n_units"]
    line_flow_mw: Float[Array, " n_lines"]
    line_flow_q_mvar: Float[Array, " n_lines"]
    node_injection_mw: Float[Array, " n_nodes"]
    vm: Float[Array, " n_nodes"]
    va: Float[Array, " n_nodes"]
    q_gen: Float[Array, " n_units"]
    thermal: Float[Array, ""]
    n_line_violations: Int[Array, ""]
    voltage: Float[Array, ""]
    n_voltage_violations: Int[Array, ""]
    unserved_mw: Float[Array, ""]
    info: dict[str, Array]
    memory: PyTree = ()


class NetworkModel(eqx.Module):
    """Base of the network models.

    Subclasses hold the arrays they read, implement
    [`solve`][powerzoojax.grid.transmission.NetworkModel.solve] and may override
    `solve_reset`; the class variable `is_ac` says whether the observation carries bus
    voltages. A model of your own goes in with `make_trans_params(case, network_model=...)`.
    """

    is_ac: ClassVar[bool] = False

    @property
    def reads_setpoints(self) -> bool:
        """Whether `solve` uses `inputs.dispatch_mw` (an OPF model sets the dispatch
        itself). When it does not, `TransGridEnv` declares the action's unit entries
        ignored, so a rollout does not compute them."""
        return True

    def initial_memory(self) -> PyTree:
        """What `reset` puts in `GridState.network_memory`: the memory a model carries from
        one step to the next (read back from `inputs.previous`), here none (`()`). Every
        `solve` must return a `memory` of the same structure, since an episode's end swaps
        the reset state in.

        **Returns:**

        A pytree of arrays.
        """
        return ()

    @abc.abstractmethod
    def solve(self, inputs: NetworkInputs) -> NetworkSolution:
        """The step's network solve.

        **Arguments:**

        - `inputs`: the step's [`NetworkInputs`][powerzoojax.grid.transmission.NetworkInputs].

        **Returns:**

        A [`NetworkSolution`][powerzoojax.grid.transmission.NetworkSolution] whose arrays are
        all finite.
        """

    def solve_reset(self, inputs: NetworkInputs) -> NetworkSolution:
        """The solve behind `reset`; here `solve` itself.

        The built-in models override it with a DC power flow of the proportional set-points
        in `inputs`, with flat voltages (`vm = 1`, `va = 0`) and no reactive flows, so an
        OPF's or AC power flow's iterations stay out of `reset` and out of the auto-reset
        branch of every step (where they would be compiled a second time).

        **Arguments:**

        - `inputs`: the reset's inputs (`previous` is `None`).

        **Returns:**

        A [`NetworkSolution`][powerzoojax.grid.transmission.NetworkSolution].
        """
        return self.solve(inputs)


class _Dispatch(eqx.Module):
    """The DC stage of a model: unit outputs with DC flows, load it could not serve, info
    and the memory it keeps for the next step."""

    flow: DCFlow
    unserved_mw: Float[Array, ""]
    info: dict[str, Array]
    memory: PyTree = ()


def _finite(x: Array) -> Array:
    return where(jnp.isfinite(x), x, 0.0)


class DCPowerFlowModel(NetworkModel):
    """DC power flow of the set-points; the slack units take up the imbalance (and give up
    the bundles' injections). Thermal metric: MW beyond `[line_floor, line_cap]`.

    Every built-in model starts its episodes from this model's solve of the proportional
    set-points, so each holds one (`power_flow`).

    **Arguments:**

    - `network`: the case's [`DCNetwork`][powerzoojax.physics.DCNetwork] (its PTDF columns,
      slack weights and line limits; `TransGridParams.with_line_outages` rebuilds it).
    - `nodes_units_map`: `(n_nodes, n_units)` unit-to-bus incidence.
    - `ptdf_nodes_t`: `(n_nodes, n_lines)` transposed PTDF, where resource bundles inject
      at arbitrary buses (`None` without bundles).
    """

    network: DCNetwork
    nodes_units_map: Float[Array, "n_nodes n_units"]
    ptdf_nodes_t: Float[Array, "n_nodes n_lines"] | None = None

    @classmethod
    def of_case(cls, case: CaseData, *, bundles: bool = False) -> "DCPowerFlowModel":
        """The DC power flow of `case`.

        **Arguments:**

        - `case`: the [`CaseData`][powerzoojax.case.CaseData].
        - `bundles`: build the nodal PTDF that resource bundles' injections need.

        **Returns:**

        A `DCPowerFlowModel`.
        """
        ptdf_nodes_t = jnp.asarray(np.asarray(case.ptdf, np.float64).T, jnp.float32) if bundles else None
        return cls(make_dc_network(case), case.nodes_units_map, ptdf_nodes_t)

    @property
    def power_flow(self) -> "DCPowerFlowModel":
        """The model's DC power flow: itself."""
        return self

    def dispatch(self, inputs: NetworkInputs) -> _Dispatch:
        """The DC stage: a DC power flow of the set-points.

        **Arguments:**

        - `inputs`: the step's [`NetworkInputs`][powerzoojax.grid.transmission.NetworkInputs].

        **Returns:**

        The unit outputs with DC flows, zero unserved load and no info.
        """
        net = self.network
        flow = dc_power_flow(net, inputs.dispatch_mw, inputs.load_mw, inputs.load_flow_mw)
        p_bus = inputs.p_bus_mw
        if p_bus is not None:
            if self.ptdf_nodes_t is None:
                raise ValueError(
                    "DCPowerFlowModel: resource bundles inject at buses, which needs the nodal PTDF; "
                    "build the model with DCPowerFlowModel.of_case(case, bundles=True)"
                )
            # Bundle injections displace slack output: the slack units give up Σ p_bus and
            # the flows see the injections at their buses.
            total = jnp.sum(p_bus)
            slack_shift = total * net.slack_unit_weights
            flow = DCFlow(
                unit_power_mw=flow.unit_power_mw - slack_shift,
                line_flow_mw=flow.line_flow_mw - hp.matmul(slack_shift, net.ptdf_units_t) + hp.matmul(p_bus, self.ptdf_nodes_t),
                node_injection_mw=flow.node_injection_mw + p_bus - hp.matmul(self.nodes_units_map, slack_shift),
            )
        return _Dispatch(flow=flow, unserved_mw=jnp.zeros((), jnp.float32), info={})

    def solution(self, stage: _Dispatch, thermal: Array, n_over: Array) -> NetworkSolution:
        """A DC stage's result as a [`NetworkSolution`][powerzoojax.grid.transmission.NetworkSolution]
        with flat voltages and no reactive quantities.

        **Arguments:**

        - `stage`: the DC stage.
        - `thermal`, `n_over`: its overload measure and number of overloaded lines.

        **Returns:**

        The solution.
        """
        n_nodes, n_units = self.nodes_units_map.shape
        n_lines = self.network.line_cap.shape[0]
        flow = stage.flow
        return NetworkSolution(
            unit_power_mw=flow.unit_power_mw,
            line_flow_mw=flow.line_flow_mw,
            line_flow_q_mvar=jnp.zeros((n_lines,), jnp.float32),
            node_injection_mw=flow.node_injection_mw,
            vm=jnp.ones((n_nodes,), jnp.float32),
            va=jnp.zeros((n_nodes,), jnp.float32),
            q_gen=jnp.zeros((n_units,), jnp.float32),
            thermal=thermal,
            n_line_violations=n_over,
            voltage=jnp.zeros((), jnp.float32),
            n_voltage_violations=jnp.asarray(0, jnp.int32),
            unserved_mw=stage.unserved_mw,
            info=stage.info,
            memory=stage.memory,
        )

    def solve(self, inputs: NetworkInputs) -> NetworkSolution:
        stage = self.dispatch(inputs)
        thermal, n_over = dc_thermal_check(stage.flow.line_flow_mw, self.network.line_cap, self.network.line_floor)
        return self.solution(stage, thermal, n_over)


class DCOPFModel(NetworkModel):
    """DC-OPF dispatch (with LMPs) and its flows; the set-points are ignored.

    Info: `opf_status`, `opf_converged`, `opf_objective`, `opf_lambda`, `opf_ok`.

    With `warm_start`, each step's dual simplex starts from the previous step's optimal
    basis (kept in `GridState.network_memory`; an episode's first step starts cold): on
    loads that change little from step to step only the binding lines that changed cost
    pivots. Where the optimum is not unique (tied unit costs) a warm step may reach another
    optimal dispatch than a cold one, at the same cost.

    **Arguments:**

    - `setup`: the [`DCOPFSetup`][powerzoojax.physics.DCOPFSetup].
    - `power_flow`: the case's [`DCPowerFlowModel`][powerzoojax.grid.transmission.DCPowerFlowModel]
      (its network maps loads to buses and holds the line limits; it solves `reset`).
    - `max_iter`: iteration cap (static).
    - `tol`: tolerance (static).
    - `warm_start`: start each step from the last one's basis (static; linear costs with
      monitored lines only, where the dual simplex solves the OPF).
    """

    setup: DCOPFSetup
    power_flow: DCPowerFlowModel
    max_iter: int = eqx.field(static=True, default=30)
    tol: float = eqx.field(static=True, default=1e-4)
    warm_start: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        _check_solver_options("DCOPFModel", self.max_iter, self.tol)

    @classmethod
    def of_case(
        cls,
        case: CaseData,
        *,
        power_flow: DCPowerFlowModel | None = None,
        max_iter: int = 30,
        tol: float = 1e-4,
        objective: str = "linear",
        warm_start: bool | None = None,
        lp_tuning: DispatchLPTuning | None = None,
    ) -> "DCOPFModel":
        """The DC-OPF dispatch of `case`.

        **Arguments:**

        - `case`: the [`CaseData`][powerzoojax.case.CaseData].
        - `power_flow`: its DC power flow (default `DCPowerFlowModel.of_case(case)`).
        - `max_iter`, `tol`: iteration cap and tolerance.
        - `objective`: `"linear"` or `"polynomial"` (see
          [`make_dc_opf_setup`][powerzoojax.physics.make_dc_opf_setup]).
        - `warm_start`: start each step from the previous step's basis; `None`: when the OPF
          monitors at least 16 lines (on fewer a cold start needs only a few pivots).
        - `lp_tuning`: how the dual simplex runs (`None`: per device).

        **Returns:**

        A `DCOPFModel`.
        """
        setup = make_dc_opf_setup(case, objective=objective, lp_tuning=lp_tuning)
        warm = setup.mon_idx.shape[0] >= WARM_START_MIN_LINES if warm_start is None else bool(warm_start)
        flow = DCPowerFlowModel.of_case(case) if power_flow is None else power_flow
        return cls(setup, flow, max_iter=max_iter, tol=tol, warm_start=warm)

    @property
    def _warm(self) -> bool:
        return self.warm_start and self.setup.algorithm == "dual_simplex" and self.setup.mon_idx.shape[0] > 0

    def initial_memory(self) -> PyTree:
        if not self._warm:
            return ()
        return cold_dispatch_basis(self.setup.p_min.shape[0], self.setup.mon_idx.shape[0])

    @property
    def reads_setpoints(self) -> bool:
        return False

    def dispatch(self, inputs: NetworkInputs) -> _Dispatch:
        """The DC stage: the OPF dispatch with its DC flows.

        **Arguments:**

        - `inputs`: the step's [`NetworkInputs`][powerzoojax.grid.transmission.NetworkInputs].

        **Returns:**

        The unit outputs with DC flows, the load the OPF could not serve [MW] and the OPF's
        info.
        """
        net = self.power_flow.network
        node_load = inputs.load_mw if net.loads_are_nodes else hp.matmul(net.loads_to_nodes, inputs.load_mw)
        # The profile row's line flows are tabulated (`PTDF @ load`, per row); bundle
        # injections change them, so with bundles the OPF computes them itself.
        load_flow = inputs.load_flow_mw
        if inputs.p_bus_mw is not None:
            node_load = node_load - inputs.p_bus_mw
            load_flow = None
        start = inputs.previous.network_memory if (self._warm and inputs.previous is not None) else None
        opf = dc_opf(
            self.setup, node_load, load_flow_mw=load_flow, basis=start, max_iter=self.max_iter, tol=self.tol
        )
        flow = DCFlow(unit_power_mw=opf.p_mw, line_flow_mw=opf.line_flow_mw, node_injection_mw=opf.node_injection_mw)
        info = {
            "opf_status": status_code(opf.status),
            "opf_converged": opf.converged,
            "opf_objective": opf.objective,
            "opf_lambda": opf.lambda_balance,
            "opf_ok": opf.status == SolverStatus.successful,
        }
        return _Dispatch(
            flow=flow,
            unserved_mw=jnp.abs(jnp.sum(node_load) - jnp.sum(opf.p_mw)),
            info=info,
            memory=opf.basis if self._warm else (),
        )

    def solve(self, inputs: NetworkInputs) -> NetworkSolution:
        stage = self.dispatch(inputs)
        net, flows = self.power_flow.network, stage.flow.line_flow_mw
        thermal, _ = dc_thermal_check(flows, net.line_cap, net.line_floor)
        # OPF flows sit exactly on binding limits: count beyond 0.01 MW so float32 noise
        # cannot flip is_safe.
        over = jnp.maximum(flows - net.line_cap, 0.0) + jnp.maximum(net.line_floor - flows, 0.0)
        return self.power_flow.solution(stage, thermal, jnp.sum((over > 1e-2).astype(jnp.int32)))

    def solve_reset(self, inputs: NetworkInputs) -> NetworkSolution:
        return self.power_flow.solve(inputs)


class ACCaseData(eqx.Module):
    """What the AC models read of the case besides their solver setup.

    **Arguments:**

    - `load_q_mvar`: `(n_loads,)` reactive loads [MVAr] (the case's Qd, shared evenly among
      the loads of a bus, fixed over time).
    - `v_min`, `v_max`: `(n_nodes,)` voltage limits [p.u.].
    - `rating_mva`: `(n_lines,)` line ratings [MVA] (`|line_cap|`).
    - `failure_cost`: cost charged on `power_balance` when the AC solve does not converge.
    """

    load_q_mvar: Float[Array, " n_loads"]
    v_min: Float[Array, " n_nodes"]
    v_max: Float[Array, " n_nodes"]
    rating_mva: Float[Array, " n_lines"]
    failure_cost: Float[Array, ""]

    @classmethod
    def of_case(cls, case: CaseData, *, failure_cost: float = 100.0) -> "ACCaseData":
        """The AC data of `case`.

        **Arguments:**

        - `case`: the [`CaseData`][powerzoojax.case.CaseData].
        - `failure_cost`: cost of a step whose AC solve does not converge.

        **Returns:**

        An `ACCaseData`.
        """
        failure_cost = finite_scalar("ACCaseData.of_case", "failure_cost", failure_cost, non_negative=True)
        node_qd = np.asarray(case.node_qd, np.float64)
        load_node = np.asarray(case.load_node_idx)
        n_at_bus = np.bincount(load_node, minlength=case.n_nodes).astype(np.float64)
        f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
        return cls(
            load_q_mvar=f32(node_qd[load_node] / np.maximum(n_at_bus[load_node], 1.0)),
            v_min=f32(case.node_v_min),
            v_max=f32(case.node_v_max),
            rating_mva=jnp.abs(case.line_cap),
            failure_cost=f32(failure_cost),
        )


class ACPowerFlowModel(NetworkModel):
    """AC power flow (PV→PQ switching at the Q limits) on the unit outputs of a DC stage.

    The DC stage is [`DCPowerFlowModel`][powerzoojax.grid.transmission.DCPowerFlowModel]
    (the agent's set-points, slack balanced in DC) or
    [`DCOPFModel`][powerzoojax.grid.transmission.DCOPFModel] (the OPF dispatch; its info is
    kept). Thermal metric `max(|S_from|, |S_to|)` beyond the rating; a solve that does not
    converge costs `ac.failure_cost` on `power_balance` and counts as a voltage
    violation. Generator Q schedules and bundle Q are not modelled. Info: `pf_converged`,
    `pf_n_iter`, `pf_max_mismatch`.

    **Arguments:**

    - `network`: the [`ACNetwork`][powerzoojax.physics.ACNetwork].
    - `dispatch_model`: the DC stage.
    - `ac`: the case's [`ACCaseData`][powerzoojax.grid.transmission.ACCaseData].
    - `max_iter`: iteration cap (static).
    - `tol`: mismatch tolerance [p.u.] (static).
    - `method`: `"fdlf"`, `"fdlf_only"` or `"newton"`, as in
      [`ac_power_flow`][powerzoojax.physics.ac_power_flow] (static).
    - `warm_start`: start from the previous state's voltages and PV→PQ switches (see
      [`warm_start_from`][powerzoojax.grid.transmission.ACPowerFlowModel.warm_start_from])
      (static).
    - `newton_step`: `"auto"`, `"dense"` or `"krylov"`, the Newton step of
      [`ac_power_flow`][powerzoojax.physics.ac_power_flow] (static).
    """

    network: ACNetwork
    dispatch_model: DCPowerFlowModel | DCOPFModel
    ac: ACCaseData
    max_iter: int = eqx.field(static=True, default=30)
    tol: float = eqx.field(static=True, default=1e-5)
    method: str = eqx.field(static=True, default="fdlf")
    warm_start: bool = eqx.field(static=True, default=False)
    newton_step: str = eqx.field(static=True, default="auto")
    is_ac: ClassVar[bool] = True

    def __check_init__(self):
        _check_solver_options("ACPowerFlowModel", self.max_iter, self.tol)
        if self.method not in AC_PF_METHODS:
            raise ValueError(f"ACPowerFlowModel: method must be one of {AC_PF_METHODS}, got {self.method!r}")
        if self.newton_step not in NEWTON_STEPS:
            raise ValueError(f"ACPowerFlowModel: newton_step must be one of {NEWTON_STEPS}, got {self.newton_step!r}")

    @classmethod
    def of_case(
        cls,
        case: CaseData,
        dispatch_model: DCPowerFlowModel | DCOPFModel | None = None,
        *,
        max_iter: int = 30,
        tol: float = 1e-5,
        method: str = "fdlf",
        warm_start: bool = False,
        failure_cost: float = 100.0,
    ) -> "ACPowerFlowModel":
        """The AC power flow of `case` on `dispatch_model`'s unit outputs.

        **Arguments:**

        - `case`: the [`CaseData`][powerzoojax.case.CaseData].
        - `dispatch_model`: the DC stage (default `DCPowerFlowModel.of_case(case)`).
        - `max_iter`, `tol`, `method`, `warm_start`: as the fields.
        - `failure_cost`: cost of a step whose power flow does not converge.

        **Returns:**

        An `ACPowerFlowModel`.
        """
        stage = DCPowerFlowModel.of_case(case) if dispatch_model is None else dispatch_model
        return cls(
            make_ac_network(case), stage, ACCaseData.of_case(case, failure_cost=failure_cost),
            max_iter=max_iter, tol=tol, method=method, warm_start=bool(warm_start),
        )

    @property
    def reads_setpoints(self) -> bool:
        return self.dispatch_model.reads_setpoints

    def initial_memory(self) -> PyTree:
        return self.dispatch_model.initial_memory()

    def warm_start_from(self, state: PreviousState) -> tuple[Array, Array, Array]:
        """Initial voltages and PV→PQ switches from the previous step's state.

        The state holds no switch flags: a PV bus is switched iff its voltage left the set
        point (unswitched PV voltages are pinned to it exactly), at the limit its generated Q
        is nearer to. A state with voltages outside [0.8, 1.2] p.u. (a failed solve) starts
        flat instead. With Q limits the result may then differ from the cold solve (a bus at a
        limit near its switching point).

        **Arguments:**

        - `state`: the previous step's [`GridState`][powerzoojax.grid.transmission.GridState].

        **Returns:**

        `(vm, va, pv_limit)`: `(n_nodes,)` magnitudes [p.u.], angles [rad] and the int switch
        side (+1 / -1 / 0).
        """
        net = self.network
        sane = jnp.all((state.vm > 0.8) & (state.vm < 1.2))
        switched = net.is_pv & (state.vm != net.v_set) & sane
        bus_q = hp.matmul(self.dispatch_model.power_flow.nodes_units_map, state.q_gen)
        at_max = bus_q >= 0.5 * (net.q_min_mvar + net.q_max_mvar)
        side = where(switched, where(at_max, 1, -1), 0).astype(jnp.int32)
        vm = where(sane, state.vm, 1.0)
        va = where(sane, state.va, net.va_ref)
        return vm, va, side

    def solve(self, inputs: NetworkInputs) -> NetworkSolution:
        stage = self.dispatch_model.dispatch(inputs)
        ac = self.ac
        load_p, load_q = inputs.load_mw, ac.load_q_mvar
        if inputs.p_bus_mw is not None:
            # One load per bus in bus order (checked in make_trans_params): injections are
            # negative load; bundle Q is ignored.
            load_p = inputs.load_mw - inputs.p_bus_mw
        init_vm, init_va, init_pv_limit = (
            self.warm_start_from(inputs.previous)
            if (inputs.previous is not None and self.warm_start)
            else (None, None, None)
        )
        pf = ac_power_flow(
            self.network, stage.flow.unit_power_mw, None, load_p, load_q,
            init_vm=init_vm, init_va=init_va, init_pv_limit=init_pv_limit,
            max_iter=self.max_iter, tol=self.tol, method=self.method, newton_step=self.newton_step,
        )
        zero = jnp.zeros((), jnp.float32)
        # A failed solve's last iterate is not a physical state (voltages of -3 p.u. were
        # seen), and the state feeds the observation: the step then reports the DC stage's
        # flows with flat voltages (set-points at PV buses, 1 p.u. elsewhere, the slack's
        # angle), flagged by ``pf_converged`` and charged ``ac.failure_cost``.
        ok = pf.converged
        net = self.network
        flat_vm = where(net.is_pv | (jnp.arange(net.is_pv.shape[0]) == net.slack_idx), net.v_set, 1.0)
        flat_va = jnp.broadcast_to(net.va_ref, flat_vm.shape)
        dc = stage.flow
        line_p = where(ok, _finite(pf.line_p_from_mw), dc.line_flow_mw)
        line_q = where(ok, _finite(pf.line_q_from_mvar), 0.0)
        loading = where(ok, _finite(pf.line_loading_mva), jnp.abs(dc.line_flow_mw))
        thermal_v = jnp.maximum(loading - ac.rating_mva, 0.0)
        vm = where(ok, _finite(pf.vm), flat_vm)
        va = where(ok, _finite(pf.va), flat_va)
        over = jnp.maximum(vm - ac.v_max, 0.0) + jnp.maximum(ac.v_min - vm, 0.0)
        info = {
            **stage.info,
            "pf_converged": pf.converged,
            "pf_n_iter": pf.n_iter,
            "pf_max_mismatch": _finite(pf.max_mismatch),
        }
        failure = where(pf.converged, zero, ac.failure_cost)
        return NetworkSolution(
            unit_power_mw=stage.flow.unit_power_mw,
            line_flow_mw=line_p,
            line_flow_q_mvar=line_q,
            node_injection_mw=where(ok, _finite(pf.p_inj_mw), dc.node_injection_mw),
            vm=vm,
            va=va,
            q_gen=where(ok, _finite(pf.unit_q_mvar), 0.0),
            thermal=jnp.sum(thermal_v),
            n_line_violations=jnp.sum((thermal_v > 0).astype(jnp.int32)),
            voltage=jnp.sum(over),
            n_voltage_violations=jnp.sum((over > 0).astype(jnp.int32)) + (~pf.converged).astype(jnp.int32),
            unserved_mw=stage.unserved_mw + failure,
            info=info,
            memory=stage.memory,
        )

    def solve_reset(self, inputs: NetworkInputs) -> NetworkSolution:
        return self.dispatch_model.power_flow.solve(inputs)


class ACOPFModel(NetworkModel):
    """AC-OPF (in-graph primal–dual interior point in float32) setting dispatch, voltages and
    flows; the set-points are ignored; reactive loads are the case's Qd.

    Thermal metric `|S_from|` beyond the rating. `reset` starts from proportional
    dispatch, a DC power flow and flat voltages, as every built-in mode does. Info:
    `opf_converged`, `opf_status` (0 optimal, 1 not converged), `opf_objective` [$/h],
    `opf_max_mismatch` [p.u.], `pf_converged` (the OPF's own power-flow solution),
    `line_viol_mva` (Σ MVA beyond the rating at either end). Differentiable w.r.t. the
    loads through [`ac_opf`][powerzoojax.physics.ac_opf]'s derivative.

    **Arguments:**

    - `setup`: the [`ACOPFSetup`][powerzoojax.physics.ACOPFSetup].
    - `power_flow`: the case's [`DCPowerFlowModel`][powerzoojax.grid.transmission.DCPowerFlowModel]
      (its network maps loads to buses; it solves `reset`).
    - `ac`: the case's [`ACCaseData`][powerzoojax.grid.transmission.ACCaseData].
    - `max_iter`: iteration cap (static).
    - `tol`: tolerance on the scaled KKT error (static).
    """

    setup: ACOPFSetup
    power_flow: DCPowerFlowModel
    ac: ACCaseData
    max_iter: int = eqx.field(static=True, default=50)
    tol: float = eqx.field(static=True, default=1e-4)
    is_ac: ClassVar[bool] = True

    def __check_init__(self):
        _check_solver_options("ACOPFModel", self.max_iter, self.tol)

    @classmethod
    def of_case(
        cls,
        case: CaseData,
        *,
        power_flow: DCPowerFlowModel | None = None,
        max_iter: int = 50,
        tol: float = 1e-4,
        failure_cost: float = 100.0,
    ) -> "ACOPFModel":
        """The AC-OPF of `case` (float32 operators, like the env).

        **Arguments:**

        - `case`: the [`CaseData`][powerzoojax.case.CaseData].
        - `power_flow`: its DC power flow (default `DCPowerFlowModel.of_case(case)`).
        - `max_iter`, `tol`: iteration cap and tolerance (on PIPS' scaled KKT error).
        - `failure_cost`: cost of a step whose AC-OPF does not converge.

        **Returns:**

        An `ACOPFModel`.
        """
        flow = DCPowerFlowModel.of_case(case) if power_flow is None else power_flow
        return cls(
            make_ac_opf_setup(case, dtype=jnp.float32), flow, ACCaseData.of_case(case, failure_cost=failure_cost),
            max_iter=max_iter, tol=tol,
        )

    @property
    def reads_setpoints(self) -> bool:
        return False

    def solve(self, inputs: NetworkInputs) -> NetworkSolution:
        net, ac = self.power_flow.network, self.ac
        node_p = inputs.load_mw if net.loads_are_nodes else hp.matmul(net.loads_to_nodes, inputs.load_mw)
        node_q = ac.load_q_mvar if net.loads_are_nodes else hp.matmul(net.loads_to_nodes, ac.load_q_mvar)
        if inputs.p_bus_mw is not None:
            node_p = node_p - inputs.p_bus_mw  # bundle Q is ignored
        # Differentiable w.r.t. the loads (the resources' injections) through ac_opf's KKT
        # rule; zero where the solve misses `tol`, a step that also pays ac.failure_cost.
        opf = ac_opf(self.setup, node_p, node_q, max_iter=self.max_iter, tol=self.tol)
        zero = jnp.zeros((), jnp.float32)
        # A failed solve keeps its best iterate (finite by construction); _finite guards
        # the outputs anyway so that nothing non-finite can reach the state.
        p = _finite(opf.p_mw)
        s_from, s_to = _finite(opf.line_s_from_mva), _finite(opf.line_s_to_mva)
        cap = ac.rating_mva
        thermal_v = jnp.maximum(s_from - cap, 0.0)
        vm = _finite(opf.vm)
        over = jnp.maximum(vm - ac.v_max, 0.0) + jnp.maximum(ac.v_min - vm, 0.0)
        converged = opf.converged
        # No iteration count in info: in float32 the interior point's last iterations are
        # round-off driven, so a vmapped and a single solve of one instance may stop one
        # iteration apart (a count reported would go in the env's iteration_count_keys).
        info = {
            "opf_converged": converged,
            "opf_status": where(converged, 0, 1).astype(jnp.int32),
            "opf_objective": _finite(opf.objective),
            "opf_max_mismatch": _finite(opf.max_mismatch),
            "pf_converged": converged,
            "line_viol_mva": jnp.sum(jnp.maximum(jnp.maximum(s_from, s_to) - cap, 0.0)),
        }
        return NetworkSolution(
            unit_power_mw=p,
            line_flow_mw=_finite(opf.line_p_from_mw),
            line_flow_q_mvar=_finite(opf.line_q_from_mvar),
            node_injection_mw=hp.matmul(self.power_flow.nodes_units_map, p) - node_p,
            vm=vm,
            va=_finite(opf.va),
            q_gen=_finite(opf.q_mvar),
            thermal=jnp.sum(thermal_v),
            n_line_violations=jnp.sum((thermal_v > 1e-2).astype(jnp.int32)),
            voltage=jnp.sum(over),
            n_voltage_violations=jnp.sum((over > 1e-5).astype(jnp.int32)) + (~converged).astype(jnp.int32),
            unserved_mw=where(converged, zero, ac.failure_cost),
            info=info,
        )

    def solve_reset(self, inputs: NetworkInputs) -> NetworkSolution:
        return self.power_flow.solve(inputs)
