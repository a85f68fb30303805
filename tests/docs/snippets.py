"""Reading the documentation's code blocks: which pages run, what they need, which blocks.

A page runs its ```` ```python ```` blocks in order, in one namespace. A block opened as
```` ```python title="not run in tests" ```` is shown but never run; it must start with a
``# Not run in tests: <reason>`` comment, so the page itself says why. A page that needs
a distribution beyond pzj-core names the modules in its front matter::

    ---
    requires: [powerzoojax.grid, powerzoojax.rl]
    ---
"""

import re
from dataclasses import dataclass
from pathlib import Path

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
README = DOCS_DIR.parent / "README.md"

NO_RUN_TITLE = 'title="not run in tests"'
NO_RUN_COMMENT = "# Not run in tests:"

_FENCE_OPEN = re.compile(r"^(?P<indent> *)(?P<fence>`{3,})(?P<info>.*)$")
_REQUIRES = re.compile(r"^requires:\s*\[(?P<modules>[^\]]*)\]\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its first code line (1-based) in the page, language, run flag."""

    line: int
    language: str
    runs: bool
    code: str


def front_matter(text: str) -> list[str]:
    """The lines of the page's YAML front matter (empty when it has none)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return []
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return lines[1:index]
    raise ValueError("front matter opened with '---' is never closed")


def required_modules(text: str) -> tuple[str, ...]:
    """Modules the page's ``requires:`` front-matter entry names."""
    for line in front_matter(text):
        match = _REQUIRES.match(line.strip())
        if match:
            return tuple(m.strip() for m in match["modules"].split(",") if m.strip())
    return ()


def code_blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown page, in order (indented fences included)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        body: list[str] = []
        close = index + 1
        while close < len(lines) and lines[close].strip() != fence:
            body.append(lines[close][len(indent):] if lines[close].startswith(indent) else lines[close].lstrip())
            close += 1
        if close == len(lines):
            raise ValueError(f"code block opened on line {index + 1} is never closed")
        language = info.split()[0].lstrip("{.") if info else ""
        blocks.append(Block(line=index + 2, language=language, runs=NO_RUN_TITLE not in info, code="\n".join(body)))
        index = close + 1
    return blocks


def python_blocks(text: str) -> list[Block]:
    return [block for block in code_blocks(text) if block.language == "python"]


def pages() -> list[Path]:
    return sorted(DOCS_DIR.rglob("*.md"))
