"""One process of a multi-process training run, started by test_multiprocess.py.

``python multiprocess_worker.py train PORT NPROC RANK OUT ALGO...``: joins the run,
trains each algorithm on a toy env, data-parallel over every device of every process,
and saves what it got to ``OUT/<algo>.rank<RANK>.npz`` (``rollout``: a ``batch_rollout``
on the mesh of all processes, gathered to every host). For ``ppo_lagrangian`` the run
writes an output folder with a checkpoint per update and is then resumed, on every
process, from the checkpoint half-way. ``python multiprocess_worker.py hold ...``: trains
until killed (the test kills one process). The single-process reference calls
:func:`setup` and :func:`flat_params` in the test's own process.
"""

import json
import os
import sys

# The toy env of the suite lives in tests/.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ALGOS = ("ppo_lagrangian", "sac", "ippo_typed")
UPDATES = 4


def toy_marl():
    """Three agents of two types, each paid ``−(a − target of its type)²``; episodes of 4 steps."""
    import jax.numpy as jnp

    from powerzoojax.core import EnvParams, EnvState, select_tree
    from powerzoojax.rl import MARLState, MultiAgentEnvironment

    class ToyMARL(MultiAgentEnvironment):
        def __init__(self):
            self.params = EnvParams(max_steps=4)
            self.agents = ("alpha_0", "beta_0", "alpha_1")

        @property
        def obs_dim(self) -> int:
            return 2

        @property
        def action_dim(self) -> int:
            return 1

        def _obs(self, t):
            return jnp.broadcast_to(jnp.stack([jnp.ones(()), t.astype(jnp.float32) / 4.0]), (3, 2))

        def reset_env(self, key, params):
            s = EnvState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False))
            return self._obs(s.time_step), MARLState(s)

        def step_env(self, key, state, actions, params):
            reward = -((jnp.clip(actions[:, 0], -1, 1) - jnp.asarray([0.5, -0.5, 0.5])) ** 2)
            t = state.env_state.time_step + 1
            done = t >= 4
            fresh = EnvState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False))
            s = select_tree(done, fresh, EnvState(time_step=t, done=done))
            return self._obs(s.time_step), MARLState(s), reward, done, {"team": jnp.mean(reward)}

    return ToyMARL()


def setup(algo: str):
    """The env and config of ``algo``'s run: 4 envs × 4 steps per update, tiny networks."""
    from toy_env import ToyEnv, make_toy_params

    from powerzoojax.rl import LogWrapper, SafeRLWrapper, TrainConfig

    config = TrainConfig(
        algo=algo, total_timesteps=UPDATES * 4 * 4, num_envs=4, n_steps=4, n_epochs=2, n_minibatches=2,
        hidden_dims=(8,), eval_freq=2 * 4 * 4, eval_num_episodes=4, normalize_observations=True,
        normalize_rewards=True, cost_thresholds=(0.1,) if algo == "ppo_lagrangian" else (),
        keep_checkpoints=UPDATES,  # every checkpoint stays: the run is resumed from the half-way one
    )
    if algo == "ippo_typed":
        return toy_marl(), config.replace(normalize_rewards=False)
    env, params = ToyEnv(), make_toy_params(max_steps=4)
    if algo == "ppo_lagrangian":
        return SafeRLWrapper(env, params, cost_thresholds=0.1), config
    return LogWrapper(env, params), config


def toy_rollout(mesh=None):
    """``batch_rollout`` of 8 toy envs × 10 steps from fixed keys, jitted, optionally on ``mesh``."""
    import jax
    import jax.random as jr
    from toy_env import ToyEnv, make_toy_params

    from powerzoojax.utils.jax_utils import batch_reset, batch_rollout

    env, params = ToyEnv(), make_toy_params(max_steps=4)

    def run():
        keys = jr.split(jr.PRNGKey(1), 8)
        _, states = batch_reset(env, keys, params)
        actions = jr.uniform(jr.PRNGKey(2), (8, 10, 1), minval=-1.0, maxval=1.0)
        return batch_rollout(env, jr.split(jr.PRNGKey(3), 8), states, params, actions, mesh=mesh)

    return jax.jit(run)()


def flat_params(result) -> dict:
    """The result's parameter leaves and its metric columns, as a flat dict of arrays."""
    import jax
    import numpy as np

    out = {f"param_{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(result.params))}
    out.update({f"metric_{k}": np.asarray(v) for k, v in result.metrics.items()})
    return out


def _record_file_writes() -> list[str]:
    """Every file this process moves into place (the library writes all its files so)."""
    written: list[str] = []
    replace = os.replace

    def recording(src, dst, *args, **kwargs):
        written.append(os.fspath(dst))
        return replace(src, dst, *args, **kwargs)

    os.replace = recording
    return written


def main(argv: list[str]) -> None:
    mode, port, nproc, rank, out_dir, *algos = argv
    rank, nproc = int(rank), int(nproc)
    written = _record_file_writes()
    from powerzoojax.core import init_distributed

    init_distributed(f"127.0.0.1:{port}", nproc, rank, heartbeat_timeout_s=5, initialization_timeout_s=60)

    import jax
    import jax.random as jr
    import numpy as np

    from powerzoojax.core import make_env_mesh
    from powerzoojax.rl import make_train, run_training

    mesh = make_env_mesh()
    print(f"rank {rank}: {jax.process_count()} processes, {len(jax.devices())} devices", flush=True)
    env, config = setup("ppo_lagrangian")
    try:
        make_train(env, config.replace(num_envs=6), mesh=mesh)
    except ValueError as err:
        assert "num_envs = 6 must be divisible by the 4 devices" in str(err), err
    else:
        raise AssertionError("a batch the devices cannot share evenly was accepted")
    if mode == "hold":
        # The programs of the "train" mode's first run (cached), over and over.
        trainer = make_train(*setup("ppo_lagrangian"), mesh=mesh)
        while True:
            run_training(trainer, jr.PRNGKey(0), output_dir=os.path.join(out_dir, "run"), progress=False, checkpoint_every=1)
    for algo in algos:
        if algo == "rollout":
            from powerzoojax.core import gather_to_host

            out = toy_rollout(mesh)
            rewards = out[2]
            assert len(rewards.sharding.device_set) == 4 and not rewards.is_fully_addressable
            np.savez(os.path.join(out_dir, f"rollout.rank{rank}.npz"),
                     **{f"leaf_{i}": x for i, x in enumerate(jax.tree.leaves(gather_to_host(out)))})
            continue
        env, config = setup(algo)
        trainer = make_train(env, config, mesh=mesh)
        if algo == "ppo_lagrangian":
            run_dir = os.path.join(out_dir, "run")
            result = run_training(trainer, jr.PRNGKey(0), output_dir=run_dir, progress=False, checkpoint_every=1)
            half = os.path.join(run_dir, "checkpoints", f"update_{UPDATES // 2:06d}.eqx")
            resumed = run_training(trainer, jr.PRNGKey(7), resume_from=half, output_dir=os.path.join(out_dir, "resumed"),
                                   progress=False)
            np.savez(os.path.join(out_dir, f"resumed.rank{rank}.npz"), **flat_params(resumed))
        else:
            result = trainer(jr.PRNGKey(0))
        np.savez(os.path.join(out_dir, f"{algo}.rank{rank}.npz"), **flat_params(result))
    with open(os.path.join(out_dir, f"writes.rank{rank}.json"), "w") as f:
        json.dump(written, f)


if __name__ == "__main__":
    main(sys.argv[1:])
