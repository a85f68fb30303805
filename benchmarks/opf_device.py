"""DC-OPF seed rollouts on whatever device JAX sees, one row per dual-simplex tuning.

Workload (the seed page "02 — Batched rollout", as in ``compare_reference.py``): one
jitted function splits a key, resets N ``TransGridEnv`` envs in DC-OPF mode
(``make_trans_params(case, solver_mode=1)``), draws uniform random actions in [-1, 1] for
48 steps and runs ``jax.vmap(scan_rollout)``; every output is materialised. Each variant
is the same params with the DC-OPF setup's ``lp_tuning`` replaced
(``powerzoojax.physics.DispatchLPTuning``), so each row is one compiled program, and all
rows of a configuration run in this one process, their timed calls interleaved (round r
calls every variant once, in an order that rotates per round).

Variants (``--variants``): ``auto`` the device's own choice (``lp_tuning=None``: CPU
tuning on a CPU, accelerator tuning elsewhere, ``k0+u2+s+h``); ``kK`` K masked pivots
unrolled before the loop (``k0``: the loop alone, the CPU tuning), then ``+uU`` U masked
pivots unrolled into each trip of the loop, ``+s`` the start's optimality test before
the loop and ``+h`` one-hot basis selections, e.g. ``k2+s+h``.

Cases (``--cases``): a case id as registered (``5``, ``118``, ...), or the id with ``r``
(``5r``, ``14r``) for the same case with every line rated at ``--rating`` MW in both
directions, so that lines bind and the LPs pivot. A case with no monitored line (118 as
shipped) clears by a price bisection, not the simplex: it runs ``k0`` only.

Per row: env-steps/s (N · 48 / the median of ``--repeats`` calls after the first),
median and best ms per call, first-call seconds (trace, compile and one run; later variants reuse
what earlier ones traced of the env, so compare first calls within a configuration with
care), and the speed against ``k0``. Per case: the pivot counts of its LPs (one dispatch
LP per load-profile row, solved cold as the env solves it), as a histogram
``pivots:count``. Needs only jax, numpy, equinox and jaxtyping beside the package.

    python3 benchmarks/opf_device.py
    python3 benchmarks/opf_device.py --cases 5 5r --n-envs 256 --variants k0 auto k1+s+h
    uv run python benchmarks/opf_device.py --n-envs 64 --repeats 5   # a CPU smoke run
"""

import argparse
import dataclasses
import json
import statistics
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

HORIZON = 48
DEFAULT_VARIANTS = ("k0", "auto", "k0+s", "k0+s+h", "k0+u4+s+h", "k1+h", "k2+s+h")


def parse_variant(spec: str):
    """The `DispatchLPTuning` of a variant name (`None` for `auto`)."""
    from powerzoojax.physics import DispatchLPTuning

    if spec == "auto":
        return None
    head, *flags = spec.split("+")
    trips = [f for f in flags if f.startswith("u") and f[1:].isdigit() and int(f[1:]) >= 1]
    ok = head.startswith("k") and head[1:].isdigit() and len(trips) <= 1
    if not ok or any(f not in ("s", "h") and f not in trips for f in flags):
        raise SystemExit(f"opf_device: variant {spec!r} is not 'auto' or kK[+uU][+s][+h] (e.g. k0+u2+s+h)")
    return DispatchLPTuning(
        fixed_pivots=int(head[1:]), start_test="s" in flags, one_hot="h" in flags,
        pivots_per_trip=int(trips[0][1:]) if trips else 1,
    )


def make_case(spec: str, rating: float):
    """The case of a `--cases` entry (an `r` suffix rates every line at `rating` MW)."""
    from powerzoojax.case import load_case

    rated = spec.endswith("r")
    case = load_case(spec[:-1] if rated else spec)
    if rated:
        n = case.n_lines
        cap = jnp.full((n,), rating, jnp.float32)
        case = eqx.tree_at(lambda c: (c.line_cap, c.line_floor), case, (cap, -cap))
    return case


def with_tuning(params, tuning):
    """`params` with its DC-OPF setup's `lp_tuning` replaced."""
    setup = dataclasses.replace(params.network_model.setup, lp_tuning=tuning)
    return eqx.tree_at(lambda p: p.network_model.setup, params, setup)


def pivot_histogram(params) -> dict[int, int]:
    """Pivot counts of the workload's dispatch LPs, one per load-profile row."""
    from powerzoojax.physics import dc_opf

    net, setup = params.network, params.network_model.setup
    prof = jnp.asarray(params.load_profiles)
    node = prof if net.loads_are_nodes else jnp.matmul(prof, jnp.asarray(net.loads_to_nodes).T, precision="highest")
    solve = jax.jit(jax.vmap(lambda load, flow: dc_opf(setup, load, load_flow_mw=flow).n_iter))
    counts = np.bincount(np.asarray(solve(node, jnp.asarray(params.load_line_flow_mw))))
    return {int(k): int(v) for k, v in enumerate(counts) if v}


def rollout_fn(env, params, n_envs: int):
    """The jitted seed rollout (reset, random actions, vmapped scan) of `params`."""
    from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

    act_dim = int(env.action_space(params).shape[0])

    def collect(key):
        key, k_reset, k_actions, k_roll = jax.random.split(key, 4)
        obs0, states0 = batch_reset(env, jax.random.split(k_reset, n_envs), params)
        actions = jax.random.uniform(k_actions, (n_envs, HORIZON, act_dim), minval=-1.0, maxval=1.0)

        def single(state, k, seq):
            return scan_rollout(env, k, state, params, seq)

        return obs0, jax.vmap(single)(states0, jax.random.split(k_roll, n_envs), actions)

    return jax.jit(collect)


def run_config(case_spec: str, n_envs: int, variants: list[str], repeats: int, rating: float) -> dict:
    from powerzoojax import envs

    case = make_case(case_spec, rating)
    env = envs.TransGridEnv()
    base = envs.make_trans_params(case, max_steps=HORIZON, solver_mode=1)
    simplex = base.network_model.setup.mon_idx.shape[0] > 0
    hist = pivot_histogram(base) if simplex else None
    names = variants if simplex else ["k0"]
    fns, first = {}, {}
    for name in names:
        fn = rollout_fn(env, with_tuning(base, parse_variant(name)), n_envs)
        t0 = time.perf_counter()
        jax.block_until_ready(fn(jax.random.PRNGKey(0)))
        first[name] = time.perf_counter() - t0
        jax.block_until_ready(fn(jax.random.PRNGKey(1)))  # warm-up
        fns[name] = fn
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            key = jax.block_until_ready(jax.random.PRNGKey(2 + r))
            t0 = time.perf_counter()
            jax.block_until_ready(fns[name](key))
            times[name].append(time.perf_counter() - t0)
    rows = []
    base_s = statistics.median(times["k0"]) if "k0" in times else None
    for name in names:
        med = statistics.median(times[name])
        rows.append({
            "case": case_spec, "n_envs": n_envs, "variant": name, "median_s": med, "best_s": min(times[name]),
            "env_steps_per_s": n_envs * HORIZON / med, "first_call_s": first[name],
            "speed_vs_k0": None if base_s is None else base_s / med,
        })
    return {"case": case_spec, "n_envs": n_envs, "simplex": simplex, "pivots": hist, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["5", "118"])
    ap.add_argument("--n-envs", nargs="+", type=int, default=[256, 4096])
    ap.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS))
    ap.add_argument("--repeats", type=int, default=7, help="timed calls per variant after the first (>= 5)")
    ap.add_argument("--rating", type=float, default=150.0, help="MW rating of every line of an 'r' case")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if args.repeats < 5:
        raise SystemExit(f"opf_device: --repeats must be at least 5, got {args.repeats}")
    for v in args.variants:
        parse_variant(v)
    dev = jax.devices()[0]
    print(f"# JAX {jax.__version__}, {dev.platform} ({dev.device_kind}), horizon {HORIZON}, {args.repeats} timed calls")
    results = []
    for case_spec in args.cases:
        for n in args.n_envs:
            res = run_config(case_spec, n, args.variants, args.repeats, args.rating)
            results.append(res)
            piv = "no simplex (no monitored line)" if not res["simplex"] else " ".join(
                f"{k}:{v}" for k, v in sorted(res["pivots"].items())
            )
            print(f"\ncase {case_spec}, N = {n}; LP pivots (per profile row) {piv}")
            print(f"{'variant':<11} {'env-steps/s':>12} {'median ms':>10} {'best ms':>9} {'first s':>8} {'vs k0':>6}")
            for row in res["rows"]:
                ratio = "" if row["speed_vs_k0"] is None else f"{row['speed_vs_k0']:.2f}"
                print(
                    f"{row['variant']:<11} {row['env_steps_per_s']:>12,.0f} {row['median_s'] * 1e3:>10.2f}"
                    f" {row['best_s'] * 1e3:>9.2f} {row['first_call_s']:>8.1f} {ratio:>6}",
                    flush=True,
                )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"jax": jax.__version__, "device": dev.device_kind, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
