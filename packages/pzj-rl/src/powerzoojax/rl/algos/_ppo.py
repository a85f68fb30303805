"""PPO and PPO-Lagrangian on bound single-agent wrappers, in Equinox + Optax.

One update = collect `n_steps` × `num_envs` transitions through the rollout kernel
(`jax.vmap` over envs of `powerzoojax.core.rollout` with the policy), GAE with the
done mask, `n_epochs` × `n_minibatches` shuffled clipped-surrogate steps
(`zero_nans → clip_by_global_norm → adam`), and for PPO-Lagrangian a dual step on
`log λ`. A whole run is one `lax.scan` over updates inside one `jax.jit`, so it
compiles once and `jax.vmap` over seeds works (`jax.vmap(trainer)(keys)`).

PPO-Lagrangian (`make_cmdp_train`, needs a `SafeRLWrapper`): the critic has one
reward head and one head per selected cost channel; costs (and thresholds) are divided
by `cost_scale`; the advantages are combined as `A = A_R − Σ_i λ_i A_C,i` and the
sum is normalised over the batch: normalising each `A_C,i` separately would turn the
critic noise of a channel whose cost is almost always zero into unit-variance noise
multiplied by λ.
After the policy epochs
`log λ ← clip(log λ + lambda_lr · (Ĵ_C − d), ±log_lambda_max)` with
`Ĵ_C = mean scaled cost per step × episode length` (`max_steps`) and `λ = 1` at
the start.

The Gaussian policy's sample is stored unclipped (its log-prob is exact); the env gets
it clipped to [-1, 1] and mapped affinely onto the action `Box`.
`continuous_action_dist="beta"`: a [`BetaActorCritic`][powerzoojax.rl.algos._networks.BetaActorCritic]
(swish torso, `α, β = 1 + softplus` ≤ 20); its sample `x ∈ (0, 1)` is stored, the env
gets `x` mapped affinely onto the `Box`, and the deterministic action is the mode.
"""

from collections.abc import Callable
from typing import Any, final

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Bool, Float, Int, PyTree
from powerzoojax.core import Box, rollout
from powerzoojax.core._types import Key
from powerzoojax.rl.algos._config import PPOConfig, TrainConfig, family_config
from powerzoojax.rl.algos._networks import (
    ActorCritic,
    BetaActorCritic,
    beta_entropy,
    beta_log_prob,
    beta_sample,
    gaussian_entropy,
    gaussian_log_prob,
)
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.algos._update_loop import Programs, UpdateLoop, check_mesh, compile_programs, eval_cost_metrics
# The running statistics live with the wrappers (NormalizeObservation shares them); the
# trainers import them from here.
from powerzoojax.rl.wrappers._running_stats import RunningStats, init_stats, normalize, update_stats  # noqa: F401
from powerzoojax.rl.wrappers._safe import SafeRLWrapper
from powerzoojax.rl.wrappers._transition import transition_step
from powerzoojax.core import _precision as hp

_REWARD_CLIP = 10.0


class TrainState(eqx.Module):
    """Everything a PPO-family or APG run carries from one update to the next (and what a
    checkpoint holds).

    **Arguments:**

    - `policy`: the network.
    - `opt_state`: the optimiser state.
    - `env_state`: the batched env states.
    - `obs`: `(n_envs, obs_dim)` current observations.
    - `key`: PRNG key.
    - `update`: index of the next update.
    - `obs_stats`, `return_stats`: running statistics of observations and returns.
    - `discounted_return`: `(n_envs,)` running discounted return (reward normalisation).
    - `log_lambda`: `(k,)` Lagrange multipliers' logs (PPO-Lagrangian; empty otherwise).
    """

    policy: ActorCritic | BetaActorCritic
    opt_state: PyTree
    env_state: PyTree
    obs: Float[Array, "n_envs obs_dim"]
    key: Array
    update: Int[Array, ""]
    obs_stats: RunningStats
    return_stats: RunningStats
    discounted_return: Float[Array, " n_envs"]
    log_lambda: Float[Array, " k"]


def gae(
    rewards: Float[Array, "T N"],
    dones: Bool[Array, "T N"],
    values: Float[Array, "T N"],
    last_value: Float[Array, " N"],
    gamma: float,
    gae_lambda: float,
) -> tuple[Float[Array, "T N"], Float[Array, "T N"]]:
    """Generalised advantage estimation with the done mask.

    `dones[t]` marks the transition that ended an episode: nothing is bootstrapped across
    it (the next observation already belongs to the next episode).

    **Arguments:**

    - `rewards`: `(T, N)` rewards.
    - `dones`: `(T, N)` episode-end flags.
    - `values`: `(T, N)` value estimates.
    - `last_value`: `(N,)` value of the observation after the batch.
    - `gamma`: discount.
    - `gae_lambda`: GAE λ.

    **Returns:**

    `(advantages, returns)`, each `(T, N)`.
    """
    not_done = 1.0 - dones.astype(jnp.float32)
    next_values = jnp.concatenate([values[1:], last_value[None]], axis=0)
    deltas = rewards + gamma * next_values * not_done - values

    def back(carry, xs):
        delta, nd = xs
        carry = delta + gamma * gae_lambda * nd * carry
        return carry, carry

    _, advantages = jax.lax.scan(back, jnp.zeros_like(last_value), (deltas, not_done), reverse=True)
    return advantages, advantages + values


def _discounted_returns(
    rewards: Float[Array, "T N"], dones: Bool[Array, "T N"], carry: Float[Array, " N"], gamma: float
) -> Float[Array, "T N"]:
    """`G_t = γ G_{t−1} + r_t` restarted after each done, from `carry` (an associative scan, not a time loop)."""
    prev_done = jnp.concatenate([jnp.zeros_like(dones[:1]), dones[:-1]], axis=0)
    decay = gamma * (1.0 - prev_done.astype(jnp.float32))

    def combine(a, b):
        return a[0] * b[0], b[0] * a[1] + b[1]

    decays, partial = jax.lax.associative_scan(combine, (decay, rewards))
    return decays * carry[None] + partial




def shuffled_minibatches(key: Key, batch: PyTree, n_rows: int, n_cols: int, m: int) -> PyTree:
    """Split a flat batch (every leaf `(n_rows · n_cols, ...)`, row-major: time steps ×
    envs, or × env-agents) into `m` random minibatches (leading axis `m`); every sample
    is used once. PPO and IPPO both cut their minibatches here.

    When `m` divides both `n_rows` and `n_cols`, rows and columns are permuted separately
    and cut into `m` groups each; minibatch `k` takes the (row group `g`, column group
    `(k − g) mod m`) blocks, a random Latin square, so every minibatch spans all row groups
    and all column groups, and no sort of the whole batch is needed. Otherwise one
    `jax.random.permutation` of all samples.
    """
    size = n_rows * n_cols
    if n_rows % m or n_cols % m:
        perm = jr.permutation(key, size)
        return jax.tree.map(lambda x: x[perm].reshape((m, size // m) + x.shape[1:]), batch)
    k_r, k_c = jr.split(key)
    perm_r, perm_c = jr.permutation(k_r, n_rows), jr.permutation(k_c, n_cols)
    groups = np.arange(m)
    row_group = np.broadcast_to(groups[None, :], (m, m))
    col_group = (groups[:, None] - groups[None, :]) % m  # [k, g] = column group paired with row group g

    def split(x):
        x = x.reshape((n_rows, n_cols) + x.shape[1:])[perm_r][:, perm_c]
        x = x.reshape((m, n_rows // m, m, n_cols // m) + x.shape[2:])
        x = x[row_group, :, col_group]  # (k, g, rows/m, cols/m, ...)
        return x.reshape((m, size // m) + x.shape[4:])

    return jax.tree.map(split, batch)


def ppo_loss(
    policy: ActorCritic | BetaActorCritic, mb: dict[str, Array], config: PPOConfig, n_costs: int = 0
) -> tuple[Array, dict[str, Array]]:
    """The PPO loss on one minibatch (every PPO-family trainer uses this one function).

    Clipped surrogate (log-ratio clipped to ±20) + `vf_coef` · value loss − `ent_coef` ·
    entropy; with cost heads the value loss is `0.5 · (MSE_R + MSE_C)`.

    **Arguments:**

    - `policy`: the network.
    - `mb`: `obs`, `action` (the unclipped sample), `log_prob` (at collection),
      `advantage` (already combined / normalised), `return` and, with `n_costs`,
      `cost_return` `(B, n_costs)`.
    - `config`: the [`PPOConfig`][powerzoojax.rl.algos.PPOConfig].
    - `n_costs`: cost-value heads.

    **Returns:**

    `(loss, stats)`, a scalar and a dict of scalar diagnostics.
    """
    if isinstance(policy, BetaActorCritic):
        alpha, beta, values = jax.vmap(policy)(mb["obs"])
        logp = beta_log_prob(mb["action"], alpha, beta)
        entropy = jnp.mean(beta_entropy(alpha, beta))
    else:
        mean, log_std, values = jax.vmap(policy)(mb["obs"])
        logp = gaussian_log_prob(mb["action"], mean, log_std)
        entropy = gaussian_entropy(policy.log_std)
    log_ratio = jnp.clip(logp - mb["log_prob"], -20.0, 20.0)
    ratio = jnp.exp(log_ratio)
    adv = mb["advantage"]
    surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1.0 - config.clip_eps, 1.0 + config.clip_eps) * adv)
    policy_loss = -jnp.mean(surrogate)
    value_loss = 0.5 * jnp.mean((values[:, 0] - mb["return"]) ** 2)
    if n_costs:
        value_loss = 0.5 * (value_loss + 0.5 * jnp.mean((values[:, 1:] - mb["cost_return"]) ** 2))
    total = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy
    stats = {
        "loss": total,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
        "clip_fraction": jnp.mean((jnp.abs(ratio - 1.0) > config.clip_eps).astype(jnp.float32)),
    }
    return total, stats


def dual_step(
    log_lambda: Float[Array, " k"], episode_cost_est: Float[Array, " k"], thresholds: Float[Array, " k"],
    lambda_lr: Float[Array, " k"], log_lambda_max: float,
) -> Float[Array, " k"]:
    """`log λ ← clip(log λ + lambda_lr · (Ĵ_C − d), ±log_lambda_max)` (costs and `d` scaled alike)."""
    return jnp.clip(log_lambda + lambda_lr * (episode_cost_est - thresholds), -log_lambda_max, log_lambda_max)


def cost_metrics(
    names: tuple[str, ...], costs: Float[Array, "*batch k"], cost_scale: Float[Array, " k"], max_steps: int,
    log_lambda: Float[Array, " k"],
) -> dict[str, Array]:
    """The constrained trainers' per-channel metrics from raw (unscaled) per-step `costs`."""
    axes = tuple(range(costs.ndim - 1))
    mean_raw = jnp.mean(costs, axis=axes)
    mean_scaled = mean_raw / cost_scale
    est = mean_raw * max_steps
    lam = jnp.exp(log_lambda)
    out: dict[str, Array] = {}
    for i, name in enumerate(names):
        out[f"mean_cost_{name}"] = mean_raw[i]
        out[f"step_mean_cost_scaled_{name}"] = mean_scaled[i]
        out[f"episode_cost_est_{name}"] = est[i]
        out[f"lambda_{name}"] = lam[i]
    out["mean_cost_total"] = jnp.sum(mean_raw)
    out["episode_cost_est_total"] = out["episode_cost_est"] = jnp.sum(est)
    out["lambda_total"] = out["lambda"] = jnp.sum(lam)
    return out


def action_box(space: Box) -> tuple[Float[Array, " a"], Float[Array, " a"]]:
    """Centre and half-width of a 1-D `Box`'s finite bounds (0 and 1 where a bound is
    infinite): the affine map from policy actions in [-1, 1] onto the env's actions."""
    low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape)
    high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape)
    finite = np.isfinite(low) & np.isfinite(high)
    return (
        jnp.asarray(np.where(finite, 0.5 * (low + high), 0.0), jnp.float32),
        jnp.asarray(np.where(finite, 0.5 * (high - low), 1.0), jnp.float32),
    )


def over_batch(per_channel: Float[Array, " k"], batch: Float[Array, "*b k"]) -> Float[Array, "*b k"]:
    """A per-channel (last-axis) vector broadcast to the shape of a batch of such rows."""
    return jnp.broadcast_to(per_channel, batch.shape)


def onto_box(centre: Float[Array, " a"], half: Float[Array, " a"], unit: Float[Array, "*b a"]) -> Float[Array, "*b a"]:
    """`centre + half · unit`: actions in [-1, 1] mapped onto a box, over any leading batch axes."""
    return over_batch(centre, unit) + over_batch(half, unit) * unit


def eval_channels(env: Any, cost_names: tuple[str, ...]) -> tuple[str, ...]:
    """Channels an evaluation reports one by one: the constrained ones, else every channel of the env."""
    return cost_names or tuple(getattr(env, "selected_constraint_names", None) or env.constraint_names())


def evaluation_interval(config: TrainConfig, steps_per_update: int) -> int:
    """Updates between evaluations (0: none)."""
    if config.eval_freq > 0 and config.eval_num_episodes > 0:
        return max(1, config.eval_freq // steps_per_update)
    return 0


def standard_promotion(optimizer: optax.GradientTransformation) -> optax.GradientTransformation:
    """`optimizer` with its `init` and `update` traced under JAX's standard dtype promotion.

    Optax mixes Python floats with its int32 step count (Adam's bias correction `b1 ** count`),
    which strict promotion refuses; the optimiser's arithmetic is Optax's own, so it keeps the
    promotion it was written for while the trainers' code around it stays strict."""

    def init(params: PyTree) -> optax.OptState:
        with jax.numpy_dtype_promotion("standard"):
            return optimizer.init(params)

    def update(updates: PyTree, state: optax.OptState, params: PyTree | None = None) -> tuple[PyTree, optax.OptState]:
        with jax.numpy_dtype_promotion("standard"):
            return optimizer.update(updates, state, params)

    return optax.GradientTransformation(init, update)


def mean_at_episode_ends(values: Float[Array, "*steps"], dones: Bool[Array, "*steps"]) -> Float[Array, ""]:
    """Mean of `values` over the steps that ended an episode; NaN when none did."""
    n_done = jnp.sum(dones)
    total = jnp.sum(values * dones.astype(values.dtype))
    return jnp.where(n_done > 0, total / jnp.maximum(n_done, 1).astype(total.dtype), jnp.nan)


def adam_clipped(config: TrainConfig) -> optax.GradientTransformation:
    """`zero_nans → clip_by_global_norm(max_grad_norm) → adam(learning_rate, eps=1e-5)`, the
    optimiser of the PPO family and APG."""
    return standard_promotion(optax.chain(
        optax.zero_nans(),
        optax.clip_by_global_norm(config.max_grad_norm),
        optax.adam(config.learning_rate, eps=1e-5),
    ))


def init_actor_critic_state(
    env: Any, policy: ActorCritic | BetaActorCritic, optimizer: optax.GradientTransformation, key: Key, k_reset: Key,
    num_envs: int, obs_dim: int, n_costs: int,
) -> "TrainState":
    """The `TrainState` before the first update of an actor-critic trainer (PPO family, APG)."""
    obs, env_state = jax.vmap(env.reset)(jr.split(k_reset, num_envs))
    return TrainState(
        policy=policy,
        opt_state=optimizer.init(eqx.filter(policy, eqx.is_array)),
        env_state=env_state,
        obs=obs,
        key=key,
        update=jnp.asarray(0, jnp.int32),
        obs_stats=init_stats((obs_dim,)),
        return_stats=init_stats(()),
        discounted_return=jnp.zeros((num_envs,), jnp.float32),
        log_lambda=jnp.zeros((n_costs,), jnp.float32),
    )


def evaluate_single_agent(
    loop: UpdateLoop, act: Callable[[Array], Array], channels: tuple[str, ...], key: Key
) -> dict[str, Array]:
    """Deterministic episodes of `act` from reset on a single-agent trainer's env:
    `eval_returns` and the cost metrics (`eval_cost_metrics`, per channel of `channels`)."""
    _, rewards, _, _, info, _ = loop.eval_episodes(loop.env.reset, transition_step(loop.env), act, key)
    out = {"eval_returns": jnp.mean(jnp.sum(rewards, axis=1))}
    out.update(eval_cost_metrics(info, loop.env.max_steps, channels))
    return out


def actor_critic_result(
    loop: UpdateLoop, state: "TrainState", metrics: dict[str, Any], checkpoints: Any = None
) -> TrainResult:
    """The `TrainResult` of an actor-critic trainer's final state (PPO family, APG)."""
    return TrainResult(
        params=state.policy,
        metrics=metrics,
        config=loop.config,
        env_name=loop.env.name,
        obs_stats=state.obs_stats if loop.config.normalize_observations else None,
        checkpoints=checkpoints,
    )


@final
class PPOTrainer(UpdateLoop):
    """PPO (`lagrangian=False`) or PPO-Lagrangian on a bound wrapper.

    One update collects `n_steps` × `num_envs` transitions through the rollout kernel,
    computes GAE with the done mask, runs `n_epochs` × `n_minibatches` clipped-surrogate
    steps and, for PPO-Lagrangian, a dual step on `log λ`. `trainer(key) -> TrainResult`
    runs a whole training in one compiled call; `init` / `run_chunk` are the pieces the
    host driver (progress, checkpoints) uses; both compile once per trainer.

    **Arguments:**

    - `env`: the bound wrapper (`LogWrapper`, `SafeRLWrapper`, `SauteWrapper` or a
      `RewardWrapper` over one).
    - `config`: the [`PPOConfig`][powerzoojax.rl.algos.PPOConfig] (`TrainConfig(algo=...)`
      with a PPO-family `algo`).
    - `lagrangian`: PPO-Lagrangian (needs a `SafeRLWrapper`).
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.
    """

    env: Any
    config: PPOConfig
    lagrangian: bool
    obs_dim: int
    action_dim: int
    _act_centre: Float[Array, " action_dim"]
    _act_half: Float[Array, " action_dim"]
    cost_names: tuple[str, ...]
    # Lagrangian only (empty otherwise): cost divisors, scaled per-episode budgets, dual step sizes.
    cost_scale: Float[Array, " k"]
    thresholds: Float[Array, " k"]
    lambda_lr: Float[Array, " k"]
    n_costs: int
    eval_channels: tuple[str, ...]
    n_updates: int
    batch_size: int
    eval_every: int
    optimizer: Any
    mesh: Mesh | None
    programs: Programs

    def __init__(self, env: Any, config: TrainConfig, *, lagrangian: bool = False, mesh: Mesh | None = None):
        config = family_config(config, PPOConfig, "PPOTrainer")
        space = env.action_space()
        if not isinstance(space, Box) or len(space.shape) != 1:
            raise NotImplementedError(
                f"PPO here handles 1-D continuous Box action spaces; {env.name} has {type(space).__name__}{space.shape}"
            )
        if (config.num_envs * config.n_steps) % config.n_minibatches:
            raise ValueError(
                f"num_envs * n_steps = {config.num_envs * config.n_steps} must be divisible by "
                f"n_minibatches = {config.n_minibatches}"
            )
        self.env = env
        self.config = config
        self.lagrangian = lagrangian
        self.obs_dim = int(env.observation_space().shape[0])
        self.action_dim = int(space.shape[0])
        # Policy actions live in [-1, 1]; map them onto finite Box bounds (identity for [-1, 1]).
        self._act_centre, self._act_half = action_box(space)
        if lagrangian:
            k = env.num_constraints
            self.cost_names = tuple(env.selected_constraint_names)
            thresholds = config.resolved_cost_thresholds(k) or tuple(env.cost_thresholds)
            self.cost_scale = jnp.asarray(config.resolved_cost_scale(k), jnp.float32)
            self.thresholds = jnp.asarray(thresholds, jnp.float32) / self.cost_scale
            self.lambda_lr = jnp.asarray(config.resolved_lambda_lr(k), jnp.float32)
        else:
            k = 0
            self.cost_names = ()
            self.cost_scale = self.thresholds = self.lambda_lr = jnp.zeros((0,), jnp.float32)
        self.n_costs = k
        self.eval_channels = eval_channels(env, self.cost_names)
        self.n_updates = config.n_updates
        self.batch_size = config.num_envs * config.n_steps
        self.eval_every = evaluation_interval(config, self.batch_size)
        self.optimizer = adam_clipped(config)
        self.mesh = check_mesh(mesh, config.num_envs)
        self.programs = compile_programs(self)

    # -- policy helpers --------------------------------------------------------------
    def to_env_action(self, action: Float[Array, "*batch action_dim"]) -> Float[Array, "*batch action_dim"]:
        """Map policy actions in [-1, 1] (clipped) onto the env's action box.

        **Arguments:**

        - `action`: `(..., action_dim)` policy actions.

        **Returns:**

        Actions of the same shape in the env's units.
        """
        return onto_box(self._act_centre, self._act_half, jnp.clip(action, -1.0, 1.0))

    def _norm_obs(self, stats: RunningStats, obs: Array) -> Array:
        return normalize(stats, obs) if self.config.normalize_observations else obs

    def deterministic_action(self, policy: ActorCritic | BetaActorCritic, obs_stats: RunningStats | None, obs: Array) -> Array:
        """The policy's mean action, mapped into the env's action space (unbatched `obs`).

        **Arguments:**

        - `policy`: the trained network.
        - `obs_stats`: the running observation statistics, or `None` without normalisation.
        - `obs`: `(obs_dim,)` raw observation.

        **Returns:**

        An `(action_dim,)` action.
        """
        if obs_stats is not None and self.config.normalize_observations:
            obs = normalize(obs_stats, obs)
        return self.to_env_action(policy.mean_action(obs))

    # -- init ------------------------------------------------------------------------
    def init(self, key: Key) -> TrainState:
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jr.key_data(key)
        key, k_policy, k_reset = jr.split(key, 3)
        cfg = self.config
        if cfg.continuous_action_dist == "beta":
            policy = BetaActorCritic(self.obs_dim, self.action_dim, cfg.hidden_dims, k_policy, n_costs=self.n_costs)
        else:
            policy = ActorCritic(
                self.obs_dim, self.action_dim, cfg.hidden_dims, k_policy, n_costs=self.n_costs,
                log_std_init=cfg.log_std_init, shared=cfg.shared_torso,
            )
        return init_actor_critic_state(
            self.env, policy, self.optimizer, key, k_reset, cfg.num_envs, self.obs_dim, self.n_costs
        )

    # -- rollout ---------------------------------------------------------------------
    def _sample_action(self, policy: ActorCritic | BetaActorCritic, obs_stats: RunningStats, k: Key, obs: Array) -> tuple[Array, tuple]:
        """A stochastic env action and what the update keeps of it: raw and normalised obs,
        the stored sample, its log-prob and the critic's values."""
        nobs = self._norm_obs(obs_stats, obs)
        if isinstance(policy, BetaActorCritic):
            alpha, beta, values = policy(nobs)
            x = beta_sample(k, alpha, beta)  # in (0, 1); stored as sampled
            return self.to_env_action(2.0 * x - 1.0), (obs, nobs, x, beta_log_prob(x, alpha, beta), values)
        mean, log_std, values = policy(nobs)
        raw = mean + jnp.exp(log_std) * jr.normal(k, mean.shape)
        return self.to_env_action(raw), (obs, nobs, raw, gaussian_log_prob(raw, mean, log_std), values)

    def _collect(self, state: TrainState, key: Key) -> tuple[dict[str, Array], Any, Array]:
        def envs(shared, batched):
            policy, obs_stats = shared

            def act(k, obs, _):
                return self._sample_action(policy, obs_stats, k, obs)

            def one_env(k, env_state, obs):
                return rollout(
                    transition_step(self.env), k, env_state, length=self.config.n_steps, policy=act, init_obs=obs
                )

            return jax.vmap(one_env)(*batched)

        batched = (jr.split(key, self.config.num_envs), state.env_state, state.obs)
        env_state, last_obs, outs = self.per_env_shard(envs, (state.policy, state.obs_stats), batched)
        _, rewards, costs, dones, info, aux = outs
        raw_obs, nobs, raw, logp, values = aux
        traj = {
            "raw_obs": raw_obs, "obs": nobs, "action": raw, "log_prob": logp, "values": values, "reward": rewards,
            "done": dones, "costs": costs, "cost_sum": info["cost_sum"],
            "returned_episode_returns": info["returned_episode_returns"],
        }
        if "returned_episode_costs" in info:
            traj["returned_episode_costs"] = info["returned_episode_costs"]
        # (N, T, ...) -> (T, N, ...): GAE runs backwards over the time axis.
        traj = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), traj)
        return traj, env_state, last_obs

    # -- loss ------------------------------------------------------------------------
    def _loss(self, policy: ActorCritic | BetaActorCritic, mb: dict[str, Array]) -> tuple[Array, dict[str, Array]]:
        return ppo_loss(policy, mb, self.config, self.n_costs)

    # -- evaluation ------------------------------------------------------------------
    def evaluate_policy(self, policy: ActorCritic | BetaActorCritic, obs_stats: RunningStats, key: Key) -> dict[str, Array]:
        """Deterministic (mean-action) episodes from reset, `eval_num_episodes` in parallel.

        **Arguments:**

        - `policy`: the network.
        - `obs_stats`: the running observation statistics.
        - `key`: PRNG key.

        **Returns:**

        `{"eval_returns", ...}` plus the cost metrics (`eval_cost_<name>` per constrained
        channel for PPO-Lagrangian).
        """
        act = lambda o: self.deterministic_action(policy, obs_stats, o)  # noqa: E731
        return evaluate_single_agent(self, act, self.eval_channels, key)

    # -- minibatches -----------------------------------------------------------------
    def _shuffle(self, key: Key, batch: dict[str, Array]) -> dict[str, Array]:
        cfg = self.config
        return shuffled_minibatches(key, batch, cfg.n_steps, cfg.num_envs, cfg.n_minibatches)

    # -- one update ------------------------------------------------------------------
    def update(self, state: TrainState) -> tuple[TrainState, dict[str, Array]]:
        cfg = self.config
        key, k_roll, k_epochs, k_eval = jr.split(state.key, 4)
        traj, env_state, last_obs = self._collect(state, k_roll)
        dones = traj["done"]

        # Reward scaling by the running std of the discounted return (statistics include this batch).
        return_stats, discounted = state.return_stats, state.discounted_return
        rewards = traj["reward"]
        if cfg.normalize_rewards:
            returns_seen = _discounted_returns(rewards, dones, state.discounted_return, cfg.gamma)
            return_stats = update_stats(return_stats, returns_seen.reshape(-1))
            discounted = jnp.where(dones[-1], 0.0, returns_seen[-1])
            rewards = jnp.clip(rewards / jnp.sqrt(return_stats.var + 1e-8), -_REWARD_CLIP, _REWARD_CLIP)
        obs_stats = state.obs_stats
        last_values = jax.vmap(state.policy.value)(self._norm_obs(obs_stats, last_obs))
        values = traj["values"]
        adv, ret = gae(rewards, dones, values[..., 0], last_values[:, 0], cfg.gamma, cfg.gae_lambda)
        flat = lambda x: x.reshape((self.batch_size,) + x.shape[2:])  # noqa: E731
        adv = flat(adv)
        batch = {
            "obs": flat(traj["obs"]), "action": flat(traj["action"]), "log_prob": flat(traj["log_prob"]),
            "return": flat(ret),
        }
        lam = jnp.exp(state.log_lambda)
        if self.n_costs:
            costs = traj["costs"] / over_batch(self.cost_scale, traj["costs"])
            cost_adv, cost_ret = jax.vmap(
                lambda c, v, lv: gae(c, dones, v, lv, cfg.cost_gamma, cfg.gae_lambda), in_axes=(2, 2, 1), out_axes=2
            )(costs, values[..., 1:], last_values[:, 1:])
            # Combined before normalising: λ keeps its meaning (scaled reward per scaled
            # cost), and a cost channel that is (nearly) always zero adds no noise.
            adv = adv - hp.matmul(flat(cost_adv), lam)
            batch["cost_return"] = flat(cost_ret)
        batch["advantage"] = (adv - adv.mean()) / (adv.std() + 1e-8)

        def minibatch_step(carry, mb):
            policy, opt_state = carry
            (_, stats), grads = eqx.filter_value_and_grad(self._loss, has_aux=True)(policy, mb)
            updates, opt_state = self.optimizer.update(grads, opt_state, eqx.filter(policy, eqx.is_array))
            # Before zero_nans: a NaN gradient shows here even though the update skips it.
            stats = {**stats, "grad_norm": optax.tree.norm(grads)}
            return (eqx.apply_updates(policy, updates), opt_state), stats

        def epoch(carry, k):
            return jax.lax.scan(minibatch_step, carry, self.split_samples(self._shuffle(k, batch), axis=1))

        (policy, opt_state), loss_stats = jax.lax.scan(
            epoch, (state.policy, state.opt_state), jr.split(k_epochs, cfg.n_epochs)
        )
        if cfg.normalize_observations:
            obs_stats = update_stats(obs_stats, flat(traj["raw_obs"]))

        metrics = {k: jnp.mean(v) for k, v in loss_stats.items()}
        n_done = jnp.sum(dones)
        raw_rewards = traj["reward"]
        metrics.update(
            update=(state.update + 1).astype(jnp.float32),
            env_steps=((state.update + 1) * self.batch_size).astype(jnp.float32),
            mean_reward=jnp.mean(raw_rewards),
            step_mean_reward=jnp.mean(raw_rewards),
            step_done_rate=jnp.mean(dones.astype(jnp.float32)),
            mean_cost=jnp.mean(traj["cost_sum"]),
            episodes_done=n_done.astype(jnp.float32),
            episode_return=mean_at_episode_ends(traj["returned_episode_returns"], dones),
        )
        if "returned_episode_costs" in traj:
            ep_costs = jnp.sum(traj["returned_episode_costs"], axis=-1)
            metrics["episode_cost"] = mean_at_episode_ends(ep_costs, dones)

        log_lambda = state.log_lambda
        if self.n_costs:
            episode_est = jnp.mean(traj["costs"] / over_batch(self.cost_scale, traj["costs"]), axis=(0, 1)) * self.env.max_steps
            log_lambda = dual_step(log_lambda, episode_est, self.thresholds, self.lambda_lr, cfg.log_lambda_max)
            metrics.update(cost_metrics(self.cost_names, traj["costs"], self.cost_scale, self.env.max_steps, log_lambda))

        new_state = TrainState(
            policy=policy,
            opt_state=opt_state,
            env_state=env_state,
            obs=last_obs,
            key=key,
            update=state.update + 1,
            obs_stats=obs_stats,
            return_stats=return_stats,
            discounted_return=discounted,
            log_lambda=log_lambda,
        )
        metrics.update(self.maybe_evaluate(
            state.update, self.evaluate_policy, policy, obs_stats, k_eval, initial=(state.policy, state.obs_stats, k_eval)
        ))
        return new_state, metrics

    # -- whole runs: run_chunk, train and __call__ come from UpdateLoop ----------------
    def result(self, state: TrainState, metrics: dict[str, Any], checkpoints: Any = None) -> TrainResult:
        """The [`TrainResult`][powerzoojax.rl.algos.TrainResult] of a finished state.

        **Arguments:**

        - `state`: the final [`TrainState`][powerzoojax.rl.algos.TrainState].
        - `metrics`: per-update metrics.
        - `checkpoints`: `((env_steps, params), ...)` kept during the run, or `None`.

        **Returns:**

        A [`TrainResult`][powerzoojax.rl.algos.TrainResult].
        """
        return actor_critic_result(self, state, metrics, checkpoints)

    def make_act(self, result: TrainResult) -> Callable[[Array], Array]:
        """Jitted deterministic `act(obs) -> action` of a result (unbatched obs; vmap for batches).

        **Arguments:**

        - `result`: a [`TrainResult`][powerzoojax.rl.algos.TrainResult] of this trainer.

        **Returns:**

        `act(obs) -> action`.
        """
        policy, stats = result.params, result.obs_stats
        return jax.jit(lambda obs: self.deterministic_action(policy, stats, obs))


def make_ppo_train(env: Any, config: TrainConfig, *, mesh: Mesh | None = None) -> PPOTrainer:
    """PPO on a bound wrapper (`LogWrapper`, `SafeRLWrapper` — costs only logged —,
    `SauteWrapper` or a `RewardWrapper`).

    **Arguments:**

    - `env`: the wrapper.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.

    **Returns:**

    A [`PPOTrainer`][powerzoojax.rl.algos.PPOTrainer]; `trainer(key) -> TrainResult`.
    """
    return PPOTrainer(env, config, lagrangian=False, mesh=mesh)


def make_cmdp_train(env: Any, config: TrainConfig, *, mesh: Mesh | None = None) -> PPOTrainer:
    """PPO-Lagrangian on a `SafeRLWrapper` (or a `RewardWrapper` over one).

    **Arguments:**

    - `env`: the wrapper.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.

    **Returns:**

    A [`PPOTrainer`][powerzoojax.rl.algos.PPOTrainer]; `trainer(key) -> TrainResult`.
    """
    if not isinstance(getattr(env, "bound_wrapper", None), SafeRLWrapper):
        raise TypeError(
            "make_cmdp_train needs a SafeRLWrapper (or a wrapper stack over one) for the selected costs, got "
            f"{type(env).__name__}; wrap the env with SafeRLWrapper(env, params, selected_names=..., cost_thresholds=...)"
        )
    return PPOTrainer(env, config, lagrangian=True, mesh=mesh)
