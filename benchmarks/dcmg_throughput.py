"""Throughput of the data-centre microgrid (``DataCenterMicrogridEnv``, 288-step episodes)
against a single-env NumPy loop of the same dynamics, in the same run.

JAX workload per N (``--n-envs``): one jitted function resets N envs, draws uniform actions in
the action box ``(N, 288, 5)`` and runs ``jax.vmap(scan_rollout)``; it returns obs, rewards,
costs and dones of every step (the info dict is not returned). With ``--pre-drawn`` each N is
also timed with the action table drawn before the timed call and passed in ("env only"
rows): the draw is a Threefry loop over ``N · 288 · 5`` numbers, a few % of the call. ``env-steps/s`` =
``N · 288 / median wall time`` over ``--repeats`` calls after a warm-up call; ``first call s``
is trace + compile + one run.

NumPy baseline: the same physics (arrivals, 64-slot queue, greedy scheduler, IT/cooling
power, zone temperature, battery, PV, diesel, grid import, reward, costs), float64, one env,
written here independently of the package. It consumes the same per-step uniforms as the JAX
env (``jr.uniform(split(step_key)[0], (22,))``), so before timing it is checked once against
the JAX env on identical actions (rewards, costs and SOC over one episode); the result is
printed.

    uv run python benchmarks/dcmg_throughput.py --n-envs 256 --repeats 2 --single-thread   # target check
    uv run python benchmarks/dcmg_throughput.py --n-envs 256 --repeats 3 --pre-drawn       # + env-only row
    uv run python benchmarks/dcmg_throughput.py --quick
    uv run python benchmarks/dcmg_throughput.py --n-envs 1 16 256 4096 --markdown

``--single-thread`` pins the process to one CPU before JAX starts (less noise on a shared
machine; the wall-clock rate is then a one-core figure; see ``_xla_env.one_core``). ``--no-task-split`` compiles
without XLA:CPU's parallel-task partitioning (a compiler setting, the env is unchanged; see
``NO_TASK_SPLIT_FLAG``); ``--host-devices 2`` steps half the envs on each core.

    uv run python benchmarks/dcmg_throughput.py --n-envs 256 --repeats 5 --pre-drawn --host-devices 2 --no-task-split
"""

import argparse
import math
import os
import platform
import statistics
import sys
import time

# XLA:CPU's parallel-task pass splits every fused kernel it models as compute-heavy into
# partitions run on the intra-op thread pool. At these shapes the hand-off costs more than
# the work it spreads (measured 2026-12-01: the five split kernels of the step cost ≈ 40 µs each at
# N = 256 against ≈ 4 µs for comparable unsplit ones), and with ``--host-devices`` both
# cores are already busy with their own shard. A compiler setting: the env is unchanged.
NO_TASK_SPLIT_FLAG = "--xla_disable_hlo_passes=cpu-parallel-task-assigner"

import _xla_env  # noqa: E402  (process-wide settings, before the first JAX import)

if "--single-thread" in sys.argv:
    _xla_env.one_core()
if "--no-task-split" in sys.argv:
    _xla_env.add_xla_flags(NO_TASK_SPLIT_FLAG)

import _host_devices  # noqa: E402  (sets the host-device count before JAX starts)
from _record import record  # noqa: E402
import jax  # noqa: E402
import jax.random as jr  # noqa: E402
import numpy as np  # noqa: E402

from powerzoojax.core import make_env_mesh, scan_rollout  # noqa: E402
from powerzoojax.grid import DataCenterMicrogridEnv, make_dcmicrogrid_params  # noqa: E402

HORIZON = 288
DEFAULT_N_ENVS = (1, 16, 64, 256, 1024, 4096)
QUICK_N_ENVS = (1, 64, 256, 1024)


# ----------------------------------------------------------------------------- JAX


def random_actions(key, n_envs: int):
    """Uniform actions in the action box, ``(n_envs, HORIZON, 5)``."""
    u = jr.uniform(key, (n_envs, HORIZON, 5))
    return u.at[..., 3].set(2.0 * u[..., 3] - 1.0)


def make_collect(env, params, n_envs: int, pre_drawn: bool = False, mesh=None):
    """``collect(key)``, or ``collect(key, actions)`` with ``pre_drawn`` (the actions are then
    drawn outside the timed call: the env alone, not its random policy). With ``mesh`` the
    envs are split over its host devices (``--host-devices``)."""

    def envs(reset_keys, roll_keys, actions):
        _, states = jax.vmap(env.reset, in_axes=(0, None))(reset_keys, params)

        def one(state, k, acts):
            _, obs, rew, costs, done, _ = scan_rollout(env, k, state, params, acts)
            return obs, rew, costs, done

        return jax.vmap(one)(states, roll_keys, actions)

    if mesh is not None:
        envs = _host_devices.shard_over_hosts(envs, mesh)

    def collect(key, actions=None):
        k_reset, k_act, k_roll = jr.split(key, 3)
        if actions is None:
            actions = random_actions(k_act, n_envs)
        return envs(jr.split(k_reset, n_envs), jr.split(k_roll, n_envs), actions)

    if pre_drawn:
        return collect
    return lambda key: collect(key)


def time_jax(env, params, n_envs: int, repeats: int, pre_drawn: bool = False, mesh=None) -> dict:
    fn = jax.jit(make_collect(env, params, n_envs, pre_drawn, mesh))
    draw = jax.jit(lambda k: random_actions(k, n_envs))
    args = (lambda r: (jr.PRNGKey(r), jax.block_until_ready(draw(jr.PRNGKey(10_000 + r))))) if pre_drawn else (lambda r: (jr.PRNGKey(r),))
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args(0)))
    first = time.perf_counter() - t0
    times, cpu = [], []
    for r in range(repeats):
        a = args(r + 1)
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(fn(*a))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    med = statistics.median(times)
    # CPU seconds of this process per call: on a shared machine wall time also counts other
    # people's work, CPU time does not (it sums over this process's threads).
    med_cpu = statistics.median(cpu)
    return {"n_envs": n_envs, "pre_drawn": pre_drawn, "first_call_s": first, "median_s": med, "steps_per_s": n_envs * HORIZON / med,
            "cpu_s": med_cpu, "steps_per_cpu_s": n_envs * HORIZON / med_cpu}


# ----------------------------------------------------------------------------- NumPy


class NumpyDCMG:
    """Single-env float64 reference of the microgrid dynamics (the reference's DataCenter resource and microgrid env defaults)."""

    def __init__(self, params):
        p = params
        dc = p.dc
        g = lambda x: np.asarray(x, np.float64)  # noqa: E731
        self.dt = float(p.delta_t_hours)
        self.max_steps = p.max_steps
        self.n = int(dc.n_gpus)
        self.peak = int(dc.infer_gpu_peak)
        self.infer_prof = g(dc.infer_fraction_profile)
        self.temp_prof = g(dc.outdoor_temp_profile)
        self.pv_prof = g(p.pv_cf_profile)
        self.price = g(p.price_profile)
        self.dcp = {k: float(getattr(dc, k)) for k in (
            "gpu_idle_w", "gpu_active_w", "p_base_mw", "cop_ref", "cop_decay", "t_ref", "c_thermal_kwh_per_c",
            "ua_cooling_kw_per_c", "h_wall_kw_per_c", "t_set_min", "t_set_max", "t_initial", "t_critical", "p_aux_frac")}
        self.rate = 1.0 / g(dc.mean_interarrival_steps)
        self.gmin, self.gmax = g(dc.task_gpus_min), g(dc.task_gpus_max)
        self.dmin, self.dmax = g(dc.task_duration_min), g(dc.task_duration_max)
        self.slack, self.eta = g(dc.deadline_slack), g(dc.task_eta)
        self.mg = {k: float(getattr(p, k)) for k in (
            "batt_e_mwh", "batt_p_mw", "batt_eta_c", "batt_eta_d", "batt_soc_min", "batt_soc_max", "batt_soc_init",
            "pv_capacity_mw", "dg_p_max_mw", "dg_fuel_cost_per_mwh", "dg_ef_kg_per_kwh", "battery_deg_cost_per_mwh",
            "w_cost", "w_carbon", "grid_import_p_max_mw", "grid_carbon_kg_per_kwh", "terminal_soc_target",
            "terminal_soc_penalty")}
        k = np.arange(5)
        lf = np.array([math.lgamma(i + 1.0) for i in k])
        self.cdf = np.cumsum(np.exp(k[None, :] * np.log(self.rate[:, None]) - self.rate[:, None] - lf[None, :]), axis=1)
        self.reset()

    def reset(self):
        self.t = 0
        self.t_zone = self.dcp["t_initial"]
        self.soc = self.mg["batt_soc_init"]
        z = np.zeros(64, np.int64)
        self.gpus, self.deadline, self.duration, self.remaining, self.kind, self.status = z.copy(), z.copy(), z.copy(), z.copy(), z.copy(), z.copy()
        self.eta_slot = np.zeros(64)

    def _admit(self, cands, key, budget):
        order = sorted(cands, key=lambda i: (key[i], i))
        used = 0
        for i in order:
            if used + self.gpus[i] > budget:
                break
            used += self.gpus[i]
            self.status[i] = 2
            self.remaining[i] = self.duration[i]

    def step(self, action, u):
        d, m, t = self.dcp, self.mg, self.t
        a = np.clip(action, [0, 0, 0, -1, 0], 1)
        f = self.infer_prof[t % len(self.infer_prof)]
        t_out = self.temp_prof[t % len(self.temp_prof)]
        infer = min(int(np.floor(np.float32(self.peak) * np.float32(f))), self.n)
        t_set = d["t_set_min"] + a[2] * (d["t_set_max"] - d["t_set_min"])
        # arrivals
        counts = (u[:2, None] > self.cdf).sum(axis=1)
        ug, ud = u[2:12].reshape(2, 5), u[12:22].reshape(2, 5)
        g = np.minimum(self.gmin[:, None] + np.floor(ug * (self.gmax - self.gmin + 1)[:, None]), self.gmax[:, None]).astype(int)
        du = np.minimum(self.dmin[:, None] + np.floor(ud * (self.dmax - self.dmin + 1)[:, None]), self.dmax[:, None]).astype(int)
        new = [(0, j) for j in range(counts[0])] + [(1, j) for j in range(counts[1])]
        free = [i for i in range(64) if self.status[i] == 0]
        for (kind, j), i in zip(new, free):
            self.gpus[i], self.duration[i], self.kind[i] = g[kind, j], du[kind, j], kind
            self.deadline[i] = t + int(np.float32(du[kind, j]) * np.float32(self.slack[kind]))
            self.eta_slot[i], self.status[i], self.remaining[i] = self.eta[kind], 1, 0
        # scheduling
        slack = self.deadline - t - self.duration

        def avail():
            return max(self.n - infer - int(self.gpus[self.status == 2].sum()), 0)

        self._admit([i for i in range(64) if self.status[i] == 1 and slack[i] <= 0], self.deadline, avail())
        for kind, frac in ((0, a[0]), (1, a[1])):
            budget = int(np.float32(frac) * np.float32(avail()))
            self._admit([i for i in range(64) if self.status[i] == 1 and self.kind[i] == kind], slack, budget)
        run = self.status == 2
        task_w = float(np.sum(self.gpus[run] * (d["gpu_idle_w"] + (d["gpu_active_w"] - d["gpu_idle_w"]) * self.eta_slot[run])))
        active = min(infer + int(self.gpus[run].sum()), self.n)
        p_it = (infer * d["gpu_active_w"] * 0.5 + task_w + (self.n - active) * d["gpu_idle_w"]) / 1e6 + d["p_base_mw"]
        cop = d["cop_ref"] * np.clip(1 - d["cop_decay"] * max(t_out - d["t_ref"], 0), 0.4, 1.2)
        q_cool = d["ua_cooling_kw_per_c"] * max(self.t_zone - t_set, 0)
        p_dc = p_it * (1 + d["p_aux_frac"]) + q_cool / (1000 * cop)
        self.t_zone = float(np.clip(self.t_zone + self.dt * (1000 * p_it - q_cool + d["h_wall_kw_per_c"] * (t_out - self.t_zone)) / d["c_thermal_kwh_per_c"], 15, 45))
        # countdown and expiry
        self.remaining[run] = np.maximum(self.remaining[run] - 1, 0)
        finished = run & (self.remaining == 0)
        expired = (self.status == 1) & (t >= self.deadline)
        self.status[finished | expired] = 0
        # resources
        e, pr = m["batt_e_mwh"], m["batt_p_mw"]
        p_dis = np.clip((self.soc - m["batt_soc_min"]) * e * m["batt_eta_d"] / self.dt, 0, pr)
        p_chg = np.clip((m["batt_soc_max"] - self.soc) * e / (m["batt_eta_c"] * self.dt), 0, pr)
        p_b = float(np.clip(a[3] * pr, -p_chg, p_dis))
        dsoc = -p_b * self.dt / (m["batt_eta_d"] * e) if p_b >= 0 else -p_b * self.dt * m["batt_eta_c"] / e
        self.soc = float(np.clip(self.soc + dsoc, m["batt_soc_min"], m["batt_soc_max"]))
        p_pv = m["pv_capacity_mw"] * self.pv_prof[t % len(self.pv_prof)]
        p_dg = a[4] * m["dg_p_max_mw"]
        raw = p_b + p_pv + p_dg - p_dc
        p_grid = min(max(-raw, 0), m["grid_import_p_max_mw"])
        deficit = max(-(raw + p_grid), 0)
        done = t + 1 >= self.max_steps
        terminal = m["terminal_soc_penalty"] * (self.soc - m["terminal_soc_target"]) ** 2 if done else 0.0
        fuel = p_dg * self.dt * m["dg_fuel_cost_per_mwh"]
        r_cost = -(fuel + p_grid * self.dt * self.price[t % len(self.price)] + abs(p_b) * self.dt * m["battery_deg_cost_per_mwh"] + terminal)
        r_carbon = -(p_dg * self.dt * 1000 * m["dg_ef_kg_per_kwh"] + p_grid * self.dt * 1000 * m["grid_carbon_kg_per_kwh"])
        reward = -p_dc * self.dt + m["w_cost"] * r_cost + m["w_carbon"] * r_carbon
        costs = (expired.sum() / self.n, max(self.t_zone - d["t_critical"], 0) / (45 - d["t_critical"]), deficit / max(p_dc, 1e-6))
        soc = self.soc
        self.t += 1
        if done:
            self.reset()
        return reward, costs, soc, done


def step_uniforms(key, length: int) -> np.ndarray:
    """The uniforms the JAX env draws at each step of a rollout under ``key``."""
    keys = jr.split(key, length)
    return np.asarray(jax.vmap(lambda k: jr.uniform(jr.split(k)[0], (22,)))(keys), np.float64)


def check_numpy_against_jax(env, params) -> str:
    key = jr.PRNGKey(42)
    u = jr.uniform(jr.PRNGKey(7), (HORIZON, 5))
    actions = u.at[:, 3].set(2.0 * u[:, 3] - 1.0)
    _, state = env.reset(key, params)
    _, obs, rew, costs, done, info = jax.jit(lambda k, s, a: scan_rollout(env, k, s, params, a))(key, state, actions)
    ref = NumpyDCMG(params)
    uni = step_uniforms(key, HORIZON)
    out = [ref.step(np.asarray(actions[t], np.float64), uni[t]) for t in range(HORIZON)]
    r = np.array([o[0] for o in out])
    c = np.array([o[1] for o in out])
    soc = np.array([o[2] for o in out])
    ok = (np.allclose(r, np.asarray(rew), rtol=1e-4, atol=1e-4 * np.abs(r).max())
          and np.allclose(c, np.asarray(costs), rtol=1e-4, atol=1e-5)
          and np.allclose(soc, np.asarray(info["soc"]), atol=1e-5))
    return f"NumPy loop vs JAX env over one {HORIZON}-step episode: {'MATCH' if ok else 'MISMATCH'} (max |Δreward| {np.abs(r - np.asarray(rew)).max():.2e})"


def time_numpy(params, episodes: int) -> float:
    ref = NumpyDCMG(params)
    rng = np.random.default_rng(0)
    n = episodes * HORIZON
    acts = rng.uniform(size=(n, 5))
    acts[:, 3] = 2 * acts[:, 3] - 1
    uni = rng.uniform(size=(n, 22))
    c0, t0 = time.process_time(), time.perf_counter()
    for t in range(n):
        ref.step(acts[t], uni[t])
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-envs", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help=f"N in {QUICK_N_ENVS}, 3 repeats, 2 NumPy episodes")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--single-thread", action="store_true", help="pin the process to one CPU (set before JAX starts)")
    parser.add_argument("--pre-drawn", action="store_true",
                        help="also time each N with the actions drawn outside the timed call (the env alone)")
    parser.add_argument("--no-task-split", action="store_true",
                        help="compile without XLA:CPU's parallel-task partitioning "
                             f"({NO_TASK_SPLIT_FLAG}; set before JAX starts)")
    parser.add_argument("--host-devices", type=int, default=1,
                        help="split the envs over this many forced XLA host devices (one per core; see _host_devices.py)")
    args = parser.parse_args()
    n_envs = args.n_envs or (QUICK_N_ENVS if args.quick else DEFAULT_N_ENVS)
    repeats = 3 if args.quick else args.repeats
    env = DataCenterMicrogridEnv()
    mesh = make_env_mesh() if args.host_devices > 1 else None
    params = make_dcmicrogrid_params(grid_import_p_max_mw=1.5, price_profile=np.linspace(50, 250, HORIZON))
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.lower().startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"machine: {cpu}, {len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f}; "
          f"jax {jax.__version__} {jax.default_backend()}, {jax.device_count()} device(s); XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    print(check_numpy_against_jax(env, params))
    np_sps, np_cpu = time_numpy(params, 2 if args.quick else 5)
    print(f"NumPy single-env loop: {np_sps:,.0f} env-steps/s wall, {np_cpu:,.0f} per CPU-second")
    rows = []
    for n, pre in [(n, pre) for n in n_envs for pre in ((False, True) if args.pre_drawn else (False,))]:
        res = time_jax(env, params, n, repeats, pre, mesh)
        rows.append(res)
        record("DC microgrid", f"N={n}{', pre-drawn actions' if pre else ''}", res["steps_per_s"], "env-steps/s",
               compile_s=res["first_call_s"])
        print(f"N={n:5d}{' env only' if pre else ''}  first call {res['first_call_s']:6.1f} s  median {res['median_s'] * 1e3:8.1f} ms  "
              f"{res['steps_per_s']:12,.0f} env-steps/s  ({res['steps_per_s'] / np_sps:,.0f}x NumPy)  "
              f"{res['steps_per_cpu_s']:12,.0f} env-steps per CPU-second ({res['steps_per_cpu_s'] / np_cpu:,.0f}x)")
    if args.markdown:
        print("\n| N envs | first call s | env-steps/s (wall) | vs NumPy | env-steps per CPU-s | vs NumPy |\n"
              "|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['n_envs']}{' (pre-drawn actions)' if r['pre_drawn'] else ''} | {r['first_call_s']:.1f} | {r['steps_per_s']:,.0f} | {r['steps_per_s'] / np_sps:,.0f}x "
                  f"| {r['steps_per_cpu_s']:,.0f} | {r['steps_per_cpu_s'] / np_cpu:,.0f}x |")
        print(f"\nNumPy single-env loop: {np_sps:,.0f} env-steps/s wall, {np_cpu:,.0f} per CPU-second")


if __name__ == "__main__":
    main()
