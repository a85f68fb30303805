"""Load and PV profiles of the DERs task: the shipped SimBench substitutes of each data
window, Ausgrid load or GB solar when the loader has them.
"""

import functools
import os
from typing import Any

import numpy as np

from powerzoojax.grid.tasks.ders._constants import _ROLE_WINDOWS


@functools.lru_cache(maxsize=4)
def ders_shapes(window: str) -> tuple[np.ndarray, np.ndarray]:
    """Load and PV shapes of a data window, each divided by its peak.

    **Arguments:**

    - `window`: data window name.

    **Returns:**

    `(load_shape (T,), pv_shape (T,))`.
    """
    from powerzoojax.data import DataLoader

    loader = DataLoader()
    load = loader.load_region_profiles(
        "load.actual_pu", source="simbench_feeders_2016", regions=["mv_rural", "mv_semiurb", "mv_urban", "mv_comm"],
        split=window,
    ).values.mean(axis=1)
    pv = loader.load_region_profiles("solar.available_pu", source="simbench_pv_2016", regions=["PV1"], split=window)
    pv = np.nan_to_num(np.asarray(pv.values[:, 0], np.float64))
    return np.asarray(load / load.max()), np.clip(pv / pv.max(), 0.0, 1.0)


def _role_window(role: str) -> str:
    if role not in _ROLE_WINDOWS:
        raise KeyError(f"unknown DERs split role {role!r}; valid roles: {tuple(_ROLE_WINDOWS)}")
    return _ROLE_WINDOWS[role]


def load_ders_load_shape(data_loader: Any = None, *, role: str = "train", resample: str = "30min") -> np.ndarray:
    """The DERs demand shape of a split role, divided by its peak.

    The mean Ausgrid load of the role's substations (restricted to its days) when the
    Ausgrid file is in the loader's folder, else the shipped SimBench feeder substitute
    that [`DERsTask`][powerzoojax.grid.tasks.ders.DERsTask] uses.

    **Arguments:**

    - `data_loader`: a `DataLoader(data_dir=...)` or a folder; `None` for the shipped data.
    - `role`: split role.
    - `resample`: output step.

    **Returns:**

    A `(T,)` float32 NumPy array.
    """
    from powerzoojax.data.ausgrid_utils import find_ausgrid_file, get_ausgrid_split, load_substation_profiles

    window = _role_window(role)
    folder = data_loader if data_loader is None or isinstance(data_loader, (str, os.PathLike)) else getattr(data_loader, "data_dir", None)
    try:
        find_ausgrid_file(folder)
    except FileNotFoundError:
        return np.asarray(ders_shapes(window)[0], np.float32)
    mean = load_substation_profiles(folder, get_ausgrid_split(role)[2], role, resample=resample).mean(axis=1)
    return (mean / max(float(mean.max()), 1e-8)).astype(np.float32)


def load_ders_pv_profile(data_loader: Any = None, *, role: str = "train", resample: str = "30min") -> np.ndarray:
    """The DERs PV capacity factor of a split role, divided by its peak.

    GB solar of the role's GB window when the loader has the GB files, else the shipped
    SimBench PV1.

    **Arguments:**

    - `data_loader`: a `DataLoader` or a folder; `None` for the shipped data.
    - `role`: split role.
    - `resample`: output step.

    **Returns:**

    A `(T,)` float32 NumPy array in [0, 1].
    """
    window = _role_window(role)
    if data_loader is not None and "gb" in data_loader.list_sources():
        from powerzoojax.data import SOLAR_AVAILABLE_MW

        pv = np.nan_to_num(np.asarray(data_loader.load_signals(
            [SOLAR_AVAILABLE_MW], source="gb", split="train" if window == "train" else "iid", resample=resample,
        ).values[:, 0], np.float64))
        return (np.clip(pv / max(float(pv.max()), 1e-8), 0.0, 1.0)).astype(np.float32)
    return np.asarray(ders_shapes(window)[1], np.float32)


def _window(series: np.ndarray, start: int, n: int) -> np.ndarray:
    return np.asarray(series)[(int(start) + np.arange(int(n))) % np.asarray(series).shape[0]]
