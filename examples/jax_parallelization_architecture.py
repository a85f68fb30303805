"""Seed page "JAX Parallelization Architecture": every code block, verbatim.

The page's helper snippets use names (``env``, ``params``, ``n_envs``, ``actions``,
``key``, ``init_state``) that the page defines elsewhere; the lines marked
``# context`` provide them. Everything else is copied from the page.
"""

import jax
import jax.numpy as jnp

from powerzoojax.case import load_case
from powerzoojax.envs import TransGridEnv, make_trans_params
from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

case = load_case("5")
env = TransGridEnv()
params = make_trans_params(case, max_steps=48)

@jax.jit
def collect(key):
    n_envs = 64
    horizon = 48

    key, k_reset, k_actions, k_roll = jax.random.split(key, 4)

    env_keys = jax.random.split(k_reset, n_envs)
    obs0, states0 = batch_reset(env, env_keys, params)

    actions = jax.random.uniform(
        k_actions,
        (n_envs, horizon, case.n_units),
        minval=-1.0,
        maxval=1.0,
    )

    rollout_keys = jax.random.split(k_roll, n_envs)

    def single_rollout(state, key, action_seq):
        return scan_rollout(env, key, state, params, action_seq)

    final_states, obs_traj, reward_traj, cost_traj, done_traj, info_traj = jax.vmap(
        single_rollout
    )(states0, rollout_keys, actions)

    return reward_traj


reward_traj = collect(jax.random.PRNGKey(0))
print("complete pattern: reward_traj", reward_traj.shape)

from powerzoojax.utils.jax_utils import (
    split_key_for_envs,
    batch_reset,
    batch_step,
    scan_rollout,
)

n_envs = 8  # context

keys = jax.random.split(jax.random.PRNGKey(0), n_envs)
obs, states = batch_reset(env, keys, params)
print("batch_reset:", obs.shape)

actions = jnp.zeros((n_envs, case.n_units))  # context
step_keys = jax.random.split(jax.random.PRNGKey(1), n_envs)
obs, states, rewards, costs, dones, infos = batch_step(
    env, step_keys, states, actions, params
)
print("batch_step:", obs.shape, rewards.shape, costs.shape, dones.shape)

key = jax.random.PRNGKey(2)  # context
init_state = jax.tree.map(lambda x: x[0], states)  # context
actions = jnp.zeros((48, case.n_units))  # context
final_state, obs_traj, reward_traj, cost_traj, done_traj, info_traj = scan_rollout(
    env, key, init_state, params, actions
)
print("scan_rollout:", obs_traj.shape, reward_traj.shape, cost_traj.shape, done_traj.shape)
