import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=25, deadline=None)
@given(
    low=st.floats(-100, 100),
    width=st.floats(0, 50),
    n=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
)
def test_box_samples_are_contained(low, width, n, seed):
    from powerzoojax.core import make_box

    box = make_box(low, low + width, (n,))
    x = box.sample(jr.PRNGKey(seed))
    assert x.shape == (n,) and x.dtype == jnp.float32
    assert bool(box.contains(x))


def test_box_with_infinite_bounds_samples_finite():
    from powerzoojax.core import make_box

    box = make_box([-np.inf, 0.0, -np.inf], [np.inf, np.inf, 3.0])
    x = box.sample(jr.PRNGKey(3))
    assert bool(jnp.all(jnp.isfinite(x))) and bool(box.contains(x))


def test_box_contains_rejects_outside_and_wrong_shape():
    from powerzoojax.core import make_box

    box = make_box(-1.0, 1.0, (2,))
    assert not bool(box.contains(jnp.array([0.0, 1.5])))
    assert not bool(box.contains(jnp.zeros(3)))
    assert bool(box.contains(jnp.array([-1.0, 1.0])))


def test_spaces_cross_jit():
    from powerzoojax.core import make_box, make_discrete

    box, disc = make_box(-1.0, 1.0, (3,)), make_discrete(4)
    f = jax.jit(lambda b, d, k: (b.sample(k), d.sample(k)))
    a, i = f(box, disc, jr.PRNGKey(0))
    assert a.shape == (3,) and i.dtype == jnp.int32


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 20), seed=st.integers(0, 2**31 - 1))
def test_discrete_and_binary(n, seed):
    from powerzoojax.core import make_discrete, make_multi_binary

    d = make_discrete(n)
    x = d.sample(jr.PRNGKey(seed))
    assert x.shape == () and 0 <= int(x) < n and bool(d.contains(x))
    assert not bool(d.contains(n)) and not bool(d.contains(-1))
    b = make_multi_binary(n)
    y = b.sample(jr.PRNGKey(seed))
    assert y.shape == (n,) and bool(b.contains(y))
    assert not bool(b.contains(jnp.full((n,), 2)))


def test_multi_discrete():
    from powerzoojax.core import make_multi_discrete

    md = make_multi_discrete([2, 3, 5])
    xs = jax.vmap(md.sample)(jr.split(jr.PRNGKey(0), 200))
    assert xs.shape == (200, 3)
    assert (np.asarray(xs) < np.array([2, 3, 5])).all() and (np.asarray(xs) >= 0).all()
    assert set(np.asarray(xs[:, 2]).tolist()) == {0, 1, 2, 3, 4}
    assert not bool(md.contains(jnp.array([1, 3, 0])))


def test_make_box_low_above_high_error():
    from powerzoojax.core import make_box

    with pytest.raises(ValueError, match=r"low must be <= high.*low=2.0 > high=1.0"):
        make_box([0.0, 2.0], [1.0, 1.0])


def test_make_box_nan_error():
    from powerzoojax.core import make_box

    with pytest.raises(ValueError, match="must not contain NaN"):
        make_box(np.nan, 1.0, (2,))


def test_make_box_broadcast_error():
    from powerzoojax.core import make_box

    with pytest.raises(ValueError, match=r"cannot broadcast to shape \(2,\)"):
        make_box(np.zeros(3), 1.0, (2,))


def test_make_discrete_error():
    from powerzoojax.core import make_discrete

    with pytest.raises(ValueError, match="n must be a positive integer, got 0"):
        make_discrete(0)


def test_make_multi_binary_error():
    from powerzoojax.core import make_multi_binary

    with pytest.raises(ValueError, match="n must be a positive integer, got -2"):
        make_multi_binary(-2)


def test_make_multi_discrete_errors():
    from powerzoojax.core import make_multi_discrete

    with pytest.raises(ValueError, match="non-empty 1-D vector"):
        make_multi_discrete([[2, 3]])
    with pytest.raises(ValueError, match="positive integer"):
        make_multi_discrete([2, 0])
