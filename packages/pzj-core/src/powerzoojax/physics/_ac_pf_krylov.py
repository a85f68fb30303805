"""Inexact Newton–Krylov step of the AC power flow for large networks, in plain XLA
operations (no LAPACK call, no host callback).

The dense Newton step of [`ac_power_flow`][powerzoojax.physics.ac_power_flow] factorises
the `(2m)²` Jacobian (`m = N − 1`) at every iteration: `(2m)³ · 2/3` flops, cubic in
the network's size. Above `KRYLOV_MIN_BUSES` buses the step is instead `J Δx = −F` solved
approximately by GMRES, right-preconditioned by the fast-decoupled operators (`B'⁻¹` for
the angle rows, `B''⁻¹` for the magnitude rows) that the fast-decoupled loop already
holds, with Jacobian-vector products computed directly from the complex voltages and
currents of the iterate and the branch admittances (gathers and scatter-adds over the
branches, no Jacobian formed). Each Krylov step then costs the preconditioner's two
`(N − 1)²` products instead of a share of a factorisation.

GMRES here is one cycle of at most `KRYLOV_MAX_STEPS` Arnoldi steps from `Δx = 0`
(classical Gram–Schmidt applied twice, Givens rotations for the residual estimate,
back-substitution in a loop), stopping once the estimated linear residual is below
`KRYLOV_FORCING · ‖F‖₂`. Every division is guarded, so a breakdown (a singular Jacobian,
an exact solve) gives a finite step; a non-finite input gives a non-finite step, which
the Newton loop treats as it treats a singular dense solve (stop, not converged).
"""

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp

# Networks with at least this many buses take the Newton–Krylov step; smaller ones keep
# the dense LU (cases 5–300 in the shipped set; 552gb, 1354pegase, 2383wp go Krylov):
# the threshold sits between the sizes where a dense solve is still cheaper and where
# GMRES is (benchmarks/results/large-cases.md).
KRYLOV_MIN_BUSES = 500
# Largest Krylov subspace of one Newton step (one GMRES cycle, no restart) on networks of
# KRYLOV_MIN_BUSES buses and more.
KRYLOV_MAX_STEPS = 40
# Relative linear residual at which GMRES stops: ‖F + J Δx‖₂ ≤ KRYLOV_FORCING · ‖F‖₂. With
# 1e-3 the outer iteration converges at the rate of exact Newton until the mismatch is near
# the float32 floor.
KRYLOV_FORCING = 1e-3
# Arnoldi loop of the GMRES solve (see `fgmres`): "while" ends at the forcing tolerance,
# "fixed" runs a fixed trip count of masked steps with in-place basis updates.
KRYLOV_LOOPS = ("while", "fixed")
KRYLOV_LOOP = "while"
# The same two settings for networks below KRYLOV_MIN_BUSES, which take the Krylov step on
# accelerators (GPU, TPU), many instances at once (the env's batched Newton re-solve):
# there each Arnoldi step costs a few passes over every lane's Krylov basis, so the
# subspace is kept small and the trip count fixed. With the fast-decoupled preconditioner
# case 118's Newton steps need 5-9 Arnoldi steps for the forcing tolerance (mean 6.8, at
# most 23 of 720 solves).
KRYLOV_SMALL_MAX_STEPS = 12
KRYLOV_SMALL_LOOP = "fixed"
# Every module constant here is read when `ac_power_flow` is traced.


def _safe_div(a, b):
    ok = b != 0
    return where(ok, a / where(ok, b, 1.0), 0.0)


def _givens(a, b):
    """`(c, s)` with `[c s; −s c] [a; b] = [r; 0]`; identity when both are zero."""
    r = jnp.sqrt(a * a + b * b)
    return where(r > 0, _safe_div(a, r), 1.0), _safe_div(b, r)


def _orthogonalise(basis, w):
    """`(h, w', ‖w'‖)`: `w` made orthogonal to the rows of `basis` by classical Gram–Schmidt
    applied twice (rows not yet filled are zero and drop out), with its coefficients."""
    h = hp.matmul(basis, w)
    w = w - hp.matmul(h, basis)
    h2 = hp.matmul(basis, w)
    w = w - hp.matmul(h2, basis)
    return h + h2, w, jnp.sqrt(jnp.sum(w * w))


def fgmres(
    matvec, precond, b: Float[Array, " n"], *, max_steps: int, rtol: float, loop: str = "while"
) -> tuple[Array, Array]:
    """Flexible right-preconditioned GMRES (one cycle from zero) for `A x = b`.

    Flexible: the preconditioned vectors are kept, so the preconditioner may differ from
    one Arnoldi step to the next (here it ends in a fixed number of CG steps, which are
    not linear in their right-hand side). The Givens rotations of the least-squares
    problem are accumulated in a `(max_steps + 1)²` matrix, so one Arnoldi step is a fixed
    handful of vector operations (no inner loop over the previous rotations) and under
    `vmap` every lane's step is the same few products.

    **Arguments:**

    - `matvec`: `v ↦ A v`.
    - `precond`: `v ↦ M⁻¹ v`, an approximation of `A⁻¹ v`.
    - `b`: right-hand side.
    - `max_steps`: largest Krylov subspace (static).
    - `rtol`: stop once the estimated residual `‖b − A x‖₂ ≤ rtol ‖b‖₂`.
    - `loop`: `"while"` (a `while_loop` that ends when the residual test passes; under
      `vmap`, when it passes on every lane) or `"fixed"` (a `fori_loop` of `max_steps`
      Arnoldi steps, each masked off once the test passes) (static). Both give the same
      result. Under `vmap` the while loop's step index differs between lanes, so it reads
      and writes the Krylov basis by masks over the whole basis; the fixed loop's index is
      the trip count, shared by every lane, so it slices and updates one basis row in place
      (a lane past its test writes zeros), several passes over the basis less per step.

    **Returns:**

    `(x, steps)`: the minimal-residual solution over the Krylov subspace built, and the
    number of Arnoldi steps taken (int32).
    """
    if loop not in KRYLOV_LOOPS:
        raise ValueError(f"fgmres: loop must be one of {KRYLOV_LOOPS}, got {loop!r}")
    n, k = b.shape[-1], max_steps
    dtype = b.dtype
    beta = jnp.sqrt(jnp.sum(b * b))
    target = rtol * beta
    # int32 like the step count `j` it is compared with (also under x64).
    rows = jnp.arange(k + 1, dtype=jnp.int32)
    basis0 = jnp.zeros((k + 1, n), dtype).at[0].set(_safe_div(b, beta))
    g0 = jnp.zeros((k + 1,), dtype).at[0].set(beta)

    def row(x, j):
        # Row (or entry) j of x by a masked sum: exact, and a plain reduction when j is
        # batched (a vmapped dynamic index would be a gather).
        mask = (rows[: x.shape[0]] == j).reshape((-1,) + (1,) * (x.ndim - 1))
        return jnp.sum(where(mask, x, 0.0), axis=0)

    def arnoldi(state):
        j, basis, zs, r_mat, rot, g = state
        z = precond(row(basis, j))
        zs = where((rows[:k] == j)[:, None], z, zs)
        h, w, h_next = _orthogonalise(basis, matvec(z))
        basis = where((rows == j + 1)[:, None], _safe_div(w, h_next), basis)
        # Column j of the Hessenberg matrix, rotated by the previous Givens rotations
        # (their product `rot`; its rows from j + 1 on are still the identity's).
        col = hp.matmul(rot, where(rows == j + 1, h_next, h))
        a, bb = row(col, j), row(col, j + 1)
        c, s = _givens(a, bb)
        rot_j, rot_j1 = row(rot, j), row(rot, j + 1)
        rot = where(
            (rows == j)[:, None], c * rot_j + s * rot_j1, where((rows == j + 1)[:, None], c * rot_j1 - s * rot_j, rot)
        )
        col = where(rows == j, c * a + s * bb, where(rows == j + 1, 0.0, col))
        r_mat = where((rows[:k] == j)[None, :], col[:k, None], r_mat)
        # The rotated right-hand side beta e_1; its entry j + 1 is the residual estimate.
        g = where(rows == j, c * row(g, j), where(rows == j + 1, -s * row(g, j), g))
        return j + 1, basis, zs, r_mat, rot, g

    def running(state):
        j, *_, g = state
        return (j < k) & (jnp.abs(row(g, j)) > target)

    def fixed_step(i, state):
        # Step i of every lane: in-place row updates at the shared index i; a lane whose
        # test has passed writes zero rows and keeps its rotations and right-hand side.
        steps, basis, zs, r_mat, rot, g = state
        go = running(state)
        z = where(go, precond(lax.dynamic_index_in_dim(basis, i, keepdims=False)), 0.0)
        zs = lax.dynamic_update_index_in_dim(zs, z, i, 0)
        h, w, h_next = _orthogonalise(basis, matvec(z))
        basis = lax.dynamic_update_index_in_dim(basis, _safe_div(w, h_next), i + 1, 0)
        col = hp.matmul(rot, where(rows == i + 1, h_next, h))
        a, bb = col[i], col[i + 1]
        c, s = _givens(a, bb)
        c, s = where(go, c, 1.0), where(go, s, 0.0)
        rot_i, rot_i1 = rot[i], rot[i + 1]
        rot = where(
            (rows == i)[:, None], c * rot_i + s * rot_i1, where((rows == i + 1)[:, None], c * rot_i1 - s * rot_i, rot)
        )
        col = where(go, where(rows == i, c * a + s * bb, where(rows == i + 1, 0.0, col)), 0.0)
        r_mat = lax.dynamic_update_slice(r_mat, col[:k, None], (0, i))
        g = where(rows == i, c * g[i], where(rows == i + 1, -s * g[i], g))
        return steps + go.astype(jnp.int32), basis, zs, r_mat, rot, g

    zero_k = jnp.zeros((k, k), dtype)
    init = (jnp.zeros((), jnp.int32), basis0, jnp.zeros((k, n), dtype), zero_k, jnp.eye(k + 1, dtype=dtype), g0)
    if loop == "while":
        state = lax.while_loop(running, arnoldi, init)
    else:
        state = lax.fori_loop(0, k, fixed_step, init)
    steps, _, zs, r_mat, _, g = state

    # Back-substitution R y = g over the first `steps` rows (the rest of y stays 0).
    def back(t, y):
        i = k - 1 - t
        rhs = g[i] - jnp.sum(r_mat[i] * y)
        return where((rows[:k] == i) & (i < steps), _safe_div(rhs, r_mat[i, i]), y)

    y = lax.fori_loop(0, k, back, jnp.zeros((k,), dtype))
    return hp.matmul(y, zs), steps


def dense_current(y_real_t: Float[Array, "two_n two_n"]) -> Callable[[Array, Array], tuple[Array, Array]]:
    """`(e, f) ↦ (Re I, Im I)` of `I = Ybus V` by one product with the real form of `Ybus`
    (`[e f] @ [[Gᵀ, Bᵀ], [−Bᵀ, Gᵀ]]`, `ACNetwork.y_real_t`): under `vmap` a
    `(batch, 2N) × (2N, 2N)` matrix product, the accelerators' strength, where
    `branch_current`'s gathers and scatter-adds are not. For networks small enough that
    the dense `Ybus` is cheap (it is stored anyway for the mismatch).
    """
    n = y_real_t.shape[-1] // 2

    def apply(e, f):
        cur = hp.matmul(jnp.concatenate([e, f], axis=-1), y_real_t)
        return cur[..., :n], cur[..., n:]

    return apply


def branch_current(
    line_from: Int[Array, " n_lines"],
    line_to: Int[Array, " n_lines"],
    branch_g: Float[Array, "n_lines 4"],
    branch_b: Float[Array, "n_lines 4"],
    shunt_g: Float[Array, " n"],
    shunt_b: Float[Array, " n"],
) -> Callable[[Array, Array], tuple[Array, Array]]:
    """`(e, f) ↦ (Re I, Im I)` of `I = Ybus V`, `V = e + j f`, summed over the branches'
    pi models and the bus shunts: `O(N + L)` gathers and scatter-adds instead of the dense
    `(2N)²` product, for the Krylov steps (where round-off matters less than in the
    mismatch itself).

    **Arguments:**

    - `line_from`, `line_to`: `(L,)` branch ends.
    - `branch_g`, `branch_b`: `(L, 4)` branch admittances (ff, ft, tf, tt) [p.u.].
    - `shunt_g`, `shunt_b`: `(N,)` what `Ybus`'s diagonal holds beyond the branches [p.u.].

    **Returns:**

    The linear map.
    """
    n = shunt_g.shape[-1]

    def apply(e, f):
        def mul(k, ev, fv):
            g, b = branch_g[:, k], branch_b[:, k]
            return g * ev - b * fv, b * ev + g * fv

        ef, ff, et, ft = e[line_from], f[line_from], e[line_to], f[line_to]
        a_re, a_im = mul(0, ef, ff)
        b_re, b_im = mul(1, et, ft)
        c_re, c_im = mul(2, ef, ff)
        d_re, d_im = mul(3, et, ft)
        ends = jnp.concatenate([line_from, line_to])
        seg = lambda x: jax.ops.segment_sum(x, ends, num_segments=n)  # noqa: E731
        i_re = shunt_g * e - shunt_b * f + seg(jnp.concatenate([a_re + b_re, c_re + d_re]))
        i_im = shunt_b * e + shunt_g * f + seg(jnp.concatenate([a_im + b_im, c_im + d_im]))
        return i_re, i_im

    return apply


def krylov_newton_step(
    current: Callable[[Array, Array], tuple[Array, Array]],
    trig: tuple[Array, Array],
    vif: tuple[Array, Array, Array, Array],
    is_pv_red: Bool[Array, " m"],
    f: Float[Array, " two_m"],
    slack: int,
    precond: Callable[[Array], Array],
    *,
    max_steps: int | None = None,
    rtol: float | None = None,
    loop: str | None = None,
) -> tuple[Array, Array]:
    """Approximate Newton step `(Δva, Δvm)` over the non-slack buses: `J Δx = −F` by
    preconditioned flexible GMRES, `J` being the Jacobian of `ac_power_flow`'s Newton step
    (Q rows of current PV buses are identity rows).

    **Arguments:**

    - `current`: `(de, df) ↦ Ybus (de + j df)` as real and imaginary parts
      (`branch_current`).
    - `trig`: `(cos va, sin va)`, each `(N,)`, of the iterate.
    - `vif`: `(e, f, Re I, Im I)`, each `(N,)`, of the iterate (from `_bus_power`).
    - `is_pv_red`: `(N − 1,)` current PV buses among the non-slack buses.
    - `f`: `(2 (N − 1),)` mismatch `[ΔP; ΔQ]` (zero on PV Q rows).
    - `slack`: slack bus index (static).
    - `precond`: `r ↦` an approximation of `J⁻¹ r` (the fast-decoupled solve).
    - `max_steps`, `rtol`, `loop`: GMRES options (`fgmres`); `None` takes
      `KRYLOV_MAX_STEPS`, `KRYLOV_FORCING`, `KRYLOV_LOOP`, or below `KRYLOV_MIN_BUSES`
      buses `KRYLOV_SMALL_MAX_STEPS`, `KRYLOV_SMALL_LOOP` (static).

    **Returns:**

    `(Δva, Δvm)`, each `(N − 1,)`.
    """
    e, fv, i_re, i_im = vif
    n = e.shape[-1]
    m = n - 1
    drop = lambda x: jnp.concatenate([x[:slack], x[slack + 1 :]])  # noqa: E731
    put = lambda x: jnp.concatenate([x[:slack], jnp.zeros_like(x[:1]), x[slack:]])  # noqa: E731
    cos_va, sin_va = trig
    e_r, f_r, ir_r, ii_r = drop(e), drop(fv), drop(i_re), drop(i_im)

    def matvec(x):
        d_va, d_vm = put(x[:m]), put(x[m:])
        # dV = (dvm + j vm dva) e^{j va}; dS = dV conj(I) + V conj(Y dV).
        de = d_vm * cos_va - fv * d_va
        df = d_vm * sin_va + e * d_va
        d_ir, d_ii = current(de, df)
        d_ir, d_ii = drop(d_ir), drop(d_ii)
        de, df = drop(de), drop(df)
        dp = de * ir_r + e_r * d_ir + df * ii_r + f_r * d_ii
        dq = df * ir_r + f_r * d_ir - de * ii_r - e_r * d_ii
        return jnp.concatenate([dp, where(is_pv_red, x[m:], dq)])

    # Unweighted 2-norm: dividing each row by its convergence tolerance (which is the float32
    # round-off floor on stiff rows) lets GMRES leave those rows' residual near their floor,
    # and on case 2383wp that shifted the angles of whole areas by up to 2.8e-4 rad against
    # PYPOWER (9e-5 unweighted, 5.6e-5 with the dense LU).
    large = n >= KRYLOV_MIN_BUSES
    dx, _ = fgmres(
        matvec,
        precond,
        -f,
        max_steps=(KRYLOV_MAX_STEPS if large else KRYLOV_SMALL_MAX_STEPS) if max_steps is None else max_steps,
        rtol=KRYLOV_FORCING if rtol is None else rtol,
        loop=(KRYLOV_LOOP if large else KRYLOV_SMALL_LOOP) if loop is None else loop,
    )
    return dx[:m], dx[m:]
