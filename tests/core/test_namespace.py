"""Packaging: ``powerzoojax`` is a PEP 420 namespace shared by four distributions."""

import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

CORE_PACKAGES = [
    "powerzoojax.core", "powerzoojax.case", "powerzoojax.physics", "powerzoojax.envs",
    "powerzoojax.utils", "powerzoojax.utils.jax_utils", "powerzoojax.testing", "powerzoojax.data",
    "powerzoojax.tasks", "powerzoojax.viz",
]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_powerzoojax_is_a_namespace_package():
    import powerzoojax

    assert getattr(powerzoojax, "__file__", None) is None
    assert type(powerzoojax.__path__).__name__ == "_NamespacePath"


def test_no_init_file_at_the_namespace_root_of_any_distribution():
    packages = os.path.join(ROOT, "packages")
    for dist in sorted(os.listdir(packages)):
        ns = os.path.join(packages, dist, "src", "powerzoojax")
        assert os.path.isdir(ns), f"{dist} has no src/powerzoojax"
        assert not os.path.exists(os.path.join(ns, "__init__.py")), f"{dist} breaks the namespace"


def test_each_leaf_package_belongs_to_one_distribution():
    packages = os.path.join(ROOT, "packages")
    owners: dict[str, str] = {}
    for dist in sorted(os.listdir(packages)):
        ns = os.path.join(packages, dist, "src", "powerzoojax")
        for leaf in os.listdir(ns):
            if os.path.isdir(os.path.join(ns, leaf)) and not leaf.startswith("__"):
                assert leaf not in owners, f"powerzoojax.{leaf} is in both {owners[leaf]} and {dist}"
                owners[leaf] = dist
    assert owners["core"] == owners["case"] == owners["envs"] == "pzj-core"


@pytest.mark.parametrize("module", CORE_PACKAGES)
def test_core_leaf_packages_import(module):
    importlib.import_module(module)


OTHER_PACKAGES = [
    "powerzoojax.grid", "powerzoojax.grid.transmission", "powerzoojax.grid.distribution",
    "powerzoojax.grid.microgrid", "powerzoojax.grid.resources", "powerzoojax.grid.tasks",
    "powerzoojax.market", "powerzoojax.market.tasks",
    "powerzoojax.rl", "powerzoojax.rl.wrappers", "powerzoojax.rl.marl", "powerzoojax.rl.algos",
    "powerzoojax.rl.training", "powerzoojax.rl.adapters",
]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is not installed
        return False


@pytest.mark.parametrize("module", OTHER_PACKAGES)
def test_other_leaf_packages_import_when_installed(module):
    if not _installed(module):
        pytest.skip(f"{module} is not installed here")
    importlib.import_module(module)


def _source_packages() -> dict[str, list[str]]:
    """Every package (a folder with ``__init__.py``) under each distribution's ``src``."""
    found: dict[str, list[str]] = {}
    packages = os.path.join(ROOT, "packages")
    for dist in sorted(os.listdir(packages)):
        src = os.path.join(packages, dist, "src")
        for folder, _dirs, files in os.walk(src):
            if "__init__.py" in files and "__pycache__" not in folder:
                found.setdefault(dist, []).append(os.path.relpath(folder, src).replace(os.sep, "."))
    return found


def test_every_package_in_the_tree_imports_and_its_room_is_listed_here():
    for dist, modules in _source_packages().items():
        for module in modules:
            # core's leaf packages and the rooms of the others (powerzoojax.<leaf>.<room>)
            room = ".".join(module.split(".")[: 2 if dist == "pzj-core" else 3])
            listed = CORE_PACKAGES if dist == "pzj-core" else OTHER_PACKAGES
            assert room in listed, f"{room} ({dist}) is missing from this test's package lists"
            if dist == "pzj-core" or _installed(module):
                importlib.import_module(module)


def _imports(path: str) -> set[str]:
    """The modules a source file imports (module level and inside functions)."""
    import ast

    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _package_files(dist: str, package: str) -> list[str]:
    root = os.path.join(ROOT, "packages", dist, "src", *package.split("."))
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".py")]


# (distribution, package, packages it must never import): the layers of the architecture.
LAYERS = [
    ("pzj-core", "powerzoojax", ("powerzoojax.grid", "powerzoojax.market", "powerzoojax.rl")),
    ("pzj-grid", "powerzoojax.grid", ("powerzoojax.rl", "powerzoojax.market")),
    ("pzj-market", "powerzoojax.market", ("powerzoojax.rl", "powerzoojax.grid")),
    ("pzj-grid", "powerzoojax.grid.resources", ("powerzoojax.grid.transmission", "powerzoojax.grid.distribution",
                                                "powerzoojax.grid.microgrid", "powerzoojax.grid.tasks")),
    ("pzj-grid", "powerzoojax.grid.transmission", ("powerzoojax.grid.distribution", "powerzoojax.grid.microgrid",
                                                   "powerzoojax.grid.tasks")),
    ("pzj-grid", "powerzoojax.grid.distribution", ("powerzoojax.grid.transmission", "powerzoojax.grid.microgrid",
                                                   "powerzoojax.grid.tasks")),
    ("pzj-grid", "powerzoojax.grid.microgrid", ("powerzoojax.grid.transmission", "powerzoojax.grid.distribution",
                                                "powerzoojax.grid.tasks")),
    ("pzj-rl", "powerzoojax.rl.wrappers", ("powerzoojax.rl.marl", "powerzoojax.rl.algos", "powerzoojax.rl.training")),
    ("pzj-rl", "powerzoojax.rl.marl", ("powerzoojax.rl.wrappers", "powerzoojax.rl.algos", "powerzoojax.rl.training")),
    ("pzj-rl", "powerzoojax.rl.algos", ("powerzoojax.rl.training",)),
    # The Gymnasium / PettingZoo shells know only the env contracts, never the trainers.
    ("pzj-rl", "powerzoojax.rl.adapters", ("powerzoojax.rl.wrappers", "powerzoojax.rl.algos", "powerzoojax.rl.training")),
]


@pytest.mark.parametrize(("dist", "package", "forbidden"), LAYERS, ids=[f"{p}" for _, p, _ in LAYERS])
def test_imports_only_point_downward(dist, package, forbidden):
    files = _package_files(dist, package)
    assert files, f"no sources found for {package} in {dist}"
    for path in files:
        bad = sorted(m for m in _imports(path) if any(m == f or m.startswith(f + ".") for f in forbidden))
        assert not bad, f"{os.path.relpath(path, ROOT)} imports {bad}"


def test_facade_names_a_missing_distribution():
    # Hide pzj-grid by putting a shadow namespace path first; run in a subprocess so the
    # real import state of this process is untouched.
    code = textwrap.dedent(
        """
        import sys, importlib.abc
        class HideGrid(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "powerzoojax.grid" or name.startswith("powerzoojax.grid."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, HideGrid())
        import powerzoojax.envs as envs
        try:
            envs.TransGridEnv
        except ImportError as e:
            print("ERR", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "ERR TransGridEnv is provided by pzj-grid: pip install pzj-grid" in out.stdout, out.stderr


def test_facade_unknown_name_is_attribute_error():
    import powerzoojax.envs as envs

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchEnv'"):
        envs.NoSuchEnv  # noqa: B018


def test_facade_does_not_mask_real_import_bugs():
    code = textwrap.dedent(
        """
        import sys, importlib.abc
        class Broken(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "powerzoojax.grid":
                    raise ModuleNotFoundError("No module named 'some_missing_dependency'", name="some_missing_dependency")
                return None
        sys.meta_path.insert(0, Broken())
        import powerzoojax.envs as envs
        try:
            envs.TransGridEnv
        except ModuleNotFoundError as e:
            print("RAW", e.name)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "RAW some_missing_dependency" in out.stdout, out.stderr


def test_opt_in_type_checking_by_environment_variable():
    code = textwrap.dedent(
        """
        import powerzoojax.core
        from powerzoojax.core import make_box
        try:
            make_box(object(), 1.0)
        except Exception as e:
            print(type(e).__name__)
        """
    )
    env = {**os.environ, "POWERZOOJAX_TYPECHECK": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "TypeCheckError", out.stderr[-2000:]


def test_facade_exports_every_lazy_name_when_installed():
    import powerzoojax.envs as envs

    for name, (module, _) in envs._LAZY.items():
        if not _installed(module):
            continue
        # A few names are the reference's aliases of ours (TransGridState -> GridState).
        source = envs._ALIASES.get(name, name)
        assert getattr(envs, name) is getattr(importlib.import_module(module), source)
