"""Env-steps/s of ``batch_rollout`` on a mesh of P processes × D devices each (1, 2 × 1, 2).

    uv run python benchmarks/multiprocess_rollout.py                       # the four layouts
    uv run python benchmarks/multiprocess_rollout.py --n-envs 1024 --repeats 5 --markdown

Workload: ``TransGridEnv`` on case 5 (DC power flow, 48-step episodes), ``--n-envs`` envs
in all (the global batch, the same for every layout), ``--horizon`` steps per call. One
jitted function draws uniform random actions and runs ``batch_rollout(..., mesh=m)`` with
``m = make_env_mesh()`` over every device of every process, and returns the summed reward
(a scalar replicated on every device), so the timed call is the rollout and one tiny
all-reduce. Each layout is a fresh set of processes on 127.0.0.1 (``jax.distributed``,
gloo CPU collectives, ``D`` forced XLA host devices per process); after the first call
(``first call s``: trace, compile, run) and one warm-up, ``--repeats`` calls are timed
by process 0 to ``block_until_ready``, ``env-steps/s = N · horizon / median seconds``.

On one machine the processes share its cores: the ratios say what the multi-process
machinery costs or gains against one process with the same number of devices, not what
more machines would add.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

LAYOUTS = ((1, 1), (1, 2), (2, 1), (2, 2))


def worker(port: int, n_proc: int, rank: int, n_envs: int, horizon: int, repeats: int) -> None:
    if n_proc > 1:
        from powerzoojax.core import init_distributed

        init_distributed(f"127.0.0.1:{port}", n_proc, rank)
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    from powerzoojax.case import load_case
    from powerzoojax.core import make_env_mesh
    from powerzoojax.envs import TransGridEnv, make_trans_params
    from powerzoojax.utils.jax_utils import batch_reset, batch_rollout

    case = load_case("5")
    env, params = TransGridEnv(), make_trans_params(case, max_steps=48)
    mesh = make_env_mesh()

    @jax.jit
    def run(seed):
        k_reset, k_act, k_run = jr.split(jr.fold_in(jr.PRNGKey(0), seed), 3)
        _, states = batch_reset(env, jr.split(k_reset, n_envs), params)
        actions = jr.uniform(k_act, (n_envs, horizon, case.n_units), minval=-1.0, maxval=1.0)
        out = batch_rollout(env, jr.split(k_run, n_envs), states, params, actions, mesh=mesh)
        return jnp.sum(out[2])

    t0 = time.perf_counter()
    jax.block_until_ready(run(0))
    first = time.perf_counter() - t0
    jax.block_until_ready(run(1))
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(run(2 + i))
        times.append(time.perf_counter() - t0)
    if rank == 0:
        row = {"processes": n_proc, "devices_per_process": len(jax.local_devices()), "devices": len(jax.devices()),
               "n_envs": n_envs, "first_call_s": first, "median_s": statistics.median(times),
               "env_steps_per_s": n_envs * horizon / statistics.median(times)}
        print("RESULT " + json.dumps(row), flush=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_layout(n_proc: int, n_dev: int, args: argparse.Namespace) -> dict:
    port = free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n_dev}".strip()
    cmd = [sys.executable, __file__, "--worker", str(port), str(n_proc), "RANK", "--n-envs", str(args.n_envs),
           "--horizon", str(args.horizon), "--repeats", str(args.repeats)]
    procs = [subprocess.Popen([c if c != "RANK" else str(r) for c in cmd], stdout=subprocess.PIPE, text=True, env=env)
             for r in range(n_proc)]
    outs = [p.communicate(timeout=args.timeout)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"layout {n_proc}x{n_dev} failed: exit codes {[p.returncode for p in procs]}")
    line = next(line for line in outs[0].splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-envs", type=int, default=1024, help="envs in all (divisible by 4)")
    ap.add_argument("--horizon", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per layout")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--worker", nargs=3, metavar=("PORT", "P", "RANK"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        port, n_proc, rank = map(int, args.worker)
        worker(port, n_proc, rank, args.n_envs, args.horizon, args.repeats)
        return
    if args.n_envs % 4:
        ap.error(f"--n-envs must be divisible by 4 (the largest layout's devices), got {args.n_envs}")
    load_before = os.getloadavg()
    rows = [run_layout(p, d, args) for p, d in LAYOUTS]
    load_after = os.getloadavg()
    base = rows[0]["env_steps_per_s"]
    print(f"# {os.cpu_count()} cores; load average (1, 5, 15 min) {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f} before, {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} after; "
          f"case 5, N = {args.n_envs}, horizon {args.horizon}, median of {args.repeats}")
    if args.markdown:
        print("| processes × devices | env-steps/s | vs 1 × 1 | first call s |")
        print("|---|---:|---:|---:|")
    for r in rows:
        ratio = r["env_steps_per_s"] / base
        if args.markdown:
            print(f"| {r['processes']} × {r['devices_per_process']} | {r['env_steps_per_s']:,.0f} | {ratio:.2f} | "
                  f"{r['first_call_s']:.1f} |")
        else:
            print(f"{r['processes']} process(es) × {r['devices_per_process']} device(s): "
                  f"{r['env_steps_per_s']:12,.0f} env-steps/s ({ratio:.2f}x), first call {r['first_call_s']:.1f} s")


if __name__ == "__main__":
    main()
