"""The seed rollout and the dispatch workloads of this repository on several JAX releases,
side by side: one interpreter (a virtual environment with this repository installed and
one JAX version) per ``LABEL=PYTHON`` argument.

A developer tool. Each environment is made outside the repository, for example::

    uv venv /tmp/jax07 && uv pip install -p /tmp/jax07 -e packages/pzj-core -e packages/pzj-grid 'jax>=0.7,<0.8' 'jaxlib>=0.7,<0.8'
    uv run python benchmarks/jax_version_sweep.py 0.7=/tmp/jax07/bin/python 0.10=.venv/bin/python --configs case5-dc-4096

The workloads and the measurement are those of ``compare_reference.py`` (its ``--worker``
processes and configuration names): per configuration and round, a fresh process per
interpreter, started one after the other so each first call (trace, lower, compile, one
run) is measured alone; then ``--repeats`` timed calls per interpreter, round-robin
between them, so calls close in time see the same load. The table gives, per
interpreter, the median over rounds of each process's median and best env-steps/s, its
first call, and the mean reward of the first call (same key everywhere: equal values say
the versions compute the same trajectories).
"""

import argparse
import datetime
import os
import statistics
import sys

from compare_reference import CONFIGS, HORIZON, KIND_LABEL, Worker, loadavg


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("interpreters", nargs="+", metavar="LABEL=PYTHON", help="label and interpreter of each environment")
    ap.add_argument("--configs", nargs="+", default=["case5-dc-4096", "case5-dcopf-256", "33bw-4096", "case118-dcopf-256"],
                    choices=list(CONFIGS), metavar="CONFIG", help=f"configurations: {' '.join(CONFIGS)}")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per interpreter and configuration")
    ap.add_argument("--repeats", type=int, default=15, help="timed calls per interpreter and round")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds a process may take to start")
    args = ap.parse_args()
    pythons: dict[str, str] = {}
    for item in args.interpreters:
        label, sep, python = item.partition("=")
        if not sep or not os.path.exists(python):
            ap.error(f"interpreter {item!r}: expected LABEL=PATH with an existing interpreter path")
        pythons[label] = python
    labels = list(pythons)
    results: dict[str, dict[str, list[dict]]] = {c: {lb: [] for lb in labels} for c in args.configs}
    load_before = loadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    for rnd in range(args.rounds):
        order = labels[rnd % len(labels):] + labels[: rnd % len(labels)]
        for config in args.configs:
            n_steps = CONFIGS[config][2] * HORIZON
            workers: dict[str, Worker] = {}
            try:
                for lb in order:
                    workers[lb] = Worker(pythons[lb], config, args.timeout)
                calls: dict[str, list[float]] = {lb: [] for lb in order}
                for i in range(args.repeats):
                    for lb in order if i % 2 == 0 else order[::-1]:
                        calls[lb].append(workers[lb].call()["wall"])
            except RuntimeError as err:
                print(f"# round {rnd + 1} {config}: {err}", file=sys.stderr, flush=True)
                continue
            finally:
                for w in workers.values():
                    w.close()
            for lb in order:
                info = workers[lb].info
                results[config][lb].append({
                    "jax": info["jax"], "first_call_s": info["first_call_s"], "reward": info["mean_reward_first_call"],
                    "median": n_steps / statistics.median(calls[lb]), "best": n_steps / min(calls[lb]),
                })
            print(f"# round {rnd + 1} {config} done, load {loadavg()}", file=sys.stderr, flush=True)
    print(f"# {started:%Y-%m-%d %H:%M} UTC; {args.rounds} rounds x {args.repeats} timed calls, horizon {HORIZON}; "
          f"load average {load_before} before, {loadavg()} after; {os.cpu_count()} CPUs")
    print("| config | N | JAX | env-steps/s (median) | env-steps/s (best) | first call s | mean reward |")
    print("|---|---|---|---|---|---|---|")
    for config, per in results.items():
        kind, case_id, n_envs = CONFIGS[config]
        for lb in labels:
            rs = per[lb]
            if not rs:
                print(f"| case {case_id} {KIND_LABEL[kind]} | {n_envs} | {lb} | — | — | — | — |")
                continue
            med = lambda f: statistics.median(r[f] for r in rs)  # noqa: E731
            print(f"| case {case_id} {KIND_LABEL[kind]} | {n_envs} | {rs[0]['jax']} | {med('median'):,.0f} "
                  f"| {med('best'):,.0f} | {med('first_call_s'):.1f} | {rs[0]['reward']:.6g} |")


if __name__ == "__main__":
    main()
