"""Case registry, shipped case data and network matrices.

``load_case(id)`` returns the reference benchmark table of a case (the default);
``load_case(id, source="matpower")`` MATPOWER's original file.

>>> from powerzoojax.case import load_case
>>> case = load_case("5")
>>> case.ptdf.shape
(6, 5)
"""

from ._builder import case_data_from_matpower, polynomial_to_marginal_cost
from ._case_data import CaseData, validate_case_data
from ._matrices import (
    build_branch_admittances,
    build_bus_map,
    build_incidence,
    build_ptdf,
    build_ybus,
    gen_cost_coeffs,
)
from ._registry import CASE_SOURCES, GRID_TYPES, CaseMeta, get_meta, list_cases, load_case
from ._tables import FUEL_TYPES, case_data_from_tables, fuel_type_code

__all__ = [
    "CASE_SOURCES",
    "FUEL_TYPES",
    "GRID_TYPES",
    "CaseData",
    "CaseMeta",
    "build_branch_admittances",
    "build_bus_map",
    "build_incidence",
    "build_ptdf",
    "build_ybus",
    "case_data_from_matpower",
    "case_data_from_tables",
    "fuel_type_code",
    "gen_cost_coeffs",
    "get_meta",
    "list_cases",
    "load_case",
    "polynomial_to_marginal_cost",
    "validate_case_data",
]
