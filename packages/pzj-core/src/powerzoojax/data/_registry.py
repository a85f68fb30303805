"""Dataset manifests and the registry that resolves signal requests to datasets.

The shipped datasets are described by `profiles/manifest.json` (written by
`scripts/build_profiles.py`, with provenance and licence per file). Their order in that
file is the resolution priority: a request without `source` takes the first dataset that
provides its signals, so measured series win over benchmark ones. External datasets (the
GB open-data files a user points a `DataLoader` at) come after the shipped ones.
"""

import dataclasses
import functools
import importlib.resources
import json
from collections.abc import Iterator, Sequence

import numpy as np

from ._frame import regular_timestamps
from ._signals import DATA_TYPES, TIME_MODES, check_signal

LOCATIONS: tuple[str, ...] = ("package", "external")


@dataclasses.dataclass(frozen=True)
class DatasetManifest:
    """Description of one dataset (host-side).

    **Arguments:**

    - `name`: unique dataset name, e.g. `"vic_demand_2014"`.
    - `source`: source family, e.g. `"simbench"`, `"gb"`; requests may name either.
    - `signals`: signal names, one per column (repeated for regional panels).
    - `regions`: region per column (`None` when the signal has no region).
    - `kind`: `"measured"` or `"benchmark"` (constructed; never to be reported as
      measured).
    - `description`: one line.
    - `data_type`: `"actual_series"` or `"forecast_panel"`.
    - `time_mode`: `"calendar"` (real dates) or `"profile"` (nominal epoch, no wall clock).
    - `cyclic`: whether the series is meant to be repeated (`profile[t % T]`).
    - `timezone`: the clock the naive timestamps are on.
    - `resolution_minutes`: step between rows [minutes].
    - `start`: first interval beginning (ISO minute), `None` for an external file not yet
      read.
    - `n_steps`: rows, `None` for an external file not yet read.
    - `location`: `"package"` (shipped) or `"external"` (a user's file).
    - `file`: shipped file name or external file path.
    """

    name: str
    source: str
    signals: tuple[str, ...]
    regions: tuple[str | None, ...]
    kind: str
    description: str
    data_type: str
    time_mode: str
    cyclic: bool
    timezone: str
    resolution_minutes: int
    start: str | None
    n_steps: int | None
    location: str
    file: str

    def __post_init__(self) -> None:
        for signal in self.signals:
            check_signal(signal)
        if len(self.regions) != len(self.signals):
            raise ValueError(f"dataset {self.name!r}: {len(self.regions)} regions for {len(self.signals)} signals")
        if self.data_type not in DATA_TYPES:
            raise ValueError(f"dataset {self.name!r}: unknown data_type {self.data_type!r}; valid: {', '.join(DATA_TYPES)}")
        if self.time_mode not in TIME_MODES:
            raise ValueError(f"dataset {self.name!r}: unknown time_mode {self.time_mode!r}; valid: {', '.join(TIME_MODES)}")
        if self.location not in LOCATIONS:
            raise ValueError(f"dataset {self.name!r}: unknown location {self.location!r}; valid: {', '.join(LOCATIONS)}")

    @property
    def measured(self) -> bool:
        """Whether the dataset is measured (not a constructed benchmark)."""
        return self.kind == "measured"

    def provides(self, signal: str) -> bool:
        """Whether the dataset has a column of `signal`.

        **Arguments:**

        - `signal`: signal name.

        **Returns:**

        A bool.
        """
        return signal in self.signals

    def regions_of(self, signal: str) -> tuple[str, ...]:
        """Regions in which `signal` is given (empty for a signal without regions).

        **Arguments:**

        - `signal`: signal name.

        **Returns:**

        A tuple of region names.
        """
        return tuple(r for s, r in zip(self.signals, self.regions) if s == signal and r is not None)

    def column_index(self, signal: str, region: str | None) -> int:
        """Column of `signal` in `region`.

        **Arguments:**

        - `signal`: signal name.
        - `region`: region name, `None` for a signal without regions.

        **Returns:**

        The 0-based column index. Raises `ValueError` when the dataset has no such column.
        """
        for i, (s, r) in enumerate(zip(self.signals, self.regions)):
            if s == signal and r == region:
                return i
        raise ValueError(f"dataset {self.name!r} has no column {signal!r} for region {region!r}")

    def time_range(self) -> tuple[np.datetime64, np.datetime64]:
        """First and last interval beginnings (shipped datasets, or external after reading).

        **Returns:**

        `(first, last)` as `np.datetime64` minutes.
        """
        if self.start is None or self.n_steps is None:
            raise ValueError(f"dataset {self.name!r} has not been read yet; its range is unknown")
        stamps = regular_timestamps(np.datetime64(self.start, "m"), self.n_steps, self.resolution_minutes)
        return stamps[0], stamps[-1]


@dataclasses.dataclass(frozen=True)
class ResolvedSignal:
    """One requested signal bound to the dataset column that will provide it.

    **Arguments:**

    - `signal`: signal name.
    - `dataset`: the dataset that provides it.
    - `region`: its region, `None` for a signal without regions.
    """

    signal: str
    dataset: DatasetManifest
    region: str | None


def _manifest_from_entry(entry: dict) -> DatasetManifest:
    columns = entry["columns"]
    return DatasetManifest(
        name=entry["name"],
        source=entry["source"],
        signals=tuple(c["signal"] for c in columns),
        regions=tuple(c["region"] for c in columns),
        kind=entry["kind"],
        description=entry["description"],
        data_type=entry["data_type"],
        time_mode=entry["time_mode"],
        cyclic=bool(entry["cyclic"]),
        timezone=entry["timezone"],
        resolution_minutes=int(entry["resolution_minutes"]),
        start=entry["start"],
        n_steps=int(entry["n_steps"]),
        location="package",
        file=entry["file"],
    )


@functools.cache
def shipped_manifest() -> dict:
    """The parsed `profiles/manifest.json` (provenance, licences, per-column statistics).

    **Returns:**

    The manifest as a dict.
    """
    resource = importlib.resources.files("powerzoojax.data") / "profiles" / "manifest.json"
    return json.loads(resource.read_text())


class DatasetRegistry:
    """Ordered set of datasets; order is resolution priority (first match wins).

    **Arguments:**

    - `manifests`: the datasets, highest priority first.
    """

    def __init__(self, manifests: Sequence[DatasetManifest]):
        names = [m.name for m in manifests]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate dataset names: {', '.join(duplicates)}")
        self._manifests: tuple[DatasetManifest, ...] = tuple(manifests)

    @classmethod
    def from_package(cls) -> "DatasetRegistry":
        """The registry of the shipped datasets, in the manifest's order.

        **Returns:**

        A [`DatasetRegistry`][powerzoojax.data.DatasetRegistry].
        """
        return cls([_manifest_from_entry(e) for e in shipped_manifest()["datasets"]])

    def __iter__(self) -> Iterator[DatasetManifest]:
        return iter(self._manifests)

    def __len__(self) -> int:
        return len(self._manifests)

    def with_datasets(self, manifests: Sequence[DatasetManifest]) -> "DatasetRegistry":
        """A registry with `manifests` appended (lowest priority).

        **Arguments:**

        - `manifests`: datasets to append.

        **Returns:**

        A new [`DatasetRegistry`][powerzoojax.data.DatasetRegistry].
        """
        return DatasetRegistry([*self._manifests, *manifests])

    def replace(self, manifest: DatasetManifest) -> "DatasetRegistry":
        """A registry with the dataset of the same name replaced by `manifest`.

        **Arguments:**

        - `manifest`: the new description.

        **Returns:**

        A new [`DatasetRegistry`][powerzoojax.data.DatasetRegistry].
        """
        return DatasetRegistry([manifest if m.name == manifest.name else m for m in self._manifests])

    def list_datasets(self) -> list[str]:
        """Dataset names, in priority order.

        **Returns:**

        A list of names.
        """
        return [m.name for m in self._manifests]

    def list_sources(self) -> list[str]:
        """Source families, in priority order.

        **Returns:**

        A list of source names, each once.
        """
        return list(dict.fromkeys(m.source for m in self._manifests))

    def list_signals(self) -> list[str]:
        """Signal names of every dataset.

        **Returns:**

        A list of signal names, each once.
        """
        return list(dict.fromkeys(s for m in self._manifests for s in m.signals))

    def get_manifest(self, name: str) -> DatasetManifest:
        """The dataset called `name`.

        **Arguments:**

        - `name`: dataset name.

        **Returns:**

        The [`DatasetManifest`][powerzoojax.data.DatasetManifest].

        Raises:
            ValueError: for an unknown name (the message lists the valid names).
        """
        for manifest in self._manifests:
            if manifest.name == name:
                return manifest
        raise ValueError(f"Unknown dataset {name!r}; valid datasets: {', '.join(self.list_datasets())}")

    def find_by_source(self, source: str) -> list[DatasetManifest]:
        """Datasets whose source or name is `source`.

        **Arguments:**

        - `source`: source family or dataset name.

        **Returns:**

        A list of [`DatasetManifest`][powerzoojax.data.DatasetManifest], in priority order.

        Raises:
            ValueError: for an unknown source (the message lists sources and dataset names).
        """
        found = [m for m in self._manifests if source in (m.source, m.name)]
        if not found:
            raise ValueError(
                f"Unknown source {source!r}; valid sources: {', '.join(self.list_sources())} "
                f"(dataset names are accepted too: {', '.join(self.list_datasets())})"
            )
        return found

    def find_by_signal(
        self, signal: str, source: str | None = None, data_type: str | None = None
    ) -> list[DatasetManifest]:
        """Datasets providing `signal`, in priority order.

        **Arguments:**

        - `signal`: signal name.
        - `source`: keep only datasets of this source or name; `None` for all.
        - `data_type`: keep only datasets of this data type; `None` for all.

        **Returns:**

        A list of [`DatasetManifest`][powerzoojax.data.DatasetManifest]; empty if none.
        """
        check_signal(signal)
        pool = self._manifests if source is None else tuple(self.find_by_source(source))
        return [m for m in pool if m.provides(signal) and (data_type is None or m.data_type == data_type)]

    def resolve_signals(
        self, signals: Sequence[str], source: str | None = None, region: str | None = None
    ) -> list[ResolvedSignal]:
        """Bind each signal to a dataset column.

        Rule: among the datasets of `source` (all if `None`), a dataset whose columns for the
        signal match `region` (a regional column if `region` is given, a column without
        region otherwise). One dataset providing every signal is preferred; otherwise each
        signal takes its first match in priority order.

        **Arguments:**

        - `signals`: signal names.
        - `source`: source family or dataset name; `None` for all.
        - `region`: region of regional signals; `None` for signals without regions.

        **Returns:**

        A list of [`ResolvedSignal`][powerzoojax.data.ResolvedSignal], in request order.

        Raises:
            ValueError: for an unknown signal or source, a signal the source lacks, a region
                the data lack or a regional signal requested without a region; the message
                names the valid choices.
        """
        for signal in signals:
            check_signal(signal)
        pool = self._manifests if source is None else tuple(self.find_by_source(source))

        def matches(manifest: DatasetManifest, signal: str) -> bool:
            if not manifest.provides(signal):
                return False
            regions = manifest.regions_of(signal)
            return region in regions if region is not None else not regions

        for manifest in pool:
            if all(matches(manifest, s) for s in signals):
                return [ResolvedSignal(s, manifest, region) for s in signals]
        resolved = []
        for signal in signals:
            found = next((m for m in pool if matches(m, signal)), None)
            if found is None:
                raise ValueError(self._unresolvable(signal, source, region, pool))
            resolved.append(ResolvedSignal(signal, found, region))
        return resolved

    def _unresolvable(
        self, signal: str, source: str | None, region: str | None, pool: Sequence[DatasetManifest]
    ) -> str:
        providers = [m for m in pool if m.provides(signal)]
        where = f" from source {source!r}" if source is not None else ""
        if not providers:
            everywhere = sorted({m.source for m in self._manifests if m.provides(signal)})
            return (
                f"signal {signal!r} is not available{where}; sources providing it: "
                f"{', '.join(everywhere) if everywhere else 'none (no loaded dataset has it)'}"
            )
        regional = sorted({r for m in providers for r in m.regions_of(signal)})
        if region is None:
            return (
                f"signal {signal!r}{where} is given per region; pass region=, valid regions: "
                f"{', '.join(regional)}"
            )
        if not regional:
            return f"signal {signal!r}{where} has no regions; drop region={region!r}"
        return f"Unknown region {region!r} for signal {signal!r}{where}; valid regions: {', '.join(regional)}"


@functools.cache
def default_registry() -> DatasetRegistry:
    """The registry of the shipped datasets (cached).

    **Returns:**

    A [`DatasetRegistry`][powerzoojax.data.DatasetRegistry].
    """
    return DatasetRegistry.from_package()
