"""pzj-market's env ids: the builders behind `powerzoojax.envs.make("CostBasedMarket-case5-v0")`.

`env_specs` is this distribution's `powerzoojax.envs` entry point (`pyproject.toml`);
the ids are also listed in core (`powerzoojax.envs._catalog`), which names this distribution
for them when it is not installed.
"""

from typing import Any

from powerzoojax.case import load_case
from powerzoojax.envs import EnvSpec, forwards_overrides
from powerzoojax.envs._catalog import CatalogEntry
from powerzoojax.envs._registry import first_party_specs
from powerzoojax.market._bid_based_market import BidBasedMarketEnv, make_bid_market_params
from powerzoojax.market._cost_based_market import CostBasedMarketEnv, make_cost_market_params


@forwards_overrides(make_cost_market_params, fills=("case",))
def cost_based_market(*, case: str, **overrides: Any) -> tuple[Any, Any]:
    """`CostBasedMarketEnv` on `case` (battery at bus 1, nominal loads by default)."""
    return CostBasedMarketEnv(), make_cost_market_params(load_case(case), **overrides)


@forwards_overrides(make_bid_market_params, fills=("case",))
def bid_based_market(*, case: str, **overrides: Any) -> tuple[Any, Any]:
    """`BidBasedMarketEnv` on `case` (battery at bus 1, nominal loads by default)."""
    return BidBasedMarketEnv(), make_bid_market_params(load_case(case), **overrides)


@forwards_overrides("powerzoojax.market.tasks.gencos:GenCosTask")
def gencos_task(*, split: str = "train", **task_kwargs: Any) -> tuple[Any, Any]:
    """The GenCos task's joint-action env and the params of `split`."""
    from powerzoojax.market.tasks.gencos import GenCosTask

    return GenCosTask(**task_kwargs).make_env(split)


BUILDERS = {"CostBasedMarket": cost_based_market, "BidBasedMarket": bid_based_market, "gencos": gencos_task}


# Family -> its one-line summary (ids with a case add ", case <case>").
SUMMARIES = {
    "CostBasedMarket": "CostBasedMarketEnv (storage arbitrage, truthful offers)",
    "BidBasedMarket": "BidBasedMarketEnv (storage arbitrage, marked-up offers)",
    "gencos": "GenCos task: strategic offers on case 5 (joint action)",
}


def describe(entry: CatalogEntry) -> str:
    """The one-line summary of a pzj-market id."""
    case = entry.kwargs.get("case")
    return SUMMARIES[entry.family] if case is None else f"{SUMMARIES[entry.family]}, case {case}"


def env_specs() -> list[EnvSpec]:
    """The `EnvSpec` of every id pzj-market provides (its entry point)."""
    return first_party_specs("pzj-market", BUILDERS, describe)
