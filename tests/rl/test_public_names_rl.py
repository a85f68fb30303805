"""The reference's powerzoojax.rl names, and the task factories that build pzj-rl
adapters: DERs MARL envs (single- and three-phase) and the GenCos MarketMARLEnv rollouts."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from reference_public_names import all_names

KEY = jr.PRNGKey(0)


def test_rl_names_resolve():
    import powerzoojax.rl as rl

    names = all_names("powerzoojax.rl")
    assert len(names) == 25
    for name in names:
        assert getattr(rl, name) is not None, name


@pytest.mark.requires("powerzoojax.grid")
def test_ders_marl_envs():
    from powerzoojax.rl import DistGridMARLEnv
    from powerzoojax.tasks import make_ders_large_marl_env, make_ders_marl_env

    env, params = make_ders_marl_env(max_steps=4)
    assert isinstance(env, DistGridMARLEnv) and env.params is params
    assert env.num_agents == 12 and env.obs_dim == 15 and env.action_dim == 2 and env.voltage_penalty == 8.0
    assert env.agent_names[0] == "battery_0" and env.agent_names[-1] == "flexload_3"
    glob, _ = make_ders_marl_env(max_steps=4, observation_mode="global")
    assert glob.obs_dim == 3 * 141 + 2 * 140 + 2 + 5
    large, large_params = make_ders_large_marl_env(max_steps=4)
    assert large.num_agents == 20 and large.voltage_penalty == 12.0 and float(large_params.v_min) == pytest.approx(0.96)


@pytest.mark.requires("powerzoojax.grid")
def test_ders_3phase_eval_on_a_radial_feeder():
    """Case 123 waits for its registry id; the harness runs on any radial case (33bw here)."""
    from powerzoojax.case import load_case
    from powerzoojax.grid import DistGrid3PhaseEnv
    from powerzoojax.rl import DistGrid3PhaseMARLEnv
    from powerzoojax.tasks import make_ders_3phase_eval

    case = load_case("33bw")
    env, params = make_ders_3phase_eval(case, max_steps=3, battery_buses=[10, 20, 30])
    assert isinstance(env, DistGrid3PhaseMARLEnv) and env.agent_names == ["battery_0", "battery_1", "battery_2"]
    assert env.obs_dim == 15 and env.natural_obs_dim == 1 + 4 + 3 + 2 + 3  # battery device obs 3, padded to 15
    # Loads are split equally over the phases.
    np.testing.assert_allclose(np.asarray(params.p_load_profiles[0]).sum(axis=1),
                               np.asarray(case.node_pd) / case.base_mva, rtol=1e-5, atol=1e-9)
    obs, state = env.reset(KEY)
    inner_obs, _ = DistGrid3PhaseEnv().reset(KEY, params)
    n = case.n_nodes
    v_avg = (inner_obs[:n] + inner_obs[n : 2 * n] + inner_obs[2 * n : 3 * n]) / 3
    row = np.asarray(obs["battery_1"])
    assert row[0] == pytest.approx(float(v_avg[19]), abs=1e-6)  # own bus (bus 20, index 19)
    assert row[5:8] == pytest.approx([float(v_avg.min()), float(v_avg.max()), float(v_avg.mean())], abs=1e-6)
    np.testing.assert_array_equal(row[13:], 0.0)  # padding
    actions = {a: jnp.array([0.5, 0.0]) for a in env.agent_names}
    obs2, state2, rewards, dones, info = jax.jit(lambda k, s, a: env.step(k, s, a))(KEY, state, actions)
    shaped = float(info["env_reward"]) - 8.0 * float(info["cost_continuous"])
    assert float(rewards["battery_0"]) == pytest.approx(shaped, rel=1e-5, abs=1e-7)
    assert float(info["p_loss_MW"]) > 0 and bool(dones["__all__"]) is False
    with pytest.raises(ValueError, match="not a tree"):
        make_ders_3phase_eval(load_case("14"), max_steps=2, battery_buses=[2])


@functools.lru_cache(maxsize=None)
def _gencos():
    from powerzoojax.case import load_case
    from powerzoojax.market.tasks.gencos import rollout_gencos, rollout_gencos_baseline
    from powerzoojax.tasks import load_gencos_profiles, make_gencos_env

    case = load_case("5")
    env, params = make_gencos_env(case, load_gencos_profiles(case, "iid")[:96], max_steps=6)
    runs = {name: rollout_gencos_baseline(env, KEY, name) for name in ("truthful", "uniform_mid", "max_markup")}
    runs["policy"] = rollout_gencos(env, KEY, lambda obs: {a: jnp.full((3,), 1.0) for a in obs})
    return env, params, runs


@pytest.mark.requires("powerzoojax.market")
def test_make_gencos_env():
    from powerzoojax.rl import MarketMARLEnv

    env, params, _ = _gencos()
    assert isinstance(env, MarketMARLEnv) and env.params is params
    assert env.agent_names == [f"genco_{i}" for i in range(5)] and env.obs_dim == 12 and env.action_dim == 3


@pytest.mark.requires("powerzoojax.market")
def test_gencos_rollouts_and_metrics():
    from powerzoojax.tasks import compute_gencos_metrics

    env, _, runs = _gencos()
    truthful, high = runs["truthful"], runs["max_markup"]
    assert set(truthful["profits"]) == set(env.agent_names) and truthful["lmp"].shape == (6, 5)
    assert truthful["unit_power"].shape == (6, 5) and truthful["gen_cost"].shape == (6,)
    # A dict policy bidding the maximum everywhere is the max_markup baseline.
    for a in env.agent_names:
        np.testing.assert_allclose(runs["policy"]["profits"][a], high["profits"][a], rtol=1e-6)
    m_true = compute_gencos_metrics(truthful, env.agent_names)
    m_high = compute_gencos_metrics(high, env.agent_names)
    assert m_high["total_profit"] > m_true["total_profit"] and m_high["mean_lmp"] > m_true["mean_lmp"]
    assert m_true["total_profit"] == pytest.approx(sum(float(np.sum(v)) for v in truthful["profits"].values()), rel=1e-6)
    share = truthful["unit_power"] / truthful["unit_power"].sum(axis=-1, keepdims=True)
    assert m_true["hhi"] == pytest.approx(float(np.mean(np.sum(share**2, axis=-1))), rel=1e-5)
    assert 0.0 <= m_true["sced_convergence_rate"] <= 1.0
    with pytest.raises(ValueError, match="unknown GenCos strategy"):
        from powerzoojax.market.tasks.gencos import rollout_gencos_baseline

        rollout_gencos_baseline(env, KEY, "collude")
