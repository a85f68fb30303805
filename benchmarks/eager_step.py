"""Seconds per eager ``env.step`` (no ``jit``): what a user pays who steps an env from
Python op by op (a notebook, a debugger, a host-side agent loop).

For each env: reset, then ``--steps`` eager steps with a constant action, each timed to
``jax.block_until_ready``. The first step compiles (every primitive and every solver
program it meets); the later ones should only dispatch. Also printed: the number of XLA
backend compiles during the steps after the first (``jax.monitoring``), which must be 0.

    uv run python benchmarks/eager_step.py
    uv run python benchmarks/eager_step.py --envs trans-dcopf uc --steps 5
"""

import argparse
import platform
import time

import jax
import jax.numpy as jnp
from jax import monitoring

_COMPILES: list[str] = []
monitoring.register_event_duration_secs_listener(
    lambda name, duration, **kw: _COMPILES.append(name) if name == "/jax/core/compile/backend_compile_duration" else None
)


def _envs():
    from powerzoojax.case import load_case
    from powerzoojax.grid import DistGridEnv, TransGridEnv, UnitCommitmentEnv, make_dist_params, make_trans_params
    from powerzoojax.grid import make_uc_params
    from powerzoojax.grid.tasks.dso import DSOTask

    return {
        "trans-dc": lambda: (TransGridEnv(), make_trans_params(load_case("5"))),
        "trans-dcopf": lambda: (TransGridEnv(), make_trans_params(load_case("5"), solver_mode=1)),
        "trans-acpf": lambda: (TransGridEnv(), make_trans_params(load_case("5"), physics=1)),
        "uc": lambda: (UnitCommitmentEnv(), make_uc_params(load_case("5"))),
        "dist-33bw": lambda: (DistGridEnv(), make_dist_params(load_case("33bw"))),
        "dso": lambda: (DSOTask().make_env(), DSOTask().make_params("iid", 0)),
    }


def main():
    envs = _envs()
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", nargs="+", default=list(envs), choices=list(envs))
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    print(f"# machine: {platform.machine()}, jax {jax.__version__}, backend {jax.default_backend()}")
    print("| env (case 5 / 33bw) | first eager step s | later eager steps s (median) | XLA compiles after the first |")
    print("|---|---:|---:|---:|")
    for name in args.envs:
        env, params = envs[name]()
        _, state = env.reset(jax.random.PRNGKey(0), params)
        action = 0.3 * jnp.ones(env.action_space(params).shape)
        times, compiles_before = [], None
        for i in range(args.steps):
            if i == 1:
                compiles_before = len(_COMPILES)
            t0 = time.perf_counter()
            out = env.step(jax.random.PRNGKey(i + 1), state, action, params)
            jax.block_until_ready(out)
            times.append(time.perf_counter() - t0)
            state = out[1]
        later = sorted(times[1:])[len(times[1:]) // 2] if len(times) > 1 else float("nan")
        extra = len(_COMPILES) - compiles_before if compiles_before is not None else 0
        print(f"| {name} | {times[0]:.2f} | {later:.3f} | {extra} |", flush=True)


if __name__ == "__main__":
    main()
