"""PPO / PPO-Lagrangian trainers: GAE, one compile, vmap over seeds, dispatch, dual ascent, a quick learning check."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def _gae_reference(rewards, dones, values, last_value, gamma, lam):
    T = rewards.shape[0]
    adv = np.zeros_like(rewards)
    running = np.zeros_like(last_value)
    for t in reversed(range(T)):
        next_v = last_value if t == T - 1 else values[t + 1]
        nd = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_v * nd - values[t]
        running = delta + gamma * lam * nd * running
        adv[t] = running
    return adv, adv + values


def test_gae_matches_a_loop_reference_with_the_done_mask():
    from powerzoojax.rl import gae

    rng = np.random.default_rng(0)
    T, N = 11, 3
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    values = rng.normal(size=(T, N)).astype(np.float32)
    last = rng.normal(size=N).astype(np.float32)
    dones = rng.random((T, N)) < 0.2
    dones[4, 0] = True
    adv, ret = gae(jnp.asarray(rewards), jnp.asarray(dones), jnp.asarray(values), jnp.asarray(last), 0.97, 0.9)
    ref_adv, ref_ret = _gae_reference(rewards, dones.astype(np.float32), values, last, 0.97, 0.9)
    np.testing.assert_allclose(adv, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, ref_ret, rtol=1e-5, atol=1e-5)
    # nothing leaks across the done at t=4 of env 0
    adv2, _ = gae(jnp.asarray(rewards).at[5:, 0].set(100.0), jnp.asarray(dones), jnp.asarray(values), jnp.asarray(last), 0.97, 0.9)
    np.testing.assert_allclose(adv2[:5, 0], adv[:5, 0], rtol=1e-6)


def test_discounted_return_filter_matches_a_loop():
    from powerzoojax.rl.algos._ppo import _discounted_returns

    rng = np.random.default_rng(1)
    T, N, gamma = 9, 2, 0.9
    r = rng.normal(size=(T, N)).astype(np.float32)
    d = rng.random((T, N)) < 0.3
    carry = rng.normal(size=N).astype(np.float32)
    ref = np.zeros_like(r)
    g = carry.copy()
    for t in range(T):
        g = gamma * g + r[t]
        ref[t] = g
        g = np.where(d[t], 0.0, g)
    got = _discounted_returns(jnp.asarray(r), jnp.asarray(d), jnp.asarray(carry), gamma)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def quick_run(case5_log):
    """PPO on case 5 with a small budget (≈ 15k env steps) that already learns."""
    from powerzoojax.rl import get_preset, make_train

    config = get_preset("case5-economic-dispatch").config.replace(
        num_envs=16, n_steps=16, total_timesteps=16 * 16 * 60, learning_rate=3e-3, hidden_dims=(32, 32),
        eval_freq=16 * 16 * 20, eval_num_episodes=16,
    )
    trainer = make_train(case5_log, config)
    return trainer, trainer(jr.PRNGKey(0))


def test_quick_ppo_run_beats_random_actions(quick_run, case5_log):
    from powerzoojax.rl import evaluate, make_act, random_act

    trainer, result = quick_run
    key = jr.PRNGKey(7)
    random_return = evaluate(case5_log, random_act(case5_log), key, 64)["return"].mean()
    trained_return = evaluate(case5_log, make_act(result, case5_log), key, 64)["return"].mean()
    # Returns are −0.01·generation cost: demand at least 25 % lower cost than random
    # over the same 64 episodes (measured: ≈ 40 %).
    assert trained_return > 0.75 * random_return, (trained_return, random_return)


def test_metrics_have_one_entry_per_update(quick_run):
    trainer, result = quick_run
    n = trainer.n_updates
    for name in ("loss", "policy_loss", "value_loss", "entropy", "mean_reward", "env_steps"):
        assert result.metrics[name].shape == (n,), name
        assert np.all(np.isfinite(result.metrics[name])), name
    # 16-step rollouts of 48-step episodes: an episode ends in every third update only (NaN otherwise)
    assert np.isfinite(np.asarray(result.metrics["episode_return"])).sum() == n // 3
    np.testing.assert_array_equal(result.metrics["env_steps"], (np.arange(n) + 1) * 16 * 16)
    evals = np.asarray(result.metrics["eval_returns"])
    # at the start (the untrained policy, on the first row), then every 20 updates, the last one included
    np.testing.assert_array_equal(np.flatnonzero(np.isfinite(evals)), [0, 19, 39, 59])
    assert evals[-1] > evals[0]
    assert result.summary["final_reward"] == pytest.approx(float(evals[-1]))


def test_training_loop_compiles_once(quick_run):
    trainer, _ = quick_run
    trainer(jr.PRNGKey(1))
    trainer(jr.PRNGKey(2))
    assert trainer._jit_train._cache_size() == 1


def test_vmap_over_seeds_equals_separate_runs(toy, tiny_config):
    # On a Sauté + reward-shaped env, built by train()'s own wrapping, to cover those too.
    from powerzoojax.rl import SauteWrapper, make_train

    env, params = toy
    wrapped = SauteWrapper(env, params, cost_thresholds=0.5, unsafe_reward=-1.0)
    trainer = make_train(wrapped, tiny_config.replace(algo="saute_ppo"))
    keys = jr.split(jr.PRNGKey(3), 2)
    batched = jax.jit(jax.vmap(trainer.train))(keys)
    for i in range(2):
        single = trainer._jit_train(keys[i])
        for a, b in zip(jax.tree.leaves(jax.tree.map(lambda x: x[i], batched)), jax.tree.leaves(single)):
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-4, atol=1e-5)
    # the two seeds really differ
    assert not np.allclose(batched[1]["loss"][0], batched[1]["loss"][1])
    # a TrainResult is a pytree, so the public call vmaps too (shapes only: no third compile)
    results = jax.eval_shape(jax.vmap(trainer), keys)
    assert results.metrics["loss"].shape == (2, trainer.n_updates)
    assert trainer.obs_dim == 3  # the budget entry of the Sauté observation


def test_trainer_collects_through_the_rollout_kernel(toy, tiny_config, monkeypatch):
    import powerzoojax.rl.algos._ppo as ppo
    import powerzoojax.rl.algos._update_loop as update_loop
    from powerzoojax.rl import LogWrapper, make_train

    calls = []
    real = ppo.rollout

    def spy(*args, **kwargs):
        calls.append(kwargs.get("length"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ppo, "rollout", spy)
    monkeypatch.setattr(update_loop, "rollout", spy)  # evaluation episodes run in the shared loop
    trainer = make_train(LogWrapper(*toy), tiny_config.replace(eval_freq=1, eval_num_episodes=4))
    jax.eval_shape(trainer.train, jr.PRNGKey(0))
    assert tiny_config.n_steps in calls and toy[1].max_steps in calls  # training rollout and evaluation


def test_make_train_dispatch_and_errors(toy, tiny_config):
    from powerzoojax.rl import LogWrapper, SafeRLWrapper, SauteWrapper, make_train

    env, params = toy
    log = LogWrapper(env, params)
    assert make_train(log, tiny_config).lagrangian is False
    assert make_train(SafeRLWrapper(env, params), tiny_config.replace(algo="ppo_lagrangian")).lagrangian is True
    assert make_train(SauteWrapper(env, params), tiny_config.replace(algo="saute_ppo")).obs_dim == 3
    with pytest.raises(TypeError, match="needs a SafeRLWrapper"):
        make_train(log, tiny_config.replace(algo="ppo_lagrangian"))
    with pytest.raises(TypeError, match="SauteWrapper"):
        make_train(log, tiny_config.replace(algo="saute_ppo"))
    with pytest.raises(TypeError, match="bind"):
        make_train(env, tiny_config)
    with pytest.raises(NotImplementedError, match="TD3 is not implemented"):
        make_train(log, tiny_config.replace(algo="td3"))
    with pytest.raises(NotImplementedError, match="DQN is not implemented"):
        make_train(log, tiny_config.replace(algo="dqn"))
    for algo in ("ippo", "ippo_typed", "ippo_typed_lagrangian"):
        with pytest.raises(TypeError, match="multi-agent adapter"):
            make_train(log, tiny_config.replace(algo=algo))
    assert type(make_train(log, tiny_config.replace(algo="sac"))).__name__ == "SACTrainer"
    with pytest.raises(NotImplementedError, match="MAPPO"):
        make_train(log, tiny_config.replace(algo="mappo"))


def test_beta_actor_density_matches_scipy():
    from scipy import stats

    from powerzoojax.rl.algos._networks import beta_entropy, beta_log_prob, beta_mode

    a = np.asarray([[1.0, 2.5, 7.0], [1.3, 1.0, 19.0]], np.float32)
    b = np.asarray([[1.0, 1.5, 3.0], [4.0, 2.0, 1.2]], np.float32)
    x = np.asarray([[0.3, 0.9, 0.55], [0.05, 0.5, 0.99]], np.float32)
    ja, jb, jx = jnp.asarray(a), jnp.asarray(b), jnp.asarray(x)
    np.testing.assert_allclose(beta_log_prob(jx, ja, jb), stats.beta.logpdf(x, a, b).sum(-1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(beta_entropy(ja, jb), stats.beta.entropy(a, b).sum(-1), rtol=1e-4, atol=1e-4)
    mode = np.asarray(beta_mode(ja, jb))
    grid = np.linspace(1e-4, 1 - 1e-4, 20001)
    for i, j in [(0, 1), (0, 2), (1, 0), (1, 2)]:  # argmax of the density (α, β ≥ 1, not both 1)
        assert abs(mode[i, j] - grid[np.argmax(stats.beta.pdf(grid, a[i, j], b[i, j]))]) < 1e-3
    assert mode[0, 0] == pytest.approx(0.5)  # α = β = 1: uniform, the mean


def test_beta_actor_learns_a_bounded_action(toy, tiny_config):
    from toy_env import make_toy_params

    from powerzoojax.rl import LogWrapper, evaluate, make_act, make_train
    from powerzoojax.rl import BetaActorCritic

    # Reward −x² with x' = x + 0.1·a + 0.05 + noise: the policy must steer x back towards 0.
    env = LogWrapper(toy[0], make_toy_params(max_steps=8, drift=0.05))
    cfg = tiny_config.replace(
        continuous_action_dist="beta", total_timesteps=8 * 16 * 15, learning_rate=1e-2, ent_coef=0.0, n_epochs=4
    )
    result = make_train(env, cfg)(jr.PRNGKey(0))
    assert isinstance(result.params, BetaActorCritic)
    assert np.all(np.isfinite(np.asarray(result.metrics["loss"])))
    act = make_act(result, env)
    a = np.asarray(jax.vmap(lambda o: act(jr.PRNGKey(0), o))(jnp.asarray([[0.4, 0.5], [-0.4, 0.5]])))[:, 0]
    assert np.all(np.abs(a) <= 1.0) and a[0] < 0.0 < a[1], a  # the mode, inside the box, pushing x to 0
    key = jr.PRNGKey(3)
    trained = evaluate(env, act, key, 64)["return"].mean()
    idle = evaluate(env, lambda k, o: jnp.zeros((1,)), key, 64)["return"].mean()
    # idle ≈ −1.1 over 8 steps; 30 updates reach ≈ −0.12 (Gaussian actor: ≈ −0.11)
    assert trained > idle + 0.5, (trained, idle)


def test_lagrange_multipliers_follow_their_constraints(toy, tiny_config):
    from powerzoojax.core import stack_costs
    from powerzoojax.rl import SafeRLWrapper, make_train
    from toy_env import ToyEnv, make_toy_params

    class TwoChannels(ToyEnv):
        # Drift pushes x out of the band (channel 0 positive whatever the policy does);
        # channel 1 is always zero.
        def constraint_names(self, params):
            return ("out_of_band", "never")

        def step(self, key, state, action, params):
            obs, nxt, r, costs, d, info = super().step(key, state, action, params)
            return obs, nxt, r, stack_costs(costs[0], 0.0), d, {**info, "cost_never": jnp.zeros(())}

    env = SafeRLWrapper(TwoChannels(), make_toy_params(max_steps=8, drift=0.3), cost_thresholds=(0.0, 100.0))
    config = tiny_config.replace(algo="ppo_lagrangian", lambda_lr=(0.5, 0.01))
    result = make_train(env, config)(jr.PRNGKey(0))
    rising = np.asarray(result.metrics["lambda_out_of_band"])
    falling = np.asarray(result.metrics["lambda_never"])
    assert rising[0] > 1.0 and np.all(np.diff(rising) >= 0) and rising[-1] > rising[0]
    # log λ falls by lambda_lr · threshold per update
    np.testing.assert_allclose(np.log(falling), -np.arange(1, len(falling) + 1) * 0.01 * 100.0, rtol=1e-5)
    for name in ("mean_cost_total", "episode_cost_est_total", "lambda_total", "mean_cost", "episode_cost_est", "lambda"):
        assert name in result.metrics
    assert np.all(np.asarray(result.metrics["episode_cost_est_out_of_band"]) > 0)
    assert np.all(np.asarray(result.metrics["episode_cost_est_never"]) == 0)


def test_train_wraps_bare_envs_for_saute_and_reward_functions(toy, tiny_config, monkeypatch):
    import powerzoojax.rl.training._train as train_module
    from powerzoojax.rl import RewardWrapper, SauteWrapper, TrainResult, train

    env, _ = toy
    seen = {}

    def fake_run(trainer, key, **kwargs):
        seen["env"], seen["config"] = trainer.env, trainer.config
        return TrainResult(params=None, metrics={}, config=trainer.config)

    monkeypatch.setattr(train_module, "run_training", fake_run)
    train(env, tiny_config.replace(algo="saute_ppo", saute_unsafe_reward=-1.0, saute_horizon=4), seed=3,
          reward_fn=lambda obs, action, next_obs, reward, info: reward)
    wrapped = seen["env"]
    assert isinstance(wrapped, RewardWrapper) and isinstance(wrapped.wrapped, SauteWrapper)
    assert wrapped.wrapped.unsafe_reward == -1.0 and wrapped.wrapped.horizon == 4.0
    assert seen["config"].seed == 3
    train(env, tiny_config, algo="ppo_lagrangian", num_envs=4)
    assert seen["env"].emits_costs and seen["config"].num_envs == 4


@pytest.mark.parametrize("T,N,m", [(16, 8, 2), (12, 6, 3), (10, 8, 4)])
def test_minibatches_partition_the_batch_and_change_every_epoch(toy, T, N, m):
    from powerzoojax.rl import LogWrapper, TrainConfig
    from powerzoojax.rl import PPOTrainer

    config = TrainConfig(num_envs=N, n_steps=T, n_minibatches=m, total_timesteps=T * N)
    trainer = PPOTrainer(LogWrapper(*toy), config)
    index = jnp.arange(T * N)
    shuffle_fn = jax.jit(trainer._shuffle)
    first = np.asarray(shuffle_fn(jr.PRNGKey(0), {"i": index, "pair": jnp.stack([index, -index], -1)})["i"])
    out = shuffle_fn(jr.PRNGKey(1), {"i": index, "pair": jnp.stack([index, -index], -1)})
    second = np.asarray(out["i"])
    assert first.shape == (m, T * N // m)
    assert sorted(first.ravel().tolist()) == list(range(T * N))  # every sample exactly once
    np.testing.assert_array_equal(np.asarray(out["pair"])[..., 1], -second)  # rows stay together
    assert not np.array_equal(first, second)
    envs_per_minibatch = [len(set((row % N).tolist())) for row in first]
    assert min(envs_per_minibatch) > 1  # minibatches mix envs (10 % 4 ≠ 0 falls back to the full shuffle)
