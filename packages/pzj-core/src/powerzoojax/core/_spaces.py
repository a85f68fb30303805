"""Observation and action spaces.

Bounds are array leaves; `shape`, `dtype`, `n` and `n_dims` are static so a
space can cross `jit` and `vmap` boundaries unchanged.
"""

import abc
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Shaped

from powerzoojax.core._types import Key


class Space(eqx.Module):
    """Abstract space: `sample(key)` draws a point, `contains(x)` tests membership."""

    shape: eqx.AbstractVar[tuple[int, ...]]

    @abc.abstractmethod
    def sample(self, key: Key) -> Shaped[Array, "..."]:
        """Draw one point of the space.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        A point of shape `self.shape` and dtype `self.dtype`.
        """

    @abc.abstractmethod
    def contains(self, x: ArrayLike) -> Bool[Array, ""]:
        """Whether `x` lies in the space.

        **Arguments:**

        - `x`: candidate point; an array of another shape is not contained.

        **Returns:**

        A boolean scalar array (traceable, so it works under `jit`).
        """


class Box(Space):
    """Continuous box `low <= x <= high` (infinite bounds allowed).

    Build it with [`make_box`][powerzoojax.core.make_box], which checks the bounds.

    **Arguments:**

    - `low`, `high`: lower and upper bounds, arrays of shape `shape`.
    - `shape`: shape of a point (static).
    - `dtype`: dtype of a point (static), `float32` by default.
    """

    low: Shaped[Array, "..."]
    high: Shaped[Array, "..."]
    shape: tuple[int, ...] = eqx.field(static=True)
    dtype: Any = eqx.field(static=True, default=jnp.float32)

    def sample(self, key: Key) -> Shaped[Array, "..."]:
        # Unbounded sides fall back to a unit-width normal tail so samples stay finite.
        low = jnp.broadcast_to(self.low, self.shape)
        high = jnp.broadcast_to(self.high, self.shape)
        k_u, k_n = jr.split(key)
        u = jr.uniform(k_u, self.shape, dtype=self.dtype)
        n = jr.normal(k_n, self.shape, dtype=self.dtype)
        lo_f, hi_f = jnp.isfinite(low), jnp.isfinite(high)
        both = low + u * (high - low)
        only_lo = low + jnp.abs(n)
        only_hi = high - jnp.abs(n)
        x = jnp.where(lo_f & hi_f, both, jnp.where(lo_f, only_lo, jnp.where(hi_f, only_hi, n)))
        return x.astype(self.dtype)

    def contains(self, x: ArrayLike) -> Bool[Array, ""]:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high))


class Discrete(Space):
    """Integers `0 .. n-1`.

    **Arguments:**

    - `n`: number of values (static).
    - `shape`: shape of a point, `()` (static).
    - `dtype`: dtype of a point (static), `int32` by default.
    """

    n: int = eqx.field(static=True, default=1)
    shape: tuple[int, ...] = eqx.field(static=True, default=())
    dtype: Any = eqx.field(static=True, default=jnp.int32)

    def sample(self, key: Key) -> Shaped[Array, ""]:
        return jr.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, x: ArrayLike) -> Bool[Array, ""]:
        x = jnp.asarray(x)
        integral = jnp.all(x == jnp.floor(x)) if jnp.issubdtype(x.dtype, jnp.floating) else True
        return jnp.all((x >= 0) & (x < self.n)) & integral


class MultiDiscrete(Space):
    """One integer in `[0, nvec[i])` per dimension.

    **Arguments:**

    - `nvec`: `(n_dims,)` number of values of each dimension.
    - `n_dims`: number of dimensions (static).
    - `shape`: shape of a point, `(n_dims,)` (static).
    - `dtype`: dtype of a point (static), `int32` by default.
    """

    nvec: Shaped[Array, " n_dims"]
    n_dims: int = eqx.field(static=True)
    shape: tuple[int, ...] = eqx.field(static=True)
    dtype: Any = eqx.field(static=True, default=jnp.int32)

    def sample(self, key: Key) -> Shaped[Array, " n_dims"]:
        keys = jr.split(key, self.n_dims)
        return jax.vmap(lambda k, n: jr.randint(k, (), 0, n, dtype=self.dtype))(keys, self.nvec)

    def contains(self, x: ArrayLike) -> Bool[Array, ""]:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all((x >= 0) & (x < self.nvec))


class MultiBinary(Space):
    """`n` independent bits.

    **Arguments:**

    - `n`: number of bits (static).
    - `shape`: shape of a point, `(n,)` (static).
    - `dtype`: dtype of a point (static), `int32` by default.
    """

    n: int = eqx.field(static=True, default=1)
    shape: tuple[int, ...] = eqx.field(static=True, default=(1,))
    dtype: Any = eqx.field(static=True, default=jnp.int32)

    def sample(self, key: Key) -> Shaped[Array, " n"]:
        return jr.randint(key, self.shape, 0, 2, dtype=self.dtype)

    def contains(self, x: ArrayLike) -> Bool[Array, ""]:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all((x == 0) | (x == 1))


def make_box(low: ArrayLike | Sequence[Any], high: ArrayLike | Sequence[Any], shape: tuple[int, ...] | None = None, dtype: Any = jnp.float32) -> Box:
    """Build a `Box`, broadcasting `low`/`high` to `shape`; rejects `low > high` and NaN.

    **Arguments:**

    - `low`, `high`: bounds, scalars or arrays broadcastable to `shape`.
    - `shape`: shape of a point; `None` takes the broadcast shape of `low` and `high`.
    - `dtype`: dtype of the bounds and of sampled points.

    **Returns:**

    The [`Box`][powerzoojax.core.Box].
    """
    low_np = np.asarray(low, dtype=np.float64)
    high_np = np.asarray(high, dtype=np.float64)
    if shape is None:
        shape = tuple(np.broadcast_shapes(low_np.shape, high_np.shape))
    shape = tuple(int(s) for s in shape)
    try:
        low_np = np.broadcast_to(low_np, shape)
        high_np = np.broadcast_to(high_np, shape)
    except ValueError as err:
        raise ValueError(
            f"make_box: low shape {low_np.shape} and high shape {high_np.shape} "
            f"cannot broadcast to shape {shape}"
        ) from err
    if np.isnan(low_np).any() or np.isnan(high_np).any():
        raise ValueError("make_box: low and high must not contain NaN")
    if (low_np > high_np).any():
        bad = int(np.argmax((low_np > high_np).ravel()))
        raise ValueError(
            f"make_box: low must be <= high everywhere; at flat index {bad} "
            f"low={low_np.ravel()[bad]} > high={high_np.ravel()[bad]}"
        )
    return Box(low=jnp.asarray(low_np, dtype), high=jnp.asarray(high_np, dtype), shape=shape, dtype=dtype)


def make_discrete(n: int) -> Discrete:
    """Build a `Discrete(n)`; `n` must be a positive integer.

    **Arguments:**

    - `n`: number of values.

    **Returns:**

    The [`Discrete`][powerzoojax.core.Discrete] space of the integers `0 .. n-1`.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"make_discrete: n must be a positive integer, got {n!r}")
    return Discrete(n=int(n))


def make_multi_discrete(nvec: ArrayLike | Sequence[Any]) -> MultiDiscrete:
    """Build a `MultiDiscrete` from a 1-D vector of positive category counts.

    **Arguments:**

    - `nvec`: `(n_dims,)` number of values of each dimension, each at least 1.

    **Returns:**

    The [`MultiDiscrete`][powerzoojax.core.MultiDiscrete] space.
    """
    nvec_np = np.asarray(nvec)
    if nvec_np.ndim != 1 or nvec_np.size == 0:
        raise ValueError(f"make_multi_discrete: nvec must be a non-empty 1-D vector, got shape {nvec_np.shape}")
    if not np.all(nvec_np == np.floor(nvec_np)) or (nvec_np < 1).any():
        raise ValueError(f"make_multi_discrete: every entry of nvec must be a positive integer, got {nvec_np.tolist()}")
    n_dims = int(nvec_np.shape[0])
    return MultiDiscrete(nvec=jnp.asarray(nvec_np, jnp.int32), n_dims=n_dims, shape=(n_dims,))


def make_multi_binary(n: int) -> MultiBinary:
    """Build a `MultiBinary(n)`; `n` must be a positive integer.

    **Arguments:**

    - `n`: number of bits.

    **Returns:**

    The [`MultiBinary`][powerzoojax.core.MultiBinary] space of shape `(n,)`.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"make_multi_binary: n must be a positive integer, got {n!r}")
    return MultiBinary(n=int(n), shape=(int(n),))
