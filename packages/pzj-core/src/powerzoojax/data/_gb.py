"""Readers for GB open-data files: NESO historic demand, Elexon demand (day-ahead forecast vs
actual), Elexon generation by fuel type and Elexon market index (MID) prices.

The files are not shipped (download them from NESO / Elexon BMRS); point a
`DataLoader(data_dir=...)` at a folder holding them under the names in `GB_DATASETS` (as
`.parquet` or `.csv`) and request `source="gb"`. Readers need pandas (and pyarrow for
parquet): `pip install "pzj-core[data]"`.

Every reader returns a `SignalFrame` on UTC timestamps (interval beginnings), sorted, one row
per half hour present in the file; missing values stay NaN here and are filled by the loader
(see `DataLoader`). Column names follow the files' published schemas:

* NESO `historic-demand-data`: `SETTLEMENT_DATE`, `SETTLEMENT_PERIOD` (1..50, half
  hours of the UK local day: 46 on the spring clock-change day, 50 in autumn), `ND`
  (national demand, MW) and 19 further columns. `ND` -> `load.actual_mw`.
* Elexon demand: `startTime` (UTC), `DAForecast`, `Actual` (MW) ->
  `load.forecast_da_mw`, `load.actual_mw`.
* Elexon generation by type: `startTime` and one column per fuel (MW); `Solar` ->
  `solar.available_mw`; `Wind Offshore + Wind Onshore` -> `wind.available_mw`
  (metered output, i.e. after any curtailment).
* Elexon MID: `startTime`, `mid_price_APXMIDP`, `mid_price_N2EXMIDP` (GBP/MWh),
  `mid_volume_APXMIDP`, `mid_volume_N2EXMIDP` (MWh) -> `market.mid_*`. Periods without
  trades are published as price 0 with volume 0 and are kept as published.
"""

import dataclasses
import os
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ._frame import SignalFrame
from ._signals import (
    LOAD_ACTUAL_MW,
    LOAD_FORECAST_DA_MW,
    MARKET_MID_PRICE_APX,
    MARKET_MID_PRICE_N2EX,
    MARKET_MID_VOLUME_APX,
    MARKET_MID_VOLUME_N2EX,
    SOLAR_AVAILABLE_MW,
    WIND_AVAILABLE_MW,
)

GB_SOURCE = "gb"
GB_RESOLUTION_MINUTES = 30
TABLE_SUFFIXES: tuple[str, ...] = (".parquet", ".csv")


def _pandas() -> Any:
    try:
        import pandas
    except ModuleNotFoundError as error:
        if error.name != "pandas":
            raise
        raise ImportError(
            'Reading GB open-data files needs pandas (and pyarrow for parquet): pip install "pzj-core[data]"'
        ) from None
    return pandas


def read_table(path: str | os.PathLike) -> Any:
    """The raw table of a `.parquet` or `.csv` file as a pandas DataFrame.

    **Arguments:**

    - `path`: the file.

    **Returns:**

    A pandas DataFrame.

    Raises:
        ValueError: for another suffix (the message lists the valid ones).
        FileNotFoundError: if the file does not exist.
    """
    pd = _pandas()
    path = pathlib.Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ValueError(f"Unsupported file type {suffix!r} for {path.name}; valid: {', '.join(TABLE_SUFFIXES)}")
    if not path.exists():
        raise FileNotFoundError(path)
    if suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path)


def _require(frame: Any, columns: tuple[str, ...], path: pathlib.Path, kind: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{path.name} is not a {kind} file: missing columns {missing}; "
            f"expected at least {list(columns)}, found {list(frame.columns)}"
        )


def _utc_minutes(stamps: Any) -> np.ndarray:
    """tz-aware pandas timestamps -> naive UTC `datetime64[m]`."""
    pd = _pandas()
    utc = pd.DatetimeIndex(pd.to_datetime(stamps, utc=True)).tz_convert("UTC").tz_localize(None)
    return utc.to_numpy().astype("datetime64[m]")


def _frame(times: np.ndarray, columns: dict[str, np.ndarray], dataset: str) -> SignalFrame:
    order = np.argsort(times, kind="stable")
    times = times[order]
    values = np.stack([np.asarray(v, np.float64)[order] for v in columns.values()], axis=1)
    # A repeated timestamp keeps its last row (files appended from overlapping downloads).
    keep = np.ones(times.shape[0], bool)
    keep[:-1] = times[1:] != times[:-1]
    signals = tuple(columns)
    return SignalFrame(
        timestamps=times[keep],
        values=values[keep],
        signals=signals,
        filled=np.zeros((int(keep.sum()), len(signals)), bool),
        resolution_minutes=None,
        datasets=(dataset,) * len(signals),
        regions=(None,) * len(signals),
    )


def _numeric(frame: Any, column: str) -> np.ndarray:
    return _pandas().to_numeric(frame[column], errors="coerce").to_numpy(np.float64)


def read_elexon_demand(path: str | os.PathLike) -> SignalFrame:
    """Elexon day-ahead demand forecast and actual total load (`startTime`, `DAForecast`,
    `Actual`) -> `load.actual_mw`, `load.forecast_da_mw` on UTC half hours.

    **Arguments:**

    - `path`: `.parquet` or `.csv` file.

    **Returns:**

    A [`SignalFrame`][powerzoojax.data.SignalFrame] [MW].
    """
    path = pathlib.Path(path)
    table = read_table(path)
    _require(table, ("startTime", "DAForecast", "Actual"), path, "Elexon demand")
    return _frame(
        _utc_minutes(table["startTime"]),
        {LOAD_ACTUAL_MW: _numeric(table, "Actual"), LOAD_FORECAST_DA_MW: _numeric(table, "DAForecast")},
        "gb_forecast_actual_demand",
    )


MID_COLUMNS: dict[str, str] = {
    MARKET_MID_PRICE_APX: "mid_price_APXMIDP",
    MARKET_MID_PRICE_N2EX: "mid_price_N2EXMIDP",
    MARKET_MID_VOLUME_APX: "mid_volume_APXMIDP",
    MARKET_MID_VOLUME_N2EX: "mid_volume_N2EXMIDP",
}


def read_elexon_mid(path: str | os.PathLike) -> SignalFrame:
    """Elexon market index data (APX and N2EX price and volume) -> `market.mid_*`.

    **Arguments:**

    - `path`: `.parquet` or `.csv` file.

    **Returns:**

    A [`SignalFrame`][powerzoojax.data.SignalFrame] of the prices and volumes as in the file,
    on UTC half hours.
    """
    path = pathlib.Path(path)
    table = read_table(path)
    _require(table, ("startTime", *MID_COLUMNS.values()), path, "Elexon MID")
    return _frame(
        _utc_minutes(table["startTime"]),
        {signal: _numeric(table, column) for signal, column in MID_COLUMNS.items()},
        "gb_market_mid",
    )


def read_elexon_generation(path: str | os.PathLike) -> SignalFrame:
    """Elexon generation by fuel type -> `solar.available_mw` (`Solar`) and
    `wind.available_mw` (`Wind Offshore` + `Wind Onshore`).

    **Arguments:**

    - `path`: `.parquet` or `.csv` file.

    **Returns:**

    A [`SignalFrame`][powerzoojax.data.SignalFrame] [MW] on UTC half hours.
    """
    path = pathlib.Path(path)
    table = read_table(path)
    _require(table, ("startTime", "Solar", "Wind Offshore", "Wind Onshore"), path, "Elexon generation-by-type")
    return _frame(
        _utc_minutes(table["startTime"]),
        {
            SOLAR_AVAILABLE_MW: _numeric(table, "Solar"),
            WIND_AVAILABLE_MW: _numeric(table, "Wind Offshore") + _numeric(table, "Wind Onshore"),
        },
        "gb_gen_by_type",
    )


def settlement_period_starts(dates: Any, periods: Any) -> np.ndarray:
    """UTC beginnings of GB settlement periods.

    Period `p` of UK local day `d` starts `(p - 1) * 30` min after local midnight of `d`
    (Europe/London), which handles the 46- and 50-period clock-change days.

    **Arguments:**

    - `dates`: `(n,)` settlement dates.
    - `periods`: `(n,)` settlement periods, 1..50.

    **Returns:**

    A `(n,)` `datetime64[m]` NumPy array (naive UTC).

    Raises:
        ValueError: for a period outside 1..50 or a date that cannot be read.
    """
    pd = _pandas()
    periods = np.asarray(periods, dtype=np.int64)
    bad = np.flatnonzero((periods < 1) | (periods > 50))
    if bad.size:
        raise ValueError(
            f"SETTLEMENT_PERIOD must be 1..50; row {bad[0]} has {periods[bad[0]]} ({bad.size} bad rows)"
        )
    parsed = None
    for fmt in ("ISO8601", "%d-%b-%Y"):
        try:
            parsed = pd.to_datetime(pd.Series(dates).astype(str).str.strip(), format=fmt)
            break
        except (ValueError, TypeError):
            continue
    if parsed is None:
        raise ValueError(
            "SETTLEMENT_DATE must be ISO dates (2024-01-31) or NESO's 31-JAN-2024 form; "
            f"first value: {np.asarray(dates)[0]!r}"
        )
    midnight = pd.DatetimeIndex(parsed).normalize().tz_localize("Europe/London")
    starts = midnight.tz_convert("UTC") + pd.to_timedelta((periods - 1) * 30, unit="min")
    return starts.tz_localize(None).to_numpy().astype("datetime64[m]")


def read_neso_demand(path: str | os.PathLike) -> SignalFrame:
    """NESO historic demand data (`SETTLEMENT_DATE`, `SETTLEMENT_PERIOD`, `ND`, ...) ->
    `load.actual_mw` = national demand `ND` on UTC half hours.

    **Arguments:**

    - `path`: `.parquet` or `.csv` file.

    **Returns:**

    A [`SignalFrame`][powerzoojax.data.SignalFrame] [MW].
    """
    path = pathlib.Path(path)
    table = read_table(path)
    _require(table, ("SETTLEMENT_DATE", "SETTLEMENT_PERIOD", "ND"), path, "NESO historic demand")
    times = settlement_period_starts(table["SETTLEMENT_DATE"], table["SETTLEMENT_PERIOD"])
    return _frame(times, {LOAD_ACTUAL_MW: _numeric(table, "ND")}, "gb_neso_demand")


@dataclasses.dataclass(frozen=True)
class ExternalDataset:
    """A GB open-data file the loader can use when it is present in `data_dir`.

    **Arguments:**

    - `name`: dataset name.
    - `stem`: file name without suffix.
    - `reader`: `reader(path) -> SignalFrame`.
    - `signals`: the signals the file provides.
    - `description`: one line.
    """

    name: str
    stem: str
    reader: Callable[[str | os.PathLike], SignalFrame]
    signals: tuple[str, ...]
    description: str


# Order = resolution priority within source "gb" (the reference's manifest file order): actual load
# comes from Elexon, whose span holds the GB windows, before NESO's (which ends 2025-04-13).
GB_DATASETS: tuple[ExternalDataset, ...] = (
    ExternalDataset(
        "gb_forecast_actual_demand",
        "GB_Forecast_Actual_Demand_2023_2025_30min",
        read_elexon_demand,
        (LOAD_ACTUAL_MW, LOAD_FORECAST_DA_MW),
        "Elexon GB total load: day-ahead forecast and actual, 30 min",
    ),
    ExternalDataset(
        "gb_gen_by_type",
        "GB_Gen_by_Type_2016_2025_30min",
        read_elexon_generation,
        (SOLAR_AVAILABLE_MW, WIND_AVAILABLE_MW),
        "Elexon GB generation by fuel type: solar, wind (offshore + onshore), 30 min",
    ),
    ExternalDataset(
        "gb_market_mid",
        "MID_GB_30min_aligned_to_gen",
        read_elexon_mid,
        tuple(MID_COLUMNS),
        "Elexon market index data: APX / N2EX price and volume, 30 min",
    ),
    ExternalDataset(
        "gb_neso_demand",
        "GB_NESO_Demand_2009_2025_30min",
        read_neso_demand,
        (LOAD_ACTUAL_MW,),
        "NESO historic demand: national demand ND, 30 min",
    ),
)


def find_gb_files(data_dir: str | os.PathLike) -> dict[str, pathlib.Path]:
    """The GB datasets present in `data_dir` (parquet preferred over csv).

    **Arguments:**

    - `data_dir`: folder to search.

    **Returns:**

    A dict `{dataset name: file path}`.

    Raises:
        ValueError: if `data_dir` is not a directory.
    """
    folder = pathlib.Path(data_dir)
    if not folder.is_dir():
        raise ValueError(f"data_dir {str(folder)!r} is not a directory")
    found = {}
    for dataset in GB_DATASETS:
        for suffix in TABLE_SUFFIXES:
            candidate = folder / f"{dataset.stem}{suffix}"
            if candidate.exists():
                found[dataset.name] = candidate
                break
    return found
