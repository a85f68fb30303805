"""Batched in-graph DC-OPF solves per second, beside PYPOWER ``rundcopf`` and HiGHS.

Per case (5 and 118) and line-limit variant ("case" limits; "rated": every line rated at
150 MW so the PTDF rows enter the optimisation), and batch size N: one jitted
``vmap(dc_opf)`` over N random load vectors (0.35–0.6 of capacity, ±20 % per bus) with
linear case costs. Reported: compile seconds (lower + compile), median seconds per
batched call over ``--repeats`` calls, solves/s, and the fraction of OPTIMAL results. The
references solve one instance at a time in the same process: scipy ``linprog`` (HiGHS,
same PTDF LP) and PYPOWER ``rundcopf`` (B-θ formulation, PIPS), each timed over a few
instances. Also the worst relative objective gap to HiGHS over the first instances.

    uv run python benchmarks/opf_throughput.py --quick
    uv run python benchmarks/opf_throughput.py --n-envs 1 16 256 1024
    uv run python benchmarks/opf_throughput.py --env-ab --quick   # env workloads, < 2 min
    uv run python benchmarks/opf_throughput.py --acopf --quick    # AC-OPF only, < 1 min
    uv run python benchmarks/opf_throughput.py --lp-ab --quick    # dual simplex vs interior point

``--env-ab``: TransGridEnv DC-OPF mode and UnitCommitmentEnv on case 118 (N = 256,
horizon 16, random actions, the workloads of ``trans_modes_throughput.py``) with the
dispatch solved by the exact price search (current) and by the interior point (before),
interleaved in one process.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linprog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

from _record import record  # noqa: E402
from powerzoojax.case import load_case  # noqa: E402
from powerzoojax.physics import SolverStatus, dc_opf, make_dc_opf_setup  # noqa: E402
from powerzoojax.utils.jax_utils import enable_x64


def _instances(case, n, seed=0):
    rng = np.random.default_rng(seed)
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    level = rng.uniform(0.35, 0.6, (n, 1)) * np.asarray(case.unit_p_max).sum() / node_dmax.sum()
    return node_dmax[None] * level * rng.uniform(0.8, 1.2, (n, case.n_nodes))


def _limits(case, rated):
    if not rated:
        return np.asarray(case.line_cap, np.float64), np.asarray(case.line_floor, np.float64)
    return np.full(case.n_lines, 150.0), np.full(case.n_lines, -150.0)


def _highs(case, cap, floor, load):
    mon = (np.abs(cap) < 1e5) | (np.abs(floor) < 1e5)
    m = (np.asarray(case.ptdf, np.float64) @ np.asarray(case.nodes_units_map, np.float64))[mon]
    f0 = (np.asarray(case.ptdf, np.float64) @ load)[mon]
    return linprog(
        np.asarray(case.unit_cost_c, np.float64),
        A_ub=np.vstack([m, -m]),
        b_ub=np.concatenate([cap[mon] + f0, -(floor[mon] + f0)]),
        A_eq=np.ones((1, case.n_units)),
        b_eq=[load.sum()],
        bounds=list(zip(np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64))),
        method="highs",
    )


def _pypower(case_id, rated, load):
    from pypower.api import ppoption, rundcopf
    from test_dc_opf import _pypower_case

    case = load_case(case_id)
    ppc = _pypower_case(case_id, rated, load, np.zeros(case.n_units), np.asarray(case.unit_cost_c, np.float64))
    return rundcopf(ppc, ppoption(VERBOSE=0, OUT_ALL=0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="+", default=["5", "118"])
    ap.add_argument("--n-envs", nargs="+", type=int, default=[1, 16, 64, 256, 1024])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="N in {1, 256}, 3 repeats, 3 reference solves")
    ap.add_argument("--env-ab", action="store_true", help="only the env section: TransGridEnv DC-OPF "
                    "and UnitCommitmentEnv on case 118, price-search vs IPM dispatch, same process")
    ap.add_argument("--acopf", action="store_true", help="only the AC-OPF section (case 5, float64; "
                    "compile wall and CPU seconds, batched solves/s, PYPOWER runopf)")
    ap.add_argument("--lp-ab", action="store_true", help="only the linear-cost A/B: dual simplex vs "
                    "interior point on the same problems, interleaved in one process")
    args = ap.parse_args()
    if args.lp_ab:
        _lp_ab_section([256, 1024] if args.quick else [1, 16, 256, 1024], 5 if args.quick else args.repeats)
        return
    if args.acopf:
        _ac_opf_section([1, 16] if args.quick else [1, 16, 64], 3 if args.quick else args.repeats)
        return
    if args.env_ab:
        _env_ab_section(n_envs=256, horizon=16, repeats=args.repeats if not args.quick else 4)
        return
    n_envs = [1, 256] if args.quick else args.n_envs
    repeats = 3 if args.quick else args.repeats
    n_ref = 3 if args.quick else 10
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    print("| case | limits | monitored lines | N | compile s | ms / batch | solves/s | optimal | max obj gap vs HiGHS |")
    print("|---|---|---|---|---|---|---|---|---|")
    refs = []
    for case_id in args.cases:
        case = load_case(case_id)
        for rated in (False, True):
            cap, floor = _limits(case, rated)
            # Linear costs, as the HiGHS reference: the dual simplex path.
            setup = make_dc_opf_setup(case, cap, floor, objective="linear")
            n_mon = int(setup.mon_idx.shape[0])
            solve = jax.jit(jax.vmap(lambda load, s=setup: dc_opf(s, load)))
            for n in n_envs:
                loads_np = _instances(case, n)
                loads = jnp.asarray(loads_np, jnp.float32)
                t0 = time.perf_counter()
                compiled = solve.lower(loads).compile()
                t_compile = time.perf_counter() - t0
                jax.block_until_ready(compiled(loads))
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    out = jax.block_until_ready(compiled(loads))
                    times.append(time.perf_counter() - t0)
                med = statistics.median(times)
                k = min(n, n_ref)
                gaps = [0.0]
                for i in range(k):
                    ref = _highs(case, cap, floor, loads_np[i])
                    if ref.status == 0:  # infeasible instances have no reference objective
                        gaps.append(abs(float(out.objective[i]) - ref.fun) / abs(ref.fun))
                opt = float(np.mean(np.asarray(out.status == SolverStatus.successful)))
                print(f"| {case_id} | {'rated 150 MW' if rated else 'case'} | {n_mon} | {n} | {t_compile:.2f} | {med * 1e3:.3f} | {n / med:,.0f} | {opt:.2f} | {max(gaps):.1e} |", flush=True)
                record("DC-OPF", f"case {case_id}, {'rated 150 MW' if rated else 'case'} limits, N={n}", n / med,
                       "solves/s", compile_s=t_compile)
            loads_np = _instances(case, n_ref, seed=1)
            t0 = time.perf_counter()
            for i in range(n_ref):
                _highs(case, cap, floor, loads_np[i])
            t_h = (time.perf_counter() - t0) / n_ref
            t0 = time.perf_counter()
            for i in range(n_ref):
                _pypower(case_id, rated, loads_np[i])  # infeasible draws count as solves too
            t_p = (time.perf_counter() - t0) / n_ref
            refs.append((case_id, rated, t_h, t_p))
    print("\n| case | limits | HiGHS linprog solves/s (1 at a time) | PYPOWER rundcopf solves/s |")
    print("|---|---|---|---|")
    for case_id, rated, t_h, t_p in refs:
        print(f"| {case_id} | {'rated 150 MW' if rated else 'case'} | {1 / t_h:,.0f} | {1 / t_p:,.1f} |")

    _ac_opf_section([1, 16] if args.quick else [1, 16, 64], repeats)


def _ac_opf_section(n_envs, repeats):
    """AC-OPF case 5 (float64), batched solves/s beside PYPOWER runopf one at a time."""
    from matpowercaseframes import CaseFrames
    from pypower.api import ppoption, runopf

    from powerzoojax.physics import ac_opf, make_ac_opf_setup

    case = load_case("5")
    print("\n| AC-OPF case 5 | N | compile s (CPU s) | ms / batch | solves/s | converged |")
    print("|---|---|---|---|---|---|")
    with enable_x64():
        setup = make_ac_opf_setup(case, dtype=jnp.float64)
        solve = jax.jit(jax.vmap(lambda pd, qd: ac_opf(setup, pd, qd)))
        rng = np.random.default_rng(0)
        for n in n_envs:
            scale = rng.uniform(0.8, 1.1, (n, case.n_nodes))
            pd = jnp.asarray(np.asarray(case.node_pd, np.float64)[None] * scale)
            qd = jnp.asarray(np.asarray(case.node_qd, np.float64)[None] * scale)
            t0, c0 = time.perf_counter(), time.process_time()
            compiled = solve.lower(pd, qd).compile()
            t_compile, c_compile = time.perf_counter() - t0, time.process_time() - c0
            jax.block_until_ready(compiled(pd, qd))
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                out = jax.block_until_ready(compiled(pd, qd))
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            conv = float(np.mean(np.asarray(out.converged)))
            print(f"| jax | {n} | {t_compile:.2f} ({c_compile:.2f}) | {med * 1e3:.2f} | {n / med:,.0f} | {conv:.2f} |", flush=True)
            record("AC-OPF", f"case 5, N={n}", n / med, "solves/s", compile_s=t_compile)
    frames = CaseFrames("case5")
    ppc = {"version": "2", "baseMVA": float(frames.baseMVA), "bus": np.asarray(frames.bus.values, float),
           "gen": np.asarray(frames.gen.values, float), "branch": np.asarray(frames.branch.values, float),
           "gencost": np.asarray(frames.gencost.values, float)}
    t0 = time.perf_counter()
    for _ in range(5):
        assert runopf(ppc, ppoption(VERBOSE=0, OUT_ALL=0))["success"]
    t = (time.perf_counter() - t0) / 5
    print(f"| PYPOWER runopf (1 at a time) | 1 | – | {t * 1e3:.1f} | {1 / t:,.1f} | 1.00 |")



def _lp_ab_section(n_envs, repeats):
    """Linear-cost DC-OPF by the dual simplex (current) and by the interior point with its
    active-set polish (the same setup marked non-linear), on the same load batches:
    compile seconds, median ms per batch (calls interleaved), largest dispatch gap to HiGHS
    on OPTIMAL answers among the first instances."""
    import dataclasses

    print(f"jax {jax.__version__}, devices {jax.devices()}")
    print("| case | limits | N | compile s simplex / IPM | ms / batch simplex / IPM | IPM ÷ simplex | max MW gap to HiGHS simplex / IPM |")
    print("|---|---|---|---|---|---|---|")
    for case_id, rated in (("5", False), ("118", True)):
        case = load_case(case_id)
        cap, floor = _limits(case, rated)
        simplex = make_dc_opf_setup(case, cap, floor, objective="linear")
        ipm = dataclasses.replace(simplex, algorithm="interior_point")
        for n in n_envs:
            loads_np = _instances(case, n)
            loads = jnp.asarray(loads_np, jnp.float32)
            compiled, t_compile = {}, {}
            for name, setup in (("simplex", simplex), ("ipm", ipm)):
                t0 = time.perf_counter()
                compiled[name] = jax.jit(jax.vmap(lambda load, s=setup: dc_opf(s, load))).lower(loads).compile()
                t_compile[name] = time.perf_counter() - t0
                jax.block_until_ready(compiled[name](loads))
            times = {"simplex": [], "ipm": []}
            for _ in range(repeats):
                for name in times:
                    t0 = time.perf_counter()
                    jax.block_until_ready(compiled[name](loads))
                    times[name].append(time.perf_counter() - t0)
            gaps = {}
            for name in times:
                out = compiled[name](loads)
                gap = 0.0
                for i in range(min(n, 10)):
                    ref = _highs(case, cap, floor, loads_np[i])
                    if ref.status == 0 and bool(np.asarray(out.status == SolverStatus.successful)[i]):
                        gap = max(gap, float(np.max(np.abs(np.asarray(out.p_mw[i], np.float64) - ref.x))))
                gaps[name] = gap
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"| {case_id} | {'rated 150 MW' if rated else 'case'} | {n} | {t_compile['simplex']:.2f} / {t_compile['ipm']:.2f} "
                  f"| {med['simplex'] * 1e3:.3f} / {med['ipm'] * 1e3:.3f} | {med['ipm'] / med['simplex']:.2f} "
                  f"| {gaps['simplex']:.1e} / {gaps['ipm']:.1e} |", flush=True)


def _env_ab_section(n_envs, horizon, repeats):
    """Env-steps/s of the DC-OPF env workloads with the exact price search (current) and
    with the interior point forced on the same unconstrained problems (the code before
    it), interleaved in one process so that machine contention hits both alike."""
    import powerzoojax.physics._dc_opf as dc_module
    from powerzoojax.core import scan_rollout
    from powerzoojax.grid import TransGridEnv, UnitCommitmentEnv, make_trans_params, make_uc_params
    from powerzoojax.physics._qp_ipm import solve_dispatch_qp, solve_separable_dispatch

    def ipm_m0(cubic, quad, lin, lo, hi, total):
        # What dc_opf ran before: fixed units widened by a sliver, total kept inside.
        span = jnp.maximum(jnp.max(hi - lo), 1.0)
        hi_w = jnp.maximum(hi, lo + 1e-4 * span)
        margin = 1e-3 * jnp.sum(hi_w - lo)
        total = jnp.clip(total, jnp.sum(lo) + margin, jnp.sum(hi_w) - margin)
        empty = jnp.zeros((0,), lin.dtype)
        return solve_dispatch_qp(cubic, quad, lin, lo, hi_w, total, jnp.zeros((lin.shape[0], 0), lin.dtype),
                                 empty, empty, max_iter=30)

    case = load_case("118")
    workloads = {
        "dcopf": (TransGridEnv(), make_trans_params(case, max_steps=horizon, solver_mode=1)),
        "uc": (UnitCommitmentEnv(), make_uc_params(case, max_steps=horizon, solver_mode=1)),  # the case's UC columns
    }
    print(f"\n## env workloads, case 118, N = {n_envs}, horizon {horizon}, {repeats} interleaved repeats")
    print("| workload | dispatch solver | env-steps/s (median) | env-steps/s (best) | opf converged |")
    print("|---|---|---|---|---|")
    for kind, (env, params) in workloads.items():
        act_dim = env.action_space(params).shape[0]
        runs = {}
        for label, solver in (("price search (now)", solve_separable_dispatch), ("IPM (before)", ipm_m0)):
            dc_module.solve_separable_dispatch = solver  # read when dc_opf is traced

            def run(key, env=env, params=params, act_dim=act_dim):
                k_reset, k_act, k_roll = jax.random.split(key, 3)
                _, states = jax.vmap(lambda k: env.reset(k, params))(jax.random.split(k_reset, n_envs))
                actions = jax.random.uniform(k_act, (n_envs, horizon, act_dim), minval=-1.0, maxval=1.0)
                return jax.vmap(scan_rollout, in_axes=(None, 0, 0, None, 0))(
                    env, jax.random.split(k_roll, n_envs), states, params, actions)

            compiled = jax.jit(run).lower(jax.random.PRNGKey(0)).compile()
            out = jax.block_until_ready(compiled(jax.random.PRNGKey(0)))
            runs[label] = (compiled, [], float(np.mean(np.asarray(out[-1]["opf_converged"]))))
        dc_module.solve_separable_dispatch = solve_separable_dispatch
        for r in range(repeats):
            for compiled, times, _ in runs.values():
                t0 = time.perf_counter()
                jax.block_until_ready(compiled(jax.random.PRNGKey(r + 1)))
                times.append(time.perf_counter() - t0)
        for label, (_, times, conv) in runs.items():
            steps = n_envs * horizon
            print(f"| {kind} | {label} | {steps / statistics.median(times):,.0f} | {steps / min(times):,.0f} | {conv:.3f} |", flush=True)


if __name__ == "__main__":
    main()
