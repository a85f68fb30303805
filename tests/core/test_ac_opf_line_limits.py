"""AC-OPF with binding flow limits against PYPOWER ``runopf`` (case 14, ratings imposed).

Case 14 ships without line ratings, so the case-14 conformance runs never touch the
flow-limit rows. Here the four most loaded lines of the reference's unconstrained optimum
get ratings of 80-85 % of that flow; at least two of them bind in both solutions. The
reference reads the MATPOWER tables (``matpowercaseframes``), not our registry.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pypower.api import ppoption, runopf
from reference_matpower import matpower_ppc

from powerzoojax.case import load_case
from powerzoojax.physics import ac_opf, make_ac_opf_setup
from powerzoojax.utils.jax_utils import enable_x64

PD, QD, RATE_A = 2, 3, 5
PF, QF, PT, QT, MU_SF, MU_ST = 13, 14, 15, 16, 17, 18
# PYPOWER's PIPS fails on a case with no flow row at all (an (n, 1) vs (n,) concat in
# pips.py), so "unrated" is written as a rating no flow reaches.
NO_RATING_MVA = 9900.0
RATING_FRACTIONS = (0.85, 0.85, 0.8, 0.85)
OUR_UNRATED_MVA = 1e6  # what our registry stores for "no rating" (≥ 1e5 is unmonitored)


def _ppc(scale: float, rate: np.ndarray | None = None) -> dict:
    ppc = matpower_ppc("case14")
    ppc["bus"][:, PD] *= scale
    ppc["bus"][:, QD] *= scale
    ppc["branch"][:, RATE_A] = NO_RATING_MVA if rate is None else rate
    return ppc


def _s_max(branch: np.ndarray) -> np.ndarray:
    return np.maximum(np.hypot(branch[:, PF], branch[:, QF]), np.hypot(branch[:, PT], branch[:, QT]))


@functools.cache
def _rated_lines() -> np.ndarray:
    ref = runopf(_ppc(1.0), ppoption(VERBOSE=0, OUT_ALL=0))
    assert ref["success"]
    return np.argsort(-_s_max(ref["branch"]))[: len(RATING_FRACTIONS)]


@functools.cache
def _solver():
    """One compile for every scenario: the setup is an argument (same monitored set)."""
    return jax.jit(lambda setup, pd, qd: ac_opf(setup, pd, qd))


@pytest.mark.parametrize("scale", [1.0, 1.08])
def test_binding_flow_limits_match_pypower_runopf(scale):
    free = runopf(_ppc(scale), ppoption(VERBOSE=0, OUT_ALL=0))
    assert free["success"]
    lines = _rated_lines()
    rate = np.full(free["branch"].shape[0], NO_RATING_MVA)
    rate[lines] = np.asarray(RATING_FRACTIONS) * _s_max(free["branch"])[lines]
    ref = runopf(_ppc(scale, rate), ppoption(VERBOSE=0, OUT_ALL=0))
    assert ref["success"]
    ref_binding = (ref["branch"][:, MU_SF] + ref["branch"][:, MU_ST]) > 1e-6
    assert ref_binding.sum() >= 2 and ref["f"] > free["f"] * (1 + 1e-4)  # the limits matter

    case = load_case("14", source="matpower")
    cap = np.where(rate < NO_RATING_MVA, rate, OUR_UNRATED_MVA)
    with enable_x64():
        rated_case = eqx.tree_at(
            lambda c: (c.line_cap, c.line_floor), case,
            (jnp.asarray(cap, case.line_cap.dtype), jnp.asarray(-cap, case.line_cap.dtype)),
        )
        setup = make_ac_opf_setup(rated_case, dtype=jnp.float64)
        res = _solver()(setup, jnp.asarray(ref["bus"][:, PD]), jnp.asarray(ref["bus"][:, QD]))
        assert bool(res.converged) and float(res.max_mismatch) < 1e-6
        s_ours = np.maximum(np.asarray(res.line_s_from_mva), np.asarray(res.line_s_to_mva))
        objective = float(res.objective)
    assert objective == pytest.approx(ref["f"], rel=1e-3)
    # Limits hold at our solution, and the reference's binding lines are binding here too.
    assert np.all(s_ours[lines] <= rate[lines] * (1 + 1e-6) + 1e-4)
    np.testing.assert_allclose(s_ours[ref_binding], rate[ref_binding], rtol=1e-3)
    np.testing.assert_allclose(s_ours, _s_max(ref["branch"]), atol=0.5)
