"""pzj-rl's env ids: the multi-agent adapters behind `powerzoojax.envs.make("GridMARL-case5-v0")`.

`env_specs` is this distribution's `powerzoojax.envs` entry point (`pyproject.toml`);
the ids are also listed in core (`powerzoojax.envs._catalog`) with the grid or market
distribution each needs, so that a missing one is named. `make` returns `(adapter, adapter.params)`. The grid and market
modules are imported when an id is made, so this module needs only core.
"""

from typing import Any

import numpy as np

from powerzoojax.case import load_case
from powerzoojax.envs import EnvSpec, forwards_overrides
from powerzoojax.envs._catalog import CatalogEntry
from powerzoojax.envs._registry import first_party_specs


@forwards_overrides("powerzoojax.grid.transmission:make_trans_params", fills=("case", "network_model"))
def grid_marl(*, case: str, reward_mode: str = "shared", **overrides: Any) -> tuple[Any, Any]:
    """`GridMARLEnv`: one agent per unit of a DC `TransGridEnv` on `case`."""
    from powerzoojax.grid.transmission import TransGridEnv, make_trans_params
    from powerzoojax.rl.marl._grid import GridMARLEnv

    env = GridMARLEnv(TransGridEnv(), make_trans_params(load_case(case), **overrides), reward_mode=reward_mode)
    return env, env.params


@forwards_overrides("powerzoojax.grid.distribution:make_dist_params", fills=("case",))
def dist_grid_marl(
    *, case: str, voltage_penalty: float = 0.0, soc_penalty: float = 0.0, observation_mode: str = "global",
    **overrides: Any,
) -> tuple[Any, Any]:
    """`DistGridMARLEnv`: one agent per DER bus of the feeder `case`."""
    from powerzoojax.grid.distribution import DistGridEnv, make_dist_params
    from powerzoojax.rl.marl._dist_grid import DistGridMARLEnv

    env = DistGridMARLEnv(
        DistGridEnv(), make_dist_params(load_case(case), **overrides), voltage_penalty=voltage_penalty,
        soc_penalty=soc_penalty, observation_mode=observation_mode,
    )
    return env, env.params


@forwards_overrides("powerzoojax.grid.tasks.ders:make_ders_3phase_eval", fills=("case",))
def dist_grid_3phase_marl(*, case: str, **overrides: Any) -> tuple[Any, Any]:
    """`DistGrid3PhaseMARLEnv`: the DERs batteries on the three-phase feeder `case`."""
    from powerzoojax.grid.tasks.ders import make_ders_3phase_eval

    return make_ders_3phase_eval(load_case(case), **overrides)


@forwards_overrides("powerzoojax.market:make_market_marl_params", fills=("case",))
def market_marl(*, case: str, load_profiles: Any = None, **overrides: Any) -> tuple[Any, Any]:
    """`MarketMARLEnv`: one GenCo per unit of `case`; loads default to the case's nominal
    `(load_d_min + load_d_max) / 2` on every row."""
    from powerzoojax.market import make_market_marl_params
    from powerzoojax.rl.marl._market import MarketMARLEnv

    case_data = load_case(case)
    if load_profiles is None:
        nominal = 0.5 * (np.asarray(case_data.load_d_min, np.float64) + np.asarray(case_data.load_d_max, np.float64))
        load_profiles = np.tile(nominal, (int(overrides.get("max_steps", 48)), 1))
    env = MarketMARLEnv(make_market_marl_params(case_data, load_profiles, **overrides))
    return env, env.params


@forwards_overrides("powerzoojax.rl.marl._dist_grid:make_ders_marl_env")
def ders_marl_task(**overrides: Any) -> tuple[Any, Any]:
    """The DERs task as 12 device agents with local observations."""
    from powerzoojax.rl.marl._dist_grid import make_ders_marl_env

    env = make_ders_marl_env(**overrides)
    return env, env.params


@forwards_overrides("powerzoojax.market.tasks.gencos:GenCosTask")
def gencos_marl_task(*, split: str = "train", **task_kwargs: Any) -> tuple[Any, Any]:
    """The GenCos task's market with one agent per unit (the params of `split`)."""
    from powerzoojax.market.tasks.gencos import GenCosTask
    from powerzoojax.rl.marl._market import MarketMARLEnv

    env = MarketMARLEnv(GenCosTask(**task_kwargs).params(split))
    return env, env.params


BUILDERS = {
    "GridMARL": grid_marl,
    "DistGridMARL": dist_grid_marl,
    "DistGrid3PhaseMARL": dist_grid_3phase_marl,
    "MarketMARL": market_marl,
    "ders-marl": ders_marl_task,
    "gencos-marl": gencos_marl_task,
}


# Family -> its one-line summary (ids with a case add ", case <case>").
SUMMARIES = {
    "GridMARL": "GridMARLEnv (one agent per unit)",
    "DistGridMARL": "DistGridMARLEnv (one agent per DER bus)",
    "DistGrid3PhaseMARL": "DistGrid3PhaseMARLEnv (battery agents)",
    "MarketMARL": "MarketMARLEnv (one GenCo per unit)",
    "ders-marl": "DERs task as 12 device agents (local observations)",
    "gencos-marl": "GenCos task as one agent per unit",
}


def describe(entry: CatalogEntry) -> str:
    """The one-line summary of a pzj-rl id."""
    case = entry.kwargs.get("case")
    return SUMMARIES[entry.family] if case is None else f"{SUMMARIES[entry.family]}, case {case}"


def env_specs() -> list[EnvSpec]:
    """The `EnvSpec` of every id pzj-rl provides (its entry point)."""
    return first_party_specs("pzj-rl", BUILDERS, describe)
