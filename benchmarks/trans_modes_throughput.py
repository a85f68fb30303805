"""Throughput of the transmission physics modes: DC-OPF dispatch, AC power flow, unit commitment.

Per workload and case, N envs run ``jax.vmap(scan_rollout)`` over ``--horizon`` steps of
uniform random actions in one jitted call (every output materialised); ``env-steps/s`` =
``N · horizon / median seconds`` over ``--repeats`` timed calls after a warm-up call.

* ``dcopf``: ``TransGridEnv`` with ``make_trans_params(case, solver_mode=1)`` (in-graph
  interior-point DC-OPF each step, DC flows).
* ``acpf``: ``make_trans_params(case, physics=1, pf_method=--pf-method)`` (AC power flow
  each step, nominal loads: fast-decoupled by default, ``newton`` the reference's algorithm),
  two rows per N: ``uniform`` = uniform random actions in [-1, 1] (unit set-points anywhere
  in [p_min, p_max], the slack takes the imbalance: a few per thousand are unsolvable with
  Q limits), and ``schedule`` = each unit's action is the case's own ``unit_pg`` plus a
  uniform random offset of +-10 % of its range [p_min, p_max] drawn afresh every step
  (clipped to the range; the slack takes the imbalance). The fraction of converged steps and
  the mean / max AC iterations are reported. ``--pf-warm-start off on`` adds rows with
  ``pf_warm_start=True`` (each step starts from the previous step's voltages and PV->PQ
  switches).
* ``acopf``: ``make_trans_params(case, solver_mode=2)`` (float32 interior-point AC-OPF each
  step; case 5 only by default: the dense KKT system is for small cases).
* ``uc``: ``UnitCommitmentEnv`` with ``make_uc_params(case, solver_mode=1, ...)`` (the TSO
  UC data of ``powerzoojax.grid.tasks.tso``, nominal loads).

CPU baseline, same run: PYPOWER solving the same per-step problem one env at a time
(``rundcopf`` for dcopf and uc, ``runpf`` for acpf, ``runopf`` for acopf) on the MATPOWER
tables the case was
built from, ``--baseline-calls`` calls, steps/s = calls / seconds.

    uv run python benchmarks/trans_modes_throughput.py --quick
    uv run python benchmarks/trans_modes_throughput.py --cases 5 118 --n-envs 1 64 256 1024
    uv run python benchmarks/trans_modes_throughput.py --kinds acpf --cases 118 --n-envs 1024 --horizon 8 --repeats 2
    uv run python benchmarks/trans_modes_throughput.py --kinds acopf --cases 5 --n-envs 1 64 --horizon 8
"""

import argparse
import os
import platform
import statistics
import time

import _host_devices  # sets the host-device count before JAX starts
from _record import record
import jax
import jax.numpy as jnp
import numpy as np

from powerzoojax.case import load_case
from powerzoojax.core import make_env_mesh, scan_rollout
from powerzoojax.grid import TransGridEnv, UnitCommitmentEnv, make_trans_params, make_uc_params
from powerzoojax.grid.tasks.tso import make_case14_with_uc_defaults


def make_workload(kind: str, case_id: str, horizon: int, pf_method: str = "fdlf", pf_warm_start: bool = False):
    case = load_case(case_id)
    if kind == "dcopf":
        return TransGridEnv(), make_trans_params(case, max_steps=horizon, solver_mode=1)
    if kind == "acpf":
        return TransGridEnv(), make_trans_params(
            case, max_steps=horizon, physics=1, pf_method=pf_method, pf_warm_start=pf_warm_start
        )
    if kind == "acopf":
        return TransGridEnv(), make_trans_params(case, max_steps=horizon, solver_mode=2)
    # The case's own unit-commitment columns (the TSO task's defaults where it has none).
    return UnitCommitmentEnv(), make_uc_params(make_case14_with_uc_defaults(case), max_steps=horizon, solver_mode=1)


def time_jax(kind, case_id, n_envs, horizon, repeats, pf_method="fdlf", scenario="uniform", mesh=None, warm=False):
    env, params = make_workload(kind, case_id, horizon, pf_method, warm)
    act_dim = env.action_space(params).shape[0]
    case = params.case
    lo, hi = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    span = np.maximum(hi - lo, 1e-9)
    # The case's schedule in action units (inverse of `denormalize_action`), units first.
    sched = np.clip(2.0 * (np.asarray(case.unit_pg, np.float64) - 0.5 * (lo + hi)) / span, -1.0, 1.0)
    sched_action = np.zeros(act_dim, np.float32)
    sched_action[: sched.size] = sched
    is_unit = np.zeros(act_dim, bool)
    is_unit[: sched.size] = True

    def draw_actions(k_act):
        u = jax.random.uniform(k_act, (n_envs, horizon, act_dim), minval=-1.0, maxval=1.0)
        if scenario == "uniform":
            return u
        # +-10 % of the unit range = +-0.2 in action units.
        return np.where(is_unit, 1.0, 0.0) * jnp.clip(sched_action + 0.2 * u, -1.0, 1.0) + np.where(is_unit, 0.0, 1.0) * u

    def envs(reset_keys, roll_keys, actions):
        _, states = jax.vmap(env.reset, in_axes=(0, None))(reset_keys, params)
        return jax.vmap(scan_rollout, in_axes=(None, 0, 0, None, 0))(env, roll_keys, states, params, actions)

    if mesh is not None:
        envs = _host_devices.shard_over_hosts(envs, mesh)

    @jax.jit
    def run(key):
        k_reset, k_act, k_roll = jax.random.split(key, 3)
        return envs(jax.random.split(k_reset, n_envs), jax.random.split(k_roll, n_envs), draw_actions(k_act))

    t0 = time.perf_counter()
    out = jax.block_until_ready(run(jax.random.PRNGKey(0)))
    first = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(run(jax.random.PRNGKey(r + 1)))
        times.append(time.perf_counter() - t0)
    info = out[-1]
    extra = ""
    if kind == "acpf":
        n_iter = np.asarray(info["pf_n_iter"])
        extra = (
            f"{pf_method}{', warm start' if warm else ''}, {scenario} set-points, converged {float(np.mean(np.asarray(info['pf_converged']))):.4f}, "
            f"iters mean {float(np.mean(n_iter)):.1f} max {int(np.max(n_iter))}"
        )
    else:
        extra = f"opf converged {float(np.mean(np.asarray(info['opf_converged']))):.3f}"
    return n_envs * horizon / statistics.median(times), first, extra


def ppc_of(case_id):
    path = os.path.join(os.path.dirname(load_case.__code__.co_filename), "data", "matpower", f"case{case_id}.npz")
    d = np.load(path, allow_pickle=True)
    ppc = {"version": "2", "baseMVA": float(d["base_mva"]), "bus": d["bus"].astype(float), "gen": d["gen"].astype(float),
           "branch": d["branch"].astype(float), "gencost": d["gencost"].astype(float)}
    return ppc


def time_pypower(kind, case_id, calls):
    from pypower.api import ppoption, rundcopf, runopf, runpf

    ppc = ppc_of(case_id)
    opt = ppoption(VERBOSE=0, OUT_ALL=0)
    rng = np.random.default_rng(0)
    pd0 = ppc["bus"][:, 2].copy()
    t0 = time.perf_counter()
    for _ in range(calls):
        ppc["bus"][:, 2] = pd0 * rng.uniform(0.9, 1.1)
        if kind == "acpf":
            runpf(ppc, opt)
        elif kind == "acopf":
            runopf(ppc, opt)
        else:
            rundcopf(ppc, opt)
    return calls / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="+", default=["5", "118"])
    ap.add_argument("--kinds", nargs="+", default=["dcopf", "acpf", "uc"], help="dcopf, acpf, uc, acopf")
    ap.add_argument("--pf-method", default="fdlf", choices=["fdlf", "newton"], help="AC power flow of the acpf kind")
    ap.add_argument(
        "--acpf-scenarios", nargs="+", default=["uniform", "schedule"], choices=["uniform", "schedule"],
        help="acpf set-points: uniform random in [p_min, p_max], or the case schedule +-10 %% of the range",
    )
    ap.add_argument(
        "--pf-warm-start", nargs="+", default=["off"], choices=["off", "on"],
        help="acpf: pf_warm_start off (cold solve every step), on (previous voltages and PV->PQ switches), or both",
    )
    ap.add_argument("--n-envs", nargs="+", type=int, default=[1, 64, 256, 1024])
    ap.add_argument("--horizon", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline-calls", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="N = 256, horizon 16, 2 repeats, 10 baseline calls")
    ap.add_argument("--host-devices", type=int, default=1,
                    help="split the envs over this many forced XLA host devices (one per core; see _host_devices.py)")
    args = ap.parse_args()
    mesh = make_env_mesh() if args.host_devices > 1 else None
    if args.quick:
        args.n_envs, args.horizon, args.repeats, args.baseline_calls = [256], 16, 2, 10
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, jax {jax.__version__}, {jax.devices()}")
    print("| workload | case | N | env-steps/s | first call s | PYPOWER steps/s | speed-up | note |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.kinds:
        for case_id in args.cases:
            if kind == "acopf" and case_id not in ("5", "14"):
                print(f"| acopf | {case_id} | - | skipped: dense interior point, small cases only | | | | |")
                continue
            base = time_pypower(kind, case_id, args.baseline_calls)
            for n in args.n_envs:
                for scenario, warm in (
                    [(s, w == "on") for s in args.acpf_scenarios for w in args.pf_warm_start] if kind == "acpf" else [("uniform", False)]
                ):
                    sps, first, extra = time_jax(kind, case_id, n, args.horizon, args.repeats, args.pf_method, scenario, mesh, warm)
                    print(f"| {kind} | {case_id} | {n} | {sps:,.0f} | {first:.1f} | {base:,.0f} | {sps / base:,.1f}x | {extra} |", flush=True)
                    name = {"dcopf": "TransGridEnv DC-OPF", "uc": "UnitCommitmentEnv", "acpf": "TransGridEnv AC PF",
                            "acopf": "TransGridEnv AC-OPF"}[kind]
                    record(name, f"case {case_id}, N={n}" + (f", {scenario}" if kind == "acpf" else ""), sps,
                           "env-steps/s", compile_s=first)


if __name__ == "__main__":
    main()
