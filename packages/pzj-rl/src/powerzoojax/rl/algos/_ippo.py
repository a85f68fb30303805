"""IPPO on the multi-agent adapters: full parameter sharing (`ippo`), one network per"""

from collections.abc import Callable
from typing import Any, cast, final

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Float, Int, PyTree
from powerzoojax.core import rollout
from powerzoojax.core._types import Key
from powerzoojax.rl.algos._config import PPOConfig, TrainConfig, family_config
from powerzoojax.rl.algos._networks import ActorCritic, gaussian_log_prob
from powerzoojax.rl.algos._ppo import (
    _REWARD_CLIP,
    RunningStats,
    _discounted_returns,
    adam_clipped,
    evaluation_interval,
    cost_metrics,
    dual_step,
    gae,
    init_stats,
    mean_at_episode_ends,
    normalize,
    over_batch,
    ppo_loss,
    shuffled_minibatches,
    update_stats,
)
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.algos._update_loop import Programs, UpdateLoop, check_mesh, compile_programs
from powerzoojax.rl.marl._multi_agent import MultiAgentEnvironment
from powerzoojax.core import _precision as hp

SHARED = "shared"
_MARKET_KEYS = ("lmp", "unit_power", "ramp_binding_rate", "gen_cost", "load_mw")


class IPPOState(eqx.Module):
    """Everything an IPPO run carries between updates (and what a checkpoint holds).

    **Arguments:**

    - `policy`: `{agent type or "shared": ActorCritic}`.
    - `opt_state`: the optimiser state.
    - `env_state`: the batched env states.
    - `obs`: `(n_envs, n_agents, obs_dim)` current observations.
    - `key`: PRNG key.
    - `update`: index of the next update.
    - `obs_stats`, `return_stats`: running statistics.
    - `discounted_return`: `(n_envs, n_agents)` running discounted returns.
    - `episode_return`: `(n_envs,)` running team return.
    - `log_lambda`: `(k,)` the team's Lagrange multipliers' logs (empty without
      constraints).
    - `cum_profit`: `(n_agents,)` market mode only: raw profit per agent summed over the
      run (mean over envs); `None` otherwise.
    - `snapshot`: market mode only: the policy's arrays after the 80 % update.
    """

    policy: dict[str, ActorCritic]
    opt_state: PyTree
    env_state: PyTree
    obs: Float[Array, "n_envs n_agents obs_dim"]
    key: Array
    update: Int[Array, ""]
    obs_stats: RunningStats
    return_stats: RunningStats
    discounted_return: Float[Array, "n_envs n_agents"]
    episode_return: Float[Array, " n_envs"]
    log_lambda: Float[Array, " k"]
    # Market mode only (None otherwise): raw profit per agent summed over the run (mean
    # over envs) and the policy's arrays after the 80 % update.
    cum_profit: Float[Array, " n_agents"] | None = None
    snapshot: PyTree = None


def params_distance(a: PyTree, b: PyTree) -> Float[Array, ""]:
    """L2 distance between the array leaves of two policies of the same structure."""
    la, lb = jax.tree.leaves(eqx.filter(a, eqx.is_array)), jax.tree.leaves(eqx.filter(b, eqx.is_array))
    return jnp.sqrt(sum(jnp.sum((x - y) ** 2) for x, y in zip(la, lb, strict=True)))


@final
class AgentLayout(eqx.Module):
    """How an IPPO policy meets the agents: agents stacked on a leading axis (order =
    `env.agents`), grouped into types that each have one network, and what the networks
    see (normalised observations, optionally a one-hot agent index). The trainer and
    `make_ippo_act` (which rebuilds it from a result) act through it.

    **Arguments:**

    - `n_agents`, `obs_dim`, `action_dim`: the adapter's sizes.
    - `agent_ids`: a one-hot agent index is appended to every observation.
    - `types`: the networks' names (agent types, sorted; `("shared",)` with full sharing).
    - `type_index`: per type, the indices of its agents.
    - `n_costs`: cost-value heads of each network.
    - `normalize_observations`: observations pass through the running statistics.
    """

    n_agents: int
    obs_dim: int
    action_dim: int
    agent_ids: bool
    types: tuple[str, ...]
    type_index: tuple[np.ndarray, ...]
    n_costs: int
    normalize_observations: bool

    @property
    def in_dim(self) -> int:
        """Width of what a network sees: the observation plus the agent index when given."""
        return self.obs_dim + (self.n_agents if self.agent_ids else 0)

    def prep(self, stats: RunningStats, obs: Float[Array, "n_agents obs_dim"]) -> Float[Array, "n_agents in_dim"]:
        if self.normalize_observations:
            obs = normalize(stats, obs)
        if self.agent_ids:
            obs = jnp.concatenate([obs, jnp.eye(self.n_agents, dtype=obs.dtype)], axis=-1)
        return obs

    def forward(
        self, policy: dict[str, ActorCritic], obs: Float[Array, "n_agents in_dim"]
    ) -> tuple[Float[Array, "n_agents act"], Float[Array, "n_agents act"], Float[Array, "n_agents n_values"]]:
        """Mean, log std and values (reward, then costs) of every agent, each through its type's network."""
        if len(self.types) == 1:  # full sharing: no scatter into per-agent slots
            return jax.vmap(policy[self.types[0]])(obs)
        mean = jnp.zeros((self.n_agents, self.action_dim), obs.dtype)
        log_std = jnp.zeros((self.n_agents, self.action_dim), obs.dtype)
        value = jnp.zeros((self.n_agents, 1 + self.n_costs), obs.dtype)
        for name, idx in zip(self.types, self.type_index):
            m, ls, v = jax.vmap(policy[name])(obs[idx])
            mean, log_std, value = mean.at[idx].set(m), log_std.at[idx].set(ls), value.at[idx].set(v)
        return mean, log_std, value

    def deterministic_actions(
        self, policy: dict[str, ActorCritic], obs_stats: RunningStats | None, obs: Float[Array, "n_agents obs_dim"]
    ) -> Float[Array, "n_agents act"]:
        """Every agent's clipped mean action.

        **Arguments:**

        - `policy`: the networks.
        - `obs_stats`: the running observation statistics, or `None`.
        - `obs`: `(A, obs_dim)` stacked observations.

        **Returns:**

        `(A, action_dim)` actions in [-1, 1].
        """
        if obs_stats is None:
            obs_stats = init_stats((self.obs_dim,))
        mean, _, _ = self.forward(policy, self.prep(obs_stats, obs))
        return jnp.clip(mean, -1.0, 1.0)



@final
class IPPOTrainer(UpdateLoop):
    """IPPO (`typed=False`) or typed IPPO on a `MultiAgentEnvironment`, in Equinox + Optax.

    Agents are stacked on a leading axis everywhere (agent order = `env.agents`). One
    update collects `n_steps` × `num_envs` env steps through the rollout kernel (every
    agent acts from its own observation), computes per-agent GAE with the done mask
    (`done` = the env's `"__all__"`), then runs `n_epochs` × `n_minibatches`
    clipped-surrogate steps. Typed: agents are grouped by type (name prefix before the
    first `_`, sorted); each type has its own `ActorCritic`, its own shuffle and
    advantage normalisation, and the loss is the mean of the per-type PPO losses.

    Typed IPPO-Lagrangian: each type's network also has one cost-value head per selected
    constraint (`info["constraint_costs"]`, the team's costs); one shared team `λ`; per
    agent the advantage is `A_R − λᵀ A_C`, normalised per type; the dual step is that of
    `make_cmdp_train`.

    Market mode (the env has `compute_market_metrics`, e.g. `MarketMARLEnv`): each update
    also logs the env's market diagnostics, `market/mean_profit_<agent>`,
    `market/cumulative_profit_<agent>`, `market/cum_profit_mean` and, on the last update,
    `market/convergence_stability` (the L2 distance between the policy after 80 % of the
    updates and the final one).

    A whole run is one `lax.scan` over updates inside one `jax.jit`, so
    `jax.vmap(trainer.train)(keys)` trains several seeds at once; `init` / `run_chunk` /
    `result` are as in `PPOTrainer`.

    **Arguments:**

    - `env`: the [`MultiAgentEnvironment`][powerzoojax.rl.marl.MultiAgentEnvironment].
    - `config`: the [`PPOConfig`][powerzoojax.rl.algos.PPOConfig] (`TrainConfig(algo="ippo", ...)` and the other IPPO `algo`s).
    - `typed`: one network per agent type.
    - `agent_ids`: append a one-hot agent index to every observation.
    - `lagrangian`: typed IPPO-Lagrangian (`config.cost_thresholds` required).
    - `selected_names`: constrained channels of `env.constraint_names()`; `None` takes all.
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.
    """
    env: MultiAgentEnvironment
    config: PPOConfig
    agents: "AgentLayout"
    typed: bool
    market: bool
    lagrangian: bool
    cost_names: tuple[str, ...]
    cost_idx: Int[np.ndarray, " k"]
    # Lagrangian only (empty otherwise): cost divisors, scaled per-episode budgets, dual step sizes.
    cost_scale: Float[Array, " k"]
    thresholds: Float[Array, " k"]
    lambda_lr: Float[Array, " k"]
    n_updates: int
    snapshot_update: int
    batch_size: int
    eval_every: int
    optimizer: Any
    mesh: Mesh | None
    programs: Programs

    def __init__(
        self,
        env: MultiAgentEnvironment,
        config: TrainConfig,
        *,
        typed: bool = False,
        agent_ids: bool = False,
        lagrangian: bool = False,
        selected_names: tuple[str, ...] | None = None,
        mesh: Mesh | None = None,
    ):
        if not isinstance(env, MultiAgentEnvironment):
            raise TypeError(
                f"IPPO trains a multi-agent adapter (GridMARLEnv, DistGridMARLEnv, MarketMARLEnv), got {type(env).__name__}"
            )
        config = family_config(config, PPOConfig, "IPPOTrainer")
        if config.continuous_action_dist != "gaussian":
            raise NotImplementedError("IPPO has a Gaussian actor only; set continuous_action_dist='gaussian'")
        if (config.num_envs * config.n_steps) % config.n_minibatches:
            raise ValueError(
                f"num_envs * n_steps = {config.num_envs * config.n_steps} must be divisible by "
                f"n_minibatches = {config.n_minibatches}"
            )
        self.env = env
        self.config = config
        self.typed = typed
        if typed:
            types = tuple(sorted(set(env.agent_types)))
            type_index = tuple(
                np.asarray([i for i, t in enumerate(env.agent_types) if t == name], np.int32) for name in types
            )
        else:
            types, type_index = (SHARED,), (np.arange(env.num_agents, dtype=np.int32),)
        self.market = hasattr(env, "compute_market_metrics")
        self.lagrangian = lagrangian
        if lagrangian:
            if not hasattr(env, "constraint_names"):
                raise TypeError(f"IPPO-Lagrangian needs an adapter with constraint costs; {env.name} has none")
            names = tuple(env.constraint_names())  # pyright: ignore[reportAttributeAccessIssue]
            selected = names if selected_names is None else tuple(selected_names)
            unknown = [n for n in selected if n not in names]
            if unknown or not selected:
                raise ValueError(f"IPPO-Lagrangian: selected_names {list(selected)} must be a non-empty subset of {list(names)}")
            k = len(selected)
            thresholds = config.resolved_cost_thresholds(k)
            if thresholds is None:
                raise ValueError(
                    f"IPPO-Lagrangian: set config.cost_thresholds (one per selected constraint {list(selected)}, "
                    "per-episode budgets); there is no default"
                )
            self.cost_names = selected
            self.cost_idx = np.asarray([names.index(n) for n in selected], np.int32)
            self.cost_scale = jnp.asarray(config.resolved_cost_scale(k), jnp.float32)
            self.thresholds = jnp.asarray(thresholds, jnp.float32) / self.cost_scale
            self.lambda_lr = jnp.asarray(config.resolved_lambda_lr(k), jnp.float32)
        else:
            self.cost_names, self.cost_idx = (), np.zeros((0,), np.int32)
            self.cost_scale = self.thresholds = self.lambda_lr = jnp.zeros((0,), jnp.float32)
        self.agents = AgentLayout(
            n_agents=env.num_agents, obs_dim=env.obs_dim, action_dim=env.action_dim, agent_ids=agent_ids,
            types=types, type_index=type_index, n_costs=len(self.cost_names),
            normalize_observations=config.normalize_observations,
        )
        self.n_updates = config.n_updates
        self.snapshot_update = max(1, int(0.8 * self.n_updates))  # market/convergence_stability reference
        self.batch_size = config.num_envs * config.n_steps  # env steps per update
        self.eval_every = evaluation_interval(config, self.batch_size)
        self.optimizer = adam_clipped(config)
        self.mesh = check_mesh(mesh, config.num_envs)
        self.programs = compile_programs(self)

    # -- the agents' layout (AgentLayout), by the names the update uses --------------------
    @property
    def n_agents(self) -> int:
        """Number of agents (the env's, in `env.agents` order)."""
        return self.agents.n_agents

    @property
    def obs_dim(self) -> int:
        """Width of one agent's observation."""
        return self.agents.obs_dim

    @property
    def action_dim(self) -> int:
        """Width of one agent's action."""
        return self.agents.action_dim

    @property
    def agent_ids(self) -> bool:
        """Whether the networks see a one-hot agent index beside the observation."""
        return self.agents.agent_ids

    @property
    def in_dim(self) -> int:
        """Width of what a network sees: the observation plus the agent index when given."""
        return self.agents.in_dim

    @property
    def types(self) -> tuple[str, ...]:
        """Agent type names, one network each (one shared type unless typed)."""
        return self.agents.types

    @property
    def type_index(self) -> tuple[np.ndarray, ...]:
        """For each type, the indices of its agents."""
        return self.agents.type_index

    @property
    def n_costs(self) -> int:
        """Number of cost channels the critic predicts beside the return."""
        return self.agents.n_costs

    # -- policy helpers (the layout's) -----------------------------------------------
    def _prep(self, stats: RunningStats, obs: Float[Array, "n_agents obs_dim"]) -> Float[Array, "n_agents in_dim"]:
        return self.agents.prep(stats, obs)

    def _forward(
        self, policy: dict[str, ActorCritic], obs: Float[Array, "n_agents in_dim"]
    ) -> tuple[Float[Array, "n_agents act"], Float[Array, "n_agents act"], Float[Array, "n_agents n_values"]]:
        return self.agents.forward(policy, obs)

    def deterministic_actions(
        self, policy: dict[str, ActorCritic], obs_stats: RunningStats | None, obs: Float[Array, "n_agents obs_dim"]
    ) -> Float[Array, "n_agents act"]:
        """Every agent's clipped mean action (the layout's `AgentLayout.deterministic_actions`).

        **Arguments:**

        - `policy`: the networks.
        - `obs_stats`: the running observation statistics, or `None`.
        - `obs`: `(A, obs_dim)` stacked observations.

        **Returns:**

        `(A, action_dim)` actions in [-1, 1].
        """
        return self.agents.deterministic_actions(policy, obs_stats, obs)

    # -- init ------------------------------------------------------------------------
    def init(self, key: Key) -> IPPOState:
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jr.key_data(key)
        key, k_policy, k_reset = jr.split(key, 3)
        cfg = self.config
        policy = {
            name: ActorCritic(
                self.in_dim, self.action_dim, cfg.hidden_dims, k, n_costs=self.n_costs,
                log_std_init=cfg.log_std_init, shared=cfg.shared_torso,
            )
            for name, k in zip(self.types, jr.split(k_policy, len(self.types)))
        }
        obs, env_state = jax.vmap(self.env.reset_arrays)(jr.split(k_reset, cfg.num_envs))
        return IPPOState(
            policy=policy,
            opt_state=self.optimizer.init(eqx.filter(policy, eqx.is_array)),
            env_state=env_state,
            obs=obs,
            key=key,
            update=jnp.asarray(0, jnp.int32),
            obs_stats=init_stats((self.obs_dim,)),
            return_stats=init_stats(()),
            discounted_return=jnp.zeros((cfg.num_envs, self.n_agents), jnp.float32),
            episode_return=jnp.zeros((cfg.num_envs,), jnp.float32),
            log_lambda=jnp.zeros((self.n_costs,), jnp.float32),
            cum_profit=jnp.zeros((self.n_agents,), jnp.float32) if self.market else None,
            snapshot=eqx.filter(policy, eqx.is_array) if self.market else None,
        )

    # -- rollout ---------------------------------------------------------------------
    def _collect(self, state: IPPOState, key: Key) -> tuple[dict[str, PyTree], Any, Array]:
        def envs(shared, batched):
            policy, obs_stats = shared

            def act(k, obs, _):
                x = self._prep(obs_stats, obs)
                mean, log_std, value = self._forward(policy, x)
                raw = mean + jnp.exp(log_std) * jr.normal(k, mean.shape)
                return jnp.clip(raw, -1.0, 1.0), (obs, x, raw, gaussian_log_prob(raw, mean, log_std), value)

            def one_env(k, env_state, obs):
                return rollout(self.env.step_arrays, k, env_state, length=self.config.n_steps, policy=act, init_obs=obs)

            return jax.vmap(one_env)(*batched)

        batched = (jr.split(key, self.config.num_envs), state.env_state, state.obs)
        env_state, last_obs, outs = self.per_env_shard(envs, (state.policy, state.obs_stats), batched)
        _, rewards, dones, _info, (raw_obs, x, raw, logp, values) = outs
        traj = {"raw_obs": raw_obs, "obs": x, "action": raw, "log_prob": logp, "value": values, "reward": rewards, "done": dones}
        if self.market:
            traj["market_info"] = {k: _info[k] for k in _MARKET_KEYS if k in _info}
        if self.lagrangian:
            traj["costs"] = _info["constraint_costs"][..., self.cost_idx]
        # (N, T, ...) -> (T, N, ...): GAE runs backwards over time.
        return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), traj), env_state, last_obs

    # -- loss ------------------------------------------------------------------------
    def _type_loss(self, net: ActorCritic, mb: dict[str, Array]) -> tuple[Array, dict[str, Array]]:
        return ppo_loss(net, mb, self.config, self.n_costs)

    def _loss(self, policy: dict[str, ActorCritic], mb: dict[str, dict[str, Array]]) -> tuple[Array, dict[str, Array]]:
        losses, stats = [], []
        for name in self.types:
            loss, s = self._type_loss(policy[name], mb[name])
            losses.append(loss)
            stats.append(s)
        n = float(len(self.types))
        return cast(Array, sum(losses)) / n, jax.tree.map(lambda *xs: sum(xs) / n, *stats)

    # -- evaluation ------------------------------------------------------------------
    def evaluate_policy(self, policy: dict[str, ActorCritic], obs_stats: RunningStats, key: Key) -> dict[str, Array]:
        """Deterministic episodes from reset, `eval_num_episodes` in parallel.

        **Arguments:**

        - `policy`: the networks.
        - `obs_stats`: the running observation statistics.
        - `key`: PRNG key.

        **Returns:**

        The episode return (per-step mean over agents, summed over the episode) and each
        agent's own, as a dict.
        """
        act = lambda o: self.deterministic_actions(policy, obs_stats, o)  # noqa: E731
        outs = self.eval_episodes(self.env.reset_arrays, self.env.step_arrays, act, key)
        per_agent = jnp.mean(jnp.sum(outs[1], axis=1), axis=0)  # (A,)
        out = {"eval_returns": jnp.mean(per_agent)}
        out.update({f"eval_return_{a}": per_agent[i] for i, a in enumerate(self.env.agents)})
        return out

    # -- minibatches -----------------------------------------------------------------
    def _minibatches(self, key: Key, batch: dict[str, Array]) -> dict[str, dict[str, Array]]:
        """Per type: gather its agents, normalise its advantages, shuffle and cut into
        `n_minibatches` (leading axis of every leaf) with the PPO shuffle, rows = time
        steps, columns = (env, agent of the type) pairs."""
        cfg = self.config
        out = {}
        for name, idx, k in zip(self.types, self.type_index, jr.split(key, len(self.types))):
            if len(self.types) == 1:
                part = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batch)
            else:
                part = jax.tree.map(lambda x: x[:, idx].reshape((-1,) + x.shape[2:]), batch)
            adv = part["advantage"]
            part["advantage"] = (adv - adv.mean()) / (adv.std() + 1e-8)
            cols = cfg.num_envs * len(idx)
            out[name] = self.split_samples(
                shuffled_minibatches(k, part, cfg.n_steps, cols, cfg.n_minibatches), axis=1
            )
        return out

    # -- one update ------------------------------------------------------------------
    def update(self, state: IPPOState) -> tuple[IPPOState, dict[str, Array]]:
        cfg = self.config
        T, N, A = cfg.n_steps, cfg.num_envs, self.n_agents
        key, k_roll, k_epochs, k_eval = jr.split(state.key, 4)
        traj, env_state, last_obs = self._collect(state, k_roll)
        dones = jnp.broadcast_to(traj["done"][..., None], (T, N, A))
        rewards = traj["reward"]

        return_stats, discounted = state.return_stats, state.discounted_return
        if cfg.normalize_rewards:
            seen = _discounted_returns(
                rewards.reshape(T, N * A), dones.reshape(T, N * A), discounted.reshape(N * A), cfg.gamma
            ).reshape(T, N, A)
            return_stats = update_stats(return_stats, seen.reshape(-1))
            discounted = jnp.where(dones[-1], 0.0, seen[-1])
            rewards = jnp.clip(rewards / jnp.sqrt(return_stats.var + 1e-8), -_REWARD_CLIP, _REWARD_CLIP)

        obs_stats = state.obs_stats
        last_values = jax.vmap(lambda o: self._forward(state.policy, self._prep(obs_stats, o))[2])(last_obs)
        values = traj["value"]  # (T, N, A, 1 + k)
        flat_na = lambda x: x.reshape((x.shape[0], N * A) + x.shape[3:])  # noqa: E731
        adv, ret = gae(
            flat_na(rewards), flat_na(dones), flat_na(values[..., 0]), last_values[..., 0].reshape(N * A),
            cfg.gamma, cfg.gae_lambda,
        )
        # (T, N, A, ...) -> (T·N, A, ...): samples on axis 0, agents on axis 1.
        flat = lambda x: x.reshape((T * N,) + x.shape[2:])  # noqa: E731
        adv = adv.reshape(T * N, A)
        batch = {
            "obs": flat(traj["obs"]), "action": flat(traj["action"]), "log_prob": flat(traj["log_prob"]),
            "return": ret.reshape(T * N, A),
        }
        lam = jnp.exp(state.log_lambda)
        if self.n_costs:
            # Team costs: every agent's cost critic estimates the same (scaled) cost stream.
            costs = jnp.broadcast_to((traj["costs"] / over_batch(self.cost_scale, traj["costs"]))[:, :, None], (T, N, A, self.n_costs))
            cost_adv, cost_ret = jax.vmap(
                lambda c, v, lv: gae(c, flat_na(dones), v, lv, cfg.cost_gamma, cfg.gae_lambda), in_axes=(2, 2, 1), out_axes=2
            )(flat_na(costs), flat_na(values[..., 1:]), last_values[..., 1:].reshape(N * A, self.n_costs))
            adv = adv - hp.matmul(cost_adv.reshape(T * N, A, self.n_costs), lam)
            batch["cost_return"] = cost_ret.reshape(T * N, A, self.n_costs)
        batch["advantage"] = adv

        def minibatch_step(carry, mb):
            policy, opt_state = carry
            (_, stats), grads = eqx.filter_value_and_grad(self._loss, has_aux=True)(policy, mb)
            updates, opt_state = self.optimizer.update(grads, opt_state, eqx.filter(policy, eqx.is_array))
            return (eqx.apply_updates(policy, updates), opt_state), stats

        def epoch(carry, k):
            return jax.lax.scan(minibatch_step, carry, self._minibatches(k, batch))

        (policy, opt_state), loss_stats = jax.lax.scan(epoch, (state.policy, state.opt_state), jr.split(k_epochs, cfg.n_epochs))
        if cfg.normalize_observations:
            obs_stats = update_stats(obs_stats, traj["raw_obs"].reshape(-1, self.obs_dim))

        # Episode return = per-step mean over agents, summed over the episode (raw rewards).
        team = jnp.mean(traj["reward"], axis=-1)
        running = _discounted_returns(team, traj["done"], state.episode_return, 1.0)
        n_done = jnp.sum(traj["done"])
        metrics = {k: jnp.mean(v) for k, v in loss_stats.items()}
        metrics.update(
            update=(state.update + 1).astype(jnp.float32),
            env_steps=((state.update + 1) * self.batch_size).astype(jnp.float32),
            mean_reward=jnp.mean(traj["reward"]),
            step_done_rate=jnp.mean(traj["done"].astype(jnp.float32)),
            episodes_done=n_done.astype(jnp.float32),
            episode_return=mean_at_episode_ends(running, traj["done"]),
        )
        log_lambda = state.log_lambda
        if self.n_costs:
            episode_est = jnp.mean(traj["costs"] / over_batch(self.cost_scale, traj["costs"]), axis=(0, 1)) * self.env.max_steps
            log_lambda = dual_step(log_lambda, episode_est, self.thresholds, self.lambda_lr, cfg.log_lambda_max)
            metrics.update(cost_metrics(self.cost_names, traj["costs"], self.cost_scale, self.env.max_steps, log_lambda))
        cum_profit, snapshot = state.cum_profit, state.snapshot
        if self.market:
            assert cum_profit is not None  # set at init when self.market
            metrics.update(self.env.compute_market_metrics(traj["market_info"]))  # pyright: ignore[reportAttributeAccessIssue]
            per_agent = jnp.mean(traj["reward"], axis=(0, 1))
            cum_profit = cum_profit + jnp.sum(jnp.mean(traj["reward"], axis=1), axis=0)
            metrics.update({f"market/mean_profit_{a}": per_agent[i] for i, a in enumerate(self.env.agents)})
            metrics.update({f"market/cumulative_profit_{a}": cum_profit[i] for i, a in enumerate(self.env.agents)})
            metrics["market/cum_profit_mean"] = jnp.mean(cum_profit)
            done_updates = state.update + 1
            snapshot = jax.tree.map(
                lambda new, old: jnp.where(done_updates == self.snapshot_update, new, old),
                eqx.filter(policy, eqx.is_array), snapshot,
            )
            metrics["market/convergence_stability"] = jnp.where(
                done_updates == self.n_updates, params_distance(policy, snapshot), jnp.nan
            )
        new_state = IPPOState(
            policy=policy, opt_state=opt_state, env_state=env_state, obs=last_obs, key=key, update=state.update + 1,
            obs_stats=obs_stats, return_stats=return_stats, discounted_return=discounted,
            episode_return=jnp.where(traj["done"][-1], 0.0, running[-1]), log_lambda=log_lambda,
            cum_profit=cum_profit, snapshot=snapshot,
        )
        metrics.update(self.maybe_evaluate(
            state.update, self.evaluate_policy, policy, obs_stats, k_eval, initial=(state.policy, state.obs_stats, k_eval)
        ))
        return new_state, metrics

    # -- whole runs: run_chunk, train and __call__ come from UpdateLoop ----------------
    def result(self, state: IPPOState, metrics: dict[str, Any], checkpoints: Any = None) -> TrainResult:
        """The [`TrainResult`][powerzoojax.rl.algos.TrainResult] of a finished state.

        **Arguments:**

        - `state`: the final [`IPPOState`][powerzoojax.rl.algos.IPPOState].
        - `metrics`: per-update metrics.
        - `checkpoints`: checkpoints kept during the run, or `None`.

        **Returns:**

        A [`TrainResult`][powerzoojax.rl.algos.TrainResult].
        """
        params = state.policy if self.typed else state.policy[SHARED]
        if self.lagrangian:
            # Typed-Lagrangian params are {"actor": per-type nets (reward and cost heads), "cost": λ}.
            params = {"actor": state.policy, "cost": {"log_lambda": state.log_lambda}}
        return TrainResult(
            params=params,
            metrics=metrics,
            config=self.config,
            env_name=self.env.name,
            obs_stats=state.obs_stats if self.config.normalize_observations else None,
            checkpoints=checkpoints,
        )


def make_ippo_train(
    env: MultiAgentEnvironment, config: TrainConfig, *, agent_ids: bool = False, mesh: Mesh | None = None
) -> IPPOTrainer:
    """IPPO with full parameter sharing (`config.algo="ippo"`), one network per agent type
    (`"ippo_typed"`) or typed IPPO-Lagrangian over every constraint channel
    (`"ippo_typed_lagrangian"`).

    **Arguments:**

    - `env`: the [`MultiAgentEnvironment`][powerzoojax.rl.marl.MultiAgentEnvironment].
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `agent_ids`: append a one-hot agent index to every observation.
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.

    **Returns:**

    An [`IPPOTrainer`][powerzoojax.rl.algos.IPPOTrainer]; `trainer(key) -> TrainResult`.
    """
    if config.algo == "ippo_typed_lagrangian":
        return make_ippo_typed_lagrangian_train(env, config, agent_ids=agent_ids, mesh=mesh)
    return IPPOTrainer(env, config, typed=config.algo == "ippo_typed", agent_ids=agent_ids, mesh=mesh)


def make_ippo_typed_train(env: MultiAgentEnvironment, config: TrainConfig, *, agent_ids: bool = False) -> IPPOTrainer:
    """Typed IPPO (one `ActorCritic` per agent type); `result.params` is keyed by type.

    **Arguments:**

    - `env`: the [`MultiAgentEnvironment`][powerzoojax.rl.marl.MultiAgentEnvironment].
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `agent_ids`: append a one-hot agent index to every observation.

    **Returns:**

    An [`IPPOTrainer`][powerzoojax.rl.algos.IPPOTrainer].
    """
    return IPPOTrainer(env, config, typed=True, agent_ids=agent_ids)


def make_ippo_typed_lagrangian_train(
    env: MultiAgentEnvironment, config: TrainConfig, *, selected_names: tuple[str, ...] | None = None,
    agent_ids: bool = False, mesh: Mesh | None = None,
) -> IPPOTrainer:
    """Typed IPPO-Lagrangian: per-type actor-critics with cost heads and one team `λ`.

    `result.params = {"actor": {type: net}, "cost": {"log_lambda": (k,)}}`.

    **Arguments:**

    - `env`: the [`MultiAgentEnvironment`][powerzoojax.rl.marl.MultiAgentEnvironment].
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig];
      `config.cost_thresholds` is required.
    - `selected_names`: constrained channels of `env.constraint_names()`; `None` takes all.
    - `agent_ids`: append a one-hot agent index to every observation.
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.

    **Returns:**

    An [`IPPOTrainer`][powerzoojax.rl.algos.IPPOTrainer].
    """
    return IPPOTrainer(
        env, config, typed=True, agent_ids=agent_ids, lagrangian=True, selected_names=selected_names, mesh=mesh
    )


def _in_size(net: ActorCritic) -> int:
    first = net.torso.layers[0] if net.torso is not None else net.actor.layers[0]  # pyright: ignore[reportAttributeAccessIssue]
    return int(first.in_features)


def make_ippo_act(result: TrainResult, env: MultiAgentEnvironment | None = None) -> Callable[[Any], Any]:
    """Deterministic (clipped mean) actions of a trained IPPO / typed IPPO policy, jitted.

    **Arguments:**

    - `result`: the [`TrainResult`][powerzoojax.rl.algos.TrainResult].
    - `env`: the env; needed for typed params and `agent_ids`. Without it (shared params
      only) `act` takes one agent's observation `(obs_dim,)` or a batch
      `(..., obs_dim)`.

    **Returns:**

    `act(obs) -> actions`; with `env`, `obs` is the env's obs dict (or the stacked
    `(A, obs_dim)` array) and the actions come back in the same form.
    """
    params, stats = result.params, result.obs_stats
    if isinstance(params, dict) and "actor" in params and "cost" in params:
        params = params["actor"]  # typed IPPO-Lagrangian
    if env is None:
        if isinstance(params, dict):
            raise TypeError("make_ippo_act: typed IPPO params are keyed by agent type; pass the env to map agents to types")

        def single(obs: Array) -> Array:
            x = normalize(stats, obs) if stats is not None else obs
            if x.ndim == 1:
                return jnp.clip(params.mean_action(x), -1.0, 1.0)
            flat = x.reshape((-1, x.shape[-1]))
            return jnp.clip(jax.vmap(params.mean_action)(flat), -1.0, 1.0).reshape(x.shape[:-1] + (-1,))

        return jax.jit(single)

    typed = isinstance(params, dict)
    nets = params if typed else {SHARED: params}
    first = next(iter(nets.values()))
    critic_out = first.critic.out_features if isinstance(first.critic, eqx.nn.Linear) else first.critic.layers[-1].out_features
    types = tuple(sorted(nets)) if typed else (SHARED,)
    if typed:
        type_index = tuple(np.asarray([i for i, t in enumerate(env.agent_types) if t == name], np.int32) for name in types)
    else:
        type_index = (np.arange(env.num_agents, dtype=np.int32),)
    agents = AgentLayout(
        n_agents=env.num_agents, obs_dim=env.obs_dim, action_dim=env.action_dim,
        agent_ids=_in_size(first) == env.obs_dim + env.num_agents, types=types, type_index=type_index,
        n_costs=int(critic_out) - 1, normalize_observations=stats is not None,
    )

    def act(obs: Any) -> Any:
        stacked = env.stack(obs)
        actions = agents.deterministic_actions(nets, stats, stacked)
        return env.unstack(actions) if isinstance(obs, dict) else actions

    return jax.jit(act)
