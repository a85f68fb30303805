"""Safe, Sauté and Reward wrappers: contract (conformance kit), semantics, errors."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest


def _wrappers(env, params):
    from powerzoojax.rl import LogWrapper, RewardWrapper, SafeRLWrapper, SauteWrapper

    names = env.constraint_names(params)
    return {
        "log": LogWrapper(env, params),
        "safe": SafeRLWrapper(env, params, selected_names=names[:1], cost_thresholds=(0.5,)),
        "saute": SauteWrapper(env, params, selected_names=names[:1], cost_thresholds=0.5, unsafe_reward=-3.0),
        "reward_log": RewardWrapper(LogWrapper(env, params), lambda o, a, n, r, i: r - 0.01 * jnp.sum(a**2)),
        "reward_safe": RewardWrapper(SafeRLWrapper(env, params), lambda o, a, n, r, c, i: r - jnp.sum(c)),
    }


@pytest.mark.parametrize("kind", ["log", "safe", "saute", "reward_log", "reward_safe"])
def test_every_wrapper_passes_the_conformance_kit_on_the_toy_env(toy, kind):
    from powerzoojax.rl import check_wrapper_api, check_wrapper_no_retrace

    wrapped = _wrappers(*toy)[kind]
    check_wrapper_api(wrapped, stochastic=True)
    assert check_wrapper_no_retrace(wrapped) == 1


@pytest.mark.parametrize("kind", ["safe", "saute"])
def test_constraint_wrappers_pass_the_conformance_kit_on_case5(trans5, kind):
    from powerzoojax.rl import check_wrapper_api

    check_wrapper_api(_wrappers(*trans5)[kind], check_eager=False)  # the env itself is checked eagerly by check_env_api


def test_wrapper_kit_leaves_the_envs_iteration_counts_out_of_cross_program_comparisons(toy):
    # The wrapped env's iteration_count_keys (solver_iterations: 3 eager, 4 jitted, 5
    # vmapped) are not compared between programs; an unnamed count still is.
    from toy_env import CountingToyEnv

    from powerzoojax.rl import LogWrapper, PenaltyRewardWrapper, RewardWrapper, check_wrapper_api

    _, params = toy
    env = CountingToyEnv()
    check_wrapper_api(LogWrapper(env, params), stochastic=True)
    check_wrapper_api(RewardWrapper(LogWrapper(PenaltyRewardWrapper(env, 1.0), params), lambda o, a, n, r, i: r))
    with pytest.raises(AssertionError, match=r"eager step vs jit step: .*'solver_iterations'\]\) differs: 3 vs 4"):
        check_wrapper_api(LogWrapper(CountingToyEnv(counts=()), params))


def test_conformance_kit_catches_a_wrapper_that_forgets_to_latch(toy):
    from powerzoojax.rl import LogWrapper, check_wrapper_api
    from powerzoojax.rl.wrappers import Transition

    # The kit reads transition_auto_reset, the method trainers roll out.
    class Forgetful(LogWrapper):
        def transition_auto_reset(self, key, state, action):
            t = super().transition_auto_reset(key, state, action)
            info = {**t.info, "returned_episode_returns": jnp.zeros(())}
            return Transition(t.obs, t.state, t.reward, t.costs, t.done, info)

    with pytest.raises(AssertionError, match="latch"):
        check_wrapper_api(Forgetful(*toy))


def test_safe_wrapper_selects_channels_in_the_requested_order(trans5_matpower):
    from powerzoojax.rl import SafeRLWrapper

    env, params = trans5_matpower
    w = SafeRLWrapper(env, params, selected_names=("power_balance", "thermal_overload"), cost_thresholds=(1.0, 2.0))
    assert w.num_constraints == 2 and w.cost_thresholds == (1.0, 2.0)
    _, state = w.reset(jr.PRNGKey(0))
    action = jnp.array([-1.0, -1.0, -1.0, -1.0, 1.0])  # overloads line 4-5 and the slack
    obs, state, reward, costs, done, info = w.step(jr.PRNGKey(1), state, action)
    full = np.asarray(info["constraint_costs_all"])
    names = env.constraint_names(params)
    np.testing.assert_allclose(costs, [full[names.index("power_balance")], full[names.index("thermal_overload")]])
    assert float(costs[0]) > 0 and float(costs[1]) > 0
    np.testing.assert_allclose(state.episode_costs, costs)
    assert float(info["cost_sum"]) == pytest.approx(float(jnp.sum(costs)))


def test_safe_wrapper_thresholds_default_to_zero_and_scalars_broadcast(trans5):
    from powerzoojax.rl import SafeRLWrapper

    env, params = trans5
    assert SafeRLWrapper(env, params).cost_thresholds == (0.0,) * len(env.constraint_names(params))
    w = SafeRLWrapper(env, params, selected_names=("thermal_overload", "power_balance"), cost_thresholds=3)
    assert w.cost_thresholds == (3.0, 3.0)


def test_safe_wrapper_unknown_name_lists_the_valid_ones(trans5):
    from powerzoojax.rl import SafeRLWrapper

    env, params = trans5
    with pytest.raises(ValueError, match=r"unknown constraint name\(s\) \['voltage'\].*'thermal_overload'"):
        SafeRLWrapper(env, params, selected_names=("voltage",))


def test_safe_wrapper_threshold_length_mismatch(trans5):
    from powerzoojax.rl import SafeRLWrapper

    env, params = trans5
    with pytest.raises(ValueError, match="cost_thresholds has 2 entries but 1 constraint"):
        SafeRLWrapper(env, params, selected_names=("thermal_overload",), cost_thresholds=(0.0, 1.0))


def test_safe_wrapper_rejects_duplicates_and_negative_thresholds(trans5):
    from powerzoojax.rl import SafeRLWrapper

    env, params = trans5
    with pytest.raises(ValueError, match="more than once"):
        SafeRLWrapper(env, params, selected_names=("thermal_overload", "thermal_overload"))
    with pytest.raises(ValueError, match=">= 0"):
        SafeRLWrapper(env, params, selected_names=("thermal_overload",), cost_thresholds=-1.0)


def test_safe_wrapper_latches_episode_costs(toy):
    from powerzoojax.core import rollout
    from powerzoojax.rl import SafeRLWrapper

    env, params = toy
    w = SafeRLWrapper(env, params)
    _, state = w.reset(jr.PRNGKey(0))
    actions = jnp.ones((2 * params.max_steps, 1))  # drift out of the band to create costs
    _, _, (obs, rewards, costs, dones, info) = jax.jit(lambda k, s: rollout(w.step_auto_reset, k, s, actions))(
        jr.PRNGKey(1), state
    )
    end = params.max_steps - 1
    np.testing.assert_allclose(info["returned_episode_costs"][end], costs[: end + 1].sum(0), rtol=1e-5)
    np.testing.assert_allclose(info["returned_episode_cost_sum"][end], costs[: end + 1].sum(), rtol=1e-5)


def test_saute_budget_in_obs_and_unsafe_reward(trans5_matpower):
    from powerzoojax.rl import SauteWrapper

    env, params = trans5_matpower
    w = SauteWrapper(env, params, selected_names=("thermal_overload",), cost_thresholds=(20.0,), unsafe_reward=-500.0)
    obs, state = w.reset(jr.PRNGKey(0))
    assert obs.shape == (env.obs_dim(params) + 1,) == w.observation_space().shape
    assert float(obs[-1]) == pytest.approx(20.0 / params.max_steps)
    overload = jnp.array([-1.0, -1.0, -1.0, -1.0, 1.0])  # ≈ 18.7 MW over the 240 MW line per step
    obs, state, r1, done, info = w.step(jr.PRNGKey(1), state, overload)
    assert float(r1) == pytest.approx(float(info["env_reward"]))  # 18.7 of 20 spent: still safe
    assert float(obs[-1]) == pytest.approx((20.0 - float(info["constraint_costs"][0])) / params.max_steps, rel=1e-5)
    obs, state, r2, done, info = w.step(jr.PRNGKey(2), state, overload)
    assert bool(info["saute_unsafe"]) and float(r2) == -500.0 and float(obs[-1]) < 0


def test_saute_budget_resets_with_the_episode(toy):
    from powerzoojax.core import rollout
    from powerzoojax.rl import SauteWrapper

    env, params = toy
    w = SauteWrapper(env, params, cost_thresholds=0.25)
    _, state = w.reset(jr.PRNGKey(0))
    actions = jnp.ones((params.max_steps, 1))
    _, _, (obs, *_rest) = rollout(w.step_auto_reset, jr.PRNGKey(1), state, actions)
    assert float(obs[-1, -1]) == pytest.approx(0.25 / params.max_steps)


def test_saute_rejects_bad_horizon(toy):
    from powerzoojax.rl import SauteWrapper

    with pytest.raises(ValueError, match="horizon"):
        SauteWrapper(*toy, horizon=0)


def test_reward_wrapper_sets_env_reward_and_recomputes_episode_stats(toy):
    from powerzoojax.core import rollout
    from powerzoojax.rl import LogWrapper, RewardWrapper

    env, params = toy
    w = RewardWrapper(LogWrapper(env, params), lambda obs, action, next_obs, reward, info: 2.0 * reward + 1.0)
    _, state = w.reset(jr.PRNGKey(0))
    actions = jnp.zeros((params.max_steps, 1))
    _, _, (obs, rewards, dones, info) = rollout(w.step_auto_reset, jr.PRNGKey(1), state, actions)
    np.testing.assert_allclose(rewards, 2.0 * info["env_reward"] + 1.0, rtol=1e-6)
    end = params.max_steps - 1
    assert float(info["returned_episode_returns"][end]) == pytest.approx(float(rewards.sum()), rel=1e-5)
    assert float(info["returned_episode_env_returns"][end]) == pytest.approx(float(info["env_reward"].sum()), rel=1e-5)


def test_reward_wrapper_passes_obs_pairs_and_costs(toy):
    from powerzoojax.rl import RewardWrapper, SafeRLWrapper

    env, params = toy
    seen = {}

    def shaped(obs, action, next_obs, reward, costs, info):
        seen["shapes"] = (obs.shape, action.shape, next_obs.shape, costs.shape)
        return reward - 10.0 * jnp.sum(costs) + 0.0 * obs[0]

    w = RewardWrapper(SafeRLWrapper(env, params), shaped)
    obs0, state = w.reset(jr.PRNGKey(0))
    out = w.step(jr.PRNGKey(1), state, jnp.ones(1))
    assert len(out) == 6 and w.emits_costs
    assert seen["shapes"] == ((2,), (1,), (2,), (1,))
    np.testing.assert_array_equal(out[1].prev_obs, out[0])


def test_reward_wrapper_needs_a_bound_wrapper(toy):
    from powerzoojax.rl import RewardWrapper

    env, _ = toy
    with pytest.raises(TypeError, match="LogWrapper or a SafeRLWrapper"):
        RewardWrapper(env, lambda *a: 0.0)


def test_bind(toy):
    from powerzoojax.rl import LogWrapper, SafeRLWrapper, bind

    env, params = toy
    assert type(bind(env, params)) is LogWrapper
    safe = bind(env, params, safe=True, cost_thresholds=(2.0,))
    assert isinstance(safe, SafeRLWrapper) and safe.cost_thresholds == (2.0,)
    with pytest.raises(ValueError, match="safe=True"):
        bind(env, params, cost_thresholds=(1.0,))
