"""The add-chain reductions equal the ordinary ones on every axis length."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=40, deadline=None)
@given(k=st.integers(0, 24), n=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_short_sum_dot_matvec_match_numpy(k, n, seed):
    from powerzoojax.physics import short_dot, short_matvec, short_sum

    # Jitted: one compile per shape instead of eager dispatch of every add in the chain.
    short_sum = jax.jit(short_sum, static_argnames="axis")
    short_dot, short_matvec = jax.jit(short_dot), jax.jit(short_matvec)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, k)).astype(np.float32)
    np.testing.assert_allclose(short_sum(jnp.asarray(x)), x.sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(short_sum(jnp.asarray(x), axis=0), x.sum(0), rtol=1e-5, atol=1e-5)
    if k:
        v, m = x[0], rng.normal(size=(k, 3)).astype(np.float32)
        np.testing.assert_allclose(short_dot(jnp.asarray(v), jnp.asarray(v)), v @ v, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(short_matvec(jnp.asarray(v), jnp.asarray(m)), v @ m, rtol=1e-4, atol=1e-5)


def test_short_sum_keeps_integer_dtype():
    from powerzoojax.physics import short_sum

    assert short_sum(jnp.array([True, False, True]).astype(jnp.int32)).dtype == jnp.int32
