"""The dispatch LP's structured matrix gives the same products as the dense
`[1ᵀ 0 0 0; P −I −I I]` it stands for, and a large LP solved through it reaches the
optimum the dense matrix reaches."""

import jax
import jax.numpy as jnp
import numpy as np
from powerzoojax.physics import _dispatch_lp
from powerzoojax.physics._dispatch_lp import ElasticRowsMatrix, solve_dispatch_lp
from powerzoojax.physics._dual_simplex import DenseLPMatrix


def _dense(p):
    m, n = p.shape
    eye = np.eye(m)
    return np.block([[np.ones((1, n)), np.zeros((1, 3 * m))], [p, -eye, -eye, eye]])


def test_structured_products_equal_the_dense_ones():
    rng = np.random.default_rng(0)
    m, n = 7, 4
    p = rng.uniform(-1, 1, (m, n))
    a = _dense(p)
    op = ElasticRowsMatrix(jnp.asarray(p, jnp.float32))
    dense = DenseLPMatrix(jnp.asarray(a, jnp.float32))
    assert op.shape == a.shape
    x = rng.standard_normal(a.shape[1])
    y = rng.standard_normal(a.shape[0])
    np.testing.assert_allclose(np.asarray(op.matvec(jnp.asarray(x, jnp.float32))), a @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(op.vecmat(jnp.asarray(y, jnp.float32))), y @ a, rtol=1e-5, atol=1e-5)
    for q in range(a.shape[1]):
        np.testing.assert_array_equal(np.asarray(op.column(jnp.asarray(q))), a[:, q].astype(np.float32))
    basis = jnp.asarray([2, n + 0, n + m + 1, n + 2 * m + 2, n + 3, n + 4, n + 5, n + 6], jnp.int32)
    x_b = jnp.asarray(rng.standard_normal(m + 1), jnp.float32)
    np.testing.assert_allclose(
        np.asarray(op.basis_matvec(basis, x_b)), np.asarray(dense.basis_matvec(basis, x_b)), rtol=1e-5, atol=1e-5
    )
    y32 = jnp.asarray(y, jnp.float32)
    np.testing.assert_allclose(
        np.asarray(op.basis_vecmat(y32, basis)), np.asarray(dense.basis_vecmat(y32, basis)), rtol=1e-5, atol=1e-5
    )


def test_a_large_lp_solves_alike_through_either_matrix(monkeypatch):
    # 3 units, 40 rows that bind: (41 × 123) entries, above the structured threshold.
    rng = np.random.default_rng(1)
    n, m = 3, 40
    a_t = jnp.asarray(rng.uniform(-0.6, 0.6, (n, m)), jnp.float32)
    args = (
        jnp.asarray([10.0, 20.0, 30.0]), jnp.zeros(n), jnp.asarray([100.0, 80.0, 60.0]), jnp.asarray(150.0),
        a_t, jnp.full((m,), -15.0), jnp.full((m,), 15.0),
    )
    assert (m + 1) * (n + 3 * m) > _dispatch_lp.STRUCTURED_MIN_ENTRIES
    structured, _ = jax.jit(solve_dispatch_lp)(*args)
    monkeypatch.setattr(_dispatch_lp, "STRUCTURED_MIN_ENTRIES", 10**9)
    dense, _ = jax.jit(solve_dispatch_lp)(*args)
    assert bool(structured.converged) and bool(dense.converged)
    assert int(structured.n_iter) > 0 and float(jnp.sum(structured.row_violation)) > 0  # rows bind
    np.testing.assert_allclose(np.asarray(structured.x), np.asarray(dense.x), atol=1e-3)
    np.testing.assert_allclose(float(structured.nu), float(dense.nu), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(structured.row_violation), np.asarray(dense.row_violation), atol=1e-3)


def test_the_slack_inverse_tracks_the_dense_inverse_through_every_kind_of_pivot():
    # Every pivot kind: a unit replaces a slack, a slack of a unit-covered row replaces a unit,
    # a slack replaces another slack of its own row (a sign change), a slack of a covered row
    # replaces a slack of another row, and a unit replaces a unit. After each, the slack
    # inverse's solves and rows equal those of the dense inverse of the same basis.
    from powerzoojax.physics._dispatch_lp import SlackBasisInverse

    rng = np.random.default_rng(2)
    n, m = 4, 5
    m1 = m + 1
    p = rng.uniform(-1, 1, (m, n))
    a = _dense(p)
    op = ElasticRowsMatrix(jnp.asarray(p, jnp.float32))
    g, up, down = (lambda j: n + j - 1), (lambda j: n + m + j - 1), (lambda j: n + 2 * m + j - 1)  # row j's slacks
    basis = np.array([0] + [g(j) for j in range(1, m1)])
    k = min(n, m1)
    w = jnp.zeros((m1, k)).at[:, 0].set(jnp.asarray(np.concatenate([[1.0], p[:, 0]]), jnp.float32))
    inv = SlackBasisInverse.from_filled(
        w, jnp.full((k,), m1, jnp.int32).at[0].set(0), jnp.asarray([1.0] + [-1.0] * m, jnp.float32), n, m
    )

    def check(inv, basis):
        dense = np.linalg.inv(a[:, basis])
        v = rng.standard_normal(m1)
        np.testing.assert_allclose(np.asarray(inv.solve(jnp.asarray(v, jnp.float32))), dense @ v, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(inv.solve_t(jnp.asarray(v, jnp.float32))), v @ dense, rtol=1e-4, atol=1e-4)
        for r in range(m1):
            e_r = jnp.asarray(np.eye(m1)[r], jnp.float32)
            np.testing.assert_allclose(np.asarray(inv.row(jnp.asarray(r), e_r)), dense[r], rtol=1e-4, atol=1e-4)

    check(inv, basis)
    # (position, entering column): each keeps the basis non-singular for this P.
    steps = [
        (2, 1),  # unit 1 replaces row 2's flow: row 2 becomes covered
        (4, 2),  # unit 2 replaces row 4's flow
        (3, up(3)),  # a slack of the same row (flow -> upper violation): a sign change
        (3, down(3)),  # and back to the other sign
        (2, g(2)),  # row 2's flow replaces unit 1 at position 2
        (5, g(4)),  # row 4's flow (a covered row) replaces row 5's flow: row 5 becomes covered
        (0, 3),  # unit 3 replaces unit 0
    ]
    for r, q in steps:
        e_r = jnp.asarray(np.eye(m1)[r], jnp.float32)
        col = inv.solve(op.column(jnp.asarray(q)))
        piv = col[r]
        assert abs(float(piv)) > 1e-3, (r, q)
        inv = inv.pivot(jnp.asarray(r), e_r, inv.row(jnp.asarray(r), e_r), col, piv, jnp.asarray(basis[r]), jnp.asarray(q))
        basis = basis.copy()
        basis[r] = q
        check(inv, basis)
