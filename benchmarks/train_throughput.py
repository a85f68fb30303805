"""Training throughput of PPO on case 5: env-steps/s of rollout + update together.

What is measured, per number of parallel envs N (``--n-envs``, default 64 256 1024):

* the workload: ``case5-economic-dispatch``'s env (``LogWrapper(TransGridEnv)``, case 5,
  48-step episodes) and PPO with ``TrainConfig(num_envs=N, n_steps=128, n_epochs=4,
  n_minibatches=4, hidden_dims=(64, 64))`` (the config defaults; shared tanh torso,
  reward normalisation on, evaluation off, block minibatch shuffle), i.e. per update N·128 env steps collected
  through the rollout kernel and 4 epochs × 4 minibatches of Adam steps on them;
* ``compile s``: ``jax.jit(trainer.train).lower(key).compile()`` of the whole training
  loop (``--updates`` updates in one ``lax.scan``), measured first in a fresh process
  for each N (the script re-runs itself per configuration), so it is what a user waits
  for before the first update;
* ``env-steps/s``: after one warm-up call of the compiled run, ``--repeats`` calls,
  each timed to ``jax.block_until_ready``; ``updates · N · 128 / median seconds``;
* ``rollout-only env-steps/s``: the collection part of an update alone (policy forward
  + env step through the kernel), to show where the time goes.

Run from the repository root::

    uv run python benchmarks/train_throughput.py                 # N = 64 256 1024, Markdown table
    uv run python benchmarks/train_throughput.py --n-envs 256 --repeats 2
    uv run python benchmarks/train_throughput.py --json results.json

Targets (2-core CPU): ≥ 200 k env-steps/s at N = 256, first compile < 20 s. Numbers
depend on what else runs on the machine: the load average is printed with the table.

``--preset NAME`` times a named preset instead, with its own env and config (``num_envs``,
``n_steps``, network, algorithm; ``--n-envs`` is ignored), ``--updates`` updates per call;
its evaluation stays on unless ``--no-eval``. ``--compare-screen`` (unit-commitment
presets) builds the same trainer twice in one process, once with the DC-OPF's line
screen (the preset as shipped) and once with every rated line in every LP
(``opf_screen_rows=0``, the earlier path), compiles each, and times them in alternating
rounds; the table gives both and the ratio::

    uv run python benchmarks/train_throughput.py --preset tso-uc --updates 3 --compare-screen
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def machine_info() -> dict:
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def measure(
    n_envs: int, updates: int, repeats: int, n_steps: int, epochs: int, minibatches: int, hidden: tuple[int, ...],
    shared: bool,
) -> dict:
    import jax
    import jax.random as jr
    from powerzoojax.rl import TrainConfig, get_preset, make_train

    env = get_preset("case5-economic-dispatch").env_factory()
    config = TrainConfig(
        num_envs=n_envs, n_steps=n_steps, n_epochs=epochs, n_minibatches=minibatches, hidden_dims=hidden,
        shared_torso=shared, total_timesteps=updates * n_envs * n_steps, normalize_rewards=True, eval_freq=0,
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
    steps = trainer.n_updates * trainer.batch_size

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
        "steps_per_update": trainer.batch_size,
        "updates": trainer.n_updates,
        "compile_s": compile_s,
        "env_steps_per_s": steps / statistics.median(times),
        "rollout_env_steps_per_s": trainer.batch_size / statistics.median(ctimes),
    }


def _without_screen(env):
    """The same bound wrapper with every rated line in every step's DC-OPF."""
    import dataclasses

    import equinox as eqx

    params = dataclasses.replace(env.params, line_screen=None, opf_screen_rows=0)
    return eqx.tree_at(lambda e: e.params, env, params)


def _timed_runs(compiled: dict, key_count: int) -> dict:
    import jax
    import jax.random as jr

    times = {name: [] for name in compiled}
    for i in range(key_count):
        names = list(compiled) if i % 2 == 0 else list(reversed(compiled))
        for name in names:
            t = time.perf_counter()
            jax.block_until_ready(compiled[name](jr.PRNGKey(i + 1)))
            times[name].append(time.perf_counter() - t)
    return times


def measure_preset(name: str, updates: int, repeats: int, evaluate: bool, compare_screen: bool) -> dict:
    """Training throughput of a preset (its env and config), and with `compare_screen`
    the same trainer on the unscreened DC-OPF, timed in alternating rounds."""
    import jax
    import jax.random as jr
    from powerzoojax.rl import get_preset, make_train

    preset = get_preset(name)
    env = preset.env_factory()
    config = preset.config
    batch = config.num_envs * config.n_steps
    config = config.replace(total_timesteps=updates * batch, **({} if evaluate else {"eval_freq": 0}))
    envs = {"screened": env}
    if compare_screen:
        envs["all lines"] = _without_screen(env)
    key = jr.PRNGKey(0)
    compiled, compile_s, first_s, trainers = {}, {}, {}, {}
    for label, e in envs.items():
        trainer = make_train(e, config)
        t0 = time.perf_counter()
        compiled[label] = jax.jit(trainer.train).lower(key).compile()
        compile_s[label] = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(compiled[label](key))
        first_s[label] = time.perf_counter() - t0
        trainers[label] = trainer
    times = _timed_runs(compiled, repeats)
    rollout = {}
    for label, trainer in trainers.items():
        state = jax.jit(trainer.init)(key)
        collect = jax.jit(lambda s, k, t=trainer: t._collect(s, k)).lower(state, key).compile()
        jax.block_until_ready(collect(state, key))
        ct = []
        for i in range(repeats):
            t = time.perf_counter()
            jax.block_until_ready(collect(state, jr.PRNGKey(i + 1)))
            ct.append(time.perf_counter() - t)
        rollout[label] = trainer.batch_size / statistics.median(ct)
    steps = trainers["screened"].n_updates * trainers["screened"].batch_size
    return {
        "preset": name,
        "n_envs": config.num_envs,
        "steps_per_update": batch,
        "updates": trainers["screened"].n_updates,
        "evaluation": evaluate and config.eval_freq > 0,
        "variants": {
            label: {
                "compile_s": compile_s[label],
                "first_call_s": first_s[label],
                "env_steps_per_s": steps / statistics.median(times[label]),
                "rollout_env_steps_per_s": rollout[label],
            }
            for label in envs
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-envs", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--updates", type=int, default=5, help="updates per timed call (default 5)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-steps", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    parser.add_argument("--separate-critic", action="store_true", help="separate actor and critic MLPs")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--preset", help="time this preset (its env and config) instead of case 5")
    parser.add_argument("--no-eval", action="store_true", help="with --preset: turn the preset's evaluation off")
    parser.add_argument("--compare-screen", action="store_true",
                        help="with --preset: also the unscreened DC-OPF, in the same process")
    parser.add_argument("--single", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.preset is not None:
        info = machine_info()
        r = measure_preset(args.preset, args.updates, args.repeats, not args.no_eval, args.compare_screen)
        info["load_average_1min_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        print(f"machine: {info['cpu']}, {info['cores']} cores, JAX {info['jax']} ({info['backend']}), "
              f"load average {info['load_average_1min']:.2f} before / {info['load_average_1min_after']:.2f} after")
        print(f"preset {r['preset']}: N = {r['n_envs']}, {r['steps_per_update']:,} env steps per update, "
              f"{r['updates']} updates per call, evaluation {'on' if r['evaluation'] else 'off'}\n")
        print("| DC-OPF | compile s | first call s | training env-steps/s | rollout-only env-steps/s |")
        print("|---|---:|---:|---:|---:|")
        for label, v in r["variants"].items():
            print(f"| {label} | {v['compile_s']:.1f} | {v['first_call_s']:.1f} | {v['env_steps_per_s']:,.0f} "
                  f"| {v['rollout_env_steps_per_s']:,.0f} |")
        if "all lines" in r["variants"]:
            v = r["variants"]
            print(f"\nscreened / all lines: training {v['screened']['env_steps_per_s'] / v['all lines']['env_steps_per_s']:.2f}x, "
                  f"rollout {v['screened']['rollout_env_steps_per_s'] / v['all lines']['rollout_env_steps_per_s']:.2f}x")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"machine": info, "results": r}, f, indent=2)
        return
    shared = not args.separate_critic
    if args.single is not None:
        print(json.dumps(measure(args.single, args.updates, args.repeats, args.n_steps, args.epochs, args.minibatches,
                                 tuple(args.hidden), shared)))
        return

    info = machine_info()
    rows = []
    for n in args.n_envs:
        cmd = [sys.executable, __file__, "--single", str(n), "--updates", str(args.updates), "--repeats", str(args.repeats),
               "--n-steps", str(args.n_steps), "--epochs", str(args.epochs), "--minibatches", str(args.minibatches),
               "--hidden", *map(str, args.hidden)] + (["--separate-critic"] if args.separate_critic else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    info["load_average_1min_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"machine: {info['cpu']}, {info['cores']} cores, JAX {info['jax']} ({info['backend']}), "
          f"load average {info['load_average_1min']:.2f} before / {info['load_average_1min_after']:.2f} after")
    print(f"PPO on case 5: n_steps {args.n_steps}, {args.epochs} epochs x {args.minibatches} minibatches, "
          f"MLP {tuple(args.hidden)} ({'shared torso' if shared else 'separate actor/critic'}), block minibatch shuffle, "
          f"{args.updates} updates per call\n")
    print("| N envs | env steps / update | first compile s | training env-steps/s | rollout-only env-steps/s |")
    print("|---:|---:|---:|---:|---:|")
    from _record import record

    for r in rows:
        record("PPO training", f"case 5, N={r['n_envs']}", r["env_steps_per_s"], "env-steps/s", compile_s=r["compile_s"])
        print(f"| {r['n_envs']} | {r['steps_per_update']:,} | {r['compile_s']:.1f} | {r['env_steps_per_s']:,.0f} | {r['rollout_env_steps_per_s']:,.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
