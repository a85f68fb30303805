"""Wrappers and multi-agent adapters under bad input: non-finite actions, malformed
per-agent dicts, wrong params, and plain ``jax.jit`` on their bound methods."""

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

# The wrappers and adapters are exercised on the grid and market envs.
pytestmark = pytest.mark.requires("powerzoojax.grid", "powerzoojax.market")


@functools.lru_cache(maxsize=None)
def _trans(max_steps: int = 3, scale: float = 1.0):
    from powerzoojax.case import load_case
    from powerzoojax.grid import TransGridEnv, make_trans_params

    params = make_trans_params(load_case("5"), max_steps=max_steps)
    return TransGridEnv(), params.with_load_profiles(np.asarray(params.load_profiles) * scale)


def _wrappers():
    from powerzoojax.rl.wrappers import LogWrapper, PenaltyRewardWrapper, RewardWrapper, SafeRLWrapper, SauteWrapper

    env, params = _trans()
    return {
        "LogWrapper": LogWrapper(env, params),
        "SafeRLWrapper": SafeRLWrapper(env, params),
        "SauteWrapper": SauteWrapper(env, params),
        "RewardWrapper": RewardWrapper(LogWrapper(env, params), lambda obs, a, nxt, r, info: 2.0 * r),
        "PenaltyRewardWrapper": LogWrapper(PenaltyRewardWrapper(env, 1.0), params),
    }


@pytest.mark.parametrize("name", ["LogWrapper", "SafeRLWrapper", "SauteWrapper", "RewardWrapper", "PenaltyRewardWrapper"])
def test_plain_jax_jit_on_wrapper_methods(name):
    wrapped = _wrappers()[name]
    reset, step = jax.jit(wrapped.reset), jax.jit(wrapped.step)
    obs, state = reset(jr.PRNGKey(0))
    out = step(jr.PRNGKey(1), state, jnp.full(5, jnp.nan, jnp.float32))
    out = step(jr.PRNGKey(2), out[1], jnp.zeros(5))
    assert step._cache_size() == 1
    assert not bool(out[-1]["invalid_action"])
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(out[:3]))


def test_jit_keeps_wrappers_with_different_params_apart():
    from powerzoojax.rl.wrappers import LogWrapper

    low, high = LogWrapper(*_trans(3, 0.8)), LogWrapper(*_trans(3, 1.1))
    assert hash(low) == hash(high)  # same structure, different profile values
    _, s_low = jax.jit(low.reset)(jr.PRNGKey(0))
    _, s_high = jax.jit(high.reset)(jr.PRNGKey(0))
    r_low = jax.jit(low.step)(jr.PRNGKey(1), s_low, jnp.zeros(5))[2]
    r_high = jax.jit(high.step)(jr.PRNGKey(1), s_high, jnp.zeros(5))[2]
    assert float(r_low) != float(r_high)


def test_log_wrapper_never_latches_a_nan_return():
    from powerzoojax.core import rollout
    from powerzoojax.rl.wrappers import LogWrapper, RewardWrapper

    env, params = _trans()
    # A reward function that returns NaN on every other step.
    nan_reward = RewardWrapper(
        LogWrapper(env, params),
        lambda obs, a, nxt, r, info: jnp.where(jnp.isfinite(a[0]), r, jnp.nan),
    )
    for wrapped in (LogWrapper(env, params), nan_reward):
        _, state = wrapped.reset(jr.PRNGKey(0))
        actions = jnp.zeros((7, 5)).at[::2, 0].set(jnp.nan)
        final, _, (_, rewards, dones, info) = jax.jit(lambda s, a, w=wrapped: rollout(w.step, jr.PRNGKey(1), s, a))(state, actions)
        returns = np.asarray(info["returned_episode_returns"])
        assert np.all(np.isfinite(returns)) and np.isfinite(float(final.episode_returns))
        assert np.asarray(dones).sum() == 2 and np.all(np.asarray(info["invalid_action"])[::2])
        # The latched return of the first episode is the sum of its finite rewards.
        r = np.asarray(rewards)[:3]
        assert returns[2] == pytest.approx(float(np.sum(r[np.isfinite(r)])), rel=1e-6)


@functools.lru_cache(maxsize=None)
def _marl(name: str):
    from powerzoojax.case import load_case
    from powerzoojax.rl.marl import DistGridMARLEnv, GridMARLEnv, MarketMARLEnv

    if name == "GridMARLEnv":
        return GridMARLEnv(*_trans())
    if name == "DistGridMARLEnv":
        from powerzoojax.grid import DistGridEnv, make_dist_params

        return DistGridMARLEnv(DistGridEnv(), make_dist_params(load_case("33bw"), max_steps=2))
    from powerzoojax.market import make_market_marl_params

    case5 = load_case("5")
    nominal = 0.5 * (np.asarray(case5.load_d_max) + np.asarray(case5.load_d_min))
    return MarketMARLEnv(make_market_marl_params(case5, np.tile(nominal, (4, 1)), max_steps=3))


MARL = ["GridMARLEnv", "DistGridMARLEnv", "MarketMARLEnv"]


@pytest.mark.parametrize("name", MARL)
def test_marl_non_finite_actions_are_replaced_and_flagged(name):
    env = _marl(name)
    _, state = jax.jit(env.reset)(jr.PRNGKey(0))
    reference = jnp.full((env.num_agents, env.action_dim), 0.3).at[0, 0].set(0.0)
    actions = jnp.stack([reference] + [reference.at[0, 0].set(v) for v in (jnp.nan, jnp.inf, -jnp.inf)])
    step = jax.jit(jax.vmap(lambda a: env.step_arrays(jr.PRNGKey(1), state, a)))
    obs, next_state, rewards, done, info = step(actions)
    np.testing.assert_array_equal(np.asarray(info["invalid_action"]), [False, True, True, True])
    for leaf in (obs, rewards, *[x for x in jax.tree.leaves(next_state) if jnp.issubdtype(x.dtype, jnp.inexact)]):
        assert bool(jnp.all(jnp.isfinite(leaf)))
        for i in (1, 2, 3):
            np.testing.assert_array_equal(np.asarray(leaf[i]), np.asarray(leaf[0]))
    if "is_safe" in info:
        assert not np.any(np.asarray(info["is_safe"])[1:])


@pytest.mark.parametrize("solver_mode", [0, 1])
def test_marl_entries_a_step_never_reads_are_not_flagged(solver_mode):
    """Padding (the units' and the P-only battery's second entry next to a two-entry
    battery) is never read, nor, under the DC-OPF (solver_mode 1), are the unit
    set-points: a NaN there is neither an invalid action nor read; a NaN in an entry the
    step reads still is."""
    from powerzoojax.case import load_case
    from powerzoojax.grid import TransGridEnv, make_trans_params
    from powerzoojax.grid.resources import make_battery_bundle
    from powerzoojax.rl.marl import GridMARLEnv

    case5 = load_case("5")
    two = make_battery_bundle(case5, (1,), power_mw=20.0, energy_mwh=50.0, enable_q_control=True)  # 2 entries
    one = make_battery_bundle(case5, (3,), power_mw=10.0, energy_mwh=20.0)  # 1 entry
    params = make_trans_params(case5, max_steps=3, resources=(two, one), solver_mode=solver_mode)
    env = GridMARLEnv(TransGridEnv(), params)
    units = case5.n_units
    ignored = env.ignored_action_entries()
    expected = np.zeros((env.num_agents, 2), bool)
    expected[:units, 1] = True  # unit padding
    expected[units + 1, 1] = True  # the one-entry battery's padding
    expected[:units, 0] = solver_mode == 1  # the OPF sets the dispatch
    np.testing.assert_array_equal(ignored, expected)

    _, state = jax.jit(env.reset_arrays)(jr.PRNGKey(0))
    reference = jnp.full((env.num_agents, 2), 0.3)
    unread = jnp.where(jnp.asarray(expected), jnp.nan, reference)
    read = reference.at[units, 0].set(jnp.nan)  # the two-entry battery's first entry
    step = jax.jit(jax.vmap(lambda a: env.step_arrays(jr.PRNGKey(1), state, a)))
    clean = jnp.where(jnp.asarray(expected), 0.0, reference)
    obs, next_state, rewards, _, info = step(jnp.stack([clean, unread, read]))
    np.testing.assert_array_equal(np.asarray(info["invalid_action"]), [False, False, True])
    for leaf in (obs, rewards, *[x for x in jax.tree.leaves(next_state) if jnp.issubdtype(x.dtype, jnp.inexact)]):
        np.testing.assert_array_equal(np.asarray(leaf[1]), np.asarray(leaf[0]))


@pytest.mark.parametrize("name", MARL)
def test_marl_dict_errors_name_the_agent(name):
    env = _marl(name)
    _, state = env.reset(jr.PRNGKey(0))
    good = {a: jnp.zeros(env.action_dim) for a in env.agents}
    with pytest.raises(KeyError, match=r"actions for unknown agent\(s\) \['ghost_0'\]; agents are \["):
        env.step(jr.PRNGKey(1), state, {**good, "ghost_0": jnp.zeros(env.action_dim)})
    second = env.agents[1]
    with pytest.raises(
        ValueError,
        match=rf"{name}.step: agent '{second}': action has shape \({env.action_dim + 1},\) but the action space "
        rf"expects shape \({env.action_dim},\)",
    ):
        env.step(jr.PRNGKey(1), state, {**good, second: jnp.zeros(env.action_dim + 1)})
    with pytest.raises(ValueError, match=rf"{name}.step .*action has shape \(2, 7\) but the action space expects shape"):
        env.step_arrays(jr.PRNGKey(1), state, jnp.zeros((2, 7)))
    with pytest.raises(TypeError, match=rf"{name}.reset: params must be {type(env.params).__name__} .* got dict"):
        env.reset(jr.PRNGKey(0), {"max_steps": 3})


@pytest.mark.parametrize("name", MARL)
def test_plain_jax_jit_on_marl_adapter_methods(name):
    env = _marl(name)
    _, state = jax.jit(env.reset)(jr.PRNGKey(0))
    step = jax.jit(env.step)
    actions = {a: jnp.zeros(env.action_dim) for a in env.agents}
    out = step(jr.PRNGKey(1), state, actions)
    step(jr.PRNGKey(2), out[1], actions)
    assert step._cache_size() == 1 and set(out[2]) == set(env.agents)


@pytest.mark.parametrize("name", MARL)
def test_marl_stack_takes_observation_dicts_too(name):
    """``stack`` is for any per-agent dict (observations included); only the actions given
    to ``step`` are checked against the action space."""
    env = _marl(name)
    obs, _ = env.reset(jr.PRNGKey(0))
    stacked = env.stack(obs)
    assert stacked.shape == (env.num_agents, env.obs_dim)
    np.testing.assert_array_equal(np.asarray(stacked[1]), np.asarray(obs[env.agents[1]]))
    with pytest.raises(KeyError, match=r"entries missing for agent\(s\)"):
        env.stack({env.agents[0]: obs[env.agents[0]]})
