"""The analytic policy gradient trainer (make_apg_train)."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


@pytest.fixture(scope="module")
def apg_toy(toy, tiny_config):
    """A few APG updates on the toy env (its state integrates the action: x' = x + 0.1 a)."""
    from powerzoojax.rl import LogWrapper, make_train

    config = tiny_config.replace(
        algo="apg", n_steps=4, total_timesteps=8 * 4 * 6, learning_rate=1e-2, max_grad_norm=1.0,
        normalize_observations=True,
    )
    trainer = make_train(LogWrapper(*toy), config)
    state = trainer._jit_init(trainer.place_key(jr.PRNGKey(0)))
    state, first = trainer._jit_chunk(state, 3)
    state, second = trainer._jit_chunk(state, 3)
    return trainer, state, first, second


def test_apg_updates_are_finite_and_change_the_actor(apg_toy):
    from powerzoojax.rl import APGTrainer

    trainer, state, first, second = apg_toy
    assert isinstance(trainer, APGTrainer)
    for leaf in jax.tree.leaves(eqx_arrays(state.policy)):
        assert np.all(np.isfinite(np.asarray(leaf)))
    grad_norm = np.concatenate([np.asarray(first["grad_norm"]), np.asarray(second["grad_norm"])])
    # The reward −x'² depends on the action, so every window has a gradient.
    assert np.all(np.isfinite(grad_norm)) and np.all(grad_norm > 0)
    init = trainer._jit_init(trainer.place_key(jr.PRNGKey(0)))
    assert not np.allclose(np.asarray(state.policy.actor.weight), np.asarray(init.policy.actor.weight))
    assert int(state.update) == 6
    np.testing.assert_array_equal(np.asarray(second["env_steps"]), (np.arange(4, 7)) * 8 * 4)
    # Observation statistics follow the windows' observations.
    assert float(state.obs_stats.count) > float(init.obs_stats.count)


def test_apg_chunks_compile_once(apg_toy):
    trainer, state, _, _ = apg_toy
    trainer._jit_chunk(state, 3)
    assert trainer._jit_chunk._cache_size() == 1


def test_apg_actions_are_squashed_into_the_box(apg_toy):
    trainer, _, _, _ = apg_toy
    big = jnp.asarray([[-50.0], [0.0], [50.0]])
    acts = np.asarray(trainer.to_env_action(big))
    assert np.all(acts > -1.0 - 1e-6) and np.all(acts < 1.0 + 1e-6)
    assert acts[1, 0] == 0.0
    # The squash keeps a gradient where a clip would have none (|u| > 1).
    assert float(jax.grad(lambda u: trainer.to_env_action(u)[0])(jnp.asarray([1.5]))[0]) > 0.0


def test_apg_window_gradient_reaches_earlier_actions(toy, tiny_config):
    """The loss of a window is differentiated through the env's state: a policy that only
    shifts the action by a constant moves all later rewards of the window."""
    from powerzoojax.rl import LogWrapper, make_train

    trainer = make_train(LogWrapper(*toy), tiny_config.replace(algo="apg", n_steps=4, num_envs=2))
    state = trainer.init(jr.PRNGKey(1))
    bias = state.policy.actor.bias
    grads = jax.grad(lambda p: trainer.window_loss(p, state, jr.PRNGKey(2))[0])(state.policy)
    g_bias = float(grads.actor.bias[0])
    # Central differences of the same loss along the bias (float32 env: a loose match).
    eps = 1e-2

    def loss_at(b):
        policy = eqx_set_bias(state.policy, b)
        return float(trainer.window_loss(policy, state, jr.PRNGKey(2))[0])

    fd = (loss_at(bias + eps) - loss_at(bias - eps)) / (2 * eps)
    assert g_bias != 0.0
    np.testing.assert_allclose(g_bias, fd, rtol=2e-2)


def test_apg_config_errors_and_make_act(toy, tiny_config):
    from powerzoojax.rl import LogWrapper, make_act, make_train

    env = LogWrapper(*toy)
    with pytest.raises(ValueError, match="continuous_action_dist must be 'gaussian'"):
        make_train(env, tiny_config.replace(algo="apg", continuous_action_dist="beta"))
    # No minibatches in APG: a batch that would not divide is fine.
    trainer = make_train(env, tiny_config.replace(n_minibatches=4).replace(algo="apg", num_envs=3, n_steps=5))
    result = trainer(jr.PRNGKey(0))
    act = make_act(result, env)
    obs, _ = env.reset(jr.PRNGKey(1))
    expected = trainer.to_env_action(result.params.mean_action(obs))
    np.testing.assert_allclose(np.asarray(act(jr.PRNGKey(0), obs)), np.asarray(expected), rtol=1e-6)


@pytest.mark.slow
@pytest.mark.requires("powerzoojax.grid")
def test_apg_learns_case5_economic_dispatch():
    """APG on the case-5 economic-dispatch preset beats its initial policy by a wide margin
    within 7.7k env steps (measured on 2026-12-02: eval return −7865 → −4188)."""
    from powerzoojax.rl import get_preset, make_train

    preset = get_preset("case5-economic-dispatch-apg")
    config = preset.config.replace(total_timesteps=16 * 8 * 60, num_envs=16, n_steps=8, eval_freq=16 * 8 * 20,
                                   eval_num_episodes=8)
    result = make_train(preset.env_factory(), config)(jr.PRNGKey(0))
    evals = np.asarray(result.metrics["eval_returns"])
    evals = evals[np.isfinite(evals)]
    assert evals[-1] > evals[0] + 0.25 * abs(evals[0]), evals


def eqx_arrays(tree):
    import equinox as eqx

    return eqx.filter(tree, eqx.is_array)


def eqx_set_bias(policy, bias):
    import equinox as eqx

    return eqx.tree_at(lambda p: p.actor.bias, policy, bias)
