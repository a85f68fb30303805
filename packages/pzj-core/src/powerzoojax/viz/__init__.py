"""Pictures of networks and episodes (matplotlib; host-side only, never inside `jit`).

* `plot_network`: a case's buses and lines, coloured by one env state (line loading
  against the rating, bus voltage in AC states, unit rings sized by output);
* `plot_episode`: one episode's load, dispatch, prices, reward and cost channels;
* `animate_episode`: the same episode as a GIF, the network state step by step;
* `figure_to_rgb`: a figure as an `(H, W, 3)` uint8 image (for `render()`);
* `network_layout`, `episode_series`: the bus positions and the episode's
  series these pictures are drawn from.

matplotlib comes with `pip install 'pzj-core[viz]'` (pzj-rl installs it too); this
package imports it on first use only, so `import powerzoojax.viz` works without it.
"""

from powerzoojax.viz._animate import animate_episode
from powerzoojax.viz._episode import plot_episode
from powerzoojax.viz._layout import network_layout, spring_layout
from powerzoojax.viz._mpl import figure_to_rgb
from powerzoojax.viz._network import NetworkQuantities, network_quantities, plot_network
from powerzoojax.viz._series import EpisodeSeries, episode_series

__all__ = [
    "EpisodeSeries", "NetworkQuantities", "animate_episode", "episode_series", "figure_to_rgb", "network_layout",
    "network_quantities", "plot_episode", "plot_network", "spring_layout",
]
