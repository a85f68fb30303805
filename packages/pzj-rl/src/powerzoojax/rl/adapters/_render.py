"""`render()` of the adapters: one env state as an `(H, W, 3)` uint8 picture, on the host.

Where `powerzoojax.viz` is installed and the params hold a network (`params.case`), the
picture is its `plot_network` of the state. Otherwise it is a summary drawn here with
matplotlib's Agg canvas (no pyplot, no display): the current observation as bars and the
episode's rewards so far as a line.
"""

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import jax
import numpy as np

FIGURE_SIZE_IN = (6.4, 4.8)
DPI = 80


def _viz_module() -> ModuleType | None:
    try:
        viz = importlib.import_module("powerzoojax.viz")
    except ModuleNotFoundError as err:
        if err.name is not None and "powerzoojax.viz".startswith(err.name):
            return None
        raise
    return viz if hasattr(viz, "plot_network") else None


def figure_rgb(fig: Any) -> np.ndarray:
    """A matplotlib figure as an `(H, W, 3)` uint8 array (drawn on an Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def render_rgb(
    state: Any, params: Any, observation: Any, rewards: Sequence[float], title: str
) -> np.ndarray:
    """One frame of an env.

    **Arguments:**

    - `state`: the env state (one env, not a batch); a multi-agent state's `env_state`.
    - `params`: the env params; a `case` field selects the network picture.
    - `observation`: the current observation (any shape; flattened for the bars).
    - `rewards`: this episode's rewards so far (per step; a team's mean for multi-agent).
    - `title`: what the picture is of (env id or class, step).

    **Returns:** an `(H, W, 3)` uint8 array.
    """
    viz = _viz_module()
    case = getattr(params, "case", None)
    if viz is not None and case is not None:
        host_state = jax.device_get(state)
        fig = viz.plot_network(case, host_state, title=title)
        to_rgb = getattr(viz, "figure_to_rgb", figure_rgb)
        return np.asarray(to_rgb(fig), np.uint8)[..., :3]
    return _summary_frame(np.asarray(jax.device_get(observation), np.float64).reshape(-1), list(rewards), title)


def _summary_frame(observation: np.ndarray, rewards: list[float], title: str) -> np.ndarray:
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI)
    top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": (3, 2)})
    finite = np.where(np.isfinite(observation), observation, 0.0)
    top.bar(np.arange(finite.size), finite, color="tab:blue", width=1.0)
    top.set_title(title, fontsize=10)
    top.set_ylabel("observation")
    top.set_xlim(-0.5, max(finite.size, 1) - 0.5)
    steps = np.arange(1, len(rewards) + 1)
    bottom.plot(steps, rewards, color="tab:green", marker="." if len(rewards) < 50 else None)
    bottom.set_xlabel("step")
    bottom.set_ylabel("reward")
    if not rewards:
        bottom.text(0.5, 0.5, "episode start", ha="center", va="center", transform=bottom.transAxes)
    fig.tight_layout()
    return figure_rgb(fig)
