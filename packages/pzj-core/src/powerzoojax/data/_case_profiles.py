"""Real load profiles for any shipped case: a measured demand shape scaled onto its loads.

`make_trans_params(case)` keeps its nominal default (a flat profile); this function builds the
`(T, n_loads)` alternative from real data:

    from powerzoojax.case import load_case
    from powerzoojax.data import case_load_profiles
    from powerzoojax.envs import make_trans_params

    case = load_case("14")
    params = make_trans_params(case, load_profiles=case_load_profiles(case, split="train"))
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float
from powerzoojax.case import CaseData

from ._frame import TimeLike
from ._loader import DataLoader
from ._signals import LOAD_ACTUAL_MW

SCALINGS: tuple[str, ...] = ("mean", "minmax")


def case_load_profiles(
    case: CaseData,
    *,
    signal: str = LOAD_ACTUAL_MW,
    source: str | None = None,
    region: str | None = None,
    start_date: TimeLike | None = None,
    end_date: TimeLike | None = None,
    split: str | None = None,
    resample: str | None = "30min",
    scaling: str = "mean",
    loader: DataLoader | None = None,
) -> Float[Array, "T n_loads"]:
    """A `(T, n_loads)` float32 MW profile for `case` from one real series `x(t)`.

    The series is read with `DataLoader.load_signals` (default: `load.actual_mw` of the
    first dataset providing it, i.e. the measured Victoria 2014 demand, at 30 min; the
    whole series unless dates or a `split` are given). Every load follows the same shape:

    - `scaling="mean"` (default): `P[t, j] = x(t) / mean(x) * (d_max[j] + d_min[j]) / 2`.
      The window's average equals the case's nominal load (the flat default of
      `make_trans_params`); peaks reach `max(x) / mean(x)` times nominal (about 2.0 for
      Victoria 2014, so up to `d_max = 1.5 Pd`).
    - `scaling="minmax"`: `u = (x - min x) / (max x - min x)` and
      `P[t, j] = d_min[j] + u(t) * (d_max[j] - d_min[j])`, spanning each load's range.

    **Arguments:**

    - `case`: the case whose loads are scaled.
    - `signal`, `source`, `region`, `start_date`, `end_date`, `split`, `resample`: as for
      `DataLoader.load_signals`.
    - `scaling`: `"mean"` or `"minmax"`.
    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      datasets.

    **Returns:**

    A `(T, n_loads)` float32 array [MW].

    Raises:
        ValueError: for an unknown scaling, a series whose mean is not positive (`"mean"`)
            or that is constant (`"minmax"`), and every loader error (bad signal, source,
            dates, resolution).
    """
    if scaling not in SCALINGS:
        raise ValueError(f"Unknown scaling {scaling!r}; valid choices: {', '.join(SCALINGS)}")
    loader = DataLoader() if loader is None else loader
    frame = loader.load_signals(
        [signal],
        source=source,
        region=region,
        start_date=start_date,
        end_date=end_date,
        split=split,
        resample=resample,
    )
    series = frame.values[:, 0]
    d_max = np.asarray(case.load_d_max, np.float64)
    d_min = np.asarray(case.load_d_min, np.float64)
    if scaling == "mean":
        mean = float(series.mean())
        if not mean > 0.0:
            raise ValueError(f"scaling='mean' needs a series with positive mean; {signal!r} has mean {mean}")
        profile = (series / mean)[:, None] * (0.5 * (d_max + d_min))[None, :]
    else:
        low, high = float(series.min()), float(series.max())
        if not high > low:
            raise ValueError(f"scaling='minmax' needs a non-constant series; {signal!r} is constant at {low}")
        unit = (series - low) / (high - low)
        profile = d_min[None, :] + unit[:, None] * (d_max - d_min)[None, :]
    return jnp.asarray(profile, jnp.float32)
