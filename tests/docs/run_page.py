"""Runs documentation pages' Python blocks: each page in order, in one namespace, in its own process.

``python run_page.py PAGE.md`` runs one page in this interpreter. ``python run_page.py
--serve`` imports JAX and the installed ``powerzoojax`` distributions once, then reads
one JSON request per line on stdin (``{"page", "cwd", "stdout", "stderr", "timeout_s"}``),
forks a child per page and answers ``{"returncode": ...}`` on stdout. Forking after the
imports saves each page the few CPU-seconds of importing JAX; JAX's backend is only
initialised in the child, so every page still starts from a fresh runtime.

Each block is compiled under the page's path with its own line numbers, so a traceback
points at the Markdown line that failed.
"""

import importlib
import importlib.util
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from snippets import python_blocks  # noqa: E402

PRELOAD = ("jax", "jax.numpy", "equinox", "optax", "numpy", "powerzoojax.core", "powerzoojax.case",
           "powerzoojax.envs", "powerzoojax.data", "powerzoojax.grid", "powerzoojax.market", "powerzoojax.rl")


def run_page(page: str) -> None:
    path = Path(page)
    namespace: dict = {"__name__": "__main__"}
    for block in python_blocks(path.read_text(encoding="utf-8")):
        if not block.runs:
            continue
        started = time.perf_counter()
        source = "\n" * (block.line - 1) + block.code
        exec(compile(source, str(path), "exec"), namespace)
        print(f"[block at line {block.line}: {time.perf_counter() - started:.1f} s]", flush=True)


def _preload() -> None:
    for module in PRELOAD:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            importlib.import_module(module)


def _run_child(request: dict) -> None:
    """Body of a forked child: never returns."""
    code = 1
    try:
        os.chdir(request["cwd"])
        for fd, name in ((1, "stdout"), (2, "stderr")):
            target = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        signal.alarm(int(request["timeout_s"]))  # SIGALRM ends a page that hangs
        run_page(request["page"])
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    _preload()
    from jax._src import xla_bridge

    # A backend started by an import lives in this process; forked pages would inherit its
    # runtime without its threads and can hang on their first computation.
    if xla_bridge.backends_are_initialized():
        raise SystemExit("importing the library started JAX's backend; pages cannot be forked from this server")
    reply = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_child(request)
        _, status = os.waitpid(pid, 0)
        reply.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        reply.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        run_page(sys.argv[1])
