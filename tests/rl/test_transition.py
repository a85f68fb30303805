"""One step result for every wrapper layer: each stack's `Transition` carries a float32 cost
vector of its reported channels, and the public step tuples keep the reference's layouts."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def _stacks(env, params):
    from powerzoojax.rl import (
        ClipAction,
        ClipObservation,
        FrameStack,
        LogWrapper,
        NormalizeObservation,
        RescaleAction,
        RewardWrapper,
        SafeRLWrapper,
        SauteWrapper,
        TimeLimit,
    )

    names = env.constraint_names(params)
    n = len(names)
    # name: (stack, cost channels of its transition, length of its public step tuple)
    return {
        "log": (LogWrapper(env, params), n, 5),
        "safe": (SafeRLWrapper(env, params), n, 6),
        "safe_nothing_selected": (SafeRLWrapper(env, params, selected_names=()), 0, 6),
        "saute": (SauteWrapper(env, params, selected_names=names[:1], cost_thresholds=0.5), 1, 5),
        "reward_log": (RewardWrapper(LogWrapper(env, params), lambda o, a, nx, r, i: r - 0.1), n, 5),
        "reward_safe": (RewardWrapper(SafeRLWrapper(env, params), lambda o, a, nx, r, c, i: r - jnp.sum(c)), n, 6),
        "time_limit_safe": (TimeLimit(SafeRLWrapper(env, params), 3), n, 6),
        "obs_action_log": (
            FrameStack(NormalizeObservation(RescaleAction(TimeLimit(LogWrapper(env, params), 3))), 2), n, 5,
        ),
        "clips_saute": (
            ClipAction(ClipObservation(SauteWrapper(env, params, selected_names=names[:1]), -5.0, 5.0)), 1, 5,
        ),
    }


KINDS = ["log", "safe", "safe_nothing_selected", "saute", "reward_log", "reward_safe", "time_limit_safe",
         "obs_action_log", "clips_saute"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_stack_steps_one_transition_with_a_cost_vector_and_the_reference_layout(toy, kind):
    from powerzoojax.rl.wrappers import Transition

    wrapped, n_costs, tuple_len = _stacks(*toy)[kind]
    assert len(wrapped.reported_constraint_names) == n_costs
    assert wrapped.emits_costs is (tuple_len == 6)
    _, state = wrapped.reset(jr.PRNGKey(0))
    action = jnp.full(wrapped.action_space().shape, 0.3, jnp.float32)
    key = jr.PRNGKey(1)

    @jax.jit
    def run(key, state, action):
        return (wrapped.transition(key, state, action), wrapped.step(key, state, action),
                wrapped.transition_auto_reset(key, state, action), wrapped.step_auto_reset(key, state, action))

    t, step, t_auto, step_auto = run(key, state, action)
    assert isinstance(t, Transition) and isinstance(t_auto, Transition)
    assert t.costs.shape == (n_costs,) and t.costs.dtype == jnp.float32
    np.testing.assert_array_equal(t.costs, t.info["constraint_costs"])
    # The public tuples are views of the transition, in the reference's layout.
    assert len(step) == tuple_len and len(step_auto) == tuple_len
    for view, transition in ((step, t), (step_auto, t_auto)):
        expected = transition.step_tuple(tuple_len == 6)
        for got, want in zip(jax.tree.leaves(view), jax.tree.leaves(expected), strict=True):
            np.testing.assert_array_equal(got, want)
    if tuple_len == 6:
        np.testing.assert_array_equal(step[3], t.costs)
    # Forward values do not depend on where the gradient is stopped.
    for got, want in zip(jax.tree.leaves(t_auto), jax.tree.leaves(t), strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_rollout_kernel_reads_every_stack_in_one_layout(toy):
    from powerzoojax.core import rollout
    from powerzoojax.rl.wrappers._transition import transition_step

    horizon = 6
    for kind, (wrapped, n_costs, _) in _stacks(*toy).items():
        _, state = wrapped.reset(jr.PRNGKey(0))
        actions = jnp.zeros((horizon, *wrapped.action_space().shape), jnp.float32)
        _, _, (obs, rewards, costs, dones, info) = rollout(transition_step(wrapped), jr.PRNGKey(2), state, actions)
        assert obs.shape == (horizon, *wrapped.observation_space().shape), kind
        assert rewards.shape == dones.shape == (horizon,), kind
        assert costs.shape == (horizon, n_costs) and costs.dtype == jnp.float32, kind
        np.testing.assert_array_equal(costs, info["constraint_costs"], err_msg=kind)


def test_time_limit_restarts_the_inner_wrapper_with_the_auto_reset_key(toy):
    from powerzoojax.rl import LogWrapper, TimeLimit

    env, params = toy
    inner = LogWrapper(env, params)
    limited = TimeLimit(inner, 2)
    _, state = limited.reset(jr.PRNGKey(0))
    action = jnp.zeros(inner.action_space().shape, jnp.float32)
    t = limited.transition(jr.PRNGKey(3), state, action)
    t = limited.transition(jr.PRNGKey(4), t.state, action)
    assert bool(t.done) and bool(t.info["truncated"]) and int(t.state.elapsed) == 0
    fresh_obs, _ = inner.reset(jr.split(jr.PRNGKey(4))[1])
    np.testing.assert_array_equal(t.obs, fresh_obs)


def test_cmdp_training_needs_a_safe_stack_wherever_it_sits(toy, tiny_config):
    from powerzoojax.rl import LogWrapper, SafeRLWrapper, SauteWrapper, TimeLimit, make_cmdp_train

    env, params = toy
    assert make_cmdp_train(TimeLimit(SafeRLWrapper(env, params), 4), tiny_config).lagrangian is True
    for not_safe in (LogWrapper(env, params), SauteWrapper(env, params), TimeLimit(LogWrapper(env, params), 4)):
        with pytest.raises(TypeError, match="needs a SafeRLWrapper"):
            make_cmdp_train(not_safe, tiny_config)


def test_marl_adapters_implement_the_env_methods_and_share_the_checked_public_ones(toy):
    from powerzoojax.rl import MARLState, MultiAgentEnvironment

    env, params = toy

    class Incomplete(MultiAgentEnvironment):
        @property
        def obs_dim(self):
            return 2

        @property
        def action_dim(self):
            return 1

        def reset_env(self, key, params):
            obs, state = env.reset(key, params)
            return jnp.stack([obs, obs]), MARLState(state)

    with pytest.raises(TypeError):
        Incomplete(params=params, agents=("a_0", "a_1"))  # step_env is abstract

    class Pair(Incomplete):
        def step_env(self, key, state, actions, params):
            obs, s, reward, _, done, info = env.step(key, state.env_state, actions[0], params)
            return jnp.stack([obs, obs]), MARLState(s), jnp.stack([reward, reward]), done, info

    pair = Pair(params=params, agents=("a_0", "a_1"))
    assert Pair.step_arrays is MultiAgentEnvironment.step_arrays  # no per-class rewriting
    _, state = pair.reset_arrays(jr.PRNGKey(0))
    _, _, _, _, info = pair.step_arrays(jr.PRNGKey(1), state, jnp.asarray([[jnp.nan], [0.0]]))
    assert bool(info["invalid_action"])
    with pytest.raises(ValueError, match="num_agents, action_dim"):
        pair.step_arrays(jr.PRNGKey(1), state, jnp.zeros((3, 1)))
