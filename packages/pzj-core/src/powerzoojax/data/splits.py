"""Frozen train / iid / OOD windows: the per-dataset windows of `powerzoojax.data` and the
reference's GB and Ausgrid date constants (inclusive ISO dates)."""

from ._splits import (
    AUSGRID_IID_END,
    AUSGRID_IID_START,
    AUSGRID_SUMMER_END,
    AUSGRID_SUMMER_START,
    AUSGRID_TRAIN_END,
    AUSGRID_TRAIN_START,
    GB_IID_END,
    GB_IID_START,
    GB_TRAIN_END,
    GB_TRAIN_START,
    SPLITS,
    Window,
    assert_no_overlap,
    ausgrid_windows,
    gb_windows,
    get_window,
    list_windows,
)

__all__ = [
    "AUSGRID_IID_END", "AUSGRID_IID_START", "AUSGRID_SUMMER_END", "AUSGRID_SUMMER_START", "AUSGRID_TRAIN_END",
    "AUSGRID_TRAIN_START", "GB_IID_END", "GB_IID_START", "GB_TRAIN_END", "GB_TRAIN_START", "SPLITS", "Window",
    "assert_no_overlap", "ausgrid_windows", "gb_windows", "get_window", "list_windows",
]
