"""The laws a market step obeys, as host-side checks on recorded rollouts (float64): the
battery market envs' and the GenCos market's."""

import numpy as np

from powerzoojax.core import Invariant, Trajectory, not_terminal
from powerzoojax.physics import SolverStatus, status_code

# A line is congested when its flow is within this fraction of its rating.
_CONGESTED_FRACTION = 0.999


def market_laws(params) -> tuple[Invariant, ...]:
    """Battery state of charge inside its band; an OPTIMAL clearing dispatches exactly the
    demand net of the battery, and without a congested line every bus has one price."""
    loads_to_nodes = np.asarray(params.nodes_loads_map, np.float64)
    cap = np.asarray(params.sced_setup.line_cap, np.float64)
    floor = np.asarray(params.sced_setup.line_floor, np.float64)

    def soc(traj: Trajectory, params) -> np.ndarray:
        s = np.asarray(traj.next_state.battery_soc, np.float64)
        lo, hi = float(params.battery_soc_min), float(params.battery_soc_max)
        return np.maximum(np.maximum(lo - s, s - hi), 0.0)

    def optimal(traj: Trajectory) -> np.ndarray:
        return np.asarray(traj.info["sced_status"]) == int(status_code(SolverStatus.successful))

    def balance(traj: Trajectory, params) -> np.ndarray:
        profiles = np.asarray(params.load_profiles, np.float64)
        demand = (profiles[np.asarray(traj.state.time_step) % profiles.shape[0]] @ loads_to_nodes.T).sum(axis=1)
        net = demand - np.asarray(traj.info["realized_p_mw"], np.float64)
        supplied = np.asarray(traj.next_state.unit_power_mw, np.float64).sum(axis=1)
        return not_terminal(traj, np.where(optimal(traj), np.abs(supplied - net) / (1.0 + np.abs(net)), np.nan))

    def one_price(traj: Trajectory, params) -> np.ndarray:
        flow = np.asarray(traj.next_state.line_flow_mw, np.float64)
        congested = ((flow >= _CONGESTED_FRACTION * cap) | (flow <= _CONGESTED_FRACTION * floor)).any(axis=1)
        lmp = np.asarray(traj.next_state.lmp, np.float64)
        spread = (lmp.max(axis=1) - lmp.min(axis=1)) / (1.0 + np.abs(lmp).max(axis=1))
        return not_terminal(traj, np.where(optimal(traj) & ~congested, spread, np.nan))

    return (
        Invariant("battery_soc_bounds", soc, 1e-5, "battery SOC within [soc_min, soc_max]"),
        Invariant("market_balance", balance, 1e-4, "OPTIMAL: Σ dispatch = demand − battery output (relative)"),
        Invariant("uncongested_single_price", one_price, 1e-4, "OPTIMAL, no line at its rating: one LMP at every bus (relative)"),
    )


def gencos_laws(params) -> tuple[Invariant, ...]:
    """The GenCos market round's laws: an OPTIMAL clearing dispatches exactly the demand of
    the round's profile row, keeps every unit inside its ramp window around its previous
    output, and without a congested line prices every bus alike."""
    setup = params.offer_sced_setup
    loads_to_nodes = np.asarray(params.nodes_loads_map, np.float64)
    p_min = np.asarray(setup.p_min, np.float64)
    p_max = np.asarray(setup.p_max, np.float64)
    ramp_up = np.asarray(params.ramp_up_mw_per_step, np.float64)
    ramp_down = np.asarray(params.ramp_down_mw_per_step, np.float64)
    cap = np.asarray(setup.line_cap, np.float64)
    floor = np.asarray(setup.line_floor, np.float64)

    def optimal(traj: Trajectory) -> np.ndarray:
        return np.asarray(traj.info["sced_status"]) == int(status_code(SolverStatus.successful))

    def balance(traj: Trajectory, params) -> np.ndarray:
        profiles = np.asarray(params.load_profiles, np.float64)
        rows = (np.asarray(traj.state.episode_start_idx) + np.asarray(traj.state.time_step)) % profiles.shape[0]
        demand = (profiles[rows] @ loads_to_nodes.T).sum(axis=1)
        supplied = np.asarray(traj.info["unit_power"], np.float64).sum(axis=1)
        return np.where(optimal(traj), np.abs(supplied - demand) / (1.0 + demand), np.nan)

    def ramps(traj: Trajectory, params) -> np.ndarray:
        before = np.asarray(traj.state.unit_power_mw, np.float64)
        p = np.asarray(traj.info["unit_power"], np.float64)
        low = np.maximum(p_min, before - ramp_down)
        high = np.minimum(p_max, before + ramp_up)
        excess = np.maximum(np.maximum(low - p, p - high), 0.0) / (1.0 + p_max)
        return np.where(optimal(traj), excess.max(axis=1), np.nan)

    def one_price(traj: Trajectory, params) -> np.ndarray:
        flow = np.asarray(traj.next_state.line_flow_mw, np.float64)
        congested = ((flow >= _CONGESTED_FRACTION * cap) | (flow <= _CONGESTED_FRACTION * floor)).any(axis=1)
        lmp = np.asarray(traj.next_state.lmp, np.float64)
        spread = (lmp.max(axis=1) - lmp.min(axis=1)) / (1.0 + np.abs(lmp).max(axis=1))
        return not_terminal(traj, np.where(optimal(traj) & ~congested, spread, np.nan))

    return (
        Invariant("market_balance", balance, 1e-4, "OPTIMAL: Σ dispatch = demand of the round's row (relative)"),
        Invariant("ramp_window", ramps, 1e-4, "OPTIMAL: max(p_min, P_prev − ramp_down) ≤ P ≤ min(p_max, P_prev + ramp_up) (fraction of p_max)"),
        Invariant("uncongested_single_price", one_price, 1e-4, "OPTIMAL, no line at its rating: one LMP at every bus (relative)"),
    )
