"""Derivatives of the SCED clearing from the KKT conditions of its LP at the optimal vertex.

The SCED LP (segment increments `δ`, offer prices `c`, widths `δ̄`, demand `D`,
limited-line rows `floor − f0 ≤ M_S δ ≤ cap − f0`) is the linear case of the dispatch
problem that `powerzoojax.physics._dispatch_grad` differentiates: the same active-set
rule and degeneracy convention apply (a segment on a bound is held there, a line on its
limit with a nonzero price is held on it, anything else is free; zero derivative where the
clearing is not `OPTIMAL`). The duals map as `ν = −y₀`, `μ⁺ − μ⁻ = −y_lim`.
"""

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from powerzoojax.physics._dispatch_grad import kkt_residual, kkt_system, split_kkt
from powerzoojax.physics._implicit import deferred_implicit_outputs
from powerzoojax.physics._qp_ipm import DispatchProblem, DispatchQPSolution
from powerzoojax.physics._status import SolverStatus


def sced_kkt_derivatives(
    delta: Float[Array, " n_vars"],
    y: Float[Array, " n_rows"],
    prices: Float[Array, " n_vars"],
    widths: Float[Array, " n_vars"],
    demand: Float[Array, ""],
    m_lim: Float[Array, "n_limited n_vars"],
    row_lo: Float[Array, " n_limited"],
    row_hi: Float[Array, " n_limited"],
    optimal: Bool[Array, ""],
) -> tuple[Array, Array]:
    """`(δ, y)` unchanged, differentiable w.r.t. the offers, widths, demand and row limits.

    **Arguments:**

    - `delta`: `(n_vars,)` segment dispatch [MW]; `y`: `(1 + n_limited,)` the basis duals
      [$/MWh] (balance first).
    - `prices`, `widths`: `(n_vars,)` offer prices [$/MWh] and segment widths [MW].
    - `demand`: the balance target above minimum output [MW].
    - `m_lim`: `(n_limited, n_vars)` the limited lines' segment PTDF; `row_lo, row_hi`:
      `(n_limited,)` their limits less the flows at minimum output [MW].
    - `optimal`: whether the clearing reached its optimal vertex.

    **Returns:** `(delta, y)` with their derivatives (see the module docstring).
    """
    inputs = (delta, y, prices, widths, demand, m_lim, row_lo, row_hi, optimal)
    return deferred_implicit_outputs(_sced_kkt_system, kkt_residual, _sced_outputs, (delta, y), inputs)


def _sced_kkt_system(delta, y, prices, widths, demand, m_lim, row_lo, row_hi, optimal):
    """The dispatch KKT system of the SCED LP at `(δ, y)` (built only for a derivative)."""
    zeros = jnp.zeros_like(prices)
    y_lines = y[1:]
    sol = DispatchQPSolution(
        x=delta,
        nu=-y[0],
        mu_upper=jnp.maximum(-y_lines, 0.0),
        mu_lower=jnp.maximum(y_lines, 0.0),
        row_violation=jnp.zeros_like(y_lines),
        status=SolverStatus.where(optimal, SolverStatus.successful, SolverStatus.max_steps_reached),
        n_iter=jnp.zeros((), jnp.int32),
        residual=jnp.zeros((), delta.dtype),
        certified=optimal,
    )
    return kkt_system(sol, DispatchProblem(zeros, zeros, prices, zeros, widths, demand, m_lim.T, row_lo, row_hi))


def _sced_outputs(z, theta, aux):
    n, m = theta.a_t.shape
    x, nu, mu = split_kkt(z, n, m)
    return x, jnp.concatenate([-nu[None], -mu])


__all__ = ["sced_kkt_derivatives"]
