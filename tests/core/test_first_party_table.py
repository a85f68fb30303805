"""The facades and the registry know the other distributions only through entry points:
what each distribution registers matches core's table of first-party names (used only when a
distribution is missing), the facade's lookup rules hold for any package, and the facade and
registry sources name no module, env or class of another distribution.

The tests of installed distributions carry the ``requires`` marker; the rest run with
pzj-core alone.
"""

import ast
import importlib
import importlib.metadata
import importlib.util
import pathlib
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE_SRC = ROOT / "packages" / "pzj-core" / "src" / "powerzoojax"
FACADES = ("powerzoojax.envs", "powerzoojax.tasks")
FIRST_PARTY_MODULES = {"pzj-grid": "powerzoojax.grid", "pzj-market": "powerzoojax.market"}


def _registered(group: str, dist: str) -> dict[str, str]:
    return {ep.name: ep.value for ep in importlib.metadata.entry_points(group=group) if ep.dist is not None and ep.dist.name == dist}


@pytest.mark.parametrize("dist", sorted(FIRST_PARTY_MODULES))
@pytest.mark.parametrize("facade", FACADES)
def test_each_installed_distribution_registers_exactly_the_names_of_the_table(dist, facade):
    if importlib.util.find_spec(FIRST_PARTY_MODULES[dist]) is None:
        pytest.skip(f"{dist} is not installed")
    from powerzoojax.envs._catalog import FIRST_PARTY_NAMES

    registered = _registered(f"{facade}.names", dist)
    assert sorted(registered) == sorted(FIRST_PARTY_NAMES[dist][facade])
    module = importlib.import_module(facade)
    for name, value in registered.items():
        module_name, _, attr = value.partition(":")
        assert (module_name + ".").startswith(FIRST_PARTY_MODULES[dist] + "."), (name, value)
        assert getattr(module, name) is getattr(importlib.import_module(module_name), attr), name


@pytest.mark.parametrize("dist", sorted(FIRST_PARTY_MODULES))
def test_each_installed_distribution_registers_exactly_the_tasks_of_the_table(dist):
    if importlib.util.find_spec(FIRST_PARTY_MODULES[dist]) is None:
        pytest.skip(f"{dist} is not installed")
    from powerzoojax.envs._catalog import FIRST_PARTY_TASKS
    from powerzoojax.tasks import TASK_REGISTRY, get_task

    registered = _registered("powerzoojax.tasks", dist)
    assert sorted(registered) == sorted(FIRST_PARTY_TASKS[dist])
    for key, value in registered.items():
        module_name, _, class_name = value.partition(":")
        assert TASK_REGISTRY[key] == (module_name, class_name, dist)
    assert type(get_task(FIRST_PARTY_TASKS[dist][0])).__name__ == TASK_REGISTRY[FIRST_PARTY_TASKS[dist][0]][1]


@pytest.mark.requires("powerzoojax.grid", "powerzoojax.market")
def test_tasks_are_listed_in_the_first_party_order():
    from powerzoojax.tasks import list_tasks

    assert list_tasks() == ("tso", "dso", "ders", "dc_microgrid", "gencos")


# -- the lookup rules, on fake entry points ------------------------------------------------------


class FakeDist:
    def __init__(self, name):
        self.name = name


class FakeEntryPoint:
    def __init__(self, dist, name, value):
        self.dist, self.name, self.value = FakeDist(dist), name, value


def _facade(*entry_points, module_name="powerzoojax.envs"):
    from powerzoojax.envs._facade import Facade

    return Facade(module_name, own={"own_sqrt": "math:sqrt"}, entry_points=lambda group: list(entry_points))


def test_a_package_adds_a_name_and_an_alias_and_nothing_is_imported_to_list_them():
    import math
    import os.path

    facade = _facade(
        FakeEntryPoint("acme-envs", "AcmeJoin", "os.path:join"),
        FakeEntryPoint("acme-envs", "acme_pi", "math:pi"),
        FakeEntryPoint("acme-envs", "AcmeNothing", "acme_not_installed.module:AcmeNothing"),
    )
    assert {"own_sqrt", "AcmeJoin", "acme_pi", "AcmeNothing"} <= set(facade.names())
    assert facade.providers()["AcmeJoin"] == ("os.path", "acme-envs")
    assert facade.aliases() == {"own_sqrt": "sqrt", "AcmeJoin": "join", "acme_pi": "pi"}
    assert facade.resolve("AcmeJoin") is os.path.join
    assert facade.resolve("acme_pi") == math.pi and facade.resolve("own_sqrt") is math.sqrt
    with pytest.raises(ImportError, match="^AcmeNothing is provided by acme-envs: pip install acme-envs$"):
        facade.resolve("AcmeNothing")
    with pytest.raises(AttributeError, match="module 'powerzoojax.envs' has no attribute 'Nope'"):
        facade.resolve("Nope")


def test_the_first_registration_of_a_name_wins_and_the_second_is_reported():
    import math

    facade = _facade(FakeEntryPoint("acme-envs", "tau", "math:tau"), FakeEntryPoint("other-envs", "tau", "math:e"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert facade.resolve("tau") == math.tau
    assert any("other-envs registers 'tau' again" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_a_first_party_name_without_its_distribution_names_the_install_command(monkeypatch):
    from powerzoojax.envs import _facade as facade_module

    facade = _facade()  # no entry point at all: as with pzj-core alone
    uninstalled = facade.uninstalled()
    assert uninstalled["TransGridEnv"] == "pzj-grid" and uninstalled["CostBasedMarketEnv"] == "pzj-market"
    assert facade.providers()["TransGridEnv"] == ("powerzoojax.grid", "pzj-grid")
    monkeypatch.setitem(facade_module.FIRST_PARTY, "pzj-grid", "powerzoojax_no_such_package")
    with pytest.raises(ImportError, match="^TransGridEnv is provided by pzj-grid: pip install pzj-grid$"):
        facade.resolve("TransGridEnv")
    # The package imports but its metadata does not name the name: a stale install.
    monkeypatch.setitem(facade_module.FIRST_PARTY, "pzj-grid", "json")
    with pytest.raises(ImportError, match="the installed pzj-grid does not register it .*: reinstall pzj-grid"):
        facade.resolve("TransGridEnv")


# -- what core's sources name -----------------------------------------------------------------


def _registry_and_facade_sources() -> list[pathlib.Path]:
    """The sources that resolve names and ids for other distributions, less the table of
    first-party names and ids (`envs/_catalog.py`)."""
    files = [*sorted((CORE_SRC / "envs").glob("*.py")), CORE_SRC / "tasks" / "__init__.py"]
    return [path for path in files if path.name != "_catalog.py"]


def test_the_registry_and_facades_name_no_module_env_or_class_of_another_distribution():
    import re

    from powerzoojax.envs._catalog import CATALOG, FIRST_PARTY, FIRST_PARTY_NAMES, FIRST_PARTY_TASKS

    names = {name for facades in FIRST_PARTY_NAMES.values() for group in facades.values() for name in group}
    # Example ids in messages ("such as 'TransGrid-case5-dc-v0'") are data; the env classes are not.
    names |= {f"{entry.family}Env" for entry in CATALOG.values() if entry.family[0].isupper()}
    names |= {"TSOTask", "DSOTask", "DERsTask", "DCMicrogridTask", "GenCosTask"}
    assert len(names) > 140 and set(FIRST_PARTY_TASKS) <= set(FIRST_PARTY)
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    modules = re.compile(r"powerzoojax\.(grid|market|rl)\b")
    for path in _registry_and_facade_sources():
        text = path.read_text(encoding="utf-8")
        # Docstrings and comments may give an example; code may not name another layer.
        code = _code_only(text)
        assert not pattern.findall(code), f"{path.relative_to(ROOT)} names {sorted(set(pattern.findall(code)))}"
        assert not modules.findall(code), f"{path.relative_to(ROOT)} names modules of {sorted(set(modules.findall(code)))}"


def _code_only(source: str) -> str:
    """`source` without its docstrings and comments (the string constants that are code stay)."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.add(id(first.value))
    parts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            parts.append(node.value)
        elif isinstance(node, ast.Name):
            parts.append(node.id)
        elif isinstance(node, ast.Attribute):
            parts.append(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            parts.extend(alias.name for alias in node.names)
            if isinstance(node, ast.ImportFrom) and node.module:
                parts.append(node.module)
    return "\n".join(parts)


def test_the_catalog_imports_nothing_of_the_registry():
    tree = ast.parse((CORE_SRC / "envs" / "_catalog.py").read_text(encoding="utf-8"))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    assert not [m for m in imported if m and m.startswith("powerzoojax")], imported
