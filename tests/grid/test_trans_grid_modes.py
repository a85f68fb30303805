"""TransGridEnv AC power flow and DC-OPF modes, and the resource-bundle hook.

Physics references: scipy HiGHS ``linprog`` for the DC-OPF dispatch, PYPOWER ``runpf`` for
the AC voltages.
"""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

MODES = [(1, 0), (0, 1), (1, 1)]
_JIT: dict = {}


def _jitted(env):
    """One jitted reset/step per env class for the whole module: tests whose params share
    a structure share the compiled program."""
    name = type(env).__name__
    if name not in _JIT:
        _JIT[name] = (jax.jit(env.reset), jax.jit(env.step))
    return _JIT[name]


@pytest.fixture(scope="module")
def case14():
    from powerzoojax.case import load_case

    return load_case("14")


@pytest.mark.parametrize(("physics", "solver_mode"), MODES)
def test_modes_pass_conformance_kit(case5, physics, solver_mode):
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.testing import check_env_api, check_no_retrace

    env = TransGridEnv()
    params = make_trans_params(case5, max_steps=3, physics=physics, solver_mode=solver_mode)
    check_env_api(env, params)
    assert check_no_retrace(env, params, n_episodes=1) == {"reset": 1, "step": 1, "rollout": 1}


@pytest.mark.parametrize(("physics", "solver_mode"), [(0, 0), *MODES])
def test_observation_layout_and_info_keys(case5, physics, solver_mode):
    from powerzoojax.envs import TransGridEnv, make_trans_params

    env = TransGridEnv()
    # max_steps as in the conformance kit above: the same program, so a persistent-cache hit.
    params = make_trans_params(case5, max_steps=3, physics=physics, solver_mode=solver_mode)
    n_ac = case5.n_nodes if physics == 1 else 0
    assert env.obs_dim(params) == case5.n_lines + n_ac + case5.n_loads + case5.n_units + 2
    obs, state = _jitted(env)[0](jr.PRNGKey(0), params)
    obs2, state2, reward, costs, done, info = _jitted(env)[1](jr.PRNGKey(1), state, jnp.zeros(5), params)
    assert obs2.shape == (env.obs_dim(params),)
    assert np.all(np.isfinite(np.asarray(obs2))) and np.all(np.asarray(costs) >= 0)
    assert ("pf_converged" in info) == (physics == 1) and ("pf_n_iter" in info) == (physics == 1)
    # The power flow's count is declared, so the kit leaves it out of jit = eager, vmap = loop.
    assert env.iteration_count_keys(params) == (("pf_n_iter",) if physics == 1 else ())
    assert ("opf_status" in info) == (solver_mode == 1) and ("opf_objective" in info) == (solver_mode == 1)
    if physics == 1:
        assert bool(info["pf_converged"]) and int(info["pf_n_iter"]) >= 1
        # AC block: |S_from| / cap, then vm.
        s_from = np.hypot(np.asarray(state2.line_flow_mw), np.asarray(state2.line_flow_q_mw))
        np.testing.assert_allclose(obs2[: case5.n_lines], s_from * np.asarray(params.inv_line_scale), rtol=1e-5)
        np.testing.assert_allclose(obs2[case5.n_lines : case5.n_lines + 5], state2.vm, rtol=1e-6)
        assert not np.allclose(np.asarray(state2.vm), 1.0)


def _dcopf_reference_cost(case, node_load):
    """Case5 costs are linear (a = b = 0): the DC-OPF is an LP; solve it with HiGHS."""
    from scipy.optimize import linprog

    ptdf = np.asarray(case.ptdf, np.float64)
    a_u = np.asarray(case.nodes_units_map, np.float64)
    m_u = ptdf @ a_u
    c0 = ptdf @ node_load
    cap = np.asarray(case.line_cap, np.float64)
    floor = np.asarray(case.line_floor, np.float64)
    res = linprog(
        np.asarray(case.unit_cost_c, np.float64),
        A_ub=np.vstack([m_u, -m_u]),
        b_ub=np.concatenate([cap + c0, -(floor + c0)]),
        A_eq=np.ones((1, case.n_units)),
        b_eq=[node_load.sum()],
        bounds=list(zip(np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64))),
        method="highs",
    )
    assert res.status == 0
    return res.fun, res.x


@pytest.mark.parametrize("scale", [0.6, 1.0, 1.3])
def test_dcopf_mode_cost_matches_highs(case5, scale):
    from powerzoojax.envs import TransGridEnv, make_trans_params

    assert np.all(np.asarray(case5.unit_cost_a) == 0) and np.all(np.asarray(case5.unit_cost_b) == 0)
    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    profile = np.tile(nominal * scale, (2, 1))
    env = TransGridEnv()
    params = make_trans_params(case5, load_profiles=profile, max_steps=2, solver_mode=1)
    _, state = _jitted(env)[0](jr.PRNGKey(0), params)
    _, state2, reward, costs, _, info = _jitted(env)[1](jr.PRNGKey(1), state, jnp.zeros(5), params)
    ref_cost, ref_p = _dcopf_reference_cost(case5, nominal * scale)  # case5 loads sit one per bus
    assert int(info["opf_status"]) == 0
    np.testing.assert_allclose(float(info["gen_cost"]), ref_cost, rtol=1e-3)  # float32 interior point, tol 1e-4
    np.testing.assert_allclose(float(reward), -0.01 * ref_cost, rtol=1e-3)
    assert float(np.asarray(state2.unit_power_mw).sum()) == pytest.approx(nominal.sum() * scale, rel=1e-5)
    # The flows respect the limits, so nothing is charged.
    assert np.all(np.asarray(costs) < 1e-3)


def test_dcopf_mode_overload_when_limits_cannot_hold(case5):
    """One generator can serve nothing else than through a tightly rated line: the OPF
    reports infeasible, the overload is charged, values stay finite."""
    import equinox as eqx

    from powerzoojax.envs import TransGridEnv, make_trans_params

    tight = eqx.tree_at(lambda c: (c.line_cap, c.line_floor), case5, (case5.line_cap * 0 + 5.0, case5.line_floor * 0 - 5.0))
    env = TransGridEnv()
    params = make_trans_params(tight, max_steps=2, solver_mode=1)
    _, state = _jitted(env)[0](jr.PRNGKey(0), params)
    _, state2, reward, costs, _, info = _jitted(env)[1](jr.PRNGKey(1), state, jnp.zeros(5), params)
    assert int(info["opf_status"]) != 0  # infeasible, or out of iterations on the way there
    assert float(costs[0]) > 1.0 and not bool(info["is_safe"])
    assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves(state2))


def _pypower_voltages(case14, p_gen_mw, load_p_mw):
    from pypower.api import case14 as pp_case14
    from pypower.api import ppoption, runpf

    ppc = pp_case14()
    ppc["bus"][:, 2] = load_p_mw  # PD per bus; QD stays the case's
    ppc["gen"][:, 1] = p_gen_mw
    ppc["gen"][:, 3], ppc["gen"][:, 4] = 1e4, -1e4  # QMAX, QMIN: no limits (as in the env's case)
    opt = ppoption(VERBOSE=0, OUT_ALL=0, ENFORCE_Q_LIMS=0, PF_TOL=1e-9)
    res, ok = runpf(ppc, opt)
    assert ok
    return res["bus"][:, 7], np.deg2rad(res["bus"][:, 8])


def test_ac_mode_voltages_match_pypower(case14):
    import equinox as eqx

    from powerzoojax.envs import TransGridEnv, make_trans_params

    # Generator Q limits lifted on both sides, so no PV→PQ switching logic is compared.
    case14 = eqx.tree_at(lambda c: (c.unit_q_max, c.unit_q_min), case14, (case14.unit_q_max * 0 + 1e4, case14.unit_q_min * 0 - 1e4))

    nominal = 0.5 * (np.asarray(case14.load_d_max) + np.asarray(case14.load_d_min))
    profile = np.tile(0.7 * nominal, (2, 1))
    env = TransGridEnv()
    params = make_trans_params(case14, load_profiles=profile, max_steps=2, physics=1)
    _, state = _jitted(env)[0](jr.PRNGKey(0), params)
    action = jnp.asarray([0.0, -0.2, -0.5, -0.9, -0.9])
    _, state2, _, costs, _, info = _jitted(env)[1](jr.PRNGKey(1), state, action, params)
    assert bool(info["pf_converged"])
    vm_ref, va_ref = _pypower_voltages(case14, np.asarray(state2.unit_power_mw, np.float64), 0.7 * nominal)
    np.testing.assert_allclose(np.asarray(state2.vm), vm_ref, atol=1e-3)
    np.testing.assert_allclose(np.asarray(state2.va), va_ref, atol=2e-3)


def test_ac_nonconvergence_is_a_flag_and_a_cost(case5):
    from powerzoojax.envs import TransGridEnv, make_trans_params

    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    env = TransGridEnv()
    params = make_trans_params(case5, load_profiles=np.tile(8.0 * nominal, (2, 1)), max_steps=2, physics=1, pf_max_iter=10)
    _, state = _jitted(env)[0](jr.PRNGKey(0), params)
    obs, state2, reward, costs, _, info = _jitted(env)[1](jr.PRNGKey(1), state, jnp.ones(5), params)
    assert not bool(info["pf_converged"])
    assert float(costs[2]) >= 100.0 and not bool(info["is_safe"])
    for leaf in (obs, reward, costs, *jax.tree.leaves(state2)):
        assert np.all(np.isfinite(np.asarray(leaf)))
    # The failed iterate is not kept: the state holds a flat start (set-points at PV buses,
    # 1 p.u. elsewhere, the slack's angle) and the DC flows of the same dispatch.
    net = params.network_model.network
    flat = np.where(np.asarray(net.is_pv), np.asarray(net.v_set), 1.0)
    np.testing.assert_allclose(np.asarray(state2.vm)[np.asarray(net.is_pv)], flat[np.asarray(net.is_pv)])
    assert np.all((np.asarray(state2.vm) > 0.9) & (np.asarray(state2.vm) < 1.1))
    np.testing.assert_allclose(np.asarray(state2.va), float(net.va_ref))
    ptdf = np.asarray(case5.ptdf, np.float64)
    injection = np.asarray(case5.nodes_units_map, np.float64) @ np.asarray(state2.unit_power_mw, np.float64) - 8.0 * nominal
    np.testing.assert_allclose(np.asarray(state2.line_flow_mw), ptdf @ injection, rtol=1e-4, atol=1e-2)
    assert np.all(np.asarray(state2.line_flow_q_mw) == 0.0)


# ----------------------------------------------------------------------------- bundle hook


def _const_bundle(bus_idx, p_max_mw):
    """Minimal bundle: one device per bus injecting ``a · p_max`` MW, cost |a|."""
    import equinox as eqx

    from powerzoojax.grid.resources import ResourceBundle

    class ConstBundle(ResourceBundle):
        bus_idx: jax.Array
        p_max: jax.Array
        n_devices: int = eqx.field(static=True)
        per_device_action_dim: int = eqx.field(static=True, default=1)
        per_device_obs_dim: int = eqx.field(static=True, default=1)
        dt_hours: float = eqx.field(static=True, default=0.5)

        def reset(self, key):
            return jnp.zeros((self.n_devices,), jnp.float32)

        def step(self, bstate, action, ctx):
            p = jnp.clip(action, -1.0, 1.0) * self.p_max
            return p, p, jnp.zeros_like(p), p / self.p_max, {"cost_sum": jnp.sum(jnp.abs(action))}

        def observe(self, bstate, ctx):
            return bstate / self.p_max

    bus = np.atleast_1d(np.asarray(bus_idx, np.int32))
    return ConstBundle(jnp.asarray(bus), jnp.full(bus.shape, p_max_mw, jnp.float32), n_devices=int(bus.size))


@pytest.mark.parametrize(("physics", "solver_mode"), [(0, 0), (1, 0), (0, 1)])
def test_bundle_injection_equals_load_reduction(case5, physics, solver_mode):
    """Injecting x MW at a load bus gives the network result of that load reduced by x."""
    from powerzoojax.envs import TransGridEnv, make_trans_params

    env = TransGridEnv()
    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    bus, inject = 2, 40.0  # load index 2 sits at bus index 2 in case5
    assert int(np.asarray(case5.load_node_idx)[bus]) == bus
    with_bundle = make_trans_params(
        case5, load_profiles=np.tile(nominal, (2, 1)), max_steps=2, physics=physics, solver_mode=solver_mode,
        resources=(_const_bundle(bus, inject),),
    )
    reduced = nominal.copy()
    reduced[bus] -= inject
    plain = make_trans_params(case5, load_profiles=np.tile(reduced, (2, 1)), max_steps=2, physics=physics, solver_mode=solver_mode)
    assert env.action_dim(with_bundle) == 6 and env.obs_dim(with_bundle) == env.obs_dim(plain) + 1
    units = jnp.asarray([0.2, -0.3, 0.1, 0.0, 0.5])
    _, s_b = _jitted(env)[0](jr.PRNGKey(0), with_bundle)
    _, s_p = _jitted(env)[0](jr.PRNGKey(0), plain)
    obs_b, n_b, _, c_b, _, i_b = _jitted(env)[1](jr.PRNGKey(1), s_b, jnp.concatenate([units, jnp.ones(1)]), with_bundle)
    obs_p, n_p, _, c_p, _, i_p = _jitted(env)[1](jr.PRNGKey(1), s_p, units, plain)
    np.testing.assert_allclose(n_b.line_flow_mw, n_p.line_flow_mw, atol=2e-2)
    np.testing.assert_allclose(n_b.unit_power_mw, n_p.unit_power_mw, atol=2e-2)
    np.testing.assert_allclose(n_b.vm, n_p.vm, atol=1e-4)
    assert float(c_b[3]) == pytest.approx(1.0) and float(c_p[3]) == 0.0
    assert float(obs_b[-1]) == pytest.approx(1.0)


def test_bundle_env_passes_conformance_kit(case5):
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.testing import check_env_api

    params = make_trans_params(case5, max_steps=3, resources=(_const_bundle([1, 3], 25.0),))
    check_env_api(TransGridEnv(), params)


@pytest.mark.slow  # two case-14 rollout compiles: ~15 s alone
def test_ac_warm_start_reaches_the_cold_solve_on_a_schedule_rollout(case14):
    """``pf_warm_start=True``: each step starts from the previous state's voltages and
    PV->PQ switches (read off the state: a PV bus off its set point). Case 14 at 1.6x its
    nominal load (a bus at a Q limit in most steps), set-points redrawn each step within
    +-10 % of range around the case's schedule: every step converges, in fewer iterations,
    to the cold solve's switched buses and voltages (both converged to tol = 1e-5 p.u.)."""
    from powerzoojax.core import rollout
    from powerzoojax.envs import TransGridEnv, make_trans_params

    n_envs, horizon = 8, 5
    nominal = 0.5 * (np.asarray(case14.load_d_max) + np.asarray(case14.load_d_min))
    profile = np.tile(1.6 * nominal, (horizon + 1, 1))
    env = TransGridEnv()
    lo, hi = np.asarray(case14.unit_p_min, np.float64), np.asarray(case14.unit_p_max, np.float64)
    sched = np.clip(2.0 * (np.asarray(case14.unit_pg, np.float64) - 0.5 * (lo + hi)) / np.maximum(hi - lo, 1e-9), -1, 1)
    u = np.random.default_rng(5).uniform(-1.0, 1.0, (n_envs, horizon, lo.size))
    actions = jnp.asarray(np.clip(sched + 0.2 * u, -1.0, 1.0), jnp.float32)

    def run(warm):
        params = make_trans_params(case14, load_profiles=profile, max_steps=horizon + 1, physics=1, pf_warm_start=warm)

        def step_fn(key, state, action):
            obs, state, reward, costs, done, info = env.step(key, state, action, params)
            return obs, state, reward, costs, done, {**info, "vm": state.vm, "va": state.va, "pf": state.line_flow_mw}

        def one(key, acts):
            return rollout(step_fn, key, env.reset(key, params)[1], acts)[2][-1]

        return params, jax.device_get(jax.jit(jax.vmap(one))(jr.split(jr.PRNGKey(3), n_envs), actions))

    params, cold = run(False)
    _, warm = run(True)
    assert cold["pf_converged"].all() and warm["pf_converged"].all()
    is_pv, v_set = np.asarray(params.acpf.is_pv), np.asarray(params.acpf.v_set)
    switched_cold, switched_warm = is_pv & (cold["vm"] != v_set), is_pv & (warm["vm"] != v_set)
    assert switched_cold.any(axis=-1).mean() >= 0.75  # the warm start has switches to carry
    np.testing.assert_array_equal(switched_warm, switched_cold)
    assert warm["pf_n_iter"][:, 1:].mean() <= cold["pf_n_iter"][:, 1:].mean() - 1.0
    np.testing.assert_allclose(warm["vm"], cold["vm"], atol=1e-5)
    np.testing.assert_allclose(warm["va"], cold["va"], atol=2e-5)
    # MW flows follow from the voltages: within what the voltage tolerance implies.
    np.testing.assert_allclose(warm["pf"], cold["pf"], atol=2e-2)


def test_dcopf_mode_minimises_the_linear_marginal_cost_on_case118(case118):
    """The benchmark table's marginal costs a·p² + b·p + c have b < 0 on 54 units, so the
    cost polynomial is not convex; the DC-OPF mode minimises mc_c · p by default. HiGHS on
    the same LP gives the optimum; the dispatch is compared by its linear cost (ties between
    units of equal c_g leave the argmin not unique)."""
    from scipy.optimize import linprog

    from powerzoojax.envs import TransGridEnv, make_trans_params

    assert np.any(np.asarray(case118.unit_cost_b) < 0)
    env = TransGridEnv()
    params = make_trans_params(case118, max_steps=2, solver_mode=1)
    setup = params.network_model.setup
    assert np.all(np.asarray(setup.cost_a) == 0) and np.all(np.asarray(setup.cost_b) == 0)
    _, state = jax.jit(env.reset)(jr.PRNGKey(0), params)
    _, state2, _, _, _, info = jax.jit(env.step)(jr.PRNGKey(1), state, jnp.zeros(env.action_dim(params)), params)
    load = np.asarray(case118.nodes_loads_map, np.float64) @ np.asarray(params.load_profiles[1], np.float64)
    c = np.asarray(case118.unit_cost_c, np.float64)
    ref = linprog(
        c, A_eq=np.ones((1, case118.n_units)), b_eq=[load.sum()], method="highs",
        bounds=list(zip(np.asarray(case118.unit_p_min, np.float64), np.asarray(case118.unit_p_max, np.float64))),
    )
    assert ref.status == 0 and int(info["opf_status"]) == 0
    p = np.asarray(state2.unit_power_mw, np.float64)
    assert float(c @ p) == pytest.approx(ref.fun, rel=1e-4)
    assert float(info["opf_objective"]) == pytest.approx(ref.fun, rel=1e-4)
    poly = make_trans_params(case118, max_steps=2, solver_mode=1, opf_objective="polynomial").network_model.setup
    np.testing.assert_allclose(np.asarray(poly.cost_b), np.asarray(case118.unit_cost_b))
    with pytest.raises(ValueError, match=r"opf_objective must be one of"):
        make_trans_params(case118, max_steps=2, solver_mode=1, opf_objective="quadratic")
