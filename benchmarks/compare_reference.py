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

Per configuration and round, each side gets a fresh process (``--worker`` mode of this
file, started with that side's interpreter), one after the other, so each
``first call s`` (trace, lower, compile and one run of the jitted function; imports and
env construction not in it) is measured alone; ``first result s`` adds what comes before
it in a fresh process (importing JAX and the package, building the case, env and params),
the wait a user sees from ``import`` to the first rollout. After one warm-up call each, the tool
asks the two processes for ``--repeats`` timed calls each, alternating between them
(A B B A A B ...), each with a new key and timed to ``block_until_ready``. On a shared
machine the load changes over seconds, so calls that follow each other see nearly the
same load: ``pair ratios`` is, per round, the median over adjacent pairs of reference
seconds / ours seconds. ``env-steps/s`` is ``N · 48 / median wall seconds`` per process;
``ratio (wall)`` and ``ratio (CPU)`` (process CPU seconds, all threads) are the ratios,
ours / reference, of their medians over ``--rounds`` (> 1: ours is faster); ``ratio
(best)`` the same of each process's fastest call (other jobs only ever add time). Rounds swap
which side starts first. The load average (``/proc/loadavg``) is printed before the first
and after the last round, and kept per round in ``--json``.

    uv run python benchmarks/compare_reference.py /tmp/PowerZooJax
    uv run python benchmarks/compare_reference.py /tmp/PowerZooJax --configs case5-dc-256 33bw-4096 --rounds 5 --repeats 31
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
    "case5-dcopf-4096": ("dcopf", "5", 4096),
    "case118-uc-4096": ("uc", "118", 4096),
    "case118-acpf-4096": ("acpf", "118", 4096),
    "case29gb-dcopf-64": ("dcopf", "29gb", 64),
    "case29gb-dcopf-512": ("dcopf", "29gb", 512),
    "case533mt_hi-dcopf-16": ("dcopf", "533mt_hi", 16),
    "case533mt_hi-dc-16": ("dc", "533mt_hi", 16),
    "case552gb-dcopf-4": ("dcopf", "552gb", 4),
    "case1354pegase-dcopf-4": ("dcopf", "1354pegase", 4),
    "case2383wp-dcopf-2": ("dcopf", "2383wp", 2),
    "case300-dc-256": ("dc", "300", 256),
    "case29gb-acpf-64": ("acpf", "29gb", 64),
    "case14-dcopf-256": ("dcopf", "14", 256),
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


def run_worker(kind: str, case_id: str, n_envs: int) -> None:
    """Serve one configuration in this (fresh) process: first the first call, then one
    timed call per ``t`` line read from stdin, each answered with a JSON line."""
    started = time.perf_counter()
    import jax
    import numpy as np

    import powerzoojax
    from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

    env, params = _make_env(kind, case_id)
    jax.block_until_ready(params)
    act_dim = int(env.action_space(params).shape[0])
    setup_s = time.perf_counter() - started

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
    key = jax.block_until_ready(jax.random.PRNGKey(0))
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(key))
    first_call_s = time.perf_counter() - t0
    mean_reward = float(np.mean(np.asarray(out[1][2])))
    del out
    jax.block_until_ready(fn(jax.random.PRNGKey(1)))  # warm-up
    print(json.dumps({
        "first_call_s": first_call_s,
        "setup_s": setup_s,
        "first_result_s": setup_s + first_call_s,
        "mean_reward_first_call": mean_reward,
        "jax": jax.__version__,
        "package_file": powerzoojax.__file__,
    }), flush=True)
    i = 2
    for line in sys.stdin:
        if line.strip() != "t":
            break
        k = jax.block_until_ready(jax.random.PRNGKey(i))
        i += 1
        t0, c0 = time.perf_counter(), time.process_time()
        out = jax.block_until_ready(fn(k))
        cpu = time.process_time() - c0
        wall = time.perf_counter() - t0
        del out
        print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)


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


class Worker:
    """One fresh ``--worker`` process of ``python`` serving ``config``."""

    def __init__(self, python: str, config: str, timeout: float):
        kind, case_id, n_envs = CONFIGS[config]
        # PYTHONPATH is dropped so each side imports its own package; an interpreter that needs
        # one (an offline accelerator host's, see scripts/accelerator_run.sh) is a wrapper script
        # that sets it.
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        cmd = [python, os.path.abspath(__file__), "--worker", kind, case_id, str(n_envs)]
        # cwd outside both source trees, so each interpreter imports its own installed package
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd="/")
        self.timeout = timeout
        self.info = self._read()

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("{"):
                return json.loads(line)
        self.close()
        tail = " | ".join((self.proc.stderr.read() if self.proc.stderr else "").strip().splitlines()[-3:])
        raise RuntimeError(f"worker exited with {self.proc.returncode}: {tail}")

    def call(self) -> dict:
        """One timed call: ``{"wall": s, "cpu": s}``."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("t\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("q\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def run_round(
    pythons: dict[str, str], config: str, order: tuple[str, str], repeats: int, timeout: float, one_at_a_time: bool = False,
) -> dict:
    """One round of ``config``: a fresh process per side, started one after the other in
    ``order`` (each first call measured alone), then ``repeats`` timed calls alternating
    between them, or with ``one_at_a_time`` each side's calls before the next side starts
    (a TPU admits one process at a time; a dedicated chip has no load to pair). Returns per side ``{first_call_s, steps_per_s, cpu_steps_per_s, ...}``."""
    n_steps = CONFIGS[config][2] * HORIZON
    workers: dict[str, Worker] = {}
    errors: dict[str, dict] = {}
    calls: dict[str, list[dict]] = {}
    try:
        for side in order:
            try:
                workers[side] = Worker(pythons[side], config, timeout)
            except RuntimeError as err:  # this side cannot run the workload; the other still runs
                errors[side] = {"error": str(err)}
                continue
            if one_at_a_time:  # an accelerator one process holds at a time: time, then free it
                calls[side] = [workers[side].call() for _ in range(repeats)]
                workers[side].close()
        running = [side for side in order if side in workers]
        if not one_at_a_time:
            calls = {side: [] for side in running}
            for i in range(repeats):
                for side in running if i % 2 == 0 else running[::-1]:
                    calls[side].append(workers[side].call())
    except RuntimeError as err:
        return {side: {"error": str(err)} for side in order}
    finally:
        for w in workers.values():
            w.close()
    result = dict(errors)
    for side in running:
        wall = [c["wall"] for c in calls[side]]
        cpu = [c["cpu"] for c in calls[side]]
        result[side] = {
            **workers[side].info,
            "steps_per_s": n_steps / statistics.median(wall),
            "best_steps_per_s": n_steps / min(wall),
            "cpu_steps_per_s": n_steps / statistics.median(cpu),
            "times_s": wall,
            "cpu_s": cpu,
        }
    if errors:
        return result
    # Ratio of each adjacent pair of calls (same moment of the machine's load).
    if one_at_a_time:
        return result
    pairs = [r["wall"] / o["wall"] for r, o in zip(calls["reference"], calls["ours"])]
    result["ours"]["pair_ratio"] = statistics.median(pairs)
    return result


# ----------------------------------------------------------------------------- table


def _median(results: list[dict], field: str) -> float | None:
    values = [r[field] for r in results if "error" not in r]
    return statistics.median(values) if values else None


def _fmt(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def table(rows: dict[str, dict[str, list[dict]]]) -> str:
    lines = [
        "| config | N | ours env-steps/s | reference env-steps/s | ratio (wall) | ratio (CPU) | ratio (best) "
        "| per-round pair ratios | first call ours s | first call reference s "
        "| first result ours s | first result reference s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config, sides in rows.items():
        kind, case_id, n_envs = CONFIGS[config]
        ours, ref = sides["ours"], sides["reference"]
        o, r = _median(ours, "steps_per_s"), _median(ref, "steps_per_s")
        oc, rc = _median(ours, "cpu_steps_per_s"), _median(ref, "cpu_steps_per_s")
        ob, rb = _median(ours, "best_steps_per_s"), _median(ref, "best_steps_per_s")
        # reference seconds / ours seconds of adjacent calls, median per round
        per_round = [f"{a['pair_ratio']:.2f}" for a in ours if "pair_ratio" in a]
        errors = [f"{side}: {x['error']}" for side in ("ours", "reference") for x in sides[side] if "error" in x]
        lines.append(
            f"| case {case_id} {KIND_LABEL[kind]} | {n_envs} | {_fmt(o, ',.0f')} | {_fmt(r, ',.0f')} "
            f"| {_fmt(o / r if o and r else None, '.2f')}× | {_fmt(oc / rc if oc and rc else None, '.2f')}× "
            f"| {_fmt(ob / rb if ob and rb else None, '.2f')}× "
            f"| {' '.join(per_round)} | {_fmt(_median(ours, 'first_call_s'), '.1f')} "
            f"| {_fmt(_median(ref, 'first_call_s'), '.1f')} "
            f"| {_fmt(_median(ours, 'first_result_s'), '.1f')} | {_fmt(_median(ref, 'first_result_s'), '.1f')} |"
            + ("" if not errors else f" {'; '.join(sorted(set(errors)))}")
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("checkout", help="path of a source checkout of the reference implementation")
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS), metavar="CONFIG",
                    help=f"configurations to run (default all): {' '.join(CONFIGS)}")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per side and configuration (default 3)")
    ap.add_argument("--repeats", type=int, default=15, help="timed calls per side and round, alternating (default 15)")
    ap.add_argument("--ref-jax", default=None, help="install the reference with this JAX version instead of its lock")
    ap.add_argument("--ref-python", default=None, help="interpreter that already has the reference installed")
    ap.add_argument("--ours-python", default=sys.executable, help="interpreter for this repository's side")
    ap.add_argument("--venv-root", default="/tmp/pzj-reference-venvs", help="where the reference's venvs are made")
    ap.add_argument("--python-version", default="3.11", help="Python of a reference venv made here (default 3.11)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds one process may take (default 1800)")
    ap.add_argument("--ref-commit", default=None, help="commit of the checkout, when it is not a git work tree")
    ap.add_argument("--json", default=None, help="also write every process's result to this file")
    ap.add_argument("--one-at-a-time", action="store_true",
                    help="time each side's calls before the next side starts (for a TPU, which one process holds)")
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
            res = run_round(pythons, config, order, args.repeats, args.timeout, args.one_at_a_time)
            load = loadavg()
            for side in order:
                res[side]["loadavg"] = load
                if "error" not in res[side] and side == "reference" and not res[side]["package_file"].startswith(checkout):
                    res[side] = {"error": f"reference side imported {res[side]['package_file']}, not the checkout"}
                rows[config][side].append(res[side])
                r = res[side]
                print(f"# round {rnd + 1} {config} {side}: "
                      + (r["error"] if "error" in r else
                         f"{r['steps_per_s']:,.0f} env-steps/s, first call {r['first_call_s']:.1f} s "
                         f"(first result {r['first_result_s']:.1f} s), "
                         f"jax {r['jax']}, load {load}"), file=sys.stderr, flush=True)
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
        wa = wp.parse_args(sys.argv[2:])
        run_worker(wa.kind, wa.case_id, wa.n_envs)
    else:
        main()
