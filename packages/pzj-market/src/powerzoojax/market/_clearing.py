"""Piecewise economic dispatch: clearing K-segment offer curves over the DC network.

The reference clears bid-based markets with a heuristic (merit-order fill, projected
gradient repair of line overloads, least-squares LMPs). Here the same offer curves are
cleared exactly by the in-graph SCED ([`offer_sced`][powerzoojax.market.offer_sced]), which returns the optimal
dispatch and dual-exact LMPs within an iteration budget, so the
bid-based market and the SCED agree by construction. The interface keeps the
reference's names and outputs.
"""

import equinox as eqx
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.market._offer_sced import OfferSCEDSetup, offer_sced, prepare_offer_sced


class PiecewiseEDSetup(eqx.Module):
    """Operators for [`piecewise_ed`][powerzoojax.market.piecewise_ed] (wraps the SCED setup; `n_segments` static)."""

    sced: OfferSCEDSetup

    @property
    def base_seg_prices(self) -> Float[Array, "n_units n_segments"]:
        return self.sced.base_seg_prices

    @property
    def base_seg_widths(self) -> Float[Array, "n_units n_segments"]:
        return self.sced.base_seg_widths

    @property
    def n_segments(self) -> int:
        return self.sced.n_segments


class PiecewiseEDResult(eqx.Module):
    """Result of [`piecewise_ed`][powerzoojax.market.piecewise_ed]: MW, $/MWh, $/h."""

    unit_power: Float[Array, " n_units"]
    line_flow: Float[Array, " n_lines"]
    node_injection: Float[Array, " n_nodes"]
    lmp: Float[Array, " n_nodes"]
    total_cost: Float[Array, ""]
    offer_cost: Float[Array, ""]
    converged: Bool[Array, ""]
    status: Int[Array, ""]
    iterations: Int[Array, ""]


def prepare_piecewise_ed(case: CaseData, n_segments: int = 5) -> PiecewiseEDSetup:
    """Setup-time operators of `case` with truthful `n_segments`-segment offers."""
    return PiecewiseEDSetup(sced=prepare_offer_sced(case, n_segments))


def piecewise_ed(
    setup: PiecewiseEDSetup,
    node_load_mw: Float[Array, " n_nodes"],
    offer_prices: Float[Array, "n_units n_segments"] | None = None,
    max_iter: int = 30,
    tol: float = 1e-5,
) -> PiecewiseEDResult:
    """Clear nodal loads [MW] against offers [$/MWh] (`None`: truthful); never NaN.

    `total_cost` is the true generation cost of the dispatch, `offer_cost` what the
    accepted offers ask; `converged` is False for infeasible or unconverged instances.
    """
    r = offer_sced(setup.sced, node_load_mw, offer_prices, max_iter=max_iter, tol=tol)
    return PiecewiseEDResult(
        unit_power=r.unit_power,
        line_flow=r.line_flow,
        node_injection=r.node_injection,
        lmp=r.lmp,
        total_cost=r.total_cost,
        offer_cost=r.offer_cost,
        converged=r.converged,
        status=r.status,
        iterations=r.iterations,
    )
