"""Importing the library starts nothing: no JAX backend, no thread.

A backend started at import (an array built at module level) fixes the platform before the
user's `jax.config.update("jax_platforms", ...)` runs, takes the accelerator as soon as the
package is imported, and starts XLA's thread pools in the importing process. A process that
then forks (a page server, a multiprocessing pool with the fork method) hands its children a
runtime whose threads did not survive the fork, where the first computation can hang.
"""

import subprocess
import sys

_PROBE = """
import importlib, os, pkgutil
from jax._src import xla_bridge
import powerzoojax

threads = len(os.listdir(f"/proc/{os.getpid()}/task"))
imported = 0
for module in pkgutil.walk_packages(powerzoojax.__path__, "powerzoojax."):
    try:
        importlib.import_module(module.name)
    except ImportError as error:  # a module of a distribution not installed here
        if "powerzoojax" not in str(error):
            raise
        continue
    imported += 1
    if xla_bridge.backends_are_initialized():
        raise SystemExit(f"importing {module.name} started JAX's backend")
after = len(os.listdir(f"/proc/{os.getpid()}/task"))
if after != threads:
    raise SystemExit(f"importing the library started {after - threads} thread(s) ({threads} -> {after})")
print(imported)
"""


def test_importing_every_module_starts_no_backend_and_no_thread():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert int(out.stdout.split()[-1]) > 20, out.stdout
