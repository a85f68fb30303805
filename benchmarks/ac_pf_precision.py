"""How close does a float32 AC power flow get to the exact solution, and how far apart are
two float32 solves that take different Newton steps (a CPU's dense LU, an accelerator's
Krylov step)?

Workload per case (``--cases``, default 14 and 118): ``--n`` (128) instances of the case's
own dispatch and loads, all scaled by one factor drawn uniformly from [0.9, 1.1] per
instance, solved by ``ac_power_flow`` (``vmap``, default tolerance, Q limits enforced).

* ``exact``: the float64 solve (``jax_enable_x64``, dense Newton, tol 1e-11);
* rows ``STEP refN vs exact``: the float32 solve with Newton step STEP and N refining
  iterations after the loop (``ac_power_flow``'s ``refine_steps``, ``--refine``), each
  quantity's worst difference from
  ``exact`` relative to the largest magnitude of that quantity (the measure of
  ``device_agreement.py``), over instances both converged on;
* ``dense vs krylov``: the same measure between the two float32 solves (what two devices
  differ by when each takes its own step);
* ``floor``: the exact solution's voltages rounded to float32, with the flows then computed
  exactly (float64): what no float32 voltage vector can beat.

``--time``: instead, the cost of the refinement: the float32 ``fdlf`` solve (the env
default) with ``newton_step="auto"`` at N = ``--n``, built once per ``--refine`` value,
then timed in ``--rounds`` rounds that call each build once in turn (the same inputs);
per build the median seconds and solves/s, and the ratio to the first build.

    uv run python benchmarks/ac_pf_precision.py
    uv run python benchmarks/ac_pf_precision.py --cases 118 --n 64 --refine 0 1 2
    uv run python benchmarks/ac_pf_precision.py --time --cases 118 --n 1024 --refine 0 2
"""

import argparse
import datetime
import platform

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from powerzoojax.case import load_case  # noqa: E402
from powerzoojax.physics import _ac_pf, ac_power_flow, make_ac_network  # noqa: E402

QUANTITIES = {
    "vm": "vm",
    "va": "va",
    "P flow": "line_p_from_mw",
    "Q flow": "line_q_from_mvar",
    "unit P": "unit_p_mw",
    "unit Q": "unit_q_mvar",
    "bus Q": "q_inj_mvar",
}


def solve(net, dtype, inputs, method: str, step: str, tol: float, refine: int = 0):
    def one(p, lp, lq):
        return ac_power_flow(
            net, p, None, lp, lq, method=method, newton_step=step, tol=tol, max_iter=60, refine_steps=refine
        )

    return jax.jit(jax.vmap(one))(*(jnp.asarray(x, dtype) for x in inputs))


def worst(a, b, ok) -> float:
    a, b = np.asarray(a, np.float64)[ok], np.asarray(b, np.float64)[ok]
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-6))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["14", "118"])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--method", default="newton", choices=_ac_pf.AC_PF_METHODS)
    ap.add_argument("--refine", nargs="+", type=int, default=[0, 2])
    ap.add_argument("--time", action="store_true", help="time the refinement instead (see the docstring)")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if args.time:
        return time_refinement(args)
    print(f"# {datetime.date.today()}, {platform.processor() or platform.machine()}, JAX {jax.__version__}, "
          f"{jax.devices()[0].platform}; method {args.method}")
    names = list(QUANTITIES)
    print("| case | row | " + " | ".join(names) + " |")
    print("|---|---|" + "---:|" * len(names))
    rng = np.random.default_rng(0)
    for case_id in args.cases:
        case = load_case(f"case{case_id}")
        loads = np.asarray(case.load_node_idx)
        scale = rng.uniform(0.9, 1.1, (args.n, 1))
        inputs = (
            np.asarray(case.unit_pg)[None] * scale,
            np.asarray(case.node_pd)[loads][None] * scale,
            np.asarray(case.node_qd)[loads][None] * scale,
        )
        net64, net32 = make_ac_network(case, jnp.float64), make_ac_network(case, jnp.float32)
        exact = solve(net64, jnp.float64, inputs, "newton", "dense", 1e-11)
        ok_exact = np.asarray(exact.converged)

        def row(label, res, ref, ok):
            cells = " | ".join(f"{worst(getattr(res, f), getattr(ref, f), ok):.1e}" for f in QUANTITIES.values())
            print(f"| {case_id} | {label} | {cells} |", flush=True)

        for k in args.refine:
            dense = solve(net32, jnp.float32, inputs, args.method, "dense", 1e-5, k)
            krylov = solve(net32, jnp.float32, inputs, args.method, "krylov", 1e-5, k)
            both = np.asarray(dense.converged) & np.asarray(krylov.converged) & ok_exact
            row(f"dense ref{k} vs exact", dense, exact, both)
            row(f"krylov ref{k} vs exact", krylov, exact, both)
            differ = int(np.sum(np.asarray(dense.converged) != np.asarray(krylov.converged)))
            row(f"dense vs krylov, ref{k} ({differ} verdicts differ)", dense, krylov, both)
        rounded = [jnp.asarray(np.asarray(getattr(exact, f), np.float32), jnp.float64) for f in ("vm", "va")]
        flows = jax.vmap(lambda vm, va: _ac_pf._line_flows(net64, vm, va))(*rounded)
        floor_q = worst(flows[1], exact.line_q_from_mvar, ok_exact)
        floor_p = worst(flows[0], exact.line_p_from_mw, ok_exact)
        print(f"| {case_id} | floor: exact voltages rounded to float32 | – | – | {floor_p:.1e} | {floor_q:.1e} | – | – | – |")


def time_refinement(args) -> None:
    import statistics
    import time

    print(f"# {datetime.date.today()}, {platform.processor() or platform.machine()}, JAX {jax.__version__}, "
          f"{jax.devices()[0].platform}; fdlf, newton_step auto, float32, N = {args.n}, {args.rounds} rounds")
    print("| case | refining iterations | median ms | solves/s | time / first row |")
    print("|---|---:|---:|---:|---:|")
    rng = np.random.default_rng(1)
    for case_id in args.cases:
        case = load_case(f"case{case_id}")
        net = make_ac_network(case, jnp.float32)
        loads = np.asarray(case.load_node_idx)
        scale = rng.uniform(0.9, 1.1, (args.n, 1))
        inputs = [jnp.asarray(x, jnp.float32) for x in (
            np.asarray(case.unit_pg)[None] * scale,
            np.asarray(case.node_pd)[loads][None] * scale,
            np.asarray(case.node_qd)[loads][None] * scale,
        )]
        builds = []
        for k in args.refine:
            fn = jax.jit(jax.vmap(
                lambda p, lp, lq, k=k: ac_power_flow(net, p, None, lp, lq, method="fdlf", refine_steps=k)
            ))
            compiled = fn.lower(*inputs).compile()
            jax.block_until_ready(compiled(*inputs))
            builds.append(compiled)
        seconds = [[] for _ in builds]
        for _ in range(args.rounds):
            for i, compiled in enumerate(builds):
                t0 = time.perf_counter()
                jax.block_until_ready(compiled(*inputs))
                seconds[i].append(time.perf_counter() - t0)
        first = statistics.median(seconds[0])
        for k, secs in zip(args.refine, seconds):
            med = statistics.median(secs)
            print(f"| {case_id} | {k} | {med * 1e3:.1f} | {args.n / med:,.0f} | {med / first:.2f} |", flush=True)


if __name__ == "__main__":
    main()
