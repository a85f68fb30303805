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
from collections.abc import Callable

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


def record(names: list[str], run: Callable[[str], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """`{"name|array": value}` of `run(name)` for every name; a name whose run raises is
    recorded as `name|error` (a tree must fail the same way). Shared with
    `training_fingerprint.py`."""
    out: dict[str, np.ndarray] = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            arrays = run(name)
        except Exception as err:  # recorded: a tree must fail the same way
            out[f"{name}|error"] = np.array(type(err).__name__)
            print(f"{name}: {type(err).__name__}: {str(err).splitlines()[0][:160]}", flush=True)
            continue
        for key, value in arrays.items():
            out[f"{name}|{key}"] = value
        print(f"{name}: {len(arrays)} arrays, {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def fingerprint(ids: list[str], n_envs: int, horizon: int, seed: int) -> dict[str, np.ndarray]:
    run = _workload()
    return record(ids, lambda env_id: run(env_id, n_envs, horizon, seed))


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype and bits (NaNs in the same places, -0.0 is not 0.0)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def compare(
    saved: dict[str, np.ndarray], now: dict[str, np.ndarray], names: list[str],
    gone_on_purpose: Callable[[str], bool] = lambda field: False,
) -> list[str]:
    """Every difference between two `record`s over `names`; an array only in `saved` whose
    field (the part after `|`) `gone_on_purpose` accepts is allowed."""
    problems = []
    for case in names:
        before = {k: v for k, v in saved.items() if k.split("|", 1)[0] == case}
        after = {k: v for k, v in now.items() if k.split("|", 1)[0] == case}
        if not before:
            problems.append(f"{case}: not in the saved fingerprint")
            continue
        for name in sorted(set(before) | set(after)):
            if name in before and name not in after and gone_on_purpose(name.split("|", 1)[1]):
                print(f"gone on purpose: {name}")
            elif name not in after or name not in before:
                problems.append(f"{name}: only {'before' if name in before else 'after'}")
            elif not identical(before[name], after[name]):
                problems.append(f"{name}: differs")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
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
