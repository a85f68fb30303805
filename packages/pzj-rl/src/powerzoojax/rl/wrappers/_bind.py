"""`bind`: the one-line way to get a trainer-ready single-agent env."""

from collections.abc import Sequence

from powerzoojax.core import Environment, EnvParams
from powerzoojax.rl.wrappers._log import LogWrapper
from powerzoojax.rl.wrappers._safe import SafeRLWrapper


def bind(
    env: Environment,
    params: EnvParams | None = None,
    safe: bool = False,
    cost_threshold: Sequence[float | int] | float | int | None = None,
    *,
    selected_names: Sequence[str] | str | None = None,
    cost_thresholds: Sequence[float | int] | float | int | None = None,
) -> LogWrapper | SafeRLWrapper:
    """`SafeRLWrapper(env, params, ...)` if `safe` else `LogWrapper(env, params)`.

    **Arguments:**

    - `env`: the [`Environment`][powerzoojax.core.Environment].
    - `params`: its params; `None` takes `env.default_params()`.
    - `safe`: build a [`SafeRLWrapper`][powerzoojax.rl.wrappers.SafeRLWrapper].
    - `cost_threshold`, `cost_thresholds`: per-episode budgets (the reference's name and
      ours); zero by default.
    - `selected_names`: the constrained channels.

    The last three only apply with `safe=True`; passing them without it is an error, not
    silently ignored.

    **Returns:**

    A [`LogWrapper`][powerzoojax.rl.wrappers.LogWrapper] or
    [`SafeRLWrapper`][powerzoojax.rl.wrappers.SafeRLWrapper].
    """
    if safe:
        return SafeRLWrapper(
            env, params, cost_threshold, selected_names=selected_names, cost_thresholds=cost_thresholds
        )
    if selected_names is not None or cost_thresholds is not None or cost_threshold is not None:
        raise ValueError("bind: selected_names and cost_threshold(s) need safe=True")
    return LogWrapper(env, params)
