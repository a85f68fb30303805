"""The lookup behind the facades `powerzoojax.envs` and `powerzoojax.tasks`: a name is found
in the facade's own table (pzj-core's names) or among the names the installed distributions
register, and imported on first access.

A distribution adds a name to a facade with one entry point per name in the group
`<facade>.names` of its `pyproject.toml` (`TransGridEnv = "powerzoojax.grid.transmission:TransGridEnv"`;
the attribute may differ from the name, which makes an alias). Reading the entry points
imports nothing, so the facades stay lazy; the module is imported when the name is first
asked for, and a missing module is reported with the distribution to install. A name of a
first-party distribution that is not installed has no entry point; `powerzoojax.envs._catalog`
names its distribution for the error.
"""

import dataclasses
import importlib.metadata
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from powerzoojax.core._provider import import_provider
from powerzoojax.envs._catalog import FIRST_PARTY, FIRST_PARTY_NAMES

CORE = "pzj-core"


@dataclasses.dataclass(frozen=True)
class Export:
    """One name of a facade and where it comes from.

    **Arguments:**

    - `name`: the name in the facade (`"TransGridState"`).
    - `module`: the module that defines it (`"powerzoojax.grid.transmission"`).
    - `attr`: its name in that module, dotted if nested (`"GridState"`).
    - `distribution`: the distribution that ships the module (`"pzj-grid"`).
    """

    name: str
    module: str
    attr: str
    distribution: str


def distribution_order(distribution: str) -> tuple[int, str]:
    """Sort key of a distribution: pzj-core, then the first-party ones in `FIRST_PARTY`
    order, then any other package by name; the first registration of a name wins."""
    order = [CORE, *FIRST_PARTY]
    return (order.index(distribution) if distribution in order else len(order), distribution)


def entry_point_distribution(entry_point: Any) -> str:
    """The name of the distribution that declares `entry_point` (its own name when the
    metadata does not say)."""
    dist = getattr(entry_point, "dist", None)
    return dist.name if dist is not None else entry_point.name


def installed_entry_points(group: str) -> list[Any]:
    """The installed entry points of `group`, once each, first-party distributions first."""
    seen: dict[tuple[str, str, str], Any] = {}
    for entry_point in importlib.metadata.entry_points(group=group):
        seen.setdefault((entry_point_distribution(entry_point), entry_point.name, entry_point.value), entry_point)
    return sorted(seen.values(), key=lambda ep: distribution_order(entry_point_distribution(ep)))


def installed_distribution(name: str) -> bool:
    """Whether the distribution `name` is installed (its metadata exists)."""
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def load_attribute(module: Any, attr: str) -> Any:
    """`module.<attr>`, following a dotted `attr`."""
    value = module
    for part in attr.split("."):
        value = getattr(value, part)
    return value


class Facade:
    """The names of one facade module: pzj-core's own and those the installed distributions
    register in the entry-point group `<module_name>.names`.

    **Arguments:**

    - `module_name`: the facade (`"powerzoojax.envs"`).
    - `own`: pzj-core's names in it: name -> `"module:attr"`.
    - `entry_points`: returns the installed entry points of a group (objects with `name`,
      `value`, optionally `dist.name`); default: the installed distributions' metadata.
    """

    def __init__(
        self,
        module_name: str,
        own: Mapping[str, str],
        entry_points: Callable[[str], Iterable[Any]] = installed_entry_points,
    ):
        self.module_name = module_name
        self.group = f"{module_name}.names"
        self._own = {name: _export(name, target, CORE) for name, target in own.items()}
        self._entry_points = entry_points
        self._exports: dict[str, Export] | None = None

    def exports(self) -> dict[str, Export]:
        """Every name that resolves here: pzj-core's, then the registered ones (the first
        registration of a name wins; a later one is reported and ignored)."""
        if self._exports is None:
            exports = dict(self._own)
            for entry_point in self._entry_points(self.group):
                distribution = entry_point_distribution(entry_point)
                export = _export(entry_point.name, entry_point.value, distribution)
                kept = exports.setdefault(export.name, export)
                if kept is not export and kept != export:
                    warnings.warn(
                        f"{self.module_name}: {distribution} registers {export.name!r} again ({entry_point.value}); "
                        f"the registration of {kept.distribution} ({kept.module}:{kept.attr}) is kept",
                        RuntimeWarning, stacklevel=2,
                    )
            self._exports = exports
        return self._exports

    def uninstalled(self) -> dict[str, str]:
        """The first-party names no installed distribution registers: name -> the
        distribution that provides them."""
        exports = self.exports()
        return {
            name: distribution
            for distribution, facades in FIRST_PARTY_NAMES.items()
            for name in facades.get(self.module_name, ())
            if name not in exports
        }

    def names(self) -> list[str]:
        """Every name of the facade, installed or not, sorted."""
        return sorted({*self.exports(), *self.uninstalled()})

    def providers(self) -> dict[str, tuple[str, str]]:
        """name -> (module that defines it, distribution that ships it); for a first-party
        name that is not installed, the distribution's package stands for the module."""
        table = {name: (export.module, export.distribution) for name, export in self.exports().items()}
        for name, distribution in self.uninstalled().items():
            table[name] = (FIRST_PARTY[distribution], distribution)
        return table

    def aliases(self) -> dict[str, str]:
        """name -> its name in its module, where the two differ."""
        return {name: export.attr for name, export in self.exports().items() if export.attr != name}

    def resolve(self, name: str) -> Any:
        """The object `name` stands for, importing its module now.

        Raises `ImportError` naming the distribution to install when `name` belongs to one
        that is missing (or whose module is missing), and `AttributeError` for any other
        unknown name; an import error inside an installed distribution propagates.
        """
        export = self.exports().get(name)
        if export is not None:
            return load_attribute(import_provider(export.module, name, export.distribution), export.attr)
        distribution = self.uninstalled().get(name)
        if distribution is None:
            raise AttributeError(f"module {self.module_name!r} has no attribute {name!r}")
        # No entry point names it: the distribution is missing (the import below raises the
        # message naming it), or its package imports but its metadata lacks the name.
        import_provider(FIRST_PARTY[distribution], name, distribution)
        raise ImportError(
            f"{name} is provided by {distribution}, but the installed {distribution} does not register it "
            f"(no {self.group!r} entry point names it): reinstall {distribution}"
        )


    def module_hooks(
        self, namespace: dict[str, Any], defined: Iterable[str]
    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
        """The facade module's `__getattr__` and `__dir__`: its own `defined` names and every
        name of the facade; a resolved name is cached in the module's `namespace`.
        `_LAZY` (name -> (module, distribution)) and `_ALIASES` (name -> attribute) answer
        for the forwarded names."""
        defined = tuple(defined)

        def __getattr__(name: str) -> Any:
            if name == "__all__":
                return [*defined, *self.names()]
            if name == "_LAZY":
                return self.providers()
            if name == "_ALIASES":
                return self.aliases()
            value = self.resolve(name)
            namespace[name] = value
            return value

        def __dir__() -> list[str]:
            return sorted({*defined, *self.names()})

        return __getattr__, __dir__

def _export(name: str, target: str, distribution: str) -> Export:
    module, _, attr = target.partition(":")
    attr = attr.split("[")[0]  # an entry point's optional extras, meaningless here
    return Export(name=name, module=module.strip(), attr=(attr.strip() or name), distribution=distribution)
