"""Is a refactor of the trainers behaviour-preserving? Save a few updates of every trainer at a
fixed seed, then compare a later tree's with them bit for bit.

    python scripts/training_fingerprint.py --save before.npz        # on the old tree
    python scripts/training_fingerprint.py --compare before.npz     # on the new tree
    python scripts/training_fingerprint.py --compare before.npz --cases ppo sac

Each case builds one preset's trainer (`build_trainer`, so the preset's env, wrappers and
config) shrunk to a few envs and a few updates, with evaluation on, and runs the whole run in
one compiled call (`trainer.train(key)`). It keeps every array leaf of the final training
state (policy, optimiser, env states, statistics, buffers, multipliers) and every metric of
every update. `--compare` requires every array to be identical (same shape, dtype and bits;
NaNs in the same places). A metric present only before fails the comparison unless named
with `--removed-metrics` (a metric alias removed on purpose). Cases that fail to build or
run are recorded with the error, and must fail the same way on both trees.

Exit code: 0 when every compared case is identical, 1 otherwise.
"""

import argparse
import sys
from typing import Any

import numpy as np
from behaviour_fingerprint import compare, record  # the same recording and bitwise comparison

# name: (preset, overrides). Few envs, short updates, every preset's own wrappers and knobs.
_SMALL = dict(num_envs=4, n_steps=8, total_timesteps=3 * 4 * 8, eval_freq=2 * 4 * 8, eval_num_episodes=2)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "ppo": ("case5-economic-dispatch", dict(_SMALL, n_minibatches=2)),
    "ppo_beta_obsnorm": (
        "case5-economic-dispatch",
        dict(_SMALL, n_minibatches=2, continuous_action_dist="beta", normalize_observations=True, n_checkpoints=2),
    ),
    "ppo_lagrangian": ("case5-safe-dispatch", dict(_SMALL, n_minibatches=2)),
    "saute_ppo": ("case5-safe-dispatch", dict(_SMALL, n_minibatches=2, algo="saute_ppo")),
    "sac": (
        "case5-economic-dispatch",
        dict(_SMALL, algo="sac", sac_num_epochs=2, normalize_rewards=True, sac_target_entropy_ratio=0.5),
    ),
    "ippo": ("case5-ippo", dict(_SMALL, n_minibatches=2)),
    "ippo_typed": ("case5-ippo-battery", dict(_SMALL, n_minibatches=2, algo="ippo_typed", normalize_observations=True)),
    "ippo_typed_lagrangian": (
        "case5-ippo",
        dict(_SMALL, n_minibatches=2, algo="ippo_typed_lagrangian", cost_thresholds=(0.0,) * 4, lambda_lr=0.5),
    ),
    "apg": ("case5-economic-dispatch-apg", dict(_SMALL, normalize_observations=True)),
}


def run_case(preset: str, overrides: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    import equinox as eqx
    import jax
    import jax.random as jr
    from powerzoojax.rl.training._train import build_trainer

    trainer, _ = build_trainer(preset, None, None, seed, **overrides)
    state, metrics = jax.jit(trainer.train)(jr.PRNGKey(seed))
    out: dict[str, np.ndarray] = {}
    leaves = jax.tree_util.tree_flatten_with_path(eqx.filter(state, eqx.is_array))[0]
    for path, leaf in leaves:
        out[f"state{jax.tree_util.keystr(path)}"] = np.asarray(leaf)
    for name, value in metrics.items():
        out[f"metric/{name}"] = np.asarray(value)
    return out


def fingerprint(cases: list[str], seed: int) -> dict[str, np.ndarray]:
    return record(cases, lambda case: run_case(*CASES[case], seed))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", metavar="NPZ")
    mode.add_argument("--compare", metavar="NPZ")
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), help="cases (default: all)")
    ap.add_argument("--removed-metrics", nargs="*", default=[], help="metric names allowed to be gone")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.save:
        cases = args.cases or list(CASES)
        np.savez_compressed(args.save, **fingerprint(cases, args.seed))  # pyright: ignore[reportArgumentType]
        print(f"saved {len(cases)} cases to {args.save}")
        return 0
    with np.load(args.compare) as f:
        saved = {k: f[k] for k in f.files}
    cases = args.cases or [c for c in CASES if any(k.split("|", 1)[0] == c for k in saved)]
    removed = {f"metric/{m}" for m in args.removed_metrics}
    problems = compare(saved, fingerprint(cases, args.seed), cases, gone_on_purpose=removed.__contains__)
    for line in problems:
        print("DIFF", line)
    print(f"{len(cases)} cases compared: {'identical' if not problems else f'{len(problems)} differences'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
