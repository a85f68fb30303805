"""Profiles of the data-centre microgrid under the reference's function names.

Everything is on the microgrid's 5-minute grid (288 steps a day) and host-side. The
synthetic makers return float32 JAX arrays of one episode; `load_workload_profiles`
returns the four profiles `make_dcmicrogrid_params` takes, from the traces of
[`powerzoojax.data`][powerzoojax.data] (the workload from the shipped Google trace or the installed trace
package, solar from GB files or the shipped SimBench benchmark, price from GB MID files)
with a warned synthetic fallback. `apply_ood_transform` runs in pzj-grid (it edits
microgrid params) and is forwarded there.
"""

import os
import warnings
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from powerzoojax.core._provider import import_provider
from ._loader import DataLoader
from ._workload import (
    DC_STEPS_PER_DAY,
    WORKLOAD_SOURCES,
    DataUnavailableError,
    _cyclic_window,
    load_workload_profile,
    mid_price_5min,
    solar_cf_5min,
    synthetic_outdoor_temp,
    synthetic_price,
    synthetic_solar_cf,
)

DC_EPISODE_LEN = DC_STEPS_PER_DAY
VALID_SOURCES: tuple[str, ...] = WORKLOAD_SOURCES
VALID_OOD_SCENARIOS: tuple[str, ...] = (
    "workload_swap",
    "workload_shock",
    "renewable_drought",
    "cooling_stress",
    "dg_derating",
    "sla_tighten",
)


def _hours(episode_len: int, steps_per_day: int) -> np.ndarray:
    if isinstance(episode_len, bool) or int(episode_len) < 0:
        raise ValueError(f"episode_len must be a non-negative integer, got {episode_len!r}")
    if isinstance(steps_per_day, bool) or int(steps_per_day) < 1:
        raise ValueError(f"steps_per_day must be a positive integer, got {steps_per_day!r}")
    return 24.0 * (np.arange(int(episode_len)) % int(steps_per_day)) / int(steps_per_day)


def _f32(values: ArrayLike) -> Float[Array, " T"]:
    return jnp.asarray(np.asarray(values, np.float64), jnp.float32)


def make_synthetic_cpu_profile(
    episode_len: int = DC_EPISODE_LEN, steps_per_day: int = DC_STEPS_PER_DAY
) -> Float[Array, " T"]:
    """The data centre's built-in inference fraction `clip(0.5 + 0.5 sin(2π(h − 8)/24), 0.1, 1)`
    per step (h = hour of day).

    **Arguments:**

    - `episode_len`: number of steps.
    - `steps_per_day`: steps in one day.

    **Returns:**

    A `(episode_len,)` float32 array [fraction].
    """
    hour = _hours(episode_len, steps_per_day)
    return _f32(np.clip(0.5 + 0.5 * np.sin(2.0 * np.pi * (hour - 8.0) / 24.0), 0.1, 1.0))


def make_synthetic_solar_profile(
    episode_len: int = DC_EPISODE_LEN, steps_per_day: int = DC_STEPS_PER_DAY
) -> Float[Array, " T"]:
    """Bell solar capacity factor `clip(sin(π(h − 6)/12), 0, 1)` (daylight 06–18 h).

    **Arguments:**

    - `episode_len`: number of steps.
    - `steps_per_day`: steps in one day.

    **Returns:**

    A `(episode_len,)` float32 array [fraction of peak].
    """
    _hours(episode_len, steps_per_day)
    return _f32(synthetic_solar_cf(int(episode_len), int(steps_per_day)))


def make_synthetic_outdoor_temp_profile(
    episode_len: int = DC_EPISODE_LEN,
    steps_per_day: int = DC_STEPS_PER_DAY,
    mean_temp: float = 20.0,
    amplitude: float = 8.0,
) -> Float[Array, " T"]:
    """Outdoor temperature `mean_temp + amplitude·sin(2π(h − 8)/24)` [°C].

    **Arguments:**

    - `episode_len`: number of steps.
    - `steps_per_day`: steps in one day.
    - `mean_temp`: daily mean [°C].
    - `amplitude`: daily swing amplitude [°C].

    **Returns:**

    A `(episode_len,)` float32 array [°C].
    """
    hour = _hours(episode_len, steps_per_day)
    return _f32(float(mean_temp) + float(amplitude) * np.sin(2.0 * np.pi * (hour - 8.0) / 24.0))


def make_synthetic_price_profile(
    episode_len: int = DC_EPISODE_LEN, steps_per_day: int = DC_STEPS_PER_DAY
) -> Float[Array, " T"]:
    """Time-of-use tariff [$/MWh]: 55 at night, 90 for 06–16 h, 180 for 16–23 h."""
    _hours(episode_len, steps_per_day)
    return _f32(synthetic_price(int(episode_len), int(steps_per_day)))


def make_all_synthetic_profiles(
    episode_len: int = DC_EPISODE_LEN, steps_per_day: int = DC_STEPS_PER_DAY
) -> dict[str, Float[Array, " T"]]:
    """`{"cpu_profile", "solar_profile", "outdoor_temp_profile"}` from the synthetic makers.

    **Arguments:**

    - `episode_len`: number of steps.
    - `steps_per_day`: steps in one day.

    **Returns:**

    A dict of `(episode_len,)` float32 arrays.
    """
    return {
        "cpu_profile": make_synthetic_cpu_profile(episode_len, steps_per_day),
        "solar_profile": make_synthetic_solar_profile(episode_len, steps_per_day),
        "outdoor_temp_profile": make_synthetic_outdoor_temp_profile(episode_len, steps_per_day),
    }


def cycle_profile(arr: ArrayLike, episode_len: int, start_step: int = 0) -> Array:
    """`episode_len` consecutive entries of `arr` read cyclically from `start_step`.

    **Arguments:**

    - `arr`: `(T, ...)` profile.
    - `episode_len`: number of rows to read.
    - `start_step`: first row.

    **Returns:**

    An `(episode_len, ...)` array of the same dtype; an empty `arr`, or
    `episode_len == 0`, is returned unchanged.
    """
    values = jnp.asarray(arr)
    if int(episode_len) < 0 or int(start_step) < 0:
        raise ValueError(f"episode_len and start_step must be >= 0, got {episode_len!r}, {start_step!r}")
    if values.shape[0] == 0 or int(episode_len) == 0:
        return values
    rows = (int(start_step) + np.arange(int(episode_len))) % values.shape[0]
    return values[jnp.asarray(rows)]


def _loader(data_dir: str | os.PathLike | None, manifest_dir: str | os.PathLike | None) -> DataLoader:
    if manifest_dir is not None:
        raise ValueError(
            "manifest_dir: the shipped datasets are described by the package manifest; pass "
            "extra GB files through data_dir, or build a DataLoader(registry=...) for a custom registry"
        )
    return DataLoader(data_dir=data_dir)


def _fallback(kind: str, reason: str, *, require_real_data: bool, error: Exception | None) -> None:
    """Warn about a synthetic fallback, or raise where the caller asked for real data."""
    if require_real_data:
        raise DataUnavailableError(f"{kind}: {reason}, and require_real_data=True") from error
    warnings.warn(f"{kind}: {reason}; using the SYNTHETIC profile", UserWarning, stacklevel=3)


def _unavailable(error: Exception, strict: bool) -> Exception:
    """`error` when it means "no such data" (or `strict` is off), else re-raised: with
    `strict` a bad file is an error, not a reason to fall back."""
    if isinstance(error, (FileNotFoundError, ImportError)) or not strict:
        return error
    raise error


def make_real_solar_profile(
    episode_len: int = DC_EPISODE_LEN,
    start_step: int = 0,
    data_dir: str | os.PathLike | None = None,
    manifest_dir: str | os.PathLike | None = None,
    *,
    strict: bool = True,
    require_real_data: bool = False,
) -> Float[Array, " T"]:
    """Solar capacity factor on the 5-minute grid, read cyclically from `start_step`.

    GB solar of a `data_dir` with the Elexon generation-by-type file, else the shipped
    SimBench 2016 solar benchmark, each divided by its peak and held over each half hour.

    **Arguments:**

    - `episode_len`: number of steps.
    - `start_step`: first step.
    - `data_dir`: folder of GB files.
    - `manifest_dir`: folder of trace manifests.
    - `strict`: raise errors other than missing data (a bad file).
    - `require_real_data`: raise `FileNotFoundError` without either series instead of
      warning and using the synthetic bell.

    **Returns:**

    A `(episode_len,)` float32 array [fraction of peak].
    """
    loader = _loader(data_dir, manifest_dir)
    error: Exception | None = None
    try:
        solar = solar_cf_5min(loader)
    except Exception as err:  # noqa: BLE001 - sorted by _unavailable
        solar, error = None, _unavailable(err, strict)
    if solar is not None:
        return _f32(_cyclic_window(solar[0], int(start_step), int(episode_len)))
    _fallback("solar profile", "no solar series is available", require_real_data=require_real_data, error=error)
    return cycle_profile(make_synthetic_solar_profile(DC_STEPS_PER_DAY), episode_len, start_step)


def make_real_price_profile(
    episode_len: int = DC_EPISODE_LEN,
    start_step: int = 0,
    data_dir: str | os.PathLike | None = None,
    manifest_dir: str | os.PathLike | None = None,
    *,
    strict: bool = True,
    require_real_data: bool = False,
) -> Float[Array, " T"]:
    """GB MID price [$/MWh] (clipped to [0, 500]) on the 5-minute grid from a `data_dir`
    with the Elexon MID file, read cyclically from `start_step`; otherwise the synthetic
    time-of-use tariff (with a warning), or `FileNotFoundError` with `require_real_data`."""
    loader = _loader(data_dir, manifest_dir)
    error: Exception | None = None
    try:
        mid = mid_price_5min(loader)
    except Exception as err:  # noqa: BLE001 - sorted by _unavailable
        mid, error = None, _unavailable(err, strict)
    if mid is not None:
        return _f32(_cyclic_window(mid, int(start_step), int(episode_len)))
    _fallback("price profile", "no GB MID price file is available", require_real_data=require_real_data, error=error)
    return cycle_profile(make_synthetic_price_profile(DC_STEPS_PER_DAY), episode_len, start_step)


def load_workload_profiles(
    source: str = "google",
    episode_len: int = DC_EPISODE_LEN,
    start_step: int = 0,
    data_dir: str | os.PathLike | None = None,
    manifest_dir: str | os.PathLike | None = None,
    strict: bool = True,
    require_real_data: bool = False,
) -> dict[str, Float[Array, " T"]]:
    """One episode's `{"cpu_profile", "solar_profile", "price_profile",
    "outdoor_temp_profile"}` (`episode_len` rows from `start_step`, cyclic).

    `cpu_profile`: the `source` trace as the inference fraction; solar and price as
    [`make_real_solar_profile`][powerzoojax.data.make_real_solar_profile] /
    `make_real_price_profile`; temperature the deterministic diurnal profile (not
    weather data).

    **Arguments:**

    - `source`: workload trace (`"google"`, `"azure"`, `"alibaba"`).
    - `episode_len`: episode length [5-minute steps].
    - `start_step`: first step.
    - `data_dir`: folder of GB files for solar and price.
    - `manifest_dir`: folder of trace manifests.
    - `strict`: raise errors other than a missing trace (a bad file) rather than
      replacing the profile.
    - `require_real_data`: raise `FileNotFoundError` when a trace is missing instead of
      warning and using the synthetic profile.

    **Returns:**

    A dict of four `(episode_len,)` float32 arrays: CPU [fraction], solar [fraction of
    peak], price [$/MWh], temperature [°C].
    """
    if source not in VALID_SOURCES:
        raise ValueError(f"unknown workload source {source!r}; valid sources: {VALID_SOURCES}")
    loader = _loader(data_dir, manifest_dir)
    cpu: Any = None
    error: Exception | None = None
    try:
        workload = load_workload_profile(source, require_real_data=True, loader=loader)
        cpu = _f32(_cyclic_window(workload.cpu_util, int(start_step), int(episode_len)))
    except Exception as err:  # noqa: BLE001 - sorted by _unavailable
        error = _unavailable(err, strict)
    if cpu is None:
        _fallback(f"workload {source!r}", f"the trace is not available ({error})",
                  require_real_data=require_real_data, error=error)
        cpu = cycle_profile(make_synthetic_cpu_profile(DC_STEPS_PER_DAY), episode_len, start_step)
    kwargs: dict[str, Any] = dict(episode_len=episode_len, start_step=start_step, data_dir=data_dir, strict=strict,
                  require_real_data=require_real_data)
    return {
        "cpu_profile": cpu,
        "solar_profile": make_real_solar_profile(**kwargs),
        "price_profile": make_real_price_profile(**kwargs),
        "outdoor_temp_profile": cycle_profile(
            _f32(synthetic_outdoor_temp(DC_STEPS_PER_DAY)), episode_len, int(start_step) % DC_STEPS_PER_DAY
        ),
    }


def apply_ood_transform(
    params: Any,
    scenario: str,
    *,
    drought_factor: float = 0.2,
    temp_delta: float = 5.0,
    dg_derating_factor: float = 0.6,
    sla_slack: float = 1.2,
    data_dir: str | os.PathLike | None = None,
    manifest_dir: str | os.PathLike | None = None,
) -> Any:
    """Microgrid params under one OOD scenario of `VALID_OOD_SCENARIOS`.

    `renewable_drought`: PV CF × `drought_factor`; `cooling_stress`: outdoor temperature
    + `temp_delta` °C; `dg_derating`: diesel capacity × `dg_derating_factor`;
    `sla_tighten`: both deadline slacks = `sla_slack`; `workload_swap` /
    `workload_shock`: the Azure / Alibaba trace as the inference profile (real data
    required). Forwards to
    [`powerzoojax.grid.apply_ood_transform`][powerzoojax.grid.apply_ood_transform].

    **Arguments:**

    - `params`: `DCMicrogridParams` (pzj-grid).
    - `scenario`: one of `VALID_OOD_SCENARIOS`.
    - `drought_factor`: PV capacity-factor multiplier.
    - `temp_delta`: outdoor temperature shift [°C].
    - `dg_derating_factor`: diesel capacity multiplier.
    - `sla_slack`: deadline slack factor.
    - `data_dir`: folder of GB files for the workload scenarios.
    - `manifest_dir`: folder of trace manifests for the workload scenarios.

    **Returns:**

    New `DCMicrogridParams`.
    """
    if scenario not in VALID_OOD_SCENARIOS:
        raise ValueError(f"unknown OOD scenario {scenario!r}; valid: {VALID_OOD_SCENARIOS}")
    grid = import_provider("powerzoojax.grid", "apply_ood_transform", "pzj-grid")
    return grid.apply_ood_transform(
        params, scenario, drought_factor=drought_factor, temp_delta=temp_delta,
        dg_derating_factor=dg_derating_factor, sla_slack=sla_slack,
        loader=_loader(data_dir, manifest_dir),
    )


__all__ = [
    "DC_EPISODE_LEN", "DC_STEPS_PER_DAY", "VALID_OOD_SCENARIOS", "VALID_SOURCES", "apply_ood_transform",
    "cycle_profile", "load_workload_profiles", "make_all_synthetic_profiles", "make_real_price_profile",
    "make_real_solar_profile", "make_synthetic_cpu_profile", "make_synthetic_outdoor_temp_profile",
    "make_synthetic_price_profile", "make_synthetic_solar_profile",
]
