"""Multi-agent adapters: dict API, agent order, stacked = dict, jit/vmap/rollout kernel,
no retrace, and each adapter's observations / rewards against independent computations."""

import numpy as np
import pytest


def check_marl_api(env, *, n_batch=2, episodes=2):
    """Dict API conformance of a MultiAgentEnvironment; returns the trace counts."""
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.core import rollout

    A, d, a = env.num_agents, env.obs_dim, env.action_dim
    assert len(set(env.agents)) == A and env.agent_names == list(env.agents)
    for agent in env.agents:
        assert env.observation_space(agent).shape == (d,) and env.action_space(agent).shape == (a,)
    with pytest.raises(KeyError):
        env.action_space("nobody")

    counts = {"reset": 0, "step": 0, "rollout": 0}

    def counted(name, fn):
        def wrapper(*args):
            counts[name] += 1
            return fn(*args)

        return jax.jit(wrapper)

    reset = counted("reset", lambda k, p: env.reset(k, p))
    step = counted("step", lambda k, s, act, p: env.step(k, s, act, p))
    obs, state = reset(jr.PRNGKey(0), env.params)
    # jit hands dicts back with sorted keys (a JAX pytree rule); the agent order is env.agents
    assert set(obs) == set(env.agents)
    assert all(o.shape == (d,) and o.dtype == jnp.float32 for o in obs.values())
    space = env.action_space()
    actions = {ag: space.sample(k) for ag, k in zip(env.agents, jr.split(jr.PRNGKey(1), A))}
    out = step(jr.PRNGKey(2), state, actions, env.params)
    obs2, state2, rewards, dones, info = out
    assert set(obs2) == set(env.agents) and set(rewards) == set(env.agents)
    assert set(dones) == set(env.agents) | {"__all__"}
    assert all(r.shape == () and r.dtype == jnp.float32 for r in rewards.values())
    assert isinstance(info, dict)
    with pytest.raises(KeyError, match="missing"):
        env.step(jr.PRNGKey(2), state, {env.agents[0]: actions[env.agents[0]]})

    # The stacked API under vmap (agent order = dict order) equals single dict steps.
    stacked = jnp.stack([actions[ag] for ag in env.agents])
    keys = jr.split(jr.PRNGKey(3), n_batch)
    b_obs, b_state = jax.jit(jax.vmap(lambda k: env.reset_arrays(k)))(keys)
    b_act = jnp.stack([stacked] * n_batch)
    b_out = jax.jit(jax.vmap(lambda k, s, act: env.step_arrays(k, s, act)))(keys, b_state, b_act)
    for i in range(n_batch):
        single = step(keys[i], jax.tree.map(lambda x: x[i], b_state), actions, env.params)
        np.testing.assert_allclose(
            np.asarray(b_out[0][i]), np.stack([np.asarray(single[0][ag]) for ag in env.agents]), rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(np.asarray(b_out[2][i]), [float(single[2][ag]) for ag in env.agents], rtol=1e-5, atol=1e-4)
        assert bool(b_out[3][i]) == bool(single[3]["__all__"])

    # The rollout kernel: done exactly at max_steps; the terminal step returns a fresh episode.
    T = env.max_steps
    acts = jnp.broadcast_to(stacked, (T, A, a))
    run = counted("rollout", lambda k, s, p, xs: rollout(lambda kk, ss, aa: env.step_arrays(kk, ss, aa, p), k, s, xs))
    final, _, (r_obs, r_rew, r_done, r_info) = run(jr.PRNGKey(4), state, env.params, acts)
    assert r_obs.shape == (T, A, d) and r_rew.shape == (T, A) and r_done.shape == (T,)
    expected = np.zeros(T, bool)
    expected[-1] = True
    np.testing.assert_array_equal(np.asarray(r_done), expected)
    assert int(final.time_step) == 0

    # No retrace: more episodes stepped one call at a time, then new param values.
    import equinox as eqx

    arrays, static = eqx.partition(env.params, eqx.is_inexact_array)
    variant = eqx.combine(jax.tree.map(lambda x: x * 1.01, arrays), static)
    for p in (env.params, variant):
        _, s = reset(jr.PRNGKey(5), p)
        for t in range(episodes * T):
            _, s, _, _, _ = step(jr.PRNGKey(t), s, actions, p)
        run(jr.PRNGKey(6), s, p, acts)
    assert counts == {"reset": 1, "step": 1, "rollout": 1}, counts
    return counts


# -- market --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def market(case5):
    from powerzoojax.market import make_market_marl_params
    from powerzoojax.rl import MarketMARLEnv

    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    profiles = nominal[None, :] * np.linspace(0.7, 1.2, 6)[:, None]
    return MarketMARLEnv(make_market_marl_params(case5, profiles, max_steps=3))


@pytest.mark.requires("powerzoojax.market")
def test_market_adapter_conforms(market):
    assert market.agents == tuple(f"genco_{i}" for i in range(5))
    assert market.obs_dim == 12 and market.action_dim == 3
    check_marl_api(market)


@pytest.mark.requires("powerzoojax.market")
def test_market_obs_and_rewards_follow_the_core(market, case5):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.market import market_marl_step

    p = market.params
    obs, state = jax.jit(lambda k: market.reset(k))(jr.PRNGKey(7))
    s = state.env_state
    p_max = np.asarray(case5.unit_p_max, np.float64)
    # Spec §2.7, computed from the case tables with NumPy.
    expected_cols = {
        1: p_max / p_max.max(),
        2: np.asarray(s.unit_power_mw) / p_max,
        3: np.zeros(5),
        4: np.minimum(p_max - np.asarray(s.unit_power_mw), 0.5 * p_max) / p_max,
    }
    for i, ag in enumerate(market.agents):
        for col, vals in expected_cols.items():
            np.testing.assert_allclose(float(obs[ag][col]), vals[i], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(obs[ag][8:]), np.asarray(s.lmp_history) / p.lmp_scale, rtol=1e-6)
    actions = {ag: jnp.full((3,), 0.2 * i - 0.4) for i, ag in enumerate(market.agents)}
    _, _, rewards, dones, info = jax.jit(lambda k, st, act: market.step(k, st, act))(jr.PRNGKey(8), state, actions)
    flat = jnp.concatenate([actions[ag] for ag in market.agents])
    _, done, profit, core_info = jax.jit(market_marl_step)(jr.PRNGKey(8), s, flat, p)
    # separately compiled programs around an iterative SCED: equal up to float32 round-off
    np.testing.assert_allclose([float(rewards[ag]) for ag in market.agents], np.asarray(profit), rtol=1e-3, atol=1.0)
    assert bool(dones["__all__"]) == bool(done)
    np.testing.assert_allclose(np.asarray(info["lmp"]), np.asarray(core_info["lmp"]), rtol=1e-3, atol=1e-2)


# -- transmission grid ---------------------------------------------------------------


@pytest.mark.requires("powerzoojax.grid")
def test_grid_adapter_conforms_and_matches_the_env(case5):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.rl import GridMARLEnv

    base = TransGridEnv()
    params = make_trans_params(case5, max_steps=3)
    env = GridMARLEnv(base, params)
    assert env.agents == tuple(f"unit_{i}" for i in range(case5.n_units))
    assert env.obs_dim == case5.n_lines + case5.n_loads + case5.n_units + 3 and env.action_dim == 1
    check_marl_api(env)

    obs, state = jax.jit(lambda k: env.reset(k))(jr.PRNGKey(0))
    core, _ = base.reset(jr.PRNGKey(0), params)
    unit_norm = np.asarray(state.env_state.unit_power_mw) / np.maximum(np.asarray(case5.unit_p_max), 1.0)
    for i, ag in enumerate(env.agents):
        np.testing.assert_allclose(np.asarray(obs[ag][:-1]), np.asarray(core), rtol=1e-6)
        np.testing.assert_allclose(float(obs[ag][-1]), unit_norm[i], rtol=1e-5)
    set_points = np.linspace(-0.8, 0.8, case5.n_units).astype(np.float32)
    actions = {ag: jnp.asarray([set_points[i]]) for i, ag in enumerate(env.agents)}
    _, _, rewards, _, info = jax.jit(lambda k, s, a: env.step(k, s, a))(jr.PRNGKey(1), state, actions)
    _, _, ref_reward, ref_costs, _, _ = jax.jit(base.step)(jr.PRNGKey(1), state.env_state, jnp.asarray(set_points), params)
    for ag in env.agents:  # shared reward = the env's reward for the packed action
        np.testing.assert_allclose(float(rewards[ag]), float(ref_reward), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(info["constraint_costs"]), np.asarray(ref_costs))
    assert env.constraint_names() == base.constraint_names(params)
    with pytest.raises(ValueError, match="reward_mode"):
        GridMARLEnv(base, params, reward_mode="individual")


@pytest.mark.requires("powerzoojax.grid")
def test_grid_adapter_adds_one_agent_per_bundle_device(case5):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.grid.resources import make_battery_bundle, make_renewable_bundle
    from powerzoojax.rl import GridMARLEnv

    batt = make_battery_bundle(case5, (1, 3), power_mw=20.0, energy_mwh=50.0, enable_q_control=True)  # act 2, obs 3
    pv = make_renewable_bundle(case5, (4,), capacity_mw=30.0, enable_curtailment=True, enable_q_control=False)  # act 1, obs 3
    batt2 = make_battery_bundle(case5, (5,), power_mw=10.0, energy_mwh=20.0)  # act 1, obs 2
    base = TransGridEnv()
    params = make_trans_params(case5, max_steps=3, resources=(batt, pv, batt2))
    env = GridMARLEnv(base, params)
    U = case5.n_units
    # units, then devices in bundle order, indexed per type across bundles
    assert env.agents == (*(f"unit_{i}" for i in range(U)), "battery_0", "battery_1", "renewable_0", "battery_2")
    core = case5.n_lines + case5.n_loads + U + 2
    assert env.action_dim == 2 and env.obs_dim == core + 3
    check_marl_api(env, episodes=1)

    obs, state = jax.jit(lambda k: env.reset(k))(jr.PRNGKey(0))
    full, _ = base.reset(jr.PRNGKey(0), params)
    full = np.asarray(full)
    own = {  # each agent's own slice, read off the env observation by hand
        **{f"unit_{i}": full[core - 2 - U + i : core - 2 - U + i + 1] for i in range(U)},
        "battery_0": full[core : core + 3], "battery_1": full[core + 3 : core + 6],
        "renewable_0": full[core + 6 : core + 9], "battery_2": full[core + 9 : core + 11],
    }
    for ag in env.agents:
        np.testing.assert_allclose(np.asarray(obs[ag][:core]), full[:core], rtol=1e-6)
        mine = own[ag]
        np.testing.assert_allclose(np.asarray(obs[ag][core : core + mine.size]), mine, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(obs[ag][core + mine.size :]), 0.0)

    rng = np.random.default_rng(0)
    actions = {ag: jnp.asarray(rng.uniform(-1, 1, 2), jnp.float32) for ag in env.agents}
    # the env's action vector packed by hand: units (first entry), then bundle slices
    packed = np.concatenate(
        [[float(actions[f"unit_{i}"][0]) for i in range(U)],
         np.asarray(actions["battery_0"]), np.asarray(actions["battery_1"]),
         np.asarray(actions["renewable_0"][:1]), np.asarray(actions["battery_2"][:1])]
    ).astype(np.float32)
    assert packed.shape == (base.action_dim(params),)
    o2, _, rewards, _, info = jax.jit(lambda k, s, a: env.step(k, s, a))(jr.PRNGKey(1), state, actions)
    ref_obs, _, ref_reward, ref_costs, _, _ = jax.jit(base.step)(jr.PRNGKey(1), state.env_state, jnp.asarray(packed), params)
    for ag in env.agents:
        np.testing.assert_allclose(float(rewards[ag]), float(ref_reward), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(info["constraint_costs"]), np.asarray(ref_costs), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(o2["battery_1"][core:]), np.asarray(ref_obs)[core + 3 : core + 6], rtol=1e-6)

    # OPF dispatch with bundles: the devices are the only agents
    devices_only = GridMARLEnv(base, make_trans_params(case5, max_steps=3, resources=(batt,), include_unit_dispatch=False))
    assert devices_only.agents == ("battery_0", "battery_1")
    with pytest.raises(ValueError, match="no agents"):
        GridMARLEnv(base, make_trans_params(case5, max_steps=3, include_unit_dispatch=False))


# -- distribution grid ---------------------------------------------------------------


@pytest.fixture(scope="module")
def case33():
    from powerzoojax.case import load_case

    return load_case("33bw")


@pytest.mark.requires("powerzoojax.grid")
def test_bfs_neighbours_are_the_nearest_buses(case33):
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import shortest_path

    from powerzoojax.grid import make_dist_params
    from powerzoojax.grid.tasks.ders import bfs_neighbours

    net = make_dist_params(case33).network
    send, recv = np.asarray(net.send_idx), np.asarray(net.recv_idx)
    n = net.n_nodes
    graph = coo_matrix((np.ones(len(send)), (send, recv)), shape=(n, n))
    hops = shortest_path(graph, directed=False, unweighted=True)
    for bus in range(n):
        nb = np.asarray(bfs_neighbours(n, send, recv, bus, 4))
        assert bus not in nb.tolist()
        # the K chosen buses are K nearest by hop count (any tie order)
        chosen = np.sort(hops[bus, nb])
        others = np.sort(np.delete(hops[bus], np.concatenate([nb, [bus]])))
        assert chosen[-1] <= others[0] and len(set(nb.tolist())) == 4
    # a 2-bus feeder pads with the own bus
    np.testing.assert_array_equal(bfs_neighbours(2, np.array([0]), np.array([1]), 1, 4), [0, 1, 1, 1])


@pytest.mark.requires("powerzoojax.grid")
@pytest.mark.parametrize("mode", ["global", "local"])
def test_dist_adapter_conforms_and_shapes_rewards(case33, mode):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.grid import DistGridEnv, make_dist_params
    from powerzoojax.rl import DistGridMARLEnv

    base = DistGridEnv()
    params = make_dist_params(case33, max_steps=2)
    env = DistGridMARLEnv(base, params, voltage_penalty=3.0, observation_mode=mode)
    n, b = case33.n_nodes, params.network.n_branches
    assert env.agents == tuple(f"der_{i}" for i in range(n - 1))
    assert env.obs_dim == (3 * n + 2 * b + 2 + 2 if mode == "global" else 12)
    check_marl_api(env, episodes=1)

    obs, state = jax.jit(lambda k: env.reset(k))(jr.PRNGKey(0))
    v = (np.asarray(state.env_state.v_mag) - 1.0) / 0.1
    bus = np.asarray(params.der_bus_idx)
    nb = np.asarray(env.neighbours)
    for i in (0, 7, n - 2):
        o = np.asarray(obs[f"der_{i}"])
        if mode == "local":
            np.testing.assert_allclose(o[0], v[bus[i]], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(o[1:5], v[nb[i]], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(o[5:8], [v.min(), v.max(), v.mean()], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            o[-2], float(params.p_load_profiles[0, bus[i]]) / float(params.p_load_ref), rtol=1e-5
        )
    actions = jnp.full((n - 1, 1), 1.0)
    _, _, rewards, _, info = jax.jit(lambda k, s, a: env.step(k, s, a))(jr.PRNGKey(1), state, actions)
    _, _, ref_r, _, _, ref_info = jax.jit(base.step)(jr.PRNGKey(1), state.env_state, actions[:, 0], params)
    shaped = float(ref_r) - 3.0 * float(ref_info["cost_continuous"])
    np.testing.assert_allclose(float(rewards["der_3"]), shaped, rtol=1e-5)
    np.testing.assert_allclose(float(info["env_reward"]), float(ref_r), rtol=1e-6)
    with pytest.raises(ValueError, match="observation_mode"):
        DistGridMARLEnv(base, params, observation_mode="k-hop")


@pytest.mark.requires("powerzoojax.grid")
def test_dist_adapter_device_agents_use_the_ders_local_observations(case33):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.grid import DistGridEnv, make_dist_params
    from powerzoojax.grid.resources import make_battery_bundle, make_flexload_bundle, make_renewable_bundle
    from powerzoojax.grid.tasks.ders import ders_local_observations
    from powerzoojax.rl import DistGridMARLEnv

    batt = make_battery_bundle(case33, (9, 17), power_mw=0.1, energy_mwh=0.3, enable_q_control=True)  # act 2, obs 3
    pv = make_renewable_bundle(case33, (6,), capacity_mw=0.2)  # act 2, obs 4
    flex = make_flexload_bundle(case33, (24, 30), cap_curtail_mw=0.1, horizon=4)  # act 2, obs 5
    base = DistGridEnv()
    params = make_dist_params(case33, max_steps=2, resources=(batt, pv, flex), include_der=False)
    env = DistGridMARLEnv(base, params, observation_mode="local")
    assert env.agents == ("battery_0", "battery_1", "renewable_0", "flexload_0", "flexload_1")
    assert env.obs_dim == 1 + 4 + 3 + 2 + 5 and env.action_dim == 2
    # (dict-API conformance of the bundle layout: see the GridMARLEnv bundle test, same code path)

    obs, state = jax.jit(lambda k: env.reset_arrays(k))(jr.PRNGKey(0))
    full, _ = base.reset(jr.PRNGKey(0), params)
    # the grid package's DERs-task builder, which reads the layout straight from the bundles
    np.testing.assert_allclose(np.asarray(obs), np.asarray(ders_local_observations(full, params)), rtol=1e-5, atol=1e-5)
    v = (np.asarray(state.env_state.v_mag) - 1.0) / 0.1
    np.testing.assert_allclose(np.asarray(obs[:, 0]), v[[8, 16, 5, 23, 29]], rtol=1e-5, atol=1e-6)  # own bus (ids 1-based)

    rng = np.random.default_rng(1)
    actions = jnp.asarray(rng.uniform(-1, 1, (5, 2)), jnp.float32)
    packed = jnp.reshape(actions, (-1,))  # every device here has 2 actions: no padding
    _, _, rewards, _, info = jax.jit(lambda k, s, a: env.step_arrays(k, s, a))(jr.PRNGKey(1), state, actions)
    _, _, ref_r, ref_costs, _, _ = jax.jit(base.step)(jr.PRNGKey(1), state.env_state, packed, params)
    np.testing.assert_allclose(np.asarray(rewards), float(ref_r), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(info["constraint_costs"]), np.asarray(ref_costs), rtol=1e-6)

    # DERs on every bus plus a bundle, global observations: DER agents first, then devices
    mixed = DistGridMARLEnv(base, make_dist_params(case33, max_steps=2, resources=(pv,)), observation_mode="global")
    n, b = case33.n_nodes, params.network.n_branches
    assert mixed.agents == (*(f"der_{i}" for i in range(n - 1)), "renewable_0")
    assert mixed.obs_dim == 3 * n + 2 * b + 2 + 4 and mixed.action_dim == 2
    m_obs, _ = mixed.reset_arrays(jr.PRNGKey(0))
    m_full, _ = base.reset(jr.PRNGKey(0), mixed.params)
    core = 3 * n + 2 * b + 2
    np.testing.assert_allclose(np.asarray(m_obs[-1, core:]), np.asarray(m_full[core:]), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(m_obs[0, core + 2 :]), 0.0)  # a DER's 2-entry slice, padded


@pytest.mark.requires("powerzoojax.grid")
def test_ders_task_env_has_twelve_typed_agents_with_15_local_obs():
    import jax
    import jax.random as jr

    from powerzoojax.grid.tasks.ders import DERS_AGENT_NAMES, ders_local_observations
    from powerzoojax.rl import make_ders_marl_env

    env = make_ders_marl_env(voltage_penalty=8.0)
    assert env.agents == DERS_AGENT_NAMES and env.obs_dim == 15 and env.action_dim == 2
    assert env.agent_types == ("battery",) * 4 + ("renewable",) * 4 + ("flexload",) * 4
    obs, state = jax.jit(lambda k: env.reset_arrays(k))(jr.PRNGKey(0))
    full, _ = env.env.reset(jr.PRNGKey(0), env.params)
    np.testing.assert_allclose(np.asarray(obs), np.asarray(ders_local_observations(full, env.params)), rtol=1e-5, atol=1e-5)


@pytest.mark.requires("powerzoojax.market")
def test_market_metrics_on_known_dispatches(market):
    import jax.numpy as jnp

    S, E = 4, 3
    lmp = jnp.broadcast_to(jnp.asarray([10.0, 20.0, 30.0, 40.0])[:, None, None], (S, E, 5))
    equal = market.compute_market_metrics({"lmp": lmp, "unit_power": jnp.ones((S, E, 5))})
    np.testing.assert_allclose(float(equal["market/HHI"]), 0.2, rtol=1e-5)
    np.testing.assert_allclose(float(equal["market/market_share_std"]), 0.0, atol=1e-6)
    series = np.asarray([10.0, 20.0, 30.0, 40.0])
    np.testing.assert_allclose(float(equal["market/price_volatility"]), series.std() / series.mean(), rtol=1e-5)
    mono = market.compute_market_metrics({"lmp": lmp, "unit_power": jnp.zeros((S, E, 5)).at[..., 4].set(600.0)})
    np.testing.assert_allclose(float(mono["market/HHI"]), 1.0, rtol=1e-5)
    np.testing.assert_allclose(float(mono["market/dispatch_share_genco_4"]), 1.0, rtol=1e-5)


@pytest.mark.slow  # compiles a market rollout with the SCED inside (> 20 s on a busy 2-core box)
@pytest.mark.requires("powerzoojax.market")
def test_planner_cost_ratio_is_one_for_truthful_offers(case5):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.core import rollout
    from powerzoojax.market import make_market_marl_params
    from powerzoojax.rl import MarketMARLEnv

    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    profiles = nominal[None, :] * np.linspace(0.7, 1.2, 6)[:, None]
    # ramps never bind (a unit may move over its whole range in one step)
    env = MarketMARLEnv(make_market_marl_params(case5, profiles, max_steps=3, ramp_rate_fraction=1.0))

    @jax.jit
    def metrics(key, markup):
        obs, s = env.reset_arrays(key)
        acts = jnp.full((4, 5, 3), markup)
        _, _, (_, _, _, info) = rollout(env.step_arrays, key, s, acts)
        info = jax.tree.map(lambda x: x[:, None], info)  # (S, E=1, ...)
        return env.compute_market_metrics(info), info

    truthful, info = metrics(jr.PRNGKey(0), -1.0)
    # the pre-step load each round cleared: rows start, start+1, … of the profile (4 steps wrap the episode)
    assert info["load_mw"].shape == (4, 1, case5.n_nodes)
    np.testing.assert_allclose(float(truthful["market/planner_cost_ratio"]), 1.0, rtol=2e-3)
    marked_up, _ = metrics(jr.PRNGKey(0), 1.0)
    # with every offer doubled the ramp-free clearing is the same merit order: still ≈ 1;
    # the ratio can only drop below 1 when the offers reorder the merit order
    assert float(marked_up["market/planner_cost_ratio"]) <= 1.0 + 2e-3
