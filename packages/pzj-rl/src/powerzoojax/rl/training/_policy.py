"""Reloading a trained policy in one call, and evaluating a run folder.

`load_policy(path)` reads a checkpoint (or a run folder: its newest checkpoint),
verifies its checksum, rebuilds the env it was trained on (from the preset recorded in
the sidecar, or the `env` given) and returns the policy as `policy(obs, key) ->
action`. `evaluate_run(run_dir)` runs that policy on fresh episodes and writes
`eval.json` (return, each cost channel with its unit, the task's metrics where the
preset belongs to a task) and optionally an episode trace (`.npz`) for plotting.
"""

import dataclasses
import json
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from powerzoojax.core import rollout
from powerzoojax.rl.algos._config import TrainConfig, load_config
from powerzoojax.rl.algos._files import OutputDirError, atomic_write
from powerzoojax.rl.training._checkpoint import CheckpointError, load_checkpoint, read_sidecar, resolve_checkpoint
from powerzoojax.rl.training._units import channel_units, reported_channels
from powerzoojax.rl.wrappers._transition import transition_step

SPLITS = ("iid", "ood")
# Presets that belong to a benchmark task: (task module, task factory, {split: the task's split}).
# The task's frozen splits come from its real profiles (the DSO presets train on synthetic
# feeder shapes, so both of its splits test transfer to measured load).
_DSO = ("powerzoojax.grid.tasks.dso", lambda m: m.DSOTask(), {"iid": "iid", "ood": "summer_ood"})
_TASK_SPLITS: dict[str, tuple[str, Callable[[Any], Any], dict[str, str]]] = {"dso-nflex": _DSO, "dso-nflex-safe": _DSO}
# Offset between the training seed and the evaluation's: evaluation episodes are fresh draws.
_EVAL_SEED_OFFSET = 1_000_003


class LoadedPolicy(NamedTuple):
    """A trained policy and what it was trained on.

    **Arguments:**

    - `policy`: `policy(obs, key) -> action` (jitted; unbatched `obs` of `wrapped`).
    - `env`, `params`: the physical env and its params.
    - `wrapped`: the bound wrapper the policy saw during training.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `preset`: the preset name, `None` for a run from an env.
    - `checkpoint`: the file read.
    """

    policy: Callable[[jax.Array, jax.Array], jax.Array]
    env: Any
    params: Any
    wrapped: Any
    config: TrainConfig
    preset: str | None
    checkpoint: str


def _physical(wrapped: Any) -> tuple[Any, Any]:
    """`(env, params)` under a stack of bound wrappers."""
    inner = wrapped
    while not hasattr(inner, "params") and hasattr(inner, "wrapped"):
        inner = inner.wrapped
    return getattr(inner, "env", inner), getattr(inner, "params", None)


def _act_fn(trainer: Any, state: Any, deterministic: bool) -> Callable[[jax.Array, jax.Array], jax.Array]:
    from powerzoojax.rl.algos._networks import BetaActorCritic, beta_sample
    from powerzoojax.rl.algos._apg import APGTrainer
    from powerzoojax.rl.algos._ppo import PPOTrainer, normalize
    from powerzoojax.rl.algos._sac import SACTrainer

    policy = state.policy
    if isinstance(trainer, SACTrainer):
        if deterministic:
            return lambda obs, key: trainer.deterministic_action(policy, obs)
        return lambda obs, key: trainer.to_env_action(policy.sample(key, obs)[0])
    if not isinstance(trainer, (PPOTrainer, APGTrainer)):
        raise NotImplementedError(
            f"load_policy reloads single-agent PPO-family and SAC runs; algo={trainer.config.algo!r} is multi-agent "
            "(use load_checkpoint and make_ippo_act)"
        )
    stats = state.obs_stats if trainer.config.normalize_observations else None
    if deterministic:
        return lambda obs, key: trainer.deterministic_action(policy, stats, obs)

    def sample(obs, key):
        nobs = obs if stats is None else normalize(stats, obs)
        if isinstance(policy, BetaActorCritic):
            alpha, beta, _ = policy(nobs)
            return trainer.to_env_action(2.0 * beta_sample(key, alpha, beta) - 1.0)
        mean, log_std, _ = policy(nobs)
        return trainer.to_env_action(mean + jnp.exp(log_std) * jr.normal(key, mean.shape))

    return sample


def load_policy(
    path: str | os.PathLike, *, env: Any = None, deterministic: bool = True, which: str = "latest"
) -> LoadedPolicy:
    """The policy of a checkpoint (or of a run folder's newest intact checkpoint) and its env.

    The sidecar's checksum is verified and a checkpoint holding NaN is refused
    (`CheckpointError`). The env is rebuilt from the preset the run was trained on.

    **Arguments:**

    - `path`: checkpoint file or run folder.
    - `env`: the env of a run started from an env object (a bare `Environment` or the
      bound wrapper used for training).
    - `deterministic`: act with the mean action; `False` samples from the policy's
      distribution with the given key.
    - `which`: for a run folder, `"latest"` or `"best"` (see
      [`resolve_checkpoint`][powerzoojax.rl.training.resolve_checkpoint]).

    **Returns:**

    A [`LoadedPolicy`][powerzoojax.rl.training.LoadedPolicy].
    """
    from powerzoojax.rl.training._train import build_trainer

    checkpoint = resolve_checkpoint(os.fspath(path), which)
    sidecar = read_sidecar(checkpoint)
    config = load_config(sidecar["config"])
    preset = sidecar.get("preset")
    if env is None and preset is None:
        raise CheckpointError(
            f"checkpoint {checkpoint} comes from a run started from an env object, not a preset: "
            "pass the env it was trained on, load_policy(path, env=...)"
        )
    trainer, _ = build_trainer(preset if env is None else env, config, None, config.seed)
    state, _ = load_checkpoint(checkpoint, trainer)
    act = jax.jit(_act_fn(trainer, state, deterministic))
    bare, params = _physical(trainer.env)
    return LoadedPolicy(act, bare, params, trainer.env, config, preset, checkpoint)


def _split_env(loaded: LoadedPolicy, split: str) -> tuple[Any, Any]:
    """The wrapper to evaluate on for `split` and the task that defines it (or None)."""
    import importlib

    import equinox as eqx

    if split not in SPLITS:
        raise ValueError(f"evaluate: split must be one of {list(SPLITS)}, got {split!r}")
    entry = _TASK_SPLITS.get(loaded.preset or "")
    if entry is None:
        if split == "ood":
            raise ValueError(
                f"evaluate: the run's preset {loaded.preset!r} belongs to no benchmark task, so it has no ood split; "
                f"presets with one: {sorted(_TASK_SPLITS)}"
            )
        return loaded.wrapped, None
    module, factory, names = entry
    task = factory(importlib.import_module(module))
    params = task.make_params(names[split])
    holder = loaded.wrapped
    path = []
    while not hasattr(holder, "params"):
        holder, path = holder.wrapped, path + ["wrapped"]

    def where(w):
        for name in path:
            w = getattr(w, name)
        return w.params

    return eqx.tree_at(where, loaded.wrapped, params), task


def _reason(err: OSError) -> str:
    where = f": {err.filename}" if err.filename else ""
    return f"{err.strerror or type(err).__name__}{where}"


def _distinct_episodes(out: dict[str, np.ndarray]) -> int:
    """How many of the evaluated episodes differ (in return or any cost channel)."""
    rows = np.concatenate([np.asarray(out[k], np.float64).reshape(len(out["return"]), -1)
                           for k in ("return", "cost_sum", "constraint_costs")], axis=1)
    return int(len(np.unique(rows, axis=0)))


def _stats(x: np.ndarray) -> dict[str, float]:
    x = np.asarray(x, np.float64)
    return {"mean": float(x.mean()), "std": float(x.std()), "min": float(x.min()), "max": float(x.max())}


def _trace(wrapped: Any, act: Callable, key: jax.Array) -> dict[str, np.ndarray]:
    """One episode from reset: observations, actions, rewards, costs, done flags, every info
    entry (`info/<key>`), the float fields of the env state each step returned
    (`state/<field>`; NaN on the terminal step, whose returned state is already the next
    episode's) and the step length, the keys `powerzoojax.viz.episode_series` reads."""
    from powerzoojax.viz._network import _env_state

    k_reset, k_roll = jr.split(key)

    step_fn = transition_step(wrapped)

    def step(k, s, a):
        # Also emit the state the step started from: the env's states over the episode.
        return (*step_fn(k, s, a), s)

    @jax.jit
    def run(k_reset, k_roll):
        obs, state = wrapped.reset(k_reset)

        def policy(k, o, _):
            a = act(o, k)
            return a, (o, a)

        _, _, outs = rollout(step, k_roll, state, length=wrapped.max_steps, policy=policy, init_obs=obs)
        _, rewards, costs, dones, info, states_before, (obs_seen, actions) = outs
        before = _env_state(states_before)
        fields = {f.name: getattr(before, f.name) for f in dataclasses.fields(before)} if dataclasses.is_dataclass(before) else {}
        states = {k: v for k, v in fields.items() if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jnp.floating)}
        return {"obs": obs_seen, "action": actions, "reward": rewards, "constraint_costs": costs,
                "cost_sum": info["cost_sum"], "done": dones, "info": info, "before": states}

    out = jax.tree.map(np.asarray, run(k_reset, k_roll))
    trace = {k: v for k, v in out.items() if k not in ("info", "before")}
    trace.update({f"info/{k}": v for k, v in out["info"].items()})
    for name, before in out["before"].items():
        after = np.concatenate([before[1:], np.full_like(before[:1], np.nan)]) if before.ndim else before
        trace[f"state/{name}"] = after
    _, params = _physical(wrapped)
    if params is not None:
        trace["delta_t_hours"] = np.asarray(float(params.delta_t_hours))
    return trace


def _save_figure(fig: Any, path: str) -> None:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=100, format="png")
    atomic_write(path, buffer.getvalue())


def transmission_trace_extras(params: Any, n_steps: int) -> dict[str, np.ndarray]:
    """`load_mw` (total load per step of an episode from reset [MW]) and `reward_unit` for
    params of the transmission env, whose trace carries neither; `{}` for other params."""
    try:
        from powerzoojax.grid.transmission import TransGridParams
    except ImportError:
        return {}
    if not isinstance(params, TransGridParams):
        return {}
    profiles = np.asarray(params.load_profiles, np.float64)
    rows = np.arange(n_steps) % profiles.shape[0]
    unit = f"−{float(params.reward_scale):g} × generation cost [$/h]"
    if params.unit_limit_price is not None:
        unit += f", {float(params.unit_limit_price):g} $/MWh outside unit limits"
    return {"load_mw": profiles[rows].sum(axis=1), "reward_unit": np.asarray(unit, dtype=str)}


def write_episode_plots(trace: dict[str, np.ndarray], case: Any, folder: str, title: str) -> list[str]:
    """`episode.png` (`plot_episode`, with the case's unit limits) and, for an env on a case,
    `network.png` (`plot_network` at the episode's busiest step)
    and `episode.gif` (`animate_episode`) in `folder`; returns the paths."""
    from powerzoojax.viz import animate_episode, episode_series, plot_episode, plot_network

    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, "episode.png")]
    series = episode_series(trace)
    limits_case = case if case is not None and series.dispatch is not None and series.dispatch.shape[1] == case.n_units else None
    _save_figure(plot_episode(trace, title=title, case=limits_case), paths[0])
    if case is not None and series.states:
        busiest = int(np.nanargmax(np.nansum(series.dispatch, axis=1))) if series.dispatch is not None else series.n_steps // 2
        path = os.path.join(folder, "network.png")
        _save_figure(plot_network(case, series.state_at(busiest), title=f"{title}: after step {busiest}"), path)
        paths.append(path)
        paths.append(animate_episode(trace, os.path.join(folder, "episode.gif"), case=case))
    return paths


def evaluate_run(
    run: str | os.PathLike, *, episodes: int = 32, split: str = "iid", seed: int | None = None,
    trace_path: str | os.PathLike | None = None, write: bool = True, plots_dir: str | os.PathLike | None = None,
    which: str = "latest",
) -> dict[str, Any]:
    """Evaluate the newest intact checkpoint of a run folder (or a checkpoint file) with the
    deterministic policy, and write the report to `eval.json` in the run folder.

    **Arguments:**

    - `run`: run folder or checkpoint file.
    - `which`: for a run folder, its `"latest"` or `"best"` checkpoint (see
      [`resolve_checkpoint`][powerzoojax.rl.training.resolve_checkpoint]).
    - `episodes`: evaluation episodes.
    - `split`: for a preset that belongs to a benchmark task (`dso-nflex`,
      `dso-nflex-safe`), that task's `iid` or out-of-distribution split; for any other run
      `"iid"` is the training distribution on fresh episodes (seeds disjoint from
      training) and `"ood"` is refused.
    - `seed`: evaluation seed; `None` picks one disjoint from training.
    - `trace_path`: also save one episode (observations, actions, rewards, costs, info and
      env states) as `.npz`, the file [`powerzoojax.viz`][powerzoojax.viz] plots.
    - `write`: write `eval.json`.
    - `plots_dir`: also draw that episode there (see `write_episode_plots`; the report
      lists the files).

    **Returns:**

    The report: the episode return (mean, std, min, max over `episodes`), the summed cost
    and each cost channel (mean episode sum, with its unit, and the fraction of steps it
    was positive), `distinct_episodes` (how many of the episodes differ at all) and, for
    task presets, the task's metrics on one episode. An env without randomness (case 5's
    presets: one fixed load profile, the same initial state) and a deterministic policy give
    identical episodes; the report then says so in `note` rather than presenting a std of
    0 as a measured spread.

    `eval.json` is written before the trace and the plots; a trace or plot folder that
    cannot be written is an `OutputDirError` (one line, naming the path) after it.
    """
    from powerzoojax.rl.training._train import evaluate

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"evaluate: episodes must be a positive integer, got {episodes!r}")
    run = os.fspath(run)
    loaded = load_policy(run, which=which)
    wrapped, task = _split_env(loaded, split)
    seed = loaded.config.seed + _EVAL_SEED_OFFSET if seed is None else seed
    key = jr.PRNGKey(seed)
    out = evaluate(wrapped, lambda k, o: loaded.policy(o, k), key, episodes)
    names = reported_channels(wrapped)
    units = channel_units(wrapped)
    horizon = wrapped.max_steps
    costs = {}
    for i, name in enumerate(names):
        costs[name] = {
            "unit": units[name], **_stats(out["constraint_costs"][:, i]),
            "violation_rate": float(np.mean(out["violation_steps"][:, i]) / horizon),
        }
    sidecar = read_sidecar(loaded.checkpoint)
    report: dict[str, Any] = {
        "checkpoint": os.path.relpath(loaded.checkpoint, run) if os.path.isdir(run) else loaded.checkpoint,
        "preset": loaded.preset,
        "env": wrapped.name,
        "algo": loaded.config.algo,
        "env_steps_trained": sidecar["env_steps"],
        "split": split,
        "episodes": episodes,
        "episode_steps": horizon,
        "seed": seed,
        "source": "deterministic evaluation (mean action) of the checkpoint's policy",
        "return": _stats(out["return"]),
        "cost_sum": _stats(out["cost_sum"]),
        "costs": costs,
        "task_metrics": None,
    }
    if task is not None:
        env, params = _physical(wrapped)
        k_task = jr.fold_in(key, 1)
        agent = task.rollout(env, params, k_task, lambda obs, state, k: loaded.policy(obs, k))
        baseline = task.baseline_rollout(env, params, k_task, task.baseline_names()[0])
        report["task_metrics"] = {k: float(v) for k, v in task.compute_metrics(agent, baseline).items()}
    distinct = _distinct_episodes(out)
    report["distinct_episodes"] = distinct
    if distinct == 1 and episodes > 1:
        report["note"] = (
            f"all {episodes} episodes were identical (std 0 by construction): the env draws nothing at random on "
            "this split (case 5's presets: one fixed load profile and initial state) and the policy is deterministic, "
            "so one episode is the whole evaluation"
        )
    eval_json = os.path.join(run, "eval.json") if write and os.path.isdir(run) else None
    if eval_json is not None:
        # Written before the trace and the plots, so a folder that cannot take them does not lose it.
        atomic_write(eval_json, json.dumps(report, indent=2))
    kept = f"; {eval_json} was written" if eval_json else ""
    trace: dict[str, Any] = {}
    if trace_path is not None or plots_dir is not None:
        trace = _trace(wrapped, loaded.policy, jr.fold_in(key, 2))
        trace["cost_names"] = np.asarray(names, dtype=str)
        trace["cost_units"] = np.asarray([units[n] for n in names], dtype=str)
        trace.update(transmission_trace_extras(_physical(wrapped)[1], int(np.asarray(trace["reward"]).shape[0])))
    if trace_path is not None:
        import io

        buffer = io.BytesIO()
        np.savez(buffer, **trace)
        try:
            atomic_write(os.fspath(trace_path), buffer.getvalue())
        except OSError as err:
            raise OutputDirError(f"cannot write the trace {os.fspath(trace_path)} ({_reason(err)}){kept}") from None
        report["trace"] = os.fspath(trace_path)
    if plots_dir is not None:
        _, params = _physical(wrapped)
        title = f"{loaded.config.algo} on {loaded.preset or wrapped.name}, {split} split"
        try:
            report["plots"] = write_episode_plots(trace, getattr(params, "case", None), os.fspath(plots_dir), title)
        except OSError as err:
            raise OutputDirError(f"cannot write the plots into {os.fspath(plots_dir)} ({_reason(err)}){kept}") from None
    if eval_json is not None and (trace_path is not None or plots_dir is not None):
        atomic_write(eval_json, json.dumps(report, indent=2))
    return report
