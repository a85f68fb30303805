"""Is a refactor behaviour-preserving? Save every registered env id's fixed-key rollout, then
compare a later tree's rollouts with it bit for bit.

    python scripts/behaviour_fingerprint.py --save before.npz             # on the old tree
    python scripts/behaviour_fingerprint.py --compare before.npz          # on the new tree
    python scripts/behaviour_fingerprint.py --compare before.npz --ids tso-v0 dso-v0

Each id runs `N` envs for `T` steps from `reset`, with actions drawn once from its action
space, through the library's rollout kernel (the workload of `benchmarks/device_agreement.py`),
and keeps every output: observations, rewards, costs, flags, the info dict, the final state.
`--compare` requires every array to be identical (same shape, dtype, and bits; NaNs in the
same places). Ids that fail to build or run are recorded with the error, and must fail the
same way on both trees.

Exit code: 0 when every compared id is identical, 1 otherwise.
"""

import argparse
import importlib.util
import pathlib
import sys
import time

import numpy as np

_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _workload():
    spec = importlib.util.spec_from_file_location("device_agreement", _ROOT / "benchmarks" / "device_agreement.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run


def _ids(requested: list[str] | None) -> list[str]:
    if requested:
        return requested
    from powerzoojax.envs import list_envs

    return sorted(list_envs(multi_agent=False))


def fingerprint(ids: list[str], n_envs: int, horizon: int, seed: int) -> dict[str, np.ndarray]:
    run = _workload()
    out: dict[str, np.ndarray] = {}
    for env_id in ids:
        t0 = time.perf_counter()
        try:
            arrays = run(env_id, n_envs, horizon, seed)
        except Exception as err:  # recorded: a tree must fail the same way
            out[f"{env_id}|error"] = np.array(type(err).__name__)
            print(f"{env_id}: {type(err).__name__}: {str(err).splitlines()[0][:120]}", flush=True)
            continue
        for name, value in arrays.items():
            out[f"{env_id}|{name}"] = value
        print(f"{env_id}: {len(arrays)} arrays, {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating):
        return bool(np.array_equal(a.view(np.uint8), b.view(np.uint8)))
    return bool(np.array_equal(a, b))


def compare(saved: dict[str, np.ndarray], now: dict[str, np.ndarray], ids: list[str]) -> list[str]:
    problems = []
    for env_id in ids:
        before = {k: v for k, v in saved.items() if k.split("|", 1)[0] == env_id}
        after = {k: v for k, v in now.items() if k.split("|", 1)[0] == env_id}
        if not before:
            problems.append(f"{env_id}: not in the saved fingerprint")
            continue
        for name in sorted(set(before) | set(after)):
            if name not in after or name not in before:
                problems.append(f"{name}: only {'before' if name in before else 'after'}")
            elif not _identical(before[name], after[name]):
                problems.append(f"{name}: differs")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", metavar="NPZ")
    mode.add_argument("--compare", metavar="NPZ")
    ap.add_argument("--ids", nargs="+", help="env ids (default: every registered single-agent id)")
    ap.add_argument("--n-envs", type=int, default=2)
    ap.add_argument("--horizon", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.save:
        ids = _ids(args.ids)
        np.savez_compressed(args.save, **fingerprint(ids, args.n_envs, args.horizon, args.seed))
        print(f"saved {len(ids)} ids to {args.save}")
        return 0
    with np.load(args.compare) as f:
        saved = {k: f[k] for k in f.files}
    ids = args.ids or sorted({k.split("|", 1)[0] for k in saved})
    problems = compare(saved, fingerprint(ids, args.n_envs, args.horizon, args.seed), ids)
    for line in problems:
        print("DIFF", line)
    print(f"{len(ids)} ids compared: {'identical' if not problems else f'{len(problems)} differences'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
