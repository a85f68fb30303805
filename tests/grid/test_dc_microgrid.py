"""DataCenterMicrogridEnv (spec §5): contract, energy balance every step, reward terms and
observation layout against NumPy recomputations, islanded vs grid-connected, SOC bounds,
terminal SOC penalty, factory errors."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import strategies as st

from powerzoojax.testing import env_property_test

DT = 5.0 / 60.0


def _params(**kw):
    from powerzoojax.grid import make_dcmicrogrid_params

    return make_dcmicrogrid_params(**kw)


@functools.lru_cache(maxsize=None)
def _env():
    from powerzoojax.grid import DataCenterMicrogridEnv

    return DataCenterMicrogridEnv()


@functools.lru_cache(maxsize=None)
def _run(length: int):
    """Jitted ``length``-step rollout under given actions: (obs, rewards, costs, done, info, states)."""
    from powerzoojax.core import bind_step, rollout

    env = _env()

    @jax.jit
    def run(key, params, actions):
        _, state = env.reset(key, params)

        def step(k, s, a):
            obs, s2, r, c, d, info = bind_step(env, params)(k, s, a)
            return obs, s2, r, c, d, info, s2

        _, _, outs = rollout(step, key, state, actions, length=length)
        return outs

    return run


def _random_actions(seed: int, n: int) -> jnp.ndarray:
    u = jr.uniform(jr.PRNGKey(seed), (n, 5))
    return u.at[:, 3].set(2.0 * u[:, 3] - 1.0)


def test_conformance_kit():
    from powerzoojax.testing import check_env_api, check_no_retrace

    params = _params(max_steps=4, price_profile=np.linspace(40.0, 200.0, 288))
    check_env_api(_env(), params, stochastic=True)
    assert check_no_retrace(_env(), params, n_episodes=2) == {"reset": 1, "step": 1, "rollout": 1}


def test_spaces_and_names():
    params = _params()
    env = _env()
    space = env.observation_space(params)
    assert space.shape == (24,)
    np.testing.assert_array_equal(np.flatnonzero(np.asarray(space.low) < 0), [4, 12, 20, 22, 23])
    assert env.action_space(params).shape == (5,)
    np.testing.assert_array_equal(np.asarray(env.action_space(params).low), [0, 0, 0, -1, 0])
    assert env.constraint_names(params) == ("sla", "overtemp", "power_deficit")
    assert params.max_steps == 288 and abs(params.delta_t_hours - DT) < 1e-12


def _grid_and_pv(params):
    """Islanded, a small or a large grid connection, and any PV size up to 1.5 MW."""
    where = lambda p: (p.grid_import_p_max_mw, p.pv_capacity_mw)  # noqa: E731
    values = st.tuples(st.sampled_from([0.0, 0.3, 1.5]), st.floats(0.0, 1.5))
    return values.map(lambda v: eqx.tree_at(where, params, tuple(jnp.asarray(x, jnp.float32) for x in v)))


@env_property_test(lambda: (_env(), _params(max_steps=96)), vary_params=_grid_and_pv, max_examples=6)
def test_energy_balance_every_step(env, params, trajectory):
    """The kit checks the microgrid's laws on every step: balance at the PCC, the dispatch
    order there (import covers shortfalls up to its cap, never shed and spilled at once),
    the battery's SOC band and energy, and the data centre's. Here: the deficit channel and
    the load the step reports."""
    i = {k: np.asarray(v, np.float64) for k, v in trajectory.info.items()}
    cap = float(params.grid_import_p_max_mw)
    np.testing.assert_allclose(trajectory.costs[:, 2], i["power_deficit"] / np.maximum(i["p_load_mw"], 1e-6), rtol=1e-5)
    np.testing.assert_allclose(i["p_load_mw"], i["p_dc_mw"])
    # Grid import is used only to cover what local sources miss, up to the cap.
    np.testing.assert_allclose(i["p_grid_import_mw"], np.minimum(np.maximum(-i["raw_residual"], 0), cap), atol=1e-6)
    assert {"pcc_power_balance", "pcc_dispatch_order", "battery_soc_bounds"} <= {law.name for law in env.physics_invariants(params)}


def test_microgrid_laws_catch_an_unbalanced_pcc_and_a_battery_out_of_step():
    from powerzoojax.testing import record_trajectory

    env, params = _env(), _params(max_steps=96, grid_import_p_max_mw=0.3)
    traj, _ = record_trajectory(env, params, jr.PRNGKey(0), _random_actions(0, 97))
    laws = {law.name: law for law in env.physics_invariants(params)}
    assert all(law.violations(traj, params) == [] for law in laws.values())
    info = traj.info
    hidden = traj._replace(info={**info, "power_deficit": np.asarray(info["power_deficit"]) + 0.01})
    assert len(laws["pcc_power_balance"].violations(hidden, params)) == 97
    # Importing while spilling: the grid never feeds a surplus.
    spill = np.asarray(info["power_spill"]) > 0
    assert spill.any()
    feeding = traj._replace(info={**info, "p_grid_import_mw": np.where(spill, 0.1, info["p_grid_import_mw"]).astype(np.float32)})
    assert laws["pcc_dispatch_order"].violations(feeding, params)
    soc = np.asarray(traj.next_state.soc) + 0.01
    drifted = traj._replace(next_state=eqx.tree_at(lambda s: s.soc, traj.next_state, soc))
    assert laws["battery_stored_energy"].violations(drifted, params)


def test_reward_terms_match_numpy():
    price = np.where(np.arange(288) < 144, 60.0, 240.0)
    params = _params(max_steps=96, grid_import_p_max_mw=0.8, terminal_soc_penalty=1000.0, price_profile=price)
    actions = _random_actions(3, 96)
    obs, reward, costs, done, info, states = _run(96)(jr.PRNGKey(3), params, actions)
    i = {k: np.asarray(v, np.float64) for k, v in info.items()}
    t = np.arange(96)
    a = np.clip(np.asarray(actions, np.float64), [0, 0, 0, -1, 0], 1)
    p_dg = a[:, 4] * 0.6
    np.testing.assert_allclose(i["p_dg_mw"], p_dg, rtol=1e-6)
    pv = 0.4 * np.clip(np.sin(np.pi * (24.0 * t / 288 - 6.0) / 12.0), 0, 1)
    np.testing.assert_allclose(i["p_pv_mw"], pv, atol=1e-6)
    fuel = p_dg * DT * 300.0
    carbon = p_dg * DT * 1000 * 0.8
    grid_cost = i["p_grid_import_mw"] * DT * price[:96]
    grid_carbon = i["p_grid_import_mw"] * DT * 1000 * 0.18
    terminal = np.zeros(96)
    terminal[-1] = 1000.0 * (i["soc"][-1] - 0.5) ** 2
    r_energy = -i["p_dc_mw"] * DT
    r_cost = -(fuel + grid_cost + np.abs(i["p_batt_mw"]) * DT * 5.0 + terminal)
    r_carbon = -(carbon + grid_carbon)
    np.testing.assert_allclose(i["reward_vector"], np.stack([r_energy, r_cost, r_carbon], axis=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(reward), r_energy + 0.5 * r_cost + 0.3 * r_carbon, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(i["terminal_soc_cost"], terminal, rtol=1e-5, atol=1e-6)
    assert np.asarray(done).tolist() == [False] * 95 + [True]
    # Battery power respects the SOC-feasible limits of the step it was taken in.
    soc_prev = np.concatenate([[0.5], i["soc"][:-1]])
    p_dis = np.clip((soc_prev - 0.1) * 2.0 * 0.95 / DT, 0, 0.5)
    p_chg = np.clip((0.9 - soc_prev) * 2.0 / (0.95 * DT), 0, 0.5)
    np.testing.assert_allclose(i["p_batt_mw"], np.clip(a[:, 3] * 0.5, -p_chg, p_dis), atol=1e-6)


def test_observation_layout():
    price = np.linspace(30.0, 300.0, 288)
    params = _params(max_steps=96, price_profile=price)
    actions = _random_actions(5, 96)
    obs, reward, costs, done, info, states = _run(96)(jr.PRNGKey(5), params, actions)
    obs = np.asarray(obs)
    s = states
    k = 10  # obs after step k is at time index k + 1
    t = k + 1
    np.testing.assert_allclose(obs[k, 9], float(s.soc[k]), rtol=1e-6)
    np.testing.assert_allclose(obs[k, 17:22], np.clip(np.asarray(actions[k]), [0, 0, 0, -1, 0], 1), rtol=1e-6)
    np.testing.assert_allclose(obs[k, 15], min(price[t] / 150.0, 1.0), rtol=1e-5)
    np.testing.assert_allclose(obs[k, 16], min(price[t:t + 72].max() / 150.0, 1.0), rtol=1e-5)
    np.testing.assert_allclose(obs[k, 8], np.clip(np.sin(np.pi * (24.0 * t / 288 - 6.0) / 12.0), 0, 1), atol=1e-6)
    np.testing.assert_allclose(obs[k, 10], 1.0 - float(s.p_dg_mw[k]) / 0.6, rtol=1e-5)
    np.testing.assert_allclose(obs[k, 12], np.clip((float(s.p_load_mw[k]) - float(s.p_pv_mw[k])) / 1.1, -1, 1), rtol=1e-5)
    np.testing.assert_allclose(obs[k, 5], (float(s.dc.t_zone[k]) - 15) / 30, rtol=1e-5)
    np.testing.assert_allclose(obs[k, 22:], [np.sin(2 * np.pi * t / 288), np.cos(2 * np.pi * t / 288)], atol=1e-6)
    # Without a price profile the price entries are hidden.
    obs0, _ = _env().reset(jr.PRNGKey(0), _params())
    assert float(obs0[15]) == 0.0 and float(obs0[16]) == 0.0


def test_islanded_vs_grid_connected():
    actions = jnp.zeros((96, 5), jnp.float32)  # no battery, no diesel
    island = _params(max_steps=96)
    connected = _params(max_steps=96, grid_import_p_max_mw=5.0)
    *_, info_i, _ = _run(96)(jr.PRNGKey(0), island, actions)
    *_, info_c, _ = _run(96)(jr.PRNGKey(0), connected, actions)
    assert float(jnp.max(info_i["p_grid_import_mw"])) == 0.0
    assert float(jnp.min(info_i["power_deficit"])) > 0.0  # night: nothing supplies the load
    assert float(jnp.max(info_c["power_deficit"])) == 0.0
    assert float(jnp.sum(info_c["grid_cost"])) > 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"battery_soc_min": 0.9, "battery_soc_max": 0.5}, "battery_soc_min"),
        ({"battery_soc_init": 0.95}, "battery_soc_init"),
        ({"battery_eta": 1.2}, "battery_eta"),
        ({"pv_cf_profile": [0.2, 1.4]}, "pv_cf_profile"),
        ({"cpu_profile": np.ones((2, 2))}, "cpu_profile"),
        ({"price_profile": [np.inf]}, "price_profile"),
        ({"dg_p_max_mw": 0.0}, "dg_p_max_mw"),
        ({"w_cost": float("nan")}, "w_cost"),
    ],
)
def test_factory_errors_name_the_bad_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _params(**kwargs)


def test_bad_action_shape():
    params = _params()
    _, state = _env().reset(jr.PRNGKey(0), params)
    with pytest.raises(ValueError, match="shape"):
        _env().step(jr.PRNGKey(0), state, jnp.zeros(3), params)
