"""Runs one documentation page's Python blocks in order, in one namespace.

Usage: ``python run_page.py PAGE.md``. Each block is compiled under the page's path with
its own line numbers, so a traceback points at the Markdown line that failed.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from snippets import python_blocks  # noqa: E402


def main(page: str) -> None:
    path = Path(page)
    namespace: dict = {"__name__": "__main__"}
    for block in python_blocks(path.read_text(encoding="utf-8")):
        if not block.runs:
            continue
        started = time.perf_counter()
        source = "\n" * (block.line - 1) + block.code
        exec(compile(source, str(path), "exec"), namespace)
        print(f"[block at line {block.line}: {time.perf_counter() - started:.1f} s]", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
