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
from powerzoojax.physics._status import SolverStatus, is_successful


class PiecewiseEDSetup(eqx.Module):
    """Operators for [`piecewise_ed`][powerzoojax.market.piecewise_ed]; build with
    [`prepare_piecewise_ed`][powerzoojax.market.prepare_piecewise_ed].

    **Arguments:**

    - `sced`: the wrapped [`OfferSCEDSetup`][powerzoojax.market.OfferSCEDSetup].
    """

    sced: OfferSCEDSetup

    @property
    def base_seg_prices(self) -> Float[Array, "n_units n_segments"]:
        """`(n_units, n_segments)` truthful segment prices [$/MWh]."""
        return self.sced.base_seg_prices

    @property
    def base_seg_widths(self) -> Float[Array, "n_units n_segments"]:
        """`(n_units, n_segments)` segment widths [MW]."""
        return self.sced.base_seg_widths

    @property
    def n_segments(self) -> int:
        """Segments per unit."""
        return self.sced.n_segments


class PiecewiseEDResult(eqx.Module):
    """Result of [`piecewise_ed`][powerzoojax.market.piecewise_ed].

    **Arguments:**

    - `unit_power`: `(n_units,)` dispatch [MW].
    - `line_flow`: `(n_lines,)` flows [MW].
    - `node_injection`: `(n_nodes,)` net injections [MW].
    - `lmp`: `(n_nodes,)` prices [$/MWh].
    - `total_cost`: true generation cost [$/h].
    - `offer_cost`: cost at the accepted offers [$/h].
    - `status`: the clearing's [`SolverStatus`][powerzoojax.physics.SolverStatus]
      (that of [`offer_sced`][powerzoojax.market.offer_sced]).
    - `iterations`: pivots taken.

    `converged` (the clearing is optimal) is read from `status`.
    """

    unit_power: Float[Array, " n_units"]
    line_flow: Float[Array, " n_lines"]
    node_injection: Float[Array, " n_nodes"]
    lmp: Float[Array, " n_nodes"]
    total_cost: Float[Array, ""]
    offer_cost: Float[Array, ""]
    status: SolverStatus
    iterations: Int[Array, ""]

    @property
    def converged(self) -> Bool[Array, "*batch"]:
        """The clearing is optimal (`status` is `successful`): False for infeasible or
        unconverged instances."""
        return is_successful(self.status)


def prepare_piecewise_ed(case: CaseData, n_segments: int = 5) -> PiecewiseEDSetup:
    """Setup-time operators of `case` with truthful `n_segments`-segment offers.

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `n_segments`: segments per unit.

    **Returns:**

    [`PiecewiseEDSetup`][powerzoojax.market.PiecewiseEDSetup].
    """
    return PiecewiseEDSetup(sced=prepare_offer_sced(case, n_segments))


def piecewise_ed(
    setup: PiecewiseEDSetup,
    node_load_mw: Float[Array, " n_nodes"],
    offer_prices: Float[Array, "n_units n_segments"] | None = None,
    max_iter: int = 30,
    tol: float = 1e-5,
) -> PiecewiseEDResult:
    """Clear nodal loads against offers; never NaN.

    **Arguments:**

    - `setup`: the [`PiecewiseEDSetup`][powerzoojax.market.PiecewiseEDSetup].
    - `node_load_mw`: `(n_nodes,)` loads [MW].
    - `offer_prices`: `(n_units, n_segments)` offers [$/MWh]; `None` offers truthfully.
    - `max_iter`: pivot budget.
    - `tol`: kept for the reference signature.

    **Returns:**

    [`PiecewiseEDResult`][powerzoojax.market.PiecewiseEDResult]: `total_cost` is the true
    generation cost of the dispatch, `offer_cost` what the accepted offers ask;
    `converged` is False for infeasible or unconverged instances.
    """
    r = offer_sced(setup.sced, node_load_mw, offer_prices, max_iter=max_iter, tol=tol)
    return PiecewiseEDResult(
        unit_power=r.unit_power,
        line_flow=r.line_flow,
        node_injection=r.node_injection,
        lmp=r.lmp,
        total_cost=r.total_cost,
        offer_cost=r.offer_cost,
        status=r.status,
        iterations=r.iterations,
    )
