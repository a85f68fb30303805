"""The library's XLA tuning tricks change no value: the pins are the identity, the dual
simplex's broadcast products are the matrix products; each is one named call in a traced
program (what ``benchmarks/xla_tricks.py`` finds and replaces for its A/B)."""

import jax
import jax.numpy as jnp
import numpy as np


def _named_calls(jaxpr) -> list[str]:
    return [str(eqn.params["name"]) for eqn in jaxpr.jaxpr.eqns if "name" in eqn.params]


def test_pins_are_the_identity_and_named_calls():
    from powerzoojax.physics import _pin

    x = jnp.arange(12, dtype=jnp.int32).reshape(3, 4) - 5
    f = jnp.linspace(-1.0, 1.0, 7)

    def program(x, f):
        return _pin.materialise(f * 2.0), _pin.store_once(x + 1, x)

    jaxpr = jax.make_jaxpr(program)(x, f)
    assert _named_calls(jaxpr) == ["materialise", "store_once"]
    text = str(jaxpr)
    assert "gather" in text and "div" in text  # the ops XLA never duplicates
    pinned_f, pinned_x = jax.jit(program)(x, f)
    np.testing.assert_array_equal(np.asarray(pinned_f), np.asarray(f * 2.0))
    np.testing.assert_array_equal(np.asarray(pinned_x), np.asarray(x + 1))
    # Under vmap too (the envs' use): the identity, batched.
    xs, fs = jnp.stack([x, -x]), jnp.stack([f, 3.0 * f])
    batched_f, batched_x = jax.vmap(program)(xs, fs)
    np.testing.assert_array_equal(np.asarray(batched_f), np.asarray(fs * 2.0))
    np.testing.assert_array_equal(np.asarray(batched_x), np.asarray(xs + 1))


def test_small_products_are_broadcast_sums_and_large_ones_matmuls():
    from powerzoojax.physics import _dual_simplex

    rng = np.random.default_rng(0)
    m = jnp.asarray(rng.normal(size=(5, 7)), jnp.float32)
    v, w = jnp.linspace(-1.0, 1.0, 7), jnp.linspace(2.0, -1.0, 5)

    def program(m, v, w):
        return _dual_simplex.matvec(m, v), _dual_simplex.vecmat(w, m)

    jaxpr = jax.make_jaxpr(program)(m, v, w)
    assert _named_calls(jaxpr) == ["broadcast_matvec", "broadcast_vecmat"]
    assert "dot_general" not in str(jaxpr)
    mv, vm = jax.jit(program)(m, v, w)
    np.testing.assert_allclose(np.asarray(mv), np.asarray(m) @ np.asarray(v), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(vm), np.asarray(w) @ np.asarray(m), rtol=1e-6, atol=1e-6)

    big = jnp.asarray(rng.normal(size=(65, 70)), jnp.float32)  # above _BROADCAST_MAX_ELEMENTS
    assert big.size > _dual_simplex._BROADCAST_MAX_ELEMENTS
    vb, wb = jnp.linspace(-1.0, 1.0, 70), jnp.linspace(2.0, -1.0, 65)
    jaxpr_big = jax.make_jaxpr(program)(big, vb, wb)
    assert not any(name.startswith("broadcast_") for name in _named_calls(jaxpr_big))
    assert str(jaxpr_big).count("dot_general") == 2
    mv, vm = jax.jit(program)(big, vb, wb)
    np.testing.assert_allclose(np.asarray(mv), np.asarray(big) @ np.asarray(vb), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(vm), np.asarray(wb) @ np.asarray(big), rtol=1e-5, atol=1e-5)
