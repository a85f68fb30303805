"""Conformance kit for single-agent wrappers, read through their `Transition`.

The wrapper counterpart of `powerzoojax.testing.check_env_api`: jit = eager,
vmap = loop of single steps, a run through `powerzoojax.core.rollout` ends its
episode exactly at `max_steps` with a fresh reset observation and latched episode
statistics, and one key gives one trajectory. As there, the wrapped env's
`iteration_count_keys` are left out of the comparisons between different compiled
programs (their values follow round-off), not of the one-key-one-trajectory check.
"""

from typing import Any

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from powerzoojax.core import rollout
from powerzoojax.rl.wrappers._transition import Transition, transition_step
from powerzoojax.testing._checks import _check_iteration_counts, _leaves_close, _leaves_equal, _uncounted


def _check_transition(wrapped: Any, t: Transition) -> None:
    # numpy checks: eager jnp ops would each compile a tiny program.
    k = len(wrapped.reported_constraint_names)
    if t.costs.shape != (k,) or t.costs.dtype != jnp.float32:
        raise AssertionError(f"costs must be float32 ({k},) (one per reported channel), got {t.costs.dtype}{t.costs.shape}")
    if not np.all(np.asarray(t.costs) >= 0):
        raise AssertionError(f"costs must be non-negative, got {t.costs}")
    space = wrapped.observation_space()
    x = np.asarray(t.obs)
    inside = x.shape == space.shape and np.all((x >= np.asarray(space.low)) & (x <= np.asarray(space.high)))
    if not inside:
        raise AssertionError(f"obs {t.obs.dtype}{t.obs.shape} is not in the observation space {space.shape}")
    if t.reward.shape != () or t.reward.dtype != jnp.float32:
        raise AssertionError(f"reward must be a float32 scalar, got {t.reward.dtype}{t.reward.shape}")
    if t.done.shape != () or t.done.dtype != jnp.bool_:
        raise AssertionError(f"done must be a bool scalar, got {t.done.dtype}{t.done.shape}")
    if not isinstance(t.info, dict) or not all(isinstance(v, jax.Array) for v in t.info.values()):
        raise AssertionError("info must be a dict of JAX arrays")
    for key in ("returned_episode_returns", "returned_episode_lengths", "returned_episode"):
        if key not in t.info:
            raise AssertionError(f"info is missing {key!r}")


def check_wrapper_api(
    wrapped: Any,
    *,
    key: jax.Array | None = None,
    stochastic: bool = False,
    n_batch: int = 3,
    check_eager: bool = True,
    fresh_terminal_obs: bool = True,
) -> None:
    """Assert that a wrapper honours the trainer-facing contract (its `transition` and
    `transition_auto_reset`); raises `AssertionError`.

    **Arguments:**

    - `wrapped`: the bound wrapper.
    - `key`: PRNG key; `None` uses a fixed key.
    - `stochastic`: also assert that different keys give different trajectories.
    - `n_batch`: batch size of the `vmap` checks.
    - `check_eager`: compare with an op-by-op (`jax.disable_jit`) run, the slowest part of
      the kit (every primitive is compiled on its own).
    - `fresh_terminal_obs`: `False` for a wrapper whose state outlives an episode on
      purpose (running observation statistics): its terminal observation starts the next
      episode under the carried state, so it is not compared with a fresh `reset`; every
      other check still runs.
    """
    key = jr.PRNGKey(0) if key is None else key
    k_reset, k_act, k_step, k_roll, k_other = jax.jit(lambda k: tuple(jr.split(k, 5)))(key)
    act_space = wrapped.action_space()
    # Lambdas: jax.jit hashes its callable, and a bound Module method carries arrays.
    reset = jax.jit(lambda k: wrapped.reset(k))
    # The kernel's tuple (info last) is what the comparisons below take apart.
    step = jax.jit(lambda k, s, a: wrapped.transition(k, s, a).kernel_tuple())

    sample_many = jax.jit(lambda k, n: jax.vmap(act_space.sample)(jr.split(k, n)), static_argnums=1)
    obs, state = reset(k_reset)
    if obs.shape != wrapped.observation_space().shape:
        raise AssertionError(f"reset obs shape {obs.shape} != observation_space {wrapped.observation_space().shape}")
    action = sample_many(k_act, 1)[0]
    out = step(k_step, state, action)
    _check_transition(wrapped, Transition(*out))
    counts = wrapped.env.iteration_count_keys(wrapped.params)
    _check_iteration_counts(out[-1], counts, wrapped.env.name)

    if check_eager:
        with jax.disable_jit():
            eager = wrapped.transition(k_step, state, action).kernel_tuple()
        _leaves_close(_uncounted(eager, counts), _uncounted(out, counts), "eager step vs jit step", rtol=1e-4, atol=1e-4)

    split = jax.jit(jr.split, static_argnums=1)
    states = jax.jit(jax.vmap(lambda k: wrapped.reset(k)))(split(k_other, n_batch))[1]
    actions = sample_many(k_act, n_batch)
    step_keys = split(k_step, n_batch)
    batched = jax.jit(jax.vmap(lambda k, s, a: wrapped.transition(k, s, a).kernel_tuple()))(step_keys, states, actions)
    for i in range(n_batch):
        pick = lambda tree: jax.tree.map(lambda x: np.asarray(x)[i], tree)  # noqa: E731
        single = step(np.asarray(step_keys)[i], pick(states), np.asarray(actions)[i])
        _leaves_close(_uncounted(pick(batched), counts), _uncounted(single, counts), f"vmap(step)[{i}] vs step", rtol=1e-4, atol=1e-4)

    # Two episodes through the rollout kernel: done exactly at max_steps, latched stats,
    # and the terminal observation is the next episode's reset observation.
    horizon = wrapped.max_steps
    act_seq = sample_many(k_act, 2 * horizon)

    @jax.jit
    def run(key, state):
        return rollout(transition_step(wrapped), key, state, act_seq)

    final_state, _, outs = run(k_roll, state)
    obs_seq, rewards, _, dones, info = outs
    rewards, dones = np.asarray(rewards), np.asarray(dones)
    expected = np.zeros(2 * horizon, bool)
    expected[horizon - 1] = expected[-1] = True
    if not np.array_equal(dones, expected):
        raise AssertionError(
            f"done must be True exactly every max_steps={horizon} steps; got True at {np.flatnonzero(dones).tolist()}"
        )
    lengths = np.asarray(info["returned_episode_lengths"])
    returns = np.asarray(info["returned_episode_returns"])
    for end, start in ((horizon - 1, 0), (2 * horizon - 1, horizon)):
        if lengths[end] != horizon:
            raise AssertionError(f"returned_episode_lengths at the terminal step is {lengths[end]}, expected {horizon}")
        np.testing.assert_allclose(returns[end], rewards[start : end + 1].sum(), rtol=1e-4, atol=1e-4,
                                   err_msg="returned_episode_returns must latch the episode's reward sum")
    if not np.all(returns[: horizon - 1] == 0):
        raise AssertionError("returned_episode_returns must stay 0 until the first episode ends")
    if fresh_terminal_obs:
        last_key = jax.jit(lambda k: jr.split(jr.split(k, 2 * horizon)[-1])[1])(k_roll)
        fresh_obs, _ = reset(last_key)
        _leaves_close(np.asarray(obs_seq)[-1], fresh_obs, "obs returned on the terminal step vs reset obs")
    if float(final_state.episode_returns) != 0.0 or int(final_state.episode_lengths) != 0:
        raise AssertionError("running episode sums must restart from zero after done")

    again = run(k_roll, state)
    _leaves_equal(again, (final_state, None, outs), "same key, same trajectory")
    if stochastic:
        other = run(k_other, state)
        if all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(jax.tree.leaves(other[2]), jax.tree.leaves(outs))):
            raise AssertionError("stochastic env: different keys gave identical trajectories")


def check_wrapper_no_retrace(wrapped: Any, *, n_calls: int = 3, n_envs: int = 4) -> int:
    """Assert that a vmapped rollout of `wrapped` traces once across new keys.

    **Arguments:**

    - `wrapped`: the bound wrapper.
    - `n_calls`: calls with new keys.
    - `n_envs`: batch size.

    **Returns:**

    The trace count.
    """
    count = {"n": 0}
    act_space = wrapped.action_space()
    horizon = wrapped.max_steps

    def run(keys):
        count["n"] += 1
        _, states = jax.vmap(wrapped.reset)(keys)
        actions = jax.vmap(lambda k: jax.vmap(act_space.sample)(jr.split(k, horizon)))(keys)
        return jax.vmap(lambda k, s, a: rollout(transition_step(wrapped), k, s, a))(keys, states, actions)

    f = jax.jit(run)
    for seed in range(n_calls):
        f(jr.split(jr.PRNGKey(seed), n_envs))
    if count["n"] != 1:
        raise AssertionError(f"rollout traced {count['n']} times; expected once")
    return count["n"]
