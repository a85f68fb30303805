"""Seed rollout throughput of this repository beside a source checkout of the reference
implementation (GitHub ``powerzoojax/PowerZooJax``), measured in the same run.

A developer tool, not used by the tests. The reference is not on PyPI: pass the path of
its source checkout; the tool builds its own virtual environment for it, outside this
repository, and never imports the reference into this one.

Workload (the seed page "02 — Batched rollout"), per configuration (``--configs``): one
jitted function splits a key, resets N envs with ``batch_reset``, draws uniform random
actions in [-1, 1] of shape ``(N, 48, action_dim)`` and runs ``jax.vmap(scan_rollout)``
for 48 steps; it returns every output (initial obs, final states, obs, rewards, costs,
dones, info), all materialised with ``jax.block_until_ready``. It is the workload of
``rollout_throughput.py``, written here against the public names both packages share
(``powerzoojax.case.load_case``, ``powerzoojax.envs``, ``powerzoojax.utils.jax_utils``),
so the one worker below runs unchanged in either environment.

Per configuration and round, each side runs in a fresh process (``--worker`` mode of
this file, started with that side's interpreter) that measures:

* ``first call s``: the first call of the jitted function (trace, lower, compile, one
  run) — what a user waits for; imports and env construction are not in it;
* ``env-steps/s``: after one warm-up call, ``--repeats`` calls with new keys, each timed
  to ``block_until_ready``; ``N · 48 / median wall seconds``. ``CPU`` is the same with
  the process's CPU seconds (all threads), which other jobs on the machine disturb less.

Rounds interleave the sides (``ours, reference`` then ``reference, ours``, ...) so slow
drift in the machine's load hits both; the table gives medians over ``--rounds`` and the
ratio ours / reference of those medians (> 1: ours is faster), with the load average
(``/proc/loadavg``) seen before the first and after the last process.

    uv run python benchmarks/compare_reference.py /tmp/PowerZooJax
    uv run python benchmarks/compare_reference.py /tmp/PowerZooJax --configs case5-dc-256 33bw-4096 --rounds 5
    uv run python benchmarks/compare_reference.py /tmp/PowerZooJax --ref-jax 0.10.2   # reference on another JAX

The reference environment: by default ``uv sync --locked`` of the checkout (its own
``uv.lock``) into ``--venv-root``/``locked``; with ``--ref-jax X`` a fresh ``uv venv``
(``--venv-root``/``jax-X``) with the checkout installed editable and ``jax==X``,
``jaxlib==X``; with ``--ref-python PATH`` an interpreter that already has it. A finished
environment is reused (marker file ``.pzj-ready``). ``--ours-python PATH`` runs this
repository's side in another interpreter (e.g. a venv with another JAX).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HORIZON = 48

# name -> (workload kind, case, N envs)
CONFIGS: dict[str, tuple[str, str, int]] = {
    "case118-acpf-256": ("acpf", "118", 256),
    "case118-dcopf-256": ("dcopf", "118", 256),
    "case118-uc-256": ("uc", "118", 256),
    "case118-dc-4096": ("dc", "118", 4096),
    "case118-dc-256": ("dc", "118", 256),
    "33bw-4096": ("dist", "33bw", 4096),
    "33bw-256": ("dist", "33bw", 256),
    "case5-dc-4096": ("dc", "5", 4096),
    "case5-dc-1024": ("dc", "5", 1024),
    "case5-dc-256": ("dc", "5", 256),
    "case5-dcopf-256": ("dcopf", "5", 256),
    "case5-dcopf-1024": ("dcopf", "5", 1024),
}
KIND_LABEL = {"dc": "DC", "dcopf": "DC-OPF", "acpf": "AC PF", "uc": "UC", "dist": "DistGridEnv"}
READY_MARKER = ".pzj-ready"


# ----------------------------------------------------------------------------- worker
# Runs in either environment: imports only the names both packages export.


def _make_env(kind: str, case_id: str):
    from powerzoojax.case import load_case
    from powerzoojax import envs

    case = load_case(case_id)
    if kind == "dc":
        return envs.TransGridEnv(), envs.make_trans_params(case, max_steps=HORIZON)
    if kind == "dcopf":
        return envs.TransGridEnv(), envs.make_trans_params(case, max_steps=HORIZON, solver_mode=1)
    if kind == "acpf":
        return envs.TransGridEnv(), envs.make_trans_params(case, max_steps=HORIZON, physics=1)
    if kind == "uc":
        import importlib

        try:  # the reference keeps its tasks in powerzoojax.tasks, this repository in pzj-grid
            tso = importlib.import_module("powerzoojax.tasks.tso")
        except ImportError:
            tso = importlib.import_module("powerzoojax.grid.tasks.tso")
        uc_case = tso.make_case14_with_uc_defaults(case)
        return envs.UnitCommitmentEnv(), envs.make_uc_params(uc_case, max_steps=HORIZON, solver_mode=1)
    if kind == "dist":
        return envs.DistGridEnv(), envs.make_dist_params(case, max_steps=HORIZON)
    raise ValueError(f"unknown workload kind {kind!r}; expected one of {sorted(KIND_LABEL)}")


def run_worker(kind: str, case_id: str, n_envs: int, repeats: int) -> dict:
    """Measure one configuration in this (fresh) process; returns the JSON-able result."""
    import jax
    import numpy as np

    import powerzoojax
    from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

    env, params = _make_env(kind, case_id)
    act_dim = int(env.action_space(params).shape[0])

    def collect(key):
        key, k_reset, k_actions, k_roll = jax.random.split(key, 4)
        env_keys = jax.random.split(k_reset, n_envs)
        obs0, states0 = batch_reset(env, env_keys, params)
        actions = jax.random.uniform(k_actions, (n_envs, HORIZON, act_dim), minval=-1.0, maxval=1.0)
        rollout_keys = jax.random.split(k_roll, n_envs)

        def single_rollout(state, k, action_seq):
            return scan_rollout(env, k, state, params, action_seq)

        return obs0, jax.vmap(single_rollout)(states0, rollout_keys, actions)

    fn = jax.jit(collect)
    keys = jax.block_until_ready([jax.random.PRNGKey(i) for i in range(repeats + 2)])
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(keys[0]))
    first_call_s = time.perf_counter() - t0
    mean_reward = float(np.mean(np.asarray(out[1][2])))
    del out
    jax.block_until_ready(fn(keys[1]))
    wall, cpu = [], []
    for k in keys[2:]:
        t0, c0 = time.perf_counter(), time.process_time()
        out = jax.block_until_ready(fn(k))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
        del out
    steps = n_envs * HORIZON
    return {
        "first_call_s": first_call_s,
        "steps_per_s": steps / statistics.median(wall),
        "cpu_steps_per_s": steps / statistics.median(cpu),
        "times_s": wall,
        "mean_reward_first_call": mean_reward,
        "jax": jax.__version__,
        "package_file": powerzoojax.__file__,
    }


# ----------------------------------------------------------------------------- environments


def _run(cmd: list[str], **kwargs) -> None:
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def reference_python(checkout: str, venv_root: str, ref_jax: str | None, python_version: str) -> str:
    """Interpreter of the reference's environment, created on first use."""
    venv = os.path.join(venv_root, f"jax-{ref_jax}" if ref_jax else "locked")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(os.path.join(venv, READY_MARKER)):
        return python
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    if ref_jax:
        _run(["uv", "venv", "--python", python_version, venv], env=env)
        _run(["uv", "pip", "install", "--python", python, "-e", checkout, f"jax=={ref_jax}", f"jaxlib=={ref_jax}"], env=env)
    else:
        env["UV_PROJECT_ENVIRONMENT"] = venv
        _run(["uv", "sync", "--locked", "--python", python_version], cwd=checkout, env=env)
    open(os.path.join(venv, READY_MARKER), "w").close()
    return python


def git_commit(path: str) -> str:
    proc = subprocess.run(["git", "-C", path, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_side(python: str, config: str, repeats: int, timeout: float) -> dict:
    """One fresh process of ``python`` measuring ``config``; its JSON, or an ``error``."""
    kind, case_id, n_envs = CONFIGS[config]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    cmd = [python, os.path.abspath(__file__), "--worker", kind, case_id, str(n_envs), "--repeats", str(repeats)]
    try:
        # cwd outside both source trees, so each interpreter imports its own installed package
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd="/")
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return {"error": f"exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


# ----------------------------------------------------------------------------- table


def _median(results: list[dict], field: str) -> float | None:
    values = [r[field] for r in results if "error" not in r]
    return statistics.median(values) if values else None


def _fmt(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def table(rows: dict[str, dict[str, list[dict]]]) -> str:
    lines = [
        "| config | N | ours env-steps/s | reference env-steps/s | ratio (wall) | ratio (CPU) "
        "| per-round ratios | first call ours s | first call reference s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for config, sides in rows.items():
        kind, case_id, n_envs = CONFIGS[config]
        ours, ref = sides["ours"], sides["reference"]
        o, r = _median(ours, "steps_per_s"), _median(ref, "steps_per_s")
        oc, rc = _median(ours, "cpu_steps_per_s"), _median(ref, "cpu_steps_per_s")
        per_round = [
            f"{a['steps_per_s'] / b['steps_per_s']:.2f}"
            for a, b in zip(ours, ref)
            if "error" not in a and "error" not in b
        ]
        errors = [f"{side}: {x['error']}" for side in ("ours", "reference") for x in sides[side] if "error" in x]
        lines.append(
            f"| case {case_id} {KIND_LABEL[kind]} | {n_envs} | {_fmt(o, ',.0f')} | {_fmt(r, ',.0f')} "
            f"| {_fmt(o / r if o and r else None, '.2f')}× | {_fmt(oc / rc if oc and rc else None, '.2f')}× "
            f"| {' '.join(per_round)} | {_fmt(_median(ours, 'first_call_s'), '.1f')} "
            f"| {_fmt(_median(ref, 'first_call_s'), '.1f')} |"
            + ("" if not errors else f" {'; '.join(sorted(set(errors)))}")
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("checkout", help="path of a source checkout of the reference implementation")
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS), metavar="CONFIG",
                    help=f"configurations to run (default all): {' '.join(CONFIGS)}")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per side and configuration (default 3)")
    ap.add_argument("--repeats", type=int, default=7, help="timed calls per process (default 7)")
    ap.add_argument("--ref-jax", default=None, help="install the reference with this JAX version instead of its lock")
    ap.add_argument("--ref-python", default=None, help="interpreter that already has the reference installed")
    ap.add_argument("--ours-python", default=sys.executable, help="interpreter for this repository's side")
    ap.add_argument("--venv-root", default="/tmp/pzj-reference-venvs", help="where the reference's venvs are made")
    ap.add_argument("--python-version", default="3.11", help="Python of a reference venv made here (default 3.11)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds one process may take (default 1800)")
    ap.add_argument("--ref-commit", default=None, help="commit of the checkout, when it is not a git work tree")
    ap.add_argument("--json", default=None, help="also write every process's result to this file")
    args = ap.parse_args()

    checkout = os.path.abspath(args.checkout)
    if not os.path.isdir(os.path.join(checkout, "powerzoojax")):
        ap.error(f"checkout {checkout!r} has no powerzoojax/ package directory; expected a source checkout of the reference")
    if args.rounds < 1 or args.repeats < 1:
        ap.error(f"--rounds and --repeats must be >= 1, got {args.rounds} and {args.repeats}")
    pythons = {
        "ours": args.ours_python,
        "reference": args.ref_python or reference_python(checkout, args.venv_root, args.ref_jax, args.python_version),
    }
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows: dict[str, dict[str, list[dict]]] = {c: {"ours": [], "reference": []} for c in args.configs}
    load_before = loadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    for rnd in range(args.rounds):
        order = ("ours", "reference") if rnd % 2 == 0 else ("reference", "ours")
        for config in args.configs:
            for side in order:
                res = run_side(pythons[side], config, args.repeats, args.timeout)
                res["loadavg"] = loadavg()
                if "error" not in res and side == "reference" and not res["package_file"].startswith(checkout):
                    res = {"error": f"reference side imported {res['package_file']}, not the checkout"}
                rows[config][side].append(res)
                print(f"# round {rnd + 1} {config} {side}: "
                      + (res["error"] if "error" in res else
                         f"{res['steps_per_s']:,.0f} env-steps/s, first call {res['first_call_s']:.1f} s, "
                         f"jax {res['jax']}, load {res['loadavg']}"), file=sys.stderr, flush=True)
    versions = {
        side: sorted({r["jax"] for c in rows.values() for r in c[side] if "error" not in r}) for side in ("ours", "reference")
    }
    print(f"# {started:%Y-%m-%d %H:%M} UTC; ours {git_commit(repo)} (jax {', '.join(versions['ours'])}), "
          f"reference {args.ref_commit or git_commit(checkout)} (jax {', '.join(versions['reference'])}); "
          f"{args.rounds} rounds x {args.repeats} timed calls, horizon {HORIZON}; "
          f"load average {load_before} before, {loadavg()} after; {os.cpu_count()} CPUs")
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"pythons": pythons, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        wp = argparse.ArgumentParser()
        wp.add_argument("kind")
        wp.add_argument("case_id")
        wp.add_argument("n_envs", type=int)
        wp.add_argument("--repeats", type=int, default=7)
        wa = wp.parse_args(sys.argv[2:])
        print(json.dumps(run_worker(wa.kind, wa.case_id, wa.n_envs, wa.repeats)))
    else:
        main()
