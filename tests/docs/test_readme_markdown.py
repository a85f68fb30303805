"""README.md parses as CommonMark the way it reads: every code fence is closed and every
section heading is a heading (an unclosed fence turns the rest of the page into code, which
GitHub and PyPI render as one grey block)."""

import re

import pytest

from snippets import README

markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py comes with the docs group (uv run --group docs)")

_CLOSING = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*$")
_OPENING = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*\S")
_SECTION = re.compile(r"^(#{2,6}) +(\S.*?)\s*#*\s*$")


def markdown_problems(text: str) -> list[str]:
    """Fences that never close and section headings that a fence swallows, as CommonMark reads `text`."""
    tokens = markdown_it.MarkdownIt("commonmark").parse(text)
    lines = text.splitlines()
    problems = []
    for token in tokens:
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        closing = _CLOSING.match(lines[end - 1]) if end - 1 > start else None
        if closing is None or not closing[1].startswith(token.markup[0]) or len(closing[1]) < len(token.markup):
            problems.append(f"line {start + 1}: the {token.markup}{token.info} fence is never closed (it runs to line {end})")
        # An opening fence (with an info string) of the same kind inside the block: the
        # closing fence before it is missing, so the fences after it pair up wrongly.
        for number in range(start + 1, end - 1):
            inner = _OPENING.match(lines[number])
            if inner and inner[1][0] == token.markup[0] and len(inner[1]) >= len(token.markup):
                problems.append(
                    f"line {start + 1}: the {token.markup}{token.info} fence holds the opening fence of line {number + 1}: "
                    "a closing fence is missing"
                )
    headings = {
        tokens[i + 1].content
        for i, token in enumerate(tokens)
        if token.type == "heading_open" and token.tag != "h1"
    }
    fenced = {n for token in tokens if token.type == "fence" and token.map for n in range(token.map[0] + 1, token.map[1] - 1)}
    for number, line in enumerate(lines):
        match = _SECTION.match(line)
        if match and match[2] not in headings:
            where = "inside a code block" if number in fenced else "not parsed as a heading"
            problems.append(f"line {number + 1}: heading {match[2]!r} is {where}")
    return problems


def test_readme_fences_close_and_headings_are_headings():
    assert markdown_problems(README.read_text(encoding="utf-8")) == []


def test_an_unclosed_fence_is_caught():
    # A bash block without its closing fence: the next section's heading becomes code and
    # the fences after it pair up wrongly.
    page = "# T\n\n## One\n\n```bash\nuv run pytest\n\n## Two\n\n```python\nx = 1\n```\n\ntext\n\n```python\ny = 2\n```\n"
    assert markdown_problems(page) == [
        "line 5: the ```bash fence holds the opening fence of line 10: a closing fence is missing",
        "line 8: heading 'Two' is inside a code block",
    ]
    assert markdown_problems(page.replace("uv run pytest\n", "uv run pytest\n```\n")) == []
    assert markdown_problems("## A\n\n```python\nx = 1\n") == ["line 3: the ```python fence is never closed (it runs to line 4)"]
