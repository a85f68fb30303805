"""Learning is the test: the case-5 presets, full budget (slow: about a minute each on 2 cores).

Reference numbers (case 5, nominal 750 MW load, 48 steps; return = −0.01 · generation
cost summed over the episode), from a search over 800 k constant actions:
unconstrained best ≈ −3914 (it overloads line 4–5 by ≈ 19 MW every step), best without
any line overload ≈ −4327; uniform random actions ≈ −7750.

DC-OPF optimum per step (scipy HiGHS ``linprog`` on the case's PTDF, cross-checked with
``powerzoojax.physics.dc_opf``): −4443.4 per episode with the line limits, −3940.8
without them (pure economic dispatch). The env's searched optima beat both slightly:
its slack-bus units absorb the imbalance of an agent's set-points even outside their
[p_min, p_max] (priced on the ``power_balance`` channel, not in the reward).
"""

import jax.random as jr
import numpy as np
import pytest

N_EVAL = 128
UNCONSTRAINED_BEST = -81.55 * 48


@pytest.fixture(scope="module")
def runs():
    from powerzoojax.rl import evaluate, get_preset, make_act, random_act, train

    safe_env = get_preset("case5-safe-dispatch").env_factory()
    key = jr.PRNGKey(2024)
    ppo = train("case5-economic-dispatch", seed=0, progress=False)
    lag = train("case5-safe-dispatch", seed=0, progress=False)
    # Every policy is scored on the same N_EVAL episodes of the safe env (same reward as
    # the economic-dispatch env, plus the thermal-overload channel).
    return {
        "random": evaluate(safe_env, random_act(safe_env), key, N_EVAL),
        "ppo": evaluate(safe_env, make_act(ppo, safe_env), key, N_EVAL),
        "ppo_lagrangian": evaluate(safe_env, make_act(lag, safe_env), key, N_EVAL),
    }


@pytest.fixture(scope="module")
def dc_opf_returns():
    """Episode return (−reward_scale · Σ optimal cost) of the per-step DC-OPF, with and without line limits."""
    import jax.numpy as jnp
    from scipy.optimize import linprog

    from powerzoojax.case import load_case
    from powerzoojax.envs import make_trans_params
    from powerzoojax.physics._dc_opf import dc_opf, make_dc_opf_setup

    case = load_case("5")
    params = make_trans_params(case, max_steps=48)
    rows = np.asarray(params.load_profiles, np.float64)
    ptdf = np.asarray(case.ptdf, np.float64)
    a_units, a_loads = np.asarray(case.nodes_units_map, np.float64), np.asarray(case.nodes_loads_map, np.float64)
    assert np.allclose(np.asarray(case.unit_cost_b), 0.0)  # linear costs on case 5: an LP
    c = np.asarray(case.unit_cost_c, np.float64)
    bounds = list(zip(np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)))
    cap, floor = np.asarray(case.line_cap, np.float64), np.asarray(case.line_floor, np.float64)
    free = make_dc_opf_setup(case, line_cap=np.full(case.n_lines, 1e12), line_floor=np.full(case.n_lines, -1e12))
    out = {}
    for name, setup in (("limits", make_dc_opf_setup(case)), ("no_limits", free)):
        total = 0.0
        for t in range(params.max_steps):
            load = rows[t % rows.shape[0]]
            m = ptdf @ a_units
            flow0 = ptdf @ (a_loads @ load)
            a_ub, b_ub = (np.vstack([m, -m]), np.concatenate([cap + flow0, -(floor + flow0)])) if name == "limits" else (None, None)
            lp = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=np.ones((1, c.size)), b_eq=[load.sum()], bounds=bounds, method="highs")
            assert lp.status == 0
            ours = dc_opf(setup, jnp.asarray(a_loads @ load, jnp.float32))
            assert bool(ours.converged)
            np.testing.assert_allclose(float(ours.objective), lp.fun + float(np.sum(case.unit_cost_a)), rtol=1e-3)
            total += lp.fun + float(np.sum(case.unit_cost_a))
        out[name] = -float(params.reward_scale) * total
    return out


@pytest.mark.slow
def test_ppo_gets_within_5_percent_of_the_dc_opf_optimum(runs, dc_opf_returns):
    ppo_return = runs["ppo"]["return"].mean()
    lag_return = runs["ppo_lagrangian"]["return"].mean()
    print({"ppo": float(ppo_return), "ppo_lagrangian": float(lag_return), **dc_opf_returns})
    # Economic dispatch (no line term in the reward): within 5 % of the cost of the
    # unconstrained DC-OPF (pure economic dispatch), hence also of the line-limited one
    # (measured: −3968.9 vs −3940.8, 0.7 % above).
    assert ppo_return > 1.05 * dc_opf_returns["no_limits"], (ppo_return, dc_opf_returns)
    assert ppo_return > 1.05 * dc_opf_returns["limits"], (ppo_return, dc_opf_returns)
    # Safe dispatch (no overload allowed; not a 5 % target of the issue): measured 5.1 % above
    # the line-limited DC-OPF cost with the preset budget (−4670.7 vs −4443.3); demand 10 %.
    assert lag_return > 1.10 * dc_opf_returns["limits"], (lag_return, dc_opf_returns)


@pytest.mark.slow
def test_ppo_beats_random_by_a_wide_margin(runs):
    random_return = runs["random"]["return"].mean()
    ppo_return = runs["ppo"]["return"].mean()
    # at least 40 % lower generation cost than uniform random actions (measured ≈ 49 %)
    assert ppo_return > 0.6 * random_return, (ppo_return, random_return)
    # and within 5 % of the best constant dispatch found by search (measured ≈ 1 %)
    assert ppo_return > 1.05 * UNCONSTRAINED_BEST, ppo_return


@pytest.mark.slow
def test_ppo_lagrangian_has_fewer_violations_than_ppo_at_similar_cost(runs):
    ppo_violations = runs["ppo"]["violation_steps"][:, 0].mean()
    lag_violations = runs["ppo_lagrangian"]["violation_steps"][:, 0].mean()
    # PPO learns the cheap dispatch that overloads line 4-5 on (nearly) every step.
    assert ppo_violations > 40, ppo_violations
    assert lag_violations < 0.1 * ppo_violations, (lag_violations, ppo_violations)
    assert runs["ppo_lagrangian"]["constraint_costs"][:, 0].mean() < 0.05 * runs["ppo"]["constraint_costs"][:, 0].mean()
    # Similar cost: respecting the line limit costs at least ≈ 10.5 % more (−4327 vs −3914);
    # demand at most 30 % more than PPO's cost and far better than random.
    ppo_return = runs["ppo"]["return"].mean()
    lag_return = runs["ppo_lagrangian"]["return"].mean()
    assert lag_return > 1.3 * ppo_return, (lag_return, ppo_return)
    assert lag_return > 0.7 * runs["random"]["return"].mean()
    print({k: (float(v["return"].mean()), float(v["violation_steps"][:, 0].mean())) for k, v in runs.items()})
