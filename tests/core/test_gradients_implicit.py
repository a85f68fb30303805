"""The implicit-derivative machinery on linear systems with known answers (float64): the
transposed LU solve, both factorisation paths, a singular system in reverse mode, and the
equilibrated and minimum-norm solves (float32 where the scaling matters)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.physics import _implicit
from powerzoojax.physics._implicit import implicit_outputs
from powerzoojax.physics._small_linalg import lu_factor, lu_solve_transposed
from powerzoojax.utils.jax_utils import enable_x64


@pytest.fixture(autouse=True, scope="module")
def _float64():
    with enable_x64():
        yield


def _linear_residual(x, theta, matrix):
    return matrix @ x - theta


def _identity_outputs(x, theta, matrix):
    return x


def _solve_and_attach(matrix, theta, **options):
    """`x = matrix⁻¹ θ` solved outside JAX's view, differentiated implicitly."""
    x = jnp.linalg.lstsq(jax.lax.stop_gradient(matrix), jax.lax.stop_gradient(theta))[0]
    return implicit_outputs(_linear_residual, _identity_outputs, x, x, theta, matrix, jnp.asarray(True), **options)


def test_transposed_lu_solve():
    a = np.random.default_rng(0).normal(size=(9, 9))
    b = jnp.arange(9.0)
    np.testing.assert_allclose(np.asarray(lu_solve_transposed(lu_factor(jnp.asarray(a)), b)), np.linalg.solve(a.T, b), rtol=1e-12)


@pytest.mark.parametrize("n", [12, _implicit._PLAIN_LU_MAX + 6])
def test_derivative_of_a_linear_solve_is_the_inverse(n):
    # n = 12: the plain-XLA LU; n = 70: LAPACK's. Both modes, and under vmap.
    rng = np.random.default_rng(n)
    matrix = jnp.asarray(rng.normal(size=(n, n)) + n * np.eye(n))
    theta = jnp.asarray(rng.normal(size=n))
    inverse = np.linalg.inv(np.asarray(matrix))
    np.testing.assert_allclose(np.asarray(jax.jacrev(lambda t: _solve_and_attach(matrix, t))(theta)), inverse, atol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.jacfwd(lambda t: _solve_and_attach(matrix, t))(theta)), inverse, atol=1e-12)
    batched = jax.vmap(jax.grad(lambda t: jnp.sum(_solve_and_attach(matrix, t))))(jnp.stack([theta, 2 * theta]))
    np.testing.assert_allclose(np.asarray(batched), np.tile(inverse.sum(axis=0), (2, 1)), atol=1e-12)


@pytest.mark.parametrize("n", [12, _implicit._PLAIN_LU_MAX + 6])
def test_singular_system_gives_a_finite_zero_gradient(n):
    # A zero row (an equation the unknowns do not enter): no derivative exists; reverse
    # mode must not carry NaN out of the zero pivot.
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(n, n))
    matrix[1] = 0.0
    theta = jnp.asarray(rng.normal(size=n))
    g = jax.grad(lambda t: jnp.sum(_solve_and_attach(jnp.asarray(matrix), t)))(theta)
    assert np.all(np.asarray(g) == 0.0)


@pytest.mark.parametrize("n", [12, _implicit._PLAIN_LU_MAX + 6])
def test_equilibrated_solve_keeps_a_badly_scaled_float32_system(n):
    # Rows 1e4 apart (the AC-OPF's cost curvature next to limit rows of ones): regular,
    # yet its pivot ratio is below float32's threshold unless rows and columns are scaled.
    rng = np.random.default_rng(n)
    scale = np.where(np.arange(n) % 2 == 0, 1e4, 1.0)
    matrix = jnp.asarray(scale[:, None] * (rng.normal(size=(n, n)) + n * np.eye(n)) * scale[None, :], jnp.float32)
    theta = jnp.asarray(rng.normal(size=n), jnp.float32)
    inverse = np.linalg.inv(np.asarray(matrix, np.float64))
    plain = jax.jacrev(lambda t: _solve_and_attach(matrix, t))(theta)
    assert np.all(np.asarray(plain) == 0.0)
    for jac in (jax.jacrev, jax.jacfwd):
        got = np.asarray(jac(lambda t: _solve_and_attach(matrix, t, equilibrate=True))(theta), np.float64)
        np.testing.assert_allclose(got, inverse, rtol=1e-3, atol=1e-6 * np.abs(inverse).max())


@pytest.mark.parametrize("n", [12, _implicit._PLAIN_LU_MAX + 6])
def test_min_norm_solve_of_a_rank_deficient_system(n):
    # Two equal columns: the unknowns' difference is free; the solve takes the
    # pseudo-inverse (the minimum-norm change; equilibrated, that of the scaled matrix),
    # in both modes and under vmap.
    rng = np.random.default_rng(2)
    matrix = rng.normal(size=(n, n)) + n * np.eye(n)
    matrix[:, 1] = matrix[:, 0]
    matrix = jnp.asarray(matrix)
    theta = jnp.asarray(rng.normal(size=n))
    pinv = np.linalg.pinv(np.asarray(matrix), rcond=1e-12)
    r, c = (np.asarray(v) for v in _implicit._equilibration(matrix))
    pinv_scaled = c[:, None] * np.linalg.pinv(r[:, None] * np.asarray(matrix) * c[None, :], rcond=1e-12) * r[None, :]
    assert np.all(np.asarray(jax.jacrev(lambda t: _solve_and_attach(matrix, t))(theta)) == 0.0)
    for jac in (jax.jacrev, jax.jacfwd):
        got = jac(lambda t: _solve_and_attach(matrix, t, min_norm=True))(theta)
        np.testing.assert_allclose(np.asarray(got), pinv, atol=1e-10)
        got = jac(lambda t: _solve_and_attach(matrix, t, equilibrate=True, min_norm=True))(theta)
        np.testing.assert_allclose(np.asarray(got), pinv_scaled, atol=1e-10)
    batched = jax.vmap(jax.grad(lambda t: jnp.sum(_solve_and_attach(matrix, t, min_norm=True))))(jnp.stack([theta, 2 * theta]))
    np.testing.assert_allclose(np.asarray(batched), np.tile(pinv.sum(axis=0), (2, 1)), atol=1e-10)
