"""Derivatives of iterative solvers at their solution, by the implicit function theorem.

The solvers (AC power flow, radial sweeps, dispatch LP/QP) are `while_loop`s, which
JAX cannot reverse-differentiate, and unrolling their iterations would differentiate
the algorithm rather than the solution. Instead the loop runs on inputs with their
tangents stopped, and its answer `x*` is passed through `implicit_outputs`: an
identity in the forward pass (the compiled program is the solver's own, unchanged) whose
`custom_jvp` rule linearises the solver's defining equations `F(x, θ) = 0` at
`x*`:

    dx = −(∂F/∂x)⁻¹ (∂F/∂θ) dθ

The rule is linear in `dθ` (a Jacobian–vector product, then a linear solve through
`lax.custom_linear_solve`), so JAX transposes it for reverse mode: `jax.jvp`,
`jax.grad`/`jax.vjp` and their `vmap`s all work. `∂F/∂x` is formed densely (by
`jax.jacfwd`, or by the caller's analytic Jacobian) and LU-factored; the factorisation
depends on primal values only, so a reverse pass factors once and solves with the
transpose. Systems of up to `_PLAIN_LU_MAX` unknowns use the plain-XLA LU of
`powerzoojax.physics._small_linalg` (no batched LAPACK call under `vmap`; see that
module); larger ones LAPACK's, because the plain loop rewrites the whole matrix at every
pivot and is memory-bound (`benchmarks/results/gradients.md`). A
derivative then makes one factorisation and one solve, one after the other.

Where the solver did not converge (`ok` false) or `∂F/∂x` is numerically singular,
the derivative is zero: finite, and the solver's own flag tells the caller. Singular
means a pivot below `_SINGULAR_PIVOT` times the largest, which reads badly scaled
equations as singular: the AC-OPF's KKT matrix (Hessian rows in $/h per p.u.², limit
rows of ones) has a pivot ratio of ~1e-6 on case 5 at condition number ~1e6, below
float32's threshold, while equilibrated (`equilibrate=True`: rows, then columns, scaled
by powers of two, so exactly) its condition number is ~1e3. Equations that leave a
direction of the unknowns free at some solutions (the AC-OPF's reactive split between
units on one bus) ask for `min_norm=True`: a singular `∂F/∂x` then gives the
minimum-norm `dx` (SVD) instead of zero.
"""

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, PyTree

from powerzoojax.physics._small_linalg import lu_factor, lu_solve, lu_solve_transposed
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp

# Unknowns up to which the plain-XLA LU is used (see the module docstring).
_PLAIN_LU_MAX = 64

# A pivot below this fraction of the largest one marks ∂F/∂x as singular (its derivative
# is then reported as zero).
_SINGULAR_PIVOT = {4: 1e-6, 8: 1e-12}


def _float_tree(tree):
    """`tree` with its non-float leaves replaced by `None` (they carry no tangent)."""
    return jax.tree.map(lambda v: v if jnp.issubdtype(jnp.asarray(v).dtype, jnp.inexact) else None, tree)


def _equilibration(jac: Float[Array, "n n"]) -> tuple[Array, Array]:
    """Powers of two `r, c` with every row and column of `diag(r) jac diag(c)` peaking in
    [1, 2) (ones where `jac` is not finite: the derivative is then masked anyway)."""
    tiny = jnp.finfo(jac.dtype).tiny
    pow2 = lambda m: jnp.exp2(-jnp.floor(jnp.log2(jnp.maximum(m, tiny))))  # noqa: E731
    finite = lambda v: where(jnp.isfinite(v), v, 1.0)  # noqa: E731
    r = finite(pow2(jnp.max(jnp.abs(jac), axis=1)))
    c = finite(pow2(jnp.max(jnp.abs(r[:, None] * jac), axis=0)))
    return r, c


def _min_norm_solve(scaled: Float[Array, "n n"], b: Float[Array, " n"], rtol: float) -> Array:
    """`scaled⁺ b`: singular values below `rtol` times the largest count as zero."""
    return hp.matmul(jnp.linalg.pinv(scaled, rtol=rtol), b)


def _linear_solve(
    jac: Float[Array, "n n"], rhs: Float[Array, " n"], equilibrate: bool = False, min_norm: bool = False
) -> tuple[Array, Array]:
    """`jac⁻¹ rhs` as a `custom_linear_solve` (transposable), and whether the result stands:
    `jac` looked regular, or (`min_norm`) the minimum-norm solution is finite."""
    n = jac.shape[-1]
    one = jnp.ones(n, jac.dtype)
    r, c = _equilibration(jac) if equilibrate else (one, one)
    scaled = r[:, None] * jac * c[None, :] if equilibrate else jac
    if n <= _PLAIN_LU_MAX:
        factors = lu_factor(scaled)
        solve, solve_t = lu_solve, lu_solve_transposed
    else:
        factors = jax.scipy.linalg.lu_factor(scaled)
        solve = jax.scipy.linalg.lu_solve
        solve_t = functools.partial(jax.scipy.linalg.lu_solve, trans=1)
    pivots = jnp.abs(jnp.diagonal(factors[0]))
    rtol = _SINGULAR_PIVOT[jnp.dtype(jac.dtype).itemsize]
    tol = rtol * jnp.maximum(jnp.max(pivots), jnp.finfo(jac.dtype).tiny)
    regular = jnp.all(pivots > tol) & jnp.all(jnp.isfinite(factors[0]))
    # A singular matrix's solves divide by zero pivots, which the reverse pass would carry
    # as NaN through a zero cotangent: solve with the identity instead (the result is
    # masked to zero anyway).
    eye = jnp.eye(n, dtype=jac.dtype)
    identity = jnp.arange(n, dtype=factors[1].dtype)
    factors = (where(regular, factors[0], eye), where(regular, factors[1], identity))
    if min_norm:
        # The SVD path is taken (outside vmap: a cond) only where the LU found a pivot too
        # small; a non-finite matrix is swapped for the identity and reported as failed.
        finite = jnp.all(jnp.isfinite(scaled))
        safe = where(finite, scaled, eye)

        def inner(b):
            return lax.cond(regular, lambda v: solve(factors, v), lambda v: _min_norm_solve(safe, v, rtol), b)

        def inner_t(b):
            return lax.cond(regular, lambda v: solve_t(factors, v), lambda v: _min_norm_solve(safe.T, v, rtol), b)

        ok = finite
    else:
        inner, inner_t = functools.partial(solve, factors), functools.partial(solve_t, factors)
        ok = regular
    if equilibrate:
        # jac = R⁻¹ S C⁻¹ with S the scaled matrix: jac⁻¹ b = C S⁻¹ R b, jac⁻ᵀ b = R S⁻ᵀ C b.
        x = lax.custom_linear_solve(
            lambda v: hp.matmul(jac, v), rhs, solve=lambda _, b: c * inner(r * b), transpose_solve=lambda _, b: r * inner_t(c * b)
        )
    else:
        x = lax.custom_linear_solve(
            lambda v: hp.matmul(jac, v), rhs, solve=lambda _, b: inner(b), transpose_solve=lambda _, b: inner_t(b)
        )
    return x, ok


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3, 4))
def _implicit_outputs(residual, outputs, jacobian, equilibrate, min_norm, values, x, theta, aux, ok):
    del residual, outputs, jacobian, equilibrate, min_norm, x, theta, aux, ok
    return values


@_implicit_outputs.defjvp
def _implicit_outputs_jvp(residual, outputs, jacobian, equilibrate, min_norm, primals, tangents):
    values, x, theta, aux, ok = primals
    d_theta = tangents[2]
    x = lax.stop_gradient(x)
    jac = (jax.jacfwd(residual, argnums=0) if jacobian is None else jacobian)(x, theta, aux)
    theta_f = _float_tree(theta)
    d_theta_f = jax.tree.map(lambda v, t: None if v is None else t, theta_f, d_theta, is_leaf=lambda v: v is None)

    def f_of_theta(th):
        full = jax.tree.map(lambda v, orig: orig if v is None else v, th, theta, is_leaf=lambda v: v is None)
        return residual(x, full, aux)

    _, f_dot = jax.jvp(f_of_theta, (theta_f,), (d_theta_f,))
    dx, regular = _linear_solve(jac, -f_dot, equilibrate, min_norm)
    good = ok & regular
    dx = where(good, dx, 0.0)

    def out_of(xx, th):
        full = jax.tree.map(lambda v, orig: orig if v is None else v, th, theta, is_leaf=lambda v: v is None)
        return outputs(xx, full, aux)

    _, out_dot = jax.jvp(out_of, (x, theta_f), (dx, d_theta_f))
    out_dot = jax.tree.map(lambda v, t: where(good, t, 0.0).astype(jnp.asarray(v).dtype), values, out_dot)
    return values, out_dot


def implicit_outputs(
    residual: Callable[[Array, PyTree, PyTree], Array],
    outputs: Callable[[Array, PyTree, PyTree], PyTree],
    values: PyTree,
    x: Float[Array, " n"],
    theta: PyTree,
    aux: PyTree,
    ok: Bool[Array, ""],
    jacobian: Callable[[Array, PyTree, PyTree], Array] | None = None,
    equilibrate: bool = False,
    min_norm: bool = False,
) -> PyTree:
    """`values` unchanged, differentiable as the solution of `residual(x, θ, aux) = 0`.

    **Arguments:**

    - `residual`: `F(x, θ, aux) -> (n,)`, the equations the solver solved, with any
      discrete choice (PV->PQ switches, an active set) fixed through `aux`. A module-level
      function (it is a static argument).
    - `outputs`: `(x, θ, aux) -> values`-shaped pytree: how the returned values follow
      from the unknowns (their derivative is this function's, at `x*`).
    - `values`: the solver's answers as computed on the forward path (returned as is).
    - `x`: `(n,)` the unknowns at the solution (`F(x, θ, aux) ≈ 0`).
    - `theta`: the differentiable inputs of `F` (float leaves carry tangents).
    - `aux`: data `F` needs that is not differentiated (masks, indices, constants).
    - `ok`: scalar bool; where false the derivative of `values` is zero.
    - `jacobian`: `(x, θ, aux) -> (n, n)` `∂F/∂x` in closed form (a module-level function),
      when `jax.jacfwd` of `residual` (one pass of `F` per unknown) would cost more.
    - `equilibrate`: scale the rows and columns of `∂F/∂x` by powers of two before the
      factorisation and the singularity test (static), for equations whose rows mix
      units many decades apart (see the module docstring).
    - `min_norm`: where `∂F/∂x` is singular, take the minimum-norm `dx` (in the
      equilibrated coordinates, through an SVD) instead of zero (static): for equations
      that leave a direction of `x` free at some solutions, so that the outputs it does
      not move keep their derivative.

    **Returns:** `values`; under `jax.jvp`/`jax.grad` their derivative w.r.t. `θ` is
    `(∂outputs/∂x) dx + (∂outputs/∂θ) dθ` with `dx = −(∂F/∂x)⁻¹ (∂F/∂θ) dθ`.
    """
    x, aux, ok = lax.stop_gradient((x, aux, ok))
    values = lax.stop_gradient(values)
    return _implicit_outputs(residual, outputs, jacobian, equilibrate, min_norm, values, x, theta, aux, ok)


def deferred_implicit_outputs(
    system: Callable[..., tuple[Array, PyTree, PyTree, Array]],
    residual: Callable[[Array, PyTree, PyTree], Array],
    outputs: Callable[[Array, PyTree, PyTree], PyTree],
    values: PyTree,
    inputs: tuple,
    jacobian: Callable[[Array, PyTree, PyTree], Array] | None = None,
    equilibrate: bool = False,
    min_norm: bool = False,
) -> PyTree:
    """`implicit_outputs` whose `(x, θ, aux, ok)` are `system(*inputs)`, built only when a
    derivative is taken.

    Reading an active set or a convergence test off a solution is work that only the
    derivative uses: passed to `implicit_outputs` it is traced and lowered on every
    forward call (and only then removed by XLA). Here it runs inside the derivative rule,
    so a forward call costs nothing beyond `values`.

    **Arguments:**

    - `system`: `(*inputs) -> (x, θ, aux, ok)` as `implicit_outputs` takes them (a
      module-level function: it is a static argument); `θ` must follow from `inputs`
      so that its tangent does.
    - `residual`, `outputs`, `values`, `jacobian`, `equilibrate`, `min_norm`: as in
      `implicit_outputs`.
    - `inputs`: a tuple of arrays and pytrees of arrays, the differentiable data among them.

    **Returns:** `values`, with the derivative `implicit_outputs` would give them.
    """
    values = lax.stop_gradient(values)
    return _deferred_outputs(system, residual, outputs, jacobian, equilibrate, min_norm, values, inputs)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3, 4, 5))
def _deferred_outputs(system, residual, outputs, jacobian, equilibrate, min_norm, values, inputs):
    del system, residual, outputs, jacobian, equilibrate, min_norm, inputs
    return values


@_deferred_outputs.defjvp
def _deferred_outputs_jvp(system, residual, outputs, jacobian, equilibrate, min_norm, primals, tangents):
    values, inputs = primals
    _, d_inputs = tangents

    def solved(inputs):
        x, theta, aux, ok = system(*inputs)
        return implicit_outputs(residual, outputs, values, x, theta, aux, ok, jacobian, equilibrate, min_norm)

    return jax.jvp(solved, (inputs,), (d_inputs,))


__all__ = ["deferred_implicit_outputs", "implicit_outputs"]
