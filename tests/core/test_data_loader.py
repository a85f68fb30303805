"""powerzoojax.data: signal names, registry resolution, DataLoader outputs and windows.

All shipped data are read from the package (no network, no optional dependency).
"""

import datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def data():
    from powerzoojax import data

    return data


@pytest.fixture(scope="module")
def loader(data):
    return data.DataLoader()


SPEC_SIGNALS = [
    "load.actual_mw", "load.forecast_da_mw", "load.forecast_p10_mw", "load.forecast_p50_mw",
    "load.forecast_p90_mw", "solar.available_mw", "wind.available_mw", "market.mid_price_apx",
    "market.mid_price_n2ex", "market.mid_volume_apx", "market.mid_volume_n2ex",
    "datacenter.cpu_util", "datacenter.mem_util", "datacenter.net_in", "datacenter.net_out",
    "datacenter.disk_io", "datacenter.power_mw", "datacenter.gpu_util", "datacenter.gpu_mem_util",
    "datacenter.cycles_per_instruction", "datacenter.assigned_mem", "weather.temperature_c",
]


def test_spec_signal_names_and_constants(data):
    assert set(SPEC_SIGNALS) <= set(data.ALL_SIGNALS)
    for name in SPEC_SIGNALS:
        constant = name.replace(".", "_").upper()
        assert getattr(data, constant) == name
    assert data.LOAD_ACTUAL_PU == "load.actual_pu"
    assert (data.INDEX_REGION, data.INDEX_DATETIME, data.INDEX_ISSUE_TIME, data.INDEX_TARGET_TIME) == (
        "region", "datetime", "issue_time", "target_time")
    assert data.DATA_TYPES == ("actual_series", "forecast_panel")
    assert data.TIME_MODES == ("calendar", "profile")
    assert all(name in data.SIGNAL_UNITS for name in data.ALL_SIGNALS)


def test_registry_lists_shipped_datasets_in_priority_order(data):
    registry = data.default_registry()
    assert registry.list_datasets() == [
        "vic_demand_2014", "simbench_ehv_2016", "simbench_feeders_2016", "simbench_pv_2016",
        "simbench_wind_2016", "taylor_ew_2000", "google_dc_2019",
    ]
    assert registry.list_sources() == ["vic", "simbench", "england_wales", "google"]
    assert [m.name for m in registry.find_by_signal("load.actual_mw")] == [
        "vic_demand_2014", "simbench_ehv_2016", "taylor_ew_2000"]
    assert [m.name for m in registry.find_by_signal("load.actual_mw", source="simbench")] == ["simbench_ehv_2016"]
    assert registry.find_by_signal("load.forecast_p50_mw") == []
    assert registry.find_by_source("simbench")[0].name == "simbench_ehv_2016"
    assert registry.get_manifest("vic_demand_2014").measured
    assert not registry.get_manifest("simbench_ehv_2016").measured
    assert registry.get_manifest("simbench_feeders_2016").regions_of("load.actual_pu")[0] == "mv_rural"


def test_resolution_prefers_one_dataset_for_all_signals(data):
    registry = data.default_registry()
    alone = registry.resolve_signals(["load.actual_mw"])
    assert alone[0].dataset.name == "vic_demand_2014"
    together = registry.resolve_signals(["load.actual_mw", "wind.available_mw"])
    assert {r.dataset.name for r in together} == {"simbench_ehv_2016"}
    by_name = registry.resolve_signals(["load.actual_mw"], source="taylor_ew_2000")
    assert by_name[0].dataset.name == "taylor_ew_2000"


SHAPES = [
    # (signals, kwargs, expected rows)
    (["load.actual_mw"], {}, 17520),
    (["load.actual_mw", "weather.temperature_c"], {"split": "train"}, 245 * 48),
    (["load.actual_mw", "solar.available_pu"], {"source": "simbench", "split": "train"}, 274 * 48),
    (["load.actual_mw"], {"source": "simbench", "resample": "1h"}, 366 * 24),
    (["load.actual_mw"], {"source": "england_wales", "resample": "15min"}, 84 * 96),
    (["load.actual_pu"], {"region": "lv_urban6", "start_date": "2016-07-01", "end_date": "2016-07-07"}, 7 * 48),
    (["datacenter.cpu_util", "datacenter.mem_util"], {"resample": "30min"}, 28 * 48),
]


@pytest.mark.parametrize(("signals", "kwargs", "rows"), SHAPES)
def test_shapes_dtypes_timestamps_no_nan(loader, signals, kwargs, rows):
    import jax.numpy as jnp

    frame = loader.load_signals(signals, **kwargs)
    assert frame.values.shape == (rows, len(signals))
    assert frame.signals == tuple(signals)
    assert frame.timestamps.dtype == np.dtype("datetime64[m]")
    steps = np.diff(frame.timestamps).astype(np.int64)
    assert (steps == frame.resolution_minutes).all()
    assert np.isfinite(frame.values).all()
    assert not frame.filled.any()  # shipped data have no gaps
    profile = loader.load_jax_profiles(signals, **kwargs)
    assert profile.shape == (rows, len(signals)) and profile.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(profile), frame.values, rtol=1e-6)


def test_values_are_physically_plausible(loader):
    vic = loader.load_signals(["load.actual_mw", "weather.temperature_c"])
    assert 2_500 < vic.values[:, 0].min() < vic.values[:, 0].max() < 10_000  # Victoria, MW
    assert vic.values[:, 1].max() == pytest.approx(43.2, abs=0.01)  # 2014 heatwave
    pv = loader.load_region_profiles("solar.available_pu", source="simbench")
    assert pv.values.shape[1] == 8 and pv.values.min() >= 0 and pv.values.max() <= 1
    hours = (pv.timestamps - pv.timestamps.astype("datetime64[D]")).astype(np.int64) // 60
    assert pv.values[hours == 0].max() == 0  # no sun at midnight (CET)
    wind = loader.load_region_profiles("wind.available_pu")
    assert wind.regions == tuple(f"WP{i}" for i in range(1, 13))
    assert wind.values.min() > -1e-4 and wind.values.max() <= 1 + 1e-6


def test_region_profiles_and_order(loader):
    frame = loader.load_region_profiles("load.actual_pu", regions=["lv_rural1", "mv_comm"], split="iid")
    assert frame.regions == ("lv_rural1", "mv_comm") and frame.values.shape == (61 * 48, 2)
    single = loader.load_signals(["load.actual_pu"], region="mv_comm", split="iid")
    np.testing.assert_array_equal(frame.values[:, 1], single.values[:, 0])


def test_resampling_means_and_interpolation(loader):
    native = loader.load_signals(["load.actual_mw"], start_date="2014-06-01", end_date="2014-06-02")
    hourly = loader.load_signals(["load.actual_mw"], start_date="2014-06-01", end_date="2014-06-02", resample="1h")
    np.testing.assert_allclose(hourly.values[:, 0], native.values[:, 0].reshape(-1, 2).mean(1))
    fine = loader.load_signals(["load.actual_mw"], start_date="2014-06-01", end_date="2014-06-02", resample="15min")
    np.testing.assert_allclose(fine.values[::2, 0], native.values[:, 0])
    np.testing.assert_allclose(fine.values[1:-1:2, 0], 0.5 * (native.values[:-1, 0] + native.values[1:, 0]))
    step = loader.load_signals(["load.actual_mw"], start_date="2014-06-01", end_date="2014-06-02",
                               resample="15min", interpolation="previous")
    np.testing.assert_allclose(step.values[1::2, 0], native.values[:, 0])


def test_date_forms_and_inclusive_end(loader):
    by_str = loader.load_signals(["load.actual_mw"], start_date="2014-03-01", end_date="2014-03-01")
    assert len(by_str) == 48 and str(by_str.timestamps[-1]) == "2014-03-01T23:30"
    by_date = loader.load_signals(["load.actual_mw"], start_date=datetime.date(2014, 3, 1),
                                  end_date=np.datetime64("2014-03-01"))
    np.testing.assert_array_equal(by_str.values, by_date.values)
    partial = loader.load_signals(["load.actual_mw"], start_date="2014-03-01T10:10", end_date="2014-03-01 12:00")
    assert str(partial.timestamps[0]) == "2014-03-01T10:30" and str(partial.timestamps[-1]) == "2014-03-01T12:00"
    raw = loader.load_data("simbench_feeders_2016")
    assert raw.values.shape == (17568, 10) and raw.resolution_minutes == 30


def test_windows_disjoint_and_inside_the_shipped_data(data, loader):
    shipped = set(loader.list_datasets())
    datasets = {w.dataset for w in data.list_windows()}
    assert shipped - datasets == set()  # every shipped dataset has frozen windows
    for name in datasets:
        windows = data.list_windows(name)
        assert {"train", "iid"} <= {w.split for w in windows}
        for i, a in enumerate(windows):
            for b in windows[i + 1:]:
                data.assert_no_overlap(a.start, a.end, b.start, b.end)
        if name in shipped:
            lo, hi = loader.time_range(name)
            for w in windows:
                start, end = w.bounds()
                assert lo <= start and end <= hi + np.timedelta64(loader.dataset_info(name).resolution_minutes - 1, "m")
                frame = loader.load_signals([loader.dataset_info(name).signals[0]], source=name,
                                            region=loader.dataset_info(name).regions[0], split=w.split)
                assert len(frame) > 0
    assert data.gb_windows() == {"train": ("2025-04-01", "2025-12-31"), "iid": ("2026-01-01", "2026-03-31")}


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 24]), st.integers(0, 300), st.integers(1, 60))
def test_block_mean_resampling_keeps_the_window_mean(hours, day, n_days):
    from powerzoojax import data

    loader = data.DataLoader()
    start = np.datetime64("2016-01-01") + np.timedelta64(day, "D")
    end = start + np.timedelta64(n_days - 1, "D")
    kwargs = {"source": "simbench", "start_date": str(start), "end_date": str(end)}
    native = loader.load_signals(["wind.available_mw"], **kwargs)
    coarse = loader.load_signals(["wind.available_mw"], resample=f"{hours}h", **kwargs)
    assert len(coarse) == n_days * 24 // hours
    assert coarse.values.mean() == pytest.approx(native.values.mean(), rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------------------------------
# One test per error message.

ERRORS = [
    ({"signals": ["load.nope"]}, r"Unknown signal 'load.nope'; valid signals: load.actual_mw"),
    ({"signals": ["load.actual_mw"], "source": "nope"}, r"Unknown source 'nope'; valid sources: vic, simbench"),
    ({"signals": ["market.mid_price_apx"]}, r"signal 'market.mid_price_apx' is not available; sources providing it: none"),
    ({"signals": ["weather.temperature_c"], "source": "simbench"},
     r"signal 'weather.temperature_c' is not available from source 'simbench'; sources providing it: vic"),
    ({"signals": ["load.actual_pu"]}, r"is given per region; pass region=, valid regions: lv_rural1"),
    ({"signals": ["load.actual_pu"], "region": "mars"}, r"Unknown region 'mars' for signal 'load.actual_pu'; valid regions"),
    ({"signals": ["load.actual_mw"], "region": "mv_rural"}, r"signal 'load.actual_mw' has no regions; drop region='mv_rural'"),
    ({"signals": []}, r"signals must name at least one signal"),
    ({"signals": ["load.actual_mw", "load.actual_mw"]}, r"signals are requested twice: load.actual_mw"),
    ({"signals": ["load.actual_mw"], "resample": "7min"}, r"does not divide a day \(1440 min\); valid choices in minutes: 1, 2, 3"),
    ({"signals": ["load.actual_mw"], "resample": "30 seconds"}, r"Unknown resolution '30 seconds'; use '<n>min'"),
    ({"signals": ["load.actual_mw"], "resample": "20min"},
     r"cannot resample from 30 min to 20 min .*valid choices in minutes: 1, 2, 3, 5, 6, 10, 15, 30, 60"),
    ({"signals": ["load.actual_mw"], "start_date": "2013-12-01"},
     r"outside the data of dataset 'vic_demand_2014', which covers 2014-01-01T00:00 .. 2014-12-31T23:30"),
    ({"signals": ["load.actual_mw"], "end_date": "2015-01-01"}, r"outside the data of dataset 'vic_demand_2014'"),
    ({"signals": ["load.actual_mw"], "start_date": "2014-05-02", "end_date": "2014-05-01"},
     r"start_date 2014-05-02T00:00 is after end_date 2014-05-01T23:59"),
    ({"signals": ["load.actual_mw"], "start_date": "2014-05-01T10:05", "end_date": "2014-05-01T10:20"},
     r"holds no 30-min step of dataset 'vic_demand_2014'"),
    ({"signals": ["load.actual_mw"], "start_date": "May 1st"}, r"Cannot read 'May 1st' as a date; use ISO"),
    ({"signals": ["load.actual_mw"], "split": "test"}, r"Unknown split 'test'; valid splits: train, iid, stress"),
    ({"signals": ["load.actual_mw"], "split": "train", "start_date": "2014-01-01"}, r"pass either split= or start_date="),
    ({"signals": ["datacenter.cpu_util"], "split": "stress"}, r"has no 'stress' window .*its splits: train, iid"),
    ({"signals": ["load.actual_mw"], "interpolation": "cubic"}, r"Unknown interpolation 'cubic'; valid choices: linear, previous"),
    ({"signals": ["load.actual_mw", "datacenter.cpu_util"]}, r"cannot join calendar and profile datasets"),
    ({"signals": ["load.actual_mw", "solar.available_mw"], "source": None},
     None),  # resolves to one dataset: no error
]


@pytest.mark.parametrize(("kwargs", "message"), ERRORS)
def test_bad_requests_name_the_valid_choices(loader, kwargs, message):
    if message is None:
        loader.load_signals(**kwargs)
        return
    with pytest.raises(ValueError, match=message):
        loader.load_signals(**kwargs)


def test_errors_when_datasets_do_not_overlap_or_differ_in_step(data):
    registry = data.default_registry()
    vic = registry.get_manifest("vic_demand_2014")
    sim = registry.get_manifest("simbench_ehv_2016")
    import dataclasses

    # A registry where temperature only exists in 2014 and wind only in 2016.
    custom = data.DatasetRegistry([vic, sim])
    loader = data.DataLoader(registry=custom)
    with pytest.raises(ValueError, match=r"do not overlap in time \(vic_demand_2014: 2014-01-01T00:00"):
        loader.load_signals(["weather.temperature_c", "wind.available_mw"])
    fake = dataclasses.replace(sim, name="simbench_hourly", resolution_minutes=60, source="fake")
    loader = data.DataLoader(registry=data.DatasetRegistry([vic, fake]))
    with pytest.raises(ValueError, match=r"different resolutions \(vic_demand_2014: 30 min, simbench_hourly: 60 min\); pass resample="):
        loader.load_signals(["weather.temperature_c", "wind.available_mw"])


def test_registry_and_helper_errors(data):
    registry = data.default_registry()
    with pytest.raises(ValueError, match=r"Unknown dataset 'x'; valid datasets: vic_demand_2014"):
        registry.get_manifest("x")
    with pytest.raises(ValueError, match=r"duplicate dataset names: vic_demand_2014"):
        data.DatasetRegistry([registry.get_manifest("vic_demand_2014")] * 2)
    with pytest.raises(ValueError, match=r"dataset 'nowhere' has no frozen windows; datasets with windows"):
        data.get_window("nowhere", "train")
    with pytest.raises(ValueError, match=r"ranges overlap: 2016-01-01T00:00 .. 2016-01-31T23:59"):
        data.assert_no_overlap("2016-01-01", "2016-01-31", "2016-01-31", "2016-02-28")
    with pytest.raises(ValueError, match=r"ends before it starts"):
        data.assert_no_overlap("2016-02-01", "2016-01-01", "2017-01-01", "2017-01-02")
    with pytest.raises(ValueError, match=r"No shipped dataset 'x'; shipped datasets: vic_demand_2014"):
        data.DataLoader().provenance("x")
    with pytest.raises(ValueError, match=r"regions must be a non-empty sequence"):
        data.DataLoader().load_region_profiles("load.actual_pu", regions="mv_rural")
    with pytest.raises(ValueError, match=r"not given per region by any dataset"):
        data.DataLoader().load_region_profiles("load.actual_mw")
    with pytest.raises(ValueError, match=r"signal 'x' is not in this frame; it holds: load.actual_mw"):
        data.DataLoader().load_signals(["load.actual_mw"]).column("x")
    assert data.parse_resolution("1D") == 1440 and data.parse_resolution(" 2H ") == 120
