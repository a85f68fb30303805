import os
import sys

# The page reader and runner are plain modules beside the tests.
sys.path.insert(0, os.path.dirname(__file__))


def pytest_collection_modifyitems(config, items):
    # Running every page's code takes minutes (each page is a fresh process that compiles its
    # own programs), so these tests carry the ``docs`` marker: the default run deselects
    # them and .ci/run runs them in a step of their own (``pytest tests/docs -m docs``).
    import pytest

    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.docs)
