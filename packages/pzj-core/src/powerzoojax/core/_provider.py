"""Import of a module that another distribution provides, for lazy cross-distribution forwarding.

The facades (``powerzoojax.envs``, ``powerzoojax.tasks``) and the few reference-compatible entry
points whose home layer differs from the layer of what they build (a task factory that returns a
multi-agent adapter of pzj-rl, a data helper that edits pzj-grid params) reach the providing
distribution only through this function, by module name and at call time: no distribution
imports a layer above it at import time, and a missing provider is named in the error.
"""

import importlib
from types import ModuleType


def import_provider(module_name: str, what: str, distribution: str) -> ModuleType:
    """The module ``module_name``, imported now.

    **Arguments:**

    - `module_name`: dotted module path, e.g. ``"powerzoojax.rl"``.
    - `what`: the name the caller wants from it, used in the error message.
    - `distribution`: the distribution that ships the module, e.g. ``"pzj-rl"``.

    **Returns:** the module. Raises ``ImportError("<what> is provided by <distribution>: pip
    install <distribution>")`` when that module (or a parent package) is not installed; an
    import error raised inside an installed provider propagates unchanged, so real bugs are
    not masked.
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and (module_name == err.name or module_name.startswith(err.name + ".")):
            raise ImportError(f"{what} is provided by {distribution}: pip install {distribution}") from err
        raise
