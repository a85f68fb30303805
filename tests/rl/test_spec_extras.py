"""Smaller pieces of the RL spec (§3.1, §3.3, §3.5): ``PenaltyRewardWrapper``, the legacy
``cost_threshold`` argument, ``to_rejax_kwargs`` and ``eval_wall_time_s`` of the host driver."""

import io

import numpy as np
import pytest


# -- PenaltyRewardWrapper -------------------------------------------------------------


def test_penalty_wrapper_conforms_and_subtracts_the_scaled_costs(toy):
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.rl import LogWrapper, PenaltyRewardWrapper
    from powerzoojax.testing import check_env_api

    env, params = toy
    wrapped = PenaltyRewardWrapper(env, 10.0, reward_scale=0.5)
    check_env_api(wrapped, params)
    assert wrapped.constraint_names(params) == env.constraint_names(params) and wrapped.name == env.name

    _, state = env.reset(jr.PRNGKey(0), params)
    state = eqx.tree_at(lambda s: s.x, state, jnp.asarray(1.5, jnp.float32))  # out of band: a positive cost
    action = jnp.full(env.action_space(params).shape, 0.9)
    _, _, r_env, c_env, _, _ = jax.jit(lambda k, s, a: env.step(k, s, a, params))(jr.PRNGKey(1), state, action)
    _, _, r, c, _, info = jax.jit(lambda k, s, a: wrapped.step(k, s, a, params))(jr.PRNGKey(1), state, action)
    assert float(np.sum(np.asarray(c_env))) > 0
    np.testing.assert_allclose(float(r), float(r_env) - 10.0 * 0.5 * float(np.sum(np.asarray(c_env))), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(c), np.asarray(c_env))
    assert float(info["unpenalized_reward"]) == float(r_env)

    # Inside LogWrapper (the reference's composition) the penalised reward is what is logged.
    log = LogWrapper(wrapped, params)
    _, ls = log.reset(jr.PRNGKey(0))
    ls = eqx.tree_at(lambda s: s.env_state, ls, state)
    _, _, lr, _, linfo = jax.jit(lambda k, s, a: log.step(k, s, a))(jr.PRNGKey(1), ls, action)
    assert float(lr) == float(r) and "unpenalized_reward" in linfo

    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="penalty_lambda"):
            PenaltyRewardWrapper(env, bad)
    with pytest.raises(TypeError, match="bare Environment"):
        PenaltyRewardWrapper(log, 1.0)


# -- legacy cost_threshold, to_rejax_kwargs -------------------------------------------


def test_legacy_cost_threshold_argument_and_attribute(toy):
    from powerzoojax.rl import RewardWrapper, SafeRLWrapper, SauteWrapper, bind

    env, params = toy
    k = len(env.constraint_names(params))
    safe = SafeRLWrapper(env, params, 2.5)
    assert safe.cost_thresholds == (2.5,) * k and safe.cost_threshold == 2.5 and safe.num_constraints == k
    assert SauteWrapper(env, params, 1.0).cost_thresholds == (1.0,) * k
    assert bind(env, params, True, 3.0).cost_threshold == 3.0
    assert SafeRLWrapper(env, params).cost_threshold == 0.0  # no silent default budget
    assert RewardWrapper(safe, lambda o, a, n, r, i: r).cost_threshold == 2.5
    with pytest.raises(ValueError, match="not both"):
        SafeRLWrapper(env, params, 1.0, cost_thresholds=1.0)
    with pytest.raises(ValueError, match="safe=True"):
        bind(env, params, False, 1.0)


def test_to_rejax_kwargs_maps_the_backend_names():
    from powerzoojax.rl import TrainConfig

    ppo = TrainConfig(n_steps=48, n_epochs=3, n_minibatches=8, hidden_dims=(32, 16)).to_rejax_kwargs()
    assert (ppo["num_steps"], ppo["num_epochs"], ppo["num_minibatches"]) == (48, 3, 8)
    assert ppo["hidden_layer_sizes"] == (32, 16) and "n_steps" not in ppo
    sac = TrainConfig(algo="sac", sac_num_epochs=2, sac_target_entropy_ratio=0.5).to_rejax_kwargs()
    assert sac["num_epochs"] == 2 and sac["target_entropy_ratio"] == 0.5 and "clip_eps" not in sac


# -- eval_wall_time_s -----------------------------------------------------------------


def _stand_in_trainer(config, n_updates, eval_every):
    """A stand-in trainer for the host driver: ``update`` only counts, every
    ``eval_every``-th update (and the last) "evaluates"; the run's cost is not the point."""
    from typing import Any

    import equinox as eqx
    import jax.numpy as jnp
    from jaxtyping import Array, Int

    from powerzoojax.rl import TrainResult
    from powerzoojax.rl.algos._update_loop import Programs, UpdateLoop, compile_programs

    class State(eqx.Module):
        update: Int[Array, ""]

        @property
        def policy(self):
            return self.update

    class Env:
        name = "stand-in"

    class StandIn(UpdateLoop):
        env: Any
        config: Any
        n_updates: int
        eval_every: int
        batch_size: int
        mesh: Any
        programs: Programs

        def __init__(self):
            self.env, self.batch_size, self.mesh = Env(), 10, None
            self.config, self.n_updates, self.eval_every = config, n_updates, eval_every
            self.programs = compile_programs(self)

        def init(self, key):
            return State(jnp.asarray(0, jnp.int32))

        def update(self, state):
            u = state.update + 1
            due = (u % self.eval_every == 0) | (u == self.n_updates)
            metrics = {
                "update": u.astype(jnp.float32),
                "env_steps": (u * self.batch_size).astype(jnp.float32),
                "eval_returns": jnp.where(due, u.astype(jnp.float32), jnp.nan),
            }
            return State(u), metrics

        def result(self, state, metrics, checkpoints=None):
            return TrainResult(params=None, metrics=metrics, config=self.config, checkpoints=checkpoints)

    return StandIn()


@pytest.mark.parametrize("warmup", [True, False])
def test_eval_wall_time_is_stamped_on_evaluation_rows(warmup):
    import jax.random as jr

    from powerzoojax.rl import TrainConfig, run_training

    config = TrainConfig(record_eval_wall_time=True, wall_time_warmup=warmup)
    trainer = _stand_in_trainer(config, n_updates=7, eval_every=3)
    result = run_training(trainer, jr.PRNGKey(0), progress=False)
    stamps = np.asarray(result.metrics["eval_wall_time_s"])
    evals = np.asarray(result.metrics["eval_returns"])
    np.testing.assert_array_equal(np.asarray(result.metrics["update"]), np.arange(1, 8))  # no update spent on warm-up
    assert np.isfinite(evals).tolist() == [False, False, True, False, False, True, True]
    np.testing.assert_array_equal(np.isfinite(stamps), np.isfinite(evals))
    finite = stamps[np.isfinite(stamps)]
    assert np.all(finite >= 0) and np.all(np.diff(finite) >= 0)
    # Without the flag the driver adds nothing.
    plain = run_training(_stand_in_trainer(TrainConfig(), 7, 3), jr.PRNGKey(0), progress=True, stream=io.StringIO())
    assert "eval_wall_time_s" not in plain.metrics


def test_checkpoints_are_kept_in_memory_without_an_output_dir():
    import jax.random as jr

    from powerzoojax.rl import TrainConfig, run_training

    result = run_training(_stand_in_trainer(TrainConfig(n_checkpoints=3), 7, 3), jr.PRNGKey(0), progress=False)
    assert [(steps, int(policy)) for steps, policy in result.checkpoints] == [(20, 2), (50, 5), (70, 7)]


def test_penalty_wrapper_forwards_the_ignored_action_entries():
    import jax.numpy as jnp
    import jax.random as jr
    from toy_env import ToyEnv, make_toy_params

    from powerzoojax.rl import PenaltyRewardWrapper

    class IdleToyEnv(ToyEnv):
        """The toy env, declaring its one action entry unread (its step still reads it)."""

        def ignored_action_entries(self, params):
            return np.ones((1,), bool)

    params = make_toy_params(max_steps=3)
    wrapped = PenaltyRewardWrapper(IdleToyEnv(), 1.0)
    np.testing.assert_array_equal(wrapped.ignored_action_entries(params), [True])
    assert PenaltyRewardWrapper(ToyEnv(), 1.0).ignored_action_entries(params) is None
    _, state = wrapped.reset(jr.PRNGKey(0), params)
    idle = wrapped.step(jr.PRNGKey(1), state, jnp.array([jnp.nan]), params)
    neutral = wrapped.step(jr.PRNGKey(1), state, jnp.array([0.0]), params)
    assert not bool(idle[-1]["invalid_action"])
    np.testing.assert_array_equal(np.asarray(idle[0]), np.asarray(neutral[0]))
    assert float(idle[2]) == float(neutral[2])
