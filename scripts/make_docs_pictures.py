"""Regenerate the pictures shown in docs/guides/pictures-and-logging.md.

    uv run python scripts/make_docs_pictures.py

Writes docs/assets/case5-network-ac.png: case 5 under the AC power-flow model after one
step of a fixed dispatch, drawn by powerzoojax.viz.plot_network (line loading against
the ratings, bus voltages, unit outputs).
"""

import os

import jax.numpy as jnp
import jax.random as jr

from powerzoojax.case import load_case
from powerzoojax.envs import TransGridEnv, make_trans_params
from powerzoojax.viz import plot_network

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "assets")


def main() -> None:
    case = load_case("5")
    env = TransGridEnv()
    params = make_trans_params(case, physics=1, max_steps=4)
    _, state = env.reset(jr.PRNGKey(0), params)
    action = jnp.asarray([1.0, 1.0, 0.6, -1.0, -1.0])  # the cheap units high, the dear ones low
    _, state, *_ = env.step(jr.PRNGKey(1), state, action, params)
    fig = plot_network(case, state, title="case 5, AC power flow after one step")
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "case5-network-ac.png")
    fig.savefig(path, dpi=72)
    print(path)


if __name__ == "__main__":
    main()
