"""The "Custom loops" rollout with an Equinox policy, on the library's one rollout kernel.

Same data flow as ``custom_loops_flax.py`` (reset once, carry obs + state through the
scan, emit a transition pytree, bootstrap with the last value), but the scan over time
is ``powerzoojax.core.rollout`` with a policy instead of a hand-written ``lax.scan``.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from powerzoojax.case import load_case
from powerzoojax.core import bind_step, rollout
from powerzoojax.envs import TransGridEnv, make_trans_params
from powerzoojax.utils.jax_utils import batch_reset

case = load_case("5")
env = TransGridEnv()
profiles = jnp.ones((48, case.n_loads), dtype=jnp.float32) * 0.5
params = make_trans_params(case, load_profiles=profiles, max_steps=48)


class GaussianActorCritic(eqx.Module):
    torso: eqx.nn.MLP
    mu_head: eqx.nn.Linear
    value_head: eqx.nn.Linear
    log_sigma: jax.Array

    def __init__(self, obs_dim: int, action_dim: int, key: jax.Array, hidden: int = 64):
        k1, k2, k3 = jax.random.split(key, 3)
        self.torso = eqx.nn.MLP(obs_dim, hidden, hidden, depth=1, activation=jnp.tanh, final_activation=jnp.tanh, key=k1)
        self.mu_head = eqx.nn.Linear(hidden, action_dim, key=k2)
        self.value_head = eqx.nn.Linear(hidden, 1, key=k3)
        self.log_sigma = jnp.zeros(action_dim)

    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        x = self.torso(obs)
        return self.mu_head(x), self.log_sigma, self.value_head(x)[0]


def collect_batch(key, policy, n_envs=64, horizon=48):
    key, k_reset, k_roll = jax.random.split(key, 3)
    init_obs, init_states = batch_reset(env, jax.random.split(k_reset, n_envs), params)

    def act(k, obs, _):
        mu, log_sigma, value = policy(obs)
        action = mu + jnp.exp(log_sigma) * jax.random.normal(k, mu.shape)
        return action, {"obs": obs, "action": action, "value": value}

    def rollout_once(k, obs, state):
        _, last_obs, (_, reward, costs, done, _, extra) = rollout(
            bind_step(env, params), k, state, length=horizon, policy=act, init_obs=obs
        )
        return {**extra, "reward": reward, "costs": costs, "done": done}, policy(last_obs)[2]

    return jax.vmap(rollout_once)(jax.random.split(k_roll, n_envs), init_obs, init_states)


def gae_advantage(rewards, dones, values, last_value, gamma=0.99, gae_lambda=0.95):
    """GAE with the done mask over (T, N) arrays (backward recursion, as on the seed page)."""
    next_values = jnp.concatenate([values[1:], last_value[None, :]], axis=0)

    def step_back(last_gae, xs):
        reward, done, value, next_value = xs
        not_done = 1.0 - done
        delta = reward + gamma * next_value * not_done - value
        gae = delta + gamma * gae_lambda * not_done * last_gae
        return gae, gae

    _, adv_rev = jax.lax.scan(
        step_back, jnp.zeros_like(last_value), (rewards[::-1], dones[::-1], values[::-1], next_values[::-1])
    )
    adv = adv_rev[::-1]
    return adv, adv + values


@eqx.filter_jit
def value_regression_step(policy, opt_state, key):
    """One on-device update: collect, bootstrap, GAE, flatten, Optax step on the critic."""
    traj, last_values = collect_batch(key, policy)
    traj = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), traj)  # (N, T) -> (T, N)
    scale = 1e-2  # returns are O(100): keep the critic's regression well conditioned
    _, returns = gae_advantage(traj["reward"] * scale, traj["done"].astype(jnp.float32), traj["value"], last_values)
    obs = traj["obs"].reshape(-1, traj["obs"].shape[-1])

    def loss_fn(p):
        values = jax.vmap(lambda o: p(o)[2])(obs)
        return jnp.mean((values - returns.reshape(-1)) ** 2)

    loss, grads = eqx.filter_value_and_grad(loss_fn)(policy)
    updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(policy, eqx.is_array))
    return eqx.apply_updates(policy, updates), opt_state, loss


optimizer = optax.adam(3e-3)

if __name__ == "__main__":
    policy = GaussianActorCritic(env.obs_dim(params), case.n_units, jax.random.PRNGKey(0))
    opt_state = optimizer.init(eqx.filter(policy, eqx.is_array))
    key = jax.random.PRNGKey(1)
    for i in range(20):
        key, sub = jax.random.split(key)
        policy, opt_state, loss = value_regression_step(policy, opt_state, sub)
        if i % 5 == 0 or i == 19:
            print(f"update {i:2d}  critic loss {float(loss):.4f}")
