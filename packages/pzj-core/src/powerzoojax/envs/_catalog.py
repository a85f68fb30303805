"""The ids of the envs and tasks this project ships, as data (no grid, market or rl import).

Every first-party id is listed here with the distributions it needs, so an id whose
distribution is not installed is still recognised and the error names what to install.
The builders live with their envs: each distribution's `powerzoojax.envs` entry point
turns the entries it provides into `EnvSpec` objects with
`catalog_specs`.

Id scheme (documented in `docs/guides/adapters.md`):

    <Family>[-case<case>][-<mode>]-v<version>      environments: the env class without "Env"
    <task>[-<variant>]-v<version>                  benchmark tasks: the powerzoojax.tasks name

`<case>` is the case registry's canonical id (`powerzoojax.case.list_cases`); the
registry also accepts it without the `case` prefix (`DistGrid-33bw-v0`).
"""

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

GRID, MARKET, RL = "pzj-grid", "pzj-market", "pzj-rl"

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

# TransGridEnv's physics modes by the name they have in ids.
TRANS_GRID_MODES: dict[str, str] = {
    "dc": "DC power flow, agent dispatch",
    "dcopf": "DC-OPF dispatch, DC power flow",
    "ac": "AC power flow, agent dispatch",
    "dcopf_ac": "DC-OPF dispatch, AC power flow",
    "acopf": "AC-OPF",
}
VERSION = "v0"


class CatalogEntry(NamedTuple):
    """One first-party id.

    **Arguments:**

    - `id`: the env id, e.g. `"TransGrid-case118-dc-v0"`.
    - `family`: the builder that makes it (`"TransGrid"`, `"tso"`, ...).
    - `kwargs`: what the id fixes, passed to the builder (`{"case": "118", "mode": "dc"}`).
    - `requires`: the distributions it needs; the first one registers it.
    - `multi_agent`: True for the multi-agent adapters (PettingZoo, not Gymnasium).
    - `summary`: one line for listings.
    """

    id: str
    family: str
    kwargs: Mapping[str, Any]
    requires: tuple[str, ...]
    multi_agent: bool
    summary: str


def _env_id(family: str, case: str | None = None, mode: str | None = None) -> str:
    parts = [family]
    if case is not None:
        parts.append(f"case{case}")
    if mode is not None:
        parts.append(mode)
    return "-".join([*parts, VERSION])


def _cased(
    family: str, cases: tuple[str, ...], requires: tuple[str, ...], summary: str, *, multi_agent: bool = False,
) -> Iterator[CatalogEntry]:
    for case in cases:
        yield CatalogEntry(_env_id(family, case), family, {"case": case}, requires, multi_agent, f"{summary}, case {case}")


def _single(family: str, requires: tuple[str, ...], summary: str, *, multi_agent: bool = False, **kwargs: Any) -> CatalogEntry:
    variant = kwargs.pop("variant", None)
    builder = family if variant is None else f"{family}-{variant}"
    return CatalogEntry(_env_id(family, mode=variant), builder, kwargs, requires, multi_agent, summary)


def _entries() -> Iterator[CatalogEntry]:
    for mode, described in TRANS_GRID_MODES.items():
        cases = SMALL_TRANSMISSION_CASES if mode == "acopf" else TRANSMISSION_CASES
        for case in cases:
            yield CatalogEntry(
                _env_id("TransGrid", case, mode), "TransGrid", {"case": case, "mode": mode}, (GRID,), False,
                f"TransGridEnv, case {case}: {described}",
            )
    yield from _cased("UnitCommitment", UNIT_COMMITMENT_CASES, (GRID,), "UnitCommitmentEnv (commitment + DC-OPF dispatch)")
    yield from _cased("DistGrid", DISTRIBUTION_CASES, (GRID,), "DistGridEnv (radial feeder, DER set-points)")
    yield from _cased("DistGrid3Phase", THREE_PHASE_CASES, (GRID,), "DistGrid3PhaseEnv (unbalanced three-phase feeder)")
    yield _single("DataCenter", (GRID,), "DataCenterEnv (GPU jobs and cooling)")
    yield _single("DataCenterMicrogrid", (GRID,), "DataCenterMicrogridEnv (data centre with PV, battery, diesel)")
    for family, env in (("Battery", "BatteryEnv"), ("FlexLoad", "FlexLoadEnv"), ("Vehicle", "VehicleEnv"),
                        ("Solar", "SolarEnv"), ("Wind", "WindEnv")):
        yield _single(family, (GRID,), f"{env} (one device, standalone)")
    yield from _cased("CostBasedMarket", SMALL_TRANSMISSION_CASES, (MARKET,), "CostBasedMarketEnv (storage arbitrage, truthful offers)")
    yield from _cased("BidBasedMarket", SMALL_TRANSMISSION_CASES, (MARKET,), "BidBasedMarketEnv (storage arbitrage, marked-up offers)")
    yield from _cased("GridMARL", SMALL_TRANSMISSION_CASES, (RL, GRID), "GridMARLEnv (one agent per unit)", multi_agent=True)
    yield from _cased(
        "DistGridMARL", MULTI_AGENT_DISTRIBUTION_CASES, (RL, GRID), "DistGridMARLEnv (one agent per DER bus)", multi_agent=True,
    )
    yield from _cased(
        "DistGrid3PhaseMARL", THREE_PHASE_CASES, (RL, GRID), "DistGrid3PhaseMARLEnv (battery agents)", multi_agent=True,
    )
    yield from _cased("MarketMARL", SMALL_TRANSMISSION_CASES, (RL, MARKET), "MarketMARLEnv (one GenCo per unit)", multi_agent=True)
    yield _single("tso", (GRID,), "TSO task: security-constrained unit commitment on case 118")
    yield _single("dso", (GRID,), "DSO task: six flexible loads on case 33bw")
    yield _single("ders", (GRID,), "DERs task: batteries, PV and flexible loads on case 141 (joint action)")
    yield _single("ders", (RL, GRID), "DERs task as 12 device agents (local observations)", multi_agent=True, variant="marl")
    yield _single("dc_microgrid", (GRID,), "DC-microgrid task: data centre with PV, battery and diesel")
    yield _single("gencos", (MARKET,), "GenCos task: strategic offers on case 5 (joint action)")
    yield _single("gencos", (RL, MARKET), "GenCos task as one agent per unit", multi_agent=True, variant="marl")


CATALOG: dict[str, CatalogEntry] = {entry.id: entry for entry in _entries()}


def catalog_specs(distribution: str, builders: Mapping[str, Callable[..., Any]]) -> list[Any]:
    """The `EnvSpec` of every catalogued id `distribution` registers.

    **Arguments:**

    - `distribution`: the registering distribution (`"pzj-grid"`, ...): the first of an
      entry's `requires`.
    - `builders`: family name -> builder `(**kwargs) -> (env, params)`.

    **Returns:** a list of specs. Raises `ValueError` naming a family without a builder,
    so a distribution cannot silently drop ids the catalog promises.
    """
    from powerzoojax.envs._registry import EnvSpec

    entries = [entry for entry in CATALOG.values() if entry.requires[0] == distribution]
    missing = sorted({entry.family for entry in entries} - set(builders))
    if missing:
        raise ValueError(f"catalog_specs: {distribution} has no builder for the families {missing}")
    return [
        EnvSpec(
            id=entry.id, entry_point=builders[entry.family], kwargs=dict(entry.kwargs), requires=entry.requires,
            multi_agent=entry.multi_agent, summary=entry.summary,
        )
        for entry in entries
    ]
