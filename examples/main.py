"""The main job: the seed's batched rollout (64 envs × 48 steps, uniform random actions)
on case 5, then on case 118, each with its mean/std return and env-steps/s; then a short
PPO training run on the ``case5-economic-dispatch`` preset (embedded case 5, nominal
load profile), compared with uniform-random actions on the same evaluation episodes.

Run: ``uv run python examples/main.py``
"""

import time

import jax
import jax.numpy as jnp

from powerzoojax.case import load_case
from powerzoojax.envs import TransGridEnv, make_trans_params
from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

N_ENVS = 64
HORIZON = 48


def make_collect(case_id: str):
    case = load_case(case_id)
    env = TransGridEnv()
    params = make_trans_params(case, max_steps=HORIZON)

    @jax.jit
    def collect(key):
        key, k_reset, k_actions, k_roll = jax.random.split(key, 4)
        obs0, states0 = batch_reset(env, jax.random.split(k_reset, N_ENVS), params)
        actions = jax.random.uniform(k_actions, (N_ENVS, HORIZON, case.n_units), minval=-1.0, maxval=1.0)

        def single_rollout(state, key, action_seq):
            return scan_rollout(env, key, state, params, action_seq)

        _, _, reward_traj, cost_traj, _, _ = jax.vmap(single_rollout)(
            states0, jax.random.split(k_roll, N_ENVS), actions
        )
        return reward_traj.sum(axis=1), cost_traj.sum(axis=1)

    return case, collect


def main() -> None:
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform}: {N_ENVS} envs x {HORIZON} steps, random actions")
    for case_id in ("5", "118"):
        case, collect = make_collect(case_id)
        t0 = time.perf_counter()
        jax.block_until_ready(collect(jax.random.PRNGKey(0)))
        compile_s = time.perf_counter() - t0
        n_calls = 20
        t0 = time.perf_counter()
        for i in range(n_calls):
            returns, costs = jax.block_until_ready(collect(jax.random.PRNGKey(i + 1)))
        run_s = (time.perf_counter() - t0) / n_calls
        print(
            f"case {case_id:>4} ({case.n_nodes} buses, {case.n_units} units, {case.n_lines} lines): "
            f"mean return {float(returns.mean()):10.2f}  std {float(returns.std()):8.2f}  "
            f"mean thermal overload {float(costs[:, 0].mean()):9.2f} MW·steps  "
            f"{N_ENVS * HORIZON / run_s:,.0f} env-steps/s  (first call incl. compile {compile_s:.2f} s)"
        )


def short_training_run(total_timesteps: int = 61_440) -> None:
    from powerzoojax.rl import train

    t0 = time.perf_counter()
    result = train("case5-economic-dispatch", seed=0, total_timesteps=total_timesteps, progress=False)
    wall_s = time.perf_counter() - t0
    summary = result.summary
    print(
        f"PPO on case5-economic-dispatch: {total_timesteps:,} env-steps in {wall_s:.1f} s "
        f"(incl. compile); evaluation return {summary['initial_reward']:.1f} -> {summary['final_reward']:.1f} "
        "(higher is better; a return is -0.01 x generation cost over a 48-step day)"
    )


if __name__ == "__main__":
    main()
    short_training_run()
