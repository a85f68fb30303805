"""pzj-market installs and imports alone (its clearing kernels and envs land later)."""

import importlib


def test_market_package_imports_and_is_in_the_namespace():
    market = importlib.import_module("powerzoojax.market")
    import powerzoojax

    assert market.__name__ == "powerzoojax.market"
    assert any(p.endswith("pzj-market/src/powerzoojax") for p in powerzoojax.__path__)


def test_core_is_importable_beside_market():
    from powerzoojax.core import Environment

    assert Environment.__name__ == "Environment"
