"""String ids for every env and task: `make(env_id, **overrides) -> (env, params)`.

Distributions register their envs through the entry-point group `powerzoojax.envs`
(`[project.entry-points."powerzoojax.envs"]` in their `pyproject.toml`): each entry
point names a callable that returns an iterable of `EnvSpec`. A third-party package
adds envs the same way, without touching this project. The first-party ids are also listed
in `powerzoojax.envs._catalog`, so an id whose distribution is not installed is recognised
and the error names what to install; the first-party distributions build their specs from
that list with `first_party_specs`.

Nothing is imported until it is needed: listing ids loads only third-party entry points,
and `make` loads the one distribution that provides the id.
"""

import dataclasses
import difflib
import fnmatch
import importlib
import inspect
import re
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from powerzoojax.envs._catalog import CATALOG, CatalogEntry
from powerzoojax.envs._facade import entry_point_distribution, installed_distribution, installed_entry_points

ENTRY_POINT_GROUP = "powerzoojax.envs"
# [namespace/]Name[-segment...]-v<version>; segments may hold '_' and '.' (case ids).
_ID_PATTERN = re.compile(r"^(?:[A-Za-z0-9_.-]+/)?[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_.]+)*-v\d+$")
_FORWARDS = "__powerzoojax_forwards__"


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """What an env id stands for: the builder and the arguments the id fixes.

    **Arguments:**

    - `id`: `[namespace/]Name[-segment...]-v<version>`, e.g. `"TransGrid-case118-dc-v0"`.
    - `entry_point`: the builder `(**kwargs) -> (env, params)`, or `"module:attr"` naming
      it (imported when the id is made).
    - `kwargs`: the arguments the id fixes (`{"case": "118", "mode": "dc"}`); `make`
      refuses overrides that contradict them.
    - `requires`: the distributions the builder needs (`("pzj-rl", "pzj-grid")`); a missing
      one is named in `make`'s error.
    - `multi_agent`: True when `env` is a multi-agent adapter (params bound).
    - `summary`: one line for listings.

    A builder decorated with `forwards_overrides` accepts the keyword arguments of the
    params factory it forwards to; otherwise it accepts its own named keyword arguments (any,
    when it takes `**kwargs`).
    """

    id: str
    entry_point: str | Callable[..., Any]
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    requires: tuple[str, ...] = ()
    multi_agent: bool = False
    summary: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID_PATTERN.match(self.id):
            raise ValueError(
                f"EnvSpec: id {self.id!r} does not follow '[namespace/]Name[-segment...]-v<version>' "
                "(e.g. 'TransGrid-case118-dc-v0')"
            )
        if isinstance(self.entry_point, str):
            if not re.match(r"^[\w.]+:[\w.]+$", self.entry_point):
                raise ValueError(f"EnvSpec {self.id!r}: entry_point {self.entry_point!r} must be 'module:attr' or a callable")
        elif not callable(self.entry_point):
            raise TypeError(f"EnvSpec {self.id!r}: entry_point must be 'module:attr' or a callable, got {self.entry_point!r}")
        object.__setattr__(self, "kwargs", types.MappingProxyType(dict(self.kwargs)))
        object.__setattr__(self, "requires", tuple(self.requires))

    def load(self) -> Callable[..., Any]:
        """The builder (importing its module when `entry_point` is a string).

        **Returns:**

        The callable that builds `(env, params)`.
        """
        return _load_target(self.entry_point)

    def accepted_overrides(self) -> tuple[str, ...] | None:
        """Names `make` accepts as overrides for this id.

        **Returns:**

        The names, sorted; `None` when the builder takes any keyword.
        """
        builder = self.load()
        own, open_ended = _keyword_names(builder)
        forwards = getattr(builder, _FORWARDS, None)
        if forwards is None and open_ended:
            return None
        names = set(own)
        if forwards is not None:
            factories, fills = forwards
            for factory in factories:
                names |= set(_keyword_names(_load_target(factory))[0]) - set(fills)
        return tuple(sorted(names - set(self.kwargs)))


def _load_target(target: str | Callable[..., Any]) -> Any:
    if callable(target):
        return target
    module_name, _, attr = target.partition(":")
    loaded: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        loaded = getattr(loaded, part)
    return loaded


def forwards_overrides(*factories: str | Callable[..., Any], fills: Iterable[str] = ()) -> Callable[[Any], Any]:
    """Mark a builder as forwarding its `**overrides` to `factories`, so `make`
    checks override names against those factories' keyword arguments.

    **Arguments:**

    - `factories`: the params factories (or classes) the overrides reach, or `"module:attr"`
      strings naming them (imported only when overrides are checked).
    - `fills`: their arguments the builder sets itself (the case, the mode's switches),
      which are therefore not overrides.

    **Returns:** a decorator returning the builder unchanged (one attribute added).
    """

    def decorate(builder: Any) -> Any:
        setattr(builder, _FORWARDS, (tuple(factories), tuple(fills)))
        return builder

    return decorate


def _keyword_names(fn: Callable[..., Any]) -> tuple[list[str], bool]:
    signature = inspect.signature(fn)
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = [p.name for p in signature.parameters.values() if p.kind in kinds]
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    return names, open_ended


def _installed_entry_points() -> list[Any]:
    return installed_entry_points(ENTRY_POINT_GROUP)


def _alias(env_id: str) -> str | None:
    """`Family-case33bw-v0` -> `Family-33bw-v0` (the case segment without its prefix)."""
    alias = re.sub(r"-case([A-Za-z0-9_.]+)(?=-)", r"-\1", env_id, count=1)
    return alias if alias != env_id else None


class EnvRegistry:
    """A table of env ids: the catalog of first-party ids plus what entry points and
    `register` add. `powerzoojax.envs.make` and friends use one shared instance.

    **Arguments:**

    - `entry_points`: returns the installed `powerzoojax.envs` entry points (objects with
      `name`, `value`, `load()` and optionally `dist.name`); default: the installed
      distributions' metadata.
    - `is_installed`: whether a distribution is installed; default: its metadata exists.
    - `catalog`: first-party id -> `powerzoojax.envs._catalog.CatalogEntry`.
    """

    def __init__(
        self,
        entry_points: Callable[[], Iterable[Any]] = _installed_entry_points,
        is_installed: Callable[[str], bool] = installed_distribution,
        catalog: Mapping[str, CatalogEntry] = CATALOG,
    ):
        self._entry_point_source = entry_points
        self._is_installed = is_installed
        self._catalog = dict(catalog)
        self._providers = {entry.requires[0] for entry in self._catalog.values()}
        self._specs: dict[str, EnvSpec] = {}
        self._entry_points: list[Any] | None = None
        self._loaded: set[tuple[str, str]] = set()
        self._installed: dict[str, bool] = {}

    # -- registration ------------------------------------------------------------------
    def register(self, spec: EnvSpec, *, replace: bool = False) -> None:
        """Add `spec`; an id already registered raises `ValueError` unless `replace`."""
        if not isinstance(spec, EnvSpec):
            raise TypeError(f"register: expected an EnvSpec, got {type(spec).__name__}")
        if spec.id in self._specs and not replace:
            raise ValueError(f"register: env id {spec.id!r} is already registered; pass replace=True to replace it")
        self._specs[spec.id] = spec

    def _installed_now(self, distribution: str) -> bool:
        if distribution not in self._installed:
            self._installed[distribution] = bool(self._is_installed(distribution))
        return self._installed[distribution]

    def _all_entry_points(self) -> list[Any]:
        if self._entry_points is None:
            self._entry_points = list(self._entry_point_source())
        return self._entry_points

    def _load(self, entry_points: Iterable[Any]) -> None:
        for entry_point in entry_points:
            key = (entry_point.name, entry_point.value)
            if key in self._loaded:
                continue
            self._loaded.add(key)
            source = f"entry point {entry_point.name!r} ({entry_point.value}) of {entry_point_distribution(entry_point)}"
            try:
                loaded = entry_point.load()
                specs = list(loaded() if callable(loaded) else loaded)  # pyright: ignore[reportArgumentType]
            except Exception as err:  # noqa: BLE001 - one broken plugin must not hide the others' envs
                warnings.warn(f"powerzoojax.envs: {source} failed to load ({type(err).__name__}: {err}); its envs are unavailable", RuntimeWarning, stacklevel=3)
                continue
            for spec in specs:
                if not isinstance(spec, EnvSpec):
                    warnings.warn(f"powerzoojax.envs: {source} returned {type(spec).__name__}, not EnvSpec; skipped", RuntimeWarning, stacklevel=3)
                elif spec.id in self._specs:
                    warnings.warn(f"powerzoojax.envs: {source} registers {spec.id!r} again; the first registration is kept", RuntimeWarning, stacklevel=3)
                else:
                    self._specs[spec.id] = spec

    def _load_third_party(self) -> None:
        self._load(ep for ep in self._all_entry_points() if entry_point_distribution(ep) not in self._providers)

    def _load_provider(self, distribution: str) -> None:
        self._load(ep for ep in self._all_entry_points() if entry_point_distribution(ep) == distribution)

    def _provider_registered(self, distribution: str) -> bool:
        return any(entry_point_distribution(ep) == distribution for ep in self._all_entry_points())

    def _available(self, entry: CatalogEntry) -> bool:
        return self._provider_registered(entry.requires[0]) and all(self._installed_now(d) for d in entry.requires[1:])

    # -- lookup ------------------------------------------------------------------------
    def _known_ids(self) -> list[str]:
        return sorted(set(self._catalog) | set(self._specs))

    def _canonical(self, env_id: str) -> str | None:
        known = self._known_ids()
        if env_id in known:
            return env_id
        folded: dict[str, str] = {}
        for candidate in known:
            folded.setdefault(candidate.lower(), candidate)
            alias = _alias(candidate)
            if alias is not None:
                folded.setdefault(alias.lower(), candidate)
        return folded.get(env_id.lower())

    def _resolve(self, env_id: str) -> str:
        if not isinstance(env_id, str):
            raise TypeError(f"env id must be a string such as 'TransGrid-case5-dc-v0', got {type(env_id).__name__}")
        canonical = self._canonical(env_id)
        if canonical is None:
            self._load_third_party()
            canonical = self._canonical(env_id)
        if canonical is None:
            known = self._known_ids()
            close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(
                f"unknown env id {env_id!r}{hint} (powerzoojax.envs.list_envs() lists the {len(known)} known ids)"
            )
        return canonical

    def spec(self, env_id: str) -> EnvSpec:
        """The `EnvSpec` of `env_id` (see `powerzoojax.envs.spec`)."""
        canonical = self._resolve(env_id)
        if canonical in self._specs:
            self._check_requires(canonical, self._specs[canonical].requires)
            return self._specs[canonical]
        entry = self._catalog[canonical]
        self._check_requires(canonical, entry.requires)
        self._load_provider(entry.requires[0])
        if canonical not in self._specs:
            raise ImportError(
                f"env id {canonical!r} is provided by {entry.requires[0]}, but the installed {entry.requires[0]} does not "
                f"register it (no {ENTRY_POINT_GROUP!r} entry point lists it): reinstall {entry.requires[0]}"
            )
        return self._specs[canonical]

    def _check_requires(self, env_id: str, requires: tuple[str, ...]) -> None:
        missing = [d for d in requires if not self._installed_now(d)]
        if missing:
            names = " and ".join(missing)
            verb = "is" if len(missing) == 1 else "are"
            raise ImportError(f"env id {env_id!r} needs {names}, which {verb} not installed: pip install {' '.join(missing)}")

    # -- the public operations ---------------------------------------------------------
    def ids(
        self, pattern: str | None = None, *, multi_agent: bool | None = None, include_uninstalled: bool = False,
    ) -> list[str]:
        """Ids, sorted (see `powerzoojax.envs.list_envs`)."""
        self._load_third_party()
        rows: dict[str, bool] = {}
        for env_id, entry in self._catalog.items():
            if include_uninstalled or self._available(entry):
                rows[env_id] = entry.multi_agent
        for env_id, spec in self._specs.items():
            rows[env_id] = spec.multi_agent
        return sorted(
            env_id
            for env_id, is_multi in rows.items()
            if (multi_agent is None or is_multi == multi_agent) and (pattern is None or fnmatch.fnmatchcase(env_id, pattern))
        )

    def make(self, env_id: str, **overrides: Any) -> tuple[Any, Any]:
        """Build `(env, params)` for `env_id` (see `powerzoojax.envs.make`)."""
        spec = self.spec(env_id)
        self._check_overrides(spec, overrides)
        built = spec.load()(**spec.kwargs, **overrides)
        if not (isinstance(built, tuple) and len(built) == 2):
            raise TypeError(f"make({spec.id!r}): the builder {spec.entry_point!r} must return (env, params), got {type(built).__name__}")
        return built

    def _check_overrides(self, spec: EnvSpec, overrides: Mapping[str, Any]) -> None:
        fixed = {k: v for k, v in overrides.items() if k in spec.kwargs}
        if fixed:
            key, value = next(iter(fixed.items()))
            other = self._variant(spec, fixed)
            hint = f"; use {other!r}" if other else ""
            raise ValueError(
                f"make({spec.id!r}): {key}={value!r} contradicts the id, which fixes {key}={spec.kwargs[key]!r}{hint}"
            )
        accepted = spec.accepted_overrides()
        if accepted is None:
            return
        for key in overrides:
            if key not in accepted:
                close = difflib.get_close_matches(key, accepted, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TypeError(f"make({spec.id!r}): unknown override {key!r}{hint}; accepted: {', '.join(accepted)}")

    def _variant(self, spec: EnvSpec, fixed: Mapping[str, Any]) -> str | None:
        entry = self._catalog.get(spec.id)
        if entry is None:
            return None
        wanted = {**entry.kwargs, **{k: str(v) for k, v in fixed.items()}}
        for other in self._catalog.values():
            if other.family == entry.family and dict(other.kwargs) == wanted:
                return other.id
        return None


def first_party_specs(
    distribution: str, builders: Mapping[str, Callable[..., Any]], describe: Callable[[CatalogEntry], str],
) -> list[EnvSpec]:
    """The `EnvSpec` of every catalogued id `distribution` registers (what a first-party
    distribution's `powerzoojax.envs` entry point returns).

    **Arguments:**

    - `distribution`: the registering distribution (`"pzj-grid"`, ...): the first of an
      entry's `requires`.
    - `builders`: family name -> builder `(**kwargs) -> (env, params)`.
    - `describe`: the one-line summary of an entry, for listings.

    **Returns:** a list of specs. Raises `ValueError` naming a family without a builder,
    so a distribution cannot silently drop ids the catalog promises.
    """
    entries = [entry for entry in CATALOG.values() if entry.requires[0] == distribution]
    missing = sorted({entry.family for entry in entries} - set(builders))
    if missing:
        raise ValueError(f"first_party_specs: {distribution} has no builder for the families {missing}")
    return [
        EnvSpec(
            id=entry.id, entry_point=builders[entry.family], kwargs=dict(entry.kwargs), requires=entry.requires,
            multi_agent=entry.multi_agent, summary=describe(entry),
        )
        for entry in entries
    ]


_REGISTRY = EnvRegistry()


def make(env_id: str, **overrides: Any) -> tuple[Any, Any]:
    """Build the env and params an id stands for.

    **Arguments:**

    - `env_id`: e.g. `"TransGrid-case118-dc-v0"`, `"DistGrid-33bw-v0"`, `"tso-v0"`
      (`list_envs` lists them; the case segment may omit its `case` prefix and
      letter case is ignored).
    - `overrides`: keyword arguments of the id's params factory (`max_steps=24`,
      `reward_scale=...`) or task (`split="iid"`). An unknown name raises `TypeError`
      listing the accepted ones; a value the id already fixes (its case, its mode) raises
      `ValueError` naming the id that has it.

    **Returns:** `(env, params)`: a single-agent `Environment` and its params, or for
    multi-agent ids (`GridMARL-...`, `ders-marl-v0`) the adapter and its bound params.
    An unknown id raises `ValueError` with the closest known ids; an id whose distribution
    is not installed raises `ImportError` naming it (`pip install pzj-grid`).
    """
    return _REGISTRY.make(env_id, **overrides)


def list_envs(pattern: str | None = None, *, multi_agent: bool | None = None, include_uninstalled: bool = False) -> list[str]:
    """The env ids that can be made here, sorted.

    **Arguments:**

    - `pattern`: a shell-style filter (`"TransGrid-case5-*"`); None lists every id.
    - `multi_agent`: True for the multi-agent ids only, False for the single-agent ones.
    - `include_uninstalled`: also list the first-party ids whose distribution is missing.

    **Returns:** a list of id strings.
    """
    return _REGISTRY.ids(pattern, multi_agent=multi_agent, include_uninstalled=include_uninstalled)


def spec(env_id: str) -> EnvSpec:
    """The `EnvSpec` of an id (builder, fixed arguments, required distributions).

    **Arguments:**

    - `env_id`: as for `make`.

    **Returns:** the spec; raises as `make` for an unknown or unavailable id.
    """
    return _REGISTRY.spec(env_id)


def register(spec: EnvSpec, *, replace: bool = False) -> None:
    """Register an id at run time (packages should prefer the `powerzoojax.envs` entry point).

    **Arguments:**

    - `spec`: the `EnvSpec`.
    - `replace`: replace an id already registered instead of raising `ValueError`.

    **Returns:** None.
    """
    _REGISTRY.register(spec, replace=replace)
