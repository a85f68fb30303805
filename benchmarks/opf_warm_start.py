"""The DC-OPF warm start, measured: cold against warm in one process.

Two parts:

* ``rollout``: the seed rollout workload (``xla_tricks.make_collect``: reset, uniform
  random actions, ``vmap(scan_rollout)``) on ``TransGrid-case<id>-dcopf-v0`` params built
  with ``opf_warm_start=False`` and ``True``, each compiled ahead of time; alternating
  rounds with the same key; the median per-round ratio ``warm / cold`` of seconds and each
  side's first call (lower + compile + first run). Also the largest difference of the
  rollouts' per-step ``opf_objective`` (same key: the same loads, so the same LPs).
* ``walk``: case 118 with every line rated 100 MW (lines bind, and which ones move with
  the load) and three unit-cost levels; ``--lanes`` base loads, each followed for
  ``--steps`` steps of independent ``±sigma`` per-bus noise. Every step is solved by
  ``solve_dispatch_lp`` cold and warm (from the previous warm step's basis), vmapped over
  the lanes; reported: the batch's pivots (its slowest lane, which the batched loop waits
  for) and seconds, and the worst relative cost difference of the warm solves from
  HiGHS's optimum of the same LP (scipy ``linprog``, float64).

    uv run python benchmarks/opf_warm_start.py                       # both parts
    uv run python benchmarks/opf_warm_start.py --part walk --sigma 0.02 0.2
"""

import argparse
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from xla_tricks import git_commit, loadavg, make_collect, timed

# The tests' independent HiGHS reference of the same LP.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from reference_lp import highs_elastic_dispatch  # noqa: E402


def rollout_row(case_id: str, n_envs: int, horizon: int, rounds: int) -> str:
    from powerzoojax.case import load_case
    from powerzoojax.grid import TransGridEnv, make_trans_params

    env, case = TransGridEnv(), load_case(case_id)
    key = jax.block_until_ready(jax.random.PRNGKey(0))
    built = {}
    for warm in (False, True):
        params = make_trans_params(case, max_steps=horizon, solver_mode=1, opf_warm_start=warm)
        collect = make_collect(env, params, n_envs, horizon)
        jax.eval_shape(collect, key)
        t0 = time.perf_counter()
        compiled = jax.jit(collect).lower(key).compile()
        out = jax.block_until_ready(compiled(key))
        built[warm] = (compiled, time.perf_counter() - t0, out)
    objective = [np.asarray(built[w][2][1][-1]["opf_objective"], np.float64) for w in (False, True)]
    rel = float(np.max(np.abs(objective[1] - objective[0]) / np.maximum(np.abs(objective[0]), 1.0)))
    cold, warm = built[False][0], built[True][0]
    jax.block_until_ready((cold(jax.random.PRNGKey(1)), warm(jax.random.PRNGKey(1))))
    t_cold, t_warm, ratios = [], [], []
    for r in range(rounds):
        k = jax.block_until_ready(jax.random.PRNGKey(2 + r))
        a, b = (timed(cold, k), timed(warm, k)) if r % 2 == 0 else tuple(reversed((timed(warm, k), timed(cold, k))))
        t_cold.append(a)
        t_warm.append(b)
        ratios.append(b / a)
    return (
        f"| {case_id} | {n_envs} | {1e3 * statistics.median(t_cold):.1f} | {1e3 * statistics.median(t_warm):.1f} "
        f"| {statistics.median(ratios):.3f} | {built[False][1]:.2f} / {built[True][1]:.2f} | {rel:.1e} |"
    )


def walk_row(sigma: float, seeds: int, lanes: int, steps: int) -> str:
    from powerzoojax.case import load_case
    from powerzoojax.physics import make_dc_opf_setup
    from powerzoojax.physics._dispatch_lp import solve_dispatch_lp

    case = load_case("118", source="matpower")
    cap = np.full(case.n_lines, 100.0)
    setup = make_dc_opf_setup(case, cap, -cap, objective="linear")
    node_dmax = np.asarray(case.nodes_loads_map, np.float64) @ np.asarray(case.load_d_max, np.float64)
    hi = np.asarray(case.unit_p_max, np.float64)
    axes = (None, None, None, 0, None, 0, 0)
    cold = jax.jit(jax.vmap(lambda *a: solve_dispatch_lp(*a), in_axes=axes))
    warm = jax.jit(jax.vmap(lambda *a, start: solve_dispatch_lp(*a, start=start), in_axes=axes))
    piv_cold, piv_warm, s_cold, s_warm, worst = [], [], 0.0, 0.0, 0.0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        lin = jnp.asarray(rng.integers(0, 3, setup.p_min.shape[0]) * 10.0 + 10.0, jnp.float32)
        base = node_dmax[None] * rng.uniform(0.3, 0.9, (lanes, 1)) * hi.sum() / node_dmax.sum()
        base = base * rng.uniform(0.5, 1.5, base.shape)
        start = None
        for t in range(steps):
            loads = jnp.asarray(base * (1 + sigma * rng.standard_normal(base.shape)), jnp.float32)
            flow = loads @ setup.mon_ptdf_t
            args = (
                lin, setup.p_min, setup.p_max, jnp.sum(loads, 1), setup.mon_ptdf_units_t,
                setup.line_floor[setup.mon_idx] + flow, setup.line_cap[setup.mon_idx] + flow,
            )
            t0 = time.perf_counter()
            sol_c, basis_c = jax.block_until_ready(cold(*args))
            t1 = time.perf_counter()
            if start is None:
                start = basis_c
                continue
            sol_w, basis_w = jax.block_until_ready(warm(*args, start=start))
            t2 = time.perf_counter()
            if t > 1:  # the first warm call compiles
                s_cold += t1 - t0
                s_warm += t2 - t1
            piv_cold.append(int(sol_c.n_iter.max()))
            piv_warm.append(int(sol_w.n_iter.max()))
            for k in range(lanes):
                x = np.asarray(sol_w.x[k], np.float64)
                ours = float(np.asarray(lin, np.float64) @ x) + 1e3 * float(jnp.max(lin)) * float(
                    np.sum(np.asarray(sol_w.row_violation[k], np.float64))
                )
                _, best = highs_elastic_dispatch(*[np.asarray(a[k]) if i in (3, 5, 6) else np.asarray(a) for i, a in enumerate(args)])
                worst = max(worst, abs(ours - best) / abs(best))
            start = basis_w
    return (
        f"| {sigma:g} | {len(piv_cold)} | {statistics.median(piv_cold):.0f} ({min(piv_cold)}–{max(piv_cold)}) "
        f"| {statistics.median(piv_warm):.0f} ({min(piv_warm)}–{max(piv_warm)}) | {s_cold:.2f} / {s_warm:.2f} | {worst:.1e} |"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("rollout", "walk", "both"), default="both")
    parser.add_argument("--cases", nargs="+", default=["29gb", "5"], help="rollout part: case ids")
    parser.add_argument("--envs", type=int, nargs="+", default=[64, 256], help="rollout part: N per case, in order")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--horizon", type=int, default=48)
    parser.add_argument("--sigma", type=float, nargs="+", default=[0.02, 0.2], help="walk part: per-step load noise")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=64)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args(argv)
    print(f"commit {git_commit()}, JAX {jax.__version__}, load {loadavg()}, {' '.join(sys.argv[1:])}")
    if args.part in ("rollout", "both"):
        print("\n| case | N | cold ms | warm ms | warm / cold | first call cold / warm s | max rel. objective diff |")
        print("|---|---:|---:|---:|---:|---|---:|")
        for case_id, n in zip(args.cases, args.envs, strict=True):
            print(rollout_row(case_id, n, args.horizon, args.rounds), flush=True)
    if args.part in ("walk", "both"):
        print(f"\n| sigma | batches | cold pivots, median (range) | warm pivots | cold / warm s | worst warm cost vs HiGHS |")
        print("|---:|---:|---|---|---|---:|")
        for sigma in args.sigma:
            print(walk_row(sigma, args.seeds, args.lanes, args.steps), flush=True)


if __name__ == "__main__":
    main()
