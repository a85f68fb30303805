"""The env-id registry (powerzoojax.envs.make / list_envs / spec): the id scheme, did-you-mean,
overrides, entry points (first-party and third-party) and the missing-distribution messages.

Registries built here from fake entry points run with pzj-core alone; the tests that make
real grid / market envs carry the ``requires`` marker.
"""

import importlib.metadata
import pathlib
import subprocess
import sys
import textwrap
import tomllib
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {"pzj-grid": "powerzoojax.grid", "pzj-market": "powerzoojax.market", "pzj-rl": "powerzoojax.rl"}


class FakeDist:
    def __init__(self, name):
        self.name = name


class FakeEntryPoint:
    """What importlib.metadata hands the registry: name, value, dist and load()."""

    def __init__(self, dist, target, name=None):
        self.name = name or dist
        self.value = f"fake:{self.name}"
        self.dist = FakeDist(dist)
        self._target = target
        self.loads = 0

    def load(self):
        self.loads += 1
        if isinstance(self._target, Exception):
            raise self._target
        return self._target


def toy_builder():
    from powerzoojax.envs import forwards_overrides
    from toy_env import ToyEnv, make_toy_params

    @forwards_overrides(make_toy_params)
    def build(*, flavour="plain", **overrides):
        return ToyEnv(), make_toy_params(**overrides)

    return build


def toy_specs(*ids, requires=("acme-envs",)):
    from powerzoojax.envs import EnvSpec

    build = toy_builder()
    return [EnvSpec(id=i, entry_point=build, kwargs={"flavour": "plain"}, requires=requires, summary="toy") for i in ids]


def registry(entry_points=(), installed=("pzj-core", "acme-envs")):
    from powerzoojax.envs._registry import EnvRegistry

    return EnvRegistry(entry_points=lambda: list(entry_points), is_installed=lambda dist: dist in installed)


# -- the id scheme -----------------------------------------------------------------------------


def test_catalog_ids_follow_the_documented_scheme():
    from powerzoojax.envs._catalog import CATALOG, TRANS_GRID_MODES
    from powerzoojax.envs._registry import _ID_PATTERN

    assert len(CATALOG) == 81
    assert sum(e.multi_agent for e in CATALOG.values()) == 15
    for env_id, entry in CATALOG.items():
        assert _ID_PATTERN.match(env_id), env_id
        assert env_id.endswith("-v0")
        if "case" in entry.kwargs:
            assert f"-case{entry.kwargs['case']}-" in env_id
        assert entry.requires[0] in DISTRIBUTIONS
    # Every TransGrid mode on case 5, AC-OPF only up to 118 buses, and the ids of the brief.
    assert {f"TransGrid-case5-{m}-v0" for m in TRANS_GRID_MODES} <= set(CATALOG)
    assert "TransGrid-case2383wp-acopf-v0" not in CATALOG
    for env_id in ("TransGrid-case118-dc-v0", "TransGrid-case5-dcopf-v0", "UnitCommitment-case118-v0",
                   "DistGrid-case33bw-v0", "DataCenterMicrogrid-v0", "tso-v0", "dso-v0", "ders-v0", "gencos-v0",
                   "dc_microgrid-v0", "ders-marl-v0", "gencos-marl-v0"):
        assert env_id in CATALOG


@pytest.mark.parametrize("bad", ["TransGrid", "TransGrid-case5", "-v0", "Trans Grid-v0", "TransGrid-case5-v"])
def test_spec_rejects_ids_off_the_scheme(bad):
    from powerzoojax.envs import EnvSpec

    with pytest.raises(ValueError, match="does not follow"):
        EnvSpec(id=bad, entry_point="m:f")


def test_spec_rejects_a_bad_entry_point():
    from powerzoojax.envs import EnvSpec

    with pytest.raises(ValueError, match="'module:attr'"):
        EnvSpec(id="Toy-v0", entry_point="no colon")


# -- third-party entry points ---------------------------------------------------------------------


def test_a_third_party_entry_point_adds_ids_without_loading_first_party_ones():
    grid = FakeEntryPoint("pzj-grid", RuntimeError("must not be loaded to list ids"))
    acme = FakeEntryPoint("acme-envs", lambda: toy_specs("acme/Toy-v0", "acme/Toy-hard-v1"))
    reg = registry([grid, acme], installed=("pzj-core", "pzj-grid", "acme-envs"))

    listed = reg.ids()
    assert {"acme/Toy-v0", "acme/Toy-hard-v1", "TransGrid-case5-dc-v0"} <= set(listed)
    assert grid.loads == 0 and acme.loads == 1
    assert reg.ids("acme/*") == ["acme/Toy-hard-v1", "acme/Toy-v0"]
    assert "GridMARL-case5-v0" not in listed  # pzj-rl is not "installed" here
    env, params = reg.make("acme/Toy-v0", max_steps=3)
    assert type(env).__name__ == "ToyEnv" and params.max_steps == 3
    assert acme.loads == 1


def test_an_iterable_entry_point_and_runtime_registration():
    reg = registry([FakeEntryPoint("acme-envs", toy_specs("Toy-v0"))])
    assert "Toy-v0" in reg.ids()
    (extra,) = toy_specs("Toy-v1")
    reg.register(extra)
    assert reg.spec("Toy-v1") is extra
    with pytest.raises(ValueError, match="already registered"):
        reg.register(extra)
    reg.register(extra, replace=True)
    with pytest.raises(TypeError, match="EnvSpec"):
        reg.register("Toy-v2")


def test_a_broken_entry_point_warns_and_the_others_still_load():
    broken = FakeEntryPoint("broken-envs", ImportError("no module named shiny"))
    good = FakeEntryPoint("acme-envs", lambda: toy_specs("Toy-v0"))
    reg = registry([broken, good])
    with pytest.warns(RuntimeWarning, match="'broken-envs'.*failed to load.*shiny"):
        listed = reg.ids()
    assert "Toy-v0" in listed


def test_a_duplicate_id_from_another_entry_point_warns_and_keeps_the_first():
    first = FakeEntryPoint("acme-envs", lambda: toy_specs("Toy-v0"))
    second = FakeEntryPoint("other-envs", lambda: [*toy_specs("Toy-v0"), "not a spec"])
    reg = registry([first, second])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg.ids()
    messages = [str(w.message) for w in caught]
    assert any("registers 'Toy-v0' again" in m for m in messages), messages
    assert any("returned str, not EnvSpec" in m for m in messages), messages


def test_a_builder_must_return_env_and_params():
    from powerzoojax.envs import EnvSpec

    reg = registry()
    reg.register(EnvSpec(id="Odd-v0", entry_point=lambda: "env"))
    with pytest.raises(TypeError, match="must return \\(env, params\\)"):
        reg.make("Odd-v0")


# -- lookup and did-you-mean ----------------------------------------------------------------------


def test_unknown_ids_suggest_the_closest():
    reg = registry()
    with pytest.raises(ValueError, match="unknown env id 'TransGrid-case5-dcc-v0'; did you mean 'TransGrid-case5-dc-v0'"):
        reg.spec("TransGrid-case5-dcc-v0")
    with pytest.raises(ValueError, match="unknown env id 'Nothing-like-it-v9' \\(powerzoojax.envs.list_envs"):
        reg.spec("Nothing-like-it-v9")


def test_missing_distribution_is_named():
    reg = registry(installed=("pzj-core",))
    assert reg.ids() == []
    assert "TransGrid-case5-dc-v0" in reg.ids(include_uninstalled=True)
    with pytest.raises(ImportError, match="'TransGrid-case5-dc-v0' needs pzj-grid, which is not installed: pip install pzj-grid"):
        reg.make("TransGrid-case5-dc-v0")
    with pytest.raises(ImportError, match="needs pzj-rl and pzj-market, which are not installed: pip install pzj-rl pzj-market"):
        reg.make("MarketMARL-case5-v0")
    # The alias and letter case resolve before the message.
    with pytest.raises(ImportError, match="'DistGrid-case33bw-v0' needs pzj-grid"):
        reg.make("distgrid-33BW-v0")


def test_an_installed_provider_that_does_not_register_an_id_is_reported():
    reg = registry([FakeEntryPoint("pzj-grid", lambda: [])], installed=("pzj-core", "pzj-grid"))
    with pytest.raises(ImportError, match="the installed pzj-grid does not register it"):
        reg.make("DistGrid-case33bw-v0")


def test_multi_agent_filter():
    from powerzoojax.envs._catalog import CATALOG

    reg = registry(installed=())
    multi = reg.ids(multi_agent=True, include_uninstalled=True)
    single = reg.ids(multi_agent=False, include_uninstalled=True)
    assert set(multi) == {i for i, e in CATALOG.items() if e.multi_agent}
    assert set(multi) | set(single) == set(CATALOG) and not set(multi) & set(single)


# -- overrides ----------------------------------------------------------------------------------


def test_overrides_are_checked_against_the_forwarded_factory():
    reg = registry()
    reg.register(toy_specs("Toy-v0")[0])
    # make_toy_params's arguments; the builder's own `flavour` is fixed by the id.
    assert reg.spec("Toy-v0").accepted_overrides() == ("drift", "max_steps")
    env, params = reg.make("Toy-v0", drift=0.25)
    assert float(params.drift) == 0.25
    with pytest.raises(TypeError, match="make\\('Toy-v0'\\): unknown override 'max_step' \\(did you mean 'max_steps'\\?\\); accepted: "):
        reg.make("Toy-v0", max_step=3)
    with pytest.raises(ValueError, match="flavour='spicy' contradicts the id, which fixes flavour='plain'"):
        reg.make("Toy-v0", flavour="spicy")


def test_a_builder_with_open_kwargs_and_no_factory_accepts_anything():
    from powerzoojax.envs import EnvSpec
    from toy_env import ToyEnv, make_toy_params

    def build(**kwargs):
        return ToyEnv(), make_toy_params(max_steps=kwargs.get("horizon", 8))

    reg = registry()
    reg.register(EnvSpec(id="Open-v0", entry_point=build))
    assert reg.spec("Open-v0").accepted_overrides() is None
    assert reg.make("Open-v0", horizon=5)[1].max_steps == 5


# -- the installed distributions ------------------------------------------------------------------


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_each_distribution_declares_its_entry_point(dist):
    project = tomllib.loads((ROOT / "packages" / dist / "pyproject.toml").read_text())["project"]
    (value,) = project["entry-points"]["powerzoojax.envs"].values()
    assert value == f"{DISTRIBUTIONS[dist]}{'.marl' if dist == 'pzj-rl' else ''}._registration:env_specs"
    installed = {ep.dist.name: ep.value for ep in importlib.metadata.entry_points(group="powerzoojax.envs")}
    try:
        importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        assert dist not in installed
    else:
        assert installed[dist] == value


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_each_installed_distribution_registers_exactly_its_catalogued_ids(dist):
    pytest.importorskip(DISTRIBUTIONS[dist])
    from powerzoojax.envs._catalog import CATALOG

    (entry_point,) = [ep for ep in importlib.metadata.entry_points(group="powerzoojax.envs") if ep.dist.name == dist]
    specs = entry_point.load()()
    assert sorted(s.id for s in specs) == sorted(i for i, e in CATALOG.items() if e.requires[0] == dist)
    for spec in specs:
        # Every forwarded factory resolves, where the distributions it lives in are installed
        # (pzj-rl's multi-agent ids forward to pzj-grid's and pzj-market's params factories).
        if all(_installed(d) for d in spec.requires):
            spec.accepted_overrides()


def _installed(distribution):
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_listing_ids_imports_no_distribution():
    code = textwrap.dedent(
        """
        import sys
        import powerzoojax.envs as envs
        ids = envs.list_envs()
        heavy = [m for m in ("powerzoojax.grid", "powerzoojax.market", "powerzoojax.rl") if m in sys.modules]
        print("IDS", len(ids), "HEAVY", heavy)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr


@pytest.mark.skipif(importlib.util.find_spec("powerzoojax.grid") is not None, reason="pzj-grid is installed")
def test_without_pzj_grid_its_ids_name_it():
    from powerzoojax.envs import list_envs, make

    assert "DistGrid-case33bw-v0" not in list_envs()
    assert "DistGrid-case33bw-v0" in list_envs(include_uninstalled=True)
    with pytest.raises(ImportError, match="pip install pzj-grid"):
        make("DistGrid-33bw-v0")
    with pytest.raises(ImportError, match="needs pzj-grid"):
        make("GridMARL-case5-v0")


@pytest.mark.requires("powerzoojax.grid")
def test_grid_mode_names_match_the_catalog():
    from powerzoojax.envs._catalog import TRANS_GRID_MODES
    from powerzoojax.grid._registration import TRANS_GRID_MODES as builder_modes
    from powerzoojax.grid.transmission._trans_grid_params import MODE_NAMES

    assert set(builder_modes) == set(TRANS_GRID_MODES)
    assert set(builder_modes.values()) <= set(MODE_NAMES)


@pytest.mark.requires("powerzoojax.grid")
def test_make_builds_the_env_the_id_names():
    from powerzoojax.envs import DistGridEnv, TransGridEnv, list_envs, make, spec

    env, params = make("TransGrid-case5-dcopf-v0", max_steps=6)
    assert isinstance(env, TransGridEnv)
    assert (params.physics, params.solver_mode, params.max_steps, params.case.n_nodes) == (0, 1, 6, 5)
    env, params = make("DistGrid-33bw-v0")  # alias of DistGrid-case33bw-v0
    assert isinstance(env, DistGridEnv) and params.network.n_nodes == 33
    assert spec("distgrid-case33BW-v0").id == "DistGrid-case33bw-v0"
    assert {"TransGrid-case118-dc-v0", "UnitCommitment-case118-v0", "DataCenterMicrogrid-v0", "tso-v0"} <= set(list_envs())


@pytest.mark.requires("powerzoojax.grid")
def test_real_ids_reject_bad_overrides_clearly():
    from powerzoojax.envs import make

    with pytest.raises(TypeError, match="unknown override 'max_step' \\(did you mean 'max_steps'\\?\\)"):
        make("TransGrid-case5-dc-v0", max_step=3)
    with pytest.raises(ValueError, match="fixes mode='dc'; use 'TransGrid-case5-ac-v0'"):
        make("TransGrid-case5-dc-v0", mode="ac")
    with pytest.raises(ValueError, match="fixes case='5'; use 'TransGrid-case14-dc-v0'"):
        make("TransGrid-case5-dc-v0", case="14")
    with pytest.raises(TypeError, match="unknown override 'physics'"):
        make("TransGrid-case5-dc-v0", physics=1)  # the mode sets it
    with pytest.raises(TypeError, match="make\\('dso-v0'\\): unknown override 'splitt' \\(did you mean 'split'\\?\\)"):
        make("dso-v0", splitt="iid")


@pytest.mark.requires("powerzoojax.grid")
@pytest.mark.parametrize(
    ("env_id", "overrides", "env_class", "check"),
    [
        ("UnitCommitment-case14-v0", {"enable_uc": False}, "UnitCommitmentEnv", lambda p: p.max_steps == 48),
        ("DistGrid3Phase-case123-v0", {"max_steps": 3}, "DistGrid3PhaseEnv", lambda p: p.max_steps == 3),
        ("Solar-v0", {"max_steps": 5}, "SolarEnv", lambda p: p.max_steps == 5),
        ("DataCenterMicrogrid-v0", {"max_steps": 12}, "DataCenterMicrogridEnv", lambda p: p.max_steps == 12),
        ("dso-v0", {"synthetic": True, "max_steps": 4}, "DistGridEnv", lambda p: p.max_steps == 4),
    ],
)
def test_grid_families_build(env_id, overrides, env_class, check):
    from powerzoojax.envs import make

    env, params = make(env_id, **overrides)
    assert type(env).__name__ == env_class and check(params)


@pytest.mark.requires("powerzoojax.grid", "powerzoojax.market")
def test_market_and_multi_agent_ids_build():
    from powerzoojax.envs import make

    env, params = make("CostBasedMarket-case5-v0", max_steps=4)
    assert type(env).__name__ == "CostBasedMarketEnv" and params.max_steps == 4
    marl, bound = make("GridMARL-case5-v0", max_steps=4)
    assert type(marl).__name__ == "GridMARLEnv" and bound is marl.params and marl.num_agents == 5
