"""The seed pages' code examples, copied verbatim into examples/, run here as written."""

import os
import runpy

import pytest

from conftest import has_distribution

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


def _run(name, capsys):
    runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    return capsys.readouterr().out


@pytest.mark.skipif(not has_distribution("powerzoojax.rl"), reason="the page's second block uses LogWrapper (pzj-rl)")
def test_batched_rollout_page(capsys):
    out = _run("02_batched_rollout.py", capsys)
    assert "mean return:" in out and "std  return:" in out
    assert "episodes finished per env = 1" in out


def test_parallelization_architecture_page(capsys):
    out = _run("jax_parallelization_architecture.py", capsys)
    assert "complete pattern: reward_traj (64, 48)" in out
    assert "batch_step: (8, 18) (8,) (8, 4) (8,)" in out
    assert "scan_rollout: (48, 18) (48,) (48, 4) (48,)" in out


@pytest.mark.skipif(not has_distribution("flax"), reason="flax is a test-only dependency of this page")
def test_custom_loops_page_with_flax(capsys):
    out = _run("custom_loops_flax.py", capsys)
    assert "obs (48, 64, 18) advantages (48, 64) flat batch (3072, 18)" in out


@pytest.mark.skipif(not has_distribution("optax") or not has_distribution("powerzoojax.rl"), reason="needs optax")
def test_custom_loops_equinox_version(capsys):
    out = _run("custom_loops_equinox.py", capsys)
    assert "update 19" in out
