"""IPPO market mode (spec §3.5): the market info IPPO collects, the cumulative profits and
the convergence-stability metric, checked on a toy market whose profits are known in
closed form, and the metric keys on the real GenCos market."""

import numpy as np
import pytest

MAX_STEPS = 4


@pytest.fixture(scope="module")
def toy_market():
    """Two GenCos; agent i earns ``(i + 1) · (t + 1)`` at episode step t whatever it bids,
    so every run's profits are known exactly. Its ``compute_market_metrics`` checks the
    shapes of what IPPO passes it ((steps, envs, ...)) while the update is traced."""
    import jax.numpy as jnp

    from powerzoojax.core import EnvParams, EnvState, select_tree
    from powerzoojax.rl import MARLState, MultiAgentEnvironment

    class ToyMarket(MultiAgentEnvironment):
        def __init__(self):
            self.params = EnvParams(max_steps=MAX_STEPS)
            self.agents = ("genco_0", "genco_1")

        @property
        def obs_dim(self) -> int:
            return 2

        @property
        def action_dim(self) -> int:
            return 3

        def _obs(self, t):
            x = jnp.stack([jnp.ones((), jnp.float32), t.astype(jnp.float32) / MAX_STEPS])
            return jnp.broadcast_to(x, (2, 2))

        def _fresh(self):
            return EnvState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False))

        def reset_env(self, key, params):
            s = self._fresh()
            return self._obs(s.time_step), MARLState(s)

        def step_env(self, key, state, actions, params):
            t = state.env_state.time_step
            profit = jnp.asarray([1.0, 2.0]) * (t + 1).astype(jnp.float32)
            done = t + 1 >= MAX_STEPS
            s = select_tree(done, self._fresh(), EnvState(time_step=t + 1, done=done))
            info = {
                "lmp": jnp.full((3,), 20.0) + jnp.mean(actions),
                "unit_power": jnp.asarray([10.0, 30.0]),
                "gen_cost": jnp.asarray(5.0),
                "load_mw": jnp.full((3,), 40.0 / 3),
                "other": jnp.asarray(0.0),
            }
            return self._obs(s.time_step), MARLState(s), profit, done, info

        def compute_market_metrics(self, info):
            assert set(info) == {"lmp", "unit_power", "gen_cost", "load_mw"}, sorted(info)
            steps, envs = info["gen_cost"].shape
            assert info["lmp"].shape == (steps, envs, 3) and info["unit_power"].shape == (steps, envs, 2)
            share = info["unit_power"] / jnp.sum(info["unit_power"], axis=-1, keepdims=True)
            return {"market/HHI": jnp.mean(jnp.sum(share**2, axis=-1))}

    return ToyMarket()


@pytest.fixture(scope="module")
def toy_run(toy_market, tmp_path_factory):
    """Five updates of one episode per env, a checkpoint after every update."""
    import jax.random as jr

    from powerzoojax.rl import TrainConfig, make_train, run_training

    n_updates = 5
    config = TrainConfig(
        algo="ippo", total_timesteps=n_updates * 2 * MAX_STEPS, num_envs=2, n_steps=MAX_STEPS, n_epochs=2,
        n_minibatches=2, hidden_dims=(8,), learning_rate=1e-2, eval_freq=0, n_checkpoints=n_updates,
    )
    trainer = make_train(toy_market, config)
    out = tmp_path_factory.mktemp("ippo_market")
    result = run_training(trainer, jr.PRNGKey(0), output_dir=str(out), progress=False)
    return trainer, result, out


def test_market_metrics_and_cumulative_profit(toy_run):
    trainer, result, _ = toy_run
    m = {k: np.asarray(v) for k, v in result.metrics.items()}
    for key in ("market/HHI", "market/cum_profit_mean", "market/convergence_stability", "market/mean_profit_genco_0",
                "market/cumulative_profit_genco_0", "market/cumulative_profit_genco_1"):
        assert key in m, key
    np.testing.assert_allclose(m["market/HHI"], 0.25**2 + 0.75**2, rtol=1e-6)
    # Each update holds one whole episode per env: agent i earns (i+1)·(1+2+3+4) per update.
    updates = np.arange(1, trainer.n_updates + 1)
    for i in range(2):
        np.testing.assert_allclose(m[f"market/cumulative_profit_genco_{i}"], 10.0 * (i + 1) * updates, rtol=1e-6)
        np.testing.assert_allclose(m[f"market/mean_profit_genco_{i}"], 2.5 * (i + 1), rtol=1e-6)
    np.testing.assert_allclose(m["market/cum_profit_mean"], 15.0 * updates, rtol=1e-6)


def test_convergence_stability_is_the_distance_to_the_80_percent_checkpoint(toy_run):
    import equinox as eqx
    import jax

    from powerzoojax.rl import load_checkpoint

    trainer, result, out = toy_run
    stability = np.asarray(result.metrics["market/convergence_stability"])
    assert np.all(np.isnan(stability[:-1])) and np.isfinite(stability[-1])
    assert trainer.snapshot_update == 4  # int(0.8 · 5)
    # Independently: the policies the host saved after update 4 and after update 5.
    steps = [s for s, _ in result.checkpoints]
    assert steps == [u * trainer.batch_size for u in range(1, 6)]
    leaves = lambda p: [np.asarray(x, np.float64) for x in jax.tree.leaves(eqx.filter(p, eqx.is_array))]  # noqa: E731
    at_80, final = leaves(result.checkpoints[3][1]), leaves(result.checkpoints[4][1])
    expected = np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(at_80, final)))
    assert expected > 0
    np.testing.assert_allclose(stability[-1], expected, rtol=1e-5)
    # The on-disk checkpoint of update 4 holds the same snapshot inside the training state.
    state, _ = load_checkpoint(str(out / "checkpoints" / "update_000004.eqx"), trainer)
    for a, b in zip(leaves(state.snapshot), at_80):
        np.testing.assert_array_equal(a, b)
