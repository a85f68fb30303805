"""The main job: the seed's batched rollout (64 envs × 48 steps, uniform random actions)
on case 5, then on case 118, each with its mean/std return, its constraint costs and
env-steps/s; then a short PPO training run on the ``case5-economic-dispatch`` preset
(embedded case 5, nominal load profile), its evaluation return and costs before and
after training.

Returns are shown under two cost models (``make_trans_params(unit_limit_price=...)``):
the reference's, which costs the realised output of every unit wherever it lies, and
the presets' ``CASE5_LIMIT_PRICE``, which charges output outside a unit's limits at
300 $/MWh. Under the reference's model random set-points on case 118 drive slack units
far below zero, where the cubic cost is negative, and "earn" a positive return.

Run: ``uv run python examples/main.py``; ``--preset case5-economic-dispatch-reference``
trains the reference's reward-only configuration instead (its policy breaks the power
balance: compare the costs printed).
"""

import argparse
import time

import jax
import numpy as np

from powerzoojax.case import load_case
from powerzoojax.envs import TransGridEnv, make_trans_params
from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

N_ENVS = 64
HORIZON = 48


LIMIT_PRICE = 300.0  # [$/MWh], the presets' CASE5_LIMIT_PRICE
# Cost channels printed (TransGridEnv's order: thermal, voltage, power balance, resource).
SHOWN_COSTS = {"thermal_overload": 0, "power_balance": 2}


def make_collect(case_id: str, unit_limit_price: float | None):
    case = load_case(case_id)
    env = TransGridEnv()
    params = make_trans_params(case, max_steps=HORIZON, unit_limit_price=unit_limit_price)

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


def _costs(per_channel: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:,.1f} MW·step" for name, value in per_channel.items())


def main() -> None:
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform}: {N_ENVS} envs x {HORIZON} steps, random actions")
    for case_id in ("5", "118"):
        case, collect = make_collect(case_id, None)
        t0 = time.perf_counter()
        returns, costs = jax.block_until_ready(collect(jax.random.PRNGKey(0)))
        compile_s = time.perf_counter() - t0
        n_calls = 20
        t0 = time.perf_counter()
        for i in range(n_calls):
            returns, costs = jax.block_until_ready(collect(jax.random.PRNGKey(i + 1)))
        run_s = (time.perf_counter() - t0) / n_calls
        # The same episodes (same keys) with output outside the unit limits priced.
        _, priced = make_collect(case_id, LIMIT_PRICE)
        priced_returns, _ = priced(jax.random.PRNGKey(n_calls))
        print(
            f"case {case_id:>4} ({case.n_nodes} buses, {case.n_units} units, {case.n_lines} lines): "
            f"{N_ENVS * HORIZON / run_s:,.0f} env-steps/s (first call incl. compile {compile_s:.2f} s)\n"
            f"    mean return {float(returns.mean()):12,.1f} (std {float(returns.std()):10,.1f}) reference cost model; "
            f"{float(priced_returns.mean()):12,.1f} with output outside unit limits at {LIMIT_PRICE:.0f} $/MWh\n"
            f"    mean costs per episode: {_costs({n: float(costs[:, i].mean()) for n, i in SHOWN_COSTS.items()})}"
            + ("" if np.any(np.abs(np.asarray(case.line_cap)) < 1e5) else " (the case rates no line)")
        )


def short_training_run(preset: str = "case5-economic-dispatch", total_timesteps: int = 61_440) -> None:
    from powerzoojax.rl import train

    t0 = time.perf_counter()
    result = train(preset, seed=0, total_timesteps=total_timesteps, progress=False)
    wall_s = time.perf_counter() - t0
    summary, metrics = result.summary, result.metrics

    def evaluated(channel: str, index: int) -> float:
        column = np.asarray(metrics[f"eval_cost_{channel}"], np.float64)
        return float(column[np.isfinite(column)][index])

    print(
        f"PPO on {preset}: {total_timesteps:,} env-steps in {wall_s:.1f} s (incl. compile); "
        f"deterministic evaluation on {result.config.eval_num_episodes} episodes (higher return is better)\n"
        f"    untrained: return {summary['initial_reward']:10,.1f}   costs {_costs({c: evaluated(c, 0) for c in SHOWN_COSTS})}\n"
        f"    trained:   return {summary['final_reward']:10,.1f}   costs {_costs({c: evaluated(c, -1) for c in SHOWN_COSTS})}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--preset", default="case5-economic-dispatch", help="preset of the training run")
    args = parser.parse_args()
    main()
    short_training_run(args.preset)
