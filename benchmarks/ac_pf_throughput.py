"""Batched AC power-flow solves per second vs N, against PYPOWER ``runpf`` one call at a time.

What is measured, per case (``--cases``, default 5 and 118), method (``newton``, ``fdlf``)
and batch size N (``--n-envs``, default 1 16 64 256 1024):

* the workload: ``jax.jit(jax.vmap(ac_power_flow))`` on N load instances = nominal case
  loads (and scheduled unit outputs) times ``1 + 0.03 ξ`` per instance, ``ξ ~ N(0, 1)``,
  float32, flat start, ``tol = 1e-5``, ``max_iter = 30``, Q limits enforced;
* ``compile s``: first call of a fresh jit (trace + compile + one run);
* ``solves/s``: N / median wall time of ``--repeats`` calls (``block_until_ready``);
* ``converged``: fraction of the N instances flagged converged; ``iters``: mean Newton /
  fast-decoupled iterations;
* baseline: PYPOWER ``runpf`` (Newton, float64, Q limits off: its ``ENFORCE_Q_LIMS=1``
  path crashes in PYPOWER 5.1) on the same MATPOWER case, one instance per call, in the
  same run: solves/s = 1 / median seconds.

``--quick`` runs N in (1, 64, 1024), two repeats, and skips Newton above N = 64 (its
batched LU costs seconds per call on case 118). ``fdlf`` handles PV->PQ switches through
a precomputed Schur system (see ``powerzoojax.physics._ac_pf``); it is the TransGridEnv
default. Prefer one-core runs on a shared machine
(``taskset -c 0 uv run python benchmarks/ac_pf_throughput.py ...``). Results are printed as a Markdown table;
``--markdown PATH`` also writes them to a file.

    uv run python benchmarks/ac_pf_throughput.py --quick --markdown benchmarks/results/ac_pf.md
"""

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from _record import record
from powerzoojax.case import load_case
from powerzoojax.physics import ac_power_flow, make_ac_network


def _instances(case, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    scale = 1.0 + 0.03 * rng.standard_normal((n, 1))
    on = np.asarray(case.unit_status) > 0
    pg = np.asarray(case.unit_pg) * on * scale
    pd = np.asarray(case.node_pd) * scale
    qd = np.asarray(case.node_qd) * scale
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return f32(pg), f32(pd), f32(qd)


def _time(fn, args, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_jax(case_id: str, method: str, n: int, repeats: int) -> dict:
    case = load_case(case_id)
    net = make_ac_network(case)
    args = _instances(case, n)
    solve = jax.jit(
        jax.vmap(lambda pg, pd, qd: ac_power_flow(net, pg, None, pd, qd, method=method))
    )
    start = time.perf_counter()
    res = jax.block_until_ready(solve(*args))
    compile_s = time.perf_counter() - start
    seconds = _time(solve, args, repeats)
    return {
        "compile_s": compile_s,
        "solves_per_s": n / seconds,
        "converged": float(jnp.mean(res.converged)),
        "iters": float(jnp.mean(res.n_iter)),
    }


def bench_pypower(case_id: str, repeats: int) -> float:
    from matpowercaseframes import CaseFrames
    from pypower.api import ppoption, runpf

    frames = CaseFrames(f"case{case_id}")
    ppc = {
        "version": "2",
        "baseMVA": float(frames.baseMVA),
        "bus": np.asarray(frames.bus.values, float),
        "gen": np.asarray(frames.gen.values, float),
        "branch": np.asarray(frames.branch.values, float),
    }
    # ENFORCE_Q_LIMS=1 crashes in PYPOWER 5.1 (float gen-bus indices): limits off here.
    opt = ppoption(VERBOSE=0, OUT_ALL=0)
    runpf(ppc, opt)
    times = []
    for _ in range(max(repeats, 5)):
        start = time.perf_counter()
        runpf(ppc, opt)
        times.append(time.perf_counter() - start)
    return 1.0 / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=["5", "118"])
    parser.add_argument("--n-envs", nargs="+", type=int, default=[1, 16, 64, 256, 1024])
    parser.add_argument("--methods", nargs="+", default=["newton", "fdlf"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--markdown", default=None)
    args = parser.parse_args()
    if args.quick:
        args.n_envs, args.repeats = [1, 64, 1024], 2

    lines = [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"JAX {jax.__version__}, {jax.devices()[0].platform}",
        "",
        "| case | method | N | compile s | solves/s | converged | mean iters "
        "| PYPOWER runpf solves/s | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines))
    for case_id in args.cases:
        ref = bench_pypower(case_id, args.repeats)
        for method in args.methods:
            for n in args.n_envs:
                if args.quick and method == "newton" and n > 64 and case_id != "5":
                    continue
                r = bench_jax(case_id, method, n, args.repeats)
                record("AC power flow", f"case {case_id}, {method}, N={n}", r["solves_per_s"], "solves/s",
                       compile_s=r["compile_s"])
                line = (
                    f"| {case_id} | {method} | {n} | {r['compile_s']:.1f} | "
                    f"{r['solves_per_s']:,.0f} | {r['converged']:.3f} | {r['iters']:.1f} | "
                    f"{ref:,.0f} | {r['solves_per_s'] / ref:,.1f}x |"
                )
                print(line, flush=True)
                lines.append(line)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("# AC power flow throughput (`benchmarks/ac_pf_throughput.py`)\n\n")
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
