"""Stable signal names (`domain.metric[_unit]`), index names, data types and time modes.

The names are the contract between data and envs: a task asks for `LOAD_ACTUAL_MW`, never
for a file's column. The reference fixes the names below; the three `*_pu` signals are
project additions for series given per unit of a rated power (SimBench), which must not be
mislabelled as MW.
"""

LOAD_ACTUAL_MW = "load.actual_mw"
LOAD_FORECAST_DA_MW = "load.forecast_da_mw"
LOAD_FORECAST_P10_MW = "load.forecast_p10_mw"
LOAD_FORECAST_P50_MW = "load.forecast_p50_mw"
LOAD_FORECAST_P90_MW = "load.forecast_p90_mw"
LOAD_ACTUAL_PU = "load.actual_pu"
SOLAR_AVAILABLE_MW = "solar.available_mw"
SOLAR_AVAILABLE_PU = "solar.available_pu"
WIND_AVAILABLE_MW = "wind.available_mw"
WIND_AVAILABLE_PU = "wind.available_pu"
MARKET_MID_PRICE_APX = "market.mid_price_apx"
MARKET_MID_PRICE_N2EX = "market.mid_price_n2ex"
MARKET_MID_VOLUME_APX = "market.mid_volume_apx"
MARKET_MID_VOLUME_N2EX = "market.mid_volume_n2ex"
DATACENTER_CPU_UTIL = "datacenter.cpu_util"
DATACENTER_MEM_UTIL = "datacenter.mem_util"
DATACENTER_NET_IN = "datacenter.net_in"
DATACENTER_NET_OUT = "datacenter.net_out"
DATACENTER_DISK_IO = "datacenter.disk_io"
DATACENTER_POWER_MW = "datacenter.power_mw"
DATACENTER_GPU_UTIL = "datacenter.gpu_util"
DATACENTER_GPU_MEM_UTIL = "datacenter.gpu_mem_util"
DATACENTER_CYCLES_PER_INSTRUCTION = "datacenter.cycles_per_instruction"
DATACENTER_ASSIGNED_MEM = "datacenter.assigned_mem"
WEATHER_TEMPERATURE_C = "weather.temperature_c"

SIGNAL_UNITS: dict[str, str] = {
    LOAD_ACTUAL_MW: "MW",
    LOAD_FORECAST_DA_MW: "MW",
    LOAD_FORECAST_P10_MW: "MW",
    LOAD_FORECAST_P50_MW: "MW",
    LOAD_FORECAST_P90_MW: "MW",
    LOAD_ACTUAL_PU: "p.u. of rated load",
    SOLAR_AVAILABLE_MW: "MW",
    SOLAR_AVAILABLE_PU: "p.u. of installed capacity",
    WIND_AVAILABLE_MW: "MW",
    WIND_AVAILABLE_PU: "p.u. of installed capacity",
    MARKET_MID_PRICE_APX: "GBP/MWh",
    MARKET_MID_PRICE_N2EX: "GBP/MWh",
    MARKET_MID_VOLUME_APX: "MWh",
    MARKET_MID_VOLUME_N2EX: "MWh",
    DATACENTER_CPU_UTIL: "fraction",
    DATACENTER_MEM_UTIL: "fraction",
    DATACENTER_NET_IN: "fraction",
    DATACENTER_NET_OUT: "fraction",
    DATACENTER_DISK_IO: "fraction",
    DATACENTER_POWER_MW: "MW",
    DATACENTER_GPU_UTIL: "fraction",
    DATACENTER_GPU_MEM_UTIL: "fraction",
    DATACENTER_CYCLES_PER_INSTRUCTION: "cycles/instruction",
    DATACENTER_ASSIGNED_MEM: "fraction",
    WEATHER_TEMPERATURE_C: "degC",
}
ALL_SIGNALS: tuple[str, ...] = tuple(SIGNAL_UNITS)

INDEX_REGION = "region"
INDEX_DATETIME = "datetime"
INDEX_ISSUE_TIME = "issue_time"
INDEX_TARGET_TIME = "target_time"

DATA_TYPE_ACTUAL_SERIES = "actual_series"
DATA_TYPE_FORECAST_PANEL = "forecast_panel"
DATA_TYPES: tuple[str, ...] = (DATA_TYPE_ACTUAL_SERIES, DATA_TYPE_FORECAST_PANEL)

TIME_MODE_CALENDAR = "calendar"
TIME_MODE_PROFILE = "profile"
TIME_MODES: tuple[str, ...] = (TIME_MODE_CALENDAR, TIME_MODE_PROFILE)


def check_signal(signal: str) -> str:
    """Return `signal` if it is a known signal name.

    **Arguments:**

    - `signal`: signal name.

    **Returns:**

    `signal`.

    Raises:
        ValueError: naming the unknown signal and the valid names.
    """
    if signal not in SIGNAL_UNITS:
        raise ValueError(f"Unknown signal {signal!r}; valid signals: {', '.join(ALL_SIGNALS)}")
    return signal
