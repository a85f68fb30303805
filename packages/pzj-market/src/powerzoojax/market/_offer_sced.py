"""Exact offer-based security-constrained economic dispatch (SCED), solved in the graph.

The LP is over segment increments `δ` above each unit's (ramp-adjusted) minimum output
`p_lo` (`n = n_units · n_segments` variables):

    min  cᵀδ   s.t.   1ᵀδ = D,   0 ≤ δ ≤ δ̄,   floor ≤ M_S δ + f0 ≤ cap

with `c` the offer prices [$/MWh], `δ̄` the segment widths [MW], `D = Σload − Σp_lo`,
`M_S` the unit PTDF repeated per segment and `f0 = M_u p_lo − PTDF·load` the line flows
at minimum output [MW]. Only lines with a real limit (below `UNLIMITED_MW`) become LP
rows. The solver is a bounded dual simplex (`._dual_simplex`), float32, jit- and
vmap-able, never branching on the host, started from the network-blind merit order, with a
bound-flipping ratio test; it pivots only when a limited line binds (case 5: at most a
handful of pivots) and stops at the exact optimal vertex. LMPs are the duals of that
basis, `LMP = y₀ + PTDF[lim]ᵀ y_lim`. Validated against HiGHS (dispatch, objective,
unique duals and the infeasibility verdict).

There is no interior-point option: telling offers a tenth of a cent apart takes cost
differences far below float32's resolution of the duality gap, while a vertex method
compares the prices themselves.

Outcomes are values, never NaN: `status` is a `SolverStatus`, `successful` (optimal),
`infeasible` (demand outside what the offered capacity can serve; the dispatch is then
the closest merit-order fill and the prices are zero) or `max_steps_reached` (the LP
ended without an optimal basis: line limits that cannot be met, or the pivot budget ran
out; the dispatch is then the network-blind merit-order fill). `throw=True` raises
instead on every status but `successful`.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core._types import FloatScalar
from powerzoojax.physics._dual_simplex import bounded_dual_simplex, matvec, merit_order_start
from powerzoojax.physics._status import SolverStatus, is_successful, raise_if_failed
from powerzoojax.market._sced_grad import sced_kkt_derivatives
from powerzoojax.market._segments import _check_n_segments, make_cost_segments
from powerzoojax.core import _precision as hp

SOLVER_METHODS = ("simplex",)
UNLIMITED_MW = 1e5  # line limits at or beyond this are treated as absent
_MIN_WIDTH_MW = 1e-4  # keeps a strict interior for segments squeezed shut by ramp bounds


class OfferSCEDSetup(eqx.Module):
    """Host-precomputed SCED operators of one case (float32 leaves, static dimensions); build
    with [`prepare_offer_sced`][powerzoojax.market.prepare_offer_sced].

    **Arguments:**

    - `ptdf`: `(n_lines, n_nodes)` PTDF.
    - `ptdf_units`: `(n_lines, n_units)` PTDF of the units' buses.
    - `ptdf_segments`: `(n_lines, n_vars)` PTDF of each offer segment.
    - `nodes_units_map`: `(n_nodes, n_units)` unit-to-node map.
    - `p_min`, `p_max`: `(n_units,)` limits [MW].
    - `line_cap`, `line_floor`: `(n_lines,)` limits [MW].
    - `limited_lines`: `(n_limited,)` lines with finite limits.
    - `base_seg_widths`, `base_seg_prices`: `(n_units, n_segments)` truthful segments [MW,
      $/MWh].
    - `mc_a`, `mc_b`, `mc_c`: `(n_units,)` marginal-cost coefficients.
    - `n_nodes`, `n_units`, `n_lines`, `n_segments`: sizes (static).
    """

    ptdf: Float[Array, "n_lines n_nodes"]
    ptdf_units: Float[Array, "n_lines n_units"]
    ptdf_segments: Float[Array, "n_lines n_vars"]
    nodes_units_map: Float[Array, "n_nodes n_units"]
    p_min: Float[Array, " n_units"]
    p_max: Float[Array, " n_units"]
    line_cap: Float[Array, " n_lines"]
    line_floor: Float[Array, " n_lines"]
    limited_lines: Int[Array, " n_limited"]
    base_seg_widths: Float[Array, "n_units n_segments"]
    base_seg_prices: Float[Array, "n_units n_segments"]
    mc_a: Float[Array, " n_units"]
    mc_b: Float[Array, " n_units"]
    mc_c: Float[Array, " n_units"]
    n_nodes: int = eqx.field(static=True)
    n_units: int = eqx.field(static=True)
    n_lines: int = eqx.field(static=True)
    n_segments: int = eqx.field(static=True)


class OfferSCEDResult(eqx.Module):
    """One SCED clearing. Powers in MW, prices in $/MWh, costs in $/h.

    **Arguments:**

    - `unit_power`: `(n_units,)` dispatch.
    - `segment_delta`: `(n_units, n_segments)` accepted MW per segment.
    - `line_flow`: `(n_lines,)` flows.
    - `node_injection`: `(n_nodes,)` net injections.
    - `lmp`: `(n_nodes,)` prices.
    - `lambda_balance`: system price.
    - `mu_upper`, `mu_lower`: `(n_lines,)` line duals.
    - `offer_cost`: cost at the accepted offers.
    - `total_cost`: true generation cost.
    - `status`: a [`SolverStatus`][powerzoojax.physics.SolverStatus]: `successful`,
      `infeasible` (demand outside the offered capacity) or `max_steps_reached` (no
      optimal basis: line limits that cannot be met, or the pivot budget spent).
    - `iterations`: pivots taken.

    `converged` (optimal) and `is_feasible` (the load lies within the capacity range)
    are read from `status`.
    """

    unit_power: Float[Array, " n_units"]
    segment_delta: Float[Array, "n_units n_segments"]
    line_flow: Float[Array, " n_lines"]
    node_injection: Float[Array, " n_nodes"]
    lmp: Float[Array, " n_nodes"]
    lambda_balance: Float[Array, ""]
    mu_upper: Float[Array, " n_lines"]
    mu_lower: Float[Array, " n_lines"]
    offer_cost: Float[Array, ""]
    total_cost: Float[Array, ""]
    status: SolverStatus
    iterations: Int[Array, ""]

    @property
    def converged(self) -> Bool[Array, "*batch"]:
        """The clearing is optimal (`status` is `successful`)."""
        return is_successful(self.status)

    @property
    def is_feasible(self) -> Bool[Array, "*batch"]:
        """The load lies within the offered capacity (`status` is not `infeasible`)."""
        return self.status != SolverStatus.infeasible


def prepare_offer_sced(
    case: CaseData,
    n_segments: int = 3,
    line_cap: Float[np.ndarray, " n_lines"] | None = None,
    line_floor: Float[np.ndarray, " n_lines"] | None = None,
) -> OfferSCEDSetup:
    """Build the SCED operators of `case` on the host.

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `n_segments`: offer segments per unit.
    - `line_cap`, `line_floor`: `(n_lines,)` limit overrides [MW]; limits of magnitude
      `UNLIMITED_MW` or more (and 0, MATPOWER's "unlimited") become `±UNLIMITED_MW`.

    **Returns:**

    [`OfferSCEDSetup`][powerzoojax.market.OfferSCEDSetup].
    """
    n_segments = _check_n_segments("prepare_offer_sced", n_segments)
    if not isinstance(case, CaseData):
        raise TypeError(f"prepare_offer_sced: case must be a CaseData, got {type(case).__name__}")
    ptdf = np.asarray(case.ptdf, np.float64)
    units_map = np.asarray(case.nodes_units_map, np.float64)
    m_u = ptdf @ units_map
    cap = np.asarray(case.line_cap if line_cap is None else line_cap, np.float64)
    floor = np.asarray(case.line_floor if line_floor is None else line_floor, np.float64)
    for name, arr in (("line_cap", cap), ("line_floor", floor)):
        if arr.shape != (case.n_lines,) or not np.all(np.isfinite(arr)):
            raise ValueError(f"prepare_offer_sced: {name} must be finite with shape ({case.n_lines},), got {arr.shape}")
    cap = np.where((cap == 0) | (cap >= UNLIMITED_MW), UNLIMITED_MW, cap)
    floor = np.where((floor == 0) | (floor <= -UNLIMITED_MW), -UNLIMITED_MW, floor)
    if np.any(floor > cap):
        bad = int(np.argmax(floor > cap))
        raise ValueError(f"prepare_offer_sced: line {bad} has floor {floor[bad]} above cap {cap[bad]}")
    segments = make_cost_segments(case, n_segments)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return OfferSCEDSetup(
        ptdf=f32(ptdf),
        ptdf_units=f32(m_u),
        ptdf_segments=f32(np.repeat(m_u, n_segments, axis=1)),
        nodes_units_map=f32(units_map),
        p_min=f32(case.unit_p_min),
        p_max=f32(case.unit_p_max),
        line_cap=f32(cap),
        line_floor=f32(floor),
        # Only lines with a real limit become LP rows: the others can never bind.
        limited_lines=jnp.asarray(np.flatnonzero((cap < UNLIMITED_MW) | (floor > -UNLIMITED_MW)), jnp.int32),
        base_seg_widths=segments.seg_widths,
        base_seg_prices=segments.seg_prices,
        mc_a=f32(case.unit_cost_a),
        mc_b=f32(case.unit_cost_b),
        mc_c=f32(case.unit_cost_c),
        n_nodes=case.n_nodes,
        n_units=case.n_units,
        n_lines=case.n_lines,
        n_segments=n_segments,
    )


def _total_cost(p: Float[Array, " n_units"], a: Float[Array, " n_units"], b: Float[Array, " n_units"], c: Float[Array, " n_units"]) -> FloatScalar:
    return jnp.sum((((a / 3.0) * p + b / 2.0) * p + c) * p, axis=0)


# Jitted so that an eager caller (the conformance kit runs envs op by op) compiles the
# clearing once instead of re-tracing its loop on every call; inside a jit it inlines.
@functools.partial(jax.jit, static_argnames=("max_iter", "tol", "method", "throw"))
def offer_sced(
    setup: OfferSCEDSetup,
    node_load_mw: Float[Array, " n_nodes"],
    offer_prices: Float[Array, "n_units n_segments"] | None = None,
    p_min_rt: Float[Array, " n_units"] | None = None,
    p_max_rt: Float[Array, " n_units"] | None = None,
    max_iter: int = 30,
    tol: float = 1e-5,
    method: str = "simplex",
    throw: bool = False,
) -> OfferSCEDResult:
    """Clear the market: dispatch, LMPs and status for nodal loads and offers.

    The segment widths are scaled to the runtime headroom, so the LP keeps its shape. The
    dual simplex stops at the exact optimal vertex.

    **Arguments:**

    - `setup`: the [`OfferSCEDSetup`][powerzoojax.market.OfferSCEDSetup].
    - `node_load_mw`: `(n_nodes,)` loads [MW].
    - `offer_prices`: `(n_units, n_segments)` offers [$/MWh]; `None` offers the truthful
      segments.
    - `p_min_rt`, `p_max_rt`: `(n_units,)` runtime (ramp) bounds [MW].
    - `max_iter`: pivot budget (raised to `4 · (limited lines + 1)` at least; static).
    - `tol`: kept for the reference signature; does not change the result (static).
    - `method`: the solver, `"simplex"` (static).
    - `throw`: raise (at run time, also under `jit`) with the status's message unless it
      is `successful` (static); by default failure is only reported in `status`.

    **Returns:**

    [`OfferSCEDResult`][powerzoojax.market.OfferSCEDResult].
    """
    if method not in SOLVER_METHODS:
        raise ValueError(f"offer_sced: method must be one of {SOLVER_METHODS}, got {method!r}")
    n = setup.n_units * setup.n_segments
    prices = setup.base_seg_prices if offer_prices is None else jnp.asarray(offer_prices, jnp.float32)
    node_load_mw = jnp.asarray(node_load_mw, jnp.float32)

    if p_min_rt is None and p_max_rt is None:
        p_lo = setup.p_min
        widths = setup.base_seg_widths
    else:
        p_min_rt = setup.p_min if p_min_rt is None else p_min_rt
        p_max_rt = setup.p_max if p_max_rt is None else p_max_rt
        p_lo = jnp.minimum(p_min_rt, p_max_rt - 1e-3)
        span = jnp.maximum(setup.p_max - setup.p_min, 1e-6)
        widths = setup.base_seg_widths * jnp.clip((p_max_rt - p_lo) / span, 0.0, 1.0)[:, None]

    c = prices.reshape(n)
    wbar = jnp.maximum(widths.reshape(n), _MIN_WIDTH_MW)
    f0 = matvec(setup.ptdf_units, p_lo) - matvec(setup.ptdf, node_load_mw)
    demand_raw = jnp.sum(node_load_mw, axis=0) - jnp.sum(p_lo, axis=0)
    capacity = jnp.sum(wbar, axis=0)
    is_feasible = (demand_raw >= 0.0) & (demand_raw <= capacity)
    demand = jnp.clip(demand_raw, 0.01, capacity - 0.01)
    result = _offer_sced_simplex(setup, node_load_mw, p_lo, c, wbar, f0, demand_raw, demand, capacity, is_feasible, max_iter)
    return raise_if_failed(result, result.status, throw)


def _offer_sced_simplex(
    setup: OfferSCEDSetup,
    node_load_mw: Float[Array, " n_nodes"],
    p_lo: Float[Array, " n_units"],
    c: Float[Array, " n_vars"],
    wbar: Float[Array, " n_vars"],
    f0: Float[Array, " n_lines"],
    demand_raw: FloatScalar,
    demand: FloatScalar,
    capacity: FloatScalar,
    is_feasible: Bool[Array, ""],
    max_iter: int,
) -> OfferSCEDResult:
    """The SCED LP by the bounded dual simplex (see [`offer_sced`][powerzoojax.market.offer_sced]).

    Variables `[δ, g]` with `g = M_S[lim] δ` the limited lines' flow above `f0`:
    rows `1ᵀδ = D` and `M_S[lim] δ − g = 0`, bounds `0 ≤ δ ≤ δ̄` and
    `floor − f0 ≤ g ≤ cap − f0`. The merit order (every segment cheaper than the
    marginal one full) with every `g` basic is dual feasible, and its basis inverse is
    the basis itself, so no factorisation is ever needed. With duals `y` of the optimal
    basis, `LMP = y₀ + PTDF[lim]ᵀ y_lim` (the load enters `D` and the bounds of `g`).
    """
    n_units, n_seg, n_lines = setup.n_units, setup.n_segments, setup.n_lines
    n = n_units * n_seg
    lim = setup.limited_lines
    n_lim = lim.shape[0]
    m_lim = setup.ptdf_segments[lim]
    # Scaled copy (MW ÷ widest segment, prices ÷ dearest offer): float32 tolerances are
    # then relative.
    sx = jnp.maximum(jnp.max(wbar), 1.0)
    sc = jnp.maximum(jnp.max(jnp.abs(c)), 1e-3)
    cs, ws, ds = c / sc, wbar / sx, demand / sx
    a = jnp.concatenate(
        [jnp.concatenate([jnp.ones((1, n)), jnp.zeros((1, n_lim))], axis=1), jnp.concatenate([m_lim, -jnp.eye(n_lim)], axis=1)], axis=0
    )
    b = jnp.zeros(n_lim + 1).at[0].set(ds)
    cost = jnp.concatenate([cs, jnp.zeros(n_lim)])
    lo = jnp.concatenate([jnp.zeros(n), (setup.line_floor[lim] - f0[lim]) / sx])
    hi = jnp.concatenate([ws, (setup.line_cap[lim] - f0[lim]) / sx])

    idx = jnp.arange(n)
    before, marginal, ahead_of_marginal = merit_order_start(cs, ws, ds)
    is_marginal = idx == marginal
    at_upper = jnp.concatenate([ahead_of_marginal, jnp.zeros(n_lim, bool)])
    basis = jnp.concatenate([marginal[None], n + jnp.arange(n_lim)]).astype(jnp.int32)
    marginal_col = matvec(m_lim, is_marginal.astype(m_lim.dtype))
    binv = jnp.zeros((n_lim + 1, n_lim + 1)).at[0, 0].set(1.0).at[1:, 0].set(marginal_col).at[1:, 1:].set(-jnp.eye(n_lim))
    budget = max(int(max_iter), 4 * (n_lim + 1))
    # The pivots see no tangents: derivatives come from the optimal vertex's KKT conditions.
    lp_data = lax.stop_gradient((a, b, cost, lo, hi, basis, binv, at_upper))
    lp = bounded_dual_simplex(*lp_data, budget)
    solved = is_successful(lp.status) & jnp.all(jnp.isfinite(lp.x)) & jnp.all(jnp.isfinite(lp.y))

    # Unsolved (line limits that cannot be met, or budget spent): the network-blind merit
    # fill, which keeps the balance; an infeasible demand gets it clipped to capacity.
    fallback = jnp.clip(jnp.clip(demand_raw, 0.0, capacity) - before * sx, 0.0, wbar)
    delta = jnp.where(solved & is_feasible, jnp.clip(lp.x[:n] * sx, 0.0, wbar), fallback)
    y = jnp.where(is_feasible & jnp.isfinite(lp.y), lp.y * sc, 0.0)
    delta, y = sced_kkt_derivatives(
        delta, y, c, wbar, demand, m_lim, setup.line_floor[lim] - f0[lim], setup.line_cap[lim] - f0[lim], solved & is_feasible
    )
    y_lines = matvec((jnp.arange(n_lines)[:, None] == lim[None, :]).astype(y.dtype), y[1:])
    mu_upper, mu_lower = jnp.maximum(-y_lines, 0.0), jnp.maximum(y_lines, 0.0)
    lmp = y[0] + matvec(setup.ptdf.T, y_lines)

    power = p_lo + jnp.sum(delta.reshape(n_units, n_seg), axis=1)
    status = SolverStatus.where(
        ~is_feasible,
        SolverStatus.infeasible,
        SolverStatus.where(solved, SolverStatus.successful, SolverStatus.max_steps_reached),
    )
    return OfferSCEDResult(
        unit_power=power,
        segment_delta=delta.reshape(n_units, n_seg),
        line_flow=matvec(setup.ptdf_segments, delta) + f0,
        node_injection=matvec(setup.nodes_units_map, power) - node_load_mw,
        lmp=lmp,
        lambda_balance=y[0],
        mu_upper=mu_upper,
        mu_lower=mu_lower,
        offer_cost=jnp.sum(c * delta, axis=0),
        total_cost=_total_cost(power, setup.mc_a, setup.mc_b, setup.mc_c),
        status=status,
        iterations=lp.iterations,
    )
