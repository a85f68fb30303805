"""Exact offer-based security-constrained economic dispatch (SCED), solved in the graph.

The LP is over segment increments ``δ`` above each unit's (ramp-adjusted) minimum output
``p_lo`` (``n = n_units · n_segments`` variables)::

    min  cᵀδ   s.t.   1ᵀδ = D,   0 ≤ δ ≤ δ̄,   floor ≤ M_S δ + f0 ≤ cap

with ``c`` the offer prices [$/MWh], ``δ̄`` the segment widths [MW], ``D = Σload − Σp_lo``,
``M_S`` the unit PTDF repeated per segment and ``f0 = M_u p_lo − PTDF·load`` the line flows
at minimum output [MW]. Only lines with a real limit (below ``UNLIMITED_MW``) become LP
rows. Two in-graph solvers (``method``), both float32, jit- and vmap-able, never
branching on the host:

- ``"simplex"`` (default): a bounded dual simplex (:mod:`._dual_simplex`) started from the
  network-blind merit order, with a bound-flipping ratio test; it pivots only when a
  limited line binds (case 5: at most a handful of pivots) and stops at the exact optimal
  vertex. LMPs are the duals of that basis, ``LMP = y₀ + PTDF[lim]ᵀ y_lim``. Validated
  against HiGHS (dispatch, objective, unique duals and the infeasibility verdict).
- ``"ipm"``: a Mehrotra predictor–corrector primal–dual interior point with a fixed
  iteration budget (``lax.fori_loop``), its Newton systems solved in the space of the
  balance and limited-line rows; it keeps iterating past ``tol`` towards the float32 floor
  of the gap, so that offers a cent apart still land on the optimal vertex. LMPs
  ``−ν − PTDFᵀ(μ_upper − μ_lower)`` from its duals, refined from the primal solution (the
  marginal segments price the balance and the binding lines) when that system is
  determined. Validated against HiGHS on the same checks as the simplex.

Outcomes are values, never NaN: ``status`` is ``OPTIMAL`` (0), ``INFEASIBLE`` (1: demand
outside what the offered capacity can serve; the dispatch is then the closest merit-order
fill and the prices are zero) or ``UNCONVERGED`` (2: line limits that cannot be met, or
the budget ran out; the simplex then returns the network-blind merit-order fill, the
interior point its last finite iterate).
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
from powerzoojax.market._dual_simplex import SOLVED, bounded_dual_simplex, matvec, sum_small
from powerzoojax.market._segments import _check_n_segments, make_cost_segments, merit_order_fill
from powerzoojax.physics._small_linalg import inverse_cholesky, spd_solve

OPTIMAL, INFEASIBLE, UNCONVERGED = 0, 1, 2
STATUS_NAMES = ("optimal", "infeasible", "unconverged")
UNLIMITED_MW = 1e5  # line limits at or beyond this are treated as absent
_MIN_WIDTH_MW = 1e-4  # keeps a strict interior for segments squeezed shut by ramp bounds
_TAU = 0.995
_RIDGE = 1e-6
_REFINE = 2
_SNAP_MW = 1e-2
_PRIMAL_TOL, _DUAL_TOL = 1e-4, 1e-3  # scaled residuals accepted as optimal
# The interior point iterates on past ``tol`` down to these scaled residuals: offers a
# cent (or a tenth of one) apart move a segment's worth of dispatch for a cost change far
# below a gap of 1e-5 or a dual residual of 1e-3, so only residuals near the float32 floor
# put the iterate on the right vertex.
_GAP_FLOOR, _PRIMAL_FLOOR, _DUAL_FLOOR = 1e-9, 1e-5, 1e-6
_LMP_REFINE = 2


class OfferSCEDSetup(eqx.Module):
    """Host-precomputed SCED operators of one case (float32 leaves, static dimensions)."""

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
    """One SCED clearing. Powers in MW, prices in $/MWh, costs in $/h."""

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
    converged: Bool[Array, ""]
    is_feasible: Bool[Array, ""]
    status: Int[Array, ""]
    iterations: Int[Array, ""]


def prepare_offer_sced(
    case: CaseData,
    n_segments: int = 3,
    line_cap: Float[np.ndarray, " n_lines"] | None = None,
    line_floor: Float[np.ndarray, " n_lines"] | None = None,
) -> OfferSCEDSetup:
    """Build the SCED operators of ``case`` on the host.

    ``line_cap``/``line_floor`` override the case's limits [MW]; limits of magnitude
    ``UNLIMITED_MW`` or more (and 0, MATPOWER's "unlimited") become ``±UNLIMITED_MW``.
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
    return sum_small((((a / 3.0) * p + b / 2.0) * p + c) * p, axis=0)


# Jitted so that an eager caller (the conformance kit runs envs op by op) compiles the
# clearing once instead of re-tracing its loop on every call; inside a jit it inlines.
@functools.partial(jax.jit, static_argnames=("max_iter", "tol", "method"))
def offer_sced(
    setup: OfferSCEDSetup,
    node_load_mw: Float[Array, " n_nodes"],
    offer_prices: Float[Array, "n_units n_segments"] | None = None,
    p_min_rt: Float[Array, " n_units"] | None = None,
    p_max_rt: Float[Array, " n_units"] | None = None,
    max_iter: int = 30,
    tol: float = 1e-5,
    method: str = "simplex",
) -> OfferSCEDResult:
    """Clear the market: dispatch, LMPs and status for nodal loads [MW] and offers [$/MWh].

    ``offer_prices=None`` offers the truthful segments. ``p_min_rt``/``p_max_rt`` [MW] are
    runtime (ramp) bounds: the segment widths are scaled to the runtime headroom, so the
    LP keeps its shape.

    ``method`` (static): ``"simplex"`` (default) — a bounded dual simplex started from the
    network-blind merit order, which only pivots when a limited line binds, stops at
    the exact optimal vertex and reads the LMPs off that basis; ``max_iter`` bounds its
    pivots (raised to ``4 · (limited lines + 1)`` at least). ``"ipm"`` — the primal–dual
    interior point with ``max_iter`` iterations; ``tol`` bounds the duality gap ``sᵀλ`` of
    its scaled LP (prices ÷ the dearest offer, MW ÷ the widest segment) that counts as
    ``OPTIMAL``; the iterations go on towards a gap of 1e-9 within the budget.
    """
    if method not in ("simplex", "ipm"):
        raise ValueError(f"offer_sced: method must be 'simplex' or 'ipm', got {method!r}")
    n_units, n_seg, n_lines = setup.n_units, setup.n_segments, setup.n_lines
    n = n_units * n_seg
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
    m_s = setup.ptdf_segments
    f0 = matvec(setup.ptdf_units, p_lo) - matvec(setup.ptdf, node_load_mw)
    demand_raw = sum_small(node_load_mw, axis=0) - sum_small(p_lo, axis=0)
    capacity = sum_small(wbar, axis=0)
    is_feasible = (demand_raw >= 0.0) & (demand_raw <= capacity)
    demand = jnp.clip(demand_raw, 0.01, capacity - 0.01)
    if method == "simplex":
        return _offer_sced_simplex(setup, node_load_mw, p_lo, c, wbar, f0, demand_raw, demand, capacity, is_feasible, max_iter)

    # Only lines with a real limit are rows: the others can never bind, and their far-off
    # bounds would put float32 round-off of 1e5 MW into the primal residual.
    lim = setup.limited_lines
    n_lim = lim.shape[0]
    m_lim = m_s[lim]
    m = 2 * n_lim + 2 * n
    # Solve a scaled copy (x in units of the widest segment, prices in units of the
    # dearest offer): float32 then reaches a 1e-6 gap within the budget.
    sx = jnp.maximum(jnp.max(wbar), 1.0)
    sc = jnp.maximum(jnp.max(jnp.abs(c)), 1e-3)
    cs, ws, ds = c / sc, wbar / sx, demand / sx
    h = jnp.concatenate([(setup.line_cap[lim] - f0[lim]) / sx, (f0[lim] - setup.line_floor[lim]) / sx, ws, jnp.zeros(n)])

    def g(x):
        fl = m_lim @ x
        return jnp.concatenate([fl, -fl, x, -x])

    def gt(v):
        return m_lim.T @ (v[:n_lim] - v[n_lim : 2 * n_lim]) + v[2 * n_lim : 2 * n_lim + n] - v[2 * n_lim + n :]

    def residuals(x, s, lam, nu):
        gap = jnp.dot(s, lam)  # duality gap of the scaled LP
        primal = jnp.maximum(jnp.abs(jnp.sum(x) - ds), jnp.max(jnp.abs(g(x) + s - h)))
        dual = jnp.max(jnp.abs(cs + nu + gt(lam)))
        return gap, primal, dual

    def merit(x, s, lam, nu, tols=(tol, _PRIMAL_TOL, _DUAL_TOL)):
        gap, primal, dual = residuals(x, s, lam, nu)
        return jnp.maximum(gap / tols[0], jnp.maximum(primal / tols[1], dual / tols[2]))

    floor_tols = (min(tol, _GAP_FLOOR), min(_PRIMAL_TOL, _PRIMAL_FLOOR), min(_DUAL_TOL, _DUAL_FLOOR))

    def rank(x, s, lam, nu):
        # Iterates accepted under ``tol`` first (ranked by the floor residuals), then the
        # rest: a sharper gap must never displace an iterate that counts as OPTIMAL.
        accepted = merit(x, s, lam, nu)
        return jnp.where(accepted <= 1.0, merit(x, s, lam, nu, floor_tols), 1e12 * accepted)

    # Warm start: mostly the network-blind merit fill, nudged into the interior.
    x0 = 0.99 * merit_order_fill(cs, ws, ds) + 0.01 * ds * ws / jnp.sum(ws)
    x0 = jnp.clip(x0, 1e-4 * ws, ws * (1.0 - 1e-4))
    x0 = x0 * ds / jnp.maximum(jnp.sum(x0), 1e-12)
    x0 = jnp.clip(x0, 1e-6 * ws, ws * (1.0 - 1e-6))
    s0 = jnp.maximum(h - g(x0), 1.0)
    lam0 = 10.0 / s0
    nu0 = -jnp.mean(cs)

    def body(_, carry):
        x, s, lam, nu, best, best_merit = carry
        mu = jnp.dot(s, lam) / m
        w_all = lam / s
        r1 = cs + nu + gt(lam)
        r2 = jnp.sum(x) - ds
        r3 = g(x) + s - h
        w_up, w_lo = w_all[:n_lim], w_all[n_lim : 2 * n_lim]
        w_line = jnp.maximum(w_up + w_lo, 1e-30)
        w_box = w_all[2 * n_lim : 2 * n_lim + n] + w_all[2 * n_lim + n :]
        # Newton step in the rows' space: with dy the lines' net multiplier step,
        #   W_box dx + M_Sᵀ dy + 1 dν = b1,   M_S dx − dy / W_line = 0,   1ᵀ dx = −r2,
        # dx is eliminated through the diagonal W_box, leaving the SPD system
        #   (A W_box⁻¹ Aᵀ + diag(1/W_line, 0)) [dy; dν] = A W_box⁻¹ b1 + [0; r2],  A = [M_S; 1ᵀ].
        # A binding line's huge weight enters as a tiny 1/W_line, not as a huge rank-one
        # term of an n×n matrix (which float32 cannot resolve), and dx then satisfies the
        # stationarity rows exactly, so the dual residual cannot stall at the solve's error.
        rows = jnp.concatenate([m_lim, jnp.ones((1, n))], axis=0)
        d_inv = 1.0 / w_box
        row_weight = jnp.concatenate([1.0 / w_line, jnp.zeros(1)])
        schur = (rows * d_inv[None, :]) @ rows.T + jnp.diag(row_weight)
        scale = lax.rsqrt(jnp.maximum(jnp.diag(schur), 1e-30))
        # Ridge on the equilibrated matrix, relative to each diagonal;
        # K⁻¹ ≈ S (S K S + ridge)⁻¹ S = Mᵀ M with M = W S, W the inverse factor.
        m_inv = inverse_cholesky(scale[:, None] * schur * scale[None, :] + _RIDGE * jnp.eye(n_lim + 1)) * scale[None, :]
        row_rhs = jnp.concatenate([jnp.zeros(n_lim), -r2[None]])

        def direction(r4):
            w = (-r4 + lam * r3) / s
            b1 = -r1 - gt(w)
            z = spd_solve(m_inv, rows @ (d_inv * b1) - row_rhs)
            dx = d_inv * (b1 - rows.T @ z)
            # Refinement on the whole system, not only on its Schur complement: an interior
            # segment's dx is d_inv (up to 1e10) times a difference of O(1) terms, whose
            # round-off alone would break the balance. It also removes the ridge's bias.
            for _ in range(_REFINE):
                res_x = b1 - w_box * dx - rows.T @ z
                res_z = row_rhs - (rows @ dx - row_weight * z)
                fix_z = spd_solve(m_inv, rows @ (d_inv * res_x) - res_z)
                dx, z = dx + d_inv * (res_x - rows.T @ fix_z), z + fix_z
            dy, dnu = z[:n_lim], z[n_lim]
            gdx = g(dx)
            dsl = -r3 - gdx
            # Line multipliers from dy (their shares W_up/W_line, W_lo/W_line), boxes as usual.
            dlam = w + jnp.concatenate([(w_up / w_line) * dy, -(w_lo / w_line) * dy, w_all[2 * n_lim :] * gdx[2 * n_lim :]])
            step_p = jnp.minimum(1.0, _TAU * jnp.min(jnp.where(dsl < 0, -s / jnp.where(dsl < 0, dsl, -1.0), jnp.inf)))
            step_d = jnp.minimum(1.0, _TAU * jnp.min(jnp.where(dlam < 0, -lam / jnp.where(dlam < 0, dlam, -1.0), jnp.inf)))
            return dx, dsl, dlam, dnu, step_p, step_d

        # Mehrotra predictor–corrector: the affine step's progress sets the centring, and
        # its second-order term corrects the complementarity.
        _, dsl_a, dlam_a, _, step_pa, step_da = direction(lam * s)
        mu_aff = jnp.dot(s + step_pa * dsl_a, lam + step_da * dlam_a) / m
        sigma = jnp.clip((mu_aff / jnp.maximum(mu, 1e-30)) ** 3, 0.0, 1.0)
        dx, dsl, dlam, dnu, step_p, step_d = direction(lam * s + dsl_a * dlam_a - sigma * mu)
        new = (x + step_p * dx, s + step_p * dsl, lam + step_d * dlam, nu + step_d * dnu)
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(v)) for v in new]))
        # Latch once optimal (or broken): float32 iterates drift if pushed further.
        keep = (best_merit <= 1.0) | ~finite
        x, s, lam, nu = (jnp.where(keep, old, upd) for old, upd in zip((x, s, lam, nu), new))
        score = rank(x, s, lam, nu)
        better = jnp.isfinite(score) & (score < best_merit)
        best = tuple(jnp.where(better, cur, b) for cur, b in zip((x, s, lam, nu), best))
        return x, s, lam, nu, best, jnp.where(better, score, best_merit)

    start = (x0, s0, lam0, nu0)
    _, _, _, _, (x, s, lam, nu), _ = lax.fori_loop(0, max_iter, body, (*start, start, rank(*start)))
    solved = merit(x, s, lam, nu) <= 1.0
    converged = solved & is_feasible

    # Unscale; an infeasible demand gets the capacity-clipped merit fill and zero duals.
    delta = _fill_within_units(prices, jnp.clip(x * sx, 0.0, wbar).reshape(n_units, n_seg), wbar.reshape(n_units, n_seg)).reshape(n)
    fallback = merit_order_fill(c, wbar, jnp.clip(demand_raw, 0.0, capacity))
    delta = jnp.where(is_feasible & jnp.all(jnp.isfinite(delta)), delta, fallback)
    lam_u = jnp.where(is_feasible & jnp.isfinite(lam), lam * sc, 0.0)
    nu_u = jnp.where(is_feasible & jnp.isfinite(nu), nu * sc, 0.0)
    mu_upper = jnp.zeros(n_lines).at[lim].set(lam_u[:n_lim])
    mu_lower = jnp.zeros(n_lines).at[lim].set(lam_u[n_lim : 2 * n_lim])

    flow = m_s @ delta + f0
    lmp_dual = -nu_u - setup.ptdf.T @ (mu_upper - mu_lower)
    lmp_primal, lambda_primal, primal_ok = _primal_lmp(setup, c, delta, wbar, flow)
    use_primal = primal_ok & is_feasible
    lmp = jnp.where(use_primal, lmp_primal, lmp_dual)
    lambda_balance = jnp.where(use_primal, lambda_primal, -nu_u)

    power = p_lo + delta.reshape(n_units, n_seg).sum(axis=1)
    injection = setup.nodes_units_map @ power - node_load_mw
    status = jnp.where(~is_feasible, INFEASIBLE, jnp.where(solved, OPTIMAL, UNCONVERGED)).astype(jnp.int32)
    return OfferSCEDResult(
        unit_power=power,
        segment_delta=delta.reshape(n_units, n_seg),
        line_flow=flow,
        node_injection=injection,
        lmp=lmp,
        lambda_balance=lambda_balance,
        mu_upper=mu_upper,
        mu_lower=mu_lower,
        offer_cost=jnp.dot(c, delta),
        total_cost=_total_cost(power, setup.mc_a, setup.mc_b, setup.mc_c),
        converged=converged,
        is_feasible=is_feasible,
        status=status,
        iterations=jnp.asarray(max_iter, jnp.int32),
    )


def _fill_within_units(
    prices: Float[Array, "n_units n_segments"],
    delta: Float[Array, "n_units n_segments"],
    widths: Float[Array, "n_units n_segments"],
) -> Float[Array, "n_units n_segments"]:
    """Refill each unit's output into its own segments cheapest first.

    Segments of one unit share a bus, so this keeps every flow and balance and never
    raises the cost; it removes the float32 interior point's smearing of a unit's output
    over offers a few cents apart, which would otherwise blur which segment is marginal.
    """
    order = jnp.argsort(prices, axis=1)
    w_sorted = jnp.take_along_axis(widths, order, axis=1)
    total = jnp.sum(delta, axis=1, keepdims=True)
    filled = jnp.clip(total - (jnp.cumsum(w_sorted, axis=1) - w_sorted), 0.0, w_sorted)
    rows = jnp.arange(delta.shape[0])[:, None]
    delta = jnp.zeros_like(delta).at[rows, order].set(filled)
    # Snap segments within _SNAP_MW of a bound onto it and hand the difference to the
    # most interior segment: the interior point leaves such remnants (say 3e-4 MW on a
    # unit priced 0.02 $/MWh out of merit), and their round-off is not reproducible
    # between compilations of the same program.
    snapped = jnp.where(delta < _SNAP_MW, 0.0, jnp.where(delta > widths - _SNAP_MW, widths, delta))
    interior = jnp.minimum(snapped, widths - snapped).ravel()
    target = jnp.argmax(interior)
    flat = snapped.ravel()
    moved = jnp.sum(delta) - jnp.sum(snapped)
    flat = flat.at[target].set(jnp.clip(flat[target] + moved, 0.0, widths.ravel()[target]))
    ok = interior[target] > _SNAP_MW
    return jnp.where(ok, flat.reshape(delta.shape), delta)


def _primal_lmp(
    setup: OfferSCEDSetup,
    c: Float[Array, " n_vars"],
    delta: Float[Array, " n_vars"],
    wbar: Float[Array, " n_vars"],
    flow: Float[Array, " n_lines"],
) -> tuple[Float[Array, " n_nodes"], FloatScalar, Bool[Array, ""]]:
    """LMPs from the marginal segments: each prices ``ν + M_S[:, k]·μ_net = −c_k``.

    Interior-point duals sit at the centre of the optimal dual face and carry the float32
    error of the last iterate; when as many segments are marginal as there are unknowns
    (balance + binding lines) this system pins the dual exactly. ``ok`` is False when it
    does not (the caller falls back to the IPM duals).
    """
    n_lines = setup.n_lines
    m_s = setup.ptdf_segments
    active = (flow >= setup.line_cap - 0.5) | (flow <= setup.line_floor + 0.5)
    marginal = (delta > 0.1) & (delta < wbar - 0.1)
    a = jnp.concatenate([jnp.ones((c.shape[0], 1)), (m_s * active[:, None]).T], axis=1)
    wm = marginal.astype(jnp.float32)
    sc = jnp.maximum(jnp.max(jnp.abs(c)), 1e-3)
    normal_inv = inverse_cholesky(a.T @ (wm[:, None] * a) + 1e-6 * jnp.eye(n_lines + 1))
    z = spd_solve(normal_inv, a.T @ (wm * (-c / sc)))
    # Refinement against the marginal rows themselves: removes the ridge's bias (which
    # scales with the price, a few cents at 400 $/MWh) when the system is determined.
    for _ in range(_LMP_REFINE):
        z = z + spd_solve(normal_inv, a.T @ (wm * (-c / sc - a @ z)))
    residual = jnp.max(jnp.abs(wm * (a @ z + c / sc)))
    n_unknowns = 1 + jnp.sum(active)
    ok = (jnp.sum(marginal) >= n_unknowns) & (residual < 1e-4) & jnp.all(jnp.isfinite(z))
    nu, mu_net = z[0] * sc, z[1:] * sc * active
    return -nu - setup.ptdf.T @ mu_net, -nu, ok


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
    """The SCED LP by the bounded dual simplex (see :func:`offer_sced`).

    Variables ``[δ, g]`` with ``g = M_S[lim] δ`` the limited lines' flow above ``f0``:
    rows ``1ᵀδ = D`` and ``M_S[lim] δ − g = 0``, bounds ``0 ≤ δ ≤ δ̄`` and
    ``floor − f0 ≤ g ≤ cap − f0``. The merit order (every segment cheaper than the
    marginal one full) with every ``g`` basic is dual feasible, and its basis inverse is
    the basis itself, so no factorisation is ever needed. With duals ``y`` of the optimal
    basis, ``LMP = y₀ + PTDF[lim]ᵀ y_lim`` (the load enters ``D`` and the bounds of ``g``).
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
    # Materialised here: otherwise XLA fuses the whole offer pipeline upstream (markups,
    # sorting, scaling) into each element of the O(n²) merit-order comparison below.
    cs, ws, ds, f0 = lax.optimization_barrier((c / sc, wbar / sx, demand / sx, f0))
    a = jnp.concatenate(
        [jnp.concatenate([jnp.ones((1, n)), jnp.zeros((1, n_lim))], axis=1), jnp.concatenate([m_lim, -jnp.eye(n_lim)], axis=1)], axis=0
    )
    b = jnp.zeros(n_lim + 1).at[0].set(ds)
    cost = jnp.concatenate([cs, jnp.zeros(n_lim)])
    lo = jnp.concatenate([jnp.zeros(n), (setup.line_floor[lim] - f0[lim]) / sx])
    hi = jnp.concatenate([ws, (setup.line_cap[lim] - f0[lim]) / sx])

    # Merit order by pairwise comparison (cheaper, ties by index): XLA:CPU sorts small
    # rows one at a time, slower than this whole O(n²) comparison under vmap.
    idx = jnp.arange(n)
    # ahead[j, i]: segment i is dispatched before segment j (minor-axis sums below).
    ahead = (cs[None, :] < cs[:, None]) | ((cs[None, :] == cs[:, None]) & (idx[None, :] < idx[:, None]))
    before = sum_small(jnp.where(ahead, ws[None, :], 0.0), axis=1)
    # The marginal segment is the last one that starts at or below the demand.
    rank = sum_small(ahead.astype(jnp.int32), axis=1)
    marginal = jnp.argmax(jnp.where(before <= ds, rank, -1))
    c_marg = sum_small(jnp.where(idx == marginal, cs, 0.0), axis=0)
    is_marginal = idx == marginal
    at_upper = jnp.concatenate([(cs < c_marg) | ((cs == c_marg) & (idx < marginal)), jnp.zeros(n_lim, bool)])
    basis = jnp.concatenate([marginal[None], n + jnp.arange(n_lim)]).astype(jnp.int32)
    marginal_col = matvec(m_lim, is_marginal.astype(m_lim.dtype))
    binv = jnp.zeros((n_lim + 1, n_lim + 1)).at[0, 0].set(1.0).at[1:, 0].set(marginal_col).at[1:, 1:].set(-jnp.eye(n_lim))
    budget = max(int(max_iter), 4 * (n_lim + 1))
    lp = lax.optimization_barrier(bounded_dual_simplex(a, b, cost, lo, hi, basis, binv, at_upper, budget))
    solved = (lp.status == SOLVED) & jnp.all(jnp.isfinite(lp.x)) & jnp.all(jnp.isfinite(lp.y))

    # Unsolved (line limits that cannot be met, or budget spent): the network-blind merit
    # fill, which keeps the balance; an infeasible demand gets it clipped to capacity.
    fallback = jnp.clip(jnp.clip(demand_raw, 0.0, capacity) - before * sx, 0.0, wbar)
    delta = jnp.where(solved & is_feasible, jnp.clip(lp.x[:n] * sx, 0.0, wbar), fallback)
    y = jnp.where(is_feasible & jnp.isfinite(lp.y), lp.y * sc, 0.0)
    y_lines = matvec((jnp.arange(n_lines)[:, None] == lim[None, :]).astype(y.dtype), y[1:])
    mu_upper, mu_lower = jnp.maximum(-y_lines, 0.0), jnp.maximum(y_lines, 0.0)
    lmp = y[0] + matvec(setup.ptdf.T, y_lines)

    power = p_lo + sum_small(delta.reshape(n_units, n_seg), axis=1)
    status = jnp.where(~is_feasible, INFEASIBLE, jnp.where(solved, OPTIMAL, UNCONVERGED)).astype(jnp.int32)
    return OfferSCEDResult(
        unit_power=power,
        segment_delta=delta.reshape(n_units, n_seg),
        line_flow=matvec(setup.ptdf_segments, delta) + f0,
        node_injection=matvec(setup.nodes_units_map, power) - node_load_mw,
        lmp=lmp,
        lambda_balance=y[0],
        mu_upper=mu_upper,
        mu_lower=mu_lower,
        offer_cost=sum_small(c * delta, axis=0),
        total_cost=_total_cost(power, setup.mc_a, setup.mc_b, setup.mc_c),
        converged=solved & is_feasible,
        is_feasible=is_feasible,
        status=status,
        iterations=lp.iterations,
    )
