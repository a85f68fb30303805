"""First-step parity with the reference on its benchmark tables: TransGridEnv on cases 5
and 118, DC power flow (agent dispatch) and DC-OPF modes, nominal profile, zero action.

The expected reward and costs are computed here in NumPy (and SciPy HiGHS for the
dispatch LP) straight from the stored reference tables (``data/reference/case<id>.npz``,
read as raw columns, not through the case builder), following the reference's rules:

* nominal profile: each load at ``(d_max + d_min) / 2``;
* zero action, DC mode: every unit at ``(p_min + p_max) / 2``; the imbalance goes to the
  units at the slack bus (first node of type 3) in equal shares, unclamped;
* DC-OPF mode: the reference's linear objective ``Σ mc_c · p`` under the unit bounds,
  the balance and the rated lines (ratings of 1e5 MW or more are unmonitored);
* flows from the B-θ DC model built here from the line reactances;
* ``reward = −0.01 · Σ (a/3 p³ + b/2 p² + c p)`` of the realised dispatch; costs
  ``[thermal_overload, voltage_violation, power_balance, resource]`` = [Σ MW beyond
  [floor, cap] (0 -> ∓1e6), 0 (DC), Σ dispatch outside [p_min, p_max], 0].

The case-5 figures are also written out by hand: zero action gives [22.5, 90, 270, 105,
310] MW (797.5 MW) for a 750 MW load, so the two bus-1 units take −23.75 MW each ->
[−1.25, 66.25, 270, 105, 310], cost 16376.25 $/h, reward −163.7625, power balance 6.25 MW
(unit 1 is 6.25 MW below its 5 MW minimum). DC-OPF: merit order 10, 14, 15 $/MWh with
units 3 and 4 at their minimums gives [40, 80, 20, 10, 600], cost 8760 $/h, reward −87.6.
"""

import functools
import importlib.resources

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog

UNMONITORED_MW = 1e5


@functools.cache
def _tables(case_id: str) -> dict[str, dict[str, np.ndarray]]:
    path = importlib.resources.files("powerzoojax.case") / "data" / "reference" / f"case{case_id}.npz"
    with path.open("rb") as handle, np.load(handle) as stored:
        return {
            name: {c: stored[name][:, j].copy() for j, c in enumerate(stored[f"{name}_columns"].tolist())}
            for name in ("nodes", "units", "lines", "loads")
        }


def _reference_first_step(case_id: str, solver_mode: int) -> dict:
    t = _tables(case_id)
    nodes, units, lines, loads = t["nodes"], t["units"], t["lines"], t["loads"]
    position = {int(b): k for k, b in enumerate(nodes["id"])}
    n = len(position)
    unit_bus = np.array([position[int(b)] for b in units["bus_id"]])
    load_bus = np.array([position[int(b)] for b in loads["bus_id"]])
    f_bus = np.array([position[int(b)] for b in lines["from"]])
    t_bus = np.array([position[int(b)] for b in lines["to"]])
    types = nodes.get("type", np.zeros(n))
    slack = int(np.flatnonzero(types == 3)[0]) if np.any(types == 3) else 0
    p_min, p_max = units["p_min"], units["p_max"]
    a, b, c = units["mc_a"], units["mc_b"], units["mc_c"]
    cap = np.where(lines["cap"] == 0, 1e6, lines["cap"])
    floor = np.where(lines["floor"] == 0, -1e6, lines["floor"])
    load = (loads["d_max"] + loads["d_min"]) / 2.0
    node_load = np.bincount(load_bus, weights=load, minlength=n)

    # B-θ DC model: θ = B_red⁻¹ P on the non-slack buses, flow = (θ_from − θ_to) / x.
    susceptance = 1.0 / lines["x"]
    b_bus = np.zeros((n, n))
    for k in range(len(susceptance)):
        i, j, s = f_bus[k], t_bus[k], susceptance[k]
        b_bus[i, i] += s
        b_bus[j, j] += s
        b_bus[i, j] -= s
        b_bus[j, i] -= s
    keep = np.arange(n) != slack

    def flows(injection: np.ndarray) -> np.ndarray:
        theta = np.zeros(n)
        theta[keep] = np.linalg.solve(b_bus[np.ix_(keep, keep)], injection[keep])
        return susceptance * (theta[f_bus] - theta[t_bus])

    def injection_of(p: np.ndarray) -> np.ndarray:
        return np.bincount(unit_bus, weights=p, minlength=n) - node_load

    if solver_mode == 0:
        p = (p_min + p_max) / 2.0
        at_slack = unit_bus == slack
        p = p + at_slack * (load.sum() - p.sum()) / at_slack.sum()
    else:
        # Line flows are linear in p: flow = F p − flow(load), F[:, g] = flow of 1 MW at
        # unit g's bus (taken at the slack).
        unit_columns = np.stack([flows(np.eye(n)[bus]) for bus in unit_bus], axis=1)
        load_flow = flows(node_load)
        rated = np.flatnonzero((cap < UNMONITORED_MW) | (floor > -UNMONITORED_MW))
        a_ub = np.vstack([unit_columns[rated], -unit_columns[rated]]) if rated.size else None
        b_ub = np.concatenate([cap[rated] + load_flow[rated], -(floor[rated] + load_flow[rated])]) if rated.size else None
        lp = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, len(c))), b_eq=[load.sum()],
                     bounds=list(zip(p_min, p_max)), method="highs")  # fmt: skip
        assert lp.status == 0
        p = lp.x
    f = flows(injection_of(p))
    gen_cost = float(np.sum(((a / 3.0) * p + b / 2.0) * p * p + c * p))
    thermal = float(np.sum(np.maximum(f - cap, 0.0) + np.maximum(floor - f, 0.0)))
    balance = float(np.sum(np.maximum(p - p_max, 0.0) + np.maximum(p_min - p, 0.0)))
    return {
        "p": p,
        "flows": f,
        "gen_cost": gen_cost,
        "reward": -0.01 * gen_cost,
        "costs": np.array([thermal, 0.0, balance, 0.0]),
    }


@functools.cache
def _env_first_step(case_id: str, solver_mode: int):
    from powerzoojax.case import load_case
    from powerzoojax.envs import TransGridEnv, make_trans_params

    env = TransGridEnv()
    params = make_trans_params(load_case(case_id), solver_mode=solver_mode)
    assert env.constraint_names(params) == ("thermal_overload", "voltage_violation", "power_balance", "resource")
    _, state = env.reset(jax.random.PRNGKey(0), params)
    action = jnp.zeros(env.action_dim(params))
    _, new_state, reward, costs, done, info = env.step(jax.random.PRNGKey(1), state, action, params)
    return float(reward), np.asarray(costs, np.float64), info, new_state


# Written-out values of the NumPy reference (float64), to 7 significant digits.
WRITTEN = {
    ("5", 0): (-163.7625, [0.0, 0.0, 6.25, 0.0]),
    ("5", 1): (-87.6, [0.0, 0.0, 0.0, 0.0]),
    ("118", 0): (20027.66, [0.0, 0.0, 3337.0, 0.0]),
    ("118", 1): (-1073.089, [0.0, 0.0, 0.0, 0.0]),
}


@pytest.mark.parametrize(("case_id", "solver_mode"), list(WRITTEN), ids=lambda v: str(v))
def test_numpy_reference_matches_the_written_values(case_id, solver_mode):
    ref = _reference_first_step(case_id, solver_mode)
    reward, costs = WRITTEN[(case_id, solver_mode)]
    assert ref["reward"] == pytest.approx(reward, rel=1e-6)
    np.testing.assert_allclose(ref["costs"], costs, rtol=1e-9, atol=1e-9)
    if (case_id, solver_mode) == ("5", 0):
        np.testing.assert_allclose(ref["p"], [-1.25, 66.25, 270.0, 105.0, 310.0])
    if (case_id, solver_mode) == ("5", 1):
        np.testing.assert_allclose(ref["p"], [40.0, 80.0, 20.0, 10.0, 600.0], atol=1e-9)


def test_case118_dc_opf_optimum_is_unique():
    """Nominal load 2121 MW against Σp_min 1926 MW: the 195 MW left go to the one unit with
    the strictly lowest mc_c (30 $/MWh, unit 30 at bus 69); nothing binds elsewhere, so the
    LP optimum, hence the reward of the full cubic cost at it, is unique."""
    t = _tables("118")["units"]
    order = np.argsort(t["mc_c"])
    assert t["mc_c"][order[0]] < t["mc_c"][order[1]]
    ref = _reference_first_step("118", 1)
    expected = t["p_min"].copy()
    expected[order[0]] += 2121.0 - t["p_min"].sum()
    np.testing.assert_allclose(ref["p"], expected, atol=1e-6)


@pytest.mark.parametrize(("case_id", "solver_mode"), list(WRITTEN), ids=lambda v: str(v))
def test_first_step_matches_the_reference(case_id, solver_mode):
    ref = _reference_first_step(case_id, solver_mode)
    reward, costs, info, state = _env_first_step(case_id, solver_mode)
    # float32 env against the float64 reference: case 118's slack unit runs at −3176 MW in
    # DC mode, where its cubic cost is −1.4e6 $/h.
    assert reward == pytest.approx(ref["reward"], rel=1e-5, abs=1e-3)
    np.testing.assert_allclose(costs, ref["costs"], rtol=1e-5, atol=1e-3)
    assert float(info["gen_cost"]) == pytest.approx(ref["gen_cost"], rel=1e-5, abs=0.1)
    np.testing.assert_allclose(np.asarray(state.unit_power_mw), ref["p"], rtol=1e-6, atol=0.01)
    np.testing.assert_allclose(np.asarray(state.line_flow_mw), ref["flows"], rtol=1e-5, atol=0.05)
