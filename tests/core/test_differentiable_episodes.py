"""Differentiable episodes on the rollout kernel (core-only toy env).

The toy env's state integrates the action (`x' = x + 0.1 a + noise`, reward `−x'²`), so
with `env.step` the reward at step `t` depends on every earlier action of its episode;
`step_auto_reset` cuts that dependence, and no step depends on an earlier episode.
"""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

T = 12  # episodes of 8 steps: the boundary falls after step 7


@pytest.fixture(scope="module")
def reward_jacobians(toy):
    from powerzoojax.core import scan_rollout

    env, params = toy
    _, state0 = env.reset(jr.PRNGKey(1), params)
    actions = jr.uniform(jr.PRNGKey(2), (T, 1), minval=-0.5, maxval=0.5)

    def rewards(a, differentiable):
        return scan_rollout(env, jr.PRNGKey(0), state0, params, a, differentiable=differentiable)[2]

    @jax.jit
    def all_of_it(a):
        return (
            jax.jacrev(lambda a: rewards(a, True))(a)[..., 0],
            jax.jacrev(lambda a: rewards(a, False))(a)[..., 0],
            rewards(a, True),
            rewards(a, False),
        )

    return all_of_it(actions)


def test_forward_values_do_not_depend_on_the_flag(reward_jacobians):
    _, _, r_step, r_auto = reward_jacobians
    np.testing.assert_array_equal(np.asarray(r_step), np.asarray(r_auto))


def test_gradients_flow_within_an_episode_and_never_across_its_end(reward_jacobians):
    jac, _, _, _ = reward_jacobians  # jac[t, s] = d r_t / d a_s
    jac = np.asarray(jac)
    # Causal: no reward depends on a later action.
    assert np.all(np.triu(jac, 1) == 0.0)
    # Within the first episode every earlier action reaches every reward (x integrates a).
    first = jac[:8, :8]
    assert np.all(first[np.tril_indices(8)] != 0.0)
    # dr_t/da_s = −2 x_t · 0.1 for s ≤ t in one episode (no clipping at these sizes).
    np.testing.assert_allclose(first[7, :8], first[7, 7], rtol=1e-6)
    # Across the boundary: exactly zero.
    assert np.all(jac[8:, :8] == 0.0)
    assert np.all(jac[8:, 8:][np.tril_indices(T - 8)] != 0.0)


def test_step_auto_reset_stops_every_gradient_through_the_state(reward_jacobians):
    jac_step, jac_auto, _, _ = reward_jacobians
    jac_auto = np.asarray(jac_auto)
    np.testing.assert_array_equal(jac_auto - np.diag(np.diag(jac_auto)), 0.0)
    # Each reward still depends on its own action, as much as with env.step.
    np.testing.assert_allclose(np.diag(jac_auto), np.diag(np.asarray(jac_step)), rtol=1e-6)


def test_gradient_of_a_vmapped_differentiable_rollout(toy):
    """The batch-major vmap rule differentiates the plain loop: same gradients per env."""
    from powerzoojax.core import scan_rollout

    env, params = toy
    keys = jr.split(jr.PRNGKey(3), 3)
    _, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    actions = jnp.full((3, 5, 1), 0.3)

    def total(a, k, s):
        return jnp.sum(scan_rollout(env, k, s, params, a, differentiable=True)[2])

    batched = jax.jit(jax.grad(lambda a: jnp.sum(jax.vmap(total)(a, keys, states))))(actions)
    one = jax.grad(total)(actions[1], keys[1], jax.tree.map(lambda x: x[1], states))
    np.testing.assert_allclose(np.asarray(batched[1]), np.asarray(one), rtol=1e-6)
    assert np.all(np.asarray(batched[:, 0]) != np.asarray(batched[:, -1]))  # earlier actions reach more rewards
