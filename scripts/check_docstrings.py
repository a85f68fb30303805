"""Check the docstrings of every public name against the project's docstring style.

Walks the `__all__` of the public modules (the facades and the modules with an API page),
keeps the functions and classes, and checks, for each one and each public method a class
defines itself:

- it has a docstring;
- a callable with parameters has an `**Arguments:**` section naming each one in backticks
  (`self`/`cls` excepted; `*args` and `**kwargs` may share one entry); a class's
  parameters are its constructor's, so an `eqx.Module` documents its fields there;
- a function that returns a value has a `**Returns:**` section;
- no Sphinx role (`:func:`, `:class:`, ...), rst directive (`.. note::`) or rst double
  backtick literal is left, since the API reference renders docstrings as Markdown.

Separately, every docstring and comment of the library's source (`packages/*/src`) is
searched for measurements: timings (`4.9 ms`, `took 10.2 s`), speed factors (`10× faster`,
`5 % slower`), throughputs (`env-steps/s`, `Gflop`) and notes on `XLA:CPU`. Those belong in
`benchmarks/results/*.md`; a docstring says what a thing is and why. Physical quantities
(`1e-8 p.u.`, a `300 s` step, `2 %` of an optimum) are not matched.

A method that overrides a documented method of a base class, or implements one of a
documented protocol (a task's `make_env`, `rollout`, ... of `TaskSpec`), is documented there.
Modules whose distribution is not installed are skipped, so the check runs on any subset
of the four distributions.

Usage (from the repository root):

    uv run python scripts/check_docstrings.py            # list the failures, exit 1 if any
    uv run python scripts/check_docstrings.py --count    # print the number of failing names
"""

import argparse
import ast
import dataclasses
import importlib
import inspect
import io
import pathlib
import re
import sys
import textwrap
import tokenize
import typing
from collections.abc import Callable, Iterator

PUBLIC_MODULES = (
    "powerzoojax.envs",
    "powerzoojax.tasks",
    "powerzoojax.case",
    "powerzoojax.data",
    "powerzoojax.physics",
    "powerzoojax.physics.devices",
    "powerzoojax.physics.sensitivities",
    "powerzoojax.testing",
    "powerzoojax.viz",
    "powerzoojax.core",
    "powerzoojax.utils.jax_utils",
    "powerzoojax.grid",
    "powerzoojax.grid.transmission",
    "powerzoojax.grid.distribution",
    "powerzoojax.grid.resources",
    "powerzoojax.grid.microgrid",
    "powerzoojax.grid.tasks",
    "powerzoojax.grid.tasks.tso",
    "powerzoojax.grid.tasks.dso",
    "powerzoojax.grid.tasks.ders",
    "powerzoojax.grid.tasks.dc_microgrid",
    "powerzoojax.market",
    "powerzoojax.market.tasks",
    "powerzoojax.market.tasks.gencos",
    "powerzoojax.rl",
    "powerzoojax.rl.wrappers",
    "powerzoojax.rl.marl",
    "powerzoojax.rl.algos",
    "powerzoojax.rl.training",
    "powerzoojax.rl.adapters",
)

ARGUMENTS = "**Arguments:**"
RETURNS = "**Returns:**"
# Sphinx roles, rst directives and rst literals, which Markdown shows as typed.
RST = re.compile(r":(?:func|class|meth|attr|mod|data|obj|exc|const|ref|py:\w+):`|^\s*\.\. \w[\w-]*::|``", re.MULTILINE)


# A measurement quoted in library text: a time with its unit next to a comparison or a
# verb of measuring, a speed factor, a throughput, or a note on XLA:CPU's behaviour.
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
MEASUREMENT = re.compile(
    rf"\b{_NUMBER}\s?(?:ms|µs|us|ns)\b"
    rf"|\b{_NUMBER}\s?s\b(?=[^/\]]{{0,40}}\b(?:took|per (?:call|step|iteration|rollout)|against|faster|slower))"
    rf"|\b(?:took|takes|in)\s+(?:about\s+)?{_NUMBER}\s?s\b"
    rf"|\b{_NUMBER}\s?(?:x|×)\s+(?:faster|slower|quicker|speed)"
    rf"|\b{_NUMBER}\s?%\s+(?:faster|slower|quicker|CPU|of (?:the )?(?:run|step|wall|CPU) ?time)"
    r"|\bspeed-?ups?\s+(?:of\s+)?\d"
    r"|\b(?:env-)?steps/s\b|\bGflop|\bGFLOP/s\b"
    r"|XLA:CPU",
    re.IGNORECASE,
)
SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[1] / "packages"


def measurements(text: str) -> list[str]:
    """The measurement-like phrases of `text` (see `MEASUREMENT`)."""
    return [m.group(0) for m in MEASUREMENT.finditer(text)]


def source_measurements(path: pathlib.Path) -> list[tuple[int, str]]:
    """`(line, phrase)` of each measurement in the docstrings and comments of one file."""
    source = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found += [(getattr(node, "lineno", 1), phrase) for phrase in measurements(doc)]
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found += [(token.start[0], phrase) for phrase in measurements(token.string)]
    return sorted(found)


def library_measurements(root: pathlib.Path = SOURCE_ROOT) -> dict[str, list[tuple[int, str]]]:
    """Measurements in the library's source, by file path relative to `root`'s parent."""
    found = {}
    for path in sorted(root.glob("*/src/**/*.py")):
        hits = source_measurements(path)
        if hits:
            found[path.relative_to(root.parent).as_posix()] = hits
    return found


@dataclasses.dataclass(frozen=True)
class Failure:
    name: str
    problems: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name}: {'; '.join(self.problems)}"


def _import(module_name: str):
    try:
        return importlib.import_module(module_name)
    except ImportError:
        return None


def public_objects() -> Iterator[tuple[str, object]]:
    """`(dotted name, object)` of each public function and class, once each."""
    seen: set[int] = set()
    for module_name in PUBLIC_MODULES:
        module = _import(module_name)
        if module is None:
            continue
        for name in getattr(module, "__all__", ()):
            try:
                obj = getattr(module, name)
            except ImportError:  # a facade name whose distribution is missing
                continue
            if not (inspect.isclass(obj) or callable(obj)) or inspect.ismodule(obj):
                continue
            if typing.get_origin(obj) is not None:  # a type alias such as `Callable[..., X]`
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            owner = getattr(obj, "__module__", module_name) or module_name
            yield f"{owner}.{getattr(obj, '__qualname__', name)}", obj


def _section(doc: str, title: str) -> str | None:
    start = doc.find(title)
    if start < 0:
        return None
    rest = doc[start + len(title):]
    ends = [i for i in (rest.find(ARGUMENTS), rest.find(RETURNS)) if i >= 0]
    return rest[: min(ends)] if ends else rest


def _parameters(obj: Callable) -> list[inspect.Parameter] | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [p for p in signature.parameters.values() if p.name not in ("self", "cls")]


def _returns_value(func: Callable) -> bool:
    func = inspect.unwrap(func)
    annotation = inspect.signature(func).return_annotation
    if annotation is None or annotation == "None":
        return False
    if annotation is not inspect.Signature.empty:
        return True
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return False
    tree = ast.parse(source).body[0]
    for node in ast.walk(tree):
        if node is not tree and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom)) or (isinstance(node, ast.Return) and node.value is not None):
            return True
    return False


def _mentions(section: str, name: str) -> bool:
    return re.search(rf"`\**{re.escape(name)}`", section) is not None


def check_callable(doc: str, params: list[inspect.Parameter] | None, returns: bool) -> list[str]:
    """The problems of one docstring, given the callable's parameters and whether it returns."""
    problems = []
    if params:
        arguments = _section(doc, ARGUMENTS)
        if arguments is None:
            problems.append(f"no {ARGUMENTS}")
        else:
            variadic = [p.name for p in params if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            missing = [p.name for p in params if p.name not in variadic and not _mentions(arguments, p.name)]
            if variadic and not any(_mentions(arguments, n) for n in variadic):
                missing.append("/".join(variadic))
            if missing:
                problems.append(f"{ARGUMENTS} does not name {', '.join(missing)}")
    if returns and RETURNS not in doc:
        problems.append(f"no {RETURNS}")
    return problems


def _protocols() -> list[type]:
    """The documented protocols public classes implement without subclassing them."""
    core = _import("powerzoojax.core")
    return [core.TaskSpec] if core is not None else []


def _implements(cls: type, protocol: type) -> bool:
    members = [n for n, v in vars(protocol).items() if inspect.isfunction(v) and not n.startswith("_")]
    return bool(members) and all(callable(getattr(cls, n, None)) for n in members)


def _documented_in_base(cls: type, name: str) -> bool:
    bases = [*cls.__mro__[1:], *(p for p in _protocols() if p is not cls and _implements(cls, p))]
    return any(name in vars(base) and inspect.getdoc(getattr(base, name)) for base in bases)


def _class_parameters(cls: type) -> list[inspect.Parameter] | None:
    params = _parameters(cls)
    if params is None:
        return None
    # An undocumented (*args, **kwargs) constructor inherited from object / a generic base.
    if all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return []
    return params


def _methods(cls: type) -> Iterator[tuple[str, object, bool]]:
    """`(name, callable, is_property)` of the public methods `cls` defines itself."""
    for name, member in vars(cls).items():
        if name.startswith("_") or _documented_in_base(cls, name):
            continue
        if isinstance(member, property):
            yield name, member, True
        elif isinstance(member, (staticmethod, classmethod)):
            yield name, member.__func__, False
        elif inspect.isfunction(member):
            yield name, member, False


def check_object(name: str, obj: object) -> list[Failure]:
    """The failures of one public object (and of the methods a class defines)."""
    failures = []
    doc = inspect.getdoc(obj) if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    doc = inspect.cleandoc(doc) if doc else ""
    if not doc.strip():
        return [Failure(name, ("no docstring",))]
    if inspect.isclass(obj):
        problems = check_callable(doc, _class_parameters(obj), returns=False)
        if RST.search(doc):
            problems.append("rst markup")
        if problems:
            failures.append(Failure(name, tuple(problems)))
        for method_name, method, is_property in _methods(obj):
            failures += _check_member(f"{name}.{method_name}", method, is_property)
        return failures
    func = typing.cast(Callable, obj)
    problems = check_callable(doc, _parameters(func), _returns_value(func) if _is_function(obj) else False)
    if RST.search(doc):
        problems.append("rst markup")
    return [Failure(name, tuple(problems))] if problems else []


def _is_function(obj: object) -> bool:
    return inspect.isfunction(inspect.unwrap(obj))  # type: ignore[arg-type]


def _check_member(name: str, member: object, is_property: bool) -> list[Failure]:
    doc = inspect.getdoc(member)
    if not doc:
        return [Failure(name, ("no docstring",))]
    problems = [] if is_property else check_callable(doc, _parameters(member), _returns_value(member))  # type: ignore[arg-type]
    if RST.search(doc):
        problems.append("rst markup")
    return [Failure(name, tuple(problems))] if problems else []


def check_all() -> tuple[int, dict[str, list[Failure]]]:
    """`(number of public functions and classes checked, failures by public name)`.

    A class fails when its own docstring or that of one of its public methods does.
    """
    checked, failures = 0, {}
    for name, obj in public_objects():
        checked += 1
        found = check_object(name, obj)
        if found:
            failures[name] = found
    return checked, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", action="store_true", help="print only the counts")
    args = parser.parse_args(argv)
    checked, failures = check_all()
    figures = library_measurements()
    if not args.count:
        for found in failures.values():
            for failure in found:
                print(failure)
        for path, hits in figures.items():
            for line, phrase in hits:
                print(f"{path}:{line}: a measurement in library text ({phrase!r}): move it to benchmarks/results/")
    n_docstrings = sum(len(found) for found in failures.values())
    print(f"{checked} public functions and classes checked: {len(failures)} fail "
          f"({n_docstrings} docstrings, methods included); "
          f"{sum(len(h) for h in figures.values())} measurements in {len(figures)} library files")
    return 1 if failures or figures else 0


if __name__ == "__main__":
    sys.exit(main())
