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
    assert spec is not None and spec.loader is not None
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


# Library files that still quote measurements in their docstrings or comments, each being
# reworded by its owner; an entry goes once its file is clean.
PENDING_MEASUREMENTS: set[str] = set()


def test_library_text_quotes_no_measurements(checker):
    """Timings, speed factors and XLA:CPU notes live in ``benchmarks/results/*.md``; the
    library's docstrings and comments say what a thing is and why."""
    found = checker.library_measurements()
    assert found or PENDING_MEASUREMENTS == set(), "nothing found: is the source root right?"
    listed = [
        f"{path}:{line}: {phrase!r}"
        for path, hits in found.items()
        if path not in PENDING_MEASUREMENTS
        for line, phrase in hits
    ]
    assert not listed, "measurements in library text (move them to benchmarks/results/):\n" + "\n".join(listed)


@pytest.mark.parametrize(
    "text",
    [
        "256 factorisations took 10.2 s that way and 0.27 s through LAPACK",
        "an eager DC-OPF env step took 4.9 s",
        "a scalar loop (≈ 60 µs per table column at N = 256)",
        "on case 29gb, 99 lines, about 10× faster steps",
        "matrix products are ~10x slower on a CPU",
        "33bw N = 4096: −4 to −10 % CPU per rollout",
        "5,598 vs 5,377 env-steps/s",
        "0.9 Gflop on case 552gb",
        "on XLA:CPU a vmapped batch",
    ],
)
def test_the_measurement_check_finds_timings(checker, text):
    assert checker.measurements(text)


@pytest.mark.parametrize(
    "text",
    [
        "converged when the mismatch is below 1e-8 p.u.",
        "a 300 s control step; profiles at 30 min",
        "`dt` [s], 3600 s per hour",
        "within 2 % of the exact bound",
        "ramp limits [MW/s]",
        "an inertia constant of 1.5 s",
        "a pivot loop serialises on an accelerator, so the loop is unrolled",
    ],
)
def test_the_measurement_check_passes_physical_quantities(checker, text):
    assert checker.measurements(text) == []
