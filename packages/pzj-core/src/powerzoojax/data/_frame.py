"""Host-side time-series container and the time arithmetic the loader needs (NumPy only).

Timestamps are naive `datetime64[m]` labelling the *beginning* of each interval; a value
is the mean over its interval. Each dataset's clock (UTC, AEST, ...) is in its manifest.
"""

import dataclasses
import datetime
import re

import numpy as np
from jaxtyping import Bool, Float, Shaped

MINUTES_PER_DAY = 1440
DAY_DIVISORS: tuple[int, ...] = tuple(m for m in range(1, MINUTES_PER_DAY + 1) if MINUTES_PER_DAY % m == 0)
INTERPOLATIONS: tuple[str, ...] = ("linear", "previous")

TimeLike = str | datetime.date | datetime.datetime | np.datetime64

_RESOLUTION = re.compile(r"^\s*(\d+)\s*(min|t|h|d)\s*$", re.IGNORECASE)
_UNIT_MINUTES = {"min": 1, "t": 1, "h": 60, "d": MINUTES_PER_DAY}


@dataclasses.dataclass(frozen=True, eq=False)
class SignalFrame:
    """Aligned signals on one regular time grid (host-side; never traced).

    **Arguments:**

    - `timestamps`: `(T,)` `datetime64[m]`, interval beginnings, strictly increasing.
    - `values`: `(T, n)` float64, one column per requested signal, in request order.
    - `signals`: the `n` signal names.
    - `filled`: `(T, n)` bool, True where a missing source value was filled by the
      documented gap filling (interpolation) rather than read.
    - `resolution_minutes`: step between rows, or `None` for an irregular frame (only raw
      reader output can be irregular).
    - `datasets`: the dataset each column came from.
    - `regions`: the region of each column (`None` when the signal has no region).
    """

    timestamps: Shaped[np.ndarray, " T"]
    values: Float[np.ndarray, "T n"]
    signals: tuple[str, ...]
    filled: Bool[np.ndarray, "T n"]
    resolution_minutes: int | None
    datasets: tuple[str, ...]
    regions: tuple[str | None, ...]

    def __post_init__(self) -> None:
        n = self.values.shape[1]
        if not (len(self.signals) == len(self.datasets) == len(self.regions) == n):
            raise ValueError(
                f"SignalFrame: {n} value columns but {len(self.signals)} signals, "
                f"{len(self.datasets)} datasets and {len(self.regions)} regions"
            )
        if self.timestamps.dtype != np.dtype("datetime64[m]"):
            raise ValueError(f"SignalFrame: timestamps must be datetime64[m], got {self.timestamps.dtype}")

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def column(self, signal: str) -> Float[np.ndarray, " T"]:
        """Values of one signal (the first column with that name).

        **Arguments:**

        - `signal`: signal name.

        **Returns:**

        A `(T,)` float64 array.
        """
        if signal not in self.signals:
            raise ValueError(f"signal {signal!r} is not in this frame; it holds: {', '.join(self.signals)}")
        return self.values[:, self.signals.index(signal)]

    def to_dict(self) -> dict[str, np.ndarray]:
        """`{"datetime": timestamps, <signal>: values, ...}` (a DataFrame-ready mapping).

        **Returns:**

        A dict of `(T,)` arrays.
        """
        out: dict[str, np.ndarray] = {"datetime": self.timestamps}
        for i, signal in enumerate(self.signals):
            out[signal] = self.values[:, i]
        return out


def parse_resolution(resolution: str) -> int:
    """Minutes in `"30min"`, `"1h"`, `"15T"`, `"1D"`; must divide a day.

    **Arguments:**

    - `resolution`: the resolution string.

    **Returns:**

    The step [minutes].

    Raises:
        ValueError: for another format, or a resolution that does not divide 1440 min.
    """
    match = _RESOLUTION.match(resolution)
    if match is None:
        raise ValueError(
            f"Unknown resolution {resolution!r}; use '<n>min', '<n>h' or '<n>d', e.g. '30min', '1h'"
        )
    minutes = int(match.group(1)) * _UNIT_MINUTES[match.group(2).lower()]
    if minutes == 0 or MINUTES_PER_DAY % minutes:
        raise ValueError(
            f"resolution {resolution!r} ({minutes} min) does not divide a day (1440 min); "
            f"valid choices in minutes: {', '.join(map(str, DAY_DIVISORS))}"
        )
    return minutes


def parse_time(value: TimeLike, *, end_of_day: bool = False) -> np.datetime64:
    """A minute timestamp; a bare date means its first minute, or with `end_of_day` its last.

    **Arguments:**

    - `value`: ISO date or date-time string, `datetime` or `np.datetime64`.
    - `end_of_day`: read a bare date as its last minute.

    **Returns:**

    A `np.datetime64` [minutes].

    Raises:
        ValueError: for a string that is not an ISO date or date-time.
    """
    date_only = isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
    if isinstance(value, str):
        text = value.strip()
        date_only = len(text) == 10
        try:
            stamp = np.datetime64(text.replace(" ", "T"), "m")
        except ValueError:
            raise ValueError(
                f"Cannot read {value!r} as a date; use ISO 'YYYY-MM-DD' or 'YYYY-MM-DDTHH:MM'"
            ) from None
    elif isinstance(value, np.datetime64):
        date_only = np.datetime_data(value.dtype)[0] in ("D", "W", "M", "Y")
        stamp = value.astype("datetime64[m]")
    else:
        stamp = np.datetime64(value, "m")
    if date_only and end_of_day:
        stamp = stamp + np.timedelta64(MINUTES_PER_DAY - 1, "m")
    return stamp


def regular_timestamps(start: np.datetime64, n_steps: int, resolution_minutes: int) -> Shaped[np.ndarray, " T"]:
    """`n_steps` timestamps from `start` every `resolution_minutes`."""
    return start.astype("datetime64[m]") + np.arange(n_steps) * np.timedelta64(resolution_minutes, "m")


def fill_gaps(
    values: Float[np.ndarray, "T n"], *, interpolation: str = "linear", what: str = "data"
) -> tuple[Float[np.ndarray, "T n"], Bool[np.ndarray, "T n"]]:
    """Fill NaN per column: `linear` interpolates between the neighbouring valid rows,
    `previous` carries the last valid value forward; leading / trailing gaps take the
    nearest valid value. Returns the filled values and the mask of filled entries.

    Raises:
        ValueError: for an unknown `interpolation` or a column without any valid value.
    """
    check_interpolation(interpolation)
    missing = np.isnan(values)
    if not missing.any():
        return values, missing
    out = values.copy()
    index = np.arange(values.shape[0])
    for c in range(values.shape[1]):
        gap = missing[:, c]
        if not gap.any():
            continue
        valid = np.flatnonzero(~gap)
        if valid.size == 0:
            raise ValueError(f"{what}: column {c} has no valid value to fill gaps from")
        if interpolation == "linear":
            out[gap, c] = np.interp(index[gap], valid, values[valid, c])
        else:
            last = np.maximum.accumulate(np.where(gap, -1, index))
            last = np.where(last < 0, valid[0], last)
            out[:, c] = values[last, c]
    return out, missing


def check_interpolation(interpolation: str) -> None:
    if interpolation not in INTERPOLATIONS:
        raise ValueError(
            f"Unknown interpolation {interpolation!r}; valid choices: {', '.join(INTERPOLATIONS)}"
        )


def compatible_resolutions(native_minutes: int) -> tuple[int, ...]:
    """Day divisors reachable from `native_minutes` by block means or interpolation."""
    return tuple(m for m in DAY_DIVISORS if m % native_minutes == 0 or native_minutes % m == 0)


def resample(
    timestamps: Shaped[np.ndarray, " T"],
    values: Float[np.ndarray, "T n"],
    filled: Bool[np.ndarray, "T n"],
    native_minutes: int,
    target_minutes: int,
    *,
    interpolation: str = "linear",
    what: str = "data",
) -> tuple[Shaped[np.ndarray, " S"], Float[np.ndarray, "S n"], Bool[np.ndarray, "S n"]]:
    """Change the step of a regular series.

    Coarser (target a multiple of native): mean over each block of `k` rows, starting at
    the first row (an incomplete trailing block is dropped). Finer (native a multiple of
    target): `linear` interpolates between interval beginnings (the last interval holds its
    value), `previous` repeats each value `k` times.

    Raises:
        ValueError: when neither step is a multiple of the other.
    """
    check_interpolation(interpolation)
    if target_minutes == native_minutes:
        return timestamps, values, filled
    if target_minutes % native_minutes == 0:
        k = target_minutes // native_minutes
        n_blocks = values.shape[0] // k
        if n_blocks == 0:
            raise ValueError(f"{what}: {values.shape[0]} rows are fewer than one {target_minutes}-min block")
        rows = n_blocks * k
        shape = (n_blocks, k, values.shape[1])
        return (
            timestamps[:rows:k],
            values[:rows].reshape(shape).mean(axis=1),
            np.any(filled[:rows].reshape(shape), axis=1),
        )
    if native_minutes % target_minutes == 0:
        k = native_minutes // target_minutes
        new_times = regular_timestamps(timestamps[0], values.shape[0] * k, target_minutes)
        new_filled = np.repeat(filled, k, axis=0)
        if interpolation == "previous":
            return new_times, np.repeat(values, k, axis=0), new_filled
        source_x = np.arange(values.shape[0]) * float(k)
        target_x = np.arange(values.shape[0] * k, dtype=np.float64)
        new_values = np.stack([np.interp(target_x, source_x, values[:, c]) for c in range(values.shape[1])], 1)
        return new_times, new_values, new_filled
    raise ValueError(
        f"{what}: cannot resample from {native_minutes} min to {target_minutes} min (neither is a "
        f"multiple of the other); valid choices in minutes: "
        f"{', '.join(map(str, compatible_resolutions(native_minutes)))}"
    )
