"""Host-side checks shared by every `make_*_params` factory.

Each error names the factory, the argument, the bad value and what was expected: wrong
types raise `TypeError` (as beartype does when annotations are checked), wrong values
`ValueError`.
"""

import math
from typing import Any

import numpy as np


def finite_scalar(
    caller: str, name: str, value: Any, *, positive: bool = False, non_negative: bool = False
) -> float:
    """`value` as a finite float, optionally `> 0` or `>= 0`."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{caller}: {name} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{caller}: {name} must be finite, got {x}")
    if positive and x <= 0:
        raise ValueError(f"{caller}: {name} must be > 0, got {x}")
    if non_negative and x < 0:
        raise ValueError(f"{caller}: {name} must be >= 0, got {x}")
    return x


def positive_int(caller: str, name: str, value: Any) -> int:
    """`value` as a positive `int` (`bool` is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{caller}: {name} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"{caller}: {name} must be a positive integer, got {value!r}")
    return int(value)
