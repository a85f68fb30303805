"""Import of a module that another distribution provides, for lazy cross-distribution forwarding.

The facades (`powerzoojax.envs`, `powerzoojax.tasks`) and the few reference-compatible entry
points whose home layer differs from the layer of what they build (a task factory that returns a
multi-agent adapter of pzj-rl, a data helper that edits pzj-grid params) reach the providing
distribution only through this function, by module name and at call time: no distribution
imports a layer above it at import time, and a missing provider is named in the error.
"""

import importlib
from types import ModuleType


def import_provider(module_name: str, what: str, distribution: str) -> ModuleType:
    """The module `module_name`, imported now.

    **Arguments:**

    - `module_name`: dotted module path, e.g. `"powerzoojax.rl"`.
    - `what`: the name the caller wants from it, used in the error message.
    - `distribution`: the distribution that ships the module, e.g. `"pzj-rl"`.

    **Returns:** the module. Raises `ImportError("<what> is provided by <distribution>: pip
    install <distribution>")` when that module (or a parent package) is not installed; an
    import error raised inside an installed provider propagates unchanged, so real bugs are
    not masked.
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and (module_name == err.name or module_name.startswith(err.name + ".")):
            raise ImportError(f"{what} is provided by {distribution}: pip install {distribution}") from err
        raise


# Distributions a pzj-rl preset may need beyond pzj-rl itself: top-level module ->
# (distribution, the pzj-rl extra that installs it).
PRESET_EXTRAS: dict[str, tuple[str, str]] = {
    "powerzoojax.grid": ("pzj-grid", "grid"),
    "powerzoojax.market": ("pzj-market", "market"),
}


def missing_extra_message(err: BaseException, what: str = "this preset") -> str | None:
    """One line naming the pzj-rl extra to install when `err` (or an exception it was
    raised from) is the import of a missing grid or market module; None otherwise, so
    the caller re-raises anything else unchanged.

    Call it where a preset's env is built: `except ImportError as err:` then report
    `missing_extra_message(err, f"preset {name!r}")` when it is not None.
    """
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        name = getattr(cause, "name", None) if isinstance(cause, ModuleNotFoundError) else None
        for module, (distribution, extra) in PRESET_EXTRAS.items():
            if name is not None and (name == module or name.startswith(module + ".") or module.startswith(name + ".")):
                return (
                    f"{what} needs {distribution}, which is not installed: "
                    f"pip install 'pzj-rl[{extra}]' (or 'pzj-rl[all]')"
                )
        cause = cause.__cause__ or cause.__context__
    return None
