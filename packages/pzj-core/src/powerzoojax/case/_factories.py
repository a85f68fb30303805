"""One factory per shipped case id (`create_case5()` is `load_case("5")`).

They are thin calls of [`load_case`][powerzoojax.case.load_case], so they return the registry's tables (and its
cached object) for the id; `create_case123`, `create_case123_1ph` and
`create_case552gb` need those ids in the registry and raise its `ValueError` (listing
the valid ids) until they ship.
"""

from ._case_data import CaseData
from ._registry import load_case


def create_case5() -> CaseData:
    """PJM 5-bus, 5-unit transmission case (`load_case("5")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("5")


def create_case14() -> CaseData:
    """IEEE 14-bus transmission case (`load_case("14")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("14")


def create_case29gb() -> CaseData:
    """Reduced 29-bus Great Britain network (`load_case("29gb")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("29gb")


def create_case118() -> CaseData:
    """IEEE 118-bus transmission case (`load_case("118")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("118")


def create_case300() -> CaseData:
    """IEEE 300-bus transmission case (`load_case("300")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("300")


def create_case552gb() -> CaseData:
    """552-bus Great Britain network (`load_case("552gb")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("552gb")


def create_case1354pegase() -> CaseData:
    """PEGASE 1354-bus European case (`load_case("1354pegase")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("1354pegase")


def create_case2383wp() -> CaseData:
    """Polish 2383-bus winter-peak case (`load_case("2383wp")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("2383wp")


def create_case33bw() -> CaseData:
    """Baran-Wu 33-bus radial feeder (`load_case("33bw")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("33bw")


def create_case118zh() -> CaseData:
    """Zhang 118-bus distribution system (`load_case("118zh")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("118zh")


def create_case123() -> CaseData:
    """IEEE 123-node three-phase feeder with per-phase loads (`load_case("123")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("123")


def create_case123_1ph() -> CaseData:
    """Single-phase equivalent of the IEEE 123-node feeder (`load_case("123_1ph")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("123_1ph")


def create_case141() -> CaseData:
    """Khodr 141-bus Caracas feeder (`load_case("141")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("141")


def create_case533mt_hi() -> CaseData:
    """Malmer-Thorin 533-bus system, maximum net-load hour (`load_case("533mt_hi")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("533mt_hi")


def create_case533mt_lo() -> CaseData:
    """Malmer-Thorin 533-bus system, minimum net-load hour (`load_case("533mt_lo")`).

    **Returns:**

    The cached [`CaseData`][powerzoojax.case.CaseData] of the reference tables.
    """
    return load_case("533mt_lo")


# Case id of every factory (the tests walk it).
CASE_FACTORIES = {
    "5": create_case5, "14": create_case14, "29gb": create_case29gb, "118": create_case118,
    "300": create_case300, "552gb": create_case552gb, "1354pegase": create_case1354pegase,
    "2383wp": create_case2383wp, "33bw": create_case33bw, "118zh": create_case118zh, "123": create_case123,
    "123_1ph": create_case123_1ph, "141": create_case141, "533mt_hi": create_case533mt_hi,
    "533mt_lo": create_case533mt_lo,
}
