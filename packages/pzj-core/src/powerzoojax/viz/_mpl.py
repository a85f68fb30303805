"""matplotlib on demand: the one place that imports it, and figures that never touch pyplot.

Figures are built as bare `matplotlib.figure.Figure` objects, so drawing one neither
opens a window nor changes pyplot's global backend (a notebook keeps its own); Jupyter
still shows a returned figure, and `fig.savefig` renders it with Agg.
"""

from typing import Any

import numpy as np

INSTALL_HINT = "pip install 'pzj-core[viz]'"


def matplotlib_module(what: str) -> Any:
    """The `matplotlib` package, or an `ImportError` naming `what` needs it and how to install it."""
    try:
        import matplotlib
    except ModuleNotFoundError as err:
        if err.name is not None and err.name.split(".")[0] == "matplotlib":
            raise ImportError(f"{what} needs matplotlib: {INSTALL_HINT}") from None
        raise
    return matplotlib


def new_figure(what: str, figsize: tuple[float, float]) -> Any:
    """An empty `Figure` of `figsize` inches, laid out by matplotlib's constrained layout."""
    matplotlib_module(what)
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def figure_to_rgb(fig: Any) -> np.ndarray:
    """Render a matplotlib figure into an RGB image array (Agg, no window, no pyplot).

    **Arguments:**

    - `fig`: a `matplotlib.figure.Figure` (from `plot_network`, `plot_episode`
      or pyplot).

    **Returns:** `uint8` array of shape `(height, width, 3)` in pixels (the figure's
    size in inches times its dpi), as `render()` of a Gymnasium env returns it.
    """
    matplotlib_module("figure_to_rgb")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"figure_to_rgb: expected a matplotlib Figure, got {type(fig).__name__}")
    previous = fig.canvas
    canvas = FigureCanvasAgg(fig)  # attaches itself to fig: the figure's own canvas is put back after
    try:
        canvas.draw()
        rgb = np.array(canvas.buffer_rgba(), dtype=np.uint8)[..., :3]
    finally:
        fig.set_canvas(previous)
    return rgb
