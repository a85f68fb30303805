"""NormalizeObservation, ClipObservation, FrameStack, ClipAction, RescaleAction, TimeLimit:
the wrappers' conformance kit on each, their semantics, errors, and PPO training on a stack."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def _stack(toy, kind):
    from powerzoojax.rl import (
        ClipAction,
        ClipObservation,
        FrameStack,
        LogWrapper,
        NormalizeObservation,
        RescaleAction,
        SafeRLWrapper,
        TimeLimit,
    )
    from powerzoojax.rl.wrappers import init_stats, update_stats

    env, params = toy
    log = LogWrapper(env, params)
    fixed = update_stats(init_stats((2,)), jnp.asarray([[0.1, 0.2], [-0.3, 0.6], [0.2, 0.9]]))
    return {
        "normalize_running": NormalizeObservation(log),
        "normalize_fixed": NormalizeObservation(log, stats=fixed),
        "clip_obs": ClipObservation(log, -0.2, 0.2),
        "frame_stack": FrameStack(log, 3),
        "clip_action": ClipAction(log),
        "rescale_action": RescaleAction(log, 0.0, 2.0),
        "time_limit": TimeLimit(log, 3),
        "time_limit_safe": TimeLimit(SafeRLWrapper(env, params, cost_thresholds=0.5), 5),
        "stacked": FrameStack(NormalizeObservation(RescaleAction(TimeLimit(log, 4))), 2),
    }[kind]


KINDS = ["normalize_running", "normalize_fixed", "clip_obs", "frame_stack", "clip_action", "rescale_action",
         "time_limit", "time_limit_safe", "stacked"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_wrapper_passes_the_conformance_kit_on_the_toy_env(toy, kind):
    from powerzoojax.rl import check_wrapper_api, check_wrapper_no_retrace

    wrapped = _stack(toy, kind)
    running = kind in ("normalize_running", "stacked")
    # Op-by-op (eager) comparison on the stacks that run every wrapper's code: it compiles each primitive.
    check_wrapper_api(wrapped, stochastic=True, fresh_terminal_obs=not running, check_eager=kind in ("stacked", "time_limit_safe"))
    assert check_wrapper_no_retrace(wrapped) == 1


def _run(wrapped, n_steps, key=0, actions=None):
    """Rollout from reset through the kernel: (reset obs, final state, outputs)."""
    from powerzoojax.core import rollout

    k_reset, k_act, k_roll = jr.split(jr.PRNGKey(key), 3)
    if actions is None:
        actions = jax.vmap(wrapped.action_space().sample)(jr.split(k_act, n_steps))

    @jax.jit
    def run(k_reset, k_roll):
        obs, state = wrapped.reset(k_reset)
        final, _, outs = rollout(wrapped.step_auto_reset, k_roll, state, actions)
        return obs, final, outs

    return run(k_reset, k_roll)


def test_running_normalisation_merges_every_observation_and_carries_over_episodes(toy):
    from powerzoojax.rl import LogWrapper, NormalizeObservation, RunningStats
    from powerzoojax.rl.algos._ppo import RunningStats as PPOStats
    from powerzoojax.rl.algos._ppo import normalize as ppo_normalize
    from powerzoojax.rl.wrappers import init_stats, normalize, update_stats

    assert PPOStats is RunningStats and ppo_normalize is normalize  # one implementation for PPO and the wrapper
    env, params = toy
    log = LogWrapper(env, params)
    wrapped = NormalizeObservation(log)
    horizon = params.max_steps
    obs0, final, outs = _run(wrapped, 2 * horizon)
    raw0, _ = log.reset(jr.split(jr.PRNGKey(0), 3)[0])
    _, _, raw = _run(log, 2 * horizon)  # same keys and actions: the inner wrapper's raw observations
    expected = update_stats(init_stats((2,)), raw0[None])
    for t in range(2 * horizon):
        expected = update_stats(expected, raw[0][t][None])
    np.testing.assert_allclose(final.stats.mean, expected.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(final.stats.var, expected.var, rtol=1e-4, atol=1e-6)
    assert float(final.stats.count) == pytest.approx(2 * horizon + 1, rel=1e-4)
    # The terminal observation is the next episode's first one under the carried statistics.
    stats_mid = jax.tree.map(lambda x: x, init_stats((2,)))
    stats_mid = update_stats(stats_mid, raw0[None])
    for t in range(horizon):
        stats_mid = update_stats(stats_mid, raw[0][t][None])
    np.testing.assert_allclose(outs[0][horizon - 1], normalize(stats_mid, raw[0][horizon - 1]), rtol=1e-5, atol=1e-6)
    assert np.all(np.abs(np.asarray(outs[0])) <= 10.0)


def test_fixed_statistics_normalise_and_never_change(toy):
    from powerzoojax.rl import LogWrapper, NormalizeObservation
    from powerzoojax.rl.wrappers import init_stats, normalize, update_stats

    env, params = toy
    log = LogWrapper(env, params)
    stats = update_stats(init_stats((2,)), jnp.asarray([[0.5, 0.0], [1.5, 1.0]]))
    wrapped = NormalizeObservation(log, stats=stats, clip=3.0)
    assert not wrapped.update and float(wrapped.observation_space().high[0]) == 3.0
    _, final, outs = _run(wrapped, 5)
    _, _, raw = _run(log, 5)
    np.testing.assert_allclose(outs[0], normalize(stats, raw[0], 3.0), rtol=1e-6)
    np.testing.assert_array_equal(final.stats.mean, stats.mean)
    with pytest.raises(ValueError, match=r"stats are for observations of shape \(3,\), ToyEnv observes shape \(2,\)"):
        NormalizeObservation(log, stats=init_stats((3,)))
    with pytest.raises(ValueError, match="clip must be a positive number, got 0"):
        NormalizeObservation(log, clip=0)


def test_frame_stack_holds_the_last_frames_and_restarts_each_episode(toy):
    from powerzoojax.rl import FrameStack, LogWrapper

    env, params = toy
    log = LogWrapper(env, params)
    wrapped = FrameStack(log, 3)
    assert wrapped.observation_space().shape == (6,) and wrapped.obs_size == 6
    horizon = params.max_steps
    obs0, _, outs = _run(wrapped, horizon + 2)
    raw0, _ = log.reset(jr.split(jr.PRNGKey(0), 3)[0])
    _, _, raw = _run(log, horizon + 2)
    raw = np.asarray(raw[0])
    np.testing.assert_allclose(obs0, np.tile(raw0, 3))
    np.testing.assert_allclose(outs[0][0], np.concatenate([raw0, raw0, raw[0]]))
    np.testing.assert_allclose(outs[0][4], raw[2:5].reshape(-1))
    # The terminal step returns the next episode's first observation, repeated.
    np.testing.assert_allclose(outs[0][horizon - 1], np.tile(raw[horizon - 1], 3))
    np.testing.assert_allclose(outs[0][horizon], np.concatenate([raw[horizon - 1], raw[horizon - 1], raw[horizon]]))
    with pytest.raises(ValueError, match="num_frames must be a positive integer, got 0"):
        FrameStack(log, 0)


def test_clip_observation_clips_and_narrows_the_space(toy):
    from powerzoojax.rl import ClipObservation, LogWrapper

    env, params = toy
    log = LogWrapper(env, params)
    wrapped = ClipObservation(log, [-0.1, 0.0], [0.1, 0.5])
    np.testing.assert_allclose(wrapped.observation_space().high, [0.1, 0.5])
    _, _, outs = _run(wrapped, 6)
    _, _, raw = _run(log, 6)
    np.testing.assert_allclose(outs[0], np.clip(np.asarray(raw[0]), [-0.1, 0.0], [0.1, 0.5]))
    with pytest.raises(ValueError, match="need low <= high everywhere"):
        ClipObservation(log, 1.0, -1.0)


def test_rescale_and_clip_action_map_what_the_env_receives(toy):
    from powerzoojax.rl import ClipAction, LogWrapper, RescaleAction

    env, params = toy
    log = LogWrapper(env, params)
    rescaled = RescaleAction(log, 0.0, 2.0)
    space = rescaled.action_space()
    assert float(space.low[0]) == 0.0 and float(space.high[0]) == 2.0
    np.testing.assert_allclose(rescaled.to_env_action(jnp.asarray([0.0])), [-1.0])
    np.testing.assert_allclose(rescaled.to_env_action(jnp.asarray([1.5])), [0.5])
    np.testing.assert_allclose(rescaled.to_env_action(jnp.asarray([7.0])), [1.0])  # clipped to [low, high] first
    # The same env transition whether the agent says 1.5 through the wrapper or 0.5 directly.
    through = _run(rescaled, 4, actions=jnp.full((4, 1), 1.5))[2]
    direct = _run(log, 4, actions=jnp.full((4, 1), 0.5))[2]
    np.testing.assert_allclose(through[1], direct[1], rtol=1e-6)
    clipped = _run(ClipAction(log), 4, actions=jnp.full((4, 1), 5.0))[2]
    at_bound = _run(log, 4, actions=jnp.full((4, 1), 1.0))[2]
    np.testing.assert_allclose(clipped[1], at_bound[1], rtol=1e-6)
    with pytest.raises(ValueError, match="low must be below high, got low=1.0, high=1.0"):
        RescaleAction(log, 1.0, 1.0)

    class Unbounded:
        name = "Unbounded"

        def action_space(self):
            from powerzoojax.core import make_box

            return make_box(-np.inf, np.inf, (1,))

    with pytest.raises(ValueError, match="action space of Unbounded has infinite bounds"):
        RescaleAction(Unbounded())


def test_time_limit_ends_episodes_early_with_its_own_statistics(toy):
    from powerzoojax.rl import LogWrapper, SafeRLWrapper, TimeLimit

    env, params = toy
    wrapped = TimeLimit(LogWrapper(env, params), 3)
    assert wrapped.max_steps == 3
    _, final, outs = _run(wrapped, 8)
    obs, reward, done, info = outs
    np.testing.assert_array_equal(np.flatnonzero(np.asarray(done)), [2, 5])
    np.testing.assert_array_equal(np.asarray(info["truncated"]), np.asarray(done))
    lengths = np.asarray(info["returned_episode_lengths"])
    assert lengths[2] == 3 and lengths[5] == 3
    np.testing.assert_allclose(info["returned_episode_returns"][5], np.asarray(reward)[3:6].sum(), rtol=1e-5)
    assert int(final.elapsed) == 2 and int(final.inner_state.env_state.time_step) == 2  # the env restarted with it

    safe = TimeLimit(SafeRLWrapper(env, params, cost_thresholds=0.5), 2)
    _, _, (obs, reward, costs, done, info) = _run(safe, 4)
    np.testing.assert_allclose(info["returned_episode_costs"][3], np.asarray(costs)[2:4].sum(axis=0), rtol=1e-5, atol=1e-7)
    assert float(info["returned_episode_cost_sum"][3]) == pytest.approx(float(np.asarray(costs)[2:4].sum()), abs=1e-6)
    with pytest.raises(ValueError, match="max_steps=9 exceeds the bound params' episode of 8 steps"):
        TimeLimit(LogWrapper(env, params), 9)


def test_ppo_trains_on_a_stack_of_the_new_wrappers(toy, tiny_config):
    from powerzoojax.rl import FrameStack, LogWrapper, NormalizeObservation, RescaleAction, TimeLimit, make_train

    env, params = toy
    wrapped = FrameStack(NormalizeObservation(RescaleAction(TimeLimit(LogWrapper(env, params), 4))), 2)
    result = make_train(wrapped, tiny_config)(jr.PRNGKey(0))
    returns = np.asarray(result.metrics["episode_return"])
    assert returns.shape == (tiny_config.n_updates,) and np.all(np.isfinite(returns))
