"""Learning is the test: the case-5 presets, full budget (slow: about a minute each on 2 cores).

Case 5 at its nominal 750 MW load, 48 steps; every policy is scored on the reference's
reward (return = −0.01 · generation cost of the realised output, summed over the
episode) with the `thermal_overload` and `power_balance` channels of
`case5-safe-dispatch`'s env. The slack-bus units take up the imbalance of an agent's
set-points even outside their [p_min, p_max]; those MW are `power_balance`.

DC-OPF optimum per step (scipy HiGHS ``linprog`` on the case's PTDF, cross-checked with
``powerzoojax.physics.dc_opf``, within the unit limits): −0.01 · 8,760 $/h · 48 =
−4,204.8 per episode, with or without the line limits (the cheapest dispatch loads line
4–5 to 233 of its 240 MW). A policy can only beat it by leaving the unit limits.
"""

import jax.random as jr
import numpy as np
import pytest

N_EVAL = 16
REFERENCE_BUDGET = 61_440  # the main job's budget, at which the reward-only policy breaks the balance


@pytest.fixture(scope="module")
def runs():
    from powerzoojax.rl import evaluate, get_preset, make_act, random_act, train

    safe_env = get_preset("case5-safe-dispatch").env_factory()
    key = jr.PRNGKey(2024)
    ppo = train("case5-economic-dispatch", seed=0, progress=False)
    reference = train("case5-economic-dispatch-reference", seed=0, total_timesteps=REFERENCE_BUDGET, progress=False)
    lag = train("case5-safe-dispatch", seed=0, progress=False)
    # Every policy is scored on the same N_EVAL episodes of the safe env (the reference's
    # reward, plus the thermal-overload and power-balance channels).
    out = {
        name: evaluate(safe_env, act, key, N_EVAL)
        for name, act in (
            ("random", random_act(safe_env)), ("ppo", make_act(ppo, safe_env)),
            ("reference", make_act(reference, safe_env)), ("ppo_lagrangian", make_act(lag, safe_env)),
        )
    }
    # The untrained policy: the reference run's first evaluation (same env, deterministic).
    first = lambda name: float(np.asarray(reference.metrics[name])[np.isfinite(reference.metrics[name])][0])  # noqa: E731
    out["untrained"] = {"return": first("eval_returns"), "power_balance": first("eval_cost_power_balance")}
    return out


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
def test_limit_priced_ppo_gets_within_5_percent_of_the_dc_opf_optimum_inside_the_limits(runs, dc_opf_returns):
    ppo = runs["ppo"]
    print({k: (float(np.mean(v["return"])), *map(float, np.mean(v.get("constraint_costs", np.zeros((1, 2))), axis=0)))
           for k, v in runs.items()})
    # No constraint cost: the slack units stay within their limits, no line overloads.
    assert float(ppo["constraint_costs"][:, 1].mean()) < 1.0, ppo["constraint_costs"].mean(axis=0)
    assert float(ppo["constraint_costs"][:, 0].mean()) == 0.0
    # Measured (2026-12-06): −4,361.9 against −4,204.8, 3.7 % above the optimum.
    assert dc_opf_returns["limits"] == pytest.approx(dc_opf_returns["no_limits"], rel=1e-4)
    assert float(ppo["return"].mean()) > 1.05 * dc_opf_returns["limits"], (ppo["return"].mean(), dc_opf_returns)
    assert float(ppo["return"].mean()) > 0.6 * float(runs["random"]["return"].mean())


@pytest.mark.slow
def test_the_reward_only_policy_breaks_the_power_balance_and_the_safe_one_does_not(runs):
    untrained = runs["untrained"]["power_balance"]
    reference = float(runs["reference"]["constraint_costs"][:, 1].mean())
    lagrangian = float(runs["ppo_lagrangian"]["constraint_costs"][:, 1].mean())
    # Measured (2026-12-06): 312.9 MW·step untrained, 597.2 after 61,440 reward-only steps, 0.0 safe.
    assert untrained > 100.0
    assert reference > 1.5 * untrained, (reference, untrained)
    assert lagrangian < 1.0, lagrangian
    # Its return improves on the untrained policy's without the slack units' help.
    assert float(runs["ppo_lagrangian"]["return"].mean()) > runs["untrained"]["return"]
