"""Every public function and class has an equinox-style docstring (scripts/check_docstrings.py).

The check walks the public modules of every installed distribution, so with pzj-core alone
it covers the core names and with the whole workspace every name.
"""

import importlib.util
import inspect
import pathlib

import pytest

_SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check_docstrings.py"


@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("check_docstrings", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_its_sections(checker):
    checked, failures = checker.check_all()
    assert checked > 100, f"only {checked} public names found: is the module list stale?"
    listed = [str(f) for found in failures.values() for f in found]
    assert not listed, f"{len(listed)} docstrings lack sections:\n" + "\n".join(listed[:40])


def checker_params(func):
    return [p for p in inspect.signature(func).parameters.values() if p.name not in ("self", "cls")]


def test_the_check_finds_a_missing_argument_and_returns(checker):
    def scale(x, factor, *rest, **options):
        return x

    doc = "Scale.\n\n**Arguments:**\n\n- `x`: the value.\n- `*rest`, `**options`: unused."
    problems = checker.check_callable(doc, checker_params(scale), returns=True)
    assert problems == ["**Arguments:** does not name factor", "no **Returns:**"]


def test_the_check_accepts_a_complete_docstring(checker):
    def scale(x, factor):
        return x * factor

    doc = "Scale.\n\n**Arguments:**\n\n- `x`, `factor`: the value and its scale.\n\n**Returns:**\n\n`x * factor`."
    assert checker.check_callable(doc, checker_params(scale), returns=True) == []


@pytest.mark.parametrize("markup", [":func:`load_case`", "``x``", "\n\n.. note::\n"])
def test_the_check_flags_rst_markup(checker, markup):
    assert checker.RST.search(f"Text {markup} more.")
