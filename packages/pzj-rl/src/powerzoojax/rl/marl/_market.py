"""`MarketMARLEnv`: the GenCos market core as one agent per generating unit."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float
from powerzoojax.core._types import Info, Key
from powerzoojax.rl.marl._multi_agent import MARLState, MultiAgentEnvironment
from powerzoojax.core import _precision as hp


PLANNER_SAMPLES = 512


class MarketMARLEnv(MultiAgentEnvironment):
    """GenCos bidding market with params bound.

    Agents `genco_0 … genco_{U−1}` (unit order of the case). Each agent's action is a
    `Box[-1, 1] (n_segments,)` of markups (sorted and mapped onto
    `truthful · (1 + m · max_markup)` by the core); actions are concatenated in agent
    order. Observation `(8 + lmp_history_len,)` per agent (12 by default), from
    [`powerzoojax.market.market_marl_observations`][powerzoojax.market.market_marl_observations]. Reward: each unit's realised
    profit [$] this round. `info` is the core's (`lmp`, `unit_power`, `gen_cost`,
    `cost_thermal_overload`, `sced_converged` …) plus `load_mw`: the nodal load [MW] the
    round cleared (the pre-step row).

    **Arguments:**

    - `params`: the [`MarketMARLParams`][powerzoojax.market.MarketMARLParams].
    """

    def __init__(self, params: Any):
        from powerzoojax.market import MarketMARLParams

        if not isinstance(params, MarketMARLParams):
            raise TypeError(
                f"MarketMARLEnv: params must be MarketMARLParams (powerzoojax.market.make_market_marl_params), "
                f"got {type(params).__name__}"
            )
        self.params = params
        self.agents = tuple(f"genco_{i}" for i in range(params.offer_sced_setup.n_units))

    @property
    def obs_dim(self) -> int:
        return 8 + int(self.params.lmp_history_len)  # pyright: ignore[reportAttributeAccessIssue]

    @property
    def action_dim(self) -> int:
        return int(self.params.offer_sced_setup.n_segments)  # pyright: ignore[reportAttributeAccessIssue]

    def reset_env(self, key: Key, params: Any) -> tuple[Float[Array, "n_agents obs_dim"], MARLState]:
        from powerzoojax.market import market_marl_observations, market_marl_reset

        p: Any = params  # MarketMARLParams (pzj-market, an optional distribution)
        state = market_marl_reset(key, p)
        return market_marl_observations(state, p), MARLState(state)

    def step_env(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: Any
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        from powerzoojax.market import market_marl_observations, market_marl_step

        p: Any = params  # MarketMARLParams (pzj-market, an optional distribution)
        s = state.env_state
        row = (s.episode_start_idx + s.time_step) % p.load_profiles.shape[0]
        load_mw = hp.matmul(p.nodes_loads_map, p.load_profiles[row])
        final_state, done, profit, info = market_marl_step(key, s, jnp.reshape(actions, (-1,)), p)
        info = {**info, "load_mw": load_mw}
        return market_marl_observations(final_state, p), MARLState(final_state), profit, done, info

    def compute_market_metrics(self, info: dict[str, Array]) -> dict[str, Array]:
        """Market diagnostics from a rollout's info.

        `market/price_volatility`: mean over envs of the coefficient of variation of the
        mean-LMP series; `market/HHI`: mean of Σ share² (shares of dispatched MW);
        `market/market_share_std`: mean std of the shares across agents;
        `market/ramp_binding_rate` (when given); `market/dispatch_share_<agent>`; with
        `load_mw` (S, E, N) and `gen_cost` (S, E) given, `market/planner_cost_ratio`: the true
        generation cost of a truthful, ramp-free `offer_sced` clearing of the same loads over
        the agents' `gen_cost`, summed over `PLANNER_SAMPLES` strided samples (a cost ratio,
        not welfare: below 1 when the agents' offers raised the cost).

        **Arguments:**

        - `info`: the rollout's info, leaves shaped `(S, E, ...)` (steps, envs).

        **Returns:**

        A dict of scalar metrics.
        """
        mean_lmp = jnp.mean(info["lmp"], axis=-1)  # (S, E)
        cv = jnp.std(mean_lmp, axis=0) / (jnp.abs(jnp.mean(mean_lmp, axis=0)) + 1e-6)
        power = info["unit_power"]
        share = power / (jnp.sum(power, axis=-1, keepdims=True) + 1e-6)  # (S, E, U)
        out = {
            "market/price_volatility": jnp.mean(cv),
            "market/HHI": jnp.mean(jnp.sum(share**2, axis=-1)),
            "market/market_share_std": jnp.mean(jnp.std(share, axis=-1)),
        }
        if "ramp_binding_rate" in info:
            out["market/ramp_binding_rate"] = jnp.mean(info["ramp_binding_rate"])
        mean_share = jnp.mean(share, axis=(0, 1))
        out.update({f"market/dispatch_share_{a}": mean_share[i] for i, a in enumerate(self.agents)})
        if "load_mw" in info and "gen_cost" in info:
            out["market/planner_cost_ratio"] = self._planner_cost_ratio(info["load_mw"], info["gen_cost"])
        return out

    def _planner_cost_ratio(self, load_mw: Float[Array, "S E n_nodes"], gen_cost: Float[Array, "S E"]) -> Float[Array, ""]:
        from powerzoojax.market import offer_sced

        p: Any = self.params
        loads = load_mw.reshape((-1, load_mw.shape[-1]))
        n = loads.shape[0]
        idx = (np.arange(min(PLANNER_SAMPLES, n)) * n) // min(PLANNER_SAMPLES, n)
        truthful = jax.vmap(lambda l: offer_sced(p.offer_sced_setup, l, max_iter=p.sced_max_iter).total_cost)(loads[idx])
        return jnp.sum(truthful) * p.delta_t_hours / (jnp.sum(gen_cost.reshape(-1)[idx]) + 1e-6)
