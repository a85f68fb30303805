"""`train()` of a preset whose distribution is missing stops with the command line's one line.

pzj-market is hidden in a subprocess (an import finder that refuses its modules, as when the
distribution is not installed), so this process's imports are untouched.
"""

import subprocess
import sys
import textwrap

import pytest

HIDE_MARKET = textwrap.dedent(
    """
    import importlib.abc, sys

    class HideMarket(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "powerzoojax.market" or name.startswith("powerzoojax.market."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, HideMarket())
    """
)

MESSAGE = (
    "preset 'gencos-case5-ippo-dev' needs pzj-market, which is not installed: "
    "pip install 'pzj-rl[market]' (or 'pzj-rl[all]')"
)


@pytest.fixture(scope="module")
def without_market(tmp_path_factory):
    """What `train()` and `python -m powerzoojax` report for the GenCos preset without pzj-market."""
    out_dir = tmp_path_factory.mktemp("run")
    code = HIDE_MARKET + textwrap.dedent(
        f"""
        import powerzoojax.rl as rl
        try:
            rl.train("gencos-case5-ippo-dev", total_timesteps=1)
        except ImportError as err:
            print("TYPE", type(err).__name__, isinstance(err, ModuleNotFoundError), err.name)
            print("MESSAGE", err)
            print("CHAINED", err.__cause__ is not None, err.__suppress_context__)
        import powerzoojax.__main__ as entry
        print("EXIT", entry.run(["--preset", "gencos-case5-ippo-dev", "--output", {str(out_dir)!r}]))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    return lines, done.stderr


def test_train_names_the_extra_in_one_line(without_market):
    lines, _ = without_market
    assert lines["TYPE"] == "MissingDistributionError True powerzoojax.market"
    assert lines["MESSAGE"] == MESSAGE
    assert lines["CHAINED"] == "False True"  # the traceback ends on the one line, not the raw import error


def test_the_command_line_reports_the_same_missing_extra(without_market):
    lines, stderr = without_market
    assert lines["EXIT"] == "1"
    assert stderr.splitlines()[-1] == (
        "python -m powerzoojax: the requested preset needs pzj-market, which is not installed: "
        "pip install 'pzj-rl[market]' (or 'pzj-rl[all]')"
    )
