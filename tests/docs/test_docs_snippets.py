"""Every ```python block of docs/**/*.md and of README.md runs, so the documentation cannot
drift from the code.

Blocks of one page run in sequence in one namespace, in a process of their own (what a
reader pasting the page into a script gets). The processes are forked from one page server
that has imported JAX once (see run_page.py), which keeps the file's run time down. A page whose front matter ``requires`` a
module that is not installed is skipped with the module named, so the suite stays
meaningful when one distribution is installed alone.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from snippets import DOCS_DIR, NO_RUN_COMMENT, README, pages, python_blocks, required_modules

RUNNER = Path(__file__).resolve().parent / "run_page.py"
REPO_ROOT = DOCS_DIR.parent
PAGE_TIMEOUT_S = 300


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _page_id(page: Path) -> str:
    return page.name if page == README else page.relative_to(DOCS_DIR).as_posix()


# README.md carries no front matter (GitHub would show it); what its blocks import beyond pzj-core.
README_REQUIRES = ("powerzoojax.grid", "powerzoojax.rl", "matplotlib", "gymnasium", "pettingzoo")


def _requirements(page: Path) -> tuple[str, ...]:
    return README_REQUIRES if page == README else required_modules(page.read_text(encoding="utf-8"))


_PAGES_WITH_CODE = [
    page for page in [*pages(), README] if any(b.runs for b in python_blocks(page.read_text(encoding="utf-8")))
]


def _child_environment() -> dict[str, str]:
    env = dict(os.environ)
    # Same compiler set-up and persistent compile cache as the rest of the suite
    # (tests/conftest.py), so re-runs reuse compiled programs.
    if env.get("PZJ_TEST_XLA_DEFAULT") != "1" and "xla_cpu_use_fusion_emitters" not in env.get("XLA_FLAGS", ""):
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_use_fusion_emitters=false").strip()
    env.setdefault("JAX_COMPILATION_CACHE_DIR", str(REPO_ROOT / ".pytest_cache" / "jax-compile"))
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env["MPLBACKEND"] = "Agg"
    return env


# A misspelt requirement would skip its page everywhere; only these modules may be named.
DISTRIBUTION_MODULES = {"powerzoojax.grid", "powerzoojax.market", "powerzoojax.rl"}


@pytest.mark.parametrize("page", pages(), ids=_page_id)
def test_requirements_name_distributions(page: Path):
    unknown = set(required_modules(page.read_text(encoding="utf-8"))) - DISTRIBUTION_MODULES
    assert not unknown, f"{_page_id(page)} requires {sorted(unknown)}; expected a subset of {sorted(DISTRIBUTION_MODULES)}"


def test_docs_have_runnable_pages():
    assert len(_PAGES_WITH_CODE) >= 10, [_page_id(p) for p in _PAGES_WITH_CODE]
    assert README in _PAGES_WITH_CODE


@pytest.fixture(scope="module")
def page_server():
    server = subprocess.Popen(
        [sys.executable, str(RUNNER), "--serve"],
        env=_child_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    yield server
    server.stdin.close()
    server.wait(timeout=60)
    server.stdout.close()


@pytest.mark.parametrize("page", _PAGES_WITH_CODE, ids=_page_id)
def test_page_code_runs(page: Path, tmp_path: Path, page_server):
    missing = [m for m in _requirements(page) if not _installed(m)]
    if missing:
        pytest.skip(f"{_page_id(page)} needs {', '.join(missing)}, which is not installed in this environment")
    request = {
        "page": str(page),
        "cwd": str(tmp_path),  # files a page writes land in a scratch folder
        "stdout": str(tmp_path / "stdout.txt"),
        "stderr": str(tmp_path / "stderr.txt"),
        "timeout_s": PAGE_TIMEOUT_S,
    }
    page_server.stdin.write(json.dumps(request) + "\n")
    page_server.stdin.flush()
    reply = page_server.stdout.readline()
    assert reply, f"the page server died while running {_page_id(page)}"
    returncode = json.loads(reply)["returncode"]
    stdout = (tmp_path / "stdout.txt").read_text(errors="replace")
    stderr = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert returncode == 0, f"{_page_id(page)} failed (exit {returncode}):\n{stdout[-4000:]}\n{stderr[-8000:]}"


@pytest.mark.parametrize("page", [*pages(), README], ids=_page_id)
def test_blocks_left_out_say_why(page: Path):
    for block in python_blocks(page.read_text(encoding="utf-8")):
        if not block.runs:
            assert block.code.lstrip().startswith(NO_RUN_COMMENT), (
                f"{_page_id(page)}:{block.line}: a block not run in tests must start with '{NO_RUN_COMMENT} <reason>'"
            )


def test_blocks_left_out_are_rare():
    left_out = [
        f"{_page_id(page)}:{block.line}"
        for page in pages()
        for block in python_blocks(page.read_text(encoding="utf-8"))
        if not block.runs
    ]
    assert len(left_out) <= 6, left_out
