"""The reference's data API: frozen windows, Ausgrid pools / roles / reader, TimeAligner,
and the data-centre microgrid profile makers."""

import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

# ----------------------------------------------------------------------------- splits


def test_window_constants():
    from powerzoojax.data import splits

    assert (splits.GB_TRAIN_START, splits.GB_TRAIN_END) == ("2025-04-01", "2025-12-31")
    assert (splits.GB_IID_START, splits.GB_IID_END) == ("2026-01-01", "2026-03-31")
    assert splits.gb_windows() == {"train": ("2025-04-01", "2025-12-31"), "iid": ("2026-01-01", "2026-03-31")}
    train, iid, summer = splits.ausgrid_windows()
    assert train == iid == ("2024-05-01", "2024-11-30") and summer == ("2024-12-01", "2025-02-28")
    splits.assert_no_overlap(*train, *summer)
    splits.assert_no_overlap(splits.GB_TRAIN_START, splits.GB_TRAIN_END, splits.GB_IID_START, splits.GB_IID_END)


# ----------------------------------------------------------------------------- Ausgrid pools


def test_feeder_pools_and_roles():
    from powerzoojax.data import ausgrid_utils as au

    assert set(au.AUSGRID_FEEDER_POOLS) == {"feeder_A", "feeder_B", "feeder_C"}
    for pools in au.AUSGRID_FEEDER_POOLS.values():
        assert len(pools["train"]) == 3 and len(pools["zone_holdout"]) == 2
        assert not set(pools["train"]) & set(pools["zone_holdout"])
    assert len(au.AUSGRID_TRAIN_POOL) == 9 and len(au.AUSGRID_ZONE_HOLDOUT_POOL) == 6
    assert not set(au.AUSGRID_TRAIN_POOL) & set(au.AUSGRID_ZONE_HOLDOUT_POOL)
    assert au.get_ausgrid_split("train") == ("2024-05-01", "2024-11-30", au.AUSGRID_TRAIN_POOL)
    assert au.get_ausgrid_split("iid")[2] == au.AUSGRID_TRAIN_POOL
    assert au.get_ausgrid_split("summer_ood")[:2] == ("2024-12-01", "2025-02-28")
    assert au.get_ausgrid_split("zone_holdout") == ("2024-05-01", "2024-11-30", au.AUSGRID_ZONE_HOLDOUT_POOL)
    assert au.get_feeder_substations("feeder_B") == au.AUSGRID_FEEDER_POOLS["feeder_B"]["train"]
    assert au.get_feeder_substations("feeder_B", "summer_ood") == au.AUSGRID_FEEDER_POOLS["feeder_B"]["train"]
    assert au.get_feeder_substations("feeder_C", "zone_holdout") == au.AUSGRID_FEEDER_POOLS["feeder_C"]["zone_holdout"]
    with pytest.raises(KeyError, match="unknown Ausgrid split role 'test'"):
        au.get_ausgrid_split("test")
    with pytest.raises(KeyError, match="unknown feeder 'feeder_D'"):
        au.get_feeder_substations("feeder_D")
    # The returned lists are copies: editing one leaves the pools alone.
    au.get_ausgrid_split("train")[2].append("x")
    assert len(au.AUSGRID_TRAIN_POOL) == 9


def _long_table(names, start, n_steps, drop=None, minutes=15):
    stamps = np.datetime64(start, "m") + np.arange(n_steps) * np.timedelta64(minutes, "m")
    rows_t, rows_r = [], []
    for name in names:
        keep = np.ones(n_steps, bool)
        for lo, hi in (drop or {}).get(name, []):
            keep[lo:hi] = False
        rows_t.append(stamps[keep])
        rows_r.append(np.full(int(keep.sum()), name))
    return {"datetime": np.concatenate(rows_t), "region": np.concatenate(rows_r)}


def test_select_full_coverage_substations():
    from powerzoojax.data import select_full_coverage_substations

    day = 96
    table = _long_table(
        ["ok", "gap2", "gap3", "late"], "2024-05-01", 2 * day,
        drop={"gap2": [(10, 12), (50, 52)], "gap3": [(20, 23)], "late": [(0, day)]},
    )
    chosen = select_full_coverage_substations(table, "2024-05-01", "2024-05-02")
    assert chosen == ["gap2", "ok"]
    assert select_full_coverage_substations(table, "2024-05-01", "2024-05-02", max_gap_steps=3) == ["gap2", "gap3", "ok"]
    # "late" misses the whole first day but covers the second.
    assert "late" in select_full_coverage_substations(table, "2024-05-02", "2024-05-02")
    # A window after the data: nobody has a row in it.
    assert select_full_coverage_substations(table, "2024-06-01", "2024-06-01") == []
    with pytest.raises(ValueError, match="max_gap_steps"):
        select_full_coverage_substations(table, "2024-05-01", "2024-05-02", max_gap_steps=-1)


def _ausgrid_csv(path, substations, start="2024-05-01", days=8, minutes=15):
    """A synthetic file in the published long layout: load = base_k + day index (local)."""
    import pandas as pd

    stamps = pd.date_range(pd.Timestamp(start, tz="Australia/Sydney"), periods=days * 24 * 60 // minutes, freq=f"{minutes}min")
    frames = []
    for k, name in enumerate(substations):
        day = (stamps - stamps[0]).days
        frames.append(pd.DataFrame({
            "interval_start": stamps.tz_convert("UTC"), "zone_substation": name, "load_mw": 10.0 * (k + 1) + day,
        }))
    pd.concat(frames).to_csv(path / "Ausgrid_Zone_Substation_FY25_imputed_15min.csv", index=False)


def test_ausgrid_reader_role_days_and_resampling(tmp_path):
    pytest.importorskip("pandas")
    from powerzoojax.data import DataLoader
    from powerzoojax.data import ausgrid_utils as au

    with pytest.raises(FileNotFoundError, match="not shipped"):
        au.find_ausgrid_file(None)
    with pytest.raises(FileNotFoundError, match="holds no Ausgrid"):
        au.find_ausgrid_file(tmp_path)
    pool = au.get_feeder_substations("feeder_A")
    _ausgrid_csv(tmp_path, pool)
    assert au.find_ausgrid_file(DataLoader(data_dir=tmp_path).data_dir).suffix == ".csv"
    frame = au.read_ausgrid_zone_substations(au.find_ausgrid_file(tmp_path))
    assert list(frame.columns) == ["datetime", "region", "load.actual_mw"] and len(frame) == 3 * 8 * 96
    iid = au.filter_ausgrid_role_days(frame, "iid")
    train = au.filter_ausgrid_role_days(frame, "train")
    assert len(iid) + len(train) == len(frame)
    # Local days 0 and 4 of the 8 are iid (every fourth, from the first).
    local_days = sorted(set(iid["datetime"].dt.tz_convert("Australia/Sydney").dt.day))
    assert local_days == [1, 5]
    assert au.filter_ausgrid_role_days(frame, "summer_ood") is frame
    loads = au.load_substation_profiles(tmp_path, pool, "iid", resample="30min")
    assert loads.shape == (2 * 48, 3)
    np.testing.assert_allclose(loads[:48], [[10, 20, 30]] * 48)  # day 0
    np.testing.assert_allclose(loads[48:], [[14, 24, 34]] * 48)  # day 4
    with pytest.raises(ValueError, match="no 'iid' data for substations"):
        au.load_substation_profiles(tmp_path, ["Nowhere 11kV"], "iid")


# ----------------------------------------------------------------------------- TimeAligner


def test_time_aligner():
    pd = pytest.importorskip("pandas")
    from powerzoojax.data import TimeAligner

    stamps = pd.date_range("2023-01-01", periods=4 * 48, freq="30min", tz="UTC")
    df = pd.DataFrame({"datetime": stamps, "load": np.arange(4 * 48, dtype=float)})
    cut = TimeAligner.align_calendar(df, "2023-01-02", "2023-01-02")
    assert len(cut) == 48 and cut["load"].iloc[0] == 48 and cut["datetime"].iloc[-1] == pd.Timestamp("2023-01-02 23:30", tz="UTC")
    shifted = TimeAligner.align_calendar(df, "2025-06-01", "2025-06-01", align_from="2023-01-03")
    assert len(shifted) == 48 and shifted["load"].iloc[0] == 96 and shifted["datetime"].iloc[0] == pd.Timestamp("2025-06-01", tz="UTC")
    indexed = TimeAligner.align_calendar(df.set_index("datetime"), "2023-01-01", "2023-01-01")
    assert len(indexed) == 48
    profile = pd.DataFrame({"datetime": stamps[:5], "cpu": [0.1, 0.2, 0.3, 0.4, 0.5]})
    tiled = TimeAligner.align_profile(profile, "2024-03-01", "2024-03-01", "1h")
    assert len(tiled) == 24
    np.testing.assert_allclose(tiled["cpu"].to_numpy(), np.tile([0.1, 0.2, 0.3, 0.4, 0.5], 5)[:24], rtol=1e-6)
    assert tiled["datetime"].iloc[1] - tiled["datetime"].iloc[0] == pd.Timedelta("1h")
    np.testing.assert_allclose(
        np.asarray(TimeAligner.tile_profile_jax(jnp.arange(6.0).reshape(3, 2), 7)),
        np.arange(6.0).reshape(3, 2)[np.arange(7) % 3],
    )
    assert TimeAligner.tile_profile_jax(jnp.zeros((0, 2)), 4).shape == (4, 2)
    assert len(TimeAligner.align(df, time_mode="calendar", sim_start="2023-01-01", sim_end="2023-01-01")) == 48
    assert len(TimeAligner.align(profile, time_mode="profile", sim_start="2024-03-01", sim_end="2024-03-01", resolution="30min")) == 48
    with pytest.raises(ValueError, match="unknown time_mode"):
        TimeAligner.align(df, time_mode="relative", sim_start="2023-01-01", sim_end="2023-01-01")
    with pytest.raises(ValueError, match="ends"):
        TimeAligner.align_calendar(df, "2023-01-03", "2023-01-01")


# ----------------------------------------------------------------------------- microgrid profiles


def test_synthetic_profile_makers():
    from powerzoojax.data import dc_microgrid_profiles as mp

    hour = 24.0 * (np.arange(288) % 288) / 288
    cpu = np.asarray(mp.make_synthetic_cpu_profile(), np.float64)
    np.testing.assert_allclose(cpu, np.clip(0.5 + 0.5 * np.sin(2 * math.pi * (hour - 8) / 24), 0.1, 1.0), atol=1e-6)
    assert cpu.min() == pytest.approx(0.1) and cpu.max() == pytest.approx(1.0)
    solar = np.asarray(mp.make_synthetic_solar_profile(), np.float64)
    np.testing.assert_allclose(solar, np.clip(np.sin(math.pi * (hour - 6) / 12), 0, 1), atol=1e-6)
    assert solar[: 6 * 12].max() == 0.0 and solar[12 * 12] == pytest.approx(1.0)
    temp = np.asarray(mp.make_synthetic_outdoor_temp_profile(288, 288, mean_temp=25.0, amplitude=4.0), np.float64)
    np.testing.assert_allclose(temp, 25 + 4 * np.sin(2 * math.pi * (hour - 8) / 24), atol=1e-5)
    price = np.asarray(mp.make_synthetic_price_profile())
    assert price[0] == 55 and price[8 * 12] == 90 and price[18 * 12] == 180 and price[23 * 12 + 6] == 55
    every = mp.make_all_synthetic_profiles(48, 48)
    assert set(every) == {"cpu_profile", "solar_profile", "outdoor_temp_profile"}
    assert all(v.shape == (48,) and v.dtype == jnp.float32 for v in every.values())
    assert mp.VALID_SOURCES == ("google", "azure", "alibaba")
    assert set(mp.VALID_OOD_SCENARIOS) == {"workload_swap", "workload_shock", "renewable_drought", "cooling_stress",
                                           "dg_derating", "sla_tighten"}


def test_cycle_profile():
    from powerzoojax.data import cycle_profile

    arr = jnp.arange(5)
    np.testing.assert_array_equal(np.asarray(cycle_profile(arr, 3)), [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(cycle_profile(arr, 7, 3)), [3, 4, 0, 1, 2, 3, 4])
    assert cycle_profile(arr, 4).dtype == arr.dtype
    assert cycle_profile(jnp.zeros((0,)), 4).shape == (0,)
    with pytest.raises(ValueError, match=">= 0"):
        cycle_profile(arr, -1)


def test_load_workload_profiles_from_the_shipped_trace():
    from powerzoojax.data import DataLoader, load_workload_profile, load_workload_profiles, solar_cf_5min

    with pytest.warns(UserWarning, match="price profile"):  # GB MID prices are not shipped
        out = load_workload_profiles("google", episode_len=100, start_step=250)
    assert set(out) == {"cpu_profile", "solar_profile", "price_profile", "outdoor_temp_profile"}
    trace = load_workload_profile("google").cpu_util
    np.testing.assert_allclose(np.asarray(out["cpu_profile"]), trace[(250 + np.arange(100)) % trace.size], rtol=1e-6)
    solar, label = solar_cf_5min(DataLoader())
    assert label.startswith("benchmark:simbench")
    np.testing.assert_allclose(np.asarray(out["solar_profile"]), solar[250:350], rtol=1e-6)
    hour = 24.0 * ((250 + np.arange(100)) % 288) / 288
    np.testing.assert_allclose(np.asarray(out["outdoor_temp_profile"]), 20 + 8 * np.sin(2 * math.pi * (hour - 8) / 24), atol=1e-4)
    with pytest.raises(ValueError, match="unknown workload source 'aws'"):
        load_workload_profiles("aws")
    with pytest.raises(ValueError, match="manifest_dir"):
        load_workload_profiles("google", manifest_dir="/tmp")


def test_load_workload_profiles_fallback(monkeypatch):
    from powerzoojax.data import DataUnavailableError
    from powerzoojax.data import dc_microgrid_profiles as mp

    def absent(source, **kwargs):
        raise DataUnavailableError(f"no {source} trace")

    monkeypatch.setattr(mp, "load_workload_profile", absent)
    with pytest.warns(UserWarning, match="SYNTHETIC"):
        out = mp.load_workload_profiles("azure", episode_len=10, start_step=5)
    np.testing.assert_allclose(np.asarray(out["cpu_profile"]), np.asarray(mp.make_synthetic_cpu_profile())[5:15], rtol=1e-6)
    with pytest.raises(FileNotFoundError, match="require_real_data"):
        mp.load_workload_profiles("azure", require_real_data=True)

    def broken(source, **kwargs):
        raise RuntimeError("bad file")

    monkeypatch.setattr(mp, "load_workload_profile", broken)
    with pytest.raises(RuntimeError, match="bad file"):
        mp.load_workload_profiles("google")
    with pytest.warns(UserWarning, match="SYNTHETIC"):
        mp.load_workload_profiles("google", episode_len=4, strict=False)


def test_real_price_profile_needs_gb_files():
    from powerzoojax.data import make_real_solar_profile
    from powerzoojax.data.dc_microgrid_profiles import make_real_price_profile, make_synthetic_price_profile

    with pytest.warns(UserWarning, match="SYNTHETIC"):
        price = make_real_price_profile(12, start_step=100)
    np.testing.assert_allclose(np.asarray(price), np.asarray(make_synthetic_price_profile())[100:112])
    with pytest.raises(FileNotFoundError, match="require_real_data"):
        make_real_price_profile(require_real_data=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the shipped SimBench solar needs no fallback
        assert make_real_solar_profile(20).shape == (20,)
