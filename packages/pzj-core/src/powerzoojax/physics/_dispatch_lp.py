"""Exact linear-cost economic dispatch with elastic row limits, by the bounded dual simplex.

Problem (`n` units, `m` two-sided row constraints, one balance row):

    min  cᵀx  +  π Σ_j (e⁺_j + e⁻_j)
    s.t. Σ_i x_i = d
         lo ≤ x ≤ hi
         row_lo ≤ A x − e⁺ + e⁻ ≤ row_hi,   e⁺, e⁻ ≥ 0

the linear special case of `powerzoojax.physics._qp_ipm`'s problem, with the same
elastic rows (an instance whose limits cannot all be met has a finite best-effort optimum).
An interior point stops at a relative duality gap, which on a linear cost leaves the
dispatch up to several MW from the optimal vertex wherever units' costs are close; a
vertex method compares the costs themselves and stops exactly on the vertex.

As an LP over `[x, g, e⁺, e⁻]` with rows `Σx = d` and `A x − g − e⁺ + e⁻ = 0`
(`row_lo ≤ g ≤ row_hi`): the network-blind merit order (units cheaper than the marginal
one at `hi`, dearer at `lo`) with every `g` basic is dual feasible and its basis is
its own inverse, so the dual simplex starts without a factorisation and pivots only when
a row binds. Solved in scaled units (MW ÷ the widest unit range, cost ÷ the largest
`|c|`) so that float32 tolerances are relative.

Structure. Three of the matrix's four column blocks are signed unit columns. Above
`STRUCTURED_MIN_ENTRIES` entries the products with the matrix touch `P` alone
(`ElasticRowsMatrix`), and the basis inverse keeps only its columns that are not signed
unit vectors, one per basic unit (`SlackBasisInverse`): each simplex operation then costs
`O(m k)`, `k = min(n, m + 1)`, where the dense forms cost `O(m (n + 3m))` and `O(m²)`. On
large networks with few units binding (case 1354pegase: 1,432 monitored lines, 18 basic
units) that is most of the work. Smaller LPs keep the dense forms, whose broadcast
products fuse under `vmap`.

Warm start. The matrix and costs of a setup do not change between calls, only the
demand and the bounds, so the optimal basis of one call stays dual feasible for the next
(with each non-basic column at the bound its reduced cost's sign asks for), and a caller
stepping through slowly changing loads can pass it back as `start`: the dual simplex then
pivots only where the binding set moved. Its inverse is rebuilt from the same structure
rather than factorised: the basis with one of its unit columns and every remaining row on
a slack has a closed-form inverse, and each further basic unit column enters by one
product-form pivot (an optimal basis has few: the units strictly between their bounds).

Tuning per device. How the dual simplex runs (`DispatchLPTuning`: masked pivots unrolled
before its loop or into each trip of it, the start's optimality test, one-hot basis
selections) changes the program, not the optimum. A CPU runs the loop alone with gathers
(`CPU_TUNING`): there every lane pays only for its own pivots; other devices, where each kernel's launch costs more than a small LP's
arithmetic, take `ACCELERATOR_TUNING`. Unless the caller names one, the choice is made
when the program is lowered for its device (`jax.lax.platform_dependent`), so the same
jitted function is right on either.
"""

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.core._types import where
from powerzoojax.physics._dual_simplex import (
    BasisInverse,
    DenseInverse,
    DenseLPMatrix,
    DualSimplexResult,
    LPMatrix,
    bounded_dual_simplex,
    matvec,
    merit_order_start,
    vecmat,
)
from powerzoojax.physics._qp_ipm import DispatchQPSolution
from powerzoojax.physics._status import SolverStatus, is_successful
from powerzoojax.physics._working_dtype import working_float_dtype

_FEAS_TOL = 1e-5  # scaled primal tolerance of the simplex and of "rows met"
_REBUILD_PIVOT_TOL = 1e-5  # smallest pivot accepted while rebuilding a warm basis's inverse
_OPTIMALITY_TOL = 3e-4  # the wrong-signed reduced cost the simplex accepts at an optimum (its `optimality_tol`)
# LPs with more matrix entries than this use `ElasticRowsMatrix` and `SlackBasisInverse`
# (see the module docstring); smaller ones keep the dense matrix and inverse, whose
# broadcast products fuse under `vmap` (`_dual_simplex`).
STRUCTURED_MIN_ENTRIES = 4096


class DispatchLPTuning(NamedTuple):
    """How the dual simplex of `solve_dispatch_lp` runs; every value gives the same optimum
    (see `powerzoojax.physics._dual_simplex`). Static: hashable, a jit cache key.

    **Arguments:**

    - `fixed_pivots`: simplex iterations unrolled before the loop, each masked per LP
      (`≥ 0`; 0: the loop alone). Pays where a loop trip's kernel launches cost more than
      the pivots skipped lanes compute for nothing.
    - `start_test`: test the starting basis for optimality before the loop (always on with
      a warm start): a batch whose every start is optimal then runs no loop body.
    - `one_hot`: the dense LP's basis selections by comparisons instead of gathers and
      scatters (the structured large-LP forms keep their gathers).
    - `pivots_per_trip`: masked iterations unrolled into each trip of the loop (`≥ 1`):
      fewer trips, and no unused iterations for a batch that needs none.
    """

    fixed_pivots: int = 0
    start_test: bool = False
    one_hot: bool = False
    pivots_per_trip: int = 1


# The loop alone, with gathers: the CPU's choice (benchmarks/results/opf.md).
CPU_TUNING = DispatchLPTuning()
# Every other device: the case-5 seed workload's LPs start optimal (no pivot), so the start
# test skips the loop's body, where an unrolled prefix would compute its pivots for
# nothing; two pivots a trip halve the trips of rated-line LPs, which take a few pivots
# (benchmarks/results/opf.md); gathers become comparisons.
ACCELERATOR_TUNING = DispatchLPTuning(fixed_pivots=0, start_test=True, one_hot=True, pivots_per_trip=2)


def check_tuning(tuning: DispatchLPTuning | None, caller: str) -> DispatchLPTuning | None:
    """`tuning` if it is `None` (per device) or a valid `DispatchLPTuning`; else a
    `ValueError` naming the bad value and `caller`."""
    if tuning is None:
        return None
    if not isinstance(tuning, DispatchLPTuning):
        raise ValueError(f"{caller}: lp_tuning must be a DispatchLPTuning or None, got {tuning!r}")
    k = tuning.fixed_pivots
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"{caller}: lp_tuning.fixed_pivots must be an int >= 0, got {k!r}")
    u = tuning.pivots_per_trip
    if isinstance(u, bool) or not isinstance(u, int) or u < 1:
        raise ValueError(f"{caller}: lp_tuning.pivots_per_trip must be an int >= 1, got {u!r}")
    if not isinstance(tuning.start_test, bool) or not isinstance(tuning.one_hot, bool):
        raise ValueError(
            f"{caller}: lp_tuning.start_test and .one_hot must be bools, got {tuning.start_test!r}, {tuning.one_hot!r}"
        )
    return tuning


class ElasticRowsMatrix(LPMatrix):
    """The dispatch LP's matrix `[1ᵀ 0 0 0; P −I −I I]` (`m + 1` rows; columns: `n` units,
    then the rows' flows, upper and lower violations), by products with `P` alone: the
    other three blocks are signed unit columns."""

    def __init__(self, p: Float[Array, "m n"]):
        self.p = p
        self.m, self.n = p.shape
        self.shape = (self.m + 1, self.n + 3 * self.m)
        self.dtype = p.dtype

    def matvec(self, x):
        n, m = self.n, self.m
        units, flow, up, down = x[:n], x[n : n + m], x[n + m : n + 2 * m], x[n + 2 * m :]
        return jnp.concatenate([jnp.sum(units)[None], matvec(self.p, units) - flow - up + down])

    def vecmat(self, y):
        y_rows = y[1:]
        return jnp.concatenate([y[0] + vecmat(y_rows, self.p), -y_rows, -y_rows, y_rows])

    def column(self, q):
        n, m = self.n, self.m
        unit = jnp.concatenate(
            [jnp.ones((1,), self.dtype), lax.dynamic_index_in_dim(self.p, jnp.clip(q, 0, n - 1), axis=1, keepdims=False)]
        )
        row = jnp.concatenate([jnp.asarray([-1]), jnp.arange(m)]) == (q - n) % m
        slack = where(row, where(q >= n + 2 * m, 1.0, -1.0), 0.0).astype(self.dtype)
        return where(q < n, unit, slack)

    def basis_matvec(self, basis, x_b):
        return self.matvec(jnp.zeros((self.shape[1],), x_b.dtype).at[basis].add(x_b))

    def basis_vecmat(self, y, basis):
        return self.vecmat(y)[basis]


class DispatchBasis(eqx.Module):
    """A basis of the dispatch LP, to start the next solve of the same setup from.

    **Arguments:**

    - `columns`: `(m + 1,)` the basic column of each LP row (units `0..n−1`, then the
      rows' flows, upper and lower violations, `m` each).
    - `at_upper`: `(n + 3m,)` which non-basic columns sit at their upper bound.
    - `valid`: whether this basis came from a solved LP; `False` starts from the merit
      order instead.
    """

    columns: Int[Array, " n_basis"]
    at_upper: Bool[Array, " n_columns"]
    valid: Bool[Array, ""]


class SlackBasisInverse(BasisInverse):
    """`B⁻¹` of a dispatch-LP basis, kept in the columns that are not signed unit vectors.

    The slack columns of the LP are signed unit vectors `σ e_j`. Column `j` of `B⁻¹`
    (LP row `j`) is therefore `σ e_p` while row `j`'s slack is basic at position `p`, and
    is "filled" (dense) only while units cover the row; a pivot keeps that true (it fills
    the column of a slack that leaves, and empties that of a slack that enters). There are
    as many filled columns as basic units, at most `k = min(n, m + 1)`, so each operation
    costs `O(m k)` instead of the dense inverse's `O(m²)`.

    **Arguments:**

    - `w`: `(m + 1, k)` the filled columns, one per slot.
    - `slot_row`: `(k,)` the LP row of each slot (`m + 1`: an empty slot).
    - `slot_of_row`: `(m + 1,)` the slot of each filled row (`k`: not filled).
    - `pos_of_row`: `(m + 1,)` the position of each other row's basic slack (`m + 1` for a
      filled row).
    - `row_of_pos`: `(m + 1,)` the row of the slack basic at each position (`m + 1` at a
      unit's position).
    - `sign_of_row`: `(m + 1,)` the sign `σ` of each other row's basic slack.
    - `n`, `m`: units and rows of the LP (static).
    """

    w: Float[Array, "m1 k"]
    slot_row: Int[Array, " k"]
    slot_of_row: Int[Array, " m1"]
    pos_of_row: Int[Array, " m1"]
    row_of_pos: Int[Array, " m1"]
    sign_of_row: Float[Array, " m1"]
    n: int = eqx.field(static=True)
    m: int = eqx.field(static=True)

    @staticmethod
    def _at(v: Array, idx: Array) -> Array:
        return v.at[idx].get(mode="fill", fill_value=0)

    def solve(self, v):
        slack = self._at(self.sign_of_row, self.row_of_pos) * self._at(v, self.row_of_pos)
        return matvec(self.w, self._at(v, self.slot_row)) + slack

    def solve_t(self, c_b):
        k = self.w.shape[1]
        filled = self._at(vecmat(c_b, self.w), self.slot_of_row)
        return where(self.slot_of_row < k, filled, self.sign_of_row * self._at(c_b, self.pos_of_row))

    def row(self, r, e_r):
        k = self.w.shape[1]
        w_r = lax.dynamic_index_in_dim(self.w, r, axis=0, keepdims=False)
        return where(self.slot_of_row < k, self._at(w_r, self.slot_of_row), where(self.pos_of_row == r.astype(self.pos_of_row.dtype), self.sign_of_row, 0.0))

    def pivot(self, r, e_r, row_r, col, piv, leaving, entering):
        n, m = self.n, self.m
        m1, k = m + 1, self.w.shape[1]
        # Index arithmetic in the inverse's own integer dtype (`argmax` gives int64 under x64).
        index = self.pos_of_row.dtype
        r, leaving, entering = r.astype(index), leaving.astype(index), entering.astype(index)
        rows, slots = jnp.arange(m1, dtype=index), jnp.arange(k, dtype=index)
        w_r = lax.dynamic_index_in_dim(self.w, r, axis=0, keepdims=False)
        delta = col - e_r
        w = self.w - delta[:, None] * w_r[None, :] / piv
        leave_slack, enter_slack = leaving >= n, entering >= n
        c0 = where(leave_slack, (leaving - n) % m + 1, m1)  # row of the slack that leaves
        j = where(enter_slack, (entering - n) % m + 1, m1)  # row of the slack that enters
        same_row = leave_slack & enter_slack & (j == c0)
        j_slot = self._at(jnp.concatenate([self.slot_of_row, jnp.asarray([k], index)]), j)
        j_filled = enter_slack & (j_slot < k)
        c0_joins = leave_slack & ~same_row
        sigma0 = self._at(self.sign_of_row, c0)
        c0_slot = where(j_filled, j_slot, jnp.argmax(self.slot_row == m1).astype(index))
        # The leaving slack's column, σ₀ e_r before the pivot, after it:
        w = where((slots == c0_slot)[None, :] & c0_joins, (sigma0 * e_r - delta * sigma0 / piv)[:, None], w)
        slot_row = where(j_filled & (slots == j_slot), m1, self.slot_row)
        slot_row = where(c0_joins & (slots == c0_slot), c0, slot_row)
        slot_of_row = where(j_filled & (rows == j), k, self.slot_of_row)
        slot_of_row = where(c0_joins & (rows == c0), c0_slot, slot_of_row)
        pos_of_row = where(c0_joins & (rows == c0), m1, self.pos_of_row)
        pos_of_row = where(enter_slack & (rows == j), r, pos_of_row)
        row_of_pos = where(rows == r, where(enter_slack, j, m1), self.row_of_pos)
        sign_new = where(entering >= n + 2 * m, 1.0, -1.0)
        sign_of_row = where(enter_slack & (rows == j), sign_new, self.sign_of_row)
        return SlackBasisInverse(
            w,
            slot_row.astype(self.slot_row.dtype),
            slot_of_row.astype(self.slot_of_row.dtype),
            pos_of_row.astype(self.pos_of_row.dtype),
            row_of_pos.astype(self.row_of_pos.dtype),
            sign_of_row.astype(self.sign_of_row.dtype),
            n,
            m,
        )

    def to_dense(self) -> DenseInverse:
        """The same inverse as a matrix: each filled row's column gathered from `w`, the
        others `σ e_p` (a gather: a batched scatter runs element by element on a CPU)."""
        m1, k = self.w.shape
        filled = jnp.take(self.w, self.slot_of_row, axis=1, mode="fill", fill_value=0.0)
        unit = where(jnp.arange(m1)[:, None] == self.pos_of_row[None, :], self.sign_of_row[None, :], 0.0)
        return DenseInverse(where(self.slot_of_row[None, :] < k, filled, unit))

    @staticmethod
    def from_filled(
        w: Float[Array, "m1 k"], slot_row: Int[Array, " k"], sign_of_row: Float[Array, " m1"], n: int, m: int
    ) -> "SlackBasisInverse":
        """The inverse of a basis whose slack of each unfilled row `j` sits at position `j`."""
        m1, k = m + 1, w.shape[1]
        rows = jnp.arange(m1, dtype=jnp.int32)
        slot_of_row = jnp.full((m1,), k, jnp.int32).at[slot_row].set(jnp.arange(k, dtype=jnp.int32), mode="drop")
        filled = slot_of_row < k
        return SlackBasisInverse(
            w, slot_row.astype(jnp.int32), slot_of_row, where(filled, m1, rows).astype(jnp.int32),
            where(filled, m1, rows).astype(jnp.int32), sign_of_row, n, m,
        )


def cold_dispatch_basis(n: int, m: int) -> DispatchBasis:
    """The "no warm start" basis of a dispatch LP with `n` units and `m` rows (`valid`
    is `False`; the other leaves only fix the shapes)."""
    return DispatchBasis(
        columns=jnp.concatenate([jnp.zeros((1,), jnp.int32), n + jnp.arange(m, dtype=jnp.int32)]),
        at_upper=jnp.zeros((n + 3 * m,), bool),
        valid=jnp.asarray(False),
    )


def _rebuild_basis(
    a_lp: LPMatrix, cost: Float[Array, " n_columns"], n: int, start: DispatchBasis, thin: bool
) -> tuple[Int[Array, " m1"], BasisInverse, Bool[Array, " n_columns"], Bool[Array, ""]]:
    """`(basis, inverse, at_upper, ok)` of the warm basis `start` on this LP (`a_lp` is
    `[1ᵀ 0; P −I −I I]`); `ok` is `False` when `start` is not a usable basis. The inverse
    is a `SlackBasisInverse` when `thin`, else a `DenseInverse`.

    The rows are re-ordered: row 0 takes the first basic unit column, every other row its
    basic slack column, or the flow column if none; those columns' inverse is closed-form
    (`[[1, 0], [−S p, S]]` with `S` the slacks' ±1 signs), a `SlackBasisInverse` with one
    filled column. The other basic unit columns then replace flow columns by its pivots,
    each on the largest available pivot.
    """
    m1, n_cols = a_lp.shape
    m = m1 - 1
    dtype = a_lp.dtype
    cols = start.columns
    is_unit = cols < n
    slack_row = where(is_unit, m, (cols - n) % m)  # row m: dropped by the scatters below
    cover = jnp.zeros((m,), jnp.int32).at[slack_row].add(1, mode="drop")
    sign = jnp.full((m,), -1.0, dtype).at[slack_row].set(where(cols >= n + 2 * m, 1.0, -1.0), mode="drop")
    row_column = (n + jnp.arange(m, dtype=cols.dtype)).at[slack_row].set(cols, mode="drop")
    first = jnp.argmax(is_unit)
    ok = (
        start.valid
        & jnp.any(is_unit)
        & jnp.all(cover <= 1)
        & jnp.all((cols >= 0) & (cols < n_cols))
    )
    u0 = jnp.clip(cols[first], 0, n - 1)
    p0 = a_lp.column(u0)[1:]
    s_ext = jnp.concatenate([jnp.ones((1,), dtype), sign])
    k = min(n, m1)
    w = jnp.zeros((m1, k), dtype).at[:, 0].set(jnp.concatenate([jnp.ones((1,), dtype), -sign * p0]))
    inv = SlackBasisInverse.from_filled(w, jnp.full((k,), m1, jnp.int32).at[0].set(0), s_ext, n, m)
    basis = jnp.concatenate([u0[None].astype(cols.dtype), row_column])
    rows = jnp.arange(m1)
    free_rows = jnp.concatenate([jnp.zeros((1,), bool), cover == 0])
    pending = is_unit & (rows != first)

    def enter(carry):
        basis, inv, free_rows, pending, ok = carry
        nxt = jnp.argmax(pending)
        u = jnp.clip(cols[nxt], 0, n - 1)
        col = inv.solve(a_lp.column(u))
        r = jnp.argmax(where(free_rows, jnp.abs(col), -1.0))
        e_r = rows == r
        piv = jnp.sum(where(e_r, col, 0.0))
        good = jnp.abs(piv) > _REBUILD_PIVOT_TOL
        leaving = jnp.sum(where(e_r, basis, 0))
        inv = inv.pivot(r, e_r.astype(dtype), None, col, where(good, piv, 1.0), leaving, u)
        basis = where(e_r, u, basis).astype(basis.dtype)
        return basis, inv, free_rows & ~e_r, pending & (rows != nxt), ok & good

    def more(carry):
        return jnp.any(carry[3]) & carry[4]

    basis, inv, _, _, ok = lax.while_loop(more, enter, (basis, inv, free_rows, pending & ok, ok))
    # Each non-basic column at the bound its reduced cost asks for (the dual simplex needs
    # a dual-feasible start). Reduced costs within the simplex's optimality tolerance keep
    # the bound they had: it accepted them so, and flipping one over round-off would move
    # the vertex and cost a pivot back.
    d = cost - a_lp.vecmat(inv.solve_t(cost[basis]))
    is_basic = jnp.zeros((n_cols,), bool).at[basis].set(True)
    at_upper = ~is_basic & where(d < -_OPTIMALITY_TOL, True, where(d > _OPTIMALITY_TOL, False, start.at_upper))
    ok = ok & jnp.all(jnp.isfinite(inv.w))
    return basis, (inv if thin else inv.to_dense()), at_upper, ok


def solve_dispatch_lp(
    lin: Float[Array, " n"],
    lo: Float[Array, " n"],
    hi: Float[Array, " n"],
    total: Float[Array, ""],
    a_t: Float[Array, "n m"],
    row_lo: Float[Array, " m"],
    row_hi: Float[Array, " m"],
    penalty: float = 1e3,
    max_pivots: int | None = None,
    start: DispatchBasis | None = None,
    tuning: DispatchLPTuning | None = None,
) -> tuple[DispatchQPSolution, DispatchBasis]:
    """Optimal vertex of the linear dispatch above, in the caller's units.

    **Arguments:**

    - `lin`: `(n,)` marginal cost of each unit [$/MWh].
    - `lo`, `hi`: `(n,)` unit bounds [MW], `lo ≤ hi` (equal bounds fix a unit).
    - `total`: the balance target `d` [MW]; clipped to `[Σlo, Σhi]`, the caller reads
      the capacity status.
    - `a_t`: `(n, m)` row coefficients, transposed (the units' PTDF of the monitored lines).
    - `row_lo`, `row_hi`: `(m,)` row limits [MW].
    - `penalty`: cost of one MW of row violation, in multiples of the largest `|lin|`.
    - `max_pivots`: pivot budget (static); default `4 (m + 1) + n`.
    - `start`: the final basis of an earlier solve with the same `lin`, `a_t` and
      `penalty` (see the module docstring); `None`, or one not `valid`, starts from the
      merit order.
    - `tuning`: how the dual simplex runs (static, see `DispatchLPTuning`); `None` takes
      `CPU_TUNING` on a CPU and `ACCELERATOR_TUNING` elsewhere, chosen at lowering.

    **Returns:** `(solution, basis)`: the final basis, to pass as the next `start`
    (`valid` when the LP was solved), and a `DispatchQPSolution`: `x` [MW]; `nu` the balance dual (system price
    `−nu` [$/MWh]); `mu_upper`/`mu_lower` (`≥ 0`) the row duals; `row_violation`
    `e⁺ + e⁻` [MW]; `status` `successful` when the simplex reached an optimal basis; `n_iter` its
    pivots; `residual` the largest scaled bound violation of the final basis.
    """
    tuning = check_tuning(tuning, "solve_dispatch_lp")
    n, m = a_t.shape
    dtype = working_float_dtype(lin)
    hi = jnp.maximum(hi, lo)
    width = hi - lo
    sx = jnp.maximum(jnp.max(width), 1.0)
    sc = jnp.maximum(jnp.max(jnp.abs(lin)), 1e-3)
    a = a_t.T
    base_flow = matvec(a, lo)
    cs, ws, ds, rlo, rhi = (
        lin / sc, width / sx, (jnp.clip(total, jnp.sum(lo), jnp.sum(hi)) - jnp.sum(lo)) / sx,
        (row_lo - base_flow) / sx, (row_hi - base_flow) / sx,
    )
    # |A x| ≤ Σ width / sx ≤ n in scaled units (|PTDF| ≤ 1), so no violation exceeds this.
    e_hi = n + jnp.maximum(jnp.max(jnp.abs(rlo), initial=0.0), jnp.max(jnp.abs(rhi), initial=0.0)) + 1.0
    eye = jnp.eye(m, dtype=dtype)
    structured = (m + 1) * (n + 3 * m) > STRUCTURED_MIN_ENTRIES
    dense_a = None
    if not structured:
        dense_a = jnp.concatenate(
            [
                jnp.concatenate([jnp.ones((1, n), dtype), jnp.zeros((1, 3 * m), dtype)], axis=1),
                jnp.concatenate([a.astype(dtype), -eye, -eye, eye], axis=1),
            ],
            axis=0,
        )
    b = jnp.zeros((m + 1,), dtype).at[0].set(ds)
    pen = jnp.full((2 * m,), penalty, dtype)
    cost = jnp.concatenate([cs, jnp.zeros((m,), dtype), pen])
    lo_lp = jnp.concatenate([jnp.zeros((n,), dtype), rlo, jnp.zeros((2 * m,), dtype)])
    hi_lp = jnp.concatenate([ws, rhi, jnp.full((2 * m,), e_hi, dtype)])

    idx = jnp.arange(n)
    before, marginal, ahead_of_marginal = merit_order_start(cs, ws, ds)
    at_upper = jnp.concatenate([ahead_of_marginal, jnp.zeros((3 * m,), bool)])
    basis = jnp.concatenate([marginal[None], n + jnp.arange(m)]).astype(jnp.int32)
    marginal_col = matvec(a.astype(dtype), (idx == marginal).astype(dtype))
    inv: BasisInverse
    if structured:
        k = min(n, m + 1)
        w = jnp.zeros((m + 1, k), dtype).at[:, 0].set(jnp.concatenate([jnp.ones((1,), dtype), marginal_col]))
        signs = jnp.concatenate([jnp.ones((1,), dtype), -jnp.ones((m,), dtype)])
        inv = SlackBasisInverse.from_filled(w, jnp.full((k,), m + 1, jnp.int32).at[0].set(0), signs, n, m)
    else:
        # Assembled from blocks, not by `.at[1:, 1:].set(-eye)`: that scatter's (m², 2) index
        # array is a program constant (67 MB on case 2383wp) which XLA then constant-folds.
        inv = DenseInverse(
            jnp.concatenate(
                [
                    jnp.concatenate([jnp.ones((1, 1), dtype), jnp.zeros((1, m), dtype)], axis=1),
                    jnp.concatenate([marginal_col[:, None], -eye], axis=1),
                ],
                axis=0,
            )
        )
    budget = 4 * (m + 1) + n if max_pivots is None else int(max_pivots)

    def run(t: DispatchLPTuning, basis=basis, inv=inv, at_upper=at_upper) -> DualSimplexResult:
        op = ElasticRowsMatrix(a.astype(dtype)) if dense_a is None else DenseLPMatrix(dense_a, t.one_hot)
        if start is not None:
            warm_basis, warm_inv, warm_upper, warm = _rebuild_basis(op, cost, n, start, structured)
            basis = where(warm, warm_basis, basis)
            inv = jax.tree.map(lambda w_, c_: where(warm, w_, c_), warm_inv, inv)
            at_upper = where(warm, warm_upper, at_upper)
        return bounded_dual_simplex(
            op, b, cost, lo_lp, hi_lp, basis, inv, at_upper, budget, primal_tol=_FEAS_TOL,
            check_start=start is not None or t.start_test, fixed_pivots=t.fixed_pivots, one_hot=t.one_hot,
            pivots_per_trip=t.pivots_per_trip,
        )

    if tuning is None:
        lp = lax.platform_dependent(cpu=lambda: run(CPU_TUNING), default=lambda: run(ACCELERATOR_TUNING))
    else:
        lp = run(tuning)
    solved = is_successful(lp.status) & jnp.all(jnp.isfinite(lp.x)) & jnp.all(jnp.isfinite(lp.y))
    # Budget spent or a non-finite pivot: the network-blind merit fill keeps the balance.
    merit = jnp.clip(ds - before, 0.0, ws)
    x = jnp.where(solved, jnp.clip(lp.x[:n], 0.0, ws), merit)
    y = jnp.where(solved, lp.y, 0.0) * sc
    violation = jnp.where(solved, lp.x[n + m : n + 2 * m] + lp.x[n + 2 * m :], 0.0) * sx
    residual = jnp.max(jnp.maximum(lo_lp - lp.x, lp.x - hi_lp))
    solution = DispatchQPSolution(
        x=lo + x * sx,
        nu=-y[0],
        mu_upper=jnp.maximum(-y[1:], 0.0),
        mu_lower=jnp.maximum(y[1:], 0.0),
        row_violation=violation,
        # An optimal basis with non-finite values is reported as such; otherwise the
        # simplex's own verdict.
        status=SolverStatus.where(
            solved, SolverStatus.successful, SolverStatus.where(is_successful(lp.status), SolverStatus.nonfinite, lp.status)
        ),
        n_iter=lp.iterations,
        residual=jnp.where(jnp.isfinite(residual), residual, jnp.inf),
        certified=solved,
    )
    return solution, DispatchBasis(columns=lp.basis, at_upper=lp.at_upper, valid=solved)

