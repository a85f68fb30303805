"""Training throughput of IPPO on the GenCos market: env-steps/s of rollout + update together.

Workload, per number of parallel envs N (``--n-envs``, default 64 256 1024):
``MarketMARLEnv`` on case 5 (5 GenCo agents, 3 offer segments each, 48-step episodes on
the flat mid-load profile of the ``gencos-case5-ippo-dev`` preset; every env step is an
exact offer-based SCED solved in the graph) and IPPO with full parameter sharing,
``TrainConfig(num_envs=N, n_steps=48, n_epochs=4, n_minibatches=4, hidden_dims=(64, 64),
normalize_rewards=True, eval_freq=0)``: per update N·48 env steps (×5 agent steps)
collected through the rollout kernel, then 4 epochs × 4 minibatches of Adam steps. In
market mode every update also computes the market metrics (its ``planner_cost_ratio``
clears 512 sampled loads truthfully: part of the measured cost).

Two modes:

* ``--quick`` (< 2 minutes for N = 64 256 1024 on a quiet 2-core CPU): one update
  (``trainer.update``, the body of the training scan) compiled ahead of time, then
  called twice; ``compile s`` = its ``lower`` + ``compile`` (what a user waits for before
  the first update), ``first call s`` = the first call after compiling, ``env-steps/s``
  = ``N · 48 /`` the second call's seconds (rollout, GAE, 4 epochs, market metrics).
* full (default): the whole run, ``--updates`` updates in one ``lax.scan``;
  ``compile s`` = ``jax.jit(trainer.train).lower(key).compile()``, ``env-steps/s`` =
  ``updates · N · 48 /`` the median of ``--repeats`` timed calls after one warm-up call,
  and ``rollout-only env-steps/s``, the collection part of an update alone.

Multiply env-steps/s by 5 for agent-steps/s. ``--env case5-units``: the same trainer on
``GridMARLEnv`` (preset ``case5-ippo``: 5 unit agents of a DC case-5 dispatch, 48-step
episodes, no solver in the step), which shows the trainer's own cost. ``--one-thread``
pins the process to one CPU (``_xla_env.one_core``)
before JAX starts (the figures to compare on a shared machine).

Run from the repository root::

    uv run python benchmarks/ippo_throughput.py --quick       # N = 64 256 1024, one update each
    uv run python benchmarks/ippo_throughput.py --quick --one-thread --env case5-units
    uv run python benchmarks/ippo_throughput.py               # whole runs, N = 64 256 1024
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
import _xla_env  # noqa: E402
from _record import record  # noqa: E402
from train_throughput import machine_info  # noqa: E402


PRESET_OF_ENV = {"gencos": "gencos-case5-ippo-dev", "case5-units": "case5-ippo"}


def _trainer(n_envs: int, updates: int, n_steps: int, hidden: tuple[int, ...], env_name: str):
    from powerzoojax.rl import get_preset, make_train

    preset = get_preset(PRESET_OF_ENV[env_name])
    env = preset.env_factory()
    config = preset.config.replace(
        num_envs=n_envs, n_steps=n_steps, n_epochs=4, n_minibatches=4, hidden_dims=hidden,
        total_timesteps=updates * n_envs * n_steps, eval_freq=0,
    )
    return env, make_train(env, config)


def _timed(fn, *args) -> float:
    import jax

    t = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t


def measure_quick(n_envs: int, n_steps: int, hidden: tuple[int, ...], env_name: str = "gencos") -> dict:
    """One update compiled ahead of time and called twice (see the module docstring)."""
    import jax
    import jax.random as jr

    env, trainer = _trainer(n_envs, 1, n_steps, hidden, env_name)
    state = jax.jit(trainer.init)(jr.PRNGKey(0))
    t0 = time.perf_counter()
    update = jax.jit(trainer.update).lower(state).compile()
    compile_s = time.perf_counter() - t0
    first_s = _timed(update, state)
    second_s = _timed(update, state)
    return {
        "n_envs": n_envs, "n_agents": env.num_agents, "steps_per_update": trainer.batch_size, "updates": 1,
        "compile_s": compile_s, "first_call_s": first_s, "env_steps_per_s": trainer.batch_size / second_s,
        "rollout_env_steps_per_s": None,
    }


def measure(n_envs: int, updates: int, repeats: int, n_steps: int, hidden: tuple[int, ...], env_name: str = "gencos") -> dict:
    import jax
    import jax.random as jr

    env, trainer = _trainer(n_envs, updates, n_steps, hidden, env_name)
    key = jr.PRNGKey(0)
    t0 = time.perf_counter()
    compiled = jax.jit(trainer.train).lower(key).compile()
    compile_s = time.perf_counter() - t0
    first_s = _timed(compiled, key)
    times = [_timed(compiled, jr.PRNGKey(i + 1)) for i in range(repeats)]
    state = jax.jit(trainer.init)(key)
    collect = jax.jit(lambda s, k: trainer._collect(s, k)).lower(state, key).compile()
    jax.block_until_ready(collect(state, key))
    ctimes = [_timed(collect, state, jr.PRNGKey(i + 1)) for i in range(repeats)]
    return {
        "n_envs": n_envs,
        "n_agents": env.num_agents,
        "steps_per_update": trainer.batch_size,
        "updates": trainer.n_updates,
        "compile_s": compile_s,
        "first_call_s": first_s,
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
    parser.add_argument("--quick", action="store_true", help="one compiled update per N, called twice (< 2 min)")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--env", choices=sorted(PRESET_OF_ENV), default="gencos")
    parser.add_argument("--one-thread", action="store_true", help="pin the process to one CPU (set before JAX starts)")
    args = parser.parse_args()
    if args.one_thread:
        _xla_env.one_core()
    n_envs = args.n_envs or [64, 256, 1024]
    start = time.perf_counter()
    if args.quick:
        rows = [measure_quick(n, args.n_steps, tuple(args.hidden), args.env) for n in n_envs]
    else:
        rows = [measure(n, args.updates, args.repeats, args.n_steps, tuple(args.hidden), args.env) for n in n_envs]
    total_s = time.perf_counter() - start
    info = machine_info()
    what = "MarketMARLEnv case 5 (5 agents)" if args.env == "gencos" else "GridMARLEnv case 5 (5 unit agents)"
    threads = ", one core" if args.one_thread else ""
    mode = "one update per N (--quick)" if args.quick else f"{args.updates} updates per call, median of {args.repeats}"
    print(f"IPPO on {what}{threads}, {mode}; {info['cpu']}, {info['cores']} cores, jax {info['jax']} "
          f"({info['backend']}), load average {info['load_average_1min']}, {total_s:.0f} s in all")
    print("| N | env steps / update | compile s | first call s | env-steps/s (rollout + update) | rollout-only env-steps/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        record("IPPO training", f"{args.env}, N={r['n_envs']}", r["env_steps_per_s"], "env-steps/s", compile_s=r["compile_s"])
        rollout = f"{r['rollout_env_steps_per_s']:,.0f}" if r["rollout_env_steps_per_s"] else "–"
        print(f"| {r['n_envs']} | {r['steps_per_update']} | {r['compile_s']:.1f} | {r['first_call_s']:.2f} | "
              f"{r['env_steps_per_s']:,.0f} | {rollout} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "quick": args.quick, "total_s": total_s, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
