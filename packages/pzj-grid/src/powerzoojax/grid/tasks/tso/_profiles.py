"""Net-load profiles of the TSO task: the synthetic shapes, and the shipped (or GB) load,
wind and solar series composed into one net-load factor per step.
"""

from functools import lru_cache
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from powerzoojax.case import CaseData
from powerzoojax.grid.tasks.tso._constants import SOLAR_FRAC, TSO_SPLITS, WINDOW_STEPS, WIND_FRAC


def make_tso_net_load_profiles(
    n_steps: int = 48,
    wind_frac: float = WIND_FRAC,
    solar_frac: float = SOLAR_FRAC,
    load_d_max: Any = None,
    gross_demand_mw: Any = None,
    wind_mw: Any = None,
    solar_mw: Any = None,
    delta_t_hours: float = 0.5,
) -> np.ndarray:
    """Net-load profile from given or synthetic demand, wind and solar series.

    Given series are divided by their own max (at least 1); missing ones are the
    reference's synthetic shapes (`h = k·Δt`): demand `0.75 + 0.25 sin(2π(h−3)/24)`, wind
    `0.3 + 0.2 sin(2π(h−2)/24 + π)`, solar `0.4 max(cos(2π(h−12)/24), 0)` for
    `|h mod 24 − 12| < 6`. `net = clip(demand − wind_frac·wind − solar_frac·solar, 0.05, 1)`.

    **Arguments:**

    - `n_steps`: number of steps `T`.
    - `wind_frac`, `solar_frac`: weights of wind and solar in the net load.
    - `load_d_max`: `(D,)` peak loads [MW]; `None` returns shape factors.
    - `gross_demand_mw`, `wind_mw`, `solar_mw`: `(T,)` series [MW], or `None`.
    - `delta_t_hours`: step length [hours].

    **Returns:**

    A `(T, D)` NumPy array [MW], or `(T, 1)` shape factors when `load_d_max` is `None`.
    """
    if int(n_steps) <= 0:
        raise ValueError(f"make_tso_net_load_profiles: n_steps must be a positive integer, got {n_steps!r}")
    h = np.arange(int(n_steps)) * float(delta_t_hours)

    def given(name, series, synthetic):
        if series is None:
            return synthetic
        arr = np.asarray(series, np.float64)
        if arr.shape != (int(n_steps),) or not np.all(np.isfinite(arr)):
            raise ValueError(f"make_tso_net_load_profiles: {name} must be finite with shape ({n_steps},), got {arr.shape}")
        return arr / max(float(arr.max()), 1.0)

    demand = given("gross_demand_mw", gross_demand_mw, 0.75 + 0.25 * np.sin(2 * np.pi * (h - 3) / 24))
    wind = given("wind_mw", wind_mw, 0.3 + 0.2 * np.sin(2 * np.pi * (h - 2) / 24 + np.pi))
    solar_syn = np.where(np.abs(np.mod(h, 24) - 12) < 6, 0.4 * np.maximum(np.cos(2 * np.pi * (h - 12) / 24), 0.0), 0.0)
    solar = given("solar_mw", solar_mw, solar_syn)
    net = np.clip(demand - wind_frac * wind - solar_frac * solar, 0.05, 1.0)
    if load_d_max is None:
        return net[:, None]
    return net[:, None] * np.asarray(load_d_max, np.float64)[None, :]


@lru_cache(maxsize=8)
def _real_net_shape(split: str, source: str) -> np.ndarray:
    from powerzoojax.data import LOAD_ACTUAL_MW, SOLAR_AVAILABLE_PU, WIND_AVAILABLE_PU, DataLoader

    frame = DataLoader().load_signals(
        [LOAD_ACTUAL_MW, WIND_AVAILABLE_PU, SOLAR_AVAILABLE_PU], source=source, split=split, resample="30min"
    )
    return _window_net_shape(np.asarray(frame.values, np.float64))


def _window_net_shape(values: np.ndarray) -> np.ndarray:
    """`(T, 3)` load/wind/solar → `(T', )` net shape, each signal ÷ its 48-step window max."""
    n_win = values.shape[0] // WINDOW_STEPS
    if n_win < 1:
        raise ValueError(f"TSO profiles need at least {WINDOW_STEPS} rows of data, got {values.shape[0]}")
    win = values[: n_win * WINDOW_STEPS].reshape(n_win, WINDOW_STEPS, 3)
    win = win / np.maximum(win.max(axis=1, keepdims=True), 1e-9)
    net = np.clip(win[..., 0] - WIND_FRAC * win[..., 1] - SOLAR_FRAC * win[..., 2], 0.05, 1.0)
    return net.reshape(-1)


def tso_net_load_shape(split: str = "train", *, source: str = "simbench", data_loader=None) -> np.ndarray:
    """Real net-load shape for a data split, from `powerzoojax.data`.

    **Arguments:**

    - `split`: `train` or `iid` (the OOD splits use `iid`).
    - `source`: dataset.
    - `data_loader`: a [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.

    **Returns:**

    A `(T,)` NumPy array in [0.05, 1].
    """
    if split not in TSO_SPLITS:
        raise ValueError(f"unknown TSO split {split!r}; valid: {TSO_SPLITS}")
    data_split = "train" if split == "train" else "iid"
    if data_loader is None:
        return _real_net_shape(data_split, source)
    from powerzoojax.data import LOAD_ACTUAL_MW, SOLAR_AVAILABLE_PU, WIND_AVAILABLE_PU

    frame = data_loader.load_signals(
        [LOAD_ACTUAL_MW, WIND_AVAILABLE_PU, SOLAR_AVAILABLE_PU], source=source, split=data_split, resample="30min"
    )
    return _window_net_shape(np.asarray(frame.values, np.float64))


def _net_load_signals(source: str) -> tuple[str, str, str]:
    from powerzoojax.data import (
        LOAD_ACTUAL_MW,
        SOLAR_AVAILABLE_MW,
        SOLAR_AVAILABLE_PU,
        WIND_AVAILABLE_MW,
        WIND_AVAILABLE_PU,
    )

    if source == "gb":
        return LOAD_ACTUAL_MW, WIND_AVAILABLE_MW, SOLAR_AVAILABLE_MW
    return LOAD_ACTUAL_MW, WIND_AVAILABLE_PU, SOLAR_AVAILABLE_PU


def make_tso_net_load_profiles_from_data(
    data_loader,
    case: CaseData,
    split: str = "train",
    episode_start_idx: int = 0,
    n_steps: int = 48,
    wind_frac: float = WIND_FRAC,
    solar_frac: float = SOLAR_FRAC,
    allow_synthetic_fallback: bool = False,
    *,
    source: str | None = None,
) -> Float[Array, "n_steps n_loads"]:
    """Net-load profiles from data, scaled by `case.load_d_max`.

    Rows `episode_start_idx` .. `+ n_steps` of the `split` window (`train` / `iid`; OOD
    splits read `iid`) of load, wind and solar, each divided by its own max over those
    rows, composed as
    [`make_tso_net_load_profiles`][powerzoojax.grid.tasks.tso.make_tso_net_load_profiles].

    **Arguments:**

    - `data_loader`: a [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      data.
    - `case`: the case whose `load_d_max` scales the profile.
    - `split`: data split.
    - `episode_start_idx`: first row.
    - `n_steps`: number of rows.
    - `wind_frac`, `solar_frac`: weights of wind and solar in the net load.
    - `allow_synthetic_fallback`: on a failed load, warn and use the synthetic profiles
      instead of raising `RuntimeError`.
    - `source`: `"gb"` when the loader has the GB files, else the shipped SimBench EHV
      series (the default when the loader has no GB source).

    **Returns:**

    A `(n_steps, n_loads)` float32 array [MW].
    """
    d_max = np.asarray(case.load_d_max, np.float64)
    factor = _data_net_factor(
        data_loader, split, episode_start_idx, n_steps, wind_frac, solar_frac, source, allow_synthetic_fallback
    )
    return jnp.asarray(factor[:, None] * d_max[None, :], jnp.float32)


def _data_net_factor(
    data_loader, split: str, start: int, n_steps: int, wind_frac: float, solar_frac: float, source: str | None,
    allow_synthetic_fallback: bool,
) -> np.ndarray:
    """`(n_steps,)` net-load factor from rows `start` .. `start + n_steps` of a split."""
    import warnings

    from powerzoojax.data import DataLoader

    if split not in TSO_SPLITS:
        raise ValueError(f"unknown TSO split {split!r}; valid: {TSO_SPLITS}")
    loader = DataLoader() if data_loader is None else data_loader
    if source is None:
        source = "gb" if "gb" in loader.list_sources() else "simbench"
    start, n = int(start), int(n_steps)
    try:
        frame = loader.load_signals(
            list(_net_load_signals(source)), source=source, split="train" if split == "train" else "iid",
            resample="30min",
        )
        values = np.asarray(frame.values, np.float64)[max(start, 0) : start + n]
        if values.shape[0] != n or start < 0:
            raise ValueError(
                f"rows {start}..{start + n} are outside the {split!r} window ({frame.values.shape[0]} rows)"
            )
    except (FileNotFoundError, ImportError, ValueError) as err:
        if not allow_synthetic_fallback:
            raise RuntimeError(f"TSO net-load data could not be loaded ({source!r}, split {split!r}): {err}") from err
        warnings.warn(f"TSO net-load data unavailable ({err}); using SYNTHETIC profiles", UserWarning, stacklevel=3)
        return make_tso_net_load_profiles(n, wind_frac, solar_frac)[:, 0]
    scaled = values / np.maximum(np.nanmax(values, axis=0, keepdims=True), 1e-9)
    return make_tso_net_load_profiles(
        n, wind_frac, solar_frac, gross_demand_mw=scaled[:, 0], wind_mw=scaled[:, 1], solar_mw=scaled[:, 2]
    )[:, 0]
