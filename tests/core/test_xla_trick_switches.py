"""The XLA:CPU tuning tricks' switches (read at trace time, for the same-process A/B of
``benchmarks/xla_tricks.py``): off, each is the plain expression, with the same values."""

import jax
import jax.numpy as jnp
import numpy as np


def test_sincos_off_is_jnp_sin_cos(monkeypatch):
    from powerzoojax.physics import _trig

    x = jnp.linspace(-40.0, 40.0, 1001, dtype=jnp.float32)
    poly = jax.jit(lambda v: _trig.sincos(v))(x)
    monkeypatch.setattr(_trig, "POLYNOMIAL", False)
    s, c = jax.jit(lambda v: _trig.sincos(v))(x)
    np.testing.assert_array_equal(np.asarray(s), np.asarray(jax.jit(jnp.sin)(x)))
    np.testing.assert_array_equal(np.asarray(c), np.asarray(jax.jit(jnp.cos)(x)))
    np.testing.assert_allclose(np.asarray(poly[0]), np.asarray(s), atol=1e-6)


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
