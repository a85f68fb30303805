"""The dispatch solvers' inverse Cholesky factor and solves (``physics._small_linalg``)
against NumPy, and the reason they exist: no batched LAPACK call in the vmapped solvers.

jaxlib 0.10's CPU LAPACK kernels split a batch over XLA's intra-op pool and block a pool
thread until it is done; two such calls at once can take every thread of a 2-core pool
and wait forever (the vmapped DC-OPF of case 118 with rated lines hung at N >= 192).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.physics._small_linalg import inverse_cholesky, spd_solve
from powerzoojax.utils.jax_utils import enable_x64


@pytest.mark.parametrize("n", [1, 5, 9, 54])
def test_inverse_factor_and_solves_match_numpy(n):
    rng = np.random.default_rng(n)
    m = rng.normal(size=(n, n))
    a = m @ m.T + n * np.eye(n)
    b, cols = rng.normal(size=n), rng.normal(size=(n, 3))
    with enable_x64():
        inv = np.asarray(inverse_cholesky(jnp.asarray(a)))
        np.testing.assert_allclose(inv, np.linalg.inv(np.linalg.cholesky(a)), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(spd_solve(jnp.asarray(inv), jnp.asarray(b)), np.linalg.solve(a, b), rtol=1e-10)
        np.testing.assert_allclose(spd_solve(jnp.asarray(inv), jnp.asarray(cols)), np.linalg.solve(a, cols), rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float32_refined_solves_are_as_accurate_as_lapack_substitution(seed):
    """The IPM's use: float32 solves through the factor of the equilibrated, ridged
    matrix, refined against the matrix itself. An explicit triangular inverse carries
    more round-off than substitution in theory; with refinement it stays within a small
    factor of LAPACK's ``potrf`` + ``potrs`` (condition number 1e5, badly scaled rows)."""
    import jax.scipy.linalg as jsl

    n = 54
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    d = np.exp(3.0 * rng.normal(size=n))
    a = d[:, None] * ((q * np.logspace(0, -5, n)) @ q.T) * d[None, :]
    b = rng.normal(size=n)
    scale = 1.0 / np.sqrt(np.diag(a))
    a32, b32, s32 = (jnp.asarray(v, jnp.float32) for v in (a, b, scale))
    ridged = s32[:, None] * a32 * s32[None, :] + 1e-5 * jnp.eye(n)
    inv = inverse_cholesky(ridged) * s32[None, :]
    lower = jnp.linalg.cholesky(ridged)  # one unbatched call: not the deadlocking path
    x_ref = np.linalg.solve(a, b)
    errors = []
    for solve in (lambda r: spd_solve(inv, r), lambda r: s32 * jsl.cho_solve((lower, True), s32 * r)):
        x = jnp.zeros(n)
        for _ in range(4):
            x = x + solve(b32 - a32 @ x)
        errors.append(np.linalg.norm(np.asarray(x, np.float64) - x_ref) / np.linalg.norm(x_ref))
    assert errors[1] < 1e-3  # the problem is solvable to this accuracy in float32
    assert errors[0] <= 4.0 * errors[1] + 1e-6, errors


def test_non_positive_pivot_is_nan_like_lapack():
    a = np.diag([1.0, 2.0, -1.0])
    inv = np.asarray(inverse_cholesky(jnp.asarray(a, jnp.float32)))
    assert np.all(np.isfinite(inv[:2, :2])) and np.isnan(inv[2, 2])


def _lowered_text(fn, *args):
    return jax.jit(jax.vmap(fn)).lower(*args).as_text()


def test_vmapped_dc_opf_issues_no_lapack_call():
    from powerzoojax.case import load_case
    from powerzoojax.physics import dc_opf, make_dc_opf_setup

    case = load_case("5")
    cap = np.full(case.n_lines, 150.0)
    loads = jnp.full((256, case.n_nodes), 100.0, jnp.float32)
    opf = make_dc_opf_setup(case, cap, -cap)
    assert "lapack" not in _lowered_text(lambda load: dc_opf(opf, load), loads).lower()
    # The check can fail: the LAPACK path it replaced lowers to such a call.
    assert "lapack" in _lowered_text(jnp.linalg.cholesky, jnp.ones((256, 3, 3))).lower()


def test_plain_lu_solves_general_systems_like_numpy():
    from powerzoojax.physics._small_linalg import lu_factor, lu_solve

    rng = np.random.default_rng(3)
    for n in (1, 5, 12):
        a = rng.normal(size=(8, n, n))
        a[:, 0, :] *= 1e-3  # a small leading pivot: partial pivoting must swap it away
        b = rng.normal(size=(8, n))
        x = jax.vmap(lambda m, v: lu_solve(lu_factor(m), v))(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32))
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b[..., None])[..., 0], rtol=2e-3, atol=2e-3)
    singular = jnp.zeros((3, 3), jnp.float32)
    assert bool(jnp.all(jnp.isfinite(lu_solve(lu_factor(singular), jnp.ones(3)))))
