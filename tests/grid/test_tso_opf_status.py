"""TSO case 118 under random actions: the env's OPF status against scipy HiGHS.

Random commitments are often infeasible (too little committed capacity inside the ramp
windows, or line limits no dispatch can meet); the env must then say so through
``opf_status`` with finite values, never NaN, and must call every feasible step OPTIMAL.
The OPF inputs of each step are rebuilt here from the pre-step state by the spec's rules
(§2.4 steps 1-5) and checked with HiGHS ``linprog`` (feasibility of the same committed
units, ramp windows, loads and line limits).
"""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from scipy.optimize import linprog

N_ENVS, N_STEPS = 8, 24


@functools.cache
def _rollout(split: str):
    from powerzoojax.grid.tasks.tso import TSOTask

    task = TSOTask("118")
    env = task.make_env()
    n_rows = task.make_params(split, 0).load_profiles.shape[0]
    params = [task.make_params(split, int(s)) for s in np.linspace(0, n_rows - 48, N_ENVS).astype(int)]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *params)
    g = params[0].case.n_units

    @jax.jit
    def step(keys, states, actions):
        out = jax.vmap(env.step)(keys, states, actions, stacked)
        return out[1], out[2], out[3], out[5]

    keys = jr.split(jr.PRNGKey(0), N_ENVS)
    _, states = jax.jit(jax.vmap(lambda k, p: env.reset(k, p)))(keys, stacked)
    key = jr.PRNGKey(1)
    steps = []
    for _ in range(N_STEPS):
        key, k_act, k_step = jr.split(key, 3)
        actions = jr.uniform(k_act, (N_ENVS, 2 * g), minval=-1.0, maxval=1.0)
        before = jax.tree.map(np.asarray, states)
        states, reward, costs, info = step(jr.split(k_step, N_ENVS), states, actions)
        steps.append((before, np.asarray(actions), np.asarray(reward), np.asarray(costs), jax.tree.map(np.asarray, info)))
    return params[0], steps


def _opf_inputs(params, state, action, e):
    """Committed ramp windows and the load of env ``e`` for its next step (spec §2.4)."""
    case = params.case
    g = case.n_units
    was_on = state.unit_status[e] > 0
    tis = state.time_in_state[e]
    on = ((action[e, :g] > 0) | (was_on & (tis < np.asarray(params.min_up_steps)))) & ~(
        ~was_on & (tis < np.asarray(params.min_down_steps))
    )
    last = state.last_dispatch[e].astype(np.float64)
    p_min, p_max = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    lo = np.maximum(p_min, last - np.asarray(params.ramp_down_mw, np.float64)) * on
    hi = np.minimum(p_max, last + np.asarray(params.ramp_up_mw, np.float64)) * on
    row = int(state.episode_start_idx[e] + state.time_step[e])
    return lo, hi, row


@pytest.mark.parametrize("split", ["iid"])
def test_random_steps_status_matches_highs(split):
    params0, steps = _rollout(split)
    from powerzoojax.grid.tasks.tso import TSOTask

    task = TSOTask("118")
    n_rows = params0.load_profiles.shape[0]
    starts = np.linspace(0, n_rows - 48, N_ENVS).astype(int)
    profiles = np.asarray(task.make_params(split, 0).load_profiles, np.float64)
    case = params0.case
    ptdf = np.asarray(case.ptdf, np.float64)
    m_u = ptdf @ np.asarray(case.nodes_units_map, np.float64)
    loads_to_nodes = np.asarray(case.nodes_loads_map, np.float64)
    cap = np.asarray(params0.dcopf.line_cap, np.float64)
    floor = np.asarray(params0.dcopf.line_floor, np.float64)
    g = case.n_units
    counts = {"optimal": 0, "capacity": 0, "lines": 0}
    optimal = []
    for t, (before, action, reward, costs, info) in enumerate(steps):
        assert np.all(np.isfinite(reward)) and np.all(np.isfinite(costs))
        for name, value in info.items():
            assert np.all(np.isfinite(np.asarray(value, np.float64))), name
        for e in range(N_ENVS):
            lo, hi, row = _opf_inputs(params0, before, action, e)
            assert row - int(before.episode_start_idx[e]) == int(before.time_step[e]) and starts[e] == before.episode_start_idx[e]
            node = loads_to_nodes @ profiles[row]
            f0 = ptdf @ node
            total = node.sum()
            # The dispatch preference tilts the linear cost toward its set-point in [lo, hi].
            weight = float(params0.dispatch_preference_weight)
            cost = np.asarray(case.unit_cost_c, np.float64) - weight * (lo + 0.5 * (action[e, g:] + 1.0) * (hi - lo))
            ref = linprog(
                cost, A_ub=np.vstack([m_u, -m_u]), b_ub=np.concatenate([cap + f0, -(floor + f0)]),
                A_eq=np.ones((1, g)), b_eq=[total], bounds=list(zip(lo, hi)), method="highs",
            )
            assert ref.status in (0, 2)
            status = int(info["opf_status"][e])
            if ref.status == 0:
                assert status == 0, (e, row)
                assert bool(info["opf_converged"][e]) and float(info["opf_line_residual_mw"][e]) < 0.5  # tol 1e-4 x ~800 MW unit range, float32
                optimal.append((t, e, cost, ref.fun))
                counts["optimal"] += 1
                continue
            assert status == 1, (e, row)  # INFEASIBLE, as HiGHS says
            if not lo.sum() - 1e-3 <= total <= hi.sum() + 1e-3:
                # Load outside the committed windows: units at the violated bound, an exact
                # answer (converged), the shortfall reported as unserved load.
                counts["capacity"] += 1
                assert bool(info["opf_converged"][e])
                np.testing.assert_allclose(float(info["unserved_mw"][e]), max(total - hi.sum(), 0.0), rtol=1e-4, atol=0.05)
            else:
                counts["lines"] += 1
                assert float(info["opf_line_residual_mw"][e]) > 0.1
    # OPTIMAL dispatches cost what HiGHS's optimum costs (the linear objective; the
    # dispatch itself is the next state's last_dispatch).
    for t, e, cost, best in optimal:
        if t + 1 < len(steps):
            p = np.asarray(steps[t + 1][0].last_dispatch[e], np.float64)
            assert abs(cost @ p - best) <= 1e-4 * abs(best), (t, e, cost @ p, best)
    # Random commitments produce all three kinds on this sample.
    assert min(counts.values()) >= 3, counts
