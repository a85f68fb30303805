"""The dispatch solvers' Cholesky factor and solves (``physics._small_linalg``) against
NumPy, and the reason they exist: no batched LAPACK call in the vmapped solvers.

jaxlib 0.10's CPU LAPACK kernels split a batch over XLA's intra-op pool and block a pool
thread until it is done; two such calls at once can take every thread of a 2-core pool
and wait forever (the vmapped DC-OPF of case 118 with rated lines hung at N >= 192).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.physics._small_linalg import cho_solve, cholesky


@pytest.mark.parametrize("n", [1, 5, 9, 54])
def test_factor_and_solves_match_numpy(n):
    rng = np.random.default_rng(n)
    m = rng.normal(size=(n, n))
    a = m @ m.T + n * np.eye(n)
    b, cols = rng.normal(size=n), rng.normal(size=(n, 3))
    with jax.enable_x64(True):
        lower = np.asarray(cholesky(jnp.asarray(a)))
        np.testing.assert_allclose(lower, np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cho_solve(jnp.asarray(lower), jnp.asarray(b)), np.linalg.solve(a, b), rtol=1e-10)
        np.testing.assert_allclose(cho_solve(jnp.asarray(lower), jnp.asarray(cols)), np.linalg.solve(a, cols), rtol=1e-10)


def test_non_positive_pivot_is_nan_like_lapack():
    a = np.diag([1.0, 2.0, -1.0])
    lower = np.asarray(cholesky(jnp.asarray(a, jnp.float32)))
    assert np.all(np.isfinite(lower[:2, :2])) and np.isnan(lower[2, 2])


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
