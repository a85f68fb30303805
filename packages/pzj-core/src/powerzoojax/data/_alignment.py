"""Put a table's timestamps on a simulation timeline: calendar data are shifted (optionally)
and cut to the window; short repeatable profiles (a few days of a data-centre trace) are
tiled over it. Host-side, on pandas DataFrames with a timestamp column (`pzj-core[data]`).
"""

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ._gb import _pandas
from ._signals import INDEX_DATETIME, TIME_MODE_CALENDAR, TIME_MODE_PROFILE


def _utc(stamp: Any) -> Any:
    pd = _pandas()
    stamp = pd.Timestamp(stamp)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _window(sim_start: Any, sim_end: Any) -> tuple[Any, Any]:
    """`[start, last second of the end date]` in UTC (the end day is inclusive)."""
    pd = _pandas()
    start, end = _utc(sim_start), _utc(sim_end)
    if end < start:
        raise ValueError(f"simulation window ends ({end}) before it starts ({start})")
    return start, end.normalize() + pd.Timedelta(days=1) - pd.Timedelta(seconds=1)


class TimeAligner:
    """Map a table's timestamps onto `[sim_start, sim_end]` (whole days, UTC)."""

    @staticmethod
    def align_calendar(df: Any, sim_start: Any, sim_end: Any, align_from: Any = None, time_col: str = INDEX_DATETIME) -> Any:
        """Rows of a calendar dataset inside the window, timestamps as UTC.

        With `align_from`, the data are first shifted so that `align_from` falls on
        `sim_start` (replay another year's data on the simulated dates).

        **Arguments:**

        - `df`: pandas DataFrame with a time column or a datetime index.
        - `sim_start`, `sim_end`: the window (whole days).
        - `align_from`: date of the data to place on `sim_start`; `None` keeps the dates.
        - `time_col`: name of the time column.

        **Returns:**

        The rows in the window; a table without the time column (and without a datetime
        index) unchanged.
        """
        pd = _pandas()
        out = df.copy()
        if time_col not in out.columns and isinstance(out.index, pd.DatetimeIndex):
            out = out.rename_axis(time_col).reset_index()
        if time_col not in out.columns:
            return out
        out[time_col] = pd.to_datetime(out[time_col], utc=True)
        if align_from is not None:
            out[time_col] = out[time_col] + (_utc(sim_start) - _utc(align_from))
        lo, hi = _window(sim_start, sim_end)
        keep = (out[time_col] >= lo) & (out[time_col] <= hi)
        return out.loc[keep].reset_index(drop=True)

    @staticmethod
    def align_profile(df: Any, sim_start: Any, sim_end: Any, resolution: str, time_col: str = INDEX_DATETIME) -> Any:
        """The value columns of a repeatable profile tiled cyclically over the window.

        **Arguments:**

        - `df`: pandas DataFrame of the profile.
        - `sim_start`, `sim_end`: the window (whole days).
        - `resolution`: step of the output, a pandas frequency such as `"5min"`.
        - `time_col`: name of the time column.

        **Returns:**

        A DataFrame with new timestamps in `time_col`.
        """
        pd = _pandas()
        lo, hi = _window(sim_start, sim_end)
        index = pd.date_range(start=lo, end=hi, freq=resolution)
        columns = [c for c in df.columns if c != time_col]
        values = np.asarray(df[columns].to_numpy(), np.float32)
        if values.shape[0] == 0:
            return pd.DataFrame({time_col: index})
        tiled = np.asarray(TimeAligner.tile_profile_jax(jnp.asarray(values), len(index)))
        out = pd.DataFrame(tiled, columns=columns)
        out[time_col] = index
        return out

    @staticmethod
    def tile_profile_jax(values: Float[ArrayLike, "n_profile n_signals"], n_needed: int) -> Float[Array, "n_needed n_signals"]:
        """A profile repeated cyclically to `n_needed` rows (float32).

        **Arguments:**

        - `values`: `(n_profile, n_signals)` profile.
        - `n_needed`: number of rows.

        **Returns:**

        A `(n_needed, n_signals)` float32 array; zeros for an empty profile.
        """
        values = jnp.asarray(values, jnp.float32)
        if int(n_needed) < 0:
            raise ValueError(f"n_needed must be >= 0, got {n_needed!r}")
        if values.shape[0] == 0:
            return jnp.zeros((int(n_needed), values.shape[1]), jnp.float32)
        rows = np.arange(int(n_needed)) % values.shape[0]
        return values[jnp.asarray(rows)]

    @classmethod
    def align(
        cls,
        df: Any,
        *,
        time_mode: str,
        sim_start: Any,
        sim_end: Any,
        align_from: Any = None,
        resolution: str = "30min",
        time_col: str = INDEX_DATETIME,
    ) -> Any:
        """[`align_profile`][powerzoojax.data.TimeAligner.align_profile] for
        `time_mode="profile"`, [`align_calendar`][powerzoojax.data.TimeAligner.align_calendar]
        for `"calendar"`.

        **Arguments:**

        - `df`: pandas DataFrame.
        - `time_mode`: `"profile"` or `"calendar"`.
        - `sim_start`, `sim_end`: the window (whole days).
        - `align_from`: calendar mode only, see `align_calendar`.
        - `resolution`: profile mode only, see `align_profile`.
        - `time_col`: name of the time column.

        **Returns:**

        The aligned DataFrame.
        """
        if time_mode == TIME_MODE_PROFILE:
            return cls.align_profile(df, sim_start, sim_end, resolution, time_col)
        if time_mode == TIME_MODE_CALENDAR:
            return cls.align_calendar(df, sim_start, sim_end, align_from, time_col)
        raise ValueError(f"unknown time_mode {time_mode!r}; valid: {(TIME_MODE_CALENDAR, TIME_MODE_PROFILE)}")
