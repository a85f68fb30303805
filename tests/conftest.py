"""Shared fixtures.

Nothing from ``powerzoojax`` is imported at module level: the jaxtyping import hook
(``--jaxtyping-packages`` in pyproject) must see the package imported for the first
time, so its annotations are checked by beartype in every test run.
"""

import importlib.util
import os
import pathlib
import sys

import pytest

# Keep the suite on a deterministic, thread-friendly CPU setup on the 2-core CI box.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# XLA compiles are about three quarters of the suite's CPU time (1,876 of 2,560 s in a
# cold run, 6,428 programs). XLA:CPU's classic elemental emitters compile the same
# programs about a third faster than its default MLIR fusion emitters (three case-5
# TransGridEnv steps and a toy rollout: 13.6 -> 9.0 s; eager sin-and-scale of 20 array
# sizes: 2.76 -> 1.54 s) at the same run time (case-5 vmapped DC-OPF, N = 1024: 22.2 vs
# 23.0 ms). Both are XLA's supported code paths; PZJ_TEST_XLA_DEFAULT=1 runs the suite
# under XLA's default.
if os.environ.get("PZJ_TEST_XLA_DEFAULT") != "1" and "xla_cpu_use_fusion_emitters" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_use_fusion_emitters=false").strip()

# Compiles are most of the suite's time. JAX's persistent cache (keyed by the program,
# the JAX/XLA version and the compile options) lets the two xdist workers, CI's
# per-distribution runs and local re-runs reuse each other's compiled programs; eager
# (disable_jit) checks compile one tiny program per primitive, hence no minimum time.
# Tests count traces, never compiles, so no check depends on it. An entry the other
# worker is still writing reads as a decompression warning and a recompile. An explicit
# JAX_COMPILATION_CACHE_DIR wins; delete .pytest_cache/jax-compile to start cold.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import jax

    jax.config.update("jax_compilation_cache_dir", os.path.join(os.path.dirname(__file__), "..", ".pytest_cache", "jax-compile"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

sys.path.insert(0, os.path.dirname(__file__))

# CI runs a fixed sequence of hypothesis examples (HYPOTHESIS_PROFILE=ci in .ci/run) so
# a landing decision never hinges on the draw; local runs keep exploring new examples.
try:
    from hypothesis import settings as _hyp_settings

    _hyp_settings.register_profile("ci", derandomize=True, print_blob=True)
    _hyp_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
except ImportError:  # hypothesis is a dev dependency; a bare install still collects
    pass


# Strict numerics: in a test, an implicit rank promotion (`(n,)` against `(1, n)`) or an
# implicit dtype promotion (int32 with float32, float32 with complex64, bool with float32)
# raises, so every broadcast and cast the library relies on is written out. Test files
# (paths under tests/; a folder covers its files) not yet clean under a setting are listed
# here and keep JAX's default for that setting; the lists only shrink. Setting
# JAX_NUMPY_RANK_PROMOTION=raise / JAX_NUMPY_DTYPE_PROMOTION=strict probes the listed files
# too. Session- and module-scoped fixtures are built before a test's setting applies.
# The documentation pages run in child processes of their own (tests/docs/run_page.py), which
# this fixture does not reach.
# Three rl files count the compiles of trainers built by module-scoped fixtures, under the
# default numerics; the strict setting of a test would count a second trace of each.
_COMPILE_COUNTS_OF_SHARED_TRAINERS = ("rl/test_apg.py", "rl/test_ppo.py", "rl/test_runner.py")
RANK_PROMOTION_NOT_YET_STRICT: tuple[str, ...] = ("docs", *_COMPILE_COUNTS_OF_SHARED_TRAINERS)
DTYPE_PROMOTION_NOT_YET_STRICT: tuple[str, ...] = (
    # The seed pages' code, run verbatim: their Optax optimisers raise a Python float to an
    # int32 step count, which strict promotion refuses.
    "grid/test_seed_examples.py",
    "docs",
    *_COMPILE_COUNTS_OF_SHARED_TRAINERS,
)


def _listed(relative: str, listed: tuple[str, ...]) -> bool:
    return any(relative == entry or relative.startswith(entry + "/") for entry in listed)


@pytest.fixture(autouse=True)
def _strict_numerics(request):
    import contextlib

    import jax

    try:
        relative = request.node.path.resolve().relative_to(_TESTS_DIR).as_posix()
    except ValueError:
        relative = ""
    with contextlib.ExitStack() as stack:
        if not _listed(relative, RANK_PROMOTION_NOT_YET_STRICT):
            stack.enter_context(jax.numpy_rank_promotion("raise"))
        if not _listed(relative, DTYPE_PROMOTION_NOT_YET_STRICT):
            stack.enter_context(jax.numpy_dtype_promotion("strict"))
        yield


def has_distribution(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


# The kit's checks that compare two compiled programs (jit = eager, vmap = loop).
_KIT_CHECKS = frozenset({"check_env_api", "check_wrapper_api"})


def _calls_the_kit(item) -> bool:
    # The test's own code names a kit check (imported in the test, as the suite does).
    code = getattr(getattr(item, "function", None), "__code__", None)
    return code is not None and not _KIT_CHECKS.isdisjoint((*code.co_names, *code.co_varnames))


_TESTS_DIR = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # Tests of a distribution that is not installed are deselected with a reason,
    # so "core alone" / "core + rl" runs stay meaningful.
    requirements = {"grid": "powerzoojax.grid", "market": "powerzoojax.market", "rl": "powerzoojax.rl"}
    for item in items:
        # Marked "conformance": .ci/run runs them a second time under XLA's default CPU
        # pipeline, a second compilation of the same programs (as another CPU gives).
        if _calls_the_kit(item):
            item.add_marker(pytest.mark.conformance)
        parts = item.path.parts
        # The documentation pages' code takes minutes (a fresh process per page): marked
        # "docs", deselected by default, run by .ci/run in a step of its own.
        if item.path.parent.name == "docs" and item.path.parent.parent == _TESTS_DIR:
            item.add_marker(pytest.mark.docs)
        for folder, module in requirements.items():
            if folder in parts and not has_distribution(module):
                item.add_marker(pytest.mark.skip(reason=f"{module} is not installed in this environment"))
        # Fixtures that build grid envs: tests using them (directly or through other
        # fixtures) need pzj-grid wherever they live.
        if any(name.startswith("trans5") for name in getattr(item, "fixturenames", ())) and not has_distribution("powerzoojax.grid"):
            item.add_marker(pytest.mark.skip(reason="needs pzj-grid (uses a TransGridEnv fixture)"))
        for marker in item.iter_markers("requires"):
            for module in marker.args:
                if not has_distribution(module):
                    item.add_marker(pytest.mark.skip(reason=f"{module} is not installed in this environment"))


@pytest.fixture(scope="session")
def case5():
    from powerzoojax.case import load_case

    return load_case("5")


@pytest.fixture(scope="session")
def case5_matpower():
    """MATPOWER's case 5 (zero unit minimums, 240 MW line 4-5 binding at low-cost dispatch):
    for tests whose scenario or independent reference (PYPOWER) is built on MATPOWER's file."""
    from powerzoojax.case import load_case

    return load_case("5", source="matpower")


@pytest.fixture(scope="session")
def case118():
    from powerzoojax.case import load_case

    return load_case("118")


@pytest.fixture(scope="session")
def trans5(case5):
    """(env, params) for case 5 with the nominal profile, 48 steps."""
    from powerzoojax.envs import TransGridEnv, make_trans_params

    return TransGridEnv(), make_trans_params(case5, max_steps=48)


@pytest.fixture(scope="session")
def trans5_matpower(case5_matpower):
    """(env, params) for MATPOWER's case 5, nominal profile, 48 steps. On the benchmark
    table's case 5 no action from the reset state overloads a line (each of the 3^5 actions
    in {-1, 0, 1}^5 leaves line 4-5 under its 240 MW rating: the unit minimums hold 45 MW
    away from unit 5), so overload scenarios use MATPOWER's file."""
    from powerzoojax.envs import TransGridEnv, make_trans_params

    return TransGridEnv(), make_trans_params(case5_matpower, max_steps=48)


@pytest.fixture(scope="session")
def toy():
    """(env, params) of the tiny stochastic core-only env used by core and rl tests."""
    from toy_env import ToyEnv, make_toy_params

    return ToyEnv(), make_toy_params(max_steps=8)
