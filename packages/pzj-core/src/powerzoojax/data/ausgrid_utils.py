"""Ausgrid zone-substation data for the distribution tasks: feeder pools, split roles, and
a reader for the zone-substation load file.

The DSO feeders A, B, C of case33bw each take the mean load of three Ausgrid zone
substations in training and of two other substations for the zone-holdout evaluation
(`AUSGRID_FEEDER_POOLS`). Split roles (`get_ausgrid_split`): `train` and `iid` share
the 2024-05-01 .. 2024-11-30 window and the train pool and are separated by day (every
fourth local Sydney calendar day present in the data is `iid`, the others `train`:
same seasons, disjoint days); `summer_ood` is 2024-12-01 .. 2025-02-28 on the train
pool; `zone_holdout` is the train window on the holdout pool.

The Ausgrid file is not shipped. Download Ausgrid's "Distribution zone substation data"
(https://www.ausgrid.com.au/Industry/Our-Research/Data-to-share/Distribution-zone-substation-data),
gap-filled at 15 minutes in long format with columns `interval_start` (timestamp),
`zone_substation` (name) and `load_mw`, and save it as `AUSGRID_FILE_STEM` +
`.parquet` or `.csv` in a folder given as `data_dir` (or to `DataLoader(data_dir=...)`).
Without it, `find_ausgrid_file` raises `FileNotFoundError` naming the file; the
tasks then use their shipped substitutes (see `powerzoojax.grid.tasks.dso`). Reading
needs pandas (`pip install "pzj-core[data]"`).
"""

import os
import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._frame import parse_resolution, parse_time
from ._gb import TABLE_SUFFIXES, _pandas, read_table
from ._signals import INDEX_DATETIME, INDEX_REGION, LOAD_ACTUAL_MW
from ._splits import (
    AUSGRID_IID_END,
    AUSGRID_IID_START,
    AUSGRID_SUMMER_END,
    AUSGRID_SUMMER_START,
    AUSGRID_TRAIN_END,
    AUSGRID_TRAIN_START,
)

AUSGRID_FEEDER_POOLS: dict[str, dict[str, list[str]]] = {
    "feeder_A": {
        "train": ["Broadmeadow 132_11kV", "Charlestown 132_11kV", "Jesmond 132_11kV"],
        "zone_holdout": ["Mayfield West 132_11kV", "Kotara 33_11kV"],
    },
    "feeder_B": {
        "train": ["Burwood 132_11kV", "Homebush Bay 132_11kV", "Strathfield South 132_11kV"],
        "zone_holdout": ["Flemington 132_11kV", "Lidcombe 33_11kV"],
    },
    "feeder_C": {
        "train": ["Cronulla 132_11kV", "Caringbah 33_11kV", "Miranda 33_11kV"],
        "zone_holdout": ["Kurnell South 132_11kV", "Jannali 33_11kV"],
    },
}
AUSGRID_TRAIN_POOL: list[str] = [s for pools in AUSGRID_FEEDER_POOLS.values() for s in pools["train"]]
AUSGRID_ZONE_HOLDOUT_POOL: list[str] = [s for pools in AUSGRID_FEEDER_POOLS.values() for s in pools["zone_holdout"]]
AUSGRID_ROLES: tuple[str, ...] = ("train", "iid", "summer_ood", "zone_holdout")
AUSGRID_FILE_STEM = "Ausgrid_Zone_Substation_FY25_imputed_15min"
AUSGRID_COLUMNS = {"interval_start": INDEX_DATETIME, "zone_substation": INDEX_REGION, "load_mw": LOAD_ACTUAL_MW}
AUSGRID_TIMEZONE = "Australia/Sydney"
# Every IID_DAY_STRIDE-th local day (counting from the first day in the data) is iid.
IID_DAY_STRIDE = 4

_SPLIT_TABLE: dict[str, tuple[str, str, list[str]]] = {
    "train": (AUSGRID_TRAIN_START, AUSGRID_TRAIN_END, AUSGRID_TRAIN_POOL),
    "iid": (AUSGRID_IID_START, AUSGRID_IID_END, AUSGRID_TRAIN_POOL),
    "summer_ood": (AUSGRID_SUMMER_START, AUSGRID_SUMMER_END, AUSGRID_TRAIN_POOL),
    "zone_holdout": (AUSGRID_TRAIN_START, AUSGRID_TRAIN_END, AUSGRID_ZONE_HOLDOUT_POOL),
}


def get_ausgrid_split(role: str) -> tuple[str, str, list[str]]:
    """`(start, end, substations)` of a split role (dates inclusive, ISO).

    **Arguments:**

    - `role`: `train`, `iid`, `summer_ood` or `zone_holdout`.

    **Returns:**

    `(start, end, substations)`: ISO dates and the list of substation names.

    Raises:
        KeyError: for another role.
    """
    if role not in _SPLIT_TABLE:
        raise KeyError(f"unknown Ausgrid split role {role!r}; valid roles: {AUSGRID_ROLES}")
    start, end, pool = _SPLIT_TABLE[role]
    return start, end, list(pool)


def get_feeder_substations(feeder: str, role: str = "train") -> list[str]:
    """Substations averaged into `feeder` for `role`.

    The holdout pool for `zone_holdout`, the train pool for `train`, `iid` and
    `summer_ood`.

    **Arguments:**

    - `feeder`: `feeder_A`, `feeder_B` or `feeder_C`.
    - `role`: split role.

    **Returns:**

    A list of substation names.

    Raises:
        KeyError: for an unknown feeder or role (the message lists the valid ones).
    """
    if feeder not in AUSGRID_FEEDER_POOLS:
        raise KeyError(f"unknown feeder {feeder!r}; valid feeders: {tuple(AUSGRID_FEEDER_POOLS)}")
    if role not in _SPLIT_TABLE:
        raise KeyError(f"unknown Ausgrid split role {role!r}; valid roles: {AUSGRID_ROLES}")
    return list(AUSGRID_FEEDER_POOLS[feeder]["zone_holdout" if role == "zone_holdout" else "train"])


def _utc_minutes(values: Any) -> np.ndarray:
    """Timestamps (numpy datetime64, or anything pandas parses; tz-aware ones converted to
    UTC) → naive UTC `datetime64[m]`."""
    arr = np.asarray(values)
    if arr.dtype.kind == "M":
        return arr.astype("datetime64[m]")
    pd = _pandas()
    stamps = pd.DatetimeIndex(pd.to_datetime(values, utc=True)).tz_convert("UTC").tz_localize(None)
    return stamps.to_numpy().astype("datetime64[m]")


def _longest_run(missing: np.ndarray) -> int:
    """Length of the longest run of consecutive `True` in a boolean vector."""
    if not missing.any():
        return 0
    edges = np.diff(np.concatenate([[0], missing.astype(np.int8), [0]]))
    return int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max())


def select_full_coverage_substations(
    df: Any,
    start: str,
    end: str,
    *,
    max_gap_steps: int = 2,
    substation_col: str = INDEX_REGION,
    time_col: str = INDEX_DATETIME,
    resolution: str = "15min",
) -> list[str]:
    """Substations whose data cover `start` .. `end` without long gaps, sorted by name.

    Coverage is of whole days, inclusive, on the `resolution` grid with no run of more
    than `max_gap_steps` consecutive missing slots. Substations without a row in the
    window are left out.

    **Arguments:**

    - `df`: a long table (pandas DataFrame or a mapping of columns) with one row per
      substation and timestamp.
    - `start`, `end`: ISO dates, inclusive.
    - `max_gap_steps`: longest allowed run of missing slots.
    - `substation_col`, `time_col`: names of the substation and time columns.
    - `resolution`: the grid step, a pandas frequency.

    **Returns:**

    A list of substation names.
    """
    if isinstance(max_gap_steps, bool) or int(max_gap_steps) < 0:
        raise ValueError(f"max_gap_steps must be a non-negative integer, got {max_gap_steps!r}")
    minutes = parse_resolution(resolution)
    lo, hi = parse_time(start), parse_time(end, end_of_day=True)
    if hi < lo:
        raise ValueError(f"window {start!r} .. {end!r} ends before it starts")
    grid = np.arange(lo, hi + np.timedelta64(1, "m"), np.timedelta64(minutes, "m"))
    stamps = _utc_minutes(df[time_col])
    names = np.asarray(df[substation_col]).astype(str)
    chosen = []
    for name in np.unique(names):
        present = stamps[(names == name) & (stamps >= lo) & (stamps <= hi)]
        if present.size == 0:
            continue
        missing = ~np.isin(grid, present)
        if _longest_run(missing) <= int(max_gap_steps):
            chosen.append(str(name))
    return sorted(chosen)


def filter_ausgrid_role_days(
    df: Any, role: str, *, time_col: str = INDEX_DATETIME, local_tz: str = AUSGRID_TIMEZONE
) -> Any:
    """Rows of `df` (a pandas DataFrame) on the days of `role`: for `iid` every
    fourth local calendar day present (days counted from the first one, in `local_tz`),
    for `train` the other days; other roles are returned unchanged."""
    if role not in _SPLIT_TABLE:
        raise KeyError(f"unknown Ausgrid split role {role!r}; valid roles: {AUSGRID_ROLES}")
    if role not in ("train", "iid") or len(df) == 0:
        return df
    if time_col not in df.columns:
        raise KeyError(f"column {time_col!r} not in the table; columns: {list(df.columns)}")
    pd = _pandas()
    local_day = pd.to_datetime(df[time_col], utc=True).dt.tz_convert(local_tz).dt.strftime("%Y-%m-%d")
    codes, _ = pd.factorize(local_day, sort=True)
    iid = (codes % IID_DAY_STRIDE) == 0
    return df.loc[iid if role == "iid" else ~iid].reset_index(drop=True)


def find_ausgrid_file(data_dir: str | os.PathLike | None) -> pathlib.Path:
    """The Ausgrid zone-substation file in `data_dir` (parquet before csv).

    Raises:
        FileNotFoundError: naming the expected file when `data_dir` is None or lacks it.
    """
    expected = " or ".join(AUSGRID_FILE_STEM + s for s in TABLE_SUFFIXES)
    if data_dir is None:
        raise FileNotFoundError(
            f"the Ausgrid zone-substation data are not shipped: save {expected} in a folder "
            "and pass it as data_dir (see powerzoojax.data.ausgrid_utils)"
        )
    folder = pathlib.Path(data_dir)
    for suffix in TABLE_SUFFIXES:
        candidate = folder / f"{AUSGRID_FILE_STEM}{suffix}"
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{folder} holds no Ausgrid zone-substation file ({expected})")


def read_ausgrid_zone_substations(path: str | os.PathLike) -> Any:
    """The Ausgrid file as a long pandas DataFrame with columns `datetime` (UTC),
    `region` (substation) and `load.actual_mw`, sorted by substation and time."""
    path = pathlib.Path(path)
    table = read_table(path)
    missing = [c for c in AUSGRID_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"{path.name} is not an Ausgrid zone-substation file: missing columns {missing}; "
            f"expected {list(AUSGRID_COLUMNS)}, found {list(table.columns)}"
        )
    pd = _pandas()
    out = table[list(AUSGRID_COLUMNS)].rename(columns=AUSGRID_COLUMNS)
    out[INDEX_DATETIME] = pd.to_datetime(out[INDEX_DATETIME], utc=True)
    out[LOAD_ACTUAL_MW] = pd.to_numeric(out[LOAD_ACTUAL_MW], errors="coerce")
    return out.sort_values([INDEX_REGION, INDEX_DATETIME]).reset_index(drop=True)


def load_substation_profiles(
    data_dir: str | os.PathLike | None,
    substations: Sequence[str],
    role: str = "train",
    *,
    resample: str = "30min",
) -> np.ndarray:
    """`(T, len(substations))` MW: each substation's load over the window of `role`
    (local Sydney dates; restricted to its days for `train` / `iid`), averaged into
    `resample` buckets (a bucket is dropped if any substation lacks it), time-ordered.

    Raises:
        FileNotFoundError: without the Ausgrid file (see `find_ausgrid_file`).
        ValueError: if a substation has no data in the window.
    """
    start, end, _ = get_ausgrid_split(role)
    frame = read_ausgrid_zone_substations(find_ausgrid_file(data_dir))
    pd = _pandas()
    local = frame[INDEX_DATETIME].dt.tz_convert(AUSGRID_TIMEZONE)
    lo = pd.Timestamp(parse_time(start)).tz_localize(AUSGRID_TIMEZONE)
    hi = pd.Timestamp(parse_time(end, end_of_day=True)).tz_localize(AUSGRID_TIMEZONE)
    frame = frame[(local >= lo) & (local <= hi)]
    frame = frame[frame[INDEX_REGION].isin(list(substations))]
    frame = filter_ausgrid_role_days(frame, role)
    frame = frame.assign(bucket=frame[INDEX_DATETIME].dt.floor(f"{parse_resolution(resample)}min"))
    wide = frame.pivot_table(index="bucket", columns=INDEX_REGION, values=LOAD_ACTUAL_MW, aggfunc="mean")
    absent = [s for s in substations if s not in wide.columns]
    if absent:
        raise ValueError(f"Ausgrid file has no {role!r} data for substations {absent}")
    return wide[list(substations)].dropna().sort_index().to_numpy(np.float64)


__all__ = [
    "AUSGRID_COLUMNS", "AUSGRID_FEEDER_POOLS", "AUSGRID_FILE_STEM", "AUSGRID_ROLES", "AUSGRID_TIMEZONE",
    "AUSGRID_TRAIN_POOL", "AUSGRID_ZONE_HOLDOUT_POOL", "IID_DAY_STRIDE", "filter_ausgrid_role_days",
    "find_ausgrid_file", "get_ausgrid_split", "get_feeder_substations", "load_substation_profiles",
    "read_ausgrid_zone_substations", "select_full_coverage_substations",
]
