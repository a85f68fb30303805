"""`plot_episode`: one episode's load, dispatch, prices, reward and costs against time."""

from collections.abc import Sequence
from typing import Any

import numpy as np

from powerzoojax.viz._mpl import new_figure
from powerzoojax.viz._series import EpisodeSeries, episode_series

# Units drawn one by one in the dispatch stack; the rest are summed into one band.
MAX_STACKED_UNITS = 8


def _dispatch_bands(dispatch: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """The stacked bands `(T,)` and labels: the largest producers, then the others summed."""
    # NaN (a terminal step's state, see EpisodeSeries) stays NaN: the stack has a gap there.
    produced = np.maximum(dispatch, 0.0)
    order = np.argsort(-np.nansum(produced, axis=0), kind="stable")
    shown = order[:MAX_STACKED_UNITS] if produced.shape[1] > MAX_STACKED_UNITS + 1 else order
    bands = [produced[:, i] for i in shown]
    labels = [f"unit {i}" for i in shown]
    rest = np.setdiff1d(order, shown)
    if rest.size:
        bands.append(produced[:, rest].sum(axis=1))
        labels.append(f"{rest.size} other units")
    return bands, labels


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


def draw_panel(ax: Any, name: str, s: EpisodeSeries) -> None:
    """Draw one panel of `plot_episode` on `ax`."""
    x = s.time
    if name == "power":
        if s.load is not None:
            ax.plot(x, s.load, color="#222222", lw=1.8, label="load")
        if s.dispatch is not None:
            ax.plot(x, s.dispatch.sum(axis=1), color="#e08a00", lw=1.4, ls="--", label="generation")
        ax.set_ylabel("power [MW]")
    elif name == "dispatch":
        assert s.dispatch is not None  # panels() lists only the panels with data
        bands, labels = _dispatch_bands(s.dispatch)
        ax.stackplot(x, *bands, labels=labels, alpha=0.85)
        ax.set_ylabel("dispatch [MW]")
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
        ax.plot(x, s.reward, color="#31a354", lw=1.6, label=f"reward (episode sum {np.nansum(s.reward):.4g})")
        ax.set_ylabel("reward per step")
    elif name == "costs":
        assert s.costs is not None  # panels() lists only the panels with data
        for i, (channel, unit) in enumerate(zip(s.cost_names, s.cost_units)):
            ax.plot(x, s.costs[:, i], lw=1.4, label=f"{channel} [{unit}] (sum {np.nansum(s.costs[:, i]):.4g})")
        ax.set_ylabel("cost per step")
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="upper left", fontsize=7, ncol=2 if len(handles) > 4 else 1, framealpha=0.8)


def plot_episode(
    trace: Any,
    *,
    cost_names: Sequence[str] | None = None,
    cost_units: Sequence[str] | None = None,
    load_mw: Any = None,
    delta_t_hours: float | int | None = None,
    title: str | None = None,
) -> Any:
    """Plot one episode: load and generation, dispatch per unit, prices, reward and costs.

    Host-side matplotlib, never inside `jit`. A panel is drawn when the trace has its
    data: power (`load_mw` and the summed dispatch) [MW], dispatch stacked by unit
    (the eight largest producers, the rest summed; units absorbing power are left out of
    the stack, not of the generation line) [MW], prices (one price, or the mean
    and range over buses) [$/MWh], reward per step, and each cost channel per step with
    its unit.

    **Arguments:**

    - `trace`: one episode: a `Trajectory` from `powerzoojax.testing.record_trajectory`,
      the rollout kernel's outputs, the `.npz` written by `python -m powerzoojax eval RUN_DIR
      --trace PATH` (or its path), or a mapping of arrays with the time axis first.
    - `cost_names`, `cost_units`: labels of the cost channels when the trace lacks them
      (e.g. `env.constraint_names(params)`).
    - `load_mw`: load per step `(T,)` or `(T, n_loads)` [MW] when the trace lacks it.
    - `delta_t_hours`: step length in hours, for a time axis in hours.
    - `title`: figure title.

    **Returns:** the matplotlib `Figure`.
    """
    s = episode_series(trace, cost_names=cost_names, cost_units=cost_units, load_mw=load_mw, delta_t_hours=delta_t_hours)
    names = panels(s)
    fig = new_figure("plot_episode", (8.0, 1.2 + 1.9 * len(names)))
    axes = fig.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        draw_panel(ax, name, s)
    axes[-1].set_xlabel(s.time_label)
    fig.suptitle(title if title is not None else f"episode of {s.n_steps} steps")
    return fig
