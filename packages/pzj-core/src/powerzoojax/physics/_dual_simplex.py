"""Bounded-variable dual simplex for small dense LPs, written for `vmap`.

Solves `min cᵀx  s.t.  A x = b,  lo ≤ x ≤ hi` from a dual-feasible starting basis given
with its inverse: the matrix, or a `BasisInverse` that keeps it in a structured form.
Each pivot is a rank-1 (product-form) update of `B⁻¹`; the
basic values and duals are recomputed from `B⁻¹` every iteration, so no float32 error
accumulates in them. The leaving row is the most infeasible basic variable; the entering
column comes from a bound-flipping ratio test: candidates whose reduced cost changes sign before
the leaving row is repaired flip to their other bound in the same iteration, so a line
that binds costs one pivot, not one per segment it pushes across the merit order.
Reduced costs within the dual tolerance enter the ratio test as exact zeros, so degenerate
ties are broken by column index rather than by float32 round-off (which changes from pivot
to pivot and kept a tied-cost LP such as case 1354pegase's DC-OPF from finishing).

On a small LP every matrix–vector product is a broadcast multiply and a sum, not `@`:
under `vmap` it fuses into element-wise loops over the batch, whereas a `dot` of tiny
rows is a separate library kernel on a CPU, whose fixed cost dominates there. On
matrices above `_BROADCAST_MAX_ELEMENTS` elements the products are `@`. Each broadcast
product is a named `jax.jit` (`broadcast_matvec`, `broadcast_vecmat`), inlined by XLA,
so a traced program shows where they are and `benchmarks/xla_tricks.py` can put `@`
in their place to weigh them (`benchmarks/results/xla-tricks.md`).

The basic columns are picked by gathers and scatters of the basis indices by default,
not by one-hot comparisons (a `rows × vars` selection): those fuse under `vmap` too but
cost an operation per row and column, more than the gathers on a CPU whatever the LP's
size (`benchmarks/results/xla-tricks.md`). `one_hot=True` takes the comparisons: on an
accelerator a batched gather or scatter of a few indices per lane is a slow kernel of its
own, while the comparisons fuse with the element-wise work around them.

The constraint matrix is a dense array or an `LPMatrix`, which gives only the products
the method needs: a caller whose matrix has structure (the dispatch LP's signed unit
columns) then pays for its nonzeros, not for every entry.

The loop is a `lax.while_loop` that stops when the instance is optimal or proven
primal infeasible (a violated row no column can repair) or the budget is spent; under
`vmap` it runs until the slowest lane stops, the others frozen by the loop's select.
`fixed_pivots = K` puts K iterations of the same body before it, unrolled in the program,
each masked per lane exactly as the loop's select masks it (a stopped lane's iteration is
a no-op), so the result is the loop's. The loop then runs only for lanes still going; if
none is, its condition is evaluated once. Each trip of a loop is a chain of kernels that
XLA cannot fuse with what comes before or after it; on an accelerator, where a kernel's
launch costs more than a small LP's arithmetic, unrolled iterations fuse into fewer
kernels. `pivots_per_trip = U` unrolls U such masked iterations into each trip of the
loop instead: a batch whose lanes all stop early pays for no unused iterations beyond the
last trip's, and a batch that needs none (every start optimal, see `check_start`) for
none at all. On a CPU the plain loop is as fast, and every lane then pays only for its
own pivots.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp
from powerzoojax.physics._status import SolverStatus


# A lane still pivoting carries `max_steps_reached`: what it reports if the budget ends
# the loop there.
_RUNNING = SolverStatus.max_steps_reached
# Up to this many columns the ratio test compares every pair of candidates (element-wise
# work that fuses under ``vmap``); beyond it, a bisection on the ratio, O(n) per step.
_PAIRWISE_MAX_VARS = 64


class DualSimplexResult(eqx.Module):
    x: Float[Array, " n_vars"]
    y: Float[Array, " n_rows"]
    status: SolverStatus
    iterations: Int[Array, ""]
    basis: Int[Array, " n_rows"]
    at_upper: Bool[Array, " n_vars"]


# Matrices of more elements than this take a plain `@`: there the library kernel's fixed
# cost is small against the product itself.
_BROADCAST_MAX_ELEMENTS = 4096
# LPs of more matrix entries than this keep the gathers whatever `one_hot` says: each
# comparison selection costs rows × columns operations.
_ONE_HOT_MAX_ELEMENTS = 4096


def _broadcast(m: Array) -> bool:
    return m.shape[0] * m.shape[1] <= _BROADCAST_MAX_ELEMENTS


@jax.jit
def broadcast_matvec(m: Float[Array, "r k"], v: Float[Array, " k"]) -> Float[Array, " r"]:
    """`m @ v` as a broadcast multiply and a sum."""
    return jnp.sum(m * v[None, :], axis=1)


@jax.jit
def broadcast_vecmat(v: Float[Array, " r"], m: Float[Array, "r k"]) -> Float[Array, " k"]:
    """`v @ m` as a broadcast multiply and a sum."""
    return jnp.sum(v[:, None] * m, axis=0)


def matvec(m: Float[Array, "r k"], v: Float[Array, " k"]) -> Float[Array, " r"]:
    """`m @ v`, as a broadcast multiply and a sum on a small matrix (see the module
    docstring)."""
    if not _broadcast(m):
        return hp.matmul(m, v)
    return broadcast_matvec(m, v)


def vecmat(v: Float[Array, " r"], m: Float[Array, "r k"]) -> Float[Array, " k"]:
    """`v @ m`, as a broadcast multiply and a sum on a small matrix (see the module
    docstring)."""
    if not _broadcast(m):
        return hp.matmul(v, m)
    return broadcast_vecmat(v, m)


_mv, _vm = matvec, vecmat


class LPMatrix:
    """A constraint matrix `A` (`rows × vars`) given by the products the dual simplex
    takes of it. Subclasses implement every method; `DenseLPMatrix` wraps an array."""

    shape: tuple[int, int]
    dtype: jnp.dtype

    def matvec(self, x: Float[Array, " n_vars"]) -> Float[Array, " n_rows"]:
        """`A x`."""
        raise NotImplementedError

    def vecmat(self, y: Float[Array, " n_rows"]) -> Float[Array, " n_vars"]:
        """`yᵀ A`."""
        raise NotImplementedError

    def column(self, q: Int[Array, ""]) -> Float[Array, " n_rows"]:
        """Column `q` of `A`."""
        raise NotImplementedError

    def basis_matvec(self, basis: Int[Array, " n_rows"], x_b: Float[Array, " n_rows"]) -> Float[Array, " n_rows"]:
        """`B x_b`, `B` the columns `basis` of `A`."""
        raise NotImplementedError

    def basis_vecmat(self, y: Float[Array, " n_rows"], basis: Int[Array, " n_rows"]) -> Float[Array, " n_rows"]:
        """`yᵀ B`, `B` the columns `basis` of `A`."""
        raise NotImplementedError


class DenseLPMatrix(LPMatrix):
    """A dense constraint matrix (products as in `matvec` / `vecmat`).

    `one_hot`: pick columns by comparisons with the column index instead of a dynamic
    slice or gather (see the module docstring); ignored on matrices of more than
    `_ONE_HOT_MAX_ELEMENTS` entries.
    """

    def __init__(self, a: Float[Array, "n_rows n_vars"], one_hot: bool = False):
        self.a = a
        self.shape = (a.shape[0], a.shape[1])
        self.dtype = a.dtype
        self.one_hot = one_hot and a.shape[0] * a.shape[1] <= _ONE_HOT_MAX_ELEMENTS

    def matvec(self, x):
        return _mv(self.a, x)

    def vecmat(self, y):
        return _vm(y, self.a)

    def column(self, q):
        if self.one_hot:
            return jnp.sum(where(jnp.arange(self.shape[1])[None, :] == q, self.a, 0.0), axis=1)
        return lax.dynamic_index_in_dim(self.a, q, axis=1, keepdims=False)

    def _basis_columns(self, basis: Int[Array, " n_basis"]) -> Float[Array, "a_rows n_basis"]:
        if self.one_hot:
            hits = basis[:, None] == jnp.arange(self.shape[1], dtype=basis.dtype)[None, :]
            return jnp.sum(where(hits[None, :, :], self.a[:, None, :], 0.0), axis=2)
        return self.a[:, basis]

    def basis_matvec(self, basis, x_b):
        return _mv(self._basis_columns(basis), x_b)

    def basis_vecmat(self, y, basis):
        return _vm(y, self._basis_columns(basis))


class BasisInverse(eqx.Module):
    """`B⁻¹` of the current basis (rows: basis positions; columns: LP rows), by the
    operations the dual simplex takes of it. Subclasses implement every method;
    `DenseInverse` holds the matrix."""

    def solve(self, v: Float[Array, " n_rows"]) -> Float[Array, " n_rows"]:
        """`B⁻¹ v`."""
        raise NotImplementedError

    def solve_t(self, c_b: Float[Array, " n_rows"]) -> Float[Array, " n_rows"]:
        """`c_bᵀ B⁻¹`."""
        raise NotImplementedError

    def row(self, r: Int[Array, ""], e_r: Float[Array, " n_rows"]) -> Float[Array, " n_rows"]:
        """Row `r` of `B⁻¹` (`e_r` is `r` one-hot)."""
        raise NotImplementedError

    def pivot(
        self,
        r: Int[Array, ""],
        e_r: Float[Array, " n_rows"],
        row_r: Float[Array, " n_rows"],
        col: Float[Array, " n_rows"],
        piv: Float[Array, ""],
        leaving: Int[Array, ""],
        entering: Int[Array, ""],
    ) -> "BasisInverse":
        """The inverse once column `entering` (`col = B⁻¹ a_entering`, `piv = col[r]`)
        replaces column `leaving` at position `r` (`row_r` is row `r` of `B⁻¹`)."""
        raise NotImplementedError


class DenseInverse(BasisInverse):
    """`B⁻¹` as a matrix, updated by a rank-1 (product-form) step per pivot."""

    binv: Float[Array, "n_rows n_rows"]

    def solve(self, v):
        return _mv(self.binv, v)

    def solve_t(self, c_b):
        return _vm(c_b, self.binv)

    def row(self, r, e_r):
        return _vm(e_r, self.binv)

    def pivot(self, r, e_r, row_r, col, piv, leaving, entering):
        return DenseInverse(self.binv - (col - e_r)[:, None] * row_r[None, :] / piv)


def bounded_dual_simplex(
    a: Float[Array, "n_rows n_vars"] | LPMatrix,
    b: Float[Array, " n_rows"],
    c: Float[Array, " n_vars"],
    lo: Float[Array, " n_vars"],
    hi: Float[Array, " n_vars"],
    basis: Int[Array, " n_rows"],
    binv: Float[Array, "n_rows n_rows"] | BasisInverse,
    at_upper: Bool[Array, " n_vars"],
    max_iter: int,
    primal_tol: float = 1e-5,
    pivot_tol: float = 1e-6,
    dual_tol: float = 1e-5,
    optimality_tol: float = 3e-4,
    check_start: bool = False,
    fixed_pivots: int = 0,
    one_hot: bool = False,
    pivots_per_trip: int = 1,
) -> DualSimplexResult:
    """Optimal `x` and duals `y` (`∂ cost / ∂ b`) from a dual-feasible basis.

    `a` is an array or an `LPMatrix`. `basis` holds the basic column of each row, `binv`
    its inverse (an array or a `BasisInverse`), `at_upper` which
    non-basic variables sit at `hi` (the rest at `lo`). `status`: a `SolverStatus`,
    `successful` (optimal), `infeasible` (a violated row no column can repair) or
    `max_steps_reached` (`max_iter` pivots spent); `x` is the last basic solution.

    Tolerances (scaled units): `primal_tol` on bound violations, `pivot_tol` on pivot
    elements, `dual_tol` below which a reduced cost counts as zero in the ratio test, and
    `optimality_tol`, the wrong-signed reduced cost a primal-feasible basis may keep and
    still be optimal. The last is about √ε of float32: after tens of product-form pivots
    the reduced costs carry round-off of up to about 5e-5, and a tighter test chases that
    noise in a cycle (a bound flip breaks a row, the dual pivots that repair it recreate
    the reduced cost); `benchmarks/results/large-cases.md` has the test that set it.

    `check_start` (static): test the starting basis for optimality before the loop, which
    pays when starts are often optimal already (warm starts), and lets a batch whose
    every start is optimal skip the loop's body.

    `fixed_pivots` (static, `≥ 0`): iterations unrolled before the loop, masked per lane
    (see the module docstring); the result is the same for every value.

    `pivots_per_trip` (static, `≥ 1`): masked iterations unrolled into each trip of the
    loop; the result is the same for every value.

    `one_hot` (static): basis selections by comparisons instead of gathers and scatters
    (see the module docstring), on LPs of at most `_ONE_HOT_MAX_ELEMENTS` matrix entries
    (their cost grows with rows × columns); the same values.
    """
    if isinstance(fixed_pivots, bool) or not isinstance(fixed_pivots, int) or fixed_pivots < 0:
        raise ValueError(f"bounded_dual_simplex: fixed_pivots must be an int >= 0, got {fixed_pivots!r}")
    if isinstance(pivots_per_trip, bool) or not isinstance(pivots_per_trip, int) or pivots_per_trip < 1:
        raise ValueError(f"bounded_dual_simplex: pivots_per_trip must be an int >= 1, got {pivots_per_trip!r}")
    n_rows, n_vars = a.shape
    one_hot = one_hot and n_rows * n_vars <= _ONE_HOT_MAX_ELEMENTS
    op = a if isinstance(a, LPMatrix) else DenseLPMatrix(a, one_hot)
    inv0 = binv if isinstance(binv, BasisInverse) else DenseInverse(binv)
    cols = jnp.arange(n_vars)
    rows = jnp.arange(n_rows)
    index_before = cols[None, :] < cols[:, None]  # [j, k]: k precedes j on equal ratios

    def first_to_complete(eligible, ratio, repair, need):
        """`(found, q)`: the first candidate in (ratio, index) order at which the repair of
        the candidates up to it, itself included, reaches `need` (off the candidates the
        ratio is inf and the repair 0)."""
        if n_vars <= _PAIRWISE_MAX_VARS:
            ahead = (ratio[None, :] < ratio[:, None]) | ((ratio[None, :] == ratio[:, None]) & index_before)
            before = jnp.sum(where(ahead, repair[None, :], 0.0), axis=1)
            completes = eligible & (before + repair >= need)
            return jnp.any(completes), jnp.argmin(where(completes, ratio, jnp.inf))
        # Bisection on the ratio's bits (a non-negative float's bits order as its value) for
        # the smallest ratio whose candidates, with every smaller one, reach `need`, then
        # the first in index order among the candidates of that ratio: O(n) per step, where
        # a batched sort of a few hundred ratios per lane is a slow kernel of its own.
        width = ratio.dtype.itemsize * 8
        bits = lax.bitcast_convert_type(ratio, jnp.dtype(f"int{width}"))
        found = jnp.sum(repair) >= need

        def halve(_, bounds):
            lo, hi = bounds
            mid = lo + (hi - lo) // 2
            reached = jnp.sum(where(bits <= mid, repair, 0.0)) >= need
            return where(reached, lo, mid + 1), where(reached, mid, hi)

        top = jnp.max(where(eligible, bits, 0))
        _, t = lax.fori_loop(0, width - 1, halve, (jnp.zeros_like(top), top))
        tie = eligible & (bits == t)
        reach = tie & (jnp.sum(where(bits < t, repair, 0.0)) + jnp.cumsum(where(tie, repair, 0.0)) >= need)
        # Rounding may leave the tie's own running sum just short: its last candidate then.
        q = where(jnp.any(reach), jnp.argmax(reach), n_vars - 1 - jnp.argmax(tie[::-1]))
        return found, q

    def ratio_or_neg(eligible, ratio):
        return where(eligible, ratio, -1.0)

    def basic_values(basis, inv, at_upper):
        sel = _BasisSelection(basis, n_vars, one_hot)
        x_nb = where(sel.is_basic, 0.0, where(at_upper, hi, lo))
        x_b = inv.solve(b - op.matvec(x_nb))
        return sel, sel.is_basic, x_nb, x_b

    def duals(sel, inv):
        return inv.solve_t(sel.pick(c))  # yᵀ = c_Bᵀ B⁻¹

    def violations(basis, inv, at_upper):
        sel, is_basic, _, x_b = basic_values(basis, inv, at_upper)
        lo_b, hi_b = sel.pick(lo), sel.pick(hi)
        return sel, is_basic, lo_b - x_b, jnp.maximum(lo_b - x_b, x_b - hi_b)

    def wrong_signs(sel, is_basic, inv, at_upper):
        """Reduced costs, and the non-basic columns whose reduced cost has the wrong sign."""
        y = duals(sel, inv)
        # One refinement step against the basis itself (``yᵀB`` is ``yᵀA`` at the basic
        # columns): the product-form inverse drifts, and a reduced cost wrong by that drift
        # can pick the wrong entering column and stop on a suboptimal vertex.
        d = c - op.vecmat(y)
        y = y + inv.solve_t(sel.pick(d))
        d = c - op.vecmat(y)
        # A primal-feasible basis is optimal only if it is dual feasible too; a non-basic
        # column whose reduced cost has the wrong sign flips to its other bound (every
        # column is boxed), which restores dual feasibility and hands the repair back to
        # the dual pivots.
        return d, ~is_basic & where(at_upper, d > optimality_tol, d < -optimality_tol)

    def body(carry):
        it, basis, inv, at_upper, status = carry
        sel, is_basic, below_by, viol = violations(basis, inv, at_upper)
        r = jnp.argmax(viol)
        e_r = (rows == r).astype(op.dtype)
        feasible = jnp.max(viol) <= primal_tol
        below = jnp.sum(e_r * below_by, axis=0) > 0
        d, wrong = wrong_signs(sel, is_basic, inv, at_upper)
        refit = feasible & jnp.any(wrong)
        optimal = feasible & ~refit
        binv_r = inv.row(r, e_r)
        alpha = where(below, -1.0, 1.0) * op.vecmat(binv_r)
        eligible = ~is_basic & where(at_upper, alpha < -pivot_tol, alpha > pivot_tol)
        # Reduced costs clipped to their dual-feasible sign: round-off cannot flip a ratio.
        # Those within the dual tolerance are zero: on a dual-degenerate LP (tied unit
        # costs) they are round-off, different at every pivot, and ordering the ratio
        # test by them wanders without end; exact zeros leave ties to the column index.
        d_feas = where(at_upper, jnp.maximum(-d, 0.0), jnp.maximum(d, 0.0))
        d_feas = where(d_feas <= dual_tol, 0.0, d_feas)
        mag = jnp.abs(alpha)
        ratio = where(eligible, d_feas / where(eligible, mag, 1.0), jnp.inf)
        # Bound-flipping ratio test: walk the breakpoints in ratio order (ties by index);
        # each passed candidate flips to its other bound and repairs mag·range of the
        # infeasibility; the first one that completes the repair enters, else the last.
        # Flipped candidates' reduced costs change sign before the entering one's, so
        # the dual stays feasible. Pairwise [j, k] with k on the minor axis.
        repair = where(eligible, mag * (hi - lo), 0.0)
        found, q_complete = first_to_complete(eligible, ratio, repair, jnp.max(viol))
        q = where(found, q_complete, jnp.argmax(ratio_or_neg(eligible, ratio)))
        ratio_q = jnp.sum(where(cols == q, ratio, 0.0), axis=0)
        flipped = eligible & ((ratio < ratio_q) | ((ratio == ratio_q) & (cols < q)))
        infeasible = ~feasible & ~jnp.any(eligible)
        pivot = ~feasible & ~infeasible
        col = inv.solve(op.column(q))
        piv = jnp.sum(e_r * col, axis=0)
        piv = where(pivot, piv, 1.0)
        leaving = jnp.sum(where(rows == r, basis, 0), axis=0)
        new_inv = inv.pivot(r, e_r, binv_r, col, piv, leaving, q)
        new_basis = where(rows == r, q.astype(basis.dtype), basis)
        new_upper = where(cols == leaving, ~below, where(flipped, ~at_upper, at_upper))
        inv = jax.tree.map(lambda new, old: where(pivot, new, old), new_inv, inv)
        basis = where(pivot, new_basis, basis)
        at_upper = where(pivot, new_upper, where(refit, at_upper ^ wrong, at_upper))
        status = SolverStatus.where(
            optimal, SolverStatus.successful, SolverStatus.where(infeasible, SolverStatus.infeasible, _RUNNING)
        )
        return it + (pivot | refit).astype(jnp.int32), basis, inv, at_upper, status

    def cond(carry):
        it, _, _, _, status = carry
        return (status == _RUNNING) & (it < max_iter)

    status0 = _RUNNING
    if check_start:
        # An optimal start (a warm start on an unchanged LP) then skips the loop, whose
        # ratio test costs most of a pass even when no lane pivots.
        sel0, is_basic0, _, viol0 = violations(basis, inv0, at_upper)
        _, wrong0 = wrong_signs(sel0, is_basic0, inv0, at_upper)
        status0 = SolverStatus.where((jnp.max(viol0) <= primal_tol) & ~jnp.any(wrong0), SolverStatus.successful, _RUNNING)
    def masked(carry):
        # The loop's own step: a lane the loop would have stopped keeps its state.
        go = cond(carry)
        return jax.tree.map(lambda new, old: where(go, new, old), body(carry), carry)

    def trip(carry):
        for _ in range(pivots_per_trip):
            carry = masked(carry)
        return carry

    carry = (jnp.asarray(0, jnp.int32), basis, inv0, at_upper, status0)
    for _ in range(fixed_pivots):
        carry = masked(carry)
    it, basis, inv, at_upper, status = lax.while_loop(cond, body if pivots_per_trip == 1 else trip, carry)
    # The refinement below feeds several reductions; unmaterialised, XLA would fuse (and
    # so repeat) all of it into each of them.
    # The budget may end on a pivot: check optimality of the final basis once more.
    sel, is_basic, x_nb, x_b = basic_values(basis, inv, at_upper)
    # One step of iterative refinement against B itself removes the product-form drift.
    x_b = x_b + inv.solve(b - op.matvec(x_nb) - op.basis_matvec(basis, x_b))
    viol = jnp.max(jnp.maximum(sel.pick(lo) - x_b, x_b - sel.pick(hi)))
    c_b = sel.pick(c)
    y = duals(sel, inv)
    y = y + inv.solve_t(c_b - op.basis_vecmat(y, basis))
    d = c - op.vecmat(y)
    dual_ok = ~jnp.any(~is_basic & where(at_upper, d > optimality_tol, d < -optimality_tol))
    status = SolverStatus.where((status == _RUNNING) & (viol <= primal_tol) & dual_ok, SolverStatus.successful, status)
    x = x_nb + sel.spread(x_b)
    return DualSimplexResult(
        x=x, y=y, status=status, iterations=it, basis=basis, at_upper=at_upper
    )


class _BasisSelection:
    """The basic columns of an LP, by gathers and scatters of the basis indices, or with
    `one_hot` by comparisons of them with every column index (`rows × vars`; see the
    module docstring). Both give the same values: each basic column is picked once."""

    def __init__(self, basis: Int[Array, " n_rows"], n_vars: int, one_hot: bool = False):
        self.basis = basis
        self.n_vars = n_vars
        self.one_hot = one_hot
        if one_hot:
            self.hits = basis[:, None] == jnp.arange(n_vars, dtype=basis.dtype)[None, :]
            self.is_basic = jnp.any(self.hits, axis=0)
        else:
            self.is_basic = jnp.zeros((n_vars,), bool).at[basis].set(True)

    def pick(self, v: Float[Array, " n_vars"]) -> Float[Array, " n_rows"]:
        """`v` at the basic columns."""
        if self.one_hot:
            return jnp.sum(where(self.hits, v[None, :], jnp.zeros((), v.dtype)), axis=1)
        return v[self.basis]

    def spread(self, v_b: Float[Array, " n_rows"]) -> Float[Array, " n_vars"]:
        """Values of the basic columns placed at their columns, zero elsewhere."""
        if self.one_hot:
            return jnp.sum(where(self.hits, v_b[:, None], jnp.zeros((), v_b.dtype)), axis=0)
        return jnp.zeros((self.n_vars,), v_b.dtype).at[self.basis].add(v_b)


def merit_order_start(
    cost: Float[Array, " n"], width: Float[Array, " n"], demand: Float[Array, ""]
) -> tuple[Float[Array, " n"], Int[Array, ""], Bool[Array, " n"]]:
    """The network-blind merit order of a one-row dispatch LP, the dual-feasible start of
    `bounded_dual_simplex` for both the DC-OPF and the offer SCED.

    Pairwise comparison (cheaper first, ties by index): element-wise work that fuses
    under `vmap`, where a batched sort of small rows runs row by row.

    **Arguments:**

    - `cost`: `(n,)` column costs (scaled).
    - `width`: `(n,)` column widths above their lower bound (scaled).
    - `demand`: the balance target above the lower bounds (scaled).

    **Returns:**

    `(before, marginal, ahead_of_marginal)`: the width dispatched ahead of each column,
    the index of the marginal column (the last one that starts at or below the demand),
    and which columns sit at their upper bound.
    """
    n = cost.shape[0]
    idx = jnp.arange(n)
    # ahead[j, i]: column i is dispatched before column j (minor-axis sums below).
    ahead = (cost[None, :] < cost[:, None]) | ((cost[None, :] == cost[:, None]) & (idx[None, :] < idx[:, None]))
    before = jnp.sum(where(ahead, width[None, :], 0.0), axis=1)
    rank = jnp.sum(ahead.astype(jnp.int32), axis=1)
    marginal = jnp.argmax(where(before <= demand, rank, -1))
    c_marg = jnp.sum(where(idx == marginal, cost, 0.0), axis=0)
    return before, marginal, (cost < c_marg) | ((cost == c_marg) & (idx < marginal))
