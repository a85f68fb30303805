"""Analytic policy gradient (APG) against PPO at equal env steps and at equal wall time.

What is measured, per task (``--tasks``, default ``case5``; ``dso`` adds the DSO task):

* the workloads: the presets' envs and configs, ``case5-economic-dispatch-apg`` against
  ``case5-economic-dispatch`` (PPO), and ``dso-nflex-apg`` against ``dso-nflex`` (PPO,
  with its 128 envs cut to ``--dso-ppo-envs``), each with ``total_timesteps`` raised so
  the budgets below end the run, and evaluation off inside the run;
* each trainer runs chunks of ``--chunk`` updates (compiled once, ahead of time, and
  not timed) until ``--seconds`` of training time or ``--max-env-steps`` env steps;
  after every chunk the deterministic policy is scored on ``--eval-episodes`` full
  episodes from reset (the same keys for both algorithms; not timed);
* **equal env steps**: each algorithm's score at the largest env-step count both reached
  (its last evaluation at or below it); **equal wall time**: the score at the shorter
  of the two training times (its last evaluation at or before it).

Run from the repository root (one seed; the numbers depend on what else runs on the
machine, and the load average is printed)::

    uv run python benchmarks/apg_vs_ppo.py
    uv run python benchmarks/apg_vs_ppo.py --tasks case5 dso --seconds 40
"""

import argparse
import json
import os
import time


def _trainer(preset_name: str, env, overrides: dict):
    from powerzoojax.rl import get_preset, make_train

    config = get_preset(preset_name).config.replace(eval_freq=0, **overrides)
    return make_train(env, config)


def run_one(trainer, key, seconds: float, max_env_steps: int, chunk: int, eval_key) -> dict:
    """Train in chunks until the time or env-step budget; score after every chunk."""
    import jax

    t0 = time.perf_counter()
    state = trainer._jit_init(trainer.place_key(key))
    compiled = trainer._jit_chunk.lower(state, chunk).compile()
    evaluate = jax.jit(trainer.evaluate_policy).lower(state.policy, state.obs_stats, eval_key).compile()
    compile_s = time.perf_counter() - t0
    steps_per_update = trainer.batch_size
    curve = [{"env_steps": 0, "seconds": 0.0, "eval_return": float(evaluate(state.policy, state.obs_stats, eval_key)["eval_returns"])}]
    trained = 0.0
    while trained < seconds and curve[-1]["env_steps"] < max_env_steps:
        t = time.perf_counter()
        state, _ = compiled(state)
        jax.block_until_ready(state)
        trained += time.perf_counter() - t
        steps = int(state.update) * steps_per_update
        score = float(evaluate(state.policy, state.obs_stats, eval_key)["eval_returns"])
        curve.append({"env_steps": steps, "seconds": trained, "eval_return": score})
    return {"compile_s": compile_s, "steps_per_update": steps_per_update, "curve": curve}


def score_at(curve: list[dict], field: str, limit: float) -> dict:
    points = [p for p in curve if p[field] <= limit + 1e-9]
    return points[-1]


STEP_BUDGETS = (4_096, 16_384, 65_536, 262_144, 1_048_576)
SECOND_BUDGETS = (0.5, 2.0, 8.0)


def compare(task: str, runs: dict) -> dict:
    """Scores at fixed env-step and wall-time budgets, and at the largest both runs reached."""
    apg, ppo = runs["apg"]["curve"], runs["ppo"]["curve"]
    steps = min(apg[-1]["env_steps"], ppo[-1]["env_steps"])
    seconds = min(apg[-1]["seconds"], ppo[-1]["seconds"])
    step_budgets = [b for b in STEP_BUDGETS if b < steps] + [steps]
    second_budgets = [b for b in SECOND_BUDGETS if b < seconds] + [seconds]
    return {
        "task": task,
        "equal_env_steps": [
            {"env_steps": b, "apg": score_at(apg, "env_steps", b), "ppo": score_at(ppo, "env_steps", b)} for b in step_budgets
        ],
        "equal_wall_time": [
            {"seconds": b, "apg": score_at(apg, "seconds", b), "ppo": score_at(ppo, "seconds", b)} for b in second_budgets
        ],
        "initial": {"apg": apg[0]["eval_return"], "ppo": ppo[0]["eval_return"]},
        "compile_s": {"apg": runs["apg"]["compile_s"], "ppo": runs["ppo"]["compile_s"]},
    }


def print_table(results: list[dict], load: float) -> None:
    import jax

    print(f"\njax {jax.__version__}, {os.cpu_count()} cores, load average (1 min) at the end: {load:.1f}")
    print("\n| task | comparison | budget | APG eval return (env steps) | PPO eval return (env steps) |")
    print("|---|---|---:|---:|---:|")
    for r in results:
        print(f"| {r['task']} | initial policy | 0 | {r['initial']['apg']:.4g} | {r['initial']['ppo']:.4g} |")
        for e in r["equal_env_steps"]:
            print(f"| {r['task']} | equal env steps | {e['env_steps']:,} steps | {e['apg']['eval_return']:.4g} "
                  f"({e['apg']['env_steps']:,}) | {e['ppo']['eval_return']:.4g} ({e['ppo']['env_steps']:,}) |")
        for w in r["equal_wall_time"]:
            print(f"| {r['task']} | equal wall time | {w['seconds']:.1f} s | {w['apg']['eval_return']:.4g} "
                  f"({w['apg']['env_steps']:,}) | {w['ppo']['eval_return']:.4g} ({w['ppo']['env_steps']:,}) |")
        c = r["compile_s"]
        print(f"| {r['task']} | compile (not in the budgets) | | {c['apg']:.1f} s | {c['ppo']:.1f} s |")


def main() -> None:
    parser = argparse.ArgumentParser(description="APG against PPO at equal env steps and at equal wall time")
    parser.add_argument("--tasks", nargs="+", default=["case5"], choices=["case5", "dso"])
    parser.add_argument("--seconds", type=float, default=60.0, help="training-time budget per run [s]")
    parser.add_argument("--max-env-steps", type=int, default=2_000_000)
    parser.add_argument("--chunk", type=int, default=8, help="updates between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=16)
    parser.add_argument("--dso-ppo-envs", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the curves and the comparison here")
    parser.add_argument("--from-json", default=None, help="print the table of a saved run instead of running")
    args = parser.parse_args()

    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        print_table([{**compare(r["task"], r["runs"]), "runs": r["runs"]} for r in saved["results"]], saved["load_average_1min"])
        return

    import jax.random as jr

    from powerzoojax.rl import get_preset

    pairs = {
        "case5": ("case5-economic-dispatch-apg", "case5-economic-dispatch", {}),
        "dso": ("dso-nflex-apg", "dso-nflex", {"num_envs": args.dso_ppo_envs}),
    }
    key, eval_key = jr.split(jr.PRNGKey(args.seed))
    results = []
    for task in args.tasks:
        apg_name, ppo_name, ppo_overrides = pairs[task]
        env = get_preset(apg_name).env_factory()
        runs = {}
        for algo, name, overrides in (("apg", apg_name, {}), ("ppo", ppo_name, ppo_overrides)):
            budget = {"total_timesteps": 10**9, "eval_num_episodes": args.eval_episodes}
            trainer = _trainer(name, env, {**budget, **overrides})
            runs[algo] = run_one(trainer, key, args.seconds, args.max_env_steps, args.chunk, eval_key)
            last = runs[algo]["curve"][-1]
            print(f"{task} {algo}: compile {runs[algo]['compile_s']:.1f} s, {last['env_steps']} env steps in "
                  f"{last['seconds']:.1f} s, eval return {runs[algo]['curve'][0]['eval_return']:.1f} -> {last['eval_return']:.1f}",
                  flush=True)
        results.append({**compare(task, runs), "runs": runs})

    load = os.getloadavg()[0]
    print_table(results, load)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_average_1min": load, "args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
