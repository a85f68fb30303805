"""Frozen train / iid / stress windows per dataset (dates inclusive, whole days).

Windows are contiguous and disjoint. `train` is for learning; `iid` is a held-out period
of the same source right after (or around) it, used without any transformation; `stress` is
a held-out period with a regime the agent did not see (peak season, heatwave). Where no
stress period exists in the data, out-of-distribution evaluation is parametric
(`NonstationarySampler` mode `drift_shock`).

Every window of a shipped dataset lies inside the shipped data (the tests check it). The GB
windows are the reference's and refer to the Elexon files a user supplies, whose
span is 2023-07-05 .. 2026-04-05.
"""

import dataclasses

import numpy as np

from ._frame import TimeLike, parse_time

SPLITS: tuple[str, ...] = ("train", "iid", "stress")


@dataclasses.dataclass(frozen=True)
class Window:
    """A frozen evaluation window of one dataset: `start` .. `end` inclusive (ISO dates).

    **Arguments:**

    - `dataset`: dataset name.
    - `split`: split name (`"train"`, `"iid"`, `"stress"`, ...).
    - `start`, `end`: inclusive ISO dates.
    - `description`: one line.
    """

    dataset: str
    split: str
    start: str
    end: str
    description: str

    def bounds(self) -> tuple[np.datetime64, np.datetime64]:
        """First and last minute of the window.

        **Returns:**

        `(first, last)` as `np.datetime64` minutes.
        """
        return parse_time(self.start), parse_time(self.end, end_of_day=True)


def _windows(dataset: str, rows: tuple[tuple[str, str, str, str], ...]) -> dict[str, Window]:
    return {split: Window(dataset, split, start, end, text) for split, start, end, text in rows}


_WINDOWS: dict[str, dict[str, Window]] = {
    "vic_demand_2014": _windows(
        "vic_demand_2014",
        (
            ("train", "2014-03-01", "2014-10-31", "autumn to spring 2014 (8 months)"),
            ("iid", "2014-11-01", "2014-12-31", "early summer 2014, right after train"),
            (
                "stress",
                "2014-01-01",
                "2014-02-28",
                "summer peak incl. the 14-17 Jan 2014 heatwave (9.3 GW, the year's maximum)",
            ),
        ),
    ),
    "simbench_ehv_2016": _windows(
        "simbench_ehv_2016",
        (
            ("train", "2016-01-01", "2016-09-30", "January to September 2016 (9 months)"),
            ("iid", "2016-10-01", "2016-11-30", "October and November 2016, right after train"),
            (
                "stress",
                "2016-12-01",
                "2016-12-31",
                "December 2016: the year's peak demand and highest wind feed-in, holiday weeks",
            ),
        ),
    ),
    "taylor_ew_2000": _windows(
        "taylor_ew_2000",
        (
            ("train", "2000-06-05", "2000-07-30", "first 8 weeks"),
            ("iid", "2000-07-31", "2000-08-13", "next 2 weeks"),
            ("stress", "2000-08-14", "2000-08-27", "last 2 weeks: August holiday fortnight"),
        ),
    ),
    "google_dc_2019": _windows(
        "google_dc_2019",
        (
            ("train", "2019-05-01", "2019-05-21", "first 3 weeks of the trace"),
            ("iid", "2019-05-22", "2019-05-28", "last week of the trace"),
        ),
    ),
    "gb_forecast_actual_demand": _windows(
        "gb_forecast_actual_demand",
        (
            ("train", "2025-04-01", "2025-12-31", "reference GB train window"),
            ("iid", "2026-01-01", "2026-03-31", "reference GB iid window; OOD is parametric"),
        ),
    ),
}
# The SimBench panels share the clock and windows of the EHV series.
for _name in ("simbench_feeders_2016", "simbench_pv_2016", "simbench_wind_2016"):
    _WINDOWS[_name] = {
        s: dataclasses.replace(w, dataset=_name) for s, w in _WINDOWS["simbench_ehv_2016"].items()
    }
for _name in ("gb_gen_by_type", "gb_market_mid"):
    _WINDOWS[_name] = {
        s: dataclasses.replace(w, dataset=_name) for s, w in _WINDOWS["gb_forecast_actual_demand"].items()
    }


def list_windows(dataset: str | None = None) -> list[Window]:
    """All frozen windows, or those of one dataset (empty for a dataset without windows).

    **Arguments:**

    - `dataset`: dataset name; `None` for every dataset.

    **Returns:**

    A list of [`Window`][powerzoojax.data.Window].
    """
    if dataset is not None:
        return list(_WINDOWS.get(dataset, {}).values())
    return [w for windows in _WINDOWS.values() for w in windows.values()]


def get_window(dataset: str, split: str) -> Window:
    """The frozen `split` window of `dataset`.

    **Arguments:**

    - `dataset`: dataset name.
    - `split`: split name.

    **Returns:**

    The [`Window`][powerzoojax.data.Window].

    Raises:
        ValueError: for an unknown split, a dataset without windows or a split the dataset
            lacks (the message lists the valid choices).
    """
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
    if dataset not in _WINDOWS:
        raise ValueError(
            f"dataset {dataset!r} has no frozen windows; datasets with windows: {', '.join(_WINDOWS)}"
        )
    windows = _WINDOWS[dataset]
    if split not in windows:
        raise ValueError(
            f"dataset {dataset!r} has no {split!r} window (use NonstationarySampler mode "
            f"'drift_shock' for parametric stress); its splits: {', '.join(windows)}"
        )
    return windows[split]


def gb_windows() -> dict[str, tuple[str, str]]:
    """The reference's GB windows `{split: (start, end)}` (Elexon files; OOD is parametric).

    **Returns:**

    A dict `{split: (start, end)}` of ISO dates.
    """
    return {s: (w.start, w.end) for s, w in _WINDOWS["gb_forecast_actual_demand"].items()}


def assert_no_overlap(a_start: TimeLike, a_end: TimeLike, b_start: TimeLike, b_end: TimeLike) -> None:
    """Check two inclusive date ranges are disjoint.

    **Arguments:**

    - `a_start`, `a_end`: first range.
    - `b_start`, `b_end`: second range.

    Raises:
        ValueError: naming both ranges if they overlap (or either is reversed).
    """
    a0, a1 = parse_time(a_start), parse_time(a_end, end_of_day=True)
    b0, b1 = parse_time(b_start), parse_time(b_end, end_of_day=True)
    for lo, hi in ((a0, a1), (b0, b1)):
        if lo > hi:
            raise ValueError(f"range {lo} .. {hi} ends before it starts")
    if a0 <= b1 and b0 <= a1:
        raise ValueError(f"ranges overlap: {a0} .. {a1} and {b0} .. {b1}")


# The reference's frozen date windows as constants (inclusive ISO dates). GB: the train / iid
# windows above (Elexon files; OOD is parametric). Ausgrid (user-supplied zone-substation
# file): train and iid share one window and are separated by day (every fourth local day
# is iid, see powerzoojax.data.ausgrid_utils); summer OOD is the next season; the zone
# holdout reuses the train window on other substations.
_GB = _WINDOWS["gb_forecast_actual_demand"]
GB_TRAIN_START, GB_TRAIN_END = _GB["train"].start, _GB["train"].end
GB_IID_START, GB_IID_END = _GB["iid"].start, _GB["iid"].end
AUSGRID_TRAIN_START, AUSGRID_TRAIN_END = "2024-05-01", "2024-11-30"
AUSGRID_IID_START, AUSGRID_IID_END = AUSGRID_TRAIN_START, AUSGRID_TRAIN_END
AUSGRID_SUMMER_START, AUSGRID_SUMMER_END = "2024-12-01", "2025-02-28"


def ausgrid_windows() -> tuple[tuple[str, str], tuple[str, str], tuple[str, str]]:
    """`(train, iid, summer_ood)` Ausgrid windows, each `(start, end)`; train and iid
    are the same dates (the split between them is by day).

    **Returns:**

    Three `(start, end)` pairs of ISO dates.
    """
    return (
        (AUSGRID_TRAIN_START, AUSGRID_TRAIN_END),
        (AUSGRID_IID_START, AUSGRID_IID_END),
        (AUSGRID_SUMMER_START, AUSGRID_SUMMER_END),
    )
