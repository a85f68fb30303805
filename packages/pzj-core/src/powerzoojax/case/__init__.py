"""Case registry, shipped case data and network matrices.

`load_case(id)` returns the reference benchmark table of a case (the default);
`load_case(id, source="matpower")` MATPOWER's original file.

>>> from powerzoojax.case import load_case
>>> case = load_case("5")
>>> case.ptdf.shape
(6, 5)
"""

from ._builder import case_data_from_matpower, polynomial_to_marginal_cost
from ._branch_matrices import build_bus_map, build_incidence, build_ptdf
from ._case_data import CaseData, case_with_line_status, validate_case_data
from ._matrices import build_branch_admittances, build_ybus, gen_cost_coeffs
from ._registry import CASE_SOURCES, GRID_TYPES, CaseMeta, get_meta, list_cases, load_case
from ._tables import FUEL_TYPES, case_data_from_tables, fuel_type_code
from ._topology import nodes_off_slack

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
    "case_with_line_status",
    "fuel_type_code",
    "gen_cost_coeffs",
    "get_meta",
    "list_cases",
    "load_case",
    "nodes_off_slack",
    "polynomial_to_marginal_cost",
    "validate_case_data",
]

# The reference's names: one factory per case id, graph matrices from raw branch lists,
# table conversion, host-side inspection and pictures (matplotlib imported on first use).
from ._convert import case_to_jax, convert_case  # noqa: E402
from ._factories import (  # noqa: E402
    create_case5,
    create_case14,
    create_case29gb,
    create_case33bw,
    create_case118,
    create_case118zh,
    create_case123,
    create_case123_1ph,
    create_case141,
    create_case300,
    create_case533mt_hi,
    create_case533mt_lo,
    create_case552gb,
    create_case1354pegase,
    create_case2383wp,
)
from ._graph import (  # noqa: E402
    build_case_matrices,
    compute_adjacency_matrix,
    compute_degree_matrix,
    compute_laplacian_matrix,
    compute_ptdf,
)
from ._inspect import CaseInfo, CasePlotter, CaseTable, plot_case, print_case, print_summary  # noqa: E402

__all__ += [
    "CaseInfo", "CasePlotter", "CaseTable", "build_case_matrices", "case_to_jax", "compute_adjacency_matrix",
    "compute_degree_matrix", "compute_laplacian_matrix", "compute_ptdf", "convert_case", "create_case5",
    "create_case14", "create_case29gb", "create_case33bw", "create_case118", "create_case118zh", "create_case123",
    "create_case123_1ph", "create_case141", "create_case300", "create_case533mt_hi", "create_case533mt_lo",
    "create_case552gb", "create_case1354pegase", "create_case2383wp", "plot_case", "print_case", "print_summary",
]
