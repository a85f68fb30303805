"""The XLA:CPU tuning tricks' switches (read at trace time, for the same-process A/B of
``benchmarks/xla_tricks.py``): off, each is the plain expression, with the same values."""

import jax
import jax.numpy as jnp
import numpy as np


def test_pins_off_are_the_identity(monkeypatch):
    from powerzoojax.physics import _pin

    x = jnp.arange(12, dtype=jnp.int32).reshape(3, 4) - 5
    f = jnp.linspace(-1.0, 1.0, 7)

    def program(x, f):
        return _pin.materialise(f * 2.0), _pin.store_once(x + 1, x)

    def jaxpr():  # a fresh function each time: traced anew, so the switches are read anew
        return str(jax.make_jaxpr(lambda x, f: program(x, f))(x, f))

    on = jax.jit(program)(x, f)
    jaxpr_on = jaxpr()
    assert "gather" in jaxpr_on and "div" in jaxpr_on
    monkeypatch.setattr(_pin, "PIN", False)
    jaxpr_off = jaxpr()
    assert "gather" not in jaxpr_off and "div" not in jaxpr_off
    off = jax.jit(lambda x, f: program(x, f))(x, f)
    for a, b in zip(jax.tree.leaves(on), jax.tree.leaves(off), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_broadcast_products_off_are_matmuls(monkeypatch):
    from powerzoojax.physics import _dual_simplex

    m = jnp.asarray(np.random.default_rng(0).normal(size=(5, 7)), jnp.float32)
    v, w = jnp.linspace(-1.0, 1.0, 7), jnp.linspace(2.0, -1.0, 5)

    def program(m, v, w):
        return _dual_simplex.matvec(m, v), _dual_simplex.vecmat(w, m)

    def jaxpr():  # a fresh function each time: traced anew, so the switch is read anew
        return str(jax.make_jaxpr(lambda m, v, w: program(m, v, w))(m, v, w))

    on = jax.jit(program)(m, v, w)
    assert "dot_general" not in jaxpr()
    monkeypatch.setattr(_dual_simplex, "BROADCAST_PRODUCTS", False)
    assert jaxpr().count("dot_general") == 2
    off = jax.jit(lambda m, v, w: program(m, v, w))(m, v, w)
    np.testing.assert_allclose(np.asarray(on[0]), np.asarray(m @ v), rtol=1e-6, atol=1e-6)
    for a, b in zip(on, off, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
