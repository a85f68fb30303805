"""The unit-commitment env's screened DC-OPF against HiGHS.

A step's LP takes only the monitored lines whose flow could reach a limit (a bound per
line over the dispatches the step allows) and falls back to every line when more could.
Checked here: the bounds contain HiGHS's extreme flows over the same dispatch set, and the
screened env's dispatch (with the default 16 rows, and with 2 rows so that the fallback
runs) is OPTIMAL exactly when HiGHS finds the full LP feasible, at HiGHS's cost.
"""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from scipy.optimize import linprog

N_ENVS, N_STEPS = 6, 10


@functools.cache
def _params(rows: int):
    from powerzoojax.grid.tasks.tso import make_tso_uc_params

    return make_tso_uc_params("118", split="iid", opf_screen_rows=rows)


def test_flow_bounds_contain_the_extreme_flows():
    from powerzoojax.grid.transmission._unit_commitment import _flow_bounds

    params = _params(16)
    case = params.case
    m_u = np.asarray(params.dcopf.mon_ptdf_units_t, np.float64)  # (G, n_mon)
    p_min, p_max = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    rng = np.random.default_rng(3)
    bounds = jax.jit(lambda lo, hi, d, lf: _flow_bounds(params, lo, hi, d, lf))
    lines = rng.choice(m_u.shape[1], 24, replace=False)
    gaps = []
    for _ in range(3):
        on = rng.uniform(size=p_min.shape) < 0.7
        lo = p_min * on
        hi = np.maximum(lo, np.minimum(p_max, lo + rng.uniform(0.2, 1.0, p_min.shape) * p_max) * on)
        demand = rng.uniform(lo.sum(), hi.sum())
        load_flow = rng.normal(0.0, 50.0, m_u.shape[1])
        f_max, f_min = (np.asarray(b, np.float64) for b in bounds(
            jnp.asarray(lo, jnp.float32), jnp.asarray(hi, jnp.float32), jnp.asarray(demand, jnp.float32),
            jnp.asarray(load_flow, jnp.float32),
        ))
        for line in lines:
            extremes = []
            for sign in (-1.0, 1.0):
                res = linprog(sign * m_u[:, line], A_eq=np.ones((1, lo.size)), b_eq=[demand], bounds=list(zip(lo, hi)),
                              method="highs")
                assert res.status == 0
                extremes.append(m_u[:, line] @ res.x - load_flow[line])
            top, bottom = extremes[0], extremes[1]
            # Valid (float32 rounding aside) and close: the screen keeps few lines only if so.
            assert f_max[line] >= top - 1e-2 and f_min[line] <= bottom + 1e-2, (line, f_max[line], top)
            gaps.append(max(f_max[line] - top, bottom - f_min[line]) / max(top - bottom, 1.0))
    assert np.median(gaps) < 0.05, np.median(gaps)


def test_screen_rows_default_and_errors():
    from powerzoojax.case import load_case
    from powerzoojax.grid import make_uc_params
    from powerzoojax.grid.tasks.tso import make_tso_case14_params

    # case118's 186 monitored lines: screened to 16 rows by default; case14: the full LP.
    from powerzoojax.grid.tasks.tso import make_tso_uc_params

    default = make_tso_uc_params("118", split="iid")
    assert default.opf_screen_rows == 16 and default.line_screen is not None
    assert make_tso_case14_params().line_screen is None
    assert _params(2).opf_screen_rows == 2
    assert _params(0).line_screen is None and _params(0).opf_screen_rows == 0
    with pytest.raises(ValueError, match="opf_screen_rows must be an int >= 0 or None, got -1"):
        make_uc_params(load_case("5"), opf_screen_rows=-1)


@functools.cache
def _rollout(rows: int):
    from powerzoojax.grid import UnitCommitmentEnv

    env, params = UnitCommitmentEnv(), _params(rows)
    g = params.case.n_units

    @jax.jit
    def run(key):
        def one(k):
            k_reset, k_steps = jr.split(k)
            _, state = env.reset(k_reset, params)

            def body(state, kk):
                action = jr.uniform(kk, (2 * g,), minval=-1.0, maxval=1.0)
                _, new, _, _, _, info = env.step(kk, state, action, params)
                return new, (state, action, info)

            return jax.lax.scan(body, state, jr.split(k_steps, N_STEPS))[1]

        return jax.vmap(one)(jr.split(key, N_ENVS))

    return params, jax.tree.map(np.asarray, run(jr.PRNGKey(7)))


@pytest.mark.slow
@pytest.mark.parametrize("rows", [16, 2])
def test_screened_dispatch_matches_highs(rows):
    params, (before, actions, info) = _rollout(rows)
    case = params.case
    g = case.n_units
    m_u = np.asarray(params.dcopf.ptdf_units_t, np.float64)  # (G, L)
    cap, floor = np.asarray(params.dcopf.line_cap, np.float64), np.asarray(params.dcopf.line_floor, np.float64)
    p_min, p_max = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    profiles = np.asarray(params.load_profiles, np.float64)
    load_flows = np.asarray(params.load_line_flow_mw, np.float64)
    weight = float(params.dispatch_preference_weight)
    optimal = 0
    for e in range(N_ENVS):
        for t in range(N_STEPS):
            was_on = before.unit_status[e, t] > 0
            tis = before.time_in_state[e, t]
            on = ((actions[e, t, :g] > 0) | (was_on & (tis < np.asarray(params.min_up_steps)))) & ~(
                ~was_on & (tis < np.asarray(params.min_down_steps))
            )
            last = before.last_dispatch[e, t].astype(np.float64)
            lo = np.maximum(p_min, last - np.asarray(params.ramp_down_mw, np.float64)) * on
            hi = np.maximum(lo, np.minimum(p_max, last + np.asarray(params.ramp_up_mw, np.float64)) * on)
            row = int(before.episode_start_idx[e, t] + before.time_step[e, t])
            total = profiles[row].sum()
            cost = np.asarray(case.unit_cost_c, np.float64) - weight * (lo + 0.5 * (actions[e, t, g:] + 1.0) * (hi - lo))
            ref = linprog(
                cost, A_ub=np.vstack([m_u.T, -m_u.T]), b_ub=np.concatenate([cap + load_flows[row], -(floor + load_flows[row])]),
                A_eq=np.ones((1, g)), b_eq=[total], bounds=list(zip(lo, hi)), method="highs",
            )
            status = int(info["opf_status"][e, t])
            assert ref.status in (0, 2)
            assert status == (0 if ref.status == 0 else 1), (e, t, status, ref.status)
            if ref.status == 0 and t + 1 < N_STEPS:
                p = before.last_dispatch[e, t + 1].astype(np.float64)
                assert abs(cost @ p - ref.fun) <= 1e-4 * abs(ref.fun), (e, t, cost @ p, ref.fun)
                optimal += 1
    assert optimal >= 5
    full = info["opf_full_lp"]
    if rows == 2:
        assert full.mean() > 0.25  # more than two lines could bind on many steps: the full LP ran
    else:
        assert full.mean() < 0.25, full.mean()
