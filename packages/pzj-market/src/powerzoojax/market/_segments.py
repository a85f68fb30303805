"""Piecewise-constant offer curves built from a case's marginal-cost coefficients.

Each unit's range `[p_min, p_max]` is cut into K equal segments; a segment's price is
the true marginal cost `MC(p) = a p² + b p + c` at its midpoint [$/MWh], made strictly
increasing per unit (+0.01 over the predecessor) so merit order is unambiguous. Case 5
has flat marginal costs, so its truthful prices are `[c, c + 0.01, c + 0.02, ...]`.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from powerzoojax.case import CaseData
from powerzoojax.core._types import FloatScalar

MONOTONE_STEP = 0.01  # $/MWh added over a non-increasing predecessor segment


class CostSegments(eqx.Module):
    """Per-unit offer segments.

    **Arguments:**

    - `seg_widths`: `(n_units, n_segments)` widths [MW].
    - `seg_prices`: `(n_units, n_segments)` prices [$/MWh].
    """

    seg_widths: Float[Array, "n_units n_segments"]
    seg_prices: Float[Array, "n_units n_segments"]


def _check_n_segments(fn: str, n_segments: object) -> int:
    if isinstance(n_segments, bool) or not isinstance(n_segments, (int, np.integer)) or n_segments < 1:
        raise ValueError(f"{fn}: n_segments must be a positive integer, got {n_segments!r}")
    return int(n_segments)


def monotone_prices(prices: np.ndarray) -> np.ndarray:
    """Host-side: make each row strictly increasing by at least `MONOTONE_STEP`."""
    out = np.array(prices, np.float64, copy=True)
    for k in range(1, out.shape[1]):
        out[:, k] = np.maximum(out[:, k], out[:, k - 1] + MONOTONE_STEP)
    return out


def make_cost_segments(case: CaseData, n_segments: int = 5) -> CostSegments:
    """Truthful K-segment offers of every unit of `case` (setup time, host side).

    **Arguments:**

    - `case`: the [`CaseData`][powerzoojax.case.CaseData].
    - `n_segments`: segments per unit.

    **Returns:**

    [`CostSegments`][powerzoojax.market.CostSegments].
    """
    n_segments = _check_n_segments("make_cost_segments", n_segments)
    if not isinstance(case, CaseData):
        raise TypeError(f"make_cost_segments: case must be a CaseData, got {type(case).__name__}")
    p_min = np.asarray(case.unit_p_min, np.float64)
    p_max = np.asarray(case.unit_p_max, np.float64)
    width = np.maximum(p_max - p_min, 0.0) / n_segments
    mid = p_min[:, None] + width[:, None] * (np.arange(n_segments)[None, :] + 0.5)
    a, b, c = (np.asarray(x, np.float64)[:, None] for x in (case.unit_cost_a, case.unit_cost_b, case.unit_cost_c))
    prices = monotone_prices((a * mid + b) * mid + c)
    return CostSegments(
        seg_widths=jnp.asarray(np.repeat(width[:, None], n_segments, axis=1), jnp.float32),
        seg_prices=jnp.asarray(prices, jnp.float32),
    )


def merit_order_fill(
    prices: Float[Array, " n_seg"], widths: Float[Array, " n_seg"], demand_mw: FloatScalar
) -> Float[Array, " n_seg"]:
    """Fill segments cheapest first until `demand_mw` is met (network ignored).

    **Arguments:**

    - `prices`: `(n_seg,)` segment prices [$/MWh].
    - `widths`: `(n_seg,)` segment widths [MW].
    - `demand_mw`: demand [MW].

    **Returns:**

    `(n_seg,)` accepted MW per segment.
    """
    order = jnp.argsort(prices)
    w_sorted = widths[order]
    before = jnp.cumsum(w_sorted) - w_sorted
    filled = jnp.clip(demand_mw - before, 0.0, w_sorted)
    return jnp.zeros_like(widths).at[order].set(filled)
