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
    "powerzoojax.tasks",
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


@pytest.mark.parametrize("module", ["powerzoojax.grid", "powerzoojax.market", "powerzoojax.rl"])
def test_other_leaf_packages_import_when_installed(module):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed here")
    importlib.import_module(module)


def test_facade_names_a_missing_distribution():
    # Hide pzj-grid by putting a shadow namespace path first; run in a subprocess so the
    # real import state of this session is untouched.
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
        if importlib.util.find_spec(module) is None:
            continue
        # A few names are the reference's aliases of ours (TransGridState -> GridState).
        source = envs._ALIASES.get(name, name)
        assert getattr(envs, name) is getattr(importlib.import_module(module), source)
