"""A float64 scope that works on every JAX release the distributions accept."""

import importlib
from contextlib import AbstractContextManager
from typing import Any

import jax


def enable_x64(enabled: bool = True) -> AbstractContextManager[Any]:
    """Context manager inside which JAX makes float64 (and int64) arrays: `with enable_x64(): ...`.

    JAX's own scope is `jax.enable_x64` from release 0.8 on and
    `jax.experimental.enable_x64` before it (since removed); this picks whichever the
    installed release has, so code that builds float64 networks and OPF setups runs
    unchanged on either. Jitted functions traced inside the scope keep float64; the
    setting is restored on exit.

    **Arguments:**

    - `enabled`: `True` for float64 inside the scope, `False` to force float32.

    **Returns:**

    The context manager.
    """
    scope = getattr(jax, "enable_x64", None)
    if scope is None:  # JAX < 0.8
        scope = getattr(importlib.import_module("jax.experimental"), "enable_x64")
    return scope(enabled)
