"""Derivatives of an economic-dispatch solution from its KKT conditions.

Applied through `powerzoojax.physics._implicit`. The dispatch problem of
`powerzoojax.physics._qp_ipm` (and its linear case, `powerzoojax.physics._dispatch_lp`):

    min  Σ_i (r_i/3) x_i³ + (q_i/2) x_i² + c_i x_i
    s.t. Σ_i x_i = d,   lo ≤ x ≤ hi,   row_lo ≤ A x ≤ row_hi

At a solution with a fixed active set its KKT conditions are equations in
`z = [x, ν, μ]` (`μ = μ⁺ − μ⁻` the net row dual, solver sign convention
`∇f + ν 1 + Aᵀμ = bound duals`):

    x_i − bound_i = 0                       units held at a bound
    f'_i(x_i) + ν + (Aᵀμ)_i = 0             the other units
    Σ_i x_i − d = 0
    (A x)_j − limit_j = 0                   rows held at a limit
    μ_j = 0                                 the other rows

Active set, read off the solver's answer: a unit is held when it sits on a bound (within
`1e-4` of the widest unit range in float32, `1e-7` in float64), a row when it sits on a
limit *and* carries a nonzero multiplier (above `1e-3` / `1e-6` of the largest marginal
cost). The multiplier test resolves the structural degeneracy of parallel lines (identical
rows, both on their limit): the row the solver priced is kept, the duplicate is implied by
it. At a degenerate point the result is a generalised, one-sided derivative: a unit on a
bound with a zero multiplier (a cost tie) is held there, the branch the solver's vertex
stays on; a row on its limit with a zero multiplier is released, the branch on which its
flow moves off the limit. Where the KKT matrix on that set is singular (a degenerate vertex
this rule cannot resolve), where the solver did not reach an optimum (not converged, rows
violated: the elastic best effort) or where the caller's `ok` is false, the derivative
is zero; the solver's flags say so.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from powerzoojax.physics._implicit import deferred_implicit_outputs
from powerzoojax.physics._qp_ipm import DispatchProblem, DispatchQPSolution
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp

_ACTIVE_TOL = {4: 1e-4, 8: 1e-7}  # of the widest unit range [MW]
_DUAL_TOL = {4: 1e-3, 8: 1e-6}  # of the largest marginal cost [$/MWh]
# Units this narrow (of the widest range) are fixed: the DC-OPF widens a fixed unit to a
# sliver of 1e-6 so that the interior point has an interior.
_FIXED_WIDTH = 1e-5


def split_kkt(z: Array, n: int, m: int) -> tuple[Array, Array, Array]:
    """`(x, ν, μ)` of the KKT unknowns `z` (`n` units, `m` rows)."""
    return z[:n], z[n], z[n + 1 : n + 1 + m]


def kkt_residual(z: Array, theta: DispatchProblem, aux: tuple) -> Array:
    """The KKT equations of the module docstring for the problem `theta`, with the active
    set `aux = (held, active)`."""
    held, active = aux
    n, m = theta.a_t.shape
    x, nu, mu = split_kkt(z, n, m)
    grad = (theta.cubic * x + theta.quad) * x + theta.lin
    f_x = jnp.where(held > 0, x - theta.hi, jnp.where(held < 0, x - theta.lo, grad + nu + hp.matmul(theta.a_t, mu)))
    f_nu = jnp.sum(x) - theta.total
    flow = hp.matmul(x, theta.a_t)
    f_mu = where(active > 0, flow - theta.row_hi, where(active < 0, flow - theta.row_lo, mu))
    return jnp.concatenate([f_x, f_nu[None], f_mu])


def _kkt_outputs(z, theta, aux):
    _, active = aux
    n, m = theta.a_t.shape
    x, nu, mu = split_kkt(z, n, m)
    return x, nu, jnp.where(active > 0, mu, 0.0), jnp.where(active < 0, -mu, 0.0)


def kkt_system(
    sol: DispatchQPSolution, problem: DispatchProblem, ok: Bool[Array, ""] | bool = True
) -> tuple[Array, DispatchProblem, tuple, Array]:
    """`(z, θ, aux, settled)` of the KKT equations at `sol` for `implicit_outputs`
    with `kkt_residual`: unknowns `z = [x, ν, μ]`, the problem data `θ` (`problem` in
    the solution's dtype), the active set `aux` and whether the solution is an optimum
    to differentiate."""
    dtype = sol.x.dtype
    size = jnp.dtype(dtype).itemsize
    theta = jax.tree.map(lambda v: jnp.asarray(v).astype(dtype), problem)
    data = jax.lax.stop_gradient(theta)
    cubic, quad, lin, lo, hi = data.cubic, data.quad, data.lin, data.lo, data.hi
    a_t, row_lo, row_hi = data.a_t, data.row_lo, data.row_hi
    x = sol.x
    mu = sol.mu_upper - sol.mu_lower
    scale_x = jnp.maximum(jnp.max(hi - lo), 1e-6)
    grad = (cubic * x + quad) * x + lin
    scale_c = jnp.maximum(jnp.max(jnp.abs(grad)), 1e-3)
    tol = _ACTIVE_TOL[size] * scale_x
    width = hi - lo
    at_hi = (hi - x <= tol) & (width > _FIXED_WIDTH * scale_x)
    at_lo = (x - lo <= tol) | (width <= _FIXED_WIDTH * scale_x)
    held = jnp.where(at_hi, 1, jnp.where(at_lo, -1, 0))
    flow = hp.matmul(x, a_t)
    priced = _DUAL_TOL[size] * scale_c
    upper = (row_hi - flow <= tol) & (mu > priced)
    lower = (flow - row_lo <= tol) & (mu < -priced)
    active = jnp.where(upper, 1, jnp.where(lower, -1, 0))
    settled = (
        sol.converged
        & jnp.asarray(ok)
        & (jnp.sum(sol.row_violation) <= tol)
        & jnp.all(jnp.isfinite(x))
        & jnp.isfinite(sol.nu)
        & jnp.all(jnp.isfinite(mu))
    )
    z = jnp.concatenate([x, sol.nu[None], mu])
    return z, theta, (held, active), settled


def dispatch_kkt_derivatives(
    sol: DispatchQPSolution, problem: DispatchProblem, ok: Bool[Array, ""] | bool = True
) -> DispatchQPSolution:
    """`sol` with `x, nu, mu_upper, mu_lower` differentiable w.r.t. the problem data.

    **Arguments:**

    - `sol`: the solver's answer to `problem` (computed with tangents stopped).
    - `problem`: the `DispatchProblem` (`powerzoojax.physics._qp_ipm`)
      (costs [$/MWh], unit bounds and balance target [MW], row coefficients and limits
      [MW]); its float leaves carry the tangents.
    - `ok`: extra validity flag of the caller (e.g. the load within capacity); the
      derivative is zero where it is false.

    **Returns:** `sol`, values unchanged; see the module docstring for the derivative.
    """
    values = (sol.x, sol.nu, sol.mu_upper, sol.mu_lower)
    inputs = (sol, problem, jnp.asarray(ok))
    x, nu, mu_upper, mu_lower = deferred_implicit_outputs(kkt_system, kkt_residual, _kkt_outputs, values, inputs)
    return eqx.tree_at(lambda s: (s.x, s.nu, s.mu_upper, s.mu_lower), sol, (x, nu, mu_upper, mu_lower))


__all__ = ["dispatch_kkt_derivatives", "kkt_residual", "kkt_system", "split_kkt"]
