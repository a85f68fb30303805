"""AC N-1 contingency screening: ``contingency_screen`` beside lightsim2grid's ``ContingencyAnalysis``.

What is measured, per case (``--cases``, default 118 and 300): the full N-1 screen of the
MATPOWER case at its own operating point, every in-service branch whose outage keeps the
network connected, one jitted call:

* ``ours``: ``contingency_screen(model, ..., method=M)`` for each ``--methods`` (default
  ``fdlf_only`` and ``fdlf``), warm-started from the intact solution, reactive limits on;
  ``outages/s`` = outage sets / median wall time of ``--repeats`` calls after the first
  (``first s``: trace + compile + run); ``conv``: converged sets; ``iters``: mean / max.
* ``lightsim2grid``: its C++ ``ContingencyAnalysisCPP`` (Newton-Raphson, KLU) on the same
  case read by pandapower, every branch (lines and transformers) registered, started from
  the intact solution, ``--threads`` (default 1 and the CPU count), in the same process, on
  the CPU; its ``outages/s`` counts every registered branch (it skips islanding ones).
  Skipped, with a note, when lightsim2grid or pandapower is not installed (a TPU host).

``--snapshots K`` (default 1): ours screens K operating points at once, the case's loads
and generation scaled evenly over +-``--spread`` (default 10 %), K x the N-1 set in one
call; its ``outages/s`` counts every (snapshot, set) pair and ``conv`` sums them, so a
large K fills an accelerator. lightsim2grid's row stays one operating point (its rate per
outage is what the ratio compares).

``ratio`` = our outages/s over lightsim2grid's best on the same machine. JAX runs on
whatever device it sees (``JAX_PLATFORMS=cpu`` for the CPU). ``--quick``: case 118 only,
3 repeats. Run from the repository root:

    uv run --locked --group contingency-bench python benchmarks/contingency.py
    JAX_PLATFORMS=cpu uv run --locked python benchmarks/contingency.py --quick
    python benchmarks/contingency.py            # a TPU host, the workspace installed
    python benchmarks/contingency.py --quick --snapshots 64 --methods fdlf_only
"""

import argparse
import os
import platform
import statistics
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _record import record  # noqa: E402

from powerzoojax.case import load_case  # noqa: E402
from powerzoojax.physics import contingency_screen, make_ac_outage_model, single_line_outages  # noqa: E402


def _time(fn, repeats: int):
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return out, first, statistics.median(times)


def ours(case_id: str, method: str, repeats: int, snapshots: int = 1, spread: float = 0.1) -> dict:
    case = load_case(case_id, source="matpower")
    model = make_ac_outage_model(case)
    outages = jnp.asarray(single_line_outages(case))
    pg = jnp.asarray(case.unit_pg) * (jnp.asarray(case.unit_status) > 0)
    pd, qd = jnp.asarray(case.node_pd), jnp.asarray(case.node_qd)
    if snapshots > 1:
        # K operating points: loads and generation scaled together (the slack takes the losses).
        scale = jnp.linspace(1.0 - spread, 1.0 + spread, snapshots, dtype=pd.dtype)[:, None]
        pg, pd, qd = pg * scale, pd * scale, qd * scale
    screen = jax.jit(lambda o: contingency_screen(model, pg, None, pd, qd, o, method=method))
    res, first, median = _time(lambda: screen(outages), repeats)
    iters = np.asarray(res.n_iter)
    n = int(outages.shape[0]) * snapshots
    return dict(
        n=n, first=first, median=median, rate=n / median,
        conv=int(np.sum(np.asarray(res.converged))), iters=f"{iters.mean():.1f} / {iters.max()}",
    )


def lightsim(case_id: str, threads: int, repeats: int) -> dict | None:
    try:
        import pandapower as pp
        import pandapower.networks as pn
        from lightsim2grid.contingencyAnalysis import ContingencyAnalysisCPP
        from lightsim2grid.gridmodel import init_from_pandapower
    except ImportError as err:
        print(f"  lightsim2grid skipped: {err}")
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = getattr(pn, f"case{case_id}")()
        pp.runpp(net, init="flat")
        grid = init_from_pandapower(net)
    v_intact = grid.ac_pf(np.ones(len(net.bus), complex), 10, 1e-8)
    n_branches = len(net.line) + len(net.trafo)
    analysis = ContingencyAnalysisCPP(grid)
    analysis.add_multiple_n1(list(range(n_branches)))
    analysis.nb_thread = threads

    def run():
        analysis.compute(v_intact, 10, 1e-8)
        analysis.compute_flows()
        analysis.compute_power_flows()
        return analysis.get_voltages()

    volts, first, median = _time(run, repeats)
    n = len(analysis.my_defaults())
    conv = int(np.sum(np.abs(np.asarray(volts)).sum(axis=1) > 0))
    return dict(n=n, first=first, median=median, rate=n / median, conv=conv, iters="-")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=["118", "300"])
    parser.add_argument("--methods", nargs="+", default=["fdlf_only", "fdlf"])
    parser.add_argument("--threads", nargs="+", type=int, default=sorted({1, os.cpu_count() or 1}))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="case 118 only, 3 repeats")
    parser.add_argument("--snapshots", type=int, default=1, help="operating points screened at once (ours)")
    parser.add_argument("--spread", type=float, default=0.1, help="load scale range of the snapshots, +-")
    parser.add_argument("--no-lightsim", action="store_true", help="ours only")
    args = parser.parse_args()
    if args.quick:
        args.cases, args.repeats = ["118"], 3
    device = jax.devices()[0]
    print(f"JAX {jax.__version__} on {device.platform} ({device.device_kind}); host {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs")
    header = f"{'case':>5} {'solver':<30} {'sets':>6} {'first s':>8} {'median ms':>10} {'outages/s':>10} {'conv':>5} {'iters':>9} {'ratio':>6}"
    rows = []
    for case_id in args.cases:
        ref = [] if args.no_lightsim else [r for t in args.threads if (r := lightsim(case_id, t, args.repeats)) is not None]
        for t, r in zip(args.threads, ref):
            rows.append((case_id, f"lightsim2grid {t} thread(s)", r, None))
        best = max((r["rate"] for r in ref), default=None)
        for method in args.methods:
            r = ours(case_id, method, args.repeats, args.snapshots, args.spread)
            snap = "" if args.snapshots == 1 else f" x{args.snapshots}"
            rows.append((case_id, f"ours {method}{snap} ({device.platform})", r, None if best is None else r["rate"] / best))
            key = f"case{case_id}/{method}/{device.platform}" + ("" if args.snapshots == 1 else f"/k{args.snapshots}")
            record("contingency", key, r["rate"], "outages/s")
    print(header)
    for case_id, name, r, ratio in rows:
        ratio_s = "-" if ratio is None else f"{ratio:.2f}"
        print(f"{case_id:>5} {name:<30} {r['n']:>6} {r['first']:>8.1f} {1e3 * r['median']:>10.1f} {r['rate']:>10.0f} "
              f"{r['conv']:>5} {r['iters']:>9} {ratio_s:>6}", flush=True)


if __name__ == "__main__":
    main()
