"""Training throughput of IPPO on the GenCos market: env-steps/s of rollout + update together.

Workload, per number of parallel envs N (``--n-envs``, default 64 256 1024):
``MarketMARLEnv`` on case 5 (5 GenCo agents, 3 offer segments each, 48-step episodes on
the flat mid-load profile of the ``gencos-case5-ippo-dev`` preset; every env step is an
exact offer-based SCED solved in the graph) and IPPO with full parameter sharing,
``TrainConfig(num_envs=N, n_steps=48, n_epochs=4, n_minibatches=4, hidden_dims=(64, 64),
normalize_rewards=True, eval_freq=0)``: per update N·48 env steps (×5 agent steps)
collected through the rollout kernel, then 4 epochs × 4 minibatches of Adam steps.

* ``compile s``: ``jax.jit(trainer.train).lower(key).compile()`` of the whole run
  (``--updates`` updates in one ``lax.scan``);
* ``env-steps/s``: after one warm-up call, the median of ``--repeats`` timed calls;
  ``updates · N · 48 / seconds`` (multiply by 5 for agent-steps/s);
* ``rollout-only env-steps/s``: the collection part of an update alone.

``--env case5-units``: the same trainer on ``GridMARLEnv`` (preset ``case5-ippo``: 5 unit
agents of a DC case-5 dispatch, 48-step episodes, no solver in the step), which shows
the trainer's own cost. ``--one-thread`` sets
``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"`` before
JAX starts (the figures to compare on a shared machine).

Run from the repository root::

    uv run python benchmarks/ippo_throughput.py --quick       # N = 64 256, 2 updates, 1 repeat
    uv run python benchmarks/ippo_throughput.py --quick --one-thread --env case5-units --n-envs 64 256
    uv run python benchmarks/ippo_throughput.py               # N = 64 256 1024, Markdown table
    uv run python benchmarks/ippo_throughput.py --json out.json

Numbers depend on what else runs on the machine: the load average is printed with the table.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from train_throughput import machine_info  # noqa: E402


PRESET_OF_ENV = {"gencos": "gencos-case5-ippo-dev", "case5-units": "case5-ippo"}


def measure(n_envs: int, updates: int, repeats: int, n_steps: int, hidden: tuple[int, ...], env_name: str = "gencos") -> dict:
    import jax
    import jax.random as jr
    from powerzoojax.rl import get_preset, make_train

    preset = get_preset(PRESET_OF_ENV[env_name])
    env = preset.env_factory()
    config = preset.config.replace(
        num_envs=n_envs, n_steps=n_steps, n_epochs=4, n_minibatches=4, hidden_dims=hidden,
        total_timesteps=updates * n_envs * n_steps, eval_freq=0,
    )
    trainer = make_train(env, config)
    key = jr.PRNGKey(0)
    t0 = time.perf_counter()
    compiled = jax.jit(trainer.train).lower(key).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(key))
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(compiled(jr.PRNGKey(i + 1)))
        times.append(time.perf_counter() - t)
    state = jax.jit(trainer.init)(key)
    collect = jax.jit(lambda s, k: trainer._collect(s, k)).lower(state, key).compile()
    jax.block_until_ready(collect(state, key))
    ctimes = []
    for i in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(collect(state, jr.PRNGKey(i + 1)))
        ctimes.append(time.perf_counter() - t)
    return {
        "n_envs": n_envs,
        "n_agents": env.num_agents,
        "steps_per_update": trainer.batch_size,
        "updates": trainer.n_updates,
        "compile_s": compile_s,
        "env_steps_per_s": trainer.n_updates * trainer.batch_size / statistics.median(times),
        "rollout_env_steps_per_s": trainer.batch_size / statistics.median(ctimes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-envs", type=int, nargs="+", default=None)
    parser.add_argument("--updates", type=int, default=3, help="updates per timed call (default 3)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-steps", type=int, default=48)
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    parser.add_argument("--quick", action="store_true", help="N = 64 256, 2 updates, 1 repeat")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--env", choices=sorted(PRESET_OF_ENV), default="gencos")
    parser.add_argument("--one-thread", action="store_true", help="single-threaded XLA CPU (set before JAX starts)")
    args = parser.parse_args()
    if args.one_thread:
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    if args.quick:
        n_envs, updates, repeats = args.n_envs or [64, 256], 2, 1
    else:
        n_envs, updates, repeats = args.n_envs or [64, 256, 1024], args.updates, args.repeats
    rows = [measure(n, updates, repeats, args.n_steps, tuple(args.hidden), args.env) for n in n_envs]
    info = machine_info()
    what = "MarketMARLEnv case 5 (5 agents)" if args.env == "gencos" else "GridMARLEnv case 5 (5 unit agents)"
    threads = ", 1 XLA thread" if args.one_thread else ""
    print(f"IPPO on {what}{threads}, {info['cpu']}, {info['cores']} cores, jax {info['jax']} "
          f"({info['backend']}), load average {info['load_average_1min']}")
    print("| N | env steps / update | compile s | env-steps/s (rollout + update) | rollout-only env-steps/s |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['n_envs']} | {r['steps_per_update']} | {r['compile_s']:.1f} | {r['env_steps_per_s']:,.0f} | "
              f"{r['rollout_env_steps_per_s']:,.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
