"""AC power flow in TransGridEnv on whatever device JAX sees: each Newton step and method.

What is measured, per variant (``--variants``) and batch size N (``--n-envs``, default
256 and 4096): ``TransGridEnv`` on case ``--case`` (118) in AC power-flow mode
(``make_trans_params(case, physics=1, pf_method=...)``), N envs, ``jax.vmap(scan_rollout)``
over ``--horizon`` (16) steps of uniform random actions in [-1, 1] (unit set-points
anywhere in [p_min, p_max]; the slack takes the imbalance, so some points have no
solution) in one jitted call:

* ``env-steps/s``: N · horizon / median wall time of ``--repeats`` calls after the first;
* ``first s``: the first call (trace + compile + run);
* ``conv``: fraction of env-steps whose AC power flow converged; ``iters``: mean and max
  iterations (fast-decoupled plus Newton).

Each env's reset key and actions are drawn from ``fold_in(key, env index)``, so the first
256 envs of an N = 4096 run are exactly the envs of an N = 256 run, on any device.

Variants, ``METHOD[/STEP[-OPTION...]]``: METHOD is ``fdlf_only``, ``fdlf`` (fast-decoupled,
Newton re-solve of what it leaves unconverged; the env default) or ``newton``; STEP the
Newton step, ``auto`` (the default: dense LU on a CPU, Krylov elsewhere), ``dense`` or
``krylov``; OPTIONs: ``fixed`` / ``while`` (the GMRES Arnoldi loop), ``kNN`` (at most NN
Arnoldi steps per Newton step) (both set in ``powerzoojax.physics._ac_pf_krylov`` for small
and large networks alike: ``KRYLOV_SMALL_LOOP``, ``KRYLOV_LOOP``, ``KRYLOV_SMALL_MAX_STEPS``,
``KRYLOV_MAX_STEPS``; unset, each keeps the library's setting), ``cgNN`` (NN conjugate-gradient
steps for the switched PV buses in the Krylov preconditioner, ``_KRYLOV_SMALL_CG_STEPS``
and ``_KRYLOV_CG_STEPS``, 4 and 8 by default), ``nostall`` (no Newton stall stop: every unconverged instance runs to the
iteration cap, as before the stall test).
``fdlf/dense-nostall`` is the CPU default before the stall test. The module constants an
option sets are read when the program is traced; each variant is traced afresh
(``jax.clear_caches()``).

Agreement between devices: ``--save PATH.npz`` writes every row's converged flags
(N, horizon), iteration counts and final voltages; ``--compare PATH.npz`` compares every
row against the saved row with the reference variant ``--reference`` (default
``fdlf/dense``) at its largest saved N, on their common envs: ``verdict changes`` =
env-steps converged in one and not in the other, and the largest final |dVm| [p.u.] and
|dVa| [rad] over envs converged at the last step in both. Runs with jax, numpy, equinox
and jaxtyping only (no beartype, no PYPOWER). A CPU reference and an accelerator run:

    JAX_PLATFORMS=cpu python benchmarks/ac_pf_device.py --n-envs 256 --variants fdlf/dense --save /tmp/cpu.npz
    python benchmarks/ac_pf_device.py --n-envs 256 4096 --variants fdlf/auto fdlf_only --compare /tmp/cpu.npz

(from the repository root, with ``packages/pzj-core/src`` and ``packages/pzj-grid/src`` on
``PYTHONPATH`` when the workspace is not installed).
"""

import argparse
import dataclasses
import os
import platform
import statistics
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

# Runnable without the workspace installed: the packages' sources next to this file.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _pkg in ("pzj-core", "pzj-grid"):
    _src = os.path.join(_ROOT, "packages", _pkg, "src")
    if _src not in sys.path:
        sys.path.append(_src)

from powerzoojax.case import load_case  # noqa: E402
from powerzoojax.core import scan_rollout  # noqa: E402
from powerzoojax.grid import TransGridEnv, make_trans_params  # noqa: E402
from powerzoojax.physics import _ac_pf, _ac_pf_krylov  # noqa: E402

METHODS = ("fdlf_only", "fdlf", "newton")
STEPS = ("auto", "dense", "krylov")
# Rows whose Newton runs the dense LU on an accelerator at N above this are skipped unless
# named explicitly: there the batched LU costs minutes per rollout.
_DENSE_ACCEL_MAX_N = 256
DEFAULT_VARIANTS = (
    "fdlf_only",
    "fdlf/auto",
    "fdlf/dense",
    "fdlf/dense-nostall",
    "fdlf/krylov",
    "fdlf/krylov-while-k40",
    "newton/auto",
)


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    method: str
    step: str
    loop: str | None
    max_steps: int | None
    cg_steps: int | None
    stall: bool


def parse_variant(name: str) -> Variant:
    """`METHOD[/STEP[-OPTION...]]` (module docstring) -> `Variant`; ValueError naming the
    bad part otherwise."""
    method, _, rest = name.partition("/")
    if method not in METHODS:
        raise ValueError(f"variant {name!r}: method must be one of {METHODS}, got {method!r}")
    step, *options = rest.split("-") if rest else ["auto"]
    if step not in STEPS:
        raise ValueError(f"variant {name!r}: Newton step must be one of {STEPS}, got {step!r}")
    loop, max_steps, cg_steps, stall = None, None, None, True
    for opt in options:
        if opt in _ac_pf_krylov.KRYLOV_LOOPS:
            loop = opt
        elif opt.startswith("k") and opt[1:].isdigit() and int(opt[1:]) > 0:
            max_steps = int(opt[1:])
        elif opt.startswith("cg") and opt[2:].isdigit():
            cg_steps = int(opt[2:])
        elif opt == "nostall":
            stall = False
        else:
            raise ValueError(f"variant {name!r}: option must be fixed, while, kNN, cgNN or nostall, got {opt!r}")
    return Variant(name, method, step, loop, max_steps, cg_steps, stall)


_STALL_DEFAULT = _ac_pf._NEWTON_STALL_ITERS
_CG_DEFAULTS = (_ac_pf._KRYLOV_SMALL_CG_STEPS, _ac_pf._KRYLOV_CG_STEPS)


_KRYLOV_DEFAULTS = {
    name: getattr(_ac_pf_krylov, name)
    for name in ("KRYLOV_LOOP", "KRYLOV_SMALL_LOOP", "KRYLOV_MAX_STEPS", "KRYLOV_SMALL_MAX_STEPS")
}


def _configure(v: Variant) -> None:
    """Set the module constants `v` reads at trace time and drop every cached trace."""
    for name, value in _KRYLOV_DEFAULTS.items():
        setattr(_ac_pf_krylov, name, value)
    if v.loop is not None:
        _ac_pf_krylov.KRYLOV_LOOP = _ac_pf_krylov.KRYLOV_SMALL_LOOP = v.loop
    if v.max_steps is not None:
        _ac_pf_krylov.KRYLOV_MAX_STEPS = _ac_pf_krylov.KRYLOV_SMALL_MAX_STEPS = v.max_steps
    _ac_pf._NEWTON_STALL_ITERS = _STALL_DEFAULT if v.stall else 10**9
    small, large = _CG_DEFAULTS if v.cg_steps is None else (v.cg_steps, v.cg_steps)
    _ac_pf._KRYLOV_SMALL_CG_STEPS, _ac_pf._KRYLOV_CG_STEPS = small, large
    jax.clear_caches()


def make_rollout(v: Variant, case_id: str, n_envs: int, horizon: int):
    env = TransGridEnv()
    # One step longer than the rollout: no auto-reset, the final state is the last step's.
    params = make_trans_params(load_case(case_id), max_steps=horizon + 1, physics=1, pf_method=v.method)
    model = dataclasses.replace(params.network_model, newton_step=v.step)
    params = eqx.tree_at(lambda p: p.network_model, params, model)
    act_dim = env.action_space(params).shape[0]

    def one_env(key):
        k_reset, k_act, k_roll = jax.random.split(key, 3)
        _, state = env.reset(k_reset, params)
        actions = jax.random.uniform(k_act, (horizon, act_dim), minval=-1.0, maxval=1.0)
        return scan_rollout(env, k_roll, state, params, actions)

    @jax.jit
    def run(key):
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n_envs))
        final, _obs, _rew, _costs, _dones, info = jax.vmap(one_env)(keys)
        return {
            "conv": info["pf_converged"],
            "n_iter": info["pf_n_iter"],
            "vm": final.vm,
            "va": final.va,
        }

    return run


def measure(v: Variant, case_id: str, n_envs: int, horizon: int, repeats: int) -> tuple[dict, dict]:
    _configure(v)
    run = make_rollout(v, case_id, n_envs, horizon)
    t0 = time.perf_counter()
    out = jax.block_until_ready(run(jax.random.PRNGKey(0)))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(run(jax.random.PRNGKey(0)))
        times.append(time.perf_counter() - t0)
    out = {k: np.asarray(x) for k, x in out.items()}
    n_iter = out["n_iter"]
    row = {
        "steps_per_s": n_envs * horizon / statistics.median(times),
        "first_s": first,
        "conv": float(np.mean(out["conv"])),
        "iters": f"{float(np.mean(n_iter)):.1f} / {int(np.max(n_iter))}",
    }
    return row, out


def agreement(out: dict, ref: dict) -> str:
    """`verdict changes k / total; |dVm| ..., |dVa| ...` on the envs both runs hold."""
    n = min(out["conv"].shape[0], ref["conv"].shape[0])
    a, b = out["conv"][:n], ref["conv"][:n]
    changed = int(np.sum(a != b))
    both = a[:, -1] & b[:, -1]
    text = f"verdict changes {changed} / {a.size}"
    if both.any():
        dvm = float(np.max(np.abs(out["vm"][:n] - ref["vm"][:n])[both]))
        dva = float(np.max(np.abs(out["va"][:n] - ref["va"][:n])[both]))
        text += f"; final |dVm| {dvm:.1e}, |dVa| {dva:.1e}"
    return text


def load_reference(path: str, name: str) -> dict[int, dict]:
    """Saved rows of variant `name`, by N."""
    data = np.load(path)
    rows: dict[int, dict] = {}
    for key in data.files:
        variant, n_text, field = key.rsplit("|", 2)
        if variant == name:
            rows.setdefault(int(n_text), {})[field] = data[key]
    if not rows:
        raise ValueError(f"--compare {path}: no rows of reference variant {name!r} (saved: {sorted(set(k.split('|')[0] for k in data.files))})")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--case", default="118")
    ap.add_argument("--n-envs", nargs="+", type=int, default=[256, 4096])
    ap.add_argument("--horizon", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variants", nargs="+", default=None, help="METHOD[/STEP[-OPTION...]]; see the module docstring")
    ap.add_argument("--save", default=None, help="write every row's flags and final voltages to this .npz")
    ap.add_argument("--compare", default=None, help="a .npz written by --save (e.g. on a CPU) to compare against")
    ap.add_argument("--reference", default="fdlf/dense", help="the variant of --compare's file to compare against")
    args = ap.parse_args()
    variants = [parse_variant(name) for name in (args.variants or DEFAULT_VARIANTS)]
    device = jax.devices()[0]
    accel = device.platform != "cpu"
    ref = load_reference(args.compare, args.reference) if args.compare else None
    print(
        f"# {platform.machine()}, {os.cpu_count()} cpus, jax {jax.__version__}, {device.platform} "
        f"({getattr(device, 'device_kind', '')}), case {args.case}, horizon {args.horizon}, median of {args.repeats}"
    )
    print("| variant | N | env-steps/s | first s | conv | iters mean / max | agreement |")
    print("|---|---|---|---|---|---|---|")
    saved: dict[str, np.ndarray] = {}
    for v in variants:
        for n in args.n_envs:
            dense_newton = v.method != "fdlf_only" and v.step == "dense"
            if accel and dense_newton and n > _DENSE_ACCEL_MAX_N and args.variants is None:
                print(f"| {v.name} | {n} | skipped: dense LU on {device.platform} | | | | |", flush=True)
                continue
            row, out = measure(v, args.case, n, args.horizon, args.repeats)
            match = ""
            if ref is not None:
                match = agreement(out, ref[max(ref)])
            print(
                f"| {v.name} | {n} | {row['steps_per_s']:,.0f} | {row['first_s']:.1f} | {row['conv']:.4f} | "
                f"{row['iters']} | {match} |",
                flush=True,
            )
            for field, value in out.items():
                saved[f"{v.name}|{n}|{field}"] = value
    if args.save:
        np.savez_compressed(args.save, allow_pickle=False, **saved)


if __name__ == "__main__":
    main()
