"""The physical laws a transmission step obeys, as host-side checks on recorded rollouts.

Each law is recomputed in float64 from the case's own matrices (PTDF, bus admittance
matrix) and the recorded state, so it checks the compiled step against an independent
evaluation rather than against itself. Laws about the post-step physics skip terminal
steps, whose returned state is already the next episode's reset.
"""

import numpy as np

from powerzoojax.case import build_ybus
from powerzoojax.core import Invariant, Trajectory, not_terminal
from powerzoojax.grid.resources._invariants import bundle_laws
from powerzoojax.physics import SolverStatus, status_code


def _dcopf_optimal(opf_status) -> np.ndarray:
    """Whether each recorded `opf_status` is the code of an optimal DC-OPF step. The code is
    read when a law runs, not at import: importing the library must not start JAX's backend."""
    return np.asarray(opf_status) == int(status_code(SolverStatus.successful))


# A line whose rating is this large or more is unlimited (the case data's convention).
_UNLIMITED_MW = 1e5


def _unit_limit_excess(traj: Trajectory, params, applies: np.ndarray) -> np.ndarray:
    case = params.case
    p = np.asarray(traj.next_state.unit_power_mw, np.float64)
    p_min = np.asarray(case.unit_p_min, np.float64)
    p_max = np.asarray(case.unit_p_max, np.float64)
    excess = np.maximum(np.maximum(p_min - p, p - p_max), 0.0) / np.maximum(1.0, p_max)
    return not_terminal(traj, np.where(applies, excess.max(axis=1), np.nan))


def _outage_case(params):
    """The case as the params see it: with the lines of `with_line_outages` opened, rebuilt
    on the host (an independent route to the PTDF the env corrects in-graph); None when
    the outage islands buses (the flows are then not physical)."""
    out = np.asarray(getattr(params, "line_out", np.zeros(0, bool)), bool)
    if not out.any():
        return params.case
    if bool(np.asarray(params.islanded)):
        return None
    status = np.where(out, 0, np.asarray(params.case.line_status))
    return params.case.with_line_status(status)


def dc_laws(params, *, balanced_when_optimal: bool = False) -> tuple[Invariant, ...]:
    """DC power flow: injections balance and flows are PTDF times injections (of the case
    with any line outages of the params). After a DC-OPF (`balanced_when_optimal`) the
    balance holds on OPTIMAL steps only: an infeasible load is reported unserved."""
    case = _outage_case(params)
    if case is None:
        return ()
    ptdf = np.asarray(case.ptdf, np.float64)

    def balance(traj: Trajectory, params) -> np.ndarray:
        inj = np.asarray(traj.next_state.node_injection_mw, np.float64)
        r = np.abs(inj.sum(axis=1)) / (1.0 + np.abs(inj).sum(axis=1))
        if balanced_when_optimal:
            r = np.where(_dcopf_optimal(traj.info["opf_status"]), r, np.nan)
        return not_terminal(traj, r)

    def flows(traj: Trajectory, params) -> np.ndarray:
        inj = np.asarray(traj.next_state.node_injection_mw, np.float64)
        expected = inj @ ptdf.T
        got = np.asarray(traj.next_state.line_flow_mw, np.float64)
        return not_terminal(traj, np.abs(got - expected).max(axis=1) / (1.0 + np.abs(expected).max(axis=1)))

    return (
        Invariant("dc_power_balance", balance, 1e-5, "Σ nodal injections = 0 (relative to Σ|injection|)"),
        Invariant("dc_flows_are_ptdf_injections", flows, 1e-4, "line flows = PTDF · injections (relative to the largest flow)"),
    )


def dcopf_laws(params, *, dc_flows: bool) -> tuple[Invariant, ...]:
    """A DC-OPF step that reports OPTIMAL keeps every unit inside its limits and, with DC
    flows, every rated line inside its rating."""
    cap = np.asarray(params.case.line_cap, np.float64)
    rated = (cap < _UNLIMITED_MW) & ~np.asarray(getattr(params, "line_out", np.zeros(cap.shape, bool)), bool)

    def optimal(traj: Trajectory) -> np.ndarray:
        return _dcopf_optimal(traj.info["opf_status"])

    def units(traj: Trajectory, params) -> np.ndarray:
        return _unit_limit_excess(traj, params, optimal(traj))

    def lines(traj: Trajectory, params) -> np.ndarray:
        flow = np.abs(np.asarray(traj.next_state.line_flow_mw, np.float64))
        excess = np.where(rated, np.maximum(flow - cap, 0.0) / np.maximum(cap, 1.0), 0.0).max(axis=1)
        return not_terminal(traj, np.where(optimal(traj), excess, np.nan))

    laws = [Invariant("opf_unit_limits", units, 1e-3, "OPTIMAL dispatch within [p_min, p_max] (fraction of p_max)")]
    if dc_flows and rated.any():
        laws.append(Invariant("opf_line_limits", lines, 1e-3, "OPTIMAL dispatch keeps rated lines within their rating (fraction)"))
    return tuple(laws)


def ac_laws(params) -> tuple[Invariant, ...]:
    """A converged AC power flow satisfies the bus power equations S = V·conj(Y·V): the
    active injections it reports at every bus, the dispatch minus the load at every bus
    but the slack (whose unit takes up the losses, uncosted), and the units' reactive
    output minus the reactive load everywhere."""
    case = params.case
    ybus = build_ybus(case)
    base = float(case.base_mva)
    units_to_nodes = np.asarray(case.nodes_units_map, np.float64)
    loads_to_nodes = np.asarray(case.nodes_loads_map, np.float64)
    load_q = np.zeros(case.n_loads) if params.load_q_mvar is None else np.asarray(params.load_q_mvar, np.float64)
    not_slack = np.arange(case.n_nodes) != int(case.slack_bus_idx)

    def mismatch(traj: Trajectory, params) -> np.ndarray:
        s = traj.next_state
        v = np.asarray(s.vm, np.float64) * np.exp(1j * np.asarray(s.va, np.float64))
        s_calc = v * np.conj(v @ ybus.T) * base
        profiles = np.asarray(params.load_profiles, np.float64)
        load_p = profiles[np.asarray(traj.state.time_step) % profiles.shape[0]]
        p_inj = np.asarray(s.node_injection_mw, np.float64)
        p_spec = np.asarray(s.unit_power_mw, np.float64) @ units_to_nodes.T - load_p @ loads_to_nodes.T
        q_spec = np.asarray(s.q_gen, np.float64) @ units_to_nodes.T - load_q @ loads_to_nodes.T
        err = np.maximum.reduce([
            np.abs(s_calc.real - p_inj).max(axis=1),
            np.abs(p_inj - p_spec)[:, not_slack].max(axis=1, initial=0.0),
            np.abs(s_calc.imag - q_spec).max(axis=1),
        ]) / base
        converged = np.asarray(traj.info["pf_converged"], bool)
        return not_terminal(traj, np.where(converged, err, np.nan))

    return (Invariant("ac_power_balance", mismatch, 1e-3, "converged bus power mismatch |S(V) − S_spec| [p.u.]"),)


def unit_commitment_laws(params) -> tuple[Invariant, ...]:
    """A decommitted unit produces nothing; committed units stay within [p_min, p_max]
    (with the DC-OPF on OPTIMAL steps; with the proportional dispatch, `solver_mode=0`,
    every unit but the slack-bus units, which take up the imbalance unclamped); with
    commitment on, no unit switches off before its minimum up time or on before its
    minimum down time."""
    case = params.case
    p_min = np.asarray(case.unit_p_min, np.float64)
    p_max = np.asarray(case.unit_p_max, np.float64)
    # Units whose limits the dispatch enforces: all under the DC-OPF; under the proportional
    # dispatch the slack-bus units balance the network beyond theirs.
    enforced = np.ones(p_min.shape, bool) if params.solver_mode == 1 else np.asarray(params.network.slack_unit_weights) == 0

    def off_units(traj: Trajectory, params) -> np.ndarray:
        s = traj.next_state
        p = np.abs(np.asarray(s.unit_power_mw, np.float64))
        off = np.asarray(s.unit_status) == 0
        return not_terminal(traj, np.where(off, p, 0.0).max(axis=1) / (1.0 + p_max.max()))

    def committed_limits(traj: Trajectory, params) -> np.ndarray:
        s = traj.next_state
        p = np.asarray(s.unit_power_mw, np.float64)
        on = np.asarray(s.unit_status) > 0
        excess = np.where(on & enforced, np.maximum(np.maximum(p_min - p, p - p_max), 0.0) / np.maximum(1.0, p_max), 0.0)
        applies = _dcopf_optimal(traj.info["opf_status"]) if params.solver_mode == 1 else True
        return not_terminal(traj, np.where(applies, excess.max(axis=1), np.nan))

    min_up = np.asarray(params.min_up_steps)
    min_down = np.asarray(params.min_down_steps)

    def min_times(traj: Trajectory, params) -> np.ndarray:
        was_on = np.asarray(traj.state.unit_status) > 0
        now_on = np.asarray(traj.next_state.unit_status) > 0
        spent = np.asarray(traj.state.time_in_state)
        early = (was_on & ~now_on & (spent < min_up)) | (~was_on & now_on & (spent < min_down))
        return not_terminal(traj, early.sum(axis=1).astype(np.float64))

    laws = [
        Invariant("uc_off_units_idle", off_units, 1e-5, "decommitted units at 0 MW (fraction of the largest p_max)"),
        Invariant("uc_committed_unit_limits", committed_limits, 1e-3, "committed units within [p_min, p_max] (DC-OPF: OPTIMAL steps; else not the slack units)"),
    ]
    if params.enable_uc:
        laws.append(Invariant("uc_min_up_down", min_times, 0.5, "units switched before their minimum up / down time [units]"))
    return tuple(laws)


def trans_grid_laws(params) -> tuple[Invariant, ...]:
    """The laws of a [`TransGridEnv`][powerzoojax.grid.transmission.TransGridEnv] step under
    `params`: those of its network model (none for a custom model, and none with resource
    bundles, whose injections the recorded state does not separate from the units'), and
    each bundle's own laws."""
    return _network_laws(params) + bundle_laws(params.resources)


def _network_laws(params) -> tuple[Invariant, ...]:
    from powerzoojax.grid.transmission._network_models import (
        ACPowerFlowModel,
        DCOPFModel,
        DCPowerFlowModel,
    )

    if params.resources:
        return ()
    model = params.network_model
    if isinstance(model, DCPowerFlowModel):
        return dc_laws(params)
    if isinstance(model, DCOPFModel):
        return dc_laws(params, balanced_when_optimal=True) + dcopf_laws(params, dc_flows=True)
    if isinstance(model, ACPowerFlowModel):
        dispatch = dcopf_laws(params, dc_flows=False) if isinstance(model.dispatch_model, DCOPFModel) else ()
        return ac_laws(params) + dispatch
    return ()
