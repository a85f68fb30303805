"""The reader that finds the documentation's code blocks and the pages' requirements."""

import pytest

from snippets import NO_RUN_COMMENT, code_blocks, python_blocks, required_modules

PAGE = f'''---
requires: [powerzoojax.grid, powerzoojax.rl]
title: x
---
# Page

```python
a = 1
```

```bash
echo no
```

```python title="not run in tests"
{NO_RUN_COMMENT} too slow
a = 2
```

!!! note
    ```python
    b = a + 1
    ```
'''


def test_requirements_come_from_the_front_matter():
    assert required_modules(PAGE) == ("powerzoojax.grid", "powerzoojax.rl")
    assert required_modules("# no front matter\n") == ()


def test_blocks_keep_their_language_line_and_run_flag():
    blocks = code_blocks(PAGE)
    assert [b.language for b in blocks] == ["python", "bash", "python", "python"]
    python = python_blocks(PAGE)
    assert [(b.line, b.runs) for b in python] == [(8, True), (16, False), (22, True)]
    assert python[2].code == "b = a + 1"  # the admonition's indentation is removed


def test_unclosed_block_is_an_error():
    with pytest.raises(ValueError, match="never closed"):
        code_blocks("```python\nx = 1\n")
