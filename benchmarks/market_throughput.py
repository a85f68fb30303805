"""SCED solves per second vs batch size, beside HiGHS solving the same instances one at a time.

Workload (case 5 by default, ``--case``): random feasible instances, each a nodal load
(nominal × U[0.6, 1.4] per node) and 3-segment offers (truthful × (1 + U[0, 2]), sorted per
unit). One ``jax.jit(jax.vmap(offer_sced))`` call clears N instances (``--n-envs``, default
1 4 16 64 256 1024); ``solves/s = N / median seconds`` over ``--repeats`` timed calls after a
warm-up. The baseline solves the same LP (same variables, line and box constraints) with
``scipy.optimize.linprog(method="highs")`` one instance at a time, in float64; its rate is
``instances / total seconds`` over ``--highs-instances`` instances. Every timed batch of the
largest N is also checked against HiGHS: the worst relative objective gap is printed.

Run from the repository root (numbers depend on what else runs on the machine); the
quick one-core check of both market throughput targets (under 2 minutes)::

    taskset -c 0 uv run python benchmarks/market_throughput.py --n-envs 1024 --repeats 2 \
        --highs-instances 100 --gencos-n-envs 256 --gencos-steps 16

    uv run python benchmarks/market_throughput.py
    uv run python benchmarks/market_throughput.py --n-envs 1 64 1024 --repeats 3
    uv run python benchmarks/market_throughput.py --quick

``--methods`` picks the SCED solvers timed (``simplex``, the dual simplex, is the only one).

It then times the GenCos env (``--gencos-n-envs``): env-steps/s of a vmapped 48-step
rollout with random actions on the one rollout kernel.
"""

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linprog

from _record import record
from powerzoojax.case import load_case
from powerzoojax.core import rollout
from powerzoojax.market import offer_sced, prepare_offer_sced
from powerzoojax.physics import SolverStatus


def make_instances(case, setup, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    nominal = np.asarray(case.nodes_loads_map, np.float64) @ (
        0.5 * (np.asarray(case.load_d_max, np.float64) + np.asarray(case.load_d_min, np.float64))
    )
    loads = nominal[None, :] * rng.uniform(0.6, 1.4, (n, case.n_nodes))
    base = np.asarray(setup.base_seg_prices, np.float64)
    prices = np.sort(base[None] * (1.0 + rng.uniform(0.0, 2.0, (n, *base.shape))), axis=2)
    return loads, prices


def highs_solve(setup, node_load: np.ndarray, prices: np.ndarray):
    m_s = np.asarray(setup.ptdf_segments, np.float64)
    p_min = np.asarray(setup.p_min, np.float64)
    f0 = np.asarray(setup.ptdf_units, np.float64) @ p_min - np.asarray(setup.ptdf, np.float64) @ node_load
    n = m_s.shape[1]
    return linprog(
        prices.ravel(),
        A_ub=np.vstack([m_s, -m_s]),
        b_ub=np.concatenate([np.asarray(setup.line_cap, np.float64) - f0, f0 - np.asarray(setup.line_floor, np.float64)]),
        A_eq=np.ones((1, n)),
        b_eq=[node_load.sum() - p_min.sum()],
        bounds=list(zip(np.zeros(n), np.asarray(setup.base_seg_widths, np.float64).ravel())),
        method="highs",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="5")
    parser.add_argument("--n-envs", type=int, nargs="+", default=[1, 4, 16, 64, 256, 1024])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--highs-instances", type=int, default=200)
    parser.add_argument("--gencos-n-envs", type=int, nargs="*", default=[1, 16, 64, 256, 1024])
    parser.add_argument("--gencos-steps", type=int, default=48, help="env steps per timed rollout")
    parser.add_argument("--methods", nargs="+", choices=("simplex",), default=["simplex"])
    parser.add_argument("--quick", action="store_true", help="N in (64, 1024) for SCED, (256,) for GenCos, 2 repeats")
    args = parser.parse_args()
    if args.quick:
        args.n_envs, args.gencos_n_envs, args.repeats, args.highs_instances = [64, 1024], [256], 2, 100

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, jax {jax.__version__}, {jax.devices()}")
    case = load_case(args.case)
    setup = prepare_offer_sced(case, 3)

    loads, prices = make_instances(case, setup, args.highs_instances, seed=0)
    t0 = time.perf_counter()
    highs = [highs_solve(setup, loads[i], prices[i]) for i in range(args.highs_instances)]
    highs_rate = args.highs_instances / (time.perf_counter() - t0)
    print(f"HiGHS one at a time: {highs_rate:,.0f} solves/s ({args.highs_instances} instances)")

    print("| method | N | SCED solves/s | vs HiGHS | optimal | compile+first call s |")
    print("|---|---:|---:|---:|---:|---:|")
    outs = {}
    for method in args.methods:
        solve = jax.jit(jax.vmap(lambda s, load, prices, m=method: offer_sced(s, load, prices, method=m), in_axes=(None, 0, 0)))
        for n in args.n_envs:
            loads_n, prices_n = make_instances(case, setup, n, seed=n)
            lj, pj = jnp.asarray(loads_n, jnp.float32), jnp.asarray(prices_n, jnp.float32)
            t0 = time.perf_counter()
            jax.block_until_ready(solve(setup, lj, pj))
            first = time.perf_counter() - t0
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                out = jax.block_until_ready(solve(setup, lj, pj))
                times.append(time.perf_counter() - t0)
            rate = n / statistics.median(times)
            optimal = float(np.mean(np.asarray(out.status == SolverStatus.successful)))
            print(f"| {method} | {n} | {rate:,.0f} | {rate / highs_rate:.1f}× | {optimal:.0%} | {first:.1f} |")
            record("market SCED", f"case {args.case}, {method}, N={n}", rate, "solves/s", compile_s=first)
        outs[method] = out

    # Accuracy of the last (largest) batch against HiGHS.
    k = min(len(loads_n), 64)
    refs = [highs_solve(setup, loads_n[i], prices_n[i]) for i in range(k)]
    for method, out in outs.items():
        gaps = [abs(float(out.offer_cost[i]) - ref.fun) / max(abs(ref.fun), 1.0) for i, ref in enumerate(refs) if ref.status == 0]
        print(f"{method}: max relative objective gap vs HiGHS over {len(gaps)} instances: {max(gaps):.2e}")
    del highs
    if args.gencos_n_envs:
        gencos_throughput(args.gencos_n_envs, args.gencos_steps, args.repeats)


def gencos_throughput(n_envs: list[int], n_steps: int, repeats: int) -> None:
    """GenCos env (case 5, 5 agents × 3 segments): env-steps/s of a vmapped fixed-length
    rollout on the one rollout kernel, random actions, iid split."""
    from powerzoojax.market.tasks.gencos import GenCosTask

    env, params = GenCosTask().make_env("iid")
    n_act = env.action_space(params).shape[0]

    def run(key, actions):
        k_reset, k_run = jax.random.split(key)
        _, state = env.reset(k_reset, params)

        def step(k, s, a):
            return env.step(k, s, a, params)

        return rollout(step, k_run, state, actions)[2][1]  # rewards (T,)

    batched = jax.jit(jax.vmap(run))
    print("| GenCos N | env-steps/s | compile+first call s |")
    print("|---:|---:|---:|")
    for n in n_envs:
        keys = jax.random.split(jax.random.PRNGKey(n), n)
        actions = jax.random.uniform(jax.random.PRNGKey(1), (n, n_steps, n_act), minval=-1.0, maxval=1.0)
        t0 = time.perf_counter()
        jax.block_until_ready(batched(keys, actions))
        first = time.perf_counter() - t0
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(batched(keys, actions))
            times.append(time.perf_counter() - t0)
        print(f"| {n} | {n * n_steps / statistics.median(times):,.0f} | {first:.1f} |")
        record("market GenCos env", f"N={n}", n * n_steps / statistics.median(times), "env-steps/s", compile_s=first)


if __name__ == "__main__":
    main()
