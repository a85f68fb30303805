"""One episode's time series, from whichever form the episode was recorded in.

Accepted forms, all host-side NumPy once read:

* a `Trajectory` (`powerzoojax.testing.record_trajectory`);
* the outputs of the rollout kernel, `rollout(step_fn, ...)` or its `outputs` tuple,
  for a bare env `(obs, reward, costs, done, info, ...)` or a bound wrapper
  `(obs, reward, done, info, ...)`;
* the `.npz` trace of `python -m powerzoojax eval RUN_DIR --trace PATH` (or its path),
  or any mapping with the same keys: `reward`, `constraint_costs`, `cost_names`,
  `cost_units`, `reward_unit`, `load_mw`, `done`, `delta_t_hours`, `info/<key>` and
  `state/<field>`.

Series are found by name: load `load_mw` (in the trace or its info), dispatch
`unit_power_mw` (state) / `unit_power` / `realized_p_mw` (info), prices `lmp` /
`bus_lmp` (info) or `lmp` (state).
"""

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

UNDECLARED_UNIT = "env units"


@dataclass(frozen=True)
class EpisodeSeries:
    """One episode on the host, every array with the time axis `T` first.

    **Arguments:**

    - `n_steps`: the episode length `T`.
    - `reward`: `(T,)` reward per step.
    - `costs`: `(T, n_costs)` constraint costs per step.
    - `cost_names`, `cost_units`: a name and a unit per cost channel.
    - `load`: `(T,)` total load [MW].
    - `dispatch`: `(T, n_units)` unit output [MW].
    - `prices`: `(T,)` or `(T, n_buses)` prices or LMPs [$/MWh].
    - `done`: `(T,)` episode-end flags.
    - `delta_t_hours`: the step length [h], when known.
    - `reward_unit`: what the reward measures, when the trace says (`reward_unit`).
    - `states`: the float fields of the state each step returned, keyed by field name
      (NaN on a terminal step, whose returned state already belongs to the next episode).
    """

    n_steps: int
    reward: np.ndarray | None = None
    costs: np.ndarray | None = None
    cost_names: tuple[str, ...] = ()
    cost_units: tuple[str, ...] = ()
    load: np.ndarray | None = None
    dispatch: np.ndarray | None = None
    prices: np.ndarray | None = None
    done: np.ndarray | None = None
    delta_t_hours: float | None = None
    reward_unit: str | None = None
    states: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def time(self) -> np.ndarray:
        """Hours from the episode start when `delta_t_hours` is known, else step indices."""
        steps = np.arange(self.n_steps, dtype=np.float64)
        return steps * self.delta_t_hours if self.delta_t_hours else steps

    @property
    def time_label(self) -> str:
        """The time axis label: `"time [h]"` when the step length is known, else `"step"`."""
        return "time [h]" if self.delta_t_hours else "step"

    def state_at(self, t: int) -> dict[str, np.ndarray]:
        """The recorded state fields after one step.

        **Arguments:**

        - `t`: the step index; on a terminal step the nearest earlier finite record is used.

        **Returns:**

        A dict from field name to that step's value.
        """
        out = {}
        for name, values in self.states.items():
            k = t
            while k > 0 and not np.all(np.isfinite(values[k])):
                k -= 1
            out[name] = np.asarray(values[k])
        return out


def _host(tree: Any) -> Any:
    return jax.tree.map(lambda x: np.asarray(jax.device_get(x)), tree)


def _state_fields(states: Any, done: np.ndarray | None) -> dict[str, np.ndarray]:
    """Float fields of a stacked state (wrapper states unwrapped), NaN on terminal steps."""
    from powerzoojax.viz._network import _env_state

    inner = _env_state(states)
    if isinstance(inner, Mapping):
        items = list(inner.items())
    elif dataclasses.is_dataclass(inner):
        items = [(f.name, getattr(inner, f.name)) for f in dataclasses.fields(inner)]
    else:
        items = []
    out = {}
    for name, value in items:
        if isinstance(value, (jax.Array, np.ndarray)) and np.issubdtype(np.asarray(value).dtype, np.floating):
            arr = np.array(value, np.float64)
            if done is not None and arr.ndim >= 1 and arr.shape[0] == done.shape[0]:
                arr[np.asarray(done, bool)] = np.nan
            out[name] = arr
    return out


def _from_trajectory(traj: Any) -> dict[str, Any]:
    done = np.asarray(traj.done, bool)
    flat: dict[str, Any] = {"reward": traj.reward, "constraint_costs": traj.costs, "done": done}
    flat.update({f"info/{k}": v for k, v in traj.info.items()})
    flat.update({f"state/{k}": v for k, v in _state_fields(_host(traj.next_state), done).items()})
    return flat


def _from_outputs(outs: Sequence[Any]) -> dict[str, Any]:
    where = [i for i, x in enumerate(outs) if isinstance(x, Mapping)]
    if len(outs) < 4 or not where or where[0] < 3:
        raise ValueError(
            "episode_series: expected the rollout kernel's outputs (obs, reward, [costs,] done, info, ...), "
            f"got a tuple of {len(outs)} items"
        )
    info = outs[where[0]]
    flat: dict[str, Any] = {"reward": outs[1], "done": outs[where[0] - 1]}
    if where[0] == 4:
        flat["constraint_costs"] = outs[2]
    elif "constraint_costs" in info:
        flat["constraint_costs"] = info["constraint_costs"]
    flat.update({f"info/{k}": v for k, v in info.items()})
    return flat


def _flatten(trace: Any) -> dict[str, Any]:
    from powerzoojax.core import Trajectory

    if isinstance(trace, (str, os.PathLike)):
        with np.load(os.fspath(trace), allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    if isinstance(trace, Trajectory):
        return _from_trajectory(trace)
    if isinstance(trace, Mapping) or hasattr(trace, "files"):
        # An NpzFile lists its arrays in `files`; a Mapping is narrowed here, hence the ignore.
        keys = trace.files if hasattr(trace, "files") else list(trace)  # pyright: ignore[reportAttributeAccessIssue]
        flat = {}
        for k in keys:
            v = trace[k]
            if isinstance(v, Mapping) and k in ("info", "state"):
                flat.update({f"{k}/{name}": x for name, x in v.items()})
            else:
                flat[k] = v
        return flat
    if isinstance(trace, tuple) and len(trace) == 3 and isinstance(trace[2], tuple):
        return _from_outputs(trace[2])  # rollout(...) = (final_state, final_obs, outputs)
    if isinstance(trace, tuple):
        return _from_outputs(trace)
    raise TypeError(
        "episode_series: trace must be a Trajectory, the rollout kernel's outputs, an eval --trace .npz "
        f"(or its path) or a mapping of arrays, got {type(trace).__name__}"
    )


def _first(flat: dict[str, Any], names: tuple[str, ...]) -> np.ndarray | None:
    for name in names:
        if name in flat and flat[name] is not None:
            return np.asarray(jax.device_get(flat[name]), np.float64)
    return None


def _names(value: Any) -> tuple[str, ...]:
    return () if value is None else tuple(str(v) for v in np.asarray(value).reshape(-1))


def episode_series(
    trace: Any,
    *,
    cost_names: Sequence[str] | None = None,
    cost_units: Sequence[str] | None = None,
    load_mw: Any = None,
    delta_t_hours: float | int | None = None,
) -> EpisodeSeries:
    """Read one recorded episode into named series (see the module docstring for the forms).

    **Arguments:**

    - `trace`: the episode, in any of the accepted forms; time axis first, one episode.
    - `cost_names`, `cost_units`: labels of the cost channels (default: the trace's own,
      else `channel <i>` in `env units`).
    - `load_mw`: the load per step, `(T,)` or `(T, n_loads)` [MW] (summed over loads),
      when the trace does not carry it (e.g. `params.load_profiles[:T]`).
    - `delta_t_hours`: step length, for a time axis in hours (default: the trace's, else steps).

    **Returns:** an `EpisodeSeries`.
    """
    flat = _flatten(trace)
    reward = _first(flat, ("reward",))
    if reward is None:
        raise ValueError(f"episode_series: the trace has no 'reward' series (keys: {sorted(flat)})")
    if reward.ndim != 1:
        raise ValueError(
            f"episode_series: reward has shape {reward.shape}; one episode is expected (time axis only): "
            "index the batch first"
        )
    n_steps = reward.shape[0]
    costs = _first(flat, ("constraint_costs", "costs"))
    if costs is not None and costs.ndim == 1:
        costs = costs[:, None]
    n_costs = 0 if costs is None else costs.shape[1]
    names = tuple(cost_names) if cost_names is not None else _names(flat.get("cost_names"))
    units = tuple(cost_units) if cost_units is not None else _names(flat.get("cost_units"))
    if n_costs and len(names) != n_costs:
        names = tuple(f"channel {i}" for i in range(n_costs))
    if n_costs and len(units) != n_costs:
        units = (UNDECLARED_UNIT,) * n_costs
    load = np.asarray(load_mw, np.float64) if load_mw is not None else _first(flat, ("load_mw", "info/load_mw"))
    if load is not None:
        load = load.reshape(load.shape[0], -1).sum(axis=1)
        if load.shape[0] != n_steps:
            raise ValueError(f"episode_series: load_mw has {load.shape[0]} steps, the episode {n_steps}")
    dispatch = _first(flat, ("state/unit_power_mw", "info/unit_power", "info/realized_p_mw", "info/unit_power_mw"))
    prices = _first(flat, ("info/lmp", "info/bus_lmp", "state/lmp"))
    done = flat.get("done")
    dt = delta_t_hours if delta_t_hours is not None else flat.get("delta_t_hours")
    states = {k[len("state/"):]: np.asarray(v, np.float64) for k, v in flat.items() if k.startswith("state/")}
    reward_unit = _names(flat.get("reward_unit"))
    return EpisodeSeries(
        n_steps=n_steps, reward=reward, costs=costs, cost_names=names, cost_units=units, load=load,
        dispatch=None if dispatch is None else dispatch.reshape(n_steps, -1),
        prices=None if prices is None else prices.reshape(n_steps, -1),
        done=None if done is None else np.asarray(done, bool),
        delta_t_hours=None if dt is None else float(np.asarray(dt)), states=states,
        reward_unit=reward_unit[0] if len(reward_unit) == 1 else None,
    )
