"""Throughput of the distribution envs (DistGridEnv on case33bw and case141,
DistGrid3PhaseEnv, the DSO and DERs task envs) against pandapower ``runpp`` stepping the
same feeder one step at a time, measured in the same run.

Workload per (env, N): one jitted function resets N envs (``batch_reset``) and runs
``vmap(scan_rollout)`` (the one rollout kernel) over 48 steps of uniform random actions
``(N, 48, action_dim)``, in one of two harness configurations (``--harness``):

* ``table`` (the default): the actions are a fixed table drawn once, before timing, and
  passed in; the call returns what a trainer consumes (per-step obs, reward, costs, done —
  not the ``info`` diagnostics). This measures the env, not the harness.
* ``legacy`` (the configuration of every figure taken up to 2026-11-30 19:18 UTC, kept
  so those figures stay comparable): the actions are drawn inside the timed call with
  ``jax.random.uniform`` (threefry on ``N·48·action_dim`` values costs about as much as
  the env steps at these sizes) and every output, ``info`` included, is returned.

``env-steps/s = N·48 / median seconds`` over ``--repeats`` timed calls after a warm-up;
``first call s`` is the first call (trace + compile + run).

Baseline: pandapower ``runpp`` (Newton–Raphson, its default) on
``pandapower.networks.case33bw()`` with the loads rescaled each step, one env, one step at
a time: steps/s = steps / wall time. It is the per-step CPU cost a non-JAX env would pay.

``--quick`` measures only the two throughput targets (DistGridEnv 33bw at N = 4096, the DSO
env at N = 1024), in both harness configurations, beside the pandapower baseline. Run from the repository root
(one core)::

    taskset -c 0 uv run python benchmarks/dist_throughput.py --quick --markdown
    uv run python benchmarks/dist_throughput.py --n-envs 1 64 1024 4096 --markdown

``--host-devices K`` splits the CPU into K XLA host devices
(``--xla_force_host_platform_device_count``, set before JAX starts) and runs the rollout
``shard_map``-ped over them: each device steps its ``N / K`` envs (its own sweep loops)
on its own thread. The figures are then "on K cores"; without it the program is one
device, as in every earlier figure.

``--no-ynn`` compiles without XLA:CPU's YNNPACK fusions (``NO_YNN_FLAG``, a compiler
setting; the env is unchanged).

``--malloc-keep`` sets glibc's ``mallopt`` so that every allocation comes from the heap and
freed memory is kept (one arena, ``M_MMAP_THRESHOLD`` 1 GiB, ``M_TRIM_THRESHOLD`` max) before
JAX starts. glibc serves blocks above 32 MiB with a fresh ``mmap`` per call, so each call's
obs buffer (``(4096, 48, 165)`` float32, 130 MB, at the 33bw target) is first-touched page
by page: at 1 thread the rollout's zero-fill of that buffer took 178 ms per call in an XLA
trace, 8 ms in reused heap memory. In process CPU time (same process, calls alternated,
under contention) that is −9 to −22 % on one device, −2 to −4 % on two (each device's
buffer is half the size); every env output is still computed and returned. Any
long-running trainer can do the same (or use another allocator). Off by default, so
earlier figures stay comparable.
"""

import argparse
import ctypes
import ctypes.util
import os
import platform
import statistics
import sys
import time


def keep_freed_memory() -> bool:
    """glibc: serve large blocks from the heap and keep freed memory (see the module docstring).

    One arena: XLA allocates its buffers on worker threads, whose arenas are ``mmap``-ed
    heaps of at most 64 MiB, so a 130 MB buffer would still get a fresh mapping per call.
    Must run before JAX starts its threads."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8
    return all(
        libc.mallopt(option, value)
        for option, value in ((m_arena_max, 1), (m_mmap_threshold, 1 << 30), (m_trim_threshold, 2**31 - 1))
    )


MALLOC_KEEP = "--malloc-keep" in sys.argv and keep_freed_memory()

import _xla_env  # noqa: E402  (process-wide settings, before the first JAX import)

# Compile without XLA:CPU's YNNPACK fusions (dots, reductions and elementwise chains it
# would hand to YNNPACK are then XLA's own kernels). Measured 2026-12-01, 33bw N = 4096: +15 % per
# CPU-second on one core and +11–16 % wall on two host devices; outputs equal to float32
# round-off (max |Δobs| 7e-7). A process-wide compiler setting, so off by default.
NO_YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type="
if "--no-ynn" in sys.argv:  # must precede the first JAX import
    _xla_env.add_xla_flags(NO_YNN_FLAG)

import _host_devices  # noqa: E402  (sets the host-device count before JAX starts)
from _record import record  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

from powerzoojax.case import load_case  # noqa: E402
from powerzoojax.core import make_env_mesh  # noqa: E402
from powerzoojax.utils.jax_utils import batch_reset, scan_rollout  # noqa: E402

HORIZON = 48


def _dist(case_id):
    from powerzoojax.grid import DistGridEnv, make_dist_params

    return DistGridEnv(), make_dist_params(load_case(case_id), max_steps=HORIZON)


def _dist3():
    """case33bw as a balanced three-phase feeder (diagonal per-phase impedances, loads ⅓ per phase)."""
    from powerzoojax.grid import DistGrid3PhaseEnv, make_dist_3phase_params
    from powerzoojax.physics import make_radial_network

    case = load_case("33bw")
    net = make_radial_network(case)
    z = np.asarray(net.r_pu) + 1j * np.asarray(net.x_pu)
    z3 = np.einsum("l,ij->lij", z, np.eye(3))
    p = np.repeat(np.asarray(case.node_pd)[1:] / case.base_mva / 3.0, 3)
    q = np.repeat(np.asarray(case.node_qd)[1:] / case.base_mva / 3.0, 3)
    params = make_dist_3phase_params(
        case.n_nodes, np.asarray(net.send_idx), np.asarray(net.recv_idx), z3, np.tile(p, (HORIZON, 1)),
        np.tile(q, (HORIZON, 1)), max_steps=HORIZON, base_mva=float(case.base_mva),
    )
    return DistGrid3PhaseEnv(), params


def _dso():
    from powerzoojax.grid.tasks.dso import DSOTask

    task = DSOTask()
    return task.make_env(), task.make_params("iid", 0)


def _ders():
    from powerzoojax.grid.tasks.ders import DERsTask

    task = DERsTask()
    return task.make_env(), task.make_params("iid", 0)


WORKLOADS = {
    "DistGridEnv 33bw": lambda: _dist("33bw"),
    "DistGridEnv 141": lambda: _dist("141"),
    "DistGrid3PhaseEnv 33bw": _dist3,
    "DSO (33bw + 6 flex)": _dso,
    "DERs (141 + 12 devices)": _ders,
}

# The throughput targets: 33bw N = 4096 >= 1 M env-steps/s, DSO N = 1024 >= 0.6 M.
QUICK = (("DistGridEnv 33bw", 4096), ("DSO (33bw + 6 flex)", 1024))


HARNESSES = ("table", "legacy")


def make_collect(env, params, n_envs, harness="legacy", mesh=None):
    """The timed function and its first argument builder (see the module docstring).
    With ``mesh``, the rollout is ``shard_map``-ped over its devices: each runs the same
    program on its ``n_envs / devices`` envs, with no cross-device step (a sharding
    constraint instead would make every sweep loop's stopping test a cross-device
    reduction)."""
    n_act = int(np.prod(env.action_space(params).shape))

    def envs(reset_keys, roll_keys, actions):
        obs0, states0 = batch_reset(env, reset_keys, params)
        return jax.vmap(lambda s, k, a: scan_rollout(env, k, s, params, a))(states0, roll_keys, actions)

    if mesh is not None:
        envs = _host_devices.shard_over_hosts(envs, mesh)

    def rollout(key, actions):
        k_reset, k_roll = jax.random.split(key)
        return envs(jax.random.split(k_reset, n_envs), jax.random.split(k_roll, n_envs), actions)

    if harness == "table":
        table = jax.random.uniform(jax.random.PRNGKey(12345), (n_envs, HORIZON, n_act), minval=-1.0, maxval=1.0)
        if mesh is not None:
            table = jax.device_put(table, NamedSharding(mesh, PartitionSpec(mesh.axis_names[0])))

        def collect(key, actions):
            _, obs, reward, costs, done, _ = rollout(key, actions)
            return obs, reward, costs, done

        return collect, lambda key: (key, table)

    def collect(key):
        k_act, k_run = jax.random.split(key)
        actions = jax.random.uniform(k_act, (n_envs, HORIZON, n_act), minval=-1.0, maxval=1.0)
        return rollout(k_run, actions)

    return collect, lambda key: (key,)


def measure(env, params, n_envs, repeats, harness="legacy", mesh=None):
    collect, args = make_collect(env, params, n_envs, harness, mesh)
    fn = jax.jit(collect)
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args(jax.random.PRNGKey(0))))
    compile_s = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        call_args = args(jax.random.PRNGKey(r + 1))
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*call_args))
        times.append(time.perf_counter() - t0)
    return compile_s, n_envs * HORIZON / statistics.median(times)


def pandapower_steps_per_s(n_steps):
    import pandapower as pp
    import pandapower.networks as pn

    net = pn.case33bw()
    p0, q0 = net.load.p_mw.to_numpy().copy(), net.load.q_mvar.to_numpy().copy()
    rng = np.random.default_rng(0)
    pp.runpp(net, numba=False)
    t0 = time.perf_counter()
    for _ in range(n_steps):
        scale = rng.uniform(0.8, 1.2, p0.shape)
        net.load.p_mw = p0 * scale
        net.load.q_mvar = q0 * scale
        pp.runpp(net, numba=False)
        _ = net.res_bus.vm_pu.to_numpy(), net.res_line.pl_mw.sum()
    return n_steps / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--quick", action="store_true",
        help="only the throughput targets (33bw N=4096, DSO N=1024), 3 repeats, 20 pandapower steps",
    )
    ap.add_argument("--harness", nargs="+", choices=HARNESSES, default=None,
                    help="harness configurations to measure (default: table; --quick: both)")
    ap.add_argument("--n-envs", type=int, nargs="+", default=[1, 64, 1024, 4096])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--host-devices", type=int, default=1,
                    help="shard the env axis over this many forced XLA host devices (one per core)")
    ap.add_argument("--malloc-keep", action="store_true",
                    help="glibc mallopt: big buffers from the heap, freed memory kept (see module docstring)")
    ap.add_argument("--no-ynn", action="store_true",
                    help=f"compile without XLA:CPU's YNNPACK fusions ({NO_YNN_FLAG}; see NO_YNN_FLAG)")
    args = ap.parse_args()
    malloc_keep = MALLOC_KEEP
    if args.malloc_keep and not malloc_keep:
        print("# --malloc-keep: mallopt refused (not glibc?); default allocator")
    mesh = make_env_mesh() if args.host_devices > 1 else None
    plan = [(name, n) for name in args.workloads for n in args.n_envs]
    repeats, pp_steps = args.repeats, 100
    harnesses = args.harness or ["table"]
    if args.quick:
        plan, repeats, pp_steps = list(QUICK), 3, 20
        harnesses = args.harness or list(HARNESSES)
    cpu = platform.processor() or platform.machine()
    print(f"# machine: {cpu}, {os.cpu_count()} cores, jax {jax.__version__}, backend {jax.default_backend()}, "
          f"{len(jax.devices())} device(s), load avg {os.getloadavg()[0]:.1f}, "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}, malloc-keep {malloc_keep}")
    pp_rate = pandapower_steps_per_s(pp_steps)
    print(f"pandapower runpp case33bw: {pp_rate:.1f} steps/s (one env, one step at a time)")
    rows = []
    built = {}
    for name, n in plan:
        if name not in built:
            built[name] = WORKLOADS[name]()
        env, params = built[name]
        for harness in harnesses:
            compile_s, rate = measure(env, params, n, repeats, harness, mesh)
            rows.append((name, n, harness, compile_s, rate, rate / pp_rate))
            record("distribution", f"{name}, N={n}, {harness} harness", rate, "env-steps/s", compile_s=compile_s)
            print(f"{name:26s} N={n:5d}  {harness:6s}  first call {compile_s:7.1f} s  {rate:12.0f} env-steps/s  "
                  f"{rate / pp_rate:9.1f}x pandapower", flush=True)
    if args.markdown:
        print("\n| env | N | harness | first call s | env-steps/s | × pandapower runpp |")
        print("|---|---:|---|---:|---:|---:|")
        for name, n, h, c, r, x in rows:
            print(f"| {name} | {n} | {h} | {c:.1f} | {r:,.0f} | {x:,.0f} |")


if __name__ == "__main__":
    main()
