"""GB open-data readers: the Elexon files in ``tests/data/gb`` (read in place; see the README
there for their source, licence and re-encoding), and NESO / generation-by-type readers on
small files generated here from the published ``.schema.json`` column lists (those source
files are large and not in the repository)."""

import json
import pathlib

import numpy as np
import pytest

pd = pytest.importorskip("pandas", reason="GB readers need pandas (pzj-core[data])")

GB_DIR = pathlib.Path(__file__).resolve().parents[1] / "data" / "gb"
try:
    import pyarrow  # noqa: F401

    HAVE_PYARROW = True
except ModuleNotFoundError:
    HAVE_PYARROW = False
needs_pyarrow = pytest.mark.skipif(not HAVE_PYARROW, reason="reading parquet needs pyarrow (pzj-core[data])")

DEMAND = "GB_Forecast_Actual_Demand_2023_2025_30min"
MID = "MID_GB_30min_aligned_to_gen"


def _sidecar(stem: str) -> dict:
    return json.loads((GB_DIR / f"{stem}.json").read_text())


def _schema(stem: str) -> dict:
    return json.loads((GB_DIR / f"{stem}.schema.json").read_text())


def _check_samples(frame, sidecar: dict, mapping: dict[str, str]) -> None:
    for row in sidecar["sample_data"].values():
        stamp = np.datetime64(row["startTime"].replace("+00:00", ""), "m")
        index = int(np.flatnonzero(frame.timestamps == stamp)[0])
        for signal, column in mapping.items():
            assert frame.column(signal)[index] == pytest.approx(row[column]), (stamp, signal)


@needs_pyarrow
def test_elexon_demand_reader_on_the_elexon_file():
    from powerzoojax.data import read_elexon_demand

    sidecar = _sidecar(DEMAND)
    frame = read_elexon_demand(GB_DIR / f"{DEMAND}.parquet")
    assert len(frame) == sidecar["shape"]["rows"]
    assert frame.signals == ("load.actual_mw", "load.forecast_da_mw")
    assert str(frame.timestamps[0]) == "2023-07-05T00:00" and str(frame.timestamps[-1]) == "2026-04-05T23:30"
    assert (np.diff(frame.timestamps).astype(np.int64) > 0).all()
    assert np.isnan(frame.column("load.forecast_da_mw")).sum() == sidecar["numeric_statistics"]["DAForecast"]["missing"]
    _check_samples(frame, sidecar, {"load.actual_mw": "Actual", "load.forecast_da_mw": "DAForecast"})


@needs_pyarrow
def test_elexon_mid_reader_on_the_elexon_file():
    from powerzoojax.data import read_elexon_mid

    sidecar = _sidecar(MID)
    frame = read_elexon_mid(GB_DIR / f"{MID}.parquet")
    assert len(frame) == sidecar["shape"]["rows"]
    _check_samples(frame, sidecar, {
        "market.mid_price_apx": "mid_price_APXMIDP", "market.mid_price_n2ex": "mid_price_N2EXMIDP",
        "market.mid_volume_apx": "mid_volume_APXMIDP", "market.mid_volume_n2ex": "mid_volume_N2EXMIDP",
    })
    assert frame.column("market.mid_price_apx").mean() == pytest.approx(
        sidecar["numeric_statistics"]["mid_price_APXMIDP"]["mean"], rel=1e-9)


@needs_pyarrow
def test_loader_reads_gb_files_with_documented_gap_filling():
    from powerzoojax.data import DataLoader, gb_windows

    loader = DataLoader(data_dir=GB_DIR)
    assert loader.list_datasets()[-2:] == ["gb_forecast_actual_demand", "gb_market_mid"]
    lo, hi = loader.time_range("gb_forecast_actual_demand")
    assert (str(lo), str(hi)) == ("2023-07-05T00:00", "2026-04-05T23:30")
    full = loader.load_signals(["load.actual_mw", "load.forecast_da_mw"], source="gb")
    assert len(full) == 1006 * 48  # 5 absent half hours are inserted, then filled
    assert np.isfinite(full.values).all()
    raw = loader.load_data("gb_forecast_actual_demand")
    assert int(np.isnan(raw.values[:, 0]).sum()) == 5
    assert int(full.filled[:, 0].sum()) == 5 and int(full.filled[:, 1].sum()) == 1536 + 5
    # Linear filling: a filled value lies between its valid neighbours.
    gap = np.flatnonzero(full.filled[:, 0])[0]
    before, after = full.values[gap - 1, 0], full.values[gap + 1, 0]
    assert min(before, after) <= full.values[gap, 0] <= max(before, after)

    train = loader.load_jax_profiles(["load.actual_mw", "market.mid_price_apx"], source="gb", split="train")
    start, end = gb_windows()["train"]
    assert train.shape == ((np.datetime64(end) - np.datetime64(start) + 1).astype(int) * 48, 2)
    assert np.isfinite(np.asarray(train)).all()
    hourly = loader.load_signals(["market.mid_price_apx"], source="gb", split="iid", resample="1h")
    assert len(hourly) == 90 * 24
    # Without source the shipped measured series still wins.
    assert loader.load_signals(["load.actual_mw"]).datasets == ("vic_demand_2014",)
    with pytest.raises(ValueError, match=r"outside the data of dataset 'gb_forecast_actual_demand'"):
        loader.load_signals(["load.actual_mw"], source="gb", start_date="2023-01-01")


# ---------------------------------------------------------------------------------------
# Readers against the published schemas, on generated files.

NESO = "GB_NESO_Demand_2009_2025_30min"
GEN = "GB_Gen_by_Type_2016_2025_30min"


def _neso_table(columns, days):
    rows = []
    for day, n_periods in days:
        for period in range(1, n_periods + 1):
            row = {c: 0 for c in columns}
            row.update(SETTLEMENT_DATE=day, SETTLEMENT_PERIOD=period, ND=20_000 + 10 * period)
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


# UK clock changes in 2024: 31 March (46 periods) and 27 October (50 periods).
NESO_DAYS = [("2024-03-30", 48), ("2024-03-31", 46), ("2024-04-01", 48),
             ("2024-10-26", 48), ("2024-10-27", 50), ("2024-10-28", 48)]


@pytest.mark.parametrize("form", ["csv_iso", "csv_neso_dates", "parquet"])
def test_neso_reader_follows_the_schema_across_clock_changes(tmp_path, form):
    from powerzoojax.data import read_neso_demand

    schema = _schema(NESO)
    table = _neso_table(schema["columns"], NESO_DAYS)
    if form == "csv_neso_dates":
        table["SETTLEMENT_DATE"] = pd.to_datetime(table["SETTLEMENT_DATE"]).dt.strftime("%d-%b-%Y").str.upper()
    if form == "parquet":
        if not HAVE_PYARROW:
            pytest.skip("reading parquet needs pyarrow")
        table["SETTLEMENT_DATE"] = pd.to_datetime(table["SETTLEMENT_DATE"])
        path = tmp_path / f"{NESO}.parquet"
        table.to_parquet(path)
    else:
        path = tmp_path / f"{NESO}.csv"
        table.to_csv(path, index=False)
    frame = read_neso_demand(path)
    assert frame.signals == ("load.actual_mw",)
    assert len(frame) == sum(n for _, n in NESO_DAYS)
    stamps = frame.timestamps
    # Settlement periods are UK local half hours; in UTC each 3-day block is gap-free.
    spring, autumn = stamps[: 48 + 46 + 48], stamps[48 + 46 + 48:]
    for block in (spring, autumn):
        assert (np.diff(block).astype(np.int64) == 30).all()
    assert str(spring[0]) == "2024-03-30T00:00" and str(spring[-1]) == "2024-04-01T22:30"
    assert str(autumn[0]) == "2024-10-25T23:00" and str(autumn[-1]) == "2024-10-28T23:30"
    np.testing.assert_array_equal(frame.values[:3, 0], [20_010, 20_020, 20_030])


def test_loader_uses_a_neso_file_and_fills_missing_rows(tmp_path):
    from powerzoojax.data import DataLoader

    table = _neso_table(_schema(NESO)["columns"], [("2024-06-01", 48), ("2024-06-02", 48)])
    table = table.drop(index=[10, 11]).reset_index(drop=True)  # two absent half hours
    table.loc[20, "ND"] = np.nan  # and one blank value
    table.to_csv(tmp_path / f"{NESO}.csv", index=False)
    loader = DataLoader(data_dir=tmp_path)
    frame = loader.load_signals(["load.actual_mw"], source="gb_neso_demand")
    assert len(frame) == 96 and int(frame.filled.sum()) == 3
    assert frame.values[10, 0] == pytest.approx(20_110) and frame.values[11, 0] == pytest.approx(20_120)
    previous = loader.load_signals(["load.actual_mw"], source="gb_neso_demand", interpolation="previous")
    assert previous.values[10, 0] == previous.values[11, 0] == 20_100


def test_generation_reader_derives_wind_from_the_schema_columns(tmp_path):
    from powerzoojax.data import DataLoader, read_elexon_generation

    schema = _schema(GEN)
    n = 96
    stamps = pd.date_range("2024-06-01", periods=n, freq="30min", tz="UTC")
    table = pd.DataFrame({c: np.zeros(n) for c in schema["columns"]})
    table["startTime"] = stamps.strftime("%Y-%m-%dT%H:%M:%SZ")
    table["settlementPeriod"] = np.tile(np.arange(1, 49), 2)
    table["Solar"] = np.linspace(0, 5_000, n)
    table["Wind Offshore"] = 1_000.0
    table["Wind Onshore"] = np.arange(n, dtype=float)
    path = tmp_path / f"{GEN}.csv"
    table.to_csv(path, index=False)
    frame = read_elexon_generation(path)
    assert frame.signals == ("solar.available_mw", "wind.available_mw")
    np.testing.assert_allclose(frame.column("wind.available_mw"), 1_000.0 + np.arange(n))
    np.testing.assert_allclose(frame.column("solar.available_mw"), np.linspace(0, 5_000, n))
    assert str(frame.timestamps[0]) == "2024-06-01T00:00"
    loader = DataLoader(data_dir=tmp_path)
    assert loader.load_jax_profiles(["solar.available_mw", "wind.available_mw"], source="gb").shape == (n, 2)


# ---------------------------------------------------------------------------------------
# Reader errors.


def test_reader_errors(tmp_path):
    from powerzoojax.data import (
        DataLoader,
        read_elexon_demand,
        read_neso_demand,
        read_table,
        settlement_period_starts,
    )

    bad = tmp_path / "demand.csv"
    pd.DataFrame({"startTime": ["2024-01-01T00:00Z"], "Actual": [1.0]}).to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"demand.csv is not a Elexon demand file: missing columns \['DAForecast'\]"):
        read_elexon_demand(bad)
    with pytest.raises(ValueError, match=r"Unsupported file type '.xlsx' for x.xlsx; valid: .parquet, .csv"):
        read_table(tmp_path / "x.xlsx")
    with pytest.raises(FileNotFoundError):
        read_table(tmp_path / "absent.csv")
    with pytest.raises(ValueError, match=r"SETTLEMENT_PERIOD must be 1..50; row 1 has 51"):
        settlement_period_starts(["2024-01-01", "2024-01-01"], [1, 51])
    with pytest.raises(ValueError, match=r"SETTLEMENT_DATE must be ISO dates"):
        settlement_period_starts(["1/2/2024"], [1])
    with pytest.raises(ValueError, match=r"data_dir '.*nowhere' is not a directory"):
        DataLoader(data_dir=tmp_path / "nowhere")
    odd = tmp_path / "odd"
    odd.mkdir()
    pd.DataFrame({"SETTLEMENT_DATE": ["2024-01-01"] * 2, "SETTLEMENT_PERIOD": [1, 2], "ND": [1.0, 2.0]}).to_csv(
        odd / f"{NESO}.csv", index=False)
    assert len(read_neso_demand(odd / f"{NESO}.csv")) == 2
    elexon = tmp_path / "elexon"
    elexon.mkdir()
    pd.DataFrame({"startTime": ["2024-01-01T00:00Z", "2024-01-01T00:10Z"], "DAForecast": [1.0, 2.0],
                  "Actual": [1.0, 2.0]}).to_csv(elexon / f"{DEMAND}.csv", index=False)
    with pytest.raises(ValueError, match=r"timestamp 2024-01-01T00:10 is not on the 30-min grid"):
        DataLoader(data_dir=elexon).load_signals(["load.actual_mw"], source="gb")
    empty = tmp_path / "empty"
    empty.mkdir()
    pd.DataFrame({"startTime": ["2024-01-01T00:00Z"], "DAForecast": [np.nan], "Actual": [np.nan]}).to_csv(
        empty / f"{DEMAND}.csv", index=False)
    with pytest.raises(ValueError, match=r"column 0 has no valid value to fill gaps from"):
        DataLoader(data_dir=empty).load_signals(["load.actual_mw"], source="gb")
