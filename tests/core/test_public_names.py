"""The reference's public names resolve from the same module paths (list in
tests/reference_public_names.py), the facades stay lazy, and the spec's signatures hold.

Names a facade forwards to another distribution resolve when it is installed and raise an
``ImportError`` naming it otherwise, so this file passes with pzj-core alone and with
everything; the behaviour of those names is tested with their distribution.
"""

import importlib
import importlib.util
import subprocess
import sys
import textwrap

import pytest
from reference_public_names import N_ADDED, N_NAMES, PUBLIC_NAMES, all_names, signature_starts

CORE_MODULES = ("powerzoojax.envs", "powerzoojax.tasks", "powerzoojax.case", "powerzoojax.data", "powerzoojax.utils.jax_utils")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def test_the_list_is_the_spec_list():
    assert sum(len(all_names(m)) for m in PUBLIC_NAMES) == N_NAMES
    assert sum(len(v["added"]) for v in PUBLIC_NAMES.values()) == N_ADDED
    assert set(PUBLIC_NAMES) == {*CORE_MODULES, "powerzoojax.rl"}


@pytest.mark.parametrize("module_name", CORE_MODULES)
def test_every_name_resolves_or_names_its_distribution(module_name):
    module = importlib.import_module(module_name)
    lazy = getattr(module, "_LAZY", {})
    resolved, forwarded = 0, 0
    for name in all_names(module_name):
        provider = lazy.get(name)
        if provider is None or provider[1] == "pzj-core" or _installed(provider[0]):
            assert getattr(module, name) is not None, f"{module_name}.{name}"
            resolved += 1
        else:
            with pytest.raises(ImportError, match=provider[1]):
                getattr(module, name)
            forwarded += 1
        if lazy:
            assert name in module.__all__, f"{module_name}.__all__ lacks {name}"
    assert resolved + forwarded == len(all_names(module_name))


def test_core_names_resolve_without_other_distributions():
    """Every name of case, data, utils.jax_utils and the core parts of the facades is
    pzj-core's own (a clean interpreter that hides pzj-grid, pzj-market and pzj-rl)."""
    names = {m: list(all_names(m)) for m in CORE_MODULES}
    code = textwrap.dedent(
        f"""
        import sys, importlib, importlib.abc
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[:2] in (["powerzoojax", "grid"], ["powerzoojax", "market"], ["powerzoojax", "rl"]):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None
        sys.meta_path.insert(0, Hide())
        names = {names!r}
        missing, named = [], 0
        for module_name, items in names.items():
            module = importlib.import_module(module_name)
            lazy = getattr(module, "_LAZY", {{}})
            for name in items:
                dist = lazy.get(name, (None, "pzj-core"))[1]
                try:
                    getattr(module, name)
                except ImportError as err:
                    if dist == "pzj-core" or dist not in str(err):
                        missing.append((module_name, name, str(err)))
                    named += 1
                    continue
                if dist != "pzj-core":
                    missing.append((module_name, name, "resolved without its distribution " + dist))
        print("MISSING", missing)
        print("NAMED", named)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "MISSING []" in out.stdout, out.stdout + out.stderr
    # envs: 92 names, 17 of them core's (8 base classes and spaces, 4 space constructors,
    # 2 DC flows, 3 diesel helpers); tasks: 83, 2 core's (TaskSpec, TASK_REGISTRY).
    assert "NAMED 156" in out.stdout, out.stdout


def test_facades_and_core_modules_stay_lazy():
    code = textwrap.dedent(
        """
        import sys
        import powerzoojax.envs, powerzoojax.tasks, powerzoojax.case, powerzoojax.data, powerzoojax.utils.jax_utils
        import powerzoojax.data.signals, powerzoojax.data.splits, powerzoojax.data.ausgrid_utils
        import powerzoojax.data.dc_microgrid_profiles
        heavy = [m for m in ("powerzoojax.grid", "powerzoojax.market", "powerzoojax.rl", "matplotlib", "pandas")
                 if m in sys.modules]
        print("HEAVY", heavy)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("submodule", ["signals", "splits", "ausgrid_utils", "dc_microgrid_profiles"])
def test_data_submodules_are_modules_and_attributes(submodule):
    import powerzoojax.data as data

    module = importlib.import_module(f"powerzoojax.data.{submodule}")
    assert getattr(data, submodule) is module
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_data_reexports_are_the_submodule_objects():
    import powerzoojax.data as data
    from powerzoojax.data import ausgrid_utils, dc_microgrid_profiles, signals, splits

    assert data.get_ausgrid_split is ausgrid_utils.get_ausgrid_split
    assert data.cycle_profile is dc_microgrid_profiles.cycle_profile
    assert data.GB_TRAIN_START is splits.GB_TRAIN_START
    assert signals.LOAD_ACTUAL_MW == data.LOAD_ACTUAL_MW == "load.actual_mw"


def test_unknown_names_still_raise_attribute_error():
    import powerzoojax.envs as envs
    import powerzoojax.tasks as tasks

    for module in (envs, tasks):
        with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
            module.not_a_name  # noqa: B018


# The signatures the spec writes out, for the names this distribution provides.
CORE_SIGNATURES = [
    ("powerzoojax.envs", "make_box", "low, high, shape=None, dtype=..."),
    ("powerzoojax.envs", "make_discrete", "n"),
    ("powerzoojax.envs", "make_multi_discrete", "nvec"),
    ("powerzoojax.envs", "make_multi_binary", "n"),
    ("powerzoojax.envs", "dc_power_flow", "case, unit_power_mw, node_load_mw"),
    ("powerzoojax.envs", "dc_power_flow_with_check", "case, unit_power_mw, node_load_mw"),
    ("powerzoojax.envs", "compute_dg_power", "action, p_max_mw"),
    ("powerzoojax.case", "compute_ptdf", "line_from_idx, line_to_idx, line_x, n_nodes, slack_idx=0"),
    ("powerzoojax.case", "compute_adjacency_matrix", "line_from_idx, line_to_idx, n_nodes"),
    ("powerzoojax.case", "build_case_matrices",
     "node_ids, unit_bus_ids, load_bus_ids, line_from, line_to, line_x, slack_bus_id=None"),
    ("powerzoojax.case", "case_to_jax", "case, *, slack_bus_id=None"),
    ("powerzoojax.case", "print_case", "case_data, warn=True"),
    ("powerzoojax.case", "CaseInfo", "case_data, warn=True, name=None"),
    ("powerzoojax.data", "get_ausgrid_split", "role"),
    ("powerzoojax.data", "get_feeder_substations", "feeder, role='train'"),
    ("powerzoojax.data", "select_full_coverage_substations", "df, start, end, *, max_gap_steps=2"),
    ("powerzoojax.data", "cycle_profile", "arr, episode_len, start_step=0"),
    ("powerzoojax.data", "load_workload_profiles",
     "source='google', episode_len=288, start_step=0, data_dir=None, manifest_dir=None, strict=True, "
     "require_real_data=False"),
    ("powerzoojax.data", "make_real_solar_profile",
     "episode_len=288, start_step=0, data_dir=None, manifest_dir=None, *, strict=True, require_real_data=False"),
    ("powerzoojax.data", "make_synthetic_outdoor_temp_profile", "episode_len=288, steps_per_day=288, mean_temp=20.0, amplitude=8.0"),
    ("powerzoojax.data", "apply_ood_transform", "params, scenario, *, drought_factor=0.2, temp_delta=5.0"),
]


@pytest.mark.parametrize(("module_name", "name", "spec"), CORE_SIGNATURES, ids=[f"{m}.{n}" for m, n, _ in CORE_SIGNATURES])
def test_signatures(module_name, name, spec):
    signature_starts(getattr(importlib.import_module(module_name), name), spec)


def test_timealigner_methods():
    from powerzoojax.data import TimeAligner

    signature_starts(TimeAligner.align_calendar, "df, sim_start, sim_end, align_from=None, time_col='datetime'")
    signature_starts(TimeAligner.align_profile, "df, sim_start, sim_end, resolution, time_col='datetime'")
    signature_starts(TimeAligner.tile_profile_jax, "values, n_needed")
    signature_starts(TimeAligner.align, "df, *, time_mode, sim_start, sim_end, align_from=None, resolution='30min'")
