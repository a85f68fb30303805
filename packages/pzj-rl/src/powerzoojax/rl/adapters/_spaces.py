"""PowerZooJax spaces as Gymnasium spaces (host-side NumPy bounds)."""

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np

from powerzoojax.core import Box, Discrete, MultiBinary, MultiDiscrete, Space


def to_gymnasium_space(space: Any, seed: int | None = None) -> gymnasium.spaces.Space:
    """The Gymnasium space equal to one of ours.

    **Arguments:**

    - `space`: a `Box`, `Discrete`, `MultiDiscrete` or
      `MultiBinary`, or a dict / tuple of them (nested), which becomes a
      `gymnasium.spaces.Dict` / `Tuple`.
    - `seed`: seed of the new space's sampler (`space.sample()`); None draws one.

    **Returns:** the `gymnasium.spaces` object: `Box` keeps the bounds (infinite ones
    too), shape and dtype; `Discrete(n)`; `MultiDiscrete(nvec)`; `MultiBinary(n)`.
    Raises `TypeError` naming any other space.
    """
    if isinstance(space, Box):
        dtype = np.dtype(space.dtype)
        low = np.broadcast_to(np.asarray(space.low, dtype), space.shape)
        high = np.broadcast_to(np.asarray(space.high, dtype), space.shape)
        return gymnasium.spaces.Box(low=low, high=high, shape=space.shape, dtype=dtype, seed=seed)
    if isinstance(space, Discrete):
        return gymnasium.spaces.Discrete(int(space.n), seed=seed)
    if isinstance(space, MultiDiscrete):
        return gymnasium.spaces.MultiDiscrete(np.asarray(space.nvec, np.int64), seed=seed)
    if isinstance(space, MultiBinary):
        return gymnasium.spaces.MultiBinary(int(space.n), seed=seed)
    if isinstance(space, Mapping):
        return gymnasium.spaces.Dict({str(k): to_gymnasium_space(v) for k, v in space.items()}, seed=seed)
    if isinstance(space, tuple):
        return gymnasium.spaces.Tuple(tuple(to_gymnasium_space(v) for v in space), seed=seed)
    kind = type(space).__name__ if isinstance(space, Space) else repr(type(space))
    raise TypeError(f"to_gymnasium_space: expected a Box, Discrete, MultiDiscrete, MultiBinary or a dict/tuple of them, got {kind}")


def to_env_action(space: Any, action: Any) -> Any:
    """A Gymnasium action (NumPy arrays, Python ints) as the dtype our `space` expects;
    dicts and tuples are converted entry by entry."""
    if isinstance(space, Mapping):
        return {k: to_env_action(v, action[k]) for k, v in space.items()}
    if isinstance(space, tuple):
        return tuple(to_env_action(s, a) for s, a in zip(space, action, strict=True))
    return np.asarray(action, dtype=np.dtype(space.dtype))
