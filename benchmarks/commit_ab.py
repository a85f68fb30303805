"""Does a change cost throughput? Two builds of the library, timed side by side in one run.

    # two checkouts, each with its own environment:
    uv run python benchmarks/commit_ab.py --side before=/path/to/old/.venv/bin/python --side after=.venv/bin/python
    # one interpreter, two site folders (an offline accelerator host):
    python3 benchmarks/commit_ab.py --side before=python3:/tmp/site-old --side after=python3:/tmp/site-new

Each side is an interpreter, optionally with folders appended to its ``PYTHONPATH`` (so a
host's own JAX stays first). Per round, each side runs every workload in one fresh child
process, the sides in alternating order (A B, then B A, ...), so drift of the machine's
load falls on both; the table gives each side's median over the rounds and the ratio
``after / before``. Only public names are used, so any two commits of the library can be
compared.

Workloads:

* ``rollout``, per env id (``--ids``): ``N`` envs (``--n-envs``) for ``T`` steps
  (``--horizon``) with actions drawn from the action space, through ``powerzoojax.core``'s
  rollout kernel under ``vmap`` in one jitted call (the workload of
  ``device_agreement.py``); env-steps/s is ``N T`` over the median of ``--repeats`` timed
  calls after a warm-up call; first call is the wall time of the first call (trace,
  compile, one run). The "same program" column says whether both builds compiled the same
  XLA instructions (a digest that leaves out source metadata, numbering and instruction
  order): where they did, a timing ratio away from 1 is the machine's noise.
* ``train``, per preset (``--presets``): the preset's env and config, ``--updates``
  updates in one compiled training call, evaluation off; env-steps/s over the median of
  ``--repeats`` calls after the first.

Exit code: 0 when every workload ran on every side, 1 otherwise.
"""

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

DEFAULT_IDS = (
    "TransGrid-case118-dc-v0", "TransGrid-case118-dcopf-v0", "TransGrid-case14-ac-v0", "UnitCommitment-case14-v0",
    "DistGrid-case33bw-v0", "dc_microgrid-v0", "CostBasedMarket-case5-v0", "Battery-v0", "tso-v0",
)
DEFAULT_PRESETS = ("case5-economic-dispatch", "case5-safe-dispatch")


def _rollout(env_id: str, n_envs: int, horizon: int, repeats: int) -> dict:
    import jax
    from powerzoojax.core import bind_step, rollout
    from powerzoojax.envs import make

    env, params = make(env_id)
    k_reset, k_act, k_roll = jax.random.split(jax.random.PRNGKey(0), 3)
    space = env.action_space(params)
    actions = jax.vmap(jax.vmap(space.sample))(jax.random.split(k_act, horizon * n_envs).reshape(horizon, n_envs, -1))

    @jax.jit
    def episodes(key, actions):
        _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, n_envs), params)
        step = bind_step(env, params)
        return jax.vmap(lambda k, s, a: rollout(step, k, s, a), in_axes=(0, 0, 1))(jax.random.split(key, n_envs), state, actions)

    t0 = time.perf_counter()
    jax.block_until_ready(episodes(k_roll, actions))
    first = time.perf_counter() - t0
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(episodes(jax.random.PRNGKey(i + 1), actions))
        times.append(time.perf_counter() - t0)
    program = _program_digest(episodes.lower(k_roll, actions).compile().as_text())
    return {"first_call_s": first, "env_steps_per_s": n_envs * horizon / statistics.median(times), "program": program}


def _program_digest(hlo: str) -> str:
    """A digest of the compiled program that two builds share when XLA compiled the same
    instructions: source metadata, instruction numbering and the order of instructions
    (constants are emitted in the order they were traced) are left out."""
    lines = (re.sub(r"[._]\d+", "", re.sub(r", metadata=\{[^}]*\}", "", line)).strip() for line in hlo.splitlines())
    return hashlib.sha256("\n".join(sorted(line for line in lines if line)).encode()).hexdigest()[:12]


def _train(preset_name: str, updates: int, repeats: int) -> dict:
    import jax
    from powerzoojax.rl import get_preset, make_train

    preset = get_preset(preset_name)
    config = preset.config
    batch = config.num_envs * config.n_steps
    config = config.replace(total_timesteps=updates * batch, eval_freq=0)
    trainer = make_train(preset.env_factory(), config)
    t0 = time.perf_counter()
    run = jax.jit(trainer.train)
    jax.block_until_ready(run(jax.random.PRNGKey(0)))
    first = time.perf_counter() - t0
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(run(jax.random.PRNGKey(i + 1)))
        times.append(time.perf_counter() - t0)
    return {"first_call_s": first, "env_steps_per_s": updates * batch / statistics.median(times)}


def _worker(args: argparse.Namespace) -> None:
    for workload in args.workloads:
        kind, _, name = workload.partition(":")
        try:
            if kind == "rollout":
                out: dict | str = _rollout(name, args.n_envs, args.horizon, args.repeats)
            else:
                out = _train(name, args.updates, args.repeats)
        except Exception as err:  # noqa: BLE001 - a workload one build lacks is a row, not the end
            out = f"{type(err).__name__}: {err}".splitlines()[0]
        print("RESULT " + json.dumps({"workload": f"{kind} {name}", "result": out}), flush=True)


def _parse_side(text: str) -> tuple[str, str, str | None]:
    label, sep, rest = text.partition("=")
    if not sep or not label or not rest:
        raise SystemExit(f"--side must be LABEL=PYTHON or LABEL=PYTHON:SITE_DIR, got {text!r}")
    python, _, site = rest.partition(":")
    return label, python, site or None


def _run_side(side: tuple[str, str, str | None], argv: list[str], timeout: float) -> dict[str, dict | str]:
    """Every workload's result on one side, by workload name; a string says why one failed."""
    _, python, site = side
    env = dict(os.environ)
    if site:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), site) if p)
    try:
        proc = subprocess.run(
            [python, os.path.abspath(__file__), "--worker", *argv],
            capture_output=True, text=True, env=env, timeout=timeout, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        stdout, why = proc.stdout, f"exit {proc.returncode}"
        tail = (proc.stderr or "").strip().splitlines()
    except subprocess.TimeoutExpired as err:
        stdout = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        why, tail = f"timed out after {timeout:.0f} s", []
    out: dict[str, dict | str] = {}
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            row = json.loads(line[len("RESULT "):])
            out[row["workload"]] = row["result"]
    out["_why"] = why + (f": {tail[-1]}" if tail else "")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--side", action="append", default=[], help="LABEL=PYTHON[:SITE_DIR], given twice (before, after)")
    ap.add_argument("--ids", nargs="*", default=list(DEFAULT_IDS))
    ap.add_argument("--presets", nargs="*", default=list(DEFAULT_PRESETS))
    ap.add_argument("--n-envs", type=int, default=256)
    ap.add_argument("--horizon", type=int, default=48)
    ap.add_argument("--updates", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="child processes per side")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds one child (one side, one round) may run")
    ap.add_argument("--json", metavar="PATH", help="also write the raw results here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workloads", nargs="*", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args)
        return 0
    if len(args.side) != 2:
        ap.error(f"give --side twice (before, after), got {len(args.side)}")
    sides = [_parse_side(s) for s in args.side]
    (label_a, _, _), (label_b, _, _) = sides
    workloads = [("rollout", i) for i in args.ids] + [("train", p) for p in args.presets]
    common = ["--n-envs", str(args.n_envs), "--horizon", str(args.horizon), "--updates", str(args.updates),
              "--repeats", str(args.repeats)]
    names = [f"{kind}:{name}" for kind, name in workloads]
    results: dict = {f"{kind} {name}": {label_a: [], label_b: []} for kind, name in workloads}
    ok = True
    for r in range(args.rounds):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            out = _run_side(side, ["--workloads", *names, *common], args.timeout)
            for workload, runs in results.items():
                got = out.get(workload, out["_why"])
                runs[side[0]].append(got)
                print(f"round {r} {side[0]} {workload}: {got}", file=sys.stderr, flush=True)
    print(f"| workload | {label_a} env-steps/s | {label_b} env-steps/s | {label_b} / {label_a} "
          f"| {label_a} first call s | {label_b} first call s | same program |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for workload, runs in results.items():
        cells = []
        for label in (label_a, label_b):
            good = [r for r in runs[label] if isinstance(r, dict)]
            if len(good) < len(runs[label]):
                ok = False
            cells.append((statistics.median([r["env_steps_per_s"] for r in good]) if good else None,
                          statistics.median([r["first_call_s"] for r in good]) if good else None))
        (ra, fa), (rb, fb) = cells
        ratio = f"{rb / ra:.3f}" if ra and rb else "-"
        fmt = lambda v, spec: format(v, spec) if v is not None else "failed"  # noqa: E731
        digests = {r.get("program") for label in (label_a, label_b) for r in runs[label] if isinstance(r, dict)}
        same = "-" if None in digests or not digests else ("yes" if len(digests) == 1 else "no")
        print(f"| {workload} | {fmt(ra, ',.0f')} | {fmt(rb, ',.0f')} | {ratio} | {fmt(fa, '.1f')} | {fmt(fb, '.1f')} | {same} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
