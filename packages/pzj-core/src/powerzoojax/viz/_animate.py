"""`animate_episode`: an episode as a GIF, the network state step by step beside its time series."""

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from powerzoojax.case import CaseData
from powerzoojax.viz._episode import draw_panel, panels
from powerzoojax.viz._layout import has_coordinates, network_layout
from powerzoojax.viz._mpl import new_figure
from powerzoojax.viz._network import add_colorbars, default_scales, draw_network, network_quantities
from powerzoojax.viz._series import episode_series


def frame_steps(n_steps: int, max_frames: int) -> np.ndarray:
    """Evenly spaced step indices, first and last included, at most `max_frames` of them."""
    return np.unique(np.linspace(0, n_steps - 1, min(n_steps, max_frames)).round().astype(int))


def animate_episode(
    trace: Any,
    path: str | os.PathLike,
    *,
    case: CaseData | None = None,
    fps: float | int = 4.0,
    max_frames: int = 96,
    dpi: int = 80,
    cost_names: Sequence[str] | None = None,
    cost_units: Sequence[str] | None = None,
    load_mw: Any = None,
    delta_t_hours: float | int | None = None,
) -> str:
    """Write one episode as an animated GIF (matplotlib's Pillow writer; host-side, never in `jit`).

    Each frame shows the network after that step (as `plot_network`, with colour
    scales fixed over the episode) when `case` is given and the trace recorded the
    env's state, beside the episode's time series with a cursor at the step.

    **Arguments:**

    - `trace`: one episode, in any form `plot_episode` takes; the network frames
      need its states (a `Trajectory` or an `eval --trace` file carry them).
    - `path`: the `.gif` file to write (its folder must exist).
    - `case`: the network, e.g. `params.case`; None animates the time series alone.
    - `fps`: frames per second.
    - `max_frames`: at most this many frames, evenly spaced over the episode.
    - `dpi`: resolution of the frames.
    - `cost_names`, `cost_units`, `load_mw`, `delta_t_hours`: as for `plot_episode`.

    **Returns:** the path written.
    """
    path = os.fspath(path)
    if not path.lower().endswith(".gif"):
        raise ValueError(f"animate_episode: path must name a .gif file, got {path!r}")
    if case is not None and not isinstance(case, CaseData):
        raise TypeError(f"animate_episode: case must be a CaseData (e.g. params.case), got {type(case).__name__}")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not math.isfinite(fps) or fps <= 0:
        raise ValueError(f"animate_episode: fps must be a positive number, got {fps!r}")
    for name, value in (("max_frames", max_frames), ("dpi", dpi)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"animate_episode: {name} must be a positive integer, got {value!r}")
    s = episode_series(trace, cost_names=cost_names, cost_units=cost_units, load_mw=load_mw, delta_t_hours=delta_t_hours)
    steps = frame_steps(s.n_steps, max_frames)
    network = case is not None and bool(s.states)
    names = [n for n in panels(s) if n != "dispatch"][:3]
    fig = new_figure("animate_episode", (11.0 if network else 7.0, 5.2))
    grid = fig.add_gridspec(len(names), 2 if network else 1, width_ratios=(1.15, 1.0) if network else None)
    series_axes = [fig.add_subplot(grid[i, -1]) for i in range(len(names))]
    for ax in series_axes[1:]:
        ax.sharex(series_axes[0])
    for ax, name in zip(series_axes, names):
        draw_panel(ax, name, s)
    series_axes[-1].set_xlabel(s.time_label)
    cursors = [ax.axvline(s.time[0], color="#d62728", lw=1.2) for ax in series_axes]
    frame_network = None
    if network and case is not None:
        net_ax = fig.add_subplot(grid[:, 0])
        pos = network_layout(case)
        equal = has_coordinates(case)
        quantities = [network_quantities(case, s.state_at(int(t))) for t in steps]
        scales = default_scales(case, quantities)
        frame_network = (case, net_ax, pos, equal, quantities, scales)
    from matplotlib.animation import PillowWriter

    # The stub says int; the writer takes any positive rate (frame duration 1000 / fps ms).
    writer = PillowWriter(fps=fps)  # pyright: ignore[reportArgumentType]
    with writer.saving(fig, path, dpi):
        for i, t in enumerate(steps):
            for cursor in cursors:
                cursor.set_xdata([s.time[t], s.time[t]])
            if frame_network is not None:
                case, net_ax, pos, equal, quantities, scales = frame_network
                net_ax.clear()
                mappables = draw_network(net_ax, case, pos, quantities[i], scales, labels=case.n_nodes <= 40, equal_aspect=equal,
                                         legend=False)
                if i == 0:
                    add_colorbars(fig, net_ax, mappables, quantities[i].ac)
                net_ax.set_title(f"after step {t} (steps 0 to {s.n_steps - 1})")
            else:
                series_axes[0].set_title(f"step {t} (steps 0 to {s.n_steps - 1})")
            writer.grab_frame()
    return path
