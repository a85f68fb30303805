"""The API reference covers every public module, and the facades list every name they export."""

import importlib
import re

import pytest

from snippets import DOCS_DIR

# public module -> its API page
API_PAGES = {
    "powerzoojax.envs": "api/envs.md",
    "powerzoojax.tasks": "api/tasks.md",
    "powerzoojax.core": "api/core.md",
    "powerzoojax.case": "api/case.md",
    "powerzoojax.data": "api/data.md",
    "powerzoojax.physics": "api/physics.md",
    "powerzoojax.physics.devices": "api/physics-devices.md",
    "powerzoojax.physics.sensitivities": "api/physics-sensitivities.md",
    "powerzoojax.utils.jax_utils": "api/jax-utils.md",
    "powerzoojax.testing": "api/testing.md",
    "powerzoojax.viz": "api/viz.md",
    "powerzoojax.grid.transmission": "api/grid/transmission.md",
    "powerzoojax.grid.distribution": "api/grid/distribution.md",
    "powerzoojax.grid.resources": "api/grid/resources.md",
    "powerzoojax.grid.microgrid": "api/grid/microgrid.md",
    "powerzoojax.grid.tasks.tso": "api/grid/tasks-tso.md",
    "powerzoojax.grid.tasks.dso": "api/grid/tasks-dso.md",
    "powerzoojax.grid.tasks.ders": "api/grid/tasks-ders.md",
    "powerzoojax.grid.tasks.dc_microgrid": "api/grid/tasks-dc-microgrid.md",
    "powerzoojax.market": "api/market/market.md",
    "powerzoojax.market.tasks.gencos": "api/market/tasks-gencos.md",
    "powerzoojax.rl.wrappers": "api/rl/wrappers.md",
    "powerzoojax.rl.marl": "api/rl/marl.md",
    "powerzoojax.rl.adapters": "api/rl/adapters.md",
    "powerzoojax.rl.algos": "api/rl/algos.md",
    "powerzoojax.rl.training": "api/rl/training.md",
}

# Modules whose names are imported lazily (from other distributions or optional extras): mkdocstrings cannot
# follow them, so their pages list every name in a table.
FACADES = ("powerzoojax.envs", "powerzoojax.tasks", "powerzoojax.rl.adapters")


def _page(module: str) -> str:
    return (DOCS_DIR / API_PAGES[module]).read_text(encoding="utf-8")


@pytest.mark.parametrize("module", sorted(API_PAGES))
def test_each_public_module_has_a_generated_page(module):
    assert re.search(rf"^::: {re.escape(module)}$", _page(module), flags=re.MULTILINE), (
        f"{API_PAGES[module]} has no '::: {module}' directive"
    )


@pytest.mark.parametrize("module", FACADES)
def test_facade_pages_name_every_export(module):
    exported = importlib.import_module(module).__all__
    text = _page(module)
    rendered = {name.strip() for listed in re.findall(r"^\s*members: \[(.*)\]$", text, flags=re.MULTILINE) for name in listed.split(",")}
    tabled = set(re.findall(r"^\| `(\w+)` \|", text, flags=re.MULTILINE))
    missing = [name for name in exported if name not in rendered | tabled]
    assert not missing, f"{API_PAGES[module]} does not mention {missing}"


def test_every_api_page_is_in_the_nav():
    nav = (DOCS_DIR.parent / "mkdocs.yml").read_text(encoding="utf-8")
    for page in API_PAGES.values():
        assert f" {page}\n" in nav, f"{page} is missing from the nav of mkdocs.yml"
