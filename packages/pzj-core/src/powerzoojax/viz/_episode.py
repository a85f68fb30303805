"""`plot_episode`: one episode's load, dispatch, prices, reward and costs against time."""

from collections.abc import Sequence
from typing import Any

import numpy as np

import jax

from powerzoojax.viz._mpl import new_figure
from powerzoojax.viz._series import UNDECLARED_UNIT, EpisodeSeries, episode_series

# Units drawn one by one in the dispatch panel; the rest are summed into one line.
MAX_SHOWN_UNITS = 8
_OUTSIDE_COLOUR = "#d7191c"


def _unit_groups(dispatch: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """Unit index groups `(k,)` and labels: the largest producers one by one, the rest together."""
    order = np.argsort(-np.nansum(np.abs(dispatch), axis=0), kind="stable")
    shown = order[:MAX_SHOWN_UNITS] if dispatch.shape[1] > MAX_SHOWN_UNITS + 1 else order
    groups = [np.asarray([i]) for i in shown]
    labels = [f"unit {i}" for i in shown]
    rest = np.setdiff1d(order, shown)
    if rest.size:
        groups.append(rest)
        labels.append(f"{rest.size} other units")
    return groups, labels


def panels(series: EpisodeSeries) -> list[str]:
    """The panels an episode has data for, in drawing order."""
    out = []
    if series.load is not None or series.dispatch is not None:
        out.append("power")
    if series.dispatch is not None:
        out.append("dispatch")
    if series.prices is not None:
        out.append("prices")
    out.append("reward")
    if series.costs is not None and series.costs.shape[1]:
        out.append("costs")
    return out


def _mw_axis(ax: Any, *values: np.ndarray | None) -> None:
    """MW on a plain axis from 0 (or the lowest value): no offset, so float noise on a flat
    series reads as a flat line at its level, not as a curve under `1e-5+7.5e2`."""
    finite = [v[np.isfinite(v)] for v in values if v is not None]
    finite = [v for v in finite if v.size]
    low = min([0.0, *(float(v.min()) for v in finite)])
    high = max([1.0, *(float(v.max()) for v in finite)])
    ax.set_ylim(low - 0.05 * (high - low) if low < 0 else 0.0, high + 0.12 * (high - low))
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)


def _unit_limits(case: Any, n_units: int) -> tuple[np.ndarray, np.ndarray] | None:
    if case is None:
        return None
    p_min = np.asarray(jax.device_get(case.unit_p_min), np.float64)
    p_max = np.asarray(jax.device_get(case.unit_p_max), np.float64)
    if p_min.shape != (n_units,):
        raise ValueError(f"plot_episode: the case has {p_min.shape[0]} units, the episode's dispatch {n_units}")
    return p_min, p_max


def draw_panel(ax: Any, name: str, s: EpisodeSeries, *, case: Any = None, reward_unit: str | None = None) -> None:
    """Draw one panel of `plot_episode` on `ax` (`case`: unit limits for the dispatch panel)."""
    x = s.time
    if name == "power":
        generation = None if s.dispatch is None else s.dispatch.sum(axis=1)
        if s.load is not None:
            ax.plot(x, s.load, color="#222222", lw=2.4, label="load")
        if generation is not None:
            ax.plot(x, generation, color="#e08a00", lw=1.4, ls="--", label="generation (Σ units)")
        _mw_axis(ax, s.load, generation)
        ax.set_ylabel("power [MW]")
    elif name == "dispatch":
        assert s.dispatch is not None  # panels() lists only the panels with data
        limits = _unit_limits(case, s.dispatch.shape[1])
        groups, labels = _unit_groups(s.dispatch)
        outside_any = np.zeros(s.n_steps, bool)
        for k, (group, label) in enumerate(zip(groups, labels)):
            colour = f"C{k % 10}"
            p = s.dispatch[:, group].sum(axis=1)
            line_label = label
            if limits is not None:
                low, high = limits[0][group].sum(), limits[1][group].sum()
                line_label = f"{label} [{low:g}, {high:g}] MW"
                ax.axhline(high, color=colour, lw=0.8, ls=":", alpha=0.9)
                below = s.dispatch[:, group] < limits[0][group] - 1e-3
                above = s.dispatch[:, group] > limits[1][group] + 1e-3
                outside = np.any(below | above, axis=1)
                outside_any |= outside
                if outside.any():
                    ax.plot(x[outside], p[outside], ls="none", marker="x", ms=6, mew=1.6, color=_OUTSIDE_COLOUR)
            ax.plot(x, p, color=colour, lw=1.5, label=line_label)
        if outside_any.any():
            ax.plot([], [], ls="none", marker="x", ms=6, mew=1.6, color=_OUTSIDE_COLOUR,
                    label=f"outside its limits ({int(outside_any.sum())} steps)")
        if limits is not None:
            ax.plot([], [], color="#555555", lw=0.8, ls=":", label="p_max (same colour)")
        _mw_axis(ax, s.dispatch.sum(axis=1) if len(groups) > 1 else None, *(s.dispatch[:, g].sum(axis=1) for g in groups))
        ax.set_ylabel("unit output [MW]")
    elif name == "prices":
        p = s.prices
        assert p is not None  # panels() lists only the panels with data
        if p.shape[1] == 1:
            ax.plot(x, p[:, 0], color="#2c7fb8", lw=1.6, label="price")
        else:
            ax.fill_between(x, np.nanmin(p, axis=1), np.nanmax(p, axis=1), color="#2c7fb8", alpha=0.25, label="bus range")
            ax.plot(x, np.nanmean(p, axis=1), color="#2c7fb8", lw=1.6, label="bus mean")
        ax.set_ylabel("price [$/MWh]")
    elif name == "reward":
        assert s.reward is not None  # episode_series always sets one
        unit = reward_unit or s.reward_unit or UNDECLARED_UNIT
        ax.plot(x, s.reward, color="#31a354", lw=1.6, label=f"reward (episode sum {np.nansum(s.reward):,.6g})")
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.set_ylabel(f"reward per step\n[{unit}]")
    elif name == "costs":
        assert s.costs is not None  # panels() lists only the panels with data
        for i, (channel, unit) in enumerate(zip(s.cost_names, s.cost_units)):
            ax.plot(x, s.costs[:, i], lw=1.4, label=f"{channel} [{unit}] (sum {np.nansum(s.costs[:, i]):,.4g})")
        ax.set_ylabel("cost per step")
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if handles:  # beside the axes, never over the curves
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, framealpha=0.8, borderaxespad=0.0)


def plot_episode(
    trace: Any,
    *,
    cost_names: Sequence[str] | None = None,
    cost_units: Sequence[str] | None = None,
    load_mw: Any = None,
    delta_t_hours: float | int | None = None,
    title: str | None = None,
    case: Any = None,
    reward_unit: str | None = None,
) -> Any:
    """Plot one episode: load and generation, dispatch per unit, prices, reward and costs.

    Host-side matplotlib, never inside `jit`. A panel is drawn when the trace has its
    data: power (`load_mw` and the summed dispatch, on a plain MW axis from 0) [MW],
    output per unit (the eight largest units one by one, the rest summed; with `case`,
    each unit's limits in its legend, its `p_max` dotted and red crosses on the steps a
    unit is outside its limits, e.g. a slack unit past its rating) [MW], prices (one
    price, or the mean and range over buses) [$/MWh], reward per step with its unit, and
    each cost channel per step with its unit. Legends sit beside the panels.

    **Arguments:**

    - `trace`: one episode: a `Trajectory` from `powerzoojax.testing.record_trajectory`,
      the rollout kernel's outputs, the `.npz` written by `python -m powerzoojax eval RUN_DIR
      --trace PATH` (or its path), or a mapping of arrays with the time axis first.
    - `cost_names`, `cost_units`: labels of the cost channels when the trace lacks them
      (e.g. `env.constraint_names(params)`).
    - `load_mw`: load per step `(T,)` or `(T, n_loads)` [MW] when the trace lacks it.
    - `delta_t_hours`: step length in hours, for a time axis in hours.
    - `title`: figure title.
    - `case`: the episode's case (`params.case`), for the units' limits.
    - `reward_unit`: what the reward measures, e.g. `"−0.01 × generation cost [$/h]"`
      (default: the trace's `reward_unit`, else `"env units"`).

    **Returns:** the matplotlib `Figure`.
    """
    s = episode_series(trace, cost_names=cost_names, cost_units=cost_units, load_mw=load_mw, delta_t_hours=delta_t_hours)
    if reward_unit is None:
        reward_unit = s.reward_unit
    names = panels(s)
    fig = new_figure("plot_episode", (10.0, 1.2 + 1.9 * len(names)))
    axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        draw_panel(ax, name, s, case=case, reward_unit=reward_unit)
    axes[-1].set_xlabel(s.time_label)
    fig.suptitle(title if title is not None else f"episode of {s.n_steps} steps")
    return fig
