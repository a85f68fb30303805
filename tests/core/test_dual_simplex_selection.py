"""The dual simplex's selections of the basic columns: gathers and scatters of the basis
indices, or one-hot comparisons of them (the same values)."""

import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.physics import _dual_simplex


@pytest.mark.parametrize("one_hot", [False, True])
def test_basis_selection_picks_spreads_and_slices(one_hot):
    basis = jnp.asarray([3, 0, 5], jnp.int32)
    a = jnp.arange(2 * 6, dtype=jnp.float32).reshape(2, 6)
    v = jnp.asarray([10.0, 11.0, 12.0, 13.0, 14.0, 15.0])
    sel = _dual_simplex._BasisSelection(basis, 6, one_hot)
    np.testing.assert_array_equal(sel.is_basic, [True, False, False, True, False, True])
    np.testing.assert_array_equal(sel.pick(v), [13.0, 10.0, 15.0])
    np.testing.assert_array_equal(sel.spread(jnp.asarray([1.0, 2.0, 3.0])), [2.0, 0.0, 0.0, 1.0, 0.0, 3.0])
    dense = _dual_simplex.DenseLPMatrix(a, one_hot)
    np.testing.assert_array_equal(dense.column(jnp.asarray(4)), [4.0, 10.0])
    x_b, y = jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([1.0, -1.0])
    np.testing.assert_allclose(dense.basis_matvec(basis, x_b), np.asarray(a)[:, [3, 0, 5]] @ np.asarray(x_b))
    np.testing.assert_allclose(dense.basis_vecmat(y, basis), np.asarray(y) @ np.asarray(a)[:, [3, 0, 5]])
