"""Registry behaviour, shapes, dtypes and error messages of `powerzoojax.case`.

Default ids are the reference benchmark tables; ``source="matpower"`` gives MATPOWER's
originals. Checks of MATPOWER's numbers name that source.
"""

import dataclasses
import pathlib
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from powerzoojax.case import (
    CASE_SOURCES,
    GRID_TYPES,
    CaseData,
    CaseMeta,
    case_data_from_matpower,
    gen_cost_coeffs,
    get_meta,
    list_cases,
    load_case,
    polynomial_to_marginal_cost,
    validate_case_data,
)

# Sorted by bus count (case 123 has 114 buses in its table).
ALL_CASES = [
    "5", "14", "29gb", "33bw", "123", "118", "118zh", "123_1ph", "141", "300", "533mt_hi",
    "533mt_lo", "552gb", "1354pegase", "2383wp",
]  # fmt: skip
MATPOWER_CASES = [
    "5", "14", "29gb", "33bw", "118", "118zh", "141", "300", "533mt_hi", "533mt_lo",
    "1354pegase", "2383wp",
]  # fmt: skip
# Building the PTDF of the two large cases takes seconds: their full-data tests are slow.
BIG_CASES = ("1354pegase", "2383wp")
ALL_CASE_PARAMS = [
    pytest.param(source, c, marks=pytest.mark.slow) if c in BIG_CASES else (source, c)
    for source, ids in (("reference", ALL_CASES), ("matpower", MATPOWER_CASES))
    for c in ids
]

INT_FIELDS = {
    "node_ids", "node_type", "unit_ids", "unit_bus_ids", "unit_node_idx", "unit_status",
    "line_ids", "line_from", "line_to", "line_from_idx", "line_to_idx", "line_status",
    "load_ids", "load_bus_ids", "load_node_idx",
}  # fmt: skip
OPTIONAL_INT_FIELDS = {
    "unit_min_up_time", "unit_min_down_time", "unit_init_state", "unit_keep_time",
    "unit_fuel_type",
}  # fmt: skip
OPTIONAL_FIELDS = {
    "unit_ramp_up", "unit_ramp_down", "unit_init_power", "unit_startup_cost",
    "unit_no_load_cost", "node_pd_a", "node_qd_a", "node_pd_b", "node_qd_b", "node_pd_c",
    "node_qd_c", *OPTIONAL_INT_FIELDS,
}  # fmt: skip


# ---------------------------------------------------------------------------------------
# Shapes and totals.


@pytest.mark.parametrize(("source", "total_qd"), [("reference", 328.7), ("matpower", 328.69)])
def test_case5_dimensions_and_totals(source, total_qd):
    case = load_case("5", source=source)
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads) == (5, 5, 6, 5)
    assert case.base_mva == 100.0
    assert case.slack_bus_idx == 0
    assert float(case.node_pd.sum()) == pytest.approx(1000.0)
    assert float(case.node_qd.sum()) == pytest.approx(total_qd, abs=1e-3)
    assert float(case.load_d_max.sum()) == pytest.approx(1500.0)
    assert float(case.load_d_min.sum()) == pytest.approx(0.0)
    assert float(case.unit_p_max.sum()) == pytest.approx(1530.0)
    default_profile = (case.load_d_max + case.load_d_min) / 2
    assert float(default_profile.sum()) == pytest.approx(750.0)
    # Slack at bus 1 (MATPOWER's file moved to match); node types agree with slack_bus_idx.
    assert case.node_type.tolist() == [3, 1, 2, 2, 2]
    assert case.ptdf.shape == case.PTDF.shape == (6, 5)
    np.testing.assert_array_equal(case.PTDF, case.ptdf)


def test_case5_reference_table_values():
    # The benchmark table differs from MATPOWER's file in loads, line r/b and set points.
    case, matpower = load_case("5"), load_case("5", source="matpower")
    np.testing.assert_allclose(case.load_d_max, [0, 500, 600, 400, 0])
    np.testing.assert_allclose(matpower.load_d_max, [0, 450, 450, 600, 0])
    np.testing.assert_allclose(case.line_r, [0.0094, 0.0101, 0.0021, 0.0036, 0.0099, 0.0099])
    np.testing.assert_allclose(case.unit_vg, [1.06, 1.06, 1.01, 1.01, 1.01])
    np.testing.assert_allclose(case.unit_p_min, [5, 10, 20, 10, 20])
    np.testing.assert_array_equal(case.line_cap, [400, 1e6, 1e6, 1e6, 1e6, 240])
    np.testing.assert_array_equal(case.line_floor, [-400, -1e6, -1e6, -1e6, -1e6, -240])
    np.testing.assert_array_equal(case.line_x, matpower.line_x)


@pytest.mark.parametrize(("source", "total_pmax"), [("reference", 9634.0), ("matpower", 9966.2)])
def test_case118_dimensions_and_totals(source, total_pmax):
    case = load_case("118", source=source)
    assert (case.n_nodes, case.n_units, case.n_lines) == (118, 54, 186)
    assert float(case.node_pd.sum()) == pytest.approx(4242.0)
    assert float(case.unit_p_max.sum()) == pytest.approx(total_pmax)
    assert int(case.node_ids[case.slack_bus_idx]) == 69
    # No ratings in case118: every cap is the 1e6 placeholder.
    assert np.all(np.asarray(case.line_rate_a) == 0.0)
    assert np.all(np.asarray(case.line_cap) == 1e6)
    np.testing.assert_array_equal(case.line_floor, -case.line_cap)


def test_reference_uc_and_fuel_columns():
    case118 = load_case("118")
    assert np.bincount(np.asarray(case118.unit_fuel_type), minlength=8).tolist() == [
        0, 5, 32, 17, 0, 0, 0, 0,
    ]  # fmt: skip
    # First unit of the table: ramp 0.7 p_max/h, min up/down 4 steps, off for 96 steps.
    assert float(case118.unit_ramp_up[0]) == pytest.approx(0.7)
    assert int(case118.unit_min_up_time[0]) == 4
    assert int(case118.unit_keep_time[0]) == -96
    assert int(case118.unit_init_state[0]) == 0
    assert float(case118.unit_startup_cost[0]) == pytest.approx(14167.0)
    assert float(case118.unit_no_load_cost[0]) == pytest.approx(941.73)
    gb = load_case("29gb")
    assert (gb.n_nodes, gb.n_units, gb.n_lines, gb.n_loads) == (29, 66, 99, 29)
    assert np.bincount(np.asarray(gb.unit_fuel_type), minlength=8)[1:4].tolist() == [14, 23, 29]
    assert gb.slack_bus_idx == 0  # no node types: the first node
    assert gb.node_type.tolist() == [3] + [1] * 28
    assert float(gb.load_d_max.sum()) == pytest.approx(1.0, abs=1e-5)  # load shares
    for case_id in ("5", "33bw", "300"):
        assert load_case(case_id).unit_ramp_up is None
        assert load_case(case_id).unit_fuel_type is None
    for case_id in MATPOWER_CASES[:-2]:
        assert load_case(case_id, source="matpower").unit_min_up_time is None


def test_case123_per_phase_loads():
    case = load_case("123")
    assert get_meta("123").phase == 3
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads) == (114, 1, 113, 114)
    phase_sum = case.node_pd_a + case.node_pd_b + case.node_pd_c
    np.testing.assert_allclose(case.node_pd, phase_sum, rtol=1e-6)
    np.testing.assert_allclose(case.node_qd, case.node_qd_a + case.node_qd_b + case.node_qd_c)
    assert float(case.node_pd_a[1]) == pytest.approx(0.004)  # bus 2, phase A only
    assert float(case.node_pd_b[1]) == 0.0
    assert load_case("123_1ph").node_pd_a is None


def test_case552gb_fuel_types():
    case = load_case("552gb")
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads) == (552, 2385, 673, 552)
    codes = np.bincount(np.asarray(case.unit_fuel_type), minlength=8)
    # Table names: solar 1301, nuclear 9, hydro 13; 'onwind', 'offwind', 'oil_gas' and
    # 'bioenergy' are not among the builder's fuel names and map to 0.
    assert (codes[7], codes[1], codes[5], codes[0]) == (1301, 9, 13, 770 + 50 + 151 + 91)


def test_case29gb_dimensions_and_totals():
    # pandapower's GBreducednetwork: 64 generators + external grid + static generator,
    # 86 lines + 13 transformers, slack (external grid) at pandapower bus 26 -> id 27.
    case = load_case("29gb", source="matpower")
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads) == (29, 66, 99, 29)
    assert case.base_mva == 100.0
    assert int(case.node_ids[case.slack_bus_idx]) == 27
    assert float(case.node_pd.sum()) == pytest.approx(56325.86, rel=1e-6)
    rate = np.asarray(case.line_rate_a)
    assert np.all(rate > 0)  # every branch rated (thermal limits)
    np.testing.assert_array_equal(case.line_cap, rate)


def test_case533mt_expressions_and_default_cost():
    # The files write baseMVA = 50/3 and baseKV = 135/sqrt(3), 12/sqrt(3); no gencost.
    for case_id, total_pd in (("533mt_hi", 14.8735423), ("533mt_lo", -1.6126956)):
        case = load_case(case_id, source="matpower")
        assert case.base_mva == pytest.approx(50.0 / 3.0, rel=1e-15)
        assert float(case.node_base_kv[0]) == pytest.approx(135.0 / np.sqrt(3.0), rel=1e-7)
        assert float(case.node_base_kv[1]) == pytest.approx(12.0 / np.sqrt(3.0), rel=1e-7)
        assert float(case.node_pd.sum()) == pytest.approx(total_pd, abs=1e-5)
        assert int(case.line_status.sum()) == 532
        assert float(case.unit_p_min[0]) == pytest.approx(-50.0 / 3.0)
        # MATPOWER's feeder cost (case33bw/118zh/141): linear 20 $/MWh.
        assert (float(case.unit_cost_a[0]), float(case.unit_cost_b[0])) == (0.0, 0.0)
        assert float(case.unit_cost_c[0]) == 20.0


@pytest.mark.parametrize("source", CASE_SOURCES)
def test_case33bw_units_and_topology(source):
    # The MATPOWER file lists kW / Ohm and converts in MATLAB code; the shipped data hold
    # MW and p.u., rebased from 10 to 100 MVA (spec table and BFS checkpoint), as the
    # reference table does.
    case = load_case("33bw", source=source)
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads) == (33, 1, 37, 33)
    assert case.base_mva == 100.0
    assert float(case.node_pd.sum()) == pytest.approx(3.715, abs=1e-5)
    assert float(case.node_qd.sum()) == pytest.approx(2.3, abs=1e-5)
    assert float(case.node_pd[1]) == pytest.approx(0.1)
    assert float(case.node_qd[1]) == pytest.approx(0.06)
    assert int(case.line_status.sum()) == 32
    assert case.line_status.tolist()[-5:] == [0, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("source", "case_id", "dims"),
    [
        ("reference", "14", (14, 5, 20, 14)),
        ("reference", "300", (300, 69, 411, 300)),
        ("reference", "141", (141, 1, 140, 141)),
        ("reference", "29gb", (29, 66, 99, 29)),
        ("reference", "123_1ph", (123, 86, 122, 123)),
        ("reference", "533mt_hi", (533, 1, 577, 532)),
        ("reference", "533mt_lo", (533, 1, 577, 533)),
        ("matpower", "14", (14, 5, 20, 14)),
        ("matpower", "300", (300, 69, 411, 300)),
        ("matpower", "141", (141, 1, 140, 141)),
        ("matpower", "29gb", (29, 66, 99, 29)),
        ("matpower", "533mt_hi", (533, 1, 577, 533)),
        ("matpower", "533mt_lo", (533, 1, 577, 533)),
    ],
)
def test_other_case_dimensions(source, case_id, dims):
    case = load_case(case_id, source=source)
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads) == dims


@pytest.mark.parametrize(("source", "case_id"), ALL_CASE_PARAMS)
def test_dtypes_and_shapes(source, case_id):
    case = load_case(case_id, source=source)
    arrays = {
        f.name: getattr(case, f.name)
        for f in dataclasses.fields(case)
        if not f.metadata.get("static", False)
    }
    assert len(arrays) == 51 + len(OPTIONAL_FIELDS)
    for name, value in arrays.items():
        if name in OPTIONAL_FIELDS and value is None:
            continue
        assert isinstance(value, jax.Array), name
        expected = jnp.int32 if name in INT_FIELDS | OPTIONAL_INT_FIELDS else jnp.float32
        assert value.dtype == expected, name
    assert case.incidence.shape == (case.n_lines, case.n_nodes)
    assert case.nodes_units_map.shape == (case.n_nodes, case.n_units)
    assert case.nodes_loads_map.shape == (case.n_nodes, case.n_loads)
    validate_case_data(case)


@pytest.mark.parametrize("source", CASE_SOURCES)
def test_bus_angles_come_from_the_va_column(source):
    # case118 holds its slack (bus 69) at 30 degrees in both tables; case 5 at 0 (the
    # reference table has no Va column).
    case118 = load_case("118", source=source)
    assert int(case118.node_ids[case118.slack_bus_idx]) == 69
    assert float(case118.node_va_deg[case118.slack_bus_idx]) == pytest.approx(30.0)
    case5 = load_case("5", source=source)
    assert float(case5.node_va_deg[case5.slack_bus_idx]) == 0.0


def test_validation_table_covers_every_array_field():
    from powerzoojax.case._case_data import _FIELD_DIMS, _INT_FIELDS, _OPTIONAL_FIELD_DIMS

    array_fields = {
        f.name for f in dataclasses.fields(CaseData) if not f.metadata.get("static", False)
    }
    assert set(_FIELD_DIMS) | set(_OPTIONAL_FIELD_DIMS) == array_fields
    assert set(_OPTIONAL_FIELD_DIMS) == OPTIONAL_FIELDS
    assert set(_INT_FIELDS) == INT_FIELDS | OPTIONAL_INT_FIELDS


@pytest.mark.parametrize(("source", "case_id"), ALL_CASE_PARAMS)
def test_index_and_map_consistency(source, case_id):
    case = load_case(case_id, source=source)
    node_ids = np.asarray(case.node_ids)
    np.testing.assert_array_equal(node_ids[case.unit_node_idx], case.unit_bus_ids)
    np.testing.assert_array_equal(node_ids[case.line_from_idx], case.line_from)
    np.testing.assert_array_equal(node_ids[case.line_to_idx], case.line_to)
    np.testing.assert_array_equal(node_ids[case.load_node_idx], case.load_bus_ids)
    np.testing.assert_array_equal(case.unit_ids, np.arange(1, case.n_units + 1))
    np.testing.assert_array_equal(case.line_ids, np.arange(1, case.n_lines + 1))
    np.testing.assert_array_equal(case.load_ids, np.arange(1, case.n_loads + 1))
    units_map = np.asarray(case.nodes_units_map)
    assert np.all(units_map.sum(axis=0) == 1)
    np.testing.assert_array_equal(units_map.argmax(axis=0), case.unit_node_idx)
    loads_map = np.asarray(case.nodes_loads_map)
    np.testing.assert_array_equal(loads_map.sum(axis=0), 1.0)
    np.testing.assert_array_equal(loads_map.argmax(axis=0), case.load_node_idx)
    if source == "matpower":  # one load per bus
        np.testing.assert_array_equal(loads_map, np.eye(case.n_nodes))
    incidence = np.asarray(case.incidence)
    lines = np.arange(case.n_lines)
    np.testing.assert_array_equal(incidence[lines, case.line_from_idx], 1.0)
    np.testing.assert_array_equal(incidence[lines, case.line_to_idx], -1.0)
    np.testing.assert_array_equal(incidence.sum(axis=1), 0.0)
    np.testing.assert_array_equal(np.asarray(case.ptdf)[:, case.slack_bus_idx], 0.0)
    assert int(case.node_type[case.slack_bus_idx]) == 3


def test_gen_cost_coeffs_stacks_marginal_cost():
    case = load_case("14", source="matpower")
    coeffs = gen_cost_coeffs(case)
    assert coeffs.shape == (5, 3)
    np.testing.assert_array_equal(coeffs[:, 0], case.unit_cost_a)
    np.testing.assert_array_equal(coeffs[:, 1], case.unit_cost_b)
    np.testing.assert_array_equal(coeffs[:, 2], case.unit_cost_c)
    # case14 unit 1: TC = 0.0430292599 p^2 + 20 p -> MC = 0.0860585198 p + 20.
    assert float(coeffs[0, 1]) == pytest.approx(2 * 0.0430292599)
    assert float(coeffs[0, 2]) == pytest.approx(20.0)


def test_polynomial_to_marginal_cost_orders():
    gencost = np.array(
        [
            [2, 0, 0, 4, 1.0, 2.0, 3.0, 4.0],  # cubic
            [2, 0, 0, 3, 2.0, 3.0, 4.0, 0.0],  # quadratic
            [2, 0, 0, 2, 5.0, 6.0, 0.0, 0.0],  # linear
            [2, 0, 0, 1, 7.0, 0.0, 0.0, 0.0],  # constant
        ]
    )
    np.testing.assert_allclose(
        polynomial_to_marginal_cost(gencost),
        [[3.0, 4.0, 3.0, 4.0], [0.0, 4.0, 3.0, 4.0], [0.0, 0.0, 5.0, 6.0], [0.0, 0.0, 0.0, 7.0]],
    )


# ---------------------------------------------------------------------------------------
# Ids, aliases and caching.


@pytest.mark.parametrize("alias", ["5", "case5", "CASE5", "Case5", " case5 ", 5])
def test_case5_aliases_return_the_cached_case(alias):
    assert load_case(alias) is load_case("5")


@pytest.mark.parametrize("alias", ["33", "33bw", "case33", "CASE33BW", 33])
def test_case33bw_aliases(alias):
    assert load_case(alias) is load_case("33bw")
    assert get_meta(alias).case_id == "33bw"


def test_unknown_case_id_lists_valid_ids():
    with pytest.raises(
        ValueError,
        match=r"Unknown case id 'case999' in source 'reference'; valid ids: 5, 14, 29gb, 33bw "
        r"\(alias 33\), 123, 118, ",
    ):
        load_case("case999")
    with pytest.raises(ValueError, match=r"33bw \(alias 33\)"):
        load_case(999)
    with pytest.raises(ValueError, match=r"Unknown case id '552gb' in source 'matpower'; valid"):
        load_case("552gb", source="matpower")


@pytest.mark.parametrize("call", [load_case, get_meta, lambda c, source: list_cases(source=source)])
def test_unknown_source_lists_valid_sources(call):
    with pytest.raises(
        ValueError, match=r"Unknown case source 'pypower'; valid sources: reference, matpower"
    ):
        call("5", source="pypower")


def test_sources_are_separate_cached_cases():
    assert load_case("118", source="reference") is load_case("118")
    assert load_case("118", source="matpower") is load_case("case118", source="matpower")
    assert load_case("118", source="matpower") is not load_case("118")
    assert get_meta("118", source="matpower").tables == "matpower"
    assert get_meta("118").tables == "reference"


def test_get_meta_unknown_id_raises():
    with pytest.raises(ValueError, match="Unknown case id 'nope'"):
        get_meta("nope")


def test_load_case_unknown_grid_type_raises():
    with pytest.raises(ValueError, match="Unknown grid_type 'dist'; valid grid types"):
        load_case("33bw", grid_type="dist")


def test_grid_type_mismatch_only_warns():
    with pytest.warns(UserWarning, match="'33bw' is a distribution case"):
        case = load_case("33bw", grid_type="transmission")
    assert case is load_case("33bw")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_case("5", grid_type="transmission")
        load_case("141", grid_type="distribution")


# ---------------------------------------------------------------------------------------
# list_cases and get_meta.


@pytest.mark.parametrize(("source", "ids"), [("reference", ALL_CASES), ("matpower", MATPOWER_CASES)])
def test_list_cases_sorted_by_bus_count(source, ids):
    assert list_cases(source=source) == ids
    counts = [get_meta(c, source=source).bus_count for c in list_cases(source=source)]
    assert counts == sorted(counts)


def test_list_cases_filters_reference():
    transmission = ["5", "14", "29gb", "118", "300", "552gb", "1354pegase", "2383wp"]
    distribution = ["33bw", "123", "118zh", "123_1ph", "141", "533mt_hi", "533mt_lo"]
    assert list_cases(grid_type="transmission") == transmission
    assert list_cases(grid_type="distribution") == distribution
    assert list_cases(phase=3) == ["123"]
    assert list_cases(phase=1) == [c for c in ALL_CASES if c != "123"]
    assert list_cases(max_buses=33) == ["5", "14", "29gb", "33bw"]
    assert list_cases(voltage_level="MV") == distribution


def test_list_cases_filters_matpower():
    transmission = ["5", "14", "29gb", "118", "300", "1354pegase", "2383wp"]
    distribution = ["33bw", "118zh", "141", "533mt_hi", "533mt_lo"]
    mp = {"source": "matpower"}
    assert list_cases(grid_type="transmission", **mp) == transmission
    assert list_cases(grid_type="distribution", **mp) == distribution
    assert list_cases(min_buses=100, **mp) == [
        "118", "118zh", "141", "300", "533mt_hi", "533mt_lo", "1354pegase", "2383wp",
    ]  # fmt: skip
    assert list_cases(max_buses=33, **mp) == ["5", "14", "29gb", "33bw"]
    assert list_cases(min_buses=30, max_buses=200, grid_type="distribution", **mp) == [
        "33bw",
        "118zh",
        "141",
    ]
    assert list_cases(phase=1, **mp) == MATPOWER_CASES
    assert list_cases(phase=3, **mp) == []
    assert list_cases(voltage_level="MV", **mp) == distribution
    assert list_cases(voltage_level="hv", **mp) == transmission


def test_list_cases_unknown_grid_type_raises():
    with pytest.raises(ValueError, match="Unknown grid_type 'foo'; valid grid types: "
                       "transmission, distribution"):  # fmt: skip
        list_cases(grid_type="foo")


def test_get_meta_fields():
    meta = get_meta("case33")
    assert isinstance(meta, CaseMeta)
    assert meta.case_id == "33bw"
    assert meta.name == "case33bw"
    assert meta.grid_type == "distribution"
    assert meta.bus_count == 33
    assert meta.phase == 1
    assert meta.voltage_level == "MV"
    assert meta.aliases == ("33",)
    assert meta.source.startswith("reference: PowerZooJax benchmark table")
    assert meta.tables == "reference"
    assert meta.description
    matpower = get_meta("case33", source="matpower")
    assert matpower.source.startswith("matpower: MATPOWER case33bw.m")
    assert matpower.tables == "matpower"
    with pytest.raises(dataclasses.FrozenInstanceError):
        meta.bus_count = 34  # type: ignore[misc]
    for source in CASE_SOURCES:
        for case_id in list_cases(source=source):
            meta = get_meta(case_id, source=source)
            assert meta.grid_type in GRID_TYPES
            if case_id not in BIG_CASES:  # checked without the PTDF in test_big_case_tables
                assert meta.bus_count == load_case(case_id, source=source).n_nodes


# ---------------------------------------------------------------------------------------
# Pytree behaviour.


def test_case_data_passes_through_jit_unchanged():
    case = load_case("5")
    out = jax.jit(lambda c: c)(case)
    assert isinstance(out, CaseData)
    assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(case)
    for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(case)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert (out.n_nodes, out.base_mva, out.slack_bus_idx) == (5, 100.0, 0)


def test_case_data_is_a_jit_argument_of_traced_code():
    case = load_case("5")
    injection = jnp.array([20.0, -150.0, -180.0, -170.0, 480.0])
    flows = eqx.filter_jit(lambda c, p: c.ptdf @ p)(case, injection)
    assert flows.shape == (6,)
    assert abs(float(flows[0]) - 214.6589) < 1e-2


# ---------------------------------------------------------------------------------------
# Validation errors (one test per message).


def test_validate_rejects_wrong_shape():
    case = load_case("5")
    bad = eqx.tree_at(lambda c: c.ptdf, case, jnp.zeros((6, 4), jnp.float32))
    with pytest.raises(ValueError, match=r"CaseData.ptdf has shape \(6, 4\), expected \(6, 5\)"):
        validate_case_data(bad)


def test_constructor_rejects_dimension_mismatch():
    case = load_case("5")
    with pytest.raises(ValueError, match=r"CaseData.node_ids has shape \(5,\), expected \(6,\)"):
        dataclasses.replace(case, n_nodes=6)


def test_validate_rejects_float_index_field():
    case = load_case("5")
    bad = eqx.tree_at(lambda c: c.line_from_idx, case, jnp.zeros(6, jnp.float32))
    with pytest.raises(ValueError, match="CaseData.line_from_idx has dtype float32, expected an"):
        validate_case_data(bad)


def test_validate_rejects_integer_value_field():
    case = load_case("5")
    bad = eqx.tree_at(lambda c: c.line_x, case, jnp.ones(6, jnp.int32))
    with pytest.raises(ValueError, match="CaseData.line_x has dtype int32, expected a float"):
        validate_case_data(bad)


def test_constructor_rejects_slack_out_of_range():
    case = load_case("5")
    with pytest.raises(ValueError, match=r"slack_bus_idx is 7, expected an index in \[0, 5\)"):
        dataclasses.replace(case, slack_bus_idx=7)


# ---------------------------------------------------------------------------------------
# case_data_from_matpower errors (one test per message).


def _tiny_tables():
    bus = np.array(
        [
            [1, 3, 0, 0, 0, 0, 1, 1, 0, 230, 1, 1.1, 0.9],
            [2, 1, 50, 10, 0, 0, 1, 1, 0, 230, 1, 1.1, 0.9],
        ],
        dtype=np.float64,
    )
    gen = np.array([[1, 0, 0, 10, -10, 1, 100, 1, 100, 0]], dtype=np.float64)
    branch = np.array([[1, 2, 0.01, 0.1, 0, 0, 0, 0, 0, 0, 1]], dtype=np.float64)
    gencost = np.array([[2, 0, 0, 3, 0.1, 20, 5]], dtype=np.float64)
    return bus, gen, branch, gencost


def test_builder_tiny_case():
    bus, gen, branch, gencost = _tiny_tables()
    case = case_data_from_matpower(100.0, bus, gen, branch, gencost)
    assert (case.n_nodes, case.n_lines, case.n_units, case.slack_bus_idx) == (2, 1, 1, 0)
    np.testing.assert_allclose(case.ptdf, [[0.0, -1.0]])
    assert float(case.unit_cost_b[0]) == pytest.approx(0.2)
    assert float(case.unit_cost_c0[0]) == pytest.approx(5.0)
    assert float(case.line_cap[0]) == 1e6
    assert float(case.line_ratio[0]) == 1.0


def test_builder_rejects_piecewise_linear_cost():
    bus, gen, branch, _ = _tiny_tables()
    gencost = np.array([[1, 0, 0, 2, 0, 0, 100, 2000]], dtype=np.float64)
    with pytest.raises(ValueError, match="gencost row 0 has MODEL 1; only polynomial costs"):
        case_data_from_matpower(100.0, bus, gen, branch, gencost)


def test_builder_rejects_quartic_cost():
    bus, gen, branch, _ = _tiny_tables()
    gencost = np.array([[2, 0, 0, 5, 1, 1, 1, 1, 1]], dtype=np.float64)
    with pytest.raises(ValueError, match="gencost row 0 has NCOST 5; expected 0..4"):
        case_data_from_matpower(100.0, bus, gen, branch, gencost)


def test_builder_rejects_unknown_bus():
    bus, gen, branch, gencost = _tiny_tables()
    branch[0, 1] = 7
    with pytest.raises(ValueError, match=r"branch \(to\) refers to unknown bus numbers \[7\]"):
        case_data_from_matpower(100.0, bus, gen, branch, gencost)


def test_builder_rejects_reactive_cost_rows():
    bus, gen, branch, gencost = _tiny_tables()
    with pytest.raises(ValueError, match="gencost has 2 rows, expected one per unit"):
        case_data_from_matpower(100.0, bus, gen, branch, np.vstack([gencost, gencost]))


def test_builder_rejects_short_table():
    bus, gen, branch, gencost = _tiny_tables()
    with pytest.raises(ValueError, match="branch table has 4 columns, expected at least 11"):
        case_data_from_matpower(100.0, bus, gen, branch[:, :4], gencost)


def test_builder_rejects_duplicate_bus_numbers():
    bus, gen, branch, gencost = _tiny_tables()
    bus[1, 0] = 1
    with pytest.raises(ValueError, match="duplicate bus numbers"):
        case_data_from_matpower(100.0, bus, gen, branch, gencost)


def test_builder_rejects_islanded_network():
    bus, gen, branch, gencost = _tiny_tables()
    bus = np.vstack([bus, bus[1:]])
    bus[2, 0] = 3
    with pytest.raises(ValueError, match="not connected to the slack bus"):
        case_data_from_matpower(100.0, bus, gen, branch, gencost)


# ---------------------------------------------------------------------------------------
# Large cases, checked from their tables without building the PTDF.


@pytest.mark.parametrize(
    ("case_id", "alias", "dims"),
    [("1354pegase", "1354", (1354, 260, 1991)), ("2383wp", "2383", (2383, 327, 2896))],
)
def test_big_case_tables(case_id, alias, dims):
    import importlib.resources

    data = importlib.resources.files("powerzoojax.case") / "data"
    for source in CASE_SOURCES:
        assert get_meta(alias, source=source).case_id == case_id
        assert get_meta(case_id, source=source).bus_count == dims[0]
    with (data / "matpower" / f"case{case_id}.npz").open("rb") as handle, np.load(handle) as t:
        assert (t["bus"].shape[0], t["gen"].shape[0], t["branch"].shape[0]) == dims
        assert float(t["base_mva"]) == 100.0
        assert int(np.sum(t["bus"][:, 1] == 3)) == 1
    with (data / "reference" / f"case{case_id}.npz").open("rb") as handle, np.load(handle) as t:
        assert (t["nodes"].shape[0], t["units"].shape[0], t["lines"].shape[0]) == dims
        assert float(t["base_mva"]) == 100.0
        types = t["nodes"][:, t["nodes_columns"].tolist().index("type")]
        assert int(np.sum(types == 3)) == 1


@pytest.mark.parametrize("source", CASE_SOURCES)
def test_case118zh_dimensions(source):
    case = load_case("118zh", source=source)
    assert (case.n_nodes, case.n_units, case.n_lines, case.n_loads) == (118, 1, 132, 118)
    assert int(np.sum(np.asarray(case.line_status) > 0)) == 117
    assert case.base_mva == 10.0


def test_shipped_case_data_stays_small():
    import importlib.resources

    data = pathlib.Path(str(importlib.resources.files("powerzoojax.case") / "data"))
    sizes = {
        folder.name: sum(entry.stat().st_size for entry in folder.iterdir())
        for folder in data.iterdir()
    }
    assert sorted(sizes) == ["matpower", "reference"]
    # 2026-12-01: matpower 324 kB, reference 461 kB (552gb's 2385 units: 47 kB).
    assert sizes["matpower"] < 400_000
    assert sizes["reference"] < 550_000
