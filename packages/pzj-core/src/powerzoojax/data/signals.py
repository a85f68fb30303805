"""Signal names (`domain.metric[_unit]`), index names, data types and time modes: the
contract between data and envs (a task asks for `LOAD_ACTUAL_MW`, never a file's column)."""

from ._signals import *  # noqa: F403 - this module is the public face of _signals
from . import _signals

__all__ = sorted(name for name in vars(_signals) if not name.startswith("_"))
del _signals
