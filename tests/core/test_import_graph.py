"""Layering: within the source of the four distributions, a module imports only modules below it.

The graph is read from the source with `ast`, without importing anything, so it covers every
distribution present in the repository whichever of them are installed. An edge is any import
statement, wherever it stands: at module level, inside a function (an import on use does not
make a circle acceptable, it only delays it) or under `if TYPE_CHECKING:`. An import of a
package points at its `__init__`; `from package import name` points at the submodule when
`name` is one. A package's `__init__` importing its own submodules is the normal direction;
a submodule importing its parent package's `__init__` is an edge like any other.
"""

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "packages"
DISTRIBUTIONS = sorted(p.name for p in PACKAGES.iterdir() if (p / "src" / "powerzoojax").is_dir())


def _modules(distributions: list[str], packages: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (source file, is a package's `__init__`)."""
    found: dict[str, tuple[Path, bool]] = {}
    for dist in distributions:
        src = packages / dist / "src"
        for path in sorted(src.rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            found[".".join(parts)] = (path, is_package)
    return found


def _imported_names(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """Dotted names an import statement may refer to (modules, or `module.name`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base_parts = package.split(".")
        base_parts = base_parts[: len(base_parts) - (node.level - 1)]
        base = ".".join(base_parts + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph(distributions: list[str], packages: Path = PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of `distributions` (folders of `packages`) it imports, from every
    import statement."""
    modules = _modules(distributions, packages)

    def resolve(name: str) -> str | None:
        # The longest prefix that is a module of these distributions.
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        package = module if is_package else module.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = _imported_names(node, package)
            if isinstance(node, ast.ImportFrom):
                # `from a.b import c`: the submodule a.b.c when c is one, else a.b.
                base, members = names[0], names[1:]
                targets = [m for m in members if m in modules]
                if len(targets) < len(members):
                    targets.append(base)
            else:
                targets = names
            for target in targets:
                resolved = resolve(target)
                if resolved is not None and resolved != module:
                    edges.add(resolved)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        # Iterative depth-first search: (node, iterator over its successors).
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_a_circle_and_passes_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"], ["c", "d"]]


def test_the_graph_sees_imports_inside_functions_and_type_checking_blocks(tmp_path):
    src = tmp_path / "pzj-demo" / "src" / "powerzoojax" / "demo"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("from ._a import A\n")
    (src / "_a.py").write_text("class A:\n    def b(self):\n        from ._b import B\n        return B\n")
    (src / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from powerzoojax.demo._c import C\nB = 1\n"
    )
    (src / "_c.py").write_text("from powerzoojax.demo import _a\n")
    graph = import_graph(["pzj-demo"], tmp_path)
    assert graph["powerzoojax.demo"] == {"powerzoojax.demo._a"}
    assert graph["powerzoojax.demo._a"] == {"powerzoojax.demo._b"}
    assert graph["powerzoojax.demo._b"] == {"powerzoojax.demo._c"}
    assert graph["powerzoojax.demo._c"] == {"powerzoojax.demo._a"}
    assert cycles(graph) == [["powerzoojax.demo._a", "powerzoojax.demo._b", "powerzoojax.demo._c"]]


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_each_distribution_imports_only_downward(distribution):
    found = cycles(import_graph([distribution]))
    assert not found, f"{distribution} has import circles (module sets): {found}"


def test_the_four_distributions_together_import_only_downward():
    found = cycles(import_graph(DISTRIBUTIONS))
    assert not found, f"import circles across the distributions (module sets): {found}"


def test_the_graph_covers_every_distribution_source_file():
    graph = import_graph(DISTRIBUTIONS)
    n_files = sum(
        1 for dist in DISTRIBUTIONS for _, _, files in os.walk(PACKAGES / dist / "src") for f in files if f.endswith(".py")
    )
    assert len(graph) == n_files
    # A sample of known downward edges, so an import the parser missed shows up here.
    assert "powerzoojax.case._case_data" in graph["powerzoojax.case._matrices"]
    assert "powerzoojax.core" in graph["powerzoojax.grid.microgrid._invariants"]
