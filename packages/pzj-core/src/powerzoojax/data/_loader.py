"""`DataLoader`: the one sanctioned reader of profile data (host-side, set-up time only).

A request names signals; the registry binds each to a dataset column (see
`DatasetRegistry.resolve_signals`). Then, per dataset: gap filling (`interpolation`,
applied to missing values of external files; shipped data have none), resampling to
`resample`, and the window `start_date` .. `end_date` (or a frozen `split`); the
columns of several datasets are joined on their common timestamps, in request order.

>>> from powerzoojax.data import DataLoader, LOAD_ACTUAL_MW
>>> profile = DataLoader().load_jax_profiles([LOAD_ACTUAL_MW], split="train")
>>> profile.shape, profile.dtype
((11760, 1), dtype('float32'))
"""

import dataclasses
import functools
import importlib.resources
import os
import pathlib
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._frame import (
    SignalFrame,
    TimeLike,
    check_interpolation,
    fill_gaps,
    parse_resolution,
    parse_time,
    regular_timestamps,
)
from ._frame import (
    resample as resample_frame,
)
from ._gb import GB_DATASETS, GB_RESOLUTION_MINUTES, GB_SOURCE, find_gb_files
from ._registry import (
    DatasetManifest,
    DatasetRegistry,
    ResolvedSignal,
    default_registry,
    shipped_manifest,
)
from ._splits import get_window


@functools.cache
def _decode_shipped(file: str) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps, values) of a shipped `.npz`; cached, read-only."""
    resource = importlib.resources.files("powerzoojax.data") / "profiles" / file
    with resource.open("rb") as handle, np.load(handle, allow_pickle=False) as archive:
        values = archive["offset"] + archive["scale"] * archive["values"].astype(np.float64)
        stamps = regular_timestamps(
            np.datetime64(str(archive["start"]), "m"), values.shape[0], int(archive["resolution_minutes"])
        )
    values.flags.writeable = False
    stamps.flags.writeable = False
    return stamps, values


def _regularise(frame: SignalFrame, resolution_minutes: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Put an irregular reader frame on its full regular grid; absent rows become NaN."""
    stamps = frame.timestamps
    if stamps.size == 0:
        raise ValueError(f"dataset {name!r}: the file has no rows")
    step = np.timedelta64(resolution_minutes, "m")
    offsets = (stamps - stamps[0]) // step
    off_grid = np.flatnonzero((stamps - stamps[0]) % step != np.timedelta64(0, "m"))
    if off_grid.size:
        raise ValueError(
            f"dataset {name!r}: timestamp {stamps[off_grid[0]]} is not on the {resolution_minutes}-min "
            f"grid starting {stamps[0]}"
        )
    values = np.full((int(offsets[-1]) + 1, frame.values.shape[1]), np.nan)
    values[offsets.astype(np.int64)] = frame.values
    return regular_timestamps(stamps[0], values.shape[0], resolution_minutes), values


@dataclasses.dataclass
class _Block:
    dataset: DatasetManifest
    timestamps: np.ndarray
    values: np.ndarray
    filled: np.ndarray
    resolution_minutes: int


class DataLoader:
    """Load profiles by signal name from the shipped datasets and, optionally, GB files.

    Every method runs on the host; outputs are NumPy or (`load_jax_profiles`) a float32
    JAX array meant for env params, never called inside `jit`.

    **Arguments:**

    - `data_dir`: a folder with GB open-data files (names in `GB_DATASETS`, `.parquet` or
      `.csv`); they become datasets of source `"gb"` after the shipped ones.
    - `registry`: a custom registry instead of the shipped one.
    """

    def __init__(self, data_dir: str | os.PathLike | None = None, registry: DatasetRegistry | None = None):
        registry = default_registry() if registry is None else registry
        # Kept for readers of files outside the registry (the Ausgrid zone-substation file).
        self.data_dir = None if data_dir is None else pathlib.Path(data_dir)
        self._external: dict[str, str] = {}
        if data_dir is not None:
            files = find_gb_files(data_dir)
            manifests = []
            for spec in GB_DATASETS:
                if spec.name in files:
                    self._external[spec.name] = str(files[spec.name])
                    manifests.append(
                        DatasetManifest(
                            name=spec.name,
                            source=GB_SOURCE,
                            signals=spec.signals,
                            regions=(None,) * len(spec.signals),
                            kind="measured",
                            description=spec.description,
                            data_type="actual_series",
                            time_mode="calendar",
                            cyclic=False,
                            timezone="UTC",
                            resolution_minutes=GB_RESOLUTION_MINUTES,
                            start=None,
                            n_steps=None,
                            location="external",
                            file=str(files[spec.name]),
                        )
                    )
            registry = registry.with_datasets(manifests)
        self.registry = registry
        self._external_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    # -- metadata ---------------------------------------------------------------------

    def list_signals(self) -> list[str]:
        """Signal names the loader can provide.

        **Returns:**

        A list of signal names, each once.
        """
        return self.registry.list_signals()

    def list_sources(self) -> list[str]:
        """Source families of the loader's datasets (`"vic"`, `"simbench"`, `"gb"`, ...).

        **Returns:**

        A list of source names, in priority order.
        """
        return self.registry.list_sources()

    def list_datasets(self) -> list[str]:
        """Names of the loader's datasets.

        **Returns:**

        A list of dataset names, in priority order.
        """
        return self.registry.list_datasets()

    def dataset_info(self, name: str) -> DatasetManifest:
        """Manifest of a dataset; an external one is read first so its range is known.

        **Arguments:**

        - `name`: dataset name.

        **Returns:**

        The [`DatasetManifest`][powerzoojax.data.DatasetManifest].
        """
        manifest = self.registry.get_manifest(name)
        if manifest.location == "external":
            self._raw(manifest)
            manifest = self.registry.get_manifest(name)
        return manifest

    def time_range(self, name: str) -> tuple[np.datetime64, np.datetime64]:
        """First and last interval beginnings of a dataset.

        **Arguments:**

        - `name`: dataset name.

        **Returns:**

        `(first, last)` as `np.datetime64` minutes.
        """
        return self.dataset_info(name).time_range()

    def provenance(self, name: str) -> dict:
        """Provenance of a shipped dataset.

        **Arguments:**

        - `name`: dataset name.

        **Returns:**

        The manifest entry: package, version, files, licence, attribution, processing,
        whether it is measured.

        Raises:
            ValueError: for an unknown or external dataset.
        """
        for entry in shipped_manifest()["datasets"]:
            if entry["name"] == name:
                return entry
        shipped = [e["name"] for e in shipped_manifest()["datasets"]]
        raise ValueError(f"No shipped dataset {name!r}; shipped datasets: {', '.join(shipped)}")

    # -- reading ----------------------------------------------------------------------

    def _raw(self, manifest: DatasetManifest) -> tuple[np.ndarray, np.ndarray]:
        if manifest.location == "package":
            return _decode_shipped(manifest.file)
        if manifest.name not in self._external_cache:
            spec = next(s for s in GB_DATASETS if s.name == manifest.name)
            frame = spec.reader(manifest.file)
            stamps, values = _regularise(frame, manifest.resolution_minutes, manifest.name)
            self._external_cache[manifest.name] = (stamps, values)
            self.registry = self.registry.replace(
                dataclasses.replace(manifest, start=str(stamps[0]), n_steps=int(stamps.shape[0]))
            )
        return self._external_cache[manifest.name]

    def load_data(self, dataset: str) -> SignalFrame:
        """All columns of one dataset at its native resolution, as stored (gaps stay NaN).

        **Arguments:**

        - `dataset`: dataset name.

        **Returns:**

        A [`SignalFrame`][powerzoojax.data.SignalFrame] of every column.
        """
        manifest = self.dataset_info(dataset)
        stamps, values = self._raw(manifest)
        return SignalFrame(
            timestamps=stamps.copy(),
            values=values.copy(),
            signals=manifest.signals,
            filled=np.zeros(values.shape, bool),
            resolution_minutes=manifest.resolution_minutes,
            datasets=(manifest.name,) * len(manifest.signals),
            regions=manifest.regions,
        )

    def load_signals(
        self,
        signals: Sequence[str],
        *,
        source: str | None = None,
        region: str | None = None,
        start_date: TimeLike | None = None,
        end_date: TimeLike | None = None,
        split: str | None = None,
        resample: str | None = None,
        interpolation: str = "linear",
    ) -> SignalFrame:
        """Signals on one time grid, in request order (host-side NumPy).

        **Arguments:**

        - `signals`: signal names (see `ALL_SIGNALS`).
        - `source`: a source (`"vic"`, `"simbench"`, `"gb"`, ...) or dataset name; `None`
          takes the first dataset in priority order.
        - `region`: region of a regional signal (e.g. `"mv_rural"`); `None` for signals
          without regions.
        - `start_date`, `end_date`: inclusive bounds, ISO `"YYYY-MM-DD"` (a bare end date
          includes its whole day) or `"YYYY-MM-DDTHH:MM"`, `datetime` or `np.datetime64`;
          default: the data's common range.
        - `split`: a frozen window (`"train"`, `"iid"`, `"stress"`) of the first requested
          signal's dataset instead of dates.
        - `resample`: target step, e.g. `"30min"`, `"1h"`; must divide a day and be a
          multiple (block mean) or divisor (interpolation) of the native step.
        - `interpolation`: `"linear"` or `"previous"`, for gap filling and upsampling.

        **Returns:**

        A [`SignalFrame`][powerzoojax.data.SignalFrame] with one column per signal.

        Raises:
            ValueError: for an unknown signal, source, region, split, resolution or
                interpolation, dates outside the data or reversed, or datasets that cannot
                be joined; the message names the valid choices or the data's range.
        """
        names = self._check_signals(signals)
        resolved = self.registry.resolve_signals(names, source=source, region=region)
        return self._load(resolved, start_date, end_date, split, resample, interpolation)

    def load_region_profiles(
        self,
        signal: str,
        *,
        source: str | None = None,
        regions: Sequence[str] | None = None,
        start_date: TimeLike | None = None,
        end_date: TimeLike | None = None,
        split: str | None = None,
        resample: str | None = None,
        interpolation: str = "linear",
    ) -> SignalFrame:
        """One regional signal for several regions.

        **Arguments:**

        - `signal`: a regional signal name.
        - `regions`: regions, in column order; `None` takes every region of the first
          dataset giving `signal` per region.
        - `source`, `start_date`, `end_date`, `split`, `resample`, `interpolation`: as for
          `load_signals`.

        **Returns:**

        A [`SignalFrame`][powerzoojax.data.SignalFrame] with one column per region.
        """
        if regions is None:
            candidates = [m for m in self.registry.find_by_signal(signal, source) if m.regions_of(signal)]
            if not candidates:
                raise ValueError(f"signal {signal!r} is not given per region by any dataset"
                                 + (f" of source {source!r}" if source else ""))
            regions = candidates[0].regions_of(signal)
            source = candidates[0].name
        if isinstance(regions, str) or len(regions) == 0:
            raise ValueError(f"regions must be a non-empty sequence of region names, got {regions!r}")
        resolved = [self.registry.resolve_signals([signal], source=source, region=r)[0] for r in regions]
        return self._load(resolved, start_date, end_date, split, resample, interpolation)

    def load_jax_profiles(
        self,
        signals: Sequence[str],
        *,
        source: str | None = None,
        region: str | None = None,
        start_date: TimeLike | None = None,
        end_date: TimeLike | None = None,
        split: str | None = None,
        resample: str | None = None,
        interpolation: str = "linear",
        dtype: Any = jnp.float32,
    ) -> Float[Array, "T n"]:
        """`load_signals` as a JAX array, ready for env params that index `profile[t % T]`.

        **Arguments:**

        - `signals`, `source`, `region`, `start_date`, `end_date`, `split`, `resample`,
          `interpolation`: as for `load_signals`.
        - `dtype`: dtype of the array.

        **Returns:**

        A `(T, len(signals))` array, float32 by default.
        """
        frame = self.load_signals(
            signals,
            source=source,
            region=region,
            start_date=start_date,
            end_date=end_date,
            split=split,
            resample=resample,
            interpolation=interpolation,
        )
        return jnp.asarray(frame.values, dtype=dtype)

    # -- internals --------------------------------------------------------------------

    @staticmethod
    def _check_signals(signals: Sequence[str]) -> list[str]:
        names = [signals] if isinstance(signals, str) else list(signals)
        if not names:
            raise ValueError("signals must name at least one signal")
        repeated = sorted({s for s in names if names.count(s) > 1})
        if repeated:
            raise ValueError(f"signals are requested twice: {', '.join(repeated)}")
        return names

    def _load(
        self,
        resolved: list[ResolvedSignal],
        start_date: TimeLike | None,
        end_date: TimeLike | None,
        split: str | None,
        resample: str | None,
        interpolation: str,
    ) -> SignalFrame:
        check_interpolation(interpolation)
        # External manifests gain their range when read; re-bind to the updated manifests.
        for item in resolved:
            self._raw(item.dataset)
        resolved = [
            dataclasses.replace(r, dataset=self.registry.get_manifest(r.dataset.name)) for r in resolved
        ]
        datasets = list({r.dataset.name: r.dataset for r in resolved}.values())
        modes = {m.time_mode for m in datasets}
        if len(modes) > 1:
            raise ValueError(
                "cannot join calendar and profile datasets: "
                + ", ".join(f"{m.name} ({m.time_mode})" for m in datasets)
                + "; request them separately"
            )
        target = self._target_resolution(datasets, resample)
        blocks = {m.name: self._block(m, [r for r in resolved if r.dataset.name == m.name], target, interpolation)
                  for m in datasets}
        start, end = self._window(datasets, blocks, start_date, end_date, split)
        grid, columns, filled = None, {}, {}
        for name, block in blocks.items():
            first = block.timestamps[0]
            step = np.timedelta64(target, "m")
            i0 = int(-((first - start) // step))  # ceil((start - first) / step)
            i1 = int((end - first) // step)
            if i0 > i1:
                raise ValueError(
                    f"the window {start} .. {end} holds no {target}-min step of dataset {name!r}"
                )
            stamps = block.timestamps[i0 : i1 + 1]
            if grid is None:
                grid = stamps
            elif stamps.shape != grid.shape or (stamps != grid).any():
                raise ValueError(
                    f"dataset {name!r} is not on the same {target}-min grid as {datasets[0].name!r} "
                    f"in {start} .. {end}"
                )
            columns[name] = block.values[i0 : i1 + 1]
            filled[name] = block.filled[i0 : i1 + 1]
        order = {name: 0 for name in blocks}
        values, mask = [], []
        for r in resolved:
            idx = order[r.dataset.name]
            order[r.dataset.name] += 1
            values.append(columns[r.dataset.name][:, idx])
            mask.append(filled[r.dataset.name][:, idx])
        assert grid is not None  # _check_signals: at least one signal, so one block
        return SignalFrame(
            timestamps=grid,
            values=np.stack(values, axis=1),
            signals=tuple(r.signal for r in resolved),
            filled=np.stack(mask, axis=1),
            resolution_minutes=target,
            datasets=tuple(r.dataset.name for r in resolved),
            regions=tuple(r.region for r in resolved),
        )

    @staticmethod
    def _target_resolution(datasets: list[DatasetManifest], resample: str | None) -> int:
        if resample is not None:
            return parse_resolution(resample)
        natives = {m.resolution_minutes for m in datasets}
        if len(natives) > 1:
            raise ValueError(
                "the requested datasets have different resolutions ("
                + ", ".join(f"{m.name}: {m.resolution_minutes} min" for m in datasets)
                + "); pass resample=, e.g. '30min'"
            )
        return natives.pop()

    def _block(
        self, manifest: DatasetManifest, items: list[ResolvedSignal], target: int, interpolation: str
    ) -> _Block:
        stamps, raw = self._raw(manifest)
        index = [manifest.column_index(r.signal, r.region) for r in items]
        values, filled = fill_gaps(raw[:, index], interpolation=interpolation, what=f"dataset {manifest.name!r}")
        stamps, values, filled = resample_frame(
            stamps, values, filled, manifest.resolution_minutes, target,
            interpolation=interpolation, what=f"dataset {manifest.name!r}",
        )
        return _Block(manifest, stamps, values, filled, target)

    @staticmethod
    def _window(
        datasets: list[DatasetManifest],
        blocks: dict[str, _Block],
        start_date: TimeLike | None,
        end_date: TimeLike | None,
        split: str | None,
    ) -> tuple[np.datetime64, np.datetime64]:
        if split is not None:
            if start_date is not None or end_date is not None:
                raise ValueError("pass either split= or start_date= / end_date=, not both")
            start, end = get_window(datasets[0].name, split).bounds()
        else:
            start = parse_time(start_date) if start_date is not None else None
            end = parse_time(end_date, end_of_day=True) if end_date is not None else None
        ranges = {name: (b.timestamps[0], b.timestamps[-1]) for name, b in blocks.items()}

        def describe() -> str:
            return "; ".join(f"{n}: {lo} .. {hi}" for n, (lo, hi) in ranges.items())

        if start is None:
            start = max(lo for lo, _ in ranges.values())
        if end is None:
            end = min(hi for _, hi in ranges.values())
        if start > end:
            if start_date is None and end_date is None and split is None:
                raise ValueError(f"the requested datasets do not overlap in time ({describe()}); pass source=")
            raise ValueError(f"start_date {start} is after end_date {end}")
        for name, (lo, hi) in ranges.items():
            # A row covers its whole interval, so an end inside the last interval is inside.
            last_minute = hi + np.timedelta64(blocks[name].resolution_minutes - 1, "m")
            if start < lo or end > last_minute:
                raise ValueError(
                    f"dates {start} .. {end} are outside the data of dataset {name!r}, which covers "
                    f"{lo} .. {hi}"
                )
        return start, end

