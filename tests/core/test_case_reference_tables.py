"""Shipped reference benchmark tables (the default ids) against their JSON source files,
and their provenance.

The JSON files are kept in ``tests/data/reference_cases/`` (byte for byte the extraction
that ``scripts/build_cases.py`` converts; see ``tests/data/README.md``). Each case is re-read
here straight from its JSON file and every `CaseData` field compared with the builder rules
written out independently of ``powerzoojax.case._tables``.
"""

import hashlib
import importlib.resources
import importlib.util
import json
import pathlib
import re

import numpy as np
import pytest
from powerzoojax.case import get_meta, list_cases, load_case

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SHIPPED = pathlib.Path(str(importlib.resources.files("powerzoojax.case") / "data" / "reference"))
REFERENCE_IDS = [
    "5", "14", "29gb", "33bw", "123", "118", "118zh", "123_1ph", "141", "300", "533mt_hi",
    "533mt_lo", "552gb", "1354pegase", "2383wp",
]  # fmt: skip
# Dense PTDFs of the two large cases take seconds to build.
REFERENCE_PARAMS = [
    pytest.param(c, marks=pytest.mark.slow) if c in ("1354pegase", "2383wp") else c
    for c in REFERENCE_IDS
]
RTOL = 2e-7  # float32 storage of the float64 table values
FUEL = {"nuclear": 1, "coal": 2, "gas": 3, "oil": 4, "hydro": 5, "wind": 6, "solar": 7}
# Numeric JSON columns no CaseData field reads: the reference builder ignores them too
# (loads' own Pd/Qd and bid costs, node Vm start values, MATPOWER's Pmax/Pmin beside the
# benchmark p_max/p_min, case29gb's line susceptance s, case123's line config and length).
UNREAD = {
    "nodes": {"Vm"},
    "units": {"Pmax", "Pmin"},
    "lines": {"s", "config_name", "length"},
    "loads": {"Pd", "Qd", "Pd_A", "Qd_A", "Pd_B", "Qd_B", "Pd_C", "Qd_C", "mc_a", "mc_b", "mc_c"},
}


REFERENCE_DIR = REPO_ROOT / "tests" / "data" / "reference_cases"


def _json(case_id: str) -> dict:
    return json.loads((REFERENCE_DIR / f"case{case_id}.json").read_text())


def _columns(doc: dict, table: str) -> dict[str, list]:
    t = doc["tables"][table]
    return {c: [row[j] for row in t["rows"]] for j, c in enumerate(t["columns"])}


def _num(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=RTOL, atol=1e-12)


def _manifest() -> dict:
    return json.loads((SHIPPED / "manifest.json").read_text())


# ---------------------------------------------------------------------------------------
# Every field against the JSON file.


def test_every_json_file_is_a_registered_default_id():
    ids = sorted(p.stem.removeprefix("case") for p in REFERENCE_DIR.glob("case*.json"))
    assert ids == sorted(REFERENCE_IDS) == sorted(list_cases())


@pytest.mark.parametrize("case_id", REFERENCE_PARAMS)
def test_nodes_match_json(case_id):
    doc, case = _json(case_id), load_case(case_id)
    nodes = _columns(doc, "nodes")
    n = len(nodes["id"])
    assert case.n_nodes == n
    assert case.base_mva == doc["builder_kwargs"]["base_mva"]
    np.testing.assert_array_equal(case.node_ids, nodes["id"])
    default = lambda col, value: _num(nodes[col]) if col in nodes else np.full(n, value)  # noqa: E731
    if "type" in nodes:
        types = _num(nodes["type"])
        slack = int(np.flatnonzero(types == 3)[0]) if np.any(types == 3) else 0
        np.testing.assert_array_equal(case.node_type, types)
    else:
        slack = 0
        np.testing.assert_array_equal(case.node_type, [3] + [1] * (n - 1))
    assert case.slack_bus_idx == slack
    phases = ("Pd_A", "Qd_A", "Pd_B", "Qd_B", "Pd_C", "Qd_C")
    if all(p in nodes for p in phases):
        pd = _num(nodes["Pd_A"]) + _num(nodes["Pd_B"]) + _num(nodes["Pd_C"])
        qd = _num(nodes["Qd_A"]) + _num(nodes["Qd_B"]) + _num(nodes["Qd_C"])
        for p in phases:
            _close(getattr(case, f"node_{p.lower()}"), _num(nodes[p]))
    else:
        pd, qd = default("Pd", 0.0), default("Qd", 0.0)
        assert case.node_pd_a is None and case.node_qd_c is None
    np.testing.assert_allclose(np.asarray(case.node_pd, np.float64), pd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(case.node_qd, np.float64), qd, rtol=1e-6, atol=1e-9)
    _close(case.node_gs, default("Gs", 0.0))
    _close(case.node_bs, default("Bs", 0.0))
    _close(case.node_v_min, default("Vmin", 0.94))
    _close(case.node_v_max, default("Vmax", 1.06))
    _close(case.node_base_kv, default("baseKV", 0.0))
    _close(case.node_va_deg, default("Va", 0.0))
    _close(case.node_x, default("x", 0.0))
    _close(case.node_y, default("y", 0.0))


@pytest.mark.parametrize("case_id", REFERENCE_PARAMS)
def test_units_match_json(case_id):
    doc, case = _json(case_id), load_case(case_id)
    units = _columns(doc, "units")
    g = len(units["id"])
    assert case.n_units == g
    default = lambda col, value: _num(units[col]) if col in units else np.full(g, value)  # noqa: E731
    np.testing.assert_array_equal(case.unit_ids, units["id"])
    np.testing.assert_array_equal(case.unit_bus_ids, units["bus_id"])
    node_ids = np.asarray(case.node_ids)
    np.testing.assert_array_equal(node_ids[np.asarray(case.unit_node_idx)], units["bus_id"])
    _close(case.unit_p_max, _num(units["p_max"] if "p_max" in units else units["Pmax"]))
    _close(case.unit_p_min, _num(units["p_min"] if "p_min" in units else units["Pmin"]))
    _close(case.unit_cost_a, default("mc_a", 0.0))
    _close(case.unit_cost_b, default("mc_b", 0.0))
    _close(case.unit_cost_c, default("mc_c", 0.0))
    _close(case.unit_q_min, default("Qmin", -np.inf))
    _close(case.unit_q_max, default("Qmax", np.inf))
    _close(case.unit_pg, default("Pg", 0.0))
    _close(case.unit_qg, default("Qg", 0.0))
    _close(case.unit_vg, default("Vg", 1.0))
    _close(case.unit_mbase, default("mBase", doc["builder_kwargs"]["base_mva"]))
    np.testing.assert_array_equal(case.unit_status, default("status", 1.0))
    uc = {
        "ramp_up": "unit_ramp_up", "ramp_down": "unit_ramp_down",
        "min_up_time": "unit_min_up_time", "min_down_time": "unit_min_down_time",
        "init_power": "unit_init_power", "init_state": "unit_init_state",
        "init_start_up_cost": "unit_startup_cost", "init_no_load_cost": "unit_no_load_cost",
        "keep_time": "unit_keep_time",
    }  # fmt: skip
    for column, field in uc.items():
        if column in units:
            _close(getattr(case, field), _num(units[column]))
        else:
            assert getattr(case, field) is None, field
    if "type" in units:
        codes = [FUEL.get(name, 0) for name in units["type"]]
        np.testing.assert_array_equal(case.unit_fuel_type, codes)
    else:
        assert case.unit_fuel_type is None


@pytest.mark.parametrize("case_id", REFERENCE_PARAMS)
def test_lines_match_json(case_id):
    doc, case = _json(case_id), load_case(case_id)
    lines = _columns(doc, "lines")
    n_lines = len(lines["id"])
    assert case.n_lines == n_lines
    default = lambda col, value: _num(lines[col]) if col in lines else np.full(n_lines, value)  # noqa: E731
    np.testing.assert_array_equal(case.line_ids, lines["id"])
    np.testing.assert_array_equal(case.line_from, lines["from"])
    np.testing.assert_array_equal(case.line_to, lines["to"])
    _close(case.line_x, default("x", 0.01))
    _close(case.line_r, default("r", 0.0))
    _close(case.line_b, default("b", 0.0))
    cap, floor = default("cap", 0.0), default("floor", 0.0)
    _close(case.line_cap, np.where(cap == 0, 1e6, cap))
    _close(case.line_floor, np.where(floor == 0, -1e6, floor))
    _close(case.line_rate_a, default("rateA", 0.0))
    ratio = default("ratio", 1.0)
    _close(case.line_ratio, np.where(ratio == 0, 1.0, ratio))
    _close(case.line_angle, default("angle", 0.0))
    np.testing.assert_array_equal(case.line_status, default("status", 1.0))


@pytest.mark.parametrize("case_id", REFERENCE_PARAMS)
def test_loads_match_json(case_id):
    doc, case = _json(case_id), load_case(case_id)
    loads = _columns(doc, "loads")
    assert case.n_loads == len(loads["id"])
    np.testing.assert_array_equal(case.load_ids, loads["id"])
    np.testing.assert_array_equal(case.load_bus_ids, loads["bus_id"])
    _close(case.load_d_max, _num(loads["d_max"]))
    _close(case.load_d_min, _num(loads["d_min"]))
    bus_map = np.asarray(case.nodes_loads_map)
    node_of_load = np.asarray(case.node_ids)[bus_map.argmax(axis=0)]
    np.testing.assert_array_equal(node_of_load, loads["bus_id"])
    np.testing.assert_array_equal(bus_map.sum(axis=0), 1.0)


@pytest.mark.parametrize("case_id", REFERENCE_IDS)
def test_every_numeric_json_column_is_read_or_listed(case_id):
    doc = _json(case_id)
    read = {
        "nodes": {"id", "type", "Pd", "Qd", "Gs", "Bs", "Vmin", "Vmax", "baseKV", "Va", "x", "y",
                  "Pd_A", "Qd_A", "Pd_B", "Qd_B", "Pd_C", "Qd_C"},
        "units": {"id", "bus_id", "p_max", "p_min", "mc_a", "mc_b", "mc_c", "Qmin", "Qmax", "Pg",
                  "Qg", "Vg", "mBase", "status", "type", "ramp_up", "ramp_down", "min_up_time",
                  "min_down_time", "init_power", "init_state", "init_start_up_cost",
                  "init_no_load_cost", "keep_time"},
        "lines": {"id", "from", "to", "x", "r", "b", "cap", "floor", "rateA", "ratio", "angle",
                  "status"},
        "loads": {"id", "bus_id", "d_max", "d_min"},
    }  # fmt: skip
    for table, columns in read.items():
        present = set(doc["tables"][table]["columns"])
        text = {c for c, v in _columns(doc, table).items() if isinstance(v[0], str)}
        if table == "units" and "p_max" not in present:
            columns = columns | {"Pmax", "Pmin"}
        unread = present - columns - (text - {"type"} if table == "units" else text)
        assert unread <= UNREAD[table], (table, unread - UNREAD[table])


# ---------------------------------------------------------------------------------------
# Reference checkpoint constants (spec table sums).


def test_reference_table_totals():
    case5 = load_case("5")
    assert float(case5.node_pd.sum()) == pytest.approx(1000.0)
    assert float(case5.node_qd.sum()) == pytest.approx(328.7, abs=1e-4)
    assert float(case5.load_d_max.sum()) == pytest.approx(1500.0)
    assert float(case5.load_d_min.sum()) == 0.0
    assert float(case5.unit_p_max.sum()) == pytest.approx(1530.0)
    np.testing.assert_allclose((case5.load_d_max + case5.load_d_min) / 2, [0, 250, 300, 200, 0])
    case118 = load_case("118")
    assert (case118.n_units, case118.n_lines) == (54, 186)
    assert float(case118.node_pd.sum()) == pytest.approx(4242.0)
    assert float(case118.unit_p_max.sum()) == pytest.approx(9634.0)
    assert int(case118.node_ids[case118.slack_bus_idx]) == 69
    case33 = load_case("33bw")
    assert float(case33.node_pd.sum()) == pytest.approx(3.715, abs=1e-5)
    assert float(case33.node_qd.sum()) == pytest.approx(2.3, abs=1e-5)
    assert int(case33.line_status.sum()) == 32


# ---------------------------------------------------------------------------------------
# Provenance.


def test_manifest_records_provenance_for_every_shipped_file():
    manifest = _manifest()
    source = manifest["source"]
    assert source["licence"]["spdx"] == "MIT"
    assert source["licence"]["notice"] == "NOTICE"
    assert "PowerZooJax Contributors" in source["licence"]["copyright"]
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    shipped = sorted(p.name for p in SHIPPED.glob("*.npz"))
    assert shipped == sorted(entry["file"] for entry in manifest["cases"].values())
    assert sorted(manifest["cases"]) == sorted(REFERENCE_IDS)
    for case_id, entry in manifest["cases"].items():
        data = (SHIPPED / entry["file"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), case_id
        assert entry["commit"] == source["commit"]
        assert entry["licence"]["spdx"] == "MIT"
        assert entry["source"] == (
            f"PowerZooJax (MIT licence), commit {entry['commit']}, file {entry['source_file']}"
        )
        assert entry["source_file"].startswith("powerzoojax/case/cases/")
        assert entry["source_file"].endswith(f"/case{case_id}.py")
        assert entry["json_file"] == f"case{case_id}.json"
        meta = get_meta(case_id)
        assert meta.tables == "reference"
        assert meta.source.startswith("reference: ")
        assert entry["source_file"] in meta.source and entry["commit"] in meta.source
        assert meta.grid_type == entry["grid_type"]
    assert manifest["cases"]["123"]["dropped_text_columns"] == {"lines": ["type"]}


def test_notice_keeps_the_mit_licence():
    notice = (SHIPPED / "NOTICE").read_text()
    assert "Copyright (c) 2026 PowerZooJax Contributors" in notice
    assert "Permission is hereby granted, free of charge" in notice
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in notice
    assert sorted(p.name for p in SHIPPED.iterdir()) == sorted(
        [f"case{c}.npz" for c in REFERENCE_IDS] + ["manifest.json", "NOTICE"]
    )


def test_manifest_hashes_the_json_sources_and_licence():
    manifest = _manifest()
    licence = (REFERENCE_DIR / "LICENSE-PowerZooJax").read_text()
    assert licence.rstrip("\n") in (SHIPPED / "NOTICE").read_text()
    assert manifest["source"]["licence"]["licence_sha256"] == hashlib.sha256(
        licence.encode()
    ).hexdigest()
    for case_id, entry in manifest["cases"].items():
        raw = (REFERENCE_DIR / entry["json_file"]).read_bytes()
        assert entry["json_sha256"] == hashlib.sha256(raw).hexdigest(), (
            f"{entry['json_file']} changed; re-run scripts/build_cases.py"
        )
        assert entry["source"] == json.loads(raw)["source"]


def test_build_script_reproduces_shipped_reference_files(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "build_cases", REPO_ROOT / "scripts" / "build_cases.py"
    )
    build_cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_cases)
    rebuilt = build_cases.build_all(tmp_path, REFERENCE_DIR, collections=("reference",))
    assert sorted(rebuilt) == sorted(f"reference/{p.name}" for p in SHIPPED.iterdir())
    for name, content in rebuilt.items():
        assert content == (SHIPPED / name.removeprefix("reference/")).read_bytes(), name


def test_test_data_files_match_their_recorded_checksums():
    """tests/data/README.md lists every data file with its SHA-256 (its provenance record)."""
    data = REPO_ROOT / "tests" / "data"
    listed = dict(
        (name, digest)
        for digest, name in re.findall(r"^    ([0-9a-f]{64})  (\S+)$", (data / "README.md").read_text(), flags=re.MULTILINE)
    )
    present = sorted(p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file() and p.name != "README.md")
    assert sorted(listed) == present, "tests/data/README.md must list exactly the files of tests/data"
    for name, digest in listed.items():
        assert hashlib.sha256((data / name).read_bytes()).hexdigest() == digest, f"tests/data/{name} changed"
    assert (data / "gb" / "LICENSE-PowerZooJax").read_bytes() == (data / "reference_cases" / "LICENSE-PowerZooJax").read_bytes()
