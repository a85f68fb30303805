"""Case registry, shipped case data and network matrices.

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
from ._registry import GRID_TYPES, CaseMeta, get_meta, list_cases, load_case

__all__ = [
    "GRID_TYPES",
    "CaseData",
    "CaseMeta",
    "build_branch_admittances",
    "build_bus_map",
    "build_incidence",
    "build_ptdf",
    "build_ybus",
    "case_data_from_matpower",
    "gen_cost_coeffs",
    "get_meta",
    "list_cases",
    "load_case",
    "polynomial_to_marginal_cost",
    "validate_case_data",
]
