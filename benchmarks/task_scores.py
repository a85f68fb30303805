"""Scores of the five benchmark tasks: train each task preset over seeds, evaluate on held-out
episodes beside the task's rule-based baselines, and report the protocol's statistics.

What it does, per preset (``--tasks`` picks the tasks, ``--presets`` single presets):

* **training**: the preset's env, algorithm and config at the preset's budget times
  ``--budget-scale`` (``--quick``: two updates on at most 16 envs). All seeds run as one
  program: the trainer's pure ``init`` and ``run_chunk`` are ``jax.vmap``-ed over the seeds'
  keys and jitted once; the run is cut into equal chunks of updates (one compiled
  ``lax.scan`` each, compiled ahead of time so the compile time is measured apart) and the
  per-update metrics come back once per chunk (the learning curves). Every trainer the
  presets use (PPO, PPO-Lagrangian, IPPO, typed IPPO) is pure, so every preset is vmapped;
  a trainer that were not would be named here. In-loop evaluation is off
  (``eval_freq=0``): the throughput is that of rollout + update alone, and the scores
  come from the held-out evaluation below.
* **evaluation**: the trained policies (deterministic: the mean action) and each of the
  task's baselines run ``--eval-episodes`` episodes of the task's test split (``iid``)
  and of each out-of-distribution split, on the task's own env and params (the unshaped
  reward; windows spread evenly over the split by ``episode_params``). Seeds × episodes
  are one vmapped program per split.
* **statistics** (the protocol's functions): per seed the mean over episodes; across seeds
  the IQM and the 95 % bootstrap CI of the IQM, for the return and for every cost channel
  (episode sums in the env's units). NormScore = ``(IQM − floor)/(ceiling − floor)`` on the
  return, floor and ceiling the task's weak and strong baselines. Constraint satisfaction
  (safe presets): per constrained channel, the threshold, the IQM episode cost and the
  fraction of episodes within the threshold. A NormScore above 0 whose agent pays more in a
  cost channel than every baseline is flagged ``gain_with_violations``.
* **throughput**: env steps of all seeds per second of training (rollout and gradient
  update), compile seconds, wall-clock; the hardware (``jax.devices()[0].device_kind``,
  the CPU model, core count) is recorded with the results.

Run from the repository root::

    uv run python benchmarks/task_scores.py --quick --out scores.json            # minutes on a CPU
    uv run python benchmarks/task_scores.py --tasks dso dcmg --budget-scale 0.01 --out scores.json
    uv run python benchmarks/task_scores.py --plot scores.json --png curves.png  # learning curves
    uv run python benchmarks/task_scores.py --report scores.json                 # the tables again
    uv run python benchmarks/task_scores.py --resume-check                       # checkpoint/resume PASS/FAIL

The same command runs on a CPU, GPU or TPU host (JAX picks the device). It needs only the
project's distributions and their dependencies (jax, numpy, matplotlib for ``--plot``).
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

N_SEEDS = 5
BOOTSTRAP_RESAMPLES = 2_000
COST_TOL = 1e-6  # an episode cost at or below threshold + this counts as within the threshold
# Episode costs are float32 sums over up to 288 steps: two policies that pay the same cost
# (a split's unavoidable overloads) can differ in the last bits. Only a difference above
# this share of the cost counts as "costlier".
COST_RTOL = 1e-5


# ----------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class TaskDef:
    """A benchmark task: its presets, evaluation splits and NormScore baselines."""

    name: str
    presets: tuple[str, ...]
    test_split: str
    ood_splits: tuple[str, ...]
    floor: str  # weak baseline (NormScore 0)
    ceiling: str  # strong baseline (NormScore 1)
    reference: dict[str, Any] = field(default_factory=dict)


TASKS: dict[str, TaskDef] = {
    "tso": TaskDef("tso", ("tso-uc", "tso-scuc-safe"), "iid", ("load_stress", "line_tightening"), "all_on", "merit_order"),
    "dso": TaskDef("dso", ("dso-nflex", "dso-nflex-safe"), "iid", ("summer_ood", "zone_holdout"), "no_control", "droop"),
    "ders": TaskDef(
        "ders", ("ders-medium",), "iid", ("voltage_tightening", "pv_penetration_shift", "load_stress"),
        "no_control", "volt_droop",
    ),
    "gencos": TaskDef("gencos", ("gencos-case5-ippo",), "iid", ("demand_shift", "renewable_shock"), "truthful", "max_markup"),
    "dcmg": TaskDef(
        "dcmg", ("dc-microgrid", "dc-microgrid-safe"), "iid", ("cooling_stress", "renewable_drought"),
        "no_control", "rule_based",
    ),
}

# The reference's published figures (README; paper Table 2 and §6.2-6.3), for the rows
# that can be compared. Throughput on one RTX 4500 Ada, with the gradient update.
REFERENCE = {
    "throughput_sps": {"tso": 45_000.0, "dso": 93_300.0, "ders": 129_000.0, "gencos": 74_600.0, "dcmg": 36_300.0},
    "wall_clock_s": {
        "gencos": (5_000_000, 256, 67.0), "tso": (20_000_000, 256, 515.0), "dso": (3_000_000, 128, 32.0),
        "ders": (10_000_000, 128, 79.0), "dcmg": (1_000_000, 64, 33.0),
    },
    "scores": {
        "gencos": "IPPO £395k/day on iid; truthful £6.9k/day, max-markup £598k/day (GB demand)",
        "tso": "PPO £1.58M/day at 35 % thermal violation; PPO-Lagrangian £3.50M/day at 6 %, no reserve shortfall",
    },
}


def make_task(name: str) -> Any:
    """The task object of `name` (the frozen benchmark task of its distribution)."""
    if name == "tso":
        from powerzoojax.grid.tasks.tso import TSOTask

        return TSOTask()
    if name == "dso":
        from powerzoojax.grid.tasks.dso import DSOTask

        return DSOTask()  # data feeders (held-out windows); the preset trains on the synthetic day
    if name == "ders":
        from powerzoojax.grid.tasks.ders import DERsTask

        return DERsTask()
    if name == "gencos":
        from powerzoojax.market.tasks.gencos import GenCosTask

        return GenCosTask()
    if name == "dcmg":
        from powerzoojax.grid.tasks.dc_microgrid import DCMicrogridTask

        return DCMicrogridTask()
    raise ValueError(f"unknown task {name!r}; tasks are {list(TASKS)}")


def task_env(task: Any, split: str) -> Any:
    env = task.make_env(split)
    return env[0] if isinstance(env, tuple) else env  # GenCosTask.make_env gives (env, params)


def baseline_policy(task_name: str, task: Any, name: str, params: Any) -> Callable:
    """`policy(obs, state, key) -> action` of a baseline (GenCos: its fixed markup)."""
    if task_name == "gencos":
        import jax.numpy as jnp
        from powerzoojax.market._market_marl import BASELINE_ACTIONS

        n = params.offer_sced_setup.n_units * params.offer_sced_setup.n_segments
        value = float(BASELINE_ACTIONS[name])
        return lambda obs, state, key: jnp.full((n,), value, jnp.float32)
    return task.baseline_policy(name, params)


def baseline_names(task_name: str, task: Any) -> tuple[str, ...]:
    return tuple(task.baseline_names())


# ----------------------------------------------------------------------------- hardware


def hardware() -> dict[str, Any]:
    """The device JAX runs on and the host CPU."""
    import jax

    dev = jax.devices()[0]
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "platform": dev.platform, "device_kind": dev.device_kind, "n_devices": jax.device_count(),
        "cpu_model": cpu, "cpu_count": os.cpu_count(), "jax_version": jax.__version__,
        "python": platform.python_version(),
    }


def hardware_name(hw: dict[str, Any]) -> str:
    if hw["platform"] == "cpu":
        return f"CPU {hw['cpu_model']} ({hw['cpu_count']} cores)"
    return f"{hw['device_kind']} ({hw['platform']}, host {hw['cpu_model']})"


# ----------------------------------------------------------------------------- statistics (pure)


def seed_stats(per_seed: Sequence[float], *, seed: int = 0) -> dict[str, Any]:
    """IQM, 95 % bootstrap CI of the IQM, mean and std of one value per seed."""
    from powerzoojax.rl.training import bootstrap_ci, iqm

    x = np.asarray(per_seed, np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"iqm": math.nan, "ci95": [math.nan, math.nan], "mean": math.nan, "std": math.nan, "n": 0}
    lo, hi = bootstrap_ci(x, iqm, n_resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    return {
        "iqm": iqm(x), "ci95": [lo, hi], "mean": float(x.mean()),
        "std": float(x.std(ddof=1)) if x.size > 1 else 0.0, "n": int(x.size),
    }


def safe_norm_score(value: float, floor: float, ceiling: float) -> float:
    """The protocol's NormScore; NaN when the baselines tie or a value is not finite."""
    from powerzoojax.rl.training import norm_score

    if not all(math.isfinite(v) for v in (value, floor, ceiling)) or abs(ceiling - floor) < 1e-12 * max(1.0, abs(floor)):
        return math.nan
    return norm_score(value, floor, ceiling)


def summarize_split(
    agent: dict[str, np.ndarray], baselines: dict[str, dict[str, np.ndarray]], channels: Sequence[str],
    floor: str, ceiling: str, thresholds: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Statistics of one split.

    `agent`: `return (S, E)`, `costs (S, E, k)` and `violation_steps (S, E, k)` (seeds ×
    episodes); `baselines`: the same per baseline with `S = 1` (the baselines are
    deterministic, so one pass over the episodes). `thresholds`: `{channel: per-episode
    threshold}` of the constrained channels, or None.
    """
    ret = np.asarray(agent["return"], np.float64)
    costs = np.asarray(agent["costs"], np.float64)
    viol = np.asarray(agent["violation_steps"], np.float64)
    out: dict[str, Any] = {"n_seeds": int(ret.shape[0]), "n_episodes": int(ret.shape[1])}
    out["return"] = seed_stats(ret.mean(axis=1))
    out["costs"] = {c: seed_stats(costs[:, :, i].mean(axis=1)) for i, c in enumerate(channels)}
    out["violation_steps"] = {c: seed_stats(viol[:, :, i].mean(axis=1)) for i, c in enumerate(channels)}
    base = {}
    for name, b in baselines.items():
        base[name] = {
            "return": float(np.mean(b["return"])),
            "costs": {c: float(np.mean(np.asarray(b["costs"])[..., i])) for i, c in enumerate(channels)},
        }
    out["baselines"] = base
    out["norm_score"], out["norm_score_ci95"], out["norm_score_status"] = math.nan, [math.nan, math.nan], "missing_anchor"
    if floor in base and ceiling in base:
        f, c = base[floor]["return"], base[ceiling]["return"]
        # As the protocol's diagnostic: only when the strong baseline beats the weak one.
        gap = c - f
        out["norm_score_status"] = "ok" if gap > 1e-9 * max(1.0, abs(f)) else ("tied_anchors" if gap == 0 else "inverted_anchors")
        if out["norm_score_status"] == "ok":
            out["norm_score"] = safe_norm_score(out["return"]["iqm"], f, c)
            per_seed = [safe_norm_score(v, f, c) for v in ret.mean(axis=1)]
            out["norm_score_ci95"] = seed_stats(per_seed)["ci95"]
    # A return gain bought by violations: better than the floor while paying more in some
    # channel than every baseline.
    worse = [
        c for c in channels
        if base and out["costs"][c]["iqm"] > (worst := max(b["costs"][c] for b in base.values())) + COST_TOL + COST_RTOL * abs(worst)
    ]
    out["costlier_channels"] = worse
    out["gain_with_violations"] = bool(worse) and (out["norm_score"] > 0 if math.isfinite(out["norm_score"]) else False)
    if thresholds:
        sat = {}
        for c, d in thresholds.items():
            i = list(channels).index(c)
            ep = costs[:, :, i]
            sat[c] = {
                "threshold": float(d),
                "iqm_episode_cost": out["costs"][c]["iqm"],
                "episodes_within": float(np.mean(ep <= d + COST_TOL)),
                "satisfied": bool(out["costs"][c]["iqm"] <= d + COST_TOL),
            }
        out["constraints"] = sat
    return out


def curve_summary(rows: dict[str, np.ndarray]) -> dict[str, list]:
    """Learning curves as JSON lists: every metric `(S, U)` per seed and update."""
    return {k: np.asarray(v, np.float64).round(6).tolist() for k, v in rows.items()}


def _fmt(x: float, digits: int = 3) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    a = abs(x)
    if a != 0 and (a >= 1e5 or a < 1e-3):
        return f"{x:.{digits}g}"
    return f"{x:,.{digits}g}" if a < 1000 else f"{x:,.0f}"


def _stat(s: dict[str, Any]) -> str:
    return f"{_fmt(s['iqm'])} [{_fmt(s['ci95'][0])}, {_fmt(s['ci95'][1])}]"


def markdown_tables(results: dict[str, Any]) -> str:
    """The scores table (one row per preset and split) and the training table."""
    lines = [
        f"Hardware: {results['hardware_name']}; {results['date']}; seeds {results['n_seeds']}; "
        f"episodes per split {results['eval_episodes']}; budget scale {results['budget_scale']}"
        + "".join(f", {t} {v}" for t, v in (results.get("task_budget_scale") or {}).items())
        + (" (--quick)" if results.get("quick") else ""),
        "",
        ("| preset | algo | split | return IQM [95 % CI] | NormScore | costs per episode, IQM [95 % CI] | "
         "baselines (return; costs) | flags |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in results["runs"]:
        if "error" in run:
            lines.append(f"| {run['preset']} | | | failed: {run['error']} | | | | |")
            continue
        for split, s in run["splits"].items():
            costs = "; ".join(f"{c} {_stat(v)}" for c, v in s["costs"].items()) or "none"
            base = "; ".join(
                f"{n} {_fmt(b['return'])} ({', '.join(_fmt(v) for v in b['costs'].values())})"
                for n, b in s["baselines"].items()
            )
            flags = []
            if s.get("norm_score_status", "ok") != "ok":
                flags.append(f"no NormScore: {run.get('ceiling', 'ceiling')} ≤ {run.get('floor', 'floor')} on this split")
            if s.get("gain_with_violations"):
                flags.append("gain with violations: " + ", ".join(s["costlier_channels"]))
            for c, sat in s.get("constraints", {}).items():
                flags.append(
                    f"{c} ≤ {_fmt(sat['threshold'])}: {'met' if sat['satisfied'] else 'NOT met'} "
                    f"({100 * sat['episodes_within']:.0f} % of episodes)"
                )
            tag = f"{split} (test)" if split == run["test_split"] else split
            lines.append(
                f"| {run['preset']} | {run['algo']} | {tag} | {_stat(s['return'])} | {_fmt(s['norm_score'])} | "
                f"{costs} | {base} | {'; '.join(flags)} |"
            )
    lines += [
        "",
        ("| preset | env steps per seed (preset) | envs | updates | compile s | train s | "
         "env-steps/s (all seeds, incl. update) | eval s | wall s |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in results["runs"]:
        if "error" in run:
            continue
        t = run["training"]
        lines.append(
            f"| {run['preset']} | {t['env_steps_per_seed']:,} ({t['preset_total_timesteps']:,}) | {t['num_envs']} | "
            f"{t['n_updates']} | {t['compile_s']:.1f} | {t['train_s']:.1f} | {t['env_steps_per_s']:,.0f} | "
            f"{run['eval_s']:.1f} | {run['wall_s']:.1f} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- training


def scaled_config(config: Any, budget_scale: float, quick: bool, max_envs: int | None) -> Any:
    """The preset's config at `budget_scale` of its env steps (at least one update), with
    in-loop evaluation off; `quick`: two updates on at most 16 envs."""
    num_envs = config.num_envs
    if quick:
        num_envs = min(num_envs, 16)
    if max_envs is not None:
        num_envs = min(num_envs, int(max_envs))
    n_mb = config.n_minibatches
    while (num_envs * config.n_steps) % n_mb:
        n_mb //= 2
    per_update = num_envs * config.n_steps
    if quick:
        total = 2 * per_update
    else:
        total = max(per_update, round(config.total_timesteps * budget_scale / per_update) * per_update)
    return config.replace(total_timesteps=total, num_envs=num_envs, n_minibatches=max(1, n_mb), eval_freq=0)


def build(preset: str, budget_scale: float, quick: bool, max_envs: int | None) -> tuple[Any, Any]:
    """`(trainer, preset_config)` of a preset at the scaled budget."""
    from powerzoojax.rl.training import get_preset
    from powerzoojax.rl.training._train import build_trainer

    pdef = get_preset(preset)
    config = scaled_config(pdef.config, budget_scale, quick, max_envs)
    trainer, _ = build_trainer(preset, config, seed=0)
    return trainer, pdef.config


CURVE_KEYS = ("env_steps", "episode_return", "episode_cost", "mean_cost", "mean_reward", "loss", "lambda")


class SeedTrainer:
    """A trainer's `init` and `run_chunk` vmapped over seeds, each jitted once."""

    def __init__(self, trainer: Any, chunk: int):
        import jax

        self.trainer, self.chunk = trainer, int(chunk)
        self.init = jax.jit(jax.vmap(trainer.init))
        self._chunk = jax.jit(jax.vmap(lambda s: trainer.run_chunk(s, self.chunk)))
        self.compiled = None

    def compile(self, state: Any) -> float:
        t0 = time.perf_counter()
        self.compiled = self._chunk.lower(state).compile()
        return time.perf_counter() - t0

    def run(self, state: Any) -> tuple[Any, dict[str, np.ndarray]]:
        """One chunk: `(state, metrics)`, the metrics copied to the host in one transfer."""
        import jax

        fn = self.compiled if self.compiled is not None else self._chunk
        state, metrics = fn(state)
        return state, jax.device_get(metrics)


def train_seeds(trainer: Any, seeds: Sequence[int], n_chunks: int) -> dict[str, Any]:
    """Train `seeds` in one vmapped program; returns the final state, the learning curves
    (every metric `(S, U)`), compile and train seconds."""
    import jax
    import jax.random as jr
    from powerzoojax.rl.training._runner import chunk_size

    n_updates = trainer.n_updates
    size = chunk_size(n_updates, n_chunks)
    st = SeedTrainer(trainer, size)
    keys = jax.vmap(jr.PRNGKey)(np.asarray(seeds, np.uint32))
    t0 = time.perf_counter()
    state = jax.block_until_ready(st.init(keys))
    init_s = time.perf_counter() - t0
    compile_s = st.compile(state)
    rows: dict[str, list[np.ndarray]] = {}
    t0 = time.perf_counter()
    done = 0
    while done < n_updates:
        state, metrics = st.run(state)
        take = min(size, n_updates - done)
        for k, v in metrics.items():
            if k in CURVE_KEYS or k.startswith(("mean_cost_", "lambda_", "episode_cost_est_")):
                rows.setdefault(k, []).append(np.asarray(v)[:, :take])
        done += take
    jax.block_until_ready(state)
    train_s = time.perf_counter() - t0
    curves = {k: np.concatenate(v, axis=1) for k, v in rows.items()}
    return {"state": state, "curves": curves, "compile_s": compile_s, "train_s": train_s, "init_s": init_s,
            "chunk": size, "n_chunks": math.ceil(n_updates / size)}


# ----------------------------------------------------------------------------- evaluation


def agent_policy(trainer: Any, task_name: str) -> Callable:
    """`make(policy, obs_stats) -> policy(obs, state, key)` on the task's env: the trained
    policy's deterministic action (IPPO: each agent's own observation, packed into the
    env's action)."""
    from powerzoojax.rl.algos._ippo import IPPOTrainer

    if not isinstance(trainer, IPPOTrainer):
        return lambda net, stats: (lambda obs, state, key: trainer.deterministic_action(net, stats, obs))
    env = trainer.env
    if task_name == "gencos":
        def make(net, stats):
            return lambda obs, state, key: trainer.deterministic_actions(net, stats, obs).reshape(-1)
        return make
    from powerzoojax.rl.marl._device_agents import pack_actions

    def make_dev(net, stats):
        def policy(obs, state, key):
            return pack_actions(trainer.deterministic_actions(net, stats, env._agent_obs(obs)), env.action_src)
        return policy

    return make_dev


def _stack(trees: list[Any]) -> Any:
    import jax
    import jax.numpy as jnp

    return jax.tree.map(lambda *x: jnp.stack(x), *trees)


def _episode_summary(trace: Any) -> dict[str, Any]:
    import jax.numpy as jnp

    return {
        "return": jnp.sum(trace.reward),
        "costs": jnp.sum(trace.costs, axis=0),
        "violation_steps": jnp.sum((trace.costs > 0).astype(jnp.float32), axis=0),
    }


def split_episodes(task: Any, split: str, n_episodes: int, max_steps: int) -> tuple[Any, bool]:
    """`(params, batched)`: the split's evaluation episodes, stacked along a leading axis
    when they differ, or the one params when every episode shares it (GenCos: the start is
    drawn at reset)."""
    plist = [task.episode_params(split, i, n_episodes, max_steps) for i in range(n_episodes)]
    if all(p is plist[0] for p in plist):
        return plist[0], False
    return _stack(plist), True


class Evaluator:
    """The held-out evaluation of one task: the trained policies of a preset and the task's
    baselines on the same episodes and keys. Each program (agent: seeds × episodes;
    baselines: every baseline × episodes) is jitted once and reused for every split whose
    params have the same shapes; the baselines' results are kept per split, so the presets
    of one task share them."""

    def __init__(self, task_name: str, n_episodes: int, key: Any):
        import jax
        import jax.random as jr
        from powerzoojax.core import episode_rollout

        self.task_name, self.n_episodes = task_name, int(n_episodes)
        self.task = make_task(task_name)
        self.key = key
        self.env = task_env(self.task, TASKS[task_name].test_split)
        self._params: dict[str, tuple[Any, bool]] = {}
        self._baselines: dict[str, dict[str, Any]] = {}
        task, env, names = self.task, self.env, baseline_names(task_name, self.task)

        def baselines(p, k):
            return {n: _episode_summary(episode_rollout(env, p, k, baseline_policy(task_name, task, n, p))) for n in names}

        self._base_fns = {
            batched: jax.jit(jax.vmap(baselines, in_axes=(0 if batched else None, 0))) for batched in (True, False)
        }
        self._agent_fns: dict[Any, Any] = {}
        order = (TASKS[task_name].test_split, *TASKS[task_name].ood_splits)
        # The same keys for every preset and baseline on a split.
        self._split_keys = lambda split: jr.split(jr.fold_in(self.key, order.index(split)), self.n_episodes)

    def episodes(self, split: str, max_steps: int) -> tuple[Any, bool]:
        if split not in self._params:
            self._params[split] = split_episodes(self.task, split, self.n_episodes, max_steps)
        return self._params[split]

    def channels(self, split: str, max_steps: int) -> list[str]:
        import jax

        params, batched = self.episodes(split, max_steps)
        one = jax.tree.map(lambda x: x[0], params) if batched else params
        return list(self.env.constraint_names(one))

    def baselines(self, split: str, max_steps: int) -> dict[str, Any]:
        import jax

        if split not in self._baselines:
            params, batched = self.episodes(split, max_steps)
            keys = self._split_keys(split)
            res = jax.device_get(self._base_fns[batched](params, keys))
            self._baselines[split] = {n: jax.tree.map(lambda x: np.asarray(x)[None], r) for n, r in res.items()}
        return self._baselines[split]

    def agent(self, trainer: Any, state: Any, split: str, max_steps: int) -> dict[str, np.ndarray]:
        import jax
        from powerzoojax.core import episode_rollout

        params, batched = self.episodes(split, max_steps)
        fn_key = (id(trainer), batched)
        if fn_key not in self._agent_fns:
            make, env = agent_policy(trainer, self.task_name), self.env

            def episode(net_, stats_, p, k):
                return _episode_summary(episode_rollout(env, p, k, make(net_, stats_)))

            self._agent_fns[fn_key] = jax.jit(jax.vmap(
                jax.vmap(episode, in_axes=(None, None, 0 if batched else None, 0)), in_axes=(0, 0, None, None)
            ))
        keys = self._split_keys(split)
        return jax.device_get(self._agent_fns[fn_key](state.policy, state.obs_stats, params, keys))


def evaluate(
    evaluator: "Evaluator", trainer: Any, state: Any, splits: Sequence[str],
) -> tuple[dict[str, Any], list[str]]:
    """Per split: the agent's `(S, E)` episode summaries and each baseline's `(1, E)`, on the
    same episodes and keys. Returns `(results, channel names)`."""
    max_steps = int(getattr(evaluator.task, "max_steps", 0) or trainer.env.max_steps)
    out = {}
    for split in splits:
        out[split] = {
            "agent": evaluator.agent(trainer, state, split, max_steps),
            "baselines": evaluator.baselines(split, max_steps),
        }
    return out, evaluator.channels(splits[0], max_steps)


def constrained_thresholds(trainer: Any) -> dict[str, float] | None:
    """`{channel: per-episode threshold}` the trainer constrains (PPO-Lagrangian), else None."""
    names = tuple(getattr(trainer, "cost_names", ()) or ())
    if not names:
        return None
    thresholds = trainer.config.resolved_cost_thresholds(len(names)) or tuple(trainer.env.cost_thresholds)
    return {n: float(t) for n, t in zip(names, thresholds)}


def run_preset(
    task_def: TaskDef, preset: str, *, seeds: Sequence[int], budget_scale: float, quick: bool, max_envs: int | None,
    n_chunks: int, eval_episodes: int, evaluator: "Evaluator | None" = None, stream: Any = sys.stdout,
) -> dict[str, Any]:
    import jax.random as jr

    t_wall = time.perf_counter()
    trainer, preset_cfg = build(preset, budget_scale, quick, max_envs)
    cfg = trainer.config
    print(f"[{preset}] {cfg.algo}: {cfg.num_envs} envs x {cfg.n_steps} steps, {trainer.n_updates} updates, "
          f"{len(seeds)} seeds (vmapped)", file=stream, flush=True)
    tr = train_seeds(trainer, seeds, n_chunks)
    steps = len(seeds) * trainer.n_updates * trainer.batch_size
    print(f"[{preset}] compile {tr['compile_s']:.1f} s, train {tr['train_s']:.1f} s "
          f"({steps / max(tr['train_s'], 1e-9):,.0f} env-steps/s)", file=stream, flush=True)
    evaluator = evaluator or Evaluator(task_def.name, eval_episodes, jr.PRNGKey(12345))
    splits = (task_def.test_split, *task_def.ood_splits)
    t0 = time.perf_counter()
    ev, channels = evaluate(evaluator, trainer, tr["state"], splits)
    eval_s = time.perf_counter() - t0
    thresholds = constrained_thresholds(trainer)
    summary = {
        split: summarize_split(r["agent"], r["baselines"], channels, task_def.floor, task_def.ceiling, thresholds)
        for split, r in ev.items()
    }
    print(f"[{preset}] evaluated {len(splits)} splits in {eval_s:.1f} s", file=stream, flush=True)
    raw = jsonable({split: {"agent": r["agent"], "baselines": r["baselines"]} for split, r in ev.items()})
    return {
        "task": task_def.name, "preset": preset, "algo": cfg.algo, "test_split": task_def.test_split,
        "channels": channels, "constrained": thresholds, "floor": task_def.floor, "ceiling": task_def.ceiling,
        "splits": summary,
        "training": {
            "n_seeds": len(seeds), "num_envs": cfg.num_envs, "n_steps": cfg.n_steps, "n_updates": trainer.n_updates,
            "env_steps_per_seed": trainer.n_updates * trainer.batch_size,
            "preset_total_timesteps": preset_cfg.total_timesteps, "preset_num_envs": preset_cfg.num_envs,
            "budget_fraction": trainer.n_updates * trainer.batch_size / preset_cfg.total_timesteps,
            "compile_s": tr["compile_s"], "init_s": tr["init_s"], "train_s": tr["train_s"],
            "env_steps_per_s": steps / max(tr["train_s"], 1e-9), "chunk_updates": tr["chunk"], "n_chunks": tr["n_chunks"],
        },
        "curves": curve_summary(tr["curves"]),
        "episodes": raw,  # per seed and episode: return, cost sums and violation steps per channel
        "eval_s": eval_s, "wall_s": time.perf_counter() - t_wall,
    }


def resummarize(results: dict[str, Any]) -> dict[str, Any]:
    """The split statistics of a results JSON recomputed from its per-episode values."""
    for run in results["runs"]:
        if "episodes" not in run:
            continue
        floor = run.get("floor", TASKS[run["task"]].floor)
        ceiling = run.get("ceiling", TASKS[run["task"]].ceiling)
        run["splits"] = {
            split: summarize_split(
                {k: np.asarray(v, np.float64) for k, v in r["agent"].items()},
                {n: {k: np.asarray(v, np.float64) for k, v in b.items()} for n, b in r["baselines"].items()},
                run["channels"], floor, ceiling, run.get("constrained"),
            )
            for split, r in run["episodes"].items()
        }
    return results


# ----------------------------------------------------------------------------- plot


def plot(results: dict[str, Any], png: str) -> str:
    """Learning curves: training episode return (and episode cost where logged) against env
    steps, median over seeds with the min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in results["runs"] if "curves" in r and r["curves"].get("env_steps")]
    n = max(1, len(runs))
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.2 * rows), squeeze=False)
    for ax, run in zip(axes.flat, runs):
        c = run["curves"]
        x = np.asarray(c["env_steps"], np.float64)[0]
        y = np.asarray(c.get("episode_return", c.get("mean_reward")), np.float64)
        ax.plot(x, np.nanmedian(y, axis=0), color="C0", label="episode return")
        ax.fill_between(x, np.nanmin(y, axis=0), np.nanmax(y, axis=0), color="C0", alpha=0.25, linewidth=0)
        ax.set_title(f"{run['preset']} ({run['algo']})", fontsize=9)
        ax.set_xlabel("env steps per seed", fontsize=8)
        ax.set_ylabel("training episode return", fontsize=8, color="C0")
        ax.tick_params(labelsize=7)
        if "episode_cost" in c:
            ax2 = ax.twinx()
            yc = np.asarray(c["episode_cost"], np.float64)
            ax2.plot(x, np.nanmedian(yc, axis=0), color="C3", linestyle="--", label="episode cost")
            ax2.tick_params(labelsize=7, colors="C3")
            ax2.set_ylabel("episode cost (constrained)", fontsize=8, color="C3")
    for ax in list(axes.flat)[len(runs):]:
        ax.axis("off")
    fig.suptitle(f"Training curves, {len(runs)} presets, {results['n_seeds']} seeds (median, min-max); "
                 f"{results['hardware_name']}, {results['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


# ----------------------------------------------------------------------------- resume check


def _max_diff(a: Any, b: Any) -> float:
    import equinox as eqx
    import jax

    la = jax.tree.leaves(eqx.filter(a, eqx.is_array))
    lb = jax.tree.leaves(eqx.filter(b, eqx.is_array))
    if len(la) != len(lb):
        return math.inf
    diffs = [float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))) if np.size(x) else 0.0
             for x, y in zip(la, lb)]
    return max(diffs) if diffs else 0.0


def resume_check(preset: str, task_name: str, *, updates: int = 4, max_envs: int = 16, stream: Any = sys.stdout) -> bool:
    """Train `updates` updates uninterrupted and, separately, half of them, checkpoint, load
    and finish; PASS when the resumed run's parameters and metrics equal the uninterrupted
    run's (to round-off) and both evaluate to the same finite scores. Checked for the host
    driver (`run_training` with a run folder) and for the seed-vmapped program of this
    script (the stacked state serialised and read back)."""
    import equinox as eqx
    import jax
    import jax.random as jr
    from powerzoojax.rl.training._runner import run_training

    ok = True
    trainer, _ = build(preset, 1.0, True, max_envs)
    per_update = trainer.batch_size
    cfg = trainer.config.replace(total_timesteps=updates * per_update)
    from powerzoojax.rl.training._train import build_trainer

    trainer, _ = build_trainer(preset, cfg, seed=0)
    half = updates // 2
    tol = 1e-5
    root = tempfile.mkdtemp(prefix="task_scores_resume_")
    try:
        key = jr.PRNGKey(7)
        full_dir, resumed_dir = os.path.join(root, "full"), os.path.join(root, "resumed")
        full = run_training(trainer, key, output_dir=full_dir, progress=False, checkpoint_every=half, n_reports=updates)
        ckpt = os.path.join(full_dir, "checkpoints", f"update_{half:06d}.eqx")
        resumed = run_training(trainer, key, output_dir=resumed_dir, progress=False, resume_from=ckpt,
                               checkpoint_every=half, n_reports=updates)
        d_params = _max_diff(full.params, resumed.params)
        common = [k for k in full.metrics if k in resumed.metrics]
        d_metrics = max(
            (float(np.nanmax(np.abs(np.asarray(full.metrics[k], np.float64) - np.asarray(resumed.metrics[k], np.float64))))
             if np.isfinite(np.asarray(full.metrics[k], np.float64)).any() else 0.0)
            for k in common
        )
        step_ok = d_params <= tol and d_metrics <= tol * max(1.0, max(
            float(np.nanmax(np.abs(np.asarray(full.metrics[k], np.float64)))) if np.isfinite(np.asarray(full.metrics[k])).any() else 0.0
            for k in common
        ))
        print(f"run_training resume at update {half}/{updates}: max |Δ params| {d_params:.3g}, "
              f"max |Δ metrics| {d_metrics:.3g} -> {'PASS' if step_ok else 'FAIL'}", file=stream)
        ok &= step_ok

        # The seed-vmapped program: 2 seeds, chunks of `half` updates.
        st = SeedTrainer(trainer, half)
        keys = jax.vmap(jr.PRNGKey)(np.asarray([0, 1], np.uint32))
        s0 = st.init(keys)
        s_mid, _ = st.run(s0)
        s_full, m2 = st.run(s_mid)
        path = os.path.join(root, "seeds.eqx")
        eqx.tree_serialise_leaves(path, s_mid)
        template = jax.eval_shape(st.init, keys)
        loaded = eqx.tree_deserialise_leaves(path, template)
        loaded = jax.tree.map(lambda x: jax.numpy.asarray(x) if isinstance(x, np.ndarray) else x, loaded)
        s_res, m2r = st.run(loaded)
        d_state = _max_diff(s_full.policy, s_res.policy)
        d_m = max(float(np.nanmax(np.abs(np.asarray(m2[k], np.float64) - np.asarray(m2r[k], np.float64))))
                  if np.isfinite(np.asarray(m2[k], np.float64)).any() else 0.0 for k in m2)
        seeds_ok = d_state <= tol and d_m <= tol * max(1.0, max(
            float(np.nanmax(np.abs(np.asarray(m2[k], np.float64)))) if np.isfinite(np.asarray(m2[k])).any() else 0.0 for k in m2))
        print(f"seed-vmapped resume (2 seeds): max |Δ params| {d_state:.3g}, max |Δ metrics| {d_m:.3g} -> "
              f"{'PASS' if seeds_ok else 'FAIL'}", file=stream)
        ok &= seeds_ok

        split = TASKS[task_name].test_split
        evaluator = Evaluator(task_name, 2, jr.PRNGKey(3))
        ev_full, _ = evaluate(evaluator, trainer, s_full, (split,))
        ev_res, _ = evaluate(evaluator, trainer, s_res, (split,))
        a, b = ev_full[split]["agent"]["return"], ev_res[split]["agent"]["return"]
        ev_ok = bool(np.all(np.isfinite(a))) and bool(np.allclose(a, b, rtol=1e-4, atol=1e-4))
        print(f"evaluation on {split}: returns {np.round(np.asarray(a), 4).tolist()} (uninterrupted) vs "
              f"{np.round(np.asarray(b), 4).tolist()} (resumed) -> {'PASS' if ev_ok else 'FAIL'}", file=stream)
        ok &= ev_ok
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return bool(ok)


# ----------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--presets", nargs="+", default=None, help="only these presets of the chosen tasks")
    parser.add_argument("--seeds", type=int, default=N_SEEDS, help="number of seeds (0 .. n-1)")
    parser.add_argument("--budget-scale", type=float, default=1.0, help="fraction of each preset's env steps")
    parser.add_argument("--task-budget-scale", nargs="+", default=[], metavar="TASK=SCALE",
                        help="per-task budget scale, overriding --budget-scale (e.g. tso=0.001 dso=0.02)")
    parser.add_argument("--max-envs", type=int, default=None, help="cap on the preset's parallel envs")
    parser.add_argument("--quick", action="store_true", help="two updates on at most 16 envs, 2 episodes per split")
    parser.add_argument("--eval-episodes", type=int, default=None, help="episodes per split (default 16; --quick 2)")
    parser.add_argument("--chunks", type=int, default=20, help="chunks (metric transfers) per run")
    parser.add_argument("--out", default=None, help="write the results JSON here")
    parser.add_argument("--markdown", default=None, help="also write the markdown tables here")
    parser.add_argument("--plot", default=None, metavar="JSON", help="draw the learning curves of a results JSON")
    parser.add_argument("--png", default="task_scores_curves.png", help="PNG of --plot")
    parser.add_argument("--report", default=None, metavar="JSON", help="print the tables of a results JSON (recomputed)")
    parser.add_argument("--resume-check", action="store_true", help="checkpoint / resume / evaluate check: PASS or FAIL")
    parser.add_argument("--resume-preset", default="dso-nflex", help="preset of --resume-check")
    args = parser.parse_args(argv)

    if args.plot:
        with open(args.plot) as f:
            print(plot(json.load(f), args.png))
        return 0
    if args.report:
        with open(args.report) as f:
            table = markdown_tables(resummarize(json.load(f)))
        print(table)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(table + "\n")
        return 0
    if args.resume_check:
        task_name = next((t.name for t in TASKS.values() if args.resume_preset in t.presets), None)
        if task_name is None:
            parser.error(f"--resume-preset {args.resume_preset!r} is not a task preset; task presets: "
                         f"{[p for t in TASKS.values() for p in t.presets]}")
        hw = hardware()
        print(f"resume check of {args.resume_preset} on {hardware_name(hw)}")
        ok = resume_check(args.resume_preset, task_name)
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1

    scales = {}
    for item in args.task_budget_scale:
        task, _, value = item.partition("=")
        if task not in TASKS or not value:
            parser.error(f"--task-budget-scale takes TASK=SCALE with TASK one of {list(TASKS)}, got {item!r}")
        scales[task] = float(value)
    hw = hardware()
    eval_episodes = args.eval_episodes or (2 if args.quick else 16)
    seeds = list(range(args.seeds))
    results: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python benchmarks/task_scores.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "hardware": hw, "hardware_name": hardware_name(hw), "n_seeds": len(seeds), "eval_episodes": eval_episodes,
        "budget_scale": args.budget_scale, "task_budget_scale": scales, "quick": args.quick, "reference": REFERENCE, "runs": [],
    }
    print(f"task scores on {results['hardware_name']}", flush=True)
    import jax.random as jr

    for name in args.tasks:
        task_def = TASKS[name]
        evaluator = None
        for preset in task_def.presets:
            if args.presets and preset not in args.presets:
                continue
            try:
                evaluator = evaluator or Evaluator(name, eval_episodes, jr.PRNGKey(12345))
                run = run_preset(
                    task_def, preset, seeds=seeds, budget_scale=scales.get(name, args.budget_scale), quick=args.quick,
                    max_envs=args.max_envs, n_chunks=args.chunks, eval_episodes=eval_episodes, evaluator=evaluator,
                )
            except Exception as err:  # noqa: BLE001 - one preset failing is reported, the others still run
                msg = f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"
                print(f"[{preset}] FAILED {msg}", flush=True)
                run = {"task": name, "preset": preset, "error": msg}
            results["runs"].append(run)
            if args.out:  # after every preset, so a long run keeps what it has
                write_json(args.out, results)
    table = markdown_tables(results)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 1 if any("error" in r for r in results["runs"]) else 0


def jsonable(x: Any) -> Any:
    """`x` with NumPy values as Python ones and non-finite floats as None (strict JSON)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_json(path: str, results: dict[str, Any]) -> None:
    with open(path, "w") as f:
        json.dump(jsonable(results), f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
