"""Do the physics' results depend on the device? A fixed-action rollout of every env mode,
saved on one backend and compared on another.

    JAX_PLATFORMS=cpu python benchmarks/device_agreement.py --save cpu.npz     # on the CPU
    python benchmarks/device_agreement.py --compare cpu.npz                    # on the accelerator

Each env id runs `N` envs for `T` steps from `reset` with actions drawn once from its
action space (threefry draws are bit-identical on every backend), through the library's
rollout kernel, and every output is kept: observations, rewards, costs, done flags, the
info dict and the next state (flows, voltages, dispatch, solver statuses). `--compare`
reruns the same rollouts and reports, per id, the worst floating-point difference
relative to the magnitude of its array (`|a - b| / max(max|b|, 1e-6)`), and every integer
or boolean output that differs (converged flags, statuses). Iteration counters and solver
residuals are reported but not held to equality; where an env reports `*converged`
flags, values are compared on the steps every solver converged on (and all before them
in that env), since an unconverged step has no solution to agree on. `--matmul-precision default|highest` sets JAX's global
matmul precision, to show that the physics no longer depends on it.

Exit code: 0 when every id agrees within `--rtol` with identical flags, 1 otherwise.
"""

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

# One id per env family and network mode, at the cases the throughput tables use.
DEFAULT_IDS = (
    "TransGrid-case5-dc-v0", "TransGrid-case118-dc-v0", "TransGrid-case5-dcopf-v0", "TransGrid-case118-dcopf-v0",
    "TransGrid-case14-ac-v0", "TransGrid-case118-ac-v0", "TransGrid-case14-acopf-v0", "TransGrid-case14-dcopf_ac-v0",
    "UnitCommitment-case14-v0", "UnitCommitment-case118-v0", "DistGrid-case33bw-v0", "DistGrid3Phase-case123-v0",
    "CostBasedMarket-case5-v0", "BidBasedMarket-case5-v0", "dc_microgrid-v0", "DataCenter-v0", "ders-v0", "dso-v0",
    "tso-v0", "gencos-v0", "Battery-v0",
)
# Outputs that count work rather than describe the grid: reported, never required equal.
COUNTERS = ("iter", "pivot", "sweep", "n_steps")
# Solver residuals: round-off-sized by construction (below the solver's tolerance), so
# their relative difference is noise; reported as the largest absolute value on each side.
RESIDUALS = ("mismatch", "residual")


def run(env_id: str, n_envs: int, horizon: int, seed: int) -> dict[str, np.ndarray]:
    from powerzoojax.core import bind_step, rollout
    from powerzoojax.envs import make

    env, params = make(env_id)
    key = jax.random.PRNGKey(seed)
    k_reset, k_act, k_roll = jax.random.split(key, 3)
    space = env.action_space(params)
    actions = jax.vmap(jax.vmap(space.sample))(jax.random.split(k_act, horizon * n_envs).reshape(horizon, n_envs, -1))

    @jax.jit
    def episodes(actions):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, n_envs), params)
        step = bind_step(env, params)

        def one(k, s, a):
            return rollout(step, k, s, a)

        final, _, outputs = jax.vmap(one, in_axes=(0, 0, 1))(jax.random.split(k_roll, n_envs), state, actions)
        return {"reset_obs": obs, "final_state": final, "outputs": outputs}

    tree = jax.block_until_ready(episodes(actions))
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(path): np.asarray(x) for path, x in leaves}


def _converged_steps(ref: dict[str, np.ndarray]) -> np.ndarray | None:
    """`(N, T)` mask of the steps whose every solver reports convergence, or None when the
    env reports none. A step a solver leaves unconverged (random actions can push a feeder
    past voltage collapse) has no solution to agree on, nor do the states after it."""
    flags = [v for k, v in ref.items() if k.startswith("['outputs']") and k.endswith("converged']") and v.ndim == 2]
    if not flags:
        return None
    ok = np.logical_and.reduce([f.astype(bool) for f in flags])
    return np.logical_and.accumulate(ok, axis=1)  # a later state carries an earlier failure


def compare(ref: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> tuple[float, str, list[str], list[str]]:
    worst, where, flags, counters = 0.0, "", [], []
    steps = _converged_steps(ref)
    if steps is not None and not steps.all():
        counters.append(f"compared on the {int(steps.sum())} of {steps.size} steps every solver converged on (and before)")
    for name, b in ref.items():
        a = got[name]
        if steps is not None and not name.endswith("converged']"):
            if name.startswith("['outputs']") and b.shape[:2] == steps.shape:
                keep = steps.reshape(steps.shape + (1,) * (b.ndim - 2))
                a, b = np.where(keep, a, np.zeros_like(a)), np.where(keep, b, np.zeros_like(b))
            elif name.startswith("['final_state']") and b.shape[:1] == steps.shape[:1]:
                keep = steps[:, -1].reshape((-1,) + (1,) * (b.ndim - 1))
                a, b = np.where(keep, a, np.zeros_like(a)), np.where(keep, b, np.zeros_like(b))
        if np.issubdtype(b.dtype, np.floating) and any(r in name.lower() for r in RESIDUALS):
            counters.append(f"{name}: largest {np.nanmax(np.abs(b)):.2e} saved, {np.nanmax(np.abs(a)):.2e} now")
            continue
        if np.issubdtype(b.dtype, np.floating):
            fin = np.isfinite(b) & np.isfinite(a)
            if not np.array_equal(np.isfinite(a), np.isfinite(b)):
                flags.append(f"{name}: non-finite entries differ")
            if fin.any():
                scale = max(float(np.max(np.abs(b[fin]))), 1e-6)
                err = float(np.max(np.abs(a[fin] - b[fin]))) / scale
                if err > worst:
                    worst, where = err, name
        elif not np.array_equal(a, b):
            n = int(np.sum(a != b))
            (counters if any(c in name.lower() for c in COUNTERS) else flags).append(f"{name}: {n} of {b.size} differ")
    return worst, where, flags, counters


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save", metavar="NPZ", help="save every output here")
    ap.add_argument("--compare", metavar="NPZ", help="compare with a saved run")
    ap.add_argument("--ids", nargs="+", default=DEFAULT_IDS, help="env ids (default: one per family and mode)")
    ap.add_argument("--n-envs", type=int, default=8)
    ap.add_argument("--horizon", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--matmul-precision", choices=("default", "highest", "bfloat16"), default="default")
    args = ap.parse_args()
    if not (args.save or args.compare):
        ap.error("pass --save NPZ, --compare NPZ or both")
    if args.matmul_precision != "default":
        jax.config.update("jax_default_matmul_precision", args.matmul_precision)
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform} ({jax.devices()[0].device_kind}); "
          f"global matmul precision: {args.matmul_precision}; N = {args.n_envs}, T = {args.horizon}")
    from powerzoojax.envs import list_envs

    known = set(list_envs())
    results, ok = {}, True
    saved = dict(np.load(args.compare, allow_pickle=False)) if args.compare else None
    for env_id in args.ids:
        if env_id not in known:
            print(f"{env_id:34s} not installed here")
            continue
        t0 = time.perf_counter()
        try:
            out = run(env_id, args.n_envs, args.horizon, args.seed)
        except Exception as e:  # one failing id must not hide the others' results
            print(f"{env_id:34s} FAILED: {type(e).__name__}: {str(e)[:200]}")
            ok = False
            continue
        dt = time.perf_counter() - t0
        results.update({f"{env_id}|{k}": v for k, v in out.items()})
        if saved is None:
            print(f"{env_id:34s} {len(out):4d} outputs  {dt:6.1f} s")
            continue
        ref = {k.split("|", 1)[1]: v for k, v in saved.items() if k.split("|", 1)[0] == env_id}
        if not ref:
            print(f"{env_id:34s} not in {args.compare}")
            continue
        worst, where, flags, counters = compare(ref, out)
        good = worst <= args.rtol and not flags
        ok &= good
        print(f"{env_id:34s} worst rel. diff {worst:9.2e} ({where[:60]})  {'ok' if good else 'DIFFERS'}")
        for line in flags:
            print(f"{'':34s}   flag: {line}")
        for line in counters:
            print(f"{'':34s}   counter: {line}")
    if args.save:
        np.savez_compressed(args.save, **results)
        print(f"saved {len(results)} arrays to {args.save}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
