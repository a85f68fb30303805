"""Install-time messages and the files every distribution ships."""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DISTRIBUTIONS = ("pzj-core", "pzj-grid", "pzj-market", "pzj-rl")


def _missing(name: str) -> ModuleNotFoundError:
    err = ModuleNotFoundError(f"No module named {name!r}")
    err.name = name
    return err


@pytest.mark.parametrize(
    ("module", "extra", "distribution"),
    [("powerzoojax.grid", "grid", "pzj-grid"), ("powerzoojax.grid.tasks.dso", "grid", "pzj-grid"),
     ("powerzoojax.market", "market", "pzj-market")],
)
def test_missing_extra_message_names_the_extra(module, extra, distribution):
    from powerzoojax.core._provider import missing_extra_message

    message = missing_extra_message(_missing(module), "preset 'x'")
    assert message == (
        f"preset 'x' needs {distribution}, which is not installed: pip install 'pzj-rl[{extra}]' (or 'pzj-rl[all]')"
    )


def test_missing_extra_message_follows_the_facade_error_to_its_cause():
    from powerzoojax.core._provider import missing_extra_message

    try:
        try:
            raise _missing("powerzoojax.grid")
        except ModuleNotFoundError as inner:
            raise ImportError("TransGridEnv is provided by pzj-grid: pip install pzj-grid") from inner
    except ImportError as err:
        assert "pip install 'pzj-rl[grid]'" in missing_extra_message(err)


@pytest.mark.parametrize("err", [_missing("yaml"), ImportError("cannot import name 'x'"), ValueError("no")])
def test_missing_extra_message_leaves_other_errors_alone(err):
    from powerzoojax.core._provider import missing_extra_message

    assert missing_extra_message(err) is None


def test_python_dash_m_reports_a_missing_preset_distribution_in_one_line(monkeypatch, capsys):
    import powerzoojax.__main__ as entry

    class FakeCli:
        # What a preset's env builder raises when pzj-grid is not installed.
        @staticmethod
        def main(argv):
            raise _missing("powerzoojax.grid")

    monkeypatch.setattr(entry, "import_provider", lambda *args: FakeCli)
    assert entry.run(["--preset", "case5-economic-dispatch"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "python -m powerzoojax: the requested preset needs pzj-grid, which is not installed: "
        "pip install 'pzj-rl[grid]' (or 'pzj-rl[all]')\n"
    )


def test_python_dash_m_without_pzj_rl_names_it(monkeypatch, capsys):
    import powerzoojax.__main__ as entry

    def missing(*args):
        raise ImportError("the training command line is provided by pzj-rl: pip install pzj-rl")

    monkeypatch.setattr(entry, "import_provider", missing)
    assert entry.run([]) == 1
    assert capsys.readouterr().err == "python -m powerzoojax: the training command line is provided by pzj-rl: pip install pzj-rl\n"


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_each_distribution_ships_the_license_readme_and_typed_markers(dist):
    package = os.path.join(ROOT, "packages", dist)
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        license_text = f.read()
    assert "Copyright (c) 2026 PowerZooJax contributors" in license_text
    with open(os.path.join(package, "LICENSE"), encoding="utf-8") as f:
        assert f.read() == license_text, f"{dist}/LICENSE differs from the root LICENSE"
    assert os.path.getsize(os.path.join(package, "README.md")) > 0
    namespace = os.path.join(package, "src", "powerzoojax")
    leaves = [d for d in os.listdir(namespace) if os.path.isdir(os.path.join(namespace, d)) and not d.startswith("__")]
    assert leaves and all(os.path.exists(os.path.join(namespace, d, "py.typed")) for d in leaves), leaves
    with open(os.path.join(package, "pyproject.toml"), encoding="utf-8") as f:
        assert 'readme = "README.md"' in f.read()


def test_pzj_rl_declares_the_grid_market_all_adapter_and_logger_extras():
    import tomllib

    with open(os.path.join(ROOT, "packages", "pzj-rl", "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert extras == {
        "grid": ["pzj-grid"], "market": ["pzj-market"], "all": ["pzj-grid", "pzj-market"],
        "gym": ["gymnasium>=1.0"], "pettingzoo": ["pettingzoo>=1.27,<1.28", "gymnasium>=1.0"],
        "sb3": ["stable-baselines3>=2.4", "gymnasium>=1.0"],
        "tensorboard": ["tensorboardX>=2.6"], "wandb": ["wandb>=0.17"], "progress": ["tqdm>=4.66"],
    }
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        root = tomllib.load(f)
    assert sorted(root["project"]["dependencies"]) == sorted(DISTRIBUTIONS)
    assert root["build-system"]["build-backend"] == "hatchling.build"


def test_accelerator_extras_pin_the_locked_jax_and_exclude_each_other():
    """pzj-core's cuda12 / cuda13 / tpu extras pin the jax the workspace locks, and the
    workspace declares them as conflicting, so uv never installs two JAX plugins together
    (and `uv sync` alone stays the CPU environment)."""
    import re
    import tomllib

    with open(os.path.join(ROOT, "packages", "pzj-core", "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        uv = tomllib.load(f)["tool"]["uv"]
    (locked,) = [c.split("==")[1] for c in uv["constraint-dependencies"] if c.startswith("jax==")]
    accelerators = ("cuda12", "cuda13", "tpu")
    for extra in accelerators:
        assert extras[extra] == [f"jax[{extra}]=={locked}; sys_platform == 'linux'"], (extra, extras[extra])
    groups = [sorted(item["extra"] for item in group if item["package"] == "pzj-core") for group in uv["conflicts"]]
    assert sorted(accelerators) in groups, uv["conflicts"]
    with open(os.path.join(ROOT, "uv.lock"), encoding="utf-8") as f:
        lock = f.read()
    assert re.search(r'\{ package = "pzj-core", extra = "tpu" \}', lock), "uv.lock is stale: run uv lock"
