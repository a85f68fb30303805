"""Set-up-time profile data: signal names, shipped real profiles, loader, splits, sampling.

Everything here runs on the host when env params are built; nothing enters `jit`.

Shipped datasets (`profiles/`, provenance and licences in `profiles/manifest.json` and
`profiles/NOTICE`; built by `scripts/build_profiles.py`), in resolution priority:

| dataset | source | kind | span, step | signals |
|---|---|---|---|---|
| `vic_demand_2014` | vic | measured | 2014, 30 min | `load.actual_mw`, `weather.temperature_c` |
| `simbench_ehv_2016` | simbench | benchmark | 2016, 30 min | `load.actual_mw`, solar/wind `.available_mw` and `_pu` |
| `simbench_feeders_2016` | simbench | benchmark | 2016, 30 min | `load.actual_pu` × 10 feeders |
| `simbench_pv_2016` | simbench | benchmark | 2016, 30 min | `solar.available_pu` × PV1..8 |
| `simbench_wind_2016` | simbench | benchmark | 2016, 30 min | `wind.available_pu` × WP1..12 |
| `taylor_ew_2000` | england_wales | measured | 5 Jun – 27 Aug 2000, 30 min | `load.actual_mw` |
| `google_dc_2019` | google | measured | 28 days, 5 min (cyclic) | `datacenter.cpu_util`, ... |

"benchmark" series (SimBench) are constructed benchmark profiles, not measurements. GB
open-data files (NESO, Elexon) are read when a `DataLoader(data_dir=...)` is given them.

>>> from powerzoojax.data import DataLoader, LOAD_ACTUAL_MW, SOLAR_AVAILABLE_PU
>>> loader = DataLoader()
>>> loader.load_jax_profiles([LOAD_ACTUAL_MW, SOLAR_AVAILABLE_PU], source="simbench", split="train").shape
(13152, 2)

Public submodules: `signals` (signal names), `splits` (frozen windows and the reference's GB /
Ausgrid dates), `ausgrid_utils` (Ausgrid feeder pools, split roles, file reader) and
`dc_microgrid_profiles` (data-centre microgrid profiles); their main names are also
exported here.
"""

from ._case_profiles import SCALINGS, case_load_profiles
from ._frame import DAY_DIVISORS, INTERPOLATIONS, SignalFrame, parse_resolution, parse_time
from ._gb import (
    GB_DATASETS,
    GB_SOURCE,
    ExternalDataset,
    find_gb_files,
    read_elexon_demand,
    read_elexon_generation,
    read_elexon_mid,
    read_neso_demand,
    read_table,
    settlement_period_starts,
)
from ._loader import DataLoader
from ._nonstationary import (
    DRIFT_SHOCK_FACTOR,
    SAMPLER_MODES,
    EpisodeConfig,
    NonstationarySampler,
    apply_drift,
)
from ._registry import (
    DatasetManifest,
    DatasetRegistry,
    ResolvedSignal,
    default_registry,
    shipped_manifest,
)
from ._signals import (
    ALL_SIGNALS,
    DATA_TYPE_ACTUAL_SERIES,
    DATA_TYPE_FORECAST_PANEL,
    DATA_TYPES,
    DATACENTER_ASSIGNED_MEM,
    DATACENTER_CPU_UTIL,
    DATACENTER_CYCLES_PER_INSTRUCTION,
    DATACENTER_DISK_IO,
    DATACENTER_GPU_MEM_UTIL,
    DATACENTER_GPU_UTIL,
    DATACENTER_MEM_UTIL,
    DATACENTER_NET_IN,
    DATACENTER_NET_OUT,
    DATACENTER_POWER_MW,
    INDEX_DATETIME,
    INDEX_ISSUE_TIME,
    INDEX_REGION,
    INDEX_TARGET_TIME,
    LOAD_ACTUAL_MW,
    LOAD_ACTUAL_PU,
    LOAD_FORECAST_DA_MW,
    LOAD_FORECAST_P10_MW,
    LOAD_FORECAST_P50_MW,
    LOAD_FORECAST_P90_MW,
    MARKET_MID_PRICE_APX,
    MARKET_MID_PRICE_N2EX,
    MARKET_MID_VOLUME_APX,
    MARKET_MID_VOLUME_N2EX,
    SIGNAL_UNITS,
    SOLAR_AVAILABLE_MW,
    SOLAR_AVAILABLE_PU,
    TIME_MODE_CALENDAR,
    TIME_MODE_PROFILE,
    TIME_MODES,
    WEATHER_TEMPERATURE_C,
    WIND_AVAILABLE_MW,
    WIND_AVAILABLE_PU,
    check_signal,
)
from ._splits import SPLITS, Window, assert_no_overlap, gb_windows, get_window, list_windows

__all__ = [
    "ALL_SIGNALS",
    "DATACENTER_ASSIGNED_MEM",
    "DATACENTER_CPU_UTIL",
    "DATACENTER_CYCLES_PER_INSTRUCTION",
    "DATACENTER_DISK_IO",
    "DATACENTER_GPU_MEM_UTIL",
    "DATACENTER_GPU_UTIL",
    "DATACENTER_MEM_UTIL",
    "DATACENTER_NET_IN",
    "DATACENTER_NET_OUT",
    "DATACENTER_POWER_MW",
    "DATA_TYPES",
    "DATA_TYPE_ACTUAL_SERIES",
    "DATA_TYPE_FORECAST_PANEL",
    "DAY_DIVISORS",
    "DRIFT_SHOCK_FACTOR",
    "GB_DATASETS",
    "GB_SOURCE",
    "INDEX_DATETIME",
    "INDEX_ISSUE_TIME",
    "INDEX_REGION",
    "INDEX_TARGET_TIME",
    "INTERPOLATIONS",
    "LOAD_ACTUAL_MW",
    "LOAD_ACTUAL_PU",
    "LOAD_FORECAST_DA_MW",
    "LOAD_FORECAST_P10_MW",
    "LOAD_FORECAST_P50_MW",
    "LOAD_FORECAST_P90_MW",
    "MARKET_MID_PRICE_APX",
    "MARKET_MID_PRICE_N2EX",
    "MARKET_MID_VOLUME_APX",
    "MARKET_MID_VOLUME_N2EX",
    "SAMPLER_MODES",
    "SCALINGS",
    "SIGNAL_UNITS",
    "SOLAR_AVAILABLE_MW",
    "SOLAR_AVAILABLE_PU",
    "SPLITS",
    "TIME_MODES",
    "TIME_MODE_CALENDAR",
    "TIME_MODE_PROFILE",
    "WEATHER_TEMPERATURE_C",
    "WIND_AVAILABLE_MW",
    "WIND_AVAILABLE_PU",
    "DataLoader",
    "DatasetManifest",
    "DatasetRegistry",
    "EpisodeConfig",
    "ExternalDataset",
    "NonstationarySampler",
    "ResolvedSignal",
    "SignalFrame",
    "Window",
    "apply_drift",
    "assert_no_overlap",
    "case_load_profiles",
    "check_signal",
    "default_registry",
    "find_gb_files",
    "gb_windows",
    "get_window",
    "list_windows",
    "parse_resolution",
    "parse_time",
    "read_elexon_demand",
    "read_elexon_generation",
    "read_elexon_mid",
    "read_neso_demand",
    "read_table",
    "settlement_period_starts",
    "shipped_manifest",
]

from ._workload import (
    DC_STEPS_PER_DAY,
    WORKLOAD_SOURCES,
    DCProfiles,
    WorkloadProfile,
    load_dc_profiles,
    load_workload_profile,
    synthetic_outdoor_temp,
    synthetic_price,
    synthetic_solar_cf,
    synthetic_workload_profile,
)

__all__ += [
    "DC_STEPS_PER_DAY", "DCProfiles", "WORKLOAD_SOURCES", "WorkloadProfile", "load_dc_profiles",
    "load_workload_profile", "synthetic_outdoor_temp", "synthetic_price", "synthetic_solar_cf",
    "synthetic_workload_profile",
]

from ._workload import DataUnavailableError, mid_price_5min, solar_cf_5min  # noqa: E402

__all__ += ["DataUnavailableError", "mid_price_5min", "solar_cf_5min"]

from . import ausgrid_utils, dc_microgrid_profiles, signals, splits  # noqa: E402
from ._alignment import TimeAligner  # noqa: E402
from ._splits import (  # noqa: E402
    AUSGRID_IID_END,
    AUSGRID_IID_START,
    AUSGRID_SUMMER_END,
    AUSGRID_SUMMER_START,
    AUSGRID_TRAIN_END,
    AUSGRID_TRAIN_START,
    GB_IID_END,
    GB_IID_START,
    GB_TRAIN_END,
    GB_TRAIN_START,
    ausgrid_windows,
)
from .ausgrid_utils import (  # noqa: E402
    AUSGRID_FEEDER_POOLS,
    AUSGRID_TRAIN_POOL,
    AUSGRID_ZONE_HOLDOUT_POOL,
    get_ausgrid_split,
    get_feeder_substations,
    select_full_coverage_substations,
)
from .dc_microgrid_profiles import (  # noqa: E402
    VALID_OOD_SCENARIOS,
    VALID_SOURCES,
    apply_ood_transform,
    cycle_profile,
    load_workload_profiles,
    make_all_synthetic_profiles,
    make_real_solar_profile,
    make_synthetic_cpu_profile,
    make_synthetic_outdoor_temp_profile,
    make_synthetic_solar_profile,
)

__all__ += [
    "AUSGRID_FEEDER_POOLS", "AUSGRID_IID_END", "AUSGRID_IID_START", "AUSGRID_SUMMER_END", "AUSGRID_SUMMER_START",
    "AUSGRID_TRAIN_END", "AUSGRID_TRAIN_POOL", "AUSGRID_TRAIN_START", "AUSGRID_ZONE_HOLDOUT_POOL", "GB_IID_END",
    "GB_IID_START", "GB_TRAIN_END", "GB_TRAIN_START", "TimeAligner", "VALID_OOD_SCENARIOS", "VALID_SOURCES",
    "apply_ood_transform", "ausgrid_utils", "ausgrid_windows", "cycle_profile", "dc_microgrid_profiles",
    "get_ausgrid_split", "get_feeder_substations", "load_workload_profiles", "make_all_synthetic_profiles",
    "make_real_solar_profile", "make_synthetic_cpu_profile", "make_synthetic_outdoor_temp_profile",
    "make_synthetic_solar_profile", "select_full_coverage_substations", "signals", "splits",
]
