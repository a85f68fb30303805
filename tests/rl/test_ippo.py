"""IPPO and typed IPPO: learning, parameter sharing by type, seeds under vmap, dispatch,
the deterministic act function; the GenCos market and case-5 grid learning runs."""

import numpy as np
import pytest

TARGETS = {"alpha": 0.5, "beta": -0.5}


@pytest.fixture(scope="module")
def toy_marl():
    """Three agents of two types seeing identical observations; agent i is paid
    ``−(a_i − target[type_i])²``. Only a policy that tells the types apart can serve both."""
    import jax.numpy as jnp
    from jaxtyping import Array, Bool, Float

    from powerzoojax.core import EnvParams, EnvState, select_tree
    from powerzoojax.rl import MARLState, MultiAgentEnvironment

    class ToyMARL(MultiAgentEnvironment):
        def __init__(self, max_steps: int = 8):
            self.params = EnvParams(max_steps=max_steps)
            self.agents = ("alpha_0", "beta_0", "alpha_1")

        @property
        def obs_dim(self) -> int:
            return 2

        @property
        def action_dim(self) -> int:
            return 1

        def _obs(self, t):
            x = jnp.stack([jnp.ones((), jnp.float32), t.astype(jnp.float32) / self.params.max_steps])
            return jnp.broadcast_to(x, (3, 2))

        def _fresh(self):
            return EnvState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False))

        def reset_env(self, key, params):
            s = self._fresh()
            return self._obs(s.time_step), MARLState(s)

        def step_env(self, key, state, actions: Float[Array, "3 1"], params):
            target = jnp.asarray([TARGETS["alpha"], TARGETS["beta"], TARGETS["alpha"]])
            reward = -((jnp.clip(actions[:, 0], -1, 1) - target) ** 2)
            t = state.env_state.time_step + 1
            done: Bool[Array, ""] = t >= self.params.max_steps
            s = select_tree(done, self._fresh(), EnvState(time_step=t, done=done))
            return self._obs(s.time_step), MARLState(s), reward, done, {"team": jnp.mean(reward)}

    return ToyMARL()


@pytest.fixture(scope="module")
def toy_config():
    from powerzoojax.rl import TrainConfig

    return TrainConfig(
        algo="ippo_typed", total_timesteps=8 * 8 * 40, num_envs=8, n_steps=8, n_epochs=4, n_minibatches=2,
        hidden_dims=(16,), learning_rate=1e-2, ent_coef=0.0, eval_freq=8 * 8 * 40, eval_num_episodes=4,
    )


@pytest.fixture(scope="module")
def toy_runs(toy_marl, toy_config):
    import jax.random as jr

    from powerzoojax.rl import make_train

    typed = make_train(toy_marl, toy_config)(jr.PRNGKey(0))
    shared = make_train(toy_marl, toy_config.replace(algo="ippo"))(jr.PRNGKey(0))
    return typed, shared


def test_typed_ippo_shares_parameters_by_type(toy_marl, toy_runs):
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.rl import ActorCritic, make_ippo_act

    typed, shared = toy_runs
    assert set(typed.params) == {"alpha", "beta"} and isinstance(shared.params, ActorCritic)
    act = make_ippo_act(typed, toy_marl)
    obs, _ = toy_marl.reset(jr.PRNGKey(0))
    actions = act(obs)
    # jit returns dicts with sorted keys (a JAX pytree rule): agent order lives in env.agents
    assert set(actions) == set(toy_marl.agents)
    for agent, a in actions.items():
        assert abs(float(a[0]) - TARGETS[agent.split("_")[0]]) < 0.15, (agent, a)
    # the two alpha agents share one network, so identical observations give identical actions
    np.testing.assert_array_equal(np.asarray(actions["alpha_0"]), np.asarray(actions["alpha_1"]))
    # stacked obs in, stacked actions out
    stacked = act(jnp.stack([obs[a] for a in toy_marl.agents]))
    np.testing.assert_allclose(np.asarray(stacked[:, 0]), [float(actions[a][0]) for a in toy_marl.agents])


def test_full_sharing_cannot_separate_identical_agents_but_typed_can(toy_runs):
    typed, shared = toy_runs
    typed_final = float(np.asarray(typed.metrics["eval_returns"])[-1])
    shared_final = float(np.asarray(shared.metrics["eval_returns"])[-1])
    # shared policy, identical obs: one action for all, best is the weighted mean target
    # (1/6 here) with mean loss 2/9 per step; typed can get close to 0.
    assert shared_final < -0.15 * 8, shared_final
    assert typed_final > -0.05 * 8, typed_final
    first = np.asarray(typed.metrics["episode_return"])
    assert np.nanmean(first[-5:]) > np.nanmean(first[:5]) + 0.5


def test_agent_ids_let_a_shared_policy_separate_the_agents(toy_marl, toy_config):
    import jax.random as jr

    from powerzoojax.rl import make_ippo_act, make_ippo_train

    res = make_ippo_train(toy_marl, toy_config.replace(algo="ippo"), agent_ids=True)(jr.PRNGKey(1))
    act = make_ippo_act(res, toy_marl)
    obs, _ = toy_marl.reset(jr.PRNGKey(0))
    a = act(obs)
    assert float(a["alpha_0"][0]) > float(a["beta_0"][0]) + 0.5
    with pytest.raises(TypeError, match="pass the env"):
        make_ippo_act(res.__class__(params={"x": res.params}, metrics={}, config=res.config))


def test_ippo_training_vmaps_over_seeds(toy_marl, toy_config):
    import jax
    import jax.random as jr

    from powerzoojax.rl import make_ippo_train

    cfg = toy_config.replace(algo="ippo", total_timesteps=8 * 8 * 3, eval_freq=0)
    trainer = make_ippo_train(toy_marl, cfg)
    keys = jr.split(jr.PRNGKey(3), 2)
    states, metrics = jax.jit(jax.vmap(trainer.train))(keys)
    assert metrics["loss"].shape == (2, 3)
    _, single = trainer._jit_train(keys[1])
    np.testing.assert_allclose(np.asarray(metrics["loss"][1]), np.asarray(single["loss"]), rtol=1e-4, atol=1e-6)
    assert not np.allclose(np.asarray(metrics["loss"][0]), np.asarray(metrics["loss"][1]))


def test_dispatch_checks_single_vs_multi_agent(toy_marl, toy_config, toy):
    from powerzoojax.rl import IPPOTrainer, LogWrapper, make_train

    assert isinstance(make_train(toy_marl, toy_config.replace(algo="ippo")), IPPOTrainer)
    with pytest.raises(TypeError, match="single-agent"):
        make_train(toy_marl, toy_config.replace(algo="ppo"))
    env, params = toy
    with pytest.raises(TypeError, match="multi-agent adapter"):
        make_train(LogWrapper(env, params), toy_config.replace(algo="ippo"))
    with pytest.raises(NotImplementedError, match="MAPPO"):
        make_train(toy_marl, toy_config.replace(algo="mappo"))


@pytest.fixture(scope="module")
def toy_cost_marl():
    """Two agents of two types, each paid its own action ``a_i`` (so both want +1), with one
    team cost channel ``relu(mean a)`` per step: the unconstrained optimum spends 1 per step."""
    import jax.numpy as jnp
    from jaxtyping import Array, Bool, Float

    from powerzoojax.core import EnvParams, EnvState, select_tree
    from powerzoojax.rl import MARLState, MultiAgentEnvironment

    class ToyCostMARL(MultiAgentEnvironment):
        def __init__(self, max_steps: int = 8):
            self.params = EnvParams(max_steps=max_steps)
            self.agents = ("alpha_0", "beta_0")

        @property
        def obs_dim(self) -> int:
            return 1

        @property
        def action_dim(self) -> int:
            return 1

        def constraint_names(self):
            return ("spend", "unused")

        def _fresh(self):
            return EnvState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False))

        def reset_env(self, key, params):
            return jnp.ones((2, 1), jnp.float32), MARLState(self._fresh())

        def step_env(self, key, state, actions: Float[Array, "2 1"], params):
            a = jnp.clip(actions[:, 0], -1, 1)
            costs = jnp.stack([jnp.maximum(jnp.mean(a), 0.0), jnp.zeros(())])
            t = state.env_state.time_step + 1
            done: Bool[Array, ""] = t >= self.params.max_steps
            s = select_tree(done, self._fresh(), EnvState(time_step=t, done=done))
            return jnp.ones((2, 1), jnp.float32), MARLState(s), a, done, {"constraint_costs": costs}

    return ToyCostMARL()


def test_typed_ippo_lagrangian_meets_the_team_budget(toy_cost_marl, toy_config):
    import jax.random as jr

    from powerzoojax.rl import make_ippo_typed_lagrangian_train, make_ippo_act, make_train

    cfg = toy_config.replace(eval_freq=0, total_timesteps=8 * 8 * 60, learning_rate=5e-3)
    lag_cfg = cfg.replace(algo="ippo_typed_lagrangian", cost_thresholds=(1.0,), lambda_lr=0.05)
    lag = make_ippo_typed_lagrangian_train(toy_cost_marl, lag_cfg, selected_names=("spend",))(jr.PRNGKey(0))
    m_lag = lag.metrics
    assert "mean_cost_unused" not in m_lag
    tail = lambda m, k: float(np.mean(np.asarray(m[k])[-10:]))  # noqa: E731
    est = np.asarray(m_lag["episode_cost_est_spend"])
    # Unconstrained, both agents would push a → 1 and spend 1 per step (8 per episode);
    # the budget is 1 per episode: λ grows and the spend comes down close to it ...
    assert est.max() > 4.0 and tail(m_lag, "episode_cost_est_spend") < 2.5, est
    assert float(np.asarray(m_lag["lambda_spend"])[-1]) > 1.0
    # ... without collapsing to a = −1 (the budget optimum is mean a = 1/8, reward ≈ 0.125)
    assert tail(m_lag, "mean_reward") > -0.5, tail(m_lag, "mean_reward")
    assert set(lag.params) == {"actor", "cost"} and set(lag.params["actor"]) == {"alpha", "beta"}
    assert lag.params["cost"]["log_lambda"].shape == (1,)
    act = make_ippo_act(lag, toy_cost_marl)  # typed-Lagrangian params act like typed ones
    assert act(np.ones((2, 1), np.float32)).shape == (2, 1)
    # make_train routes the algo (every channel constrained) and thresholds are required
    assert make_train(toy_cost_marl, lag_cfg.replace(cost_thresholds=(1.0, 0.0))).n_costs == 2
    with pytest.raises(ValueError, match="cost_thresholds"):
        make_train(toy_cost_marl, cfg.replace(algo="ippo_typed_lagrangian"))
    with pytest.raises(ValueError, match="subset"):
        make_ippo_typed_lagrangian_train(toy_cost_marl, lag_cfg, selected_names=("nope",))


@pytest.mark.slow
@pytest.mark.requires("powerzoojax.grid")
def test_ippo_beats_random_on_case5_unit_agents(case5):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.core import rollout
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.rl import GridMARLEnv, TrainConfig, make_ippo_train

    env = GridMARLEnv(TransGridEnv(), make_trans_params(case5, max_steps=8))
    cfg = TrainConfig(
        algo="ippo", total_timesteps=16 * 8 * 40, num_envs=16, n_steps=8, n_epochs=4, n_minibatches=2,
        hidden_dims=(32, 32), learning_rate=3e-3, ent_coef=0.0, normalize_rewards=True,
        eval_freq=16 * 8 * 40, eval_num_episodes=8,
    )
    result = make_ippo_train(env, cfg)(jr.PRNGKey(0))
    trained = float(np.asarray(result.metrics["eval_returns"])[-1])

    @jax.jit
    def random_return(key):
        def one(k):
            obs, s = env.reset_arrays(k)
            policy = lambda kk, o, _: (jr.uniform(kk, (env.num_agents, 1), minval=-1.0, maxval=1.0), ())  # noqa: E731
            _, _, outs = rollout(env.step_arrays, k, s, length=env.max_steps, policy=policy, init_obs=obs)
            return jnp.sum(jnp.mean(outs[1], axis=-1))

        return jnp.mean(jax.vmap(one)(jr.split(key, 64)))

    rand = float(random_return(jr.PRNGKey(1)))
    # −0.01·cost: uniform random ≈ −1290 per 8 steps; best constant dispatch ≈ −652.
    assert trained > 0.8 * rand, (trained, rand)


# -- GenCos market (slow: the SCED in every step makes each update costly on a CPU) -----


@pytest.mark.slow
@pytest.mark.requires("powerzoojax.market")
def test_ippo_on_the_gencos_market_beats_random_and_ends_between_baselines(case5):
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.core import rollout
    from powerzoojax.market import make_market_marl_params, run_market_baseline
    from powerzoojax.rl import MarketMARLEnv, TrainConfig, make_ippo_train

    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    profiles = nominal[None, :] * np.linspace(0.7, 1.2, 8)[:, None]
    params = make_market_marl_params(case5, profiles, max_steps=12)
    env = MarketMARLEnv(params)
    cfg = TrainConfig(
        algo="ippo", total_timesteps=64 * 12 * 120, num_envs=64, n_steps=12, n_epochs=4, n_minibatches=2,
        hidden_dims=(32, 32), learning_rate=1e-3, ent_coef=0.0, gamma=0.9, normalize_rewards=True,
        eval_freq=64 * 12 * 20, eval_num_episodes=32,
    )
    result = make_ippo_train(env, cfg, agent_ids=True)(jr.PRNGKey(0))
    market_keys = {
        "market/price_volatility", "market/HHI", "market/market_share_std", "market/ramp_binding_rate",
        "market/planner_cost_ratio", "market/cum_profit_mean", "market/convergence_stability",
    } | {f"market/{m}_{a}" for m in ("dispatch_share", "cumulative_profit", "mean_profit") for a in env.agents}
    assert market_keys <= set(result.metrics), sorted(market_keys - set(result.metrics))
    assert np.isfinite(np.asarray(result.metrics["market/convergence_stability"])[-1])
    evals = np.asarray(result.metrics["eval_returns"])
    evals = evals[np.isfinite(evals)]

    @jax.jit
    def random_return(key):
        def one(k):
            obs, s = env.reset_arrays(k)
            policy = lambda kk, o, _: (jr.uniform(kk, (5, 3), minval=-1.0, maxval=1.0), ())  # noqa: E731
            _, _, outs = rollout(env.step_arrays, k, s, length=12, policy=policy, init_obs=obs)
            return jnp.sum(jnp.mean(outs[1], axis=-1))

        return jnp.mean(jax.vmap(one)(jr.split(key, 64)))

    def baseline(name):
        totals = [np.mean(np.sum(np.asarray(run_market_baseline(name, k, params, 12)[1]), axis=0)) for k in jr.split(jr.PRNGKey(2), 8)]
        return float(np.mean(totals))

    rand = float(random_return(jr.PRNGKey(1)))
    truthful, max_markup = baseline("truthful"), baseline("max_markup")
    print({"evals": evals.tolist(), "random": rand, "truthful": truthful, "max_markup": max_markup})
    assert evals[-1] > rand and evals[-1] > evals[0]
    assert truthful < evals[-1] < max_markup


@pytest.mark.requires("powerzoojax.grid", "powerzoojax.market")
def test_marl_presets_build():
    from powerzoojax.rl import GridMARLEnv, MarketMARLEnv, get_preset

    grid = get_preset("case5-ippo")
    env = grid.env_factory()
    assert isinstance(env, GridMARLEnv) and env.num_agents == 5 and grid.config.algo == "ippo"
    dev = get_preset("gencos-case5-ippo-dev")
    market = dev.env_factory()
    assert isinstance(market, MarketMARLEnv) and market.agents == tuple(f"genco_{i}" for i in range(5))
    assert market.obs_dim == 12 and market.action_dim == 3 and market.max_steps == 48
    # flat mid-load day: every row the same, 750 MW in all on case 5
    rows = np.asarray(market.params.load_profiles)
    assert rows.shape[0] == 48 and np.allclose(rows, rows[0]) and abs(rows[0].sum() - 750.0) < 1e-3
