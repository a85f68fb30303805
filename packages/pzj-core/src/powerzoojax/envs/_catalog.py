"""What pzj-core knows of the first-party distributions without importing them: the ids
they register and the names they add to the facades.

Each distribution registers its own ids, builders and public names through entry points
(`powerzoojax.envs`, `powerzoojax.envs.names`, `powerzoojax.tasks.names`,
`powerzoojax.tasks`); the registry and the facades read nothing else when it is installed.
This table exists for what metadata cannot say: an id or name whose distribution is *not*
installed has no entry point, yet it must be recognised and answered with the command that
installs it (`pip install pzj-grid`), and `list_envs` lists the ids without importing a
distribution. `tests/core/test_first_party_table.py` checks that each installed
distribution registers exactly what this table says, so the two cannot drift apart.

Id scheme (documented in `docs/guides/adapters.md`):

    <Family>[-case<case>][-<mode>]-v<version>      environments: the env class without "Env"
    <task>[-<variant>]-v<version>                  benchmark tasks: the powerzoojax.tasks name

`<case>` is the case registry's canonical id (`powerzoojax.case.list_cases`); the
registry also accepts it without the `case` prefix (`DistGrid-33bw-v0`).
"""

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

GRID, MARKET, RL = "pzj-grid", "pzj-market", "pzj-rl"

# The first-party distributions beyond pzj-core, in the order their registrations are read,
# with the package each installs.
FIRST_PARTY: dict[str, str] = {GRID: "powerzoojax.grid", MARKET: "powerzoojax.market", RL: "powerzoojax.rl"}

TRANSMISSION_CASES = ("5", "14", "29gb", "118", "300", "552gb", "1354pegase", "2383wp")
# AC-OPF (dense interior-point KKT), the market envs and the multi-agent families: the
# transmission cases up to 118 buses.
SMALL_TRANSMISSION_CASES = ("5", "14", "29gb", "118")
# The transmission cases that carry unit-commitment columns (ramps, min up/down times).
UNIT_COMMITMENT_CASES = ("14", "29gb", "118")
# Single-phase distribution feeders; case 123 is the three-phase one.
DISTRIBUTION_CASES = ("33bw", "118zh", "123_1ph", "141", "533mt_hi", "533mt_lo")
THREE_PHASE_CASES = ("123",)
# Distribution feeders small enough for one agent per DER bus.
MULTI_AGENT_DISTRIBUTION_CASES = ("33bw", "118zh", "123_1ph", "141")

# The physics modes of the transmission family by the name they have in ids (pzj-grid maps
# each to its physics and solver and describes it).
TRANS_GRID_MODES = ("dc", "dcopf", "ac", "dcopf_ac", "acopf")
VERSION = "v0"


class CatalogEntry(NamedTuple):
    """One first-party id.

    **Arguments:**

    - `id`: the env id, e.g. `"TransGrid-case118-dc-v0"`.
    - `family`: the name of the builder that makes it in the registering distribution
      (`"TransGrid"`, `"tso"`, `"ders-marl"`, ...).
    - `kwargs`: what the id fixes, passed to the builder (`{"case": "118", "mode": "dc"}`).
    - `requires`: the distributions it needs; the first one registers it.
    - `multi_agent`: True for the multi-agent adapters (PettingZoo, not Gymnasium).
    """

    id: str
    family: str
    kwargs: Mapping[str, Any]
    requires: tuple[str, ...]
    multi_agent: bool


def _env_id(family: str, case: str | None = None, mode: str | None = None) -> str:
    parts = [family]
    if case is not None:
        parts.append(f"case{case}")
    if mode is not None:
        parts.append(mode)
    return "-".join([*parts, VERSION])


def _cased(family: str, cases: tuple[str, ...], requires: tuple[str, ...], *, multi_agent: bool = False) -> Iterator[CatalogEntry]:
    for case in cases:
        yield CatalogEntry(_env_id(family, case), family, {"case": case}, requires, multi_agent)


def _single(family: str, requires: tuple[str, ...], *, multi_agent: bool = False, variant: str | None = None) -> CatalogEntry:
    builder = family if variant is None else f"{family}-{variant}"
    return CatalogEntry(_env_id(family, mode=variant), builder, {}, requires, multi_agent)


def _entries() -> Iterator[CatalogEntry]:
    for mode in TRANS_GRID_MODES:
        cases = SMALL_TRANSMISSION_CASES if mode == "acopf" else TRANSMISSION_CASES
        for case in cases:
            yield CatalogEntry(_env_id("TransGrid", case, mode), "TransGrid", {"case": case, "mode": mode}, (GRID,), False)
    yield from _cased("UnitCommitment", UNIT_COMMITMENT_CASES, (GRID,))
    yield from _cased("DistGrid", DISTRIBUTION_CASES, (GRID,))
    yield from _cased("DistGrid3Phase", THREE_PHASE_CASES, (GRID,))
    for family in ("DataCenter", "DataCenterMicrogrid", "Battery", "FlexLoad", "Vehicle", "Solar", "Wind"):
        yield _single(family, (GRID,))
    yield from _cased("CostBasedMarket", SMALL_TRANSMISSION_CASES, (MARKET,))
    yield from _cased("BidBasedMarket", SMALL_TRANSMISSION_CASES, (MARKET,))
    yield from _cased("GridMARL", SMALL_TRANSMISSION_CASES, (RL, GRID), multi_agent=True)
    yield from _cased("DistGridMARL", MULTI_AGENT_DISTRIBUTION_CASES, (RL, GRID), multi_agent=True)
    yield from _cased("DistGrid3PhaseMARL", THREE_PHASE_CASES, (RL, GRID), multi_agent=True)
    yield from _cased("MarketMARL", SMALL_TRANSMISSION_CASES, (RL, MARKET), multi_agent=True)
    yield _single("tso", (GRID,))
    yield _single("dso", (GRID,))
    yield _single("ders", (GRID,))
    yield _single("ders", (RL, GRID), multi_agent=True, variant="marl")
    yield _single("dc_microgrid", (GRID,))
    yield _single("gencos", (MARKET,))
    yield _single("gencos", (RL, MARKET), multi_agent=True, variant="marl")


CATALOG: dict[str, CatalogEntry] = {entry.id: entry for entry in _entries()}

# The names each first-party distribution adds to a facade (its `<facade>.names` entry
# points), consulted only when it does not register them, to name what to install.
FIRST_PARTY_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    GRID: {
        "powerzoojax.envs": tuple("""
        BatteryBundle BatteryEnv BatteryParams BatteryState DCMicrogridParams DCMicrogridState
        DataCenterEnv DataCenterMicrogridEnv DataCenterParams DataCenterState DieselBundle
        DieselParams DistGrid3PhParams DistGrid3PhState DistGrid3PhaseEnv DistGrid3PhaseParams
        DistGrid3PhaseState DistGridEnv DistGridParams DistGridState FlexLoadBundle FlexLoadEnv
        FlexLoadParams FlexLoadState GridParams GridState RenewableBundle RenewableEnv
        RenewableParams RenewableState ResourceBundle SolarEnv TransGridEnv TransGridParams
        TransGridState UCParams UCState UnitCommitmentEnv VehicleEnv VehicleParams VehicleState
        WindEnv compute_tso_metrics make_battery_bundle make_battery_params make_datacenter_params
        make_dcmicrogrid_params make_dcmicrogrid_params_with_profiles make_diesel_bundle
        make_dist_3phase_params make_dist_params make_flexload_bundle make_flexload_params
        make_renewable_bundle make_renewable_params make_trans_params make_tso_case118_params
        make_tso_case14_params make_tso_ed_params make_tso_scuc_params make_tso_uc_params
        make_uc_params make_vehicle_params tso_all_on_rollout tso_merit_order_rollout
    """.split()),
        "powerzoojax.tasks": tuple("""
        DCMicrogridParams DCMicrogridState DCMicrogridTask DERS_BATTERY_BUSES DERS_BATTERY_CONFIG
        DERS_BENCHMARK_LOAD_CASE DERS_FLEXLOAD_BUSES DERS_FLEXLOAD_CONFIG DERS_LARGE_BATTERY_BUSES
        DERS_LARGE_FLEXLOAD_BUSES DERS_LARGE_PV_BUSES DERS_LARGE_V_MAX DERS_LARGE_V_MIN
        DERS_PV_BUSES DERS_PV_CONFIG DERS_V_MAX DERS_V_MIN DERsTask DSOTask DSO_FEEDER_BUS_MAP
        DSO_FLEXLOAD_CONFIG DSO_V_MAX DSO_V_MIN DataCenterMicrogridEnv TSOTask TSO_COMPARISON_SCHEMA
        agent_dropout_rollout compute_dcmicrogrid_metrics compute_ders_metrics
        compute_ders_safety_metrics compute_dso_metrics compute_tso_metrics ders_no_control_rollout
        ders_volt_droop_rollout dso_droop_heuristic_rollout dso_droop_rule_based_rollout
        dso_no_control_rollout dso_tou_heuristic_rollout dso_tou_rule_based_rollout
        load_ders_load_shape load_dso_feeder_shapes load_feeder_shape make_case14_with_uc_defaults
        make_comparison_tso_load_trace make_comparison_tso_params make_dcmicrogrid_params
        make_dcmicrogrid_params_with_profiles make_ders_3phase_eval make_ders_battery_bundle
        make_ders_flexload_bundle make_ders_large_marl_env make_ders_large_params make_ders_marl_env
        make_ders_ood_params make_ders_params make_ders_params_from_split
        make_ders_params_with_profiles make_ders_pv_bundle make_dso_1flex_params
        make_dso_flexload_bundle make_dso_load_profiles make_dso_params make_dso_params_from_split
        make_dso_params_nonstationary make_synthetic_feeder_shapes make_tso_case118_params
        make_tso_case14_params make_tso_ed_params make_tso_net_load_profiles
        make_tso_net_load_profiles_from_data make_tso_scuc_params make_tso_uc_params rollout_ders
        rollout_dso tso_all_on_rollout tso_merit_order_rollout
    """.split()),
    },
    MARKET: {
        "powerzoojax.envs": tuple("""
        BidBasedMarketEnv BidMarketParams BidMarketState CostBasedMarketEnv CostMarketParams
        CostMarketState LMPMarketParams LMPMarketState MarketMARLParams MarketMARLState MarketParams
        MarketState OfferSCEDResult OfferSCEDSetup SimpleLMPArbitrageEnv make_bid_market_params
        make_cost_market_params make_cost_segments make_lmp_market_params make_market_marl_params
        market_marl_reset market_marl_step offer_sced piecewise_ed prepare_offer_sced
    """.split()),
        "powerzoojax.tasks": tuple("""
        GencosTask compute_gencos_metrics load_gencos_profiles make_gencos_env make_gencos_params
    """.split()),
    },
}

# The task keys of `powerzoojax.tasks.get_task` each first-party distribution registers
# (its `powerzoojax.tasks` entry points), in the order `list_tasks` gives them.
FIRST_PARTY_TASKS: dict[str, tuple[str, ...]] = {GRID: ("tso", "dso", "ders", "dc_microgrid"), MARKET: ("gencos",)}
