"""Pinning an intermediate so XLA computes it once.

XLA fuses cheap elementwise producers into every consumer fusion, so a small
intermediate read by several (or by a much larger broadcasting) consumer is recomputed
in each of them, and on a CPU `optimization_barrier` is removed before fusion. These
helpers route the value through an op XLA treats as expensive and never duplicates. They
change no value; on other backends they cost one small kernel.

Each is its own named `jax.jit`, inlined by XLA before fusion: in a traced program a pin
is one call named `materialise` or `store_once`, which a profile shows under that name
and `benchmarks/xla_tricks.py` replaces by the identity to time the program without it.
"""

from collections.abc import Callable
from typing import TypeVar, cast

import jax
import jax.numpy as jnp
from jaxtyping import Array, Int

_F = TypeVar("_F", bound=Callable[..., Array])


def _named_jit(fn: _F) -> _F:
    # `jax.jit` under the function's own name, keeping its signature for type checkers
    # (a bare `jax.jit` returns an untyped wrapper, which makes every caller's types unknown).
    return cast(_F, jax.jit(fn))


@_named_jit
def materialise(x: Array) -> Array:
    """`x` unchanged, but computed once. XLA fuses cheap elementwise producers into every
    consumer, so a small intermediate (a hash, a key table) read by a broadcasting
    consumer many times larger is recomputed per consumer element; a gather counts as
    expensive, so XLA keeps its result in memory instead."""
    return jnp.take(x, jnp.arange(x.shape[-1]), axis=-1)


@_named_jit
def store_once(x: Int[Array, "..."], like: Int[Array, "..."]) -> Int[Array, "..."]:
    """`x` unchanged (integers with `|x| < 2**24`), but computed once and stored.

    XLA copies a cheap elementwise chain into every consumer fusion, so a per-slot value
    read by several reductions is recomputed by each of them. A float division is an
    "expensive" op that XLA never duplicates, so dividing by an exact 1.0 pins the chain
    below it into one kernel. The divisor `1 + 0·like` (`like` a finite integer array of
    the same shape) is exactly 1.0 but opaque to the compiler: a constant or broadcast
    divisor would be folded or rewritten into a multiply. Cheaper than the gather of
    `materialise`.
    """
    one = 1.0 + 0.0 * jnp.asarray(like).astype(jnp.float32)
    return (x.astype(jnp.float32) / one).astype(x.dtype)
