"""The laws a data-centre step and a data-centre microgrid step obey, checked on recorded
rollouts (float64).

The data centre's laws read its state through an accessor, so the microgrid, which
carries the data centre as `state.dc` with params `params.dc`, is held to the same
ones as the standalone env.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from powerzoojax.core import Invariant, Trajectory, not_terminal
from powerzoojax.grid.microgrid._scheduler import RUNNING, WAITING
from powerzoojax.grid.microgrid._zone_band import T_ZONE_MAX, T_ZONE_MIN
from powerzoojax.grid.resources._invariants import (
    POWER_TOL,
    SOC_TOL,
    diesel_range_excess,
    outside,
    per_step,
    soc_excess,
    stored_energy_error,
)

_T_ZONE = (T_ZONE_MIN, T_ZONE_MAX)


def _f64(x: Any) -> np.ndarray:
    return np.asarray(x, np.float64)


def _identity(x: Any) -> Any:
    return x


def _cop(t_outdoor: np.ndarray, p: Any) -> np.ndarray:
    """The chiller's COP at `t_outdoor`: `cop_ref · clip(1 − decay·max(T_out − t_ref, 0), 0.4, 1.2)`."""
    derate = np.clip(1.0 - _f64(p.cop_decay) * np.maximum(t_outdoor - _f64(p.t_ref), 0.0), 0.4, 1.2)
    return _f64(p.cop_ref) * derate


def datacenter_laws(
    dc_state: Callable[[Any], Any] = _identity, dc_params: Callable[[Any], Any] = _identity
) -> tuple[Invariant, ...]:
    """The data centre's laws; `dc_state` / `dc_params` pick its state and params out of
    the env's (the identity for [`DataCenterEnv`][powerzoojax.grid.DataCenterEnv]).

    * the zone stays inside the model's band [15, 45] °C;
    * the chiller removes `Q = ua · max(T_zone − T_set, 0)` [kW] and draws `Q / COP(T_out)`;
    * the zone's heat balance `T' = clip(T + Δt (1000 P_it − Q + h_wall (T_out − T)) / C)`;
    * the site draws `P_it (1 + p_aux) + P_cool`;
    * no task is lost: arrived = waiting + running + finished + expired + dropped.
    """

    def states(traj: Trajectory) -> tuple[Any, Any]:
        return dc_state(traj.state), dc_state(traj.next_state)

    def band(traj: Trajectory, params: Any) -> np.ndarray:
        t_zone = _f64(dc_state(traj.next_state).t_zone)
        return outside(t_zone, *_T_ZONE)

    def removed_heat(s0: Any, s1: Any, p: Any) -> np.ndarray:
        return _f64(p.ua_cooling_kw_per_c) * np.maximum(_f64(s0.t_zone) - _f64(s1.t_setpoint), 0.0)

    def chiller(traj: Trajectory, params: Any) -> np.ndarray:
        s0, s1 = states(traj)
        p = dc_params(params)
        q_cool = removed_heat(s0, s1, p)
        drawn = 1000.0 * _f64(s1.p_cool_mw) * _cop(_f64(s1.t_outdoor), p)
        return not_terminal(traj, np.abs(drawn - q_cool) / (1.0 + q_cool))

    def heat_balance(traj: Trajectory, params: Any) -> np.ndarray:
        s0, s1 = states(traj)
        p = dc_params(params)
        t0 = _f64(s0.t_zone)
        heat_kw = 1000.0 * _f64(s1.p_it_mw) - removed_heat(s0, s1, p) + _f64(p.h_wall_kw_per_c) * (_f64(s1.t_outdoor) - t0)
        expected = np.clip(t0 + float(p.delta_t_hours) * heat_kw / _f64(p.c_thermal_kwh_per_c), *_T_ZONE)
        return not_terminal(traj, np.abs(_f64(s1.t_zone) - expected))

    def site_power(traj: Trajectory, params: Any) -> np.ndarray:
        _, s1 = states(traj)
        p = dc_params(params)
        demand = _f64(s1.p_it_mw) * (1.0 + _f64(p.p_aux_frac)) + _f64(s1.p_cool_mw)
        return not_terminal(traj, np.abs(-_f64(s1.current_p_mw) - demand) / (1.0 + demand))

    def tasks(traj: Trajectory, params: Any) -> np.ndarray:
        s = dc_state(traj.next_state)
        status = np.asarray(s.task_status)
        held = (status == WAITING).sum(axis=1) + (status == RUNNING).sum(axis=1)
        gone = np.asarray(s.n_finished) + np.asarray(s.sla_violations) + np.asarray(s.n_dropped)
        return np.abs(np.asarray(s.n_arrived) - held - gone).astype(np.float64)

    return (
        Invariant("zone_temperature_bounds", band, 1e-4, "zone temperature within [15, 45] °C"),
        Invariant("chiller_cop", chiller, 1e-4, "1000·P_cool·COP(T_out) = ua·max(T_zone − T_set, 0) (relative)"),
        Invariant("zone_heat_balance", heat_balance, 1e-3, "T' = clip(T + Δt·net heat / C, 15, 45) [°C]"),
        Invariant("site_power", site_power, 1e-5, "drawn power = P_it (1 + p_aux) + P_cool (relative)"),
        Invariant("task_bookkeeping", tasks, 0.5, "arrived = waiting + running + finished + expired + dropped [tasks]"),
    )


def dc_microgrid_laws() -> tuple[Invariant, ...]:
    """[`DataCenterMicrogridEnv`][powerzoojax.grid.DataCenterMicrogridEnv]'s laws: the data centre's, then

    * battery SOC inside its band, its change equal to the energy the battery moved, and
      the battery within its rating;
    * power balance at the point of common coupling, `P_pv + P_dg + P_batt + P_grid +
      deficit = P_load + spill`;
    * the dispatch order there: import only to cover a shortfall and up to its cap, load
      shed only with the import at its cap, surplus spilled only with no import, never
      both shed and spilled;
    * the diesel off or between its minimum stable load and its rating.
    """

    def info(traj: Trajectory, key: str) -> np.ndarray:
        return _f64(traj.info[key])

    def band(traj: Trajectory, p: Any) -> np.ndarray:
        return soc_excess(traj.next_state.soc, p.batt_soc_min, p.batt_soc_max)

    def energy(traj: Trajectory, p: Any) -> np.ndarray:
        s0, s1 = traj.state, traj.next_state
        r = stored_energy_error(s0.soc, s1.soc, s1.p_batt_mw, p.batt_e_mwh, p.batt_eta_c, p.batt_eta_d, p.delta_t_hours)
        return not_terminal(traj, r)

    def rating(traj: Trajectory, p: Any) -> np.ndarray:
        return per_step(outside(info(traj, "p_batt_mw"), -_f64(p.batt_p_mw), p.batt_p_mw) / _f64(p.batt_p_mw))

    def balance(traj: Trajectory, p: Any) -> np.ndarray:
        supply = sum(info(traj, k) for k in ("p_pv_mw", "p_dg_mw", "p_batt_mw", "p_grid_import_mw", "power_deficit"))
        demand = info(traj, "p_load_mw") + info(traj, "power_spill")
        return np.abs(supply - demand)

    def dispatch_order(traj: Trajectory, p: Any) -> np.ndarray:
        grid = info(traj, "p_grid_import_mw")
        cap = _f64(p.grid_import_p_max_mw)
        deficit, spill = info(traj, "power_deficit"), info(traj, "power_spill")
        return np.maximum.reduce([
            outside(grid, 0.0, cap),
            np.minimum(deficit, np.maximum(cap - grid, 0.0)),
            np.minimum(spill, np.maximum(grid, 0.0)),
            np.minimum(np.maximum(deficit, 0.0), np.maximum(spill, 0.0)),
            np.maximum(-deficit, 0.0),
            np.maximum(-spill, 0.0),
        ])

    def diesel(traj: Trajectory, p: Any) -> np.ndarray:
        return diesel_range_excess(info(traj, "p_dg_mw"), p.dg_p_max_mw, p.dg_p_min_norm)

    own = (
        Invariant("battery_soc_bounds", band, SOC_TOL, "SOC within [soc_min, soc_max] (fraction)"),
        Invariant("battery_stored_energy", energy, SOC_TOL, "ΔSOC·E = −PΔt/η_d (discharge) or −PΔt·η_c (charge)"),
        Invariant("battery_power_rating", rating, POWER_TOL, "|P_batt| ≤ P_rated (fraction of the rating)"),
        Invariant("pcc_power_balance", balance, POWER_TOL, "P_pv + P_dg + P_batt + P_grid + deficit = P_load + spill [MW]"),
        # The order is a chain of exact float32 min/max operations: any slack is a bug.
        Invariant("pcc_dispatch_order", dispatch_order, 1e-7, "import covers shortfalls up to its cap; shed only at the cap; spill only without import [MW]"),
        Invariant("diesel_output_range", diesel, POWER_TOL, "P_dg ∈ {0} ∪ [p_min_norm·p_max, p_max] (fraction)"),
    )
    return datacenter_laws(lambda s: s.dc, lambda p: p.dc) + own
