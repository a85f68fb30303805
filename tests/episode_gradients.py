"""Gradients of short episodes of an env under a small linear policy, for the
differentiable-episode tests of the grid and market envs.

One jitted program per env computes everything the tests check, so each env compiles
once: the return and its gradient w.r.t. the policy parameters, the returns at
`θ ± ε v` (central differences along a random direction `v`), and the Jacobians
`d r_t / d a_s` of the per-step rewards w.r.t. perturbations of the actions, with
`env.step` (differentiable episodes) and with `env.step_auto_reset`.

The envs compute in float32 (they cast the action), so the differences are of float32
returns; with `ε = 1e-2` they agree with the derivative to about 1e-4 relative where the
return is smooth, and the tests allow 2e-3.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from powerzoojax.core import bind_step, rollout

EPS = 1e-2


class EpisodeGradients(NamedTuple):
    """What the tests read (numpy arrays)."""

    ret: float
    grad_leaves: list[np.ndarray]
    directional: float  # gradient · v
    central_difference: float  # (R(θ + εv) − R(θ − εv)) / 2ε
    jac_step: np.ndarray  # (T, T, A): d r_t / d a_s through env.step
    jac_auto: np.ndarray  # the same through env.step_auto_reset
    dones: np.ndarray  # (T,)


def episode_gradients(env: Any, params: Any, steps: int = 5, seed: int = 0, eps: float = EPS) -> EpisodeGradients:
    """Run the probe of the module docstring for `steps` steps from a reset, with differences
    of step `eps`."""
    a_dim = int(env.action_space(params).shape[0])
    o_dim = int(env.observation_space(params).shape[0])
    k_w, k_v, k_reset, k_roll = jr.split(jr.PRNGKey(seed), 4)
    theta = (0.1 * jr.normal(k_w, (a_dim, o_dim)), jnp.zeros((a_dim,)))
    direction = tuple(jr.normal(k, x.shape) for x, k in zip(theta, jr.split(k_v, 2)))

    def rewards_and_dones(theta, delta, differentiable):
        w, b = theta
        obs, state = env.reset(k_reset, params)

        def policy(k, o, x):
            # Inside [-1, 1] with room: the env's own clip never cuts the gradient here.
            return 0.5 * jnp.tanh(0.1 * (w @ o) + b) + x, ()

        step = bind_step(env, params, differentiable=differentiable)
        out = rollout(step, k_roll, state, delta, policy=policy, init_obs=obs)[2]
        return out[1], out[-3]

    @jax.jit
    def probe(theta, direction):
        delta = jnp.zeros((steps, a_dim))

        def ret(th):
            return jnp.sum(rewards_and_dones(th, delta, True)[0])

        value, grad = jax.value_and_grad(ret)(theta)
        shifted = jax.vmap(lambda s: ret(jax.tree.map(lambda x, v: x + s * eps * v, theta, direction)))(
            jnp.asarray([1.0, -1.0])
        )
        jac_step = jax.jacrev(lambda d: rewards_and_dones(theta, d, True)[0])(delta)
        jac_auto = jax.jacrev(lambda d: rewards_and_dones(theta, d, False)[0])(delta)
        return value, grad, shifted, jac_step, jac_auto, rewards_and_dones(theta, delta, True)[1]

    value, grad, shifted, jac_step, jac_auto, dones = probe(theta, direction)
    grad_leaves = [np.asarray(g, np.float64) for g in jax.tree.leaves(grad)]
    directional = sum(float(np.vdot(g, np.asarray(v, np.float64))) for g, v in zip(grad_leaves, jax.tree.leaves(direction)))
    plus, minus = (float(x) for x in np.asarray(shifted, np.float64))
    return EpisodeGradients(
        ret=float(value),
        grad_leaves=grad_leaves,
        directional=directional,
        central_difference=(plus - minus) / (2 * eps),
        jac_step=np.asarray(jac_step),
        jac_auto=np.asarray(jac_auto),
        dones=np.asarray(dones),
    )


def off_diagonal(jac: np.ndarray) -> np.ndarray:
    """`d r_t / d a_s` for `s ≠ t` (zeros on the diagonal)."""
    out = jac.copy()
    idx = np.arange(jac.shape[0])
    out[idx, idx] = 0.0
    return out
