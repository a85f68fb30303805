"""Throughput of the seed's batched rollout (seed 02), against a plain NumPy loop.

What is measured, per case (``--cases``, default 5 and 118) and batch size N
(``--n-envs``, default 1 16 64 256 1024 4096):

* the workload: ``TransGridEnv()`` with ``make_trans_params(load_case(case), max_steps=48)``;
  one jitted function does ``batch_reset`` of N envs, draws uniform random actions in
  [-1, 1] of shape ``(N, horizon, n_units)`` and runs ``jax.vmap(scan_rollout)`` over the
  envs. It returns *every* output (final states, obs, rewards, costs, dones, info), so
  the whole trajectory is materialised, as a training loop would need it;
* ``first call s``: wall time of the first call of a fresh ``jax.jit`` (trace + lower +
  XLA compile + one run), measured before anything else of this configuration;
* ``compile s``: ``jax.jit(...).lower(key)`` plus ``.compile()`` on a second, fresh jit of
  the same workload (the JSON has the two parts separately). It runs after the first
  call, so JAX's own internal caches are warm: it is the program's compile cost, the first
  call is what a user waits for;
* ``env-steps/s``: after one warm-up call, ``--repeats`` calls, each with a new key, each
  timed to ``jax.block_until_ready``; ``N · horizon / median seconds``;
* ``peak RSS MB``: ``ru_maxrss`` (MiB) of a fresh child process that ran only that one
  configuration (the script re-runs itself with a hidden ``--single CASE N``), so it is
  the configuration's own peak including the Python + JAX baseline, not the sweep's;
* ``vs NumPy loop``: ratio to a single-env NumPy (float64) loop stepping the same DC
  physics (denormalised action, slack-bus balancing, nodal injection, flows = PTDF ·
  injection, thermal overload, generation cost, observation, auto-reset), written here
  independently of the package. Before timing, the loop is checked once against the JAX
  env on the same actions (rewards, costs, dones, obs and line flows over two episodes;
  ``np.allclose`` with rtol 1e-4 and atol 1e-4 x the field's largest magnitude, since the
  env is float32) and the check is printed, so the baseline is the same physics.

Run from the repository root::

    uv run python benchmarks/rollout_throughput.py --markdown
    uv run python benchmarks/rollout_throughput.py --cases 5 --n-envs 1 16 --repeats 2
    uv run python benchmarks/rollout_throughput.py --json results.json

Numbers depend on the machine and on what else runs on it: run the full sweep on a
quiet machine. The machine (CPU model, cores, JAX version, devices, PRNG settings) is
printed first. ``--jax-config NAME=VALUE`` (repeatable) applies ``jax.config.update`` in
the parent and in every child, to measure e.g. ``jax_threefry_partitionable=false``; the
default is JAX's own configuration, i.e. the seed's workload as a user runs it.
"""

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from powerzoojax.case import load_case
from powerzoojax.core import rollout
from powerzoojax.envs import TransGridEnv, make_trans_params
from powerzoojax.utils.jax_utils import batch_reset, scan_rollout

DEFAULT_CASES = ("5", "118")
DEFAULT_N_ENVS = (1, 16, 64, 256, 1024, 4096)
MAX_STEPS = 48
CHECK_RTOL = 1e-4


# ----------------------------------------------------------------------------- machine


def machine_info() -> dict:
    """CPU model, core count, JAX version and devices of this process."""
    cpu_model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    import jaxlib

    return {
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
        "prng_impl": str(jax.config.jax_default_prng_impl),
    }


# ----------------------------------------------------------------------------- JAX workload


def build(case_id: str):
    """``(case, env, params)`` of the seed's workload."""
    case = load_case(case_id)
    env = TransGridEnv()
    params = make_trans_params(case, max_steps=MAX_STEPS)
    return case, env, params


def draw(key, n_envs: int, horizon: int, n_units: int):
    """The seed's key handling: reset keys, actions ``(N, horizon, n_units)``, rollout keys."""
    key, k_reset, k_actions, k_roll = jax.random.split(key, 4)
    env_keys = jax.random.split(k_reset, n_envs)
    actions = jax.random.uniform(k_actions, (n_envs, horizon, n_units), minval=-1.0, maxval=1.0)
    rollout_keys = jax.random.split(k_roll, n_envs)
    return env_keys, actions, rollout_keys


def make_collect(env, params, n_envs: int, horizon: int):
    """A fresh (untraced) Python function of the workload; wrap it in ``jax.jit``.

    Each call builds a new closure, so two jits of two results share no trace cache.
    """
    n_units = env.action_dim(params)

    def collect(key):
        env_keys, actions, rollout_keys = draw(key, n_envs, horizon, n_units)
        obs0, states0 = batch_reset(env, env_keys, params)

        def single_rollout(state, k, action_seq):
            return scan_rollout(env, k, state, params, action_seq)

        final_states, obs, rewards, costs, dones, info = jax.vmap(single_rollout)(
            states0, rollout_keys, actions
        )
        return obs0, final_states, obs, rewards, costs, dones, info

    return collect


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far [MiB] (Linux reports KiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024.0 if sys.platform != "darwin" else rss / 2**20


def run_single(case_id: str, n_envs: int, horizon: int, repeats: int) -> dict:
    """Measure one configuration in this process (meant to be a fresh one)."""
    case, env, params = build(case_id)
    jax.block_until_ready(jnp.zeros(()) + 1.0)  # backend up before anything is timed
    baseline_rss = peak_rss_mb()

    # 1. First call of a fresh jit: what a user waits for.
    fn = jax.jit(make_collect(env, params, n_envs, horizon))
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(jax.random.PRNGKey(0)))
    first_call_s = time.perf_counter() - t0
    del out

    # 2. Ahead-of-time lower + compile of a second fresh jit of the same workload.
    aot = jax.jit(make_collect(env, params, n_envs, horizon))
    t0 = time.perf_counter()
    lowered = aot.lower(jax.random.PRNGKey(0))
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    trace_lower_s, xla_compile_s = t1 - t0, t2 - t1
    del lowered, compiled, aot

    # 2b. The env's share of that: the same rollout with keys and actions as inputs
    # (no random draw inside), lowered and compiled on a fresh jit.
    env_keys, actions, rollout_keys = jax.block_until_ready(
        jax.jit(lambda k: draw(k, n_envs, horizon, env.action_dim(params)))(jax.random.PRNGKey(0))
    )

    def rollout_only(env_keys, actions, rollout_keys):
        _, states0 = batch_reset(env, env_keys, params)
        return jax.vmap(lambda s, k, a: scan_rollout(env, k, s, params, a))(states0, rollout_keys, actions)

    t0 = time.perf_counter()
    jax.jit(rollout_only).lower(env_keys, actions, rollout_keys).compile()
    rollout_compile_s = time.perf_counter() - t0
    del env_keys, actions, rollout_keys

    # 3. Steady state: one warm-up, then `repeats` timed calls with new keys.
    keys = [jax.random.PRNGKey(i) for i in range(1, repeats + 2)]
    jax.block_until_ready(keys)
    out = jax.block_until_ready(fn(keys[0]))
    del out
    times = []
    for k in keys[1:]:
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(k))
        times.append(time.perf_counter() - t0)
        del out  # one call's outputs alive at a time
    median_s = statistics.median(times)
    return {
        "case": case_id,
        "n_envs": n_envs,
        "horizon": horizon,
        "repeats": repeats,
        "n_nodes": case.n_nodes,
        "n_lines": case.n_lines,
        "n_units": case.n_units,
        "n_loads": case.n_loads,
        "obs_dim": env.obs_dim(params),
        "first_call_s": first_call_s,
        "trace_lower_s": trace_lower_s,
        "xla_compile_s": xla_compile_s,
        "compile_s": trace_lower_s + xla_compile_s,
        "rollout_compile_s": rollout_compile_s,
        "times_s": times,
        "median_s": median_s,
        "min_s": min(times),
        "env_steps_per_s": n_envs * horizon / median_s,
        "baseline_rss_mb": baseline_rss,
        "peak_rss_mb": peak_rss_mb(),
        "backend": jax.default_backend(),
        "threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
    }


def run_child(case_id: str, n_envs: int, horizon: int, repeats: int, jax_config=()) -> dict:
    """Run one configuration in a fresh interpreter and parse its JSON line."""
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--single",
        case_id,
        str(n_envs),
        "--horizon",
        str(horizon),
        "--repeats",
        str(repeats),
        *(f"--jax-config={item}" for item in jax_config),
    ]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        return {
            "case": case_id,
            "n_envs": n_envs,
            "error": f"child exited with {proc.returncode}",
            "stderr_tail": tail,
        }
    return json.loads(lines[-1])


# ----------------------------------------------------------------------------- NumPy baseline


class NumpyDCEnv:
    """One TransGridEnv (DC mode) in plain NumPy float64, stepped from Python.

    Built from the case arrays (PTDF over nodes, node maps, unit limits and costs, line
    limits) and the params' load profiles / weights; the flows are ``PTDF · nodal
    injection``, not the package's pre-folded operators.
    """

    def __init__(self, case, params):
        f64 = lambda x: np.asarray(x, np.float64)  # noqa: E731
        self.ptdf = f64(case.ptdf)  # (L, N)
        self.a_units = f64(case.nodes_units_map)  # (N, G)
        self.a_loads = f64(case.nodes_loads_map)  # (N, D)
        n_nodes = self.ptdf.shape[1]
        self.slack_node = np.zeros(n_nodes)
        self.slack_node[case.slack_bus_idx] = 1.0
        on_slack = self.a_units[case.slack_bus_idx]
        self.slack_w = on_slack / on_slack.sum() if on_slack.sum() > 0 else on_slack
        self.p_min, self.p_max = f64(case.unit_p_min), f64(case.unit_p_max)
        self.a3 = f64(case.unit_cost_a) / 3.0
        self.b2 = f64(case.unit_cost_b) / 2.0
        self.c = f64(case.unit_cost_c)
        self.cap, self.floor = f64(case.line_cap), f64(case.line_floor)
        self.profiles = f64(params.load_profiles)
        self.reward_scale = float(params.reward_scale)
        self.thermal_w = float(params.cost_thermal_weight)
        self.max_steps = params.max_steps
        self.steps_per_day = params.steps_per_day
        self.inv_line = 1.0 / np.maximum(np.abs(self.cap), 1.0)
        self.inv_unit = 1.0 / np.maximum(self.p_max, 1.0)
        self.inv_total = 1.0 / max(float(self.p_max.sum()), 1.0)
        self.t = 0
        self.unit_power = self.flows = None

    def _flow(self, dispatch, load):
        total_load = load.sum()
        unit_power = dispatch + (total_load - dispatch.sum()) * self.slack_w
        residual = unit_power.sum() - total_load
        injection = self.a_units @ unit_power - self.a_loads @ load - residual * self.slack_node
        return unit_power, self.ptdf @ injection

    def _obs(self):
        load = self.profiles[self.t % len(self.profiles)]
        phi = 2.0 * math.pi / max(self.steps_per_day, 1) * self.t
        return np.concatenate(
            [
                self.flows * self.inv_line,
                load * self.inv_total,
                self.unit_power * self.inv_unit,
                [math.sin(phi), math.cos(phi)],
            ]
        )

    def reset(self):
        load = self.profiles[0]
        headroom = self.p_max - self.p_min
        total_h = headroom.sum()
        remaining = np.clip(load.sum() - self.p_min.sum(), 0.0, total_h)
        share = headroom / max(total_h, 1e-12) if total_h > 0 else np.zeros_like(headroom)
        dispatch = np.clip(self.p_min + remaining * share, self.p_min, self.p_max)
        self.t = 0
        self.unit_power, self.flows = self._flow(dispatch, load)
        return self._obs()

    def step(self, action):
        load = self.profiles[self.t % len(self.profiles)]
        a = np.clip(action, -1.0, 1.0)
        dispatch = 0.5 * (self.p_min + self.p_max) + 0.5 * a * (self.p_max - self.p_min)
        p, flows = self._flow(dispatch, load)
        viol = np.maximum(flows - self.cap, 0.0) + np.maximum(self.floor - flows, 0.0)
        thermal = self.thermal_w * viol.sum()
        n_viol = int((viol > 0).sum())
        gen_cost = float((((self.a3 * p + self.b2) * p + self.c) * p).sum())
        balance = float((np.maximum(p - self.p_max, 0.0) + np.maximum(self.p_min - p, 0.0)).sum())
        costs = np.array([thermal, 0.0, balance, 0.0])
        reward = -self.reward_scale * gen_cost
        self.t += 1
        self.unit_power, self.flows = p, flows
        done = self.t >= self.max_steps
        if done:
            obs = self.reset()
        else:
            obs = self._obs()
        info = {
            "gen_cost": gen_cost,
            "n_violations": n_viol,
            "is_safe": n_viol == 0,
            "cost_sum": costs.sum(),
        }
        return obs, reward, costs, done, info


def numpy_rollout(np_env: NumpyDCEnv, actions: np.ndarray):
    """Step ``np_env`` through ``actions (T, G)`` from a reset; stacked outputs + flows."""
    n_steps = actions.shape[0]
    obs = np_env.reset()
    obs_t = np.empty((n_steps, obs.shape[0]))
    rew_t = np.empty(n_steps)
    cost_t = np.empty((n_steps, 4))
    done_t = np.empty(n_steps, bool)
    flow_t = np.empty((n_steps, np_env.flows.shape[0]))
    gen_t = np.empty(n_steps)
    for t in range(n_steps):
        obs_t[t], rew_t[t], cost_t[t], done_t[t], info = np_env.step(actions[t])
        flow_t[t] = np_env.flows
        gen_t[t] = info["gen_cost"]
    return obs_t, rew_t, cost_t, done_t, flow_t, gen_t


def check_numpy_against_jax(case, env, params, horizon: int) -> dict:
    """Same actions through the JAX env (one env of the benchmarked function) and NumPy."""
    n_steps = max(horizon, 2 * MAX_STEPS)  # at least one auto-reset inside
    key = jax.random.PRNGKey(12345)
    collect = jax.jit(make_collect(env, params, 1, n_steps))
    _, _, obs, rewards, costs, dones, info = collect(key)
    _, actions, _ = draw(key, 1, n_steps, case.n_units)

    def flows_scan(actions_1):  # per-step state flows, which the rollout does not return
        _, state0 = env.reset(key, params)

        def step_flows(k, s, a):
            _, s, *_ = env.step(k, s, a, params)
            return s.line_flow_mw, s

        return rollout(step_flows, key, state0, actions_1)[2][0]

    jax_flows = np.asarray(jax.jit(flows_scan)(actions[0]), np.float64)
    ref = numpy_rollout(NumpyDCEnv(case, params), np.asarray(actions[0], np.float64))
    got = (obs[0], rewards[0], costs[0], dones[0], jax_flows, info["gen_cost"][0])
    names = ("obs", "rewards", "costs", "dones", "line_flows", "gen_cost")
    result = {"n_steps": n_steps, "rtol": CHECK_RTOL, "fields": {}}
    ok = True
    for name, g, r in zip(names, got, ref):
        g = np.asarray(g, np.float64) if name != "dones" else np.asarray(g)
        if name == "dones":
            same = bool(np.array_equal(g, r))
            result["fields"][name] = {"ok": same}
        else:
            # atol at rtol x the field's scale: entries that cancel to ~0 (a flow on a
            # lightly loaded line, cos 90 deg in the time features) carry float32
            # rounding of the field's magnitude, not of their own.
            scale = max(float(np.abs(r).max()), 1.0)
            same = bool(np.allclose(g, r, rtol=CHECK_RTOL, atol=CHECK_RTOL * scale))
            err = np.abs(g - r)
            result["fields"][name] = {
                "ok": same,
                "scale": scale,
                "max_abs_err": float(err.max()),
                "max_err_over_scale": float(err.max() / scale),
            }
        ok &= same
    result["ok"] = ok
    return result


def time_numpy(case, params, n_steps: int, repeats: int) -> dict:
    """env-steps/s of the NumPy loop (median of ``repeats`` loops of ``n_steps``)."""
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1.0, 1.0, (n_steps, case.n_units))
    np_env = NumpyDCEnv(case, params)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        numpy_rollout(np_env, actions)
        times.append(time.perf_counter() - t0)
    median_s = statistics.median(times)
    return {
        "n_steps": n_steps,
        "times_s": times,
        "median_s": median_s,
        "env_steps_per_s": n_steps / median_s,
    }


# ----------------------------------------------------------------------------- output


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def print_report(machine: dict, baselines: dict, checks: dict, rows: list, markdown: bool) -> None:
    cores = machine["cpu_count"]
    if machine["cpu_affinity"] not in (None, cores):
        cores = f"{cores} ({machine['cpu_affinity']} usable)"
    head = [
        f"CPU: {machine['cpu_model']}, {cores} cores",
        (
            f"JAX {machine['jax']} (jaxlib {machine['jaxlib']}), backend {machine['backend']}, "
            f"devices {', '.join(machine['devices'])}; "
            f"NumPy {machine['numpy']}, Python {machine['python']}"
        ),
    ]
    head.append(
        f"PRNG: {machine['prng_impl']}, threefry_partitionable={machine['threefry_partitionable']}"
        + (f"; XLA_FLAGS={machine['xla_flags']}" if machine["xla_flags"] else "")
    )
    for case_id, b in baselines.items():
        c = checks[case_id]
        errs = ", ".join(
            f"{k} {'ok' if v['ok'] else 'MISMATCH'}"
            + (f" {v['max_err_over_scale']:.0e}" if "scale" in v else "")
            for k, v in c["fields"].items()
        )
        head.append(
            f"NumPy loop, case {case_id}: {fmt_rate(b['env_steps_per_s'])} env-steps/s "
            f"({b['n_steps']} steps); same physics as the JAX env over {c['n_steps']} steps "
            f"(np.allclose rtol {c['rtol']:g}, max err / field scale): {'PASS' if c['ok'] else 'FAIL'} [{errs}]"
        )
    cols = ("case", "N", "env-steps/s", "vs NumPy loop", "compile s", "rollout compile s", "first call s", "peak RSS MB")
    table = []
    for r in rows:
        if "error" in r:
            table.append((r["case"], str(r["n_envs"]), "error: " + r["error"], "", "", "", "", ""))
            continue
        ratio = r["env_steps_per_s"] / baselines[r["case"]]["env_steps_per_s"]
        table.append(
            (
                r["case"],
                str(r["n_envs"]),
                fmt_rate(r["env_steps_per_s"]),
                f"{ratio:,.1f}x",
                f"{r['compile_s']:.2f}",
                f"{r['rollout_compile_s']:.2f}",
                f"{r['first_call_s']:.2f}",
                f"{r['peak_rss_mb']:.0f}",
            )
        )
    if markdown:
        print("\n".join(f"- {h}" for h in head))
        print()
        print("| " + " | ".join(cols) + " |")
        print("|" + "|".join(["---"] * 2 + ["---:"] * (len(cols) - 2)) + "|")
        for t in table:
            print("| " + " | ".join(t) + " |")
    else:
        print("\n".join(head))
        print()
        widths = [
            max(len(c), *(len(t[i]) for t in table)) if table else len(c)
            for i, c in enumerate(cols)
        ]
        print("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
        for t in table:
            print("  ".join(v.rjust(w) for v, w in zip(t, widths)))
    for r in rows:
        if "error" in r:
            print(
                f"\ncase {r['case']} N={r['n_envs']}: {r['error']}",
                *r.get("stderr_tail", []),
                sep="\n  ",
            )


def apply_jax_config(item: str, ap: argparse.ArgumentParser) -> None:
    """``NAME=VALUE`` -> ``jax.config.update``; VALUE parsed as bool, int, float or str."""
    name, sep, raw = item.partition("=")
    if not sep:
        ap.error(f"--jax-config expects NAME=VALUE, got {item!r}")
    lowered = raw.strip().lower()
    value: object
    if lowered in ("true", "false"):
        value = lowered == "true"
    else:
        try:
            value = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = raw
    jax.config.update(name.strip(), value)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- main


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--cases", nargs="+", default=list(DEFAULT_CASES), help="case ids (default: 5 118)"
    )
    ap.add_argument(
        "--n-envs", nargs="+", type=int, default=list(DEFAULT_N_ENVS), help="batch sizes N"
    )
    ap.add_argument("--repeats", type=int, default=7, help="timed calls per configuration (median)")
    ap.add_argument("--horizon", type=int, default=48, help="steps per env per call")
    ap.add_argument(
        "--numpy-steps", type=int, default=MAX_STEPS * 20, help="steps of the NumPy loop"
    )
    ap.add_argument("--json", metavar="PATH", help="write the raw results here")
    ap.add_argument("--markdown", action="store_true", help="print the results as a Markdown table")
    ap.add_argument(
        "--jax-config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="jax.config.update(NAME, VALUE) here and in every child, e.g. "
        "jax_threefry_partitionable=false (changes the workload; off by default)",
    )
    ap.add_argument("--single", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for item in args.jax_config:
        apply_jax_config(item, ap)
    if args.repeats < 1 or args.horizon < 1 or any(n < 1 for n in args.n_envs):
        ap.error("--repeats, --horizon and --n-envs must be positive")

    if args.single:
        case_id, n = args.single
        print(json.dumps(run_single(case_id, int(n), args.horizon, args.repeats)), flush=True)
        return

    machine = machine_info()
    log(
        f"{machine['cpu_model']} x{machine['cpu_count']}, JAX {machine['jax']} on {machine['backend']}"
    )
    baselines, checks, rows = {}, {}, []
    for case_id in args.cases:
        case, env, params = build(case_id)
        checks[case_id] = check_numpy_against_jax(case, env, params, args.horizon)
        log(f"case {case_id}: NumPy vs JAX check {'PASS' if checks[case_id]['ok'] else 'FAIL'}")
        baselines[case_id] = time_numpy(case, params, args.numpy_steps, repeats=3)
        log(
            f"case {case_id}: NumPy loop {fmt_rate(baselines[case_id]['env_steps_per_s'])} env-steps/s"
        )
        for n in args.n_envs:
            r = run_child(case_id, n, args.horizon, args.repeats, args.jax_config)
            rows.append(r)
            if "error" in r:
                log(f"case {case_id} N={n}: {r['error']}")
            else:
                from _record import record

                record("seed rollout", f"case {case_id}, N={n}", r["env_steps_per_s"], "env-steps/s",
                       compile_s=r["compile_s"])
                log(
                    f"case {case_id} N={n}: {fmt_rate(r['env_steps_per_s'])} env-steps/s, "
                    f"compile {r['compile_s']:.2f} s, first call {r['first_call_s']:.2f} s, "
                    f"peak RSS {r['peak_rss_mb']:.0f} MB"
                )

    print_report(machine, baselines, checks, rows, args.markdown)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "machine": machine,
                    "args": vars(args),
                    "numpy": baselines,
                    "check": checks,
                    "results": rows,
                },
                f,
                indent=2,
            )
    if not all(c["ok"] for c in checks.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
