"""SAC on bound single-agent wrappers (continuous `Box` actions), in Equinox + Optax.

Tanh-squashed Gaussian actor, twin Q critics with Polyak-averaged targets, learned
temperature `α` (target entropy `−ratio · action_dim`, `ratio =
sac_target_entropy_ratio or 1`). The replay buffer is a fixed-size ring of arrays in
the training state (in the graph: no host round trips).

One update = collect `n_steps` × `num_envs` transitions through the rollout kernel
(`jax.vmap` over envs of `powerzoojax.core.rollout` with the stochastic actor;
uniform random actions during the first `learning_starts` env steps), write them into
the ring, then `sac_num_epochs` gradient steps (default `n_steps`) on uniform
minibatches of `batch_size`. `done` (time-limit ends included: the envs' next
observation on a terminal step already belongs to the next episode) stops the
bootstrap. With `normalize_rewards` the sampled rewards are divided by the running
std of the rewards seen. A whole run is one `lax.scan` in one `jax.jit` (vmappable
over seeds); `init` / `run_chunk` / `result` match `PPOTrainer` so `train()`
and the host driver work unchanged. `result.params` is the actor (`SACActor`).
"""

import math
from collections.abc import Callable
from typing import Any, cast, final

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Float, Int, PyTree
from powerzoojax.core import Box, rollout
from powerzoojax.core._types import Key, where
from powerzoojax.rl.algos._config import SACConfig, TrainConfig, family_config
from powerzoojax.rl.algos._networks import MLP
from powerzoojax.rl.algos._ppo import (
    RunningStats,
    _discounted_returns,
    action_box,
    evaluate_single_agent,
    evaluation_interval,
    init_stats,
    mean_at_episode_ends,
    onto_box,
    standard_promotion,
    update_stats,
)
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.algos._update_loop import Programs, UpdateLoop, check_mesh, compile_programs
from powerzoojax.rl.wrappers._transition import transition_step

_LOG_STD_MIN, _LOG_STD_MAX = -5.0, 2.0


class SACActor(eqx.Module):
    """Tanh-squashed diagonal Gaussian policy; actions in [-1, 1].

    **Arguments:**

    - `obs_dim`, `action_dim`: observation and action widths.
    - `hidden_dims`: hidden widths.
    - `key`: PRNG key of the initialisation.
    """

    net: MLP

    def __init__(self, obs_dim: int, action_dim: int, hidden_dims: tuple[int, ...], key: Key):
        self.net = MLP(obs_dim, 2 * action_dim, hidden_dims, key, out_scale=0.01)

    def dist(self, obs: Float[Array, " obs_dim"]) -> tuple[Float[Array, " a"], Float[Array, " a"]]:
        """Mean and log standard deviation of the pre-squash Gaussian.

        **Arguments:**

        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        `(mean, log_std)`, each `(action_dim,)` (`log_std` clipped).
        """
        out = self.net(obs)
        mean, log_std = jnp.split(out, 2)
        return mean, jnp.clip(log_std, _LOG_STD_MIN, _LOG_STD_MAX)

    def sample(self, key: Key, obs: Float[Array, " obs_dim"]) -> tuple[Float[Array, " a"], Float[Array, ""]]:
        """A squashed sample and its log-density (change-of-variables corrected).

        **Arguments:**

        - `key`: PRNG key.
        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        `(action (action_dim,), log_prob)`.
        """
        mean, log_std = self.dist(obs)
        u = mean + jnp.exp(log_std) * jr.normal(key, mean.shape)
        a = jnp.tanh(u)
        z = (u - mean) * jnp.exp(-log_std)
        logp = jnp.sum(-0.5 * z * z - log_std - 0.5 * math.log(2.0 * math.pi))
        logp = logp - jnp.sum(2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u)))
        return a, logp

    def mean_action(self, obs: Float[Array, " obs_dim"]) -> Float[Array, " a"]:
        """`tanh` of the Gaussian's mean.

        **Arguments:**

        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        An `(action_dim,)` action in [-1, 1].
        """
        return jnp.tanh(self.dist(obs)[0])


class TwinQ(eqx.Module):
    q1: MLP
    q2: MLP

    def __init__(self, obs_dim: int, action_dim: int, hidden_dims: tuple[int, ...], key: Key):
        k1, k2 = jr.split(key)
        self.q1 = MLP(obs_dim + action_dim, 1, hidden_dims, k1)
        self.q2 = MLP(obs_dim + action_dim, 1, hidden_dims, k2)

    def __call__(self, obs: Float[Array, " obs_dim"], action: Float[Array, " a"]) -> tuple[Float[Array, ""], Float[Array, ""]]:
        x = jnp.concatenate([obs, action])
        return self.q1(x)[0], self.q2(x)[0]


class SACState(eqx.Module):
    """Everything a SAC run carries between updates.

    **Arguments:**

    - `policy`: the [`SACActor`][powerzoojax.rl.algos.SACActor].
    - `critic`, `target`: twin Q networks and their Polyak-averaged copy.
    - `log_alpha`: log of the entropy temperature.
    - `actor_opt`, `critic_opt`, `alpha_opt`: optimiser states.
    - `buffer`: the replay ring (`obs`, `action`, `reward`, `next_obs`, `done`).
    - `buffer_pos`, `buffer_fill`: write position and filled length of the ring.
    - `env_state`: the batched env states.
    - `obs`: `(n_envs, obs_dim)` current observations.
    - `key`: PRNG key.
    - `update`: index of the next update.
    - `reward_stats`: running reward statistics.
    - `episode_return`: `(n_envs,)` running returns.
    """
    policy: SACActor
    critic: TwinQ
    target: TwinQ
    log_alpha: Float[Array, ""]
    actor_opt: PyTree
    critic_opt: PyTree
    alpha_opt: PyTree
    buffer: dict[str, Array]
    buffer_pos: Int[Array, ""]
    buffer_fill: Int[Array, ""]
    env_state: PyTree
    obs: Float[Array, "n_envs obs_dim"]
    key: Array
    update: Int[Array, ""]
    reward_stats: RunningStats
    episode_return: Float[Array, " n_envs"]


@final
class SACTrainer(UpdateLoop):
    """SAC on a bound wrapper; `trainer(key) -> TrainResult`.

    **Arguments:**

    - `env`: the bound single-agent wrapper.
    - `config`: the [`SACConfig`][powerzoojax.rl.algos.SACConfig] (`TrainConfig(algo="sac", ...)`).
    - `buffer_size`: replay capacity [transitions].
    - `batch_size`: transitions per gradient step.
    - `tau`: Polyak rate of the target critics.
    - `learning_starts`: env steps before the first gradient step.
    - `mesh`: a 1-D mesh (possibly over the devices of several processes): data-parallel over its devices; `None` runs on one device.
    """

    env: Any
    config: SACConfig
    obs_dim: int
    action_dim: int
    _act_centre: Float[Array, " action_dim"]
    _act_half: Float[Array, " action_dim"]
    n_updates: int
    batch_size: int
    capacity: int
    sample_size: int
    tau: float
    learning_starts: int
    grad_steps: int
    target_entropy: float
    eval_every: int
    actor_optim: Any
    critic_optim: Any
    alpha_optim: Any
    mesh: Mesh | None
    programs: Programs

    def __init__(
        self,
        env: Any,
        config: TrainConfig,
        *,
        buffer_size: int = 100_000,
        batch_size: int = 256,
        tau: float = 0.005,
        learning_starts: int = 0,
        mesh: Mesh | None = None,
    ):
        space = env.action_space()
        if not isinstance(space, Box) or len(space.shape) != 1:
            raise NotImplementedError(f"SAC handles 1-D continuous Box action spaces; {env.name} has {type(space).__name__}{space.shape}")
        if getattr(env, "num_agents", None) is not None:
            raise TypeError("SAC is single-agent: use ippo / ippo_typed for the multi-agent adapters")
        config = family_config(config, SACConfig, "SACTrainer")
        self.env, self.config = env, config
        self.obs_dim = int(env.observation_space().shape[0])
        self.action_dim = int(space.shape[0])
        self._act_centre, self._act_half = action_box(space)
        self.n_updates = config.n_updates
        self.batch_size = config.num_envs * config.n_steps  # env steps per update
        self.capacity = int(min(buffer_size, max(self.batch_size, self.n_updates * self.batch_size)))
        self.sample_size = int(batch_size)
        self.tau = float(tau)
        self.learning_starts = int(learning_starts)
        self.grad_steps = int(config.sac_num_epochs or config.n_steps)
        self.target_entropy = -float(config.sac_target_entropy_ratio or 1.0) * self.action_dim
        self.eval_every = evaluation_interval(config, self.batch_size)

        def opt():
            return standard_promotion(
                optax.chain(optax.zero_nans(), optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))
            )

        self.actor_optim, self.critic_optim = opt(), opt()
        self.alpha_optim = standard_promotion(optax.adam(config.learning_rate))
        self.mesh = check_mesh(mesh, config.num_envs)
        self.programs = compile_programs(self)

    def to_env_action(self, a: Float[Array, "*b a"]) -> Float[Array, "*b a"]:
        """Map policy actions in [-1, 1] (clipped) onto the env's action box.

        **Arguments:**

        - `a`: `(..., action_dim)` policy actions.

        **Returns:**

        Actions of the same shape in the env's units.
        """
        return onto_box(self._act_centre, self._act_half, jnp.clip(a, -1.0, 1.0))

    def deterministic_action(self, actor: SACActor, obs: Array) -> Array:
        """The actor's mean action in the env's units.

        **Arguments:**

        - `actor`: the [`SACActor`][powerzoojax.rl.algos.SACActor].
        - `obs`: `(obs_dim,)` observation.

        **Returns:**

        An `(action_dim,)` action.
        """
        return self.to_env_action(actor.mean_action(obs))

    def init(self, key: Key) -> SACState:
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jr.key_data(key)
        key, k_actor, k_critic, k_reset = jr.split(key, 4)
        cfg = self.config
        actor = SACActor(self.obs_dim, self.action_dim, cfg.hidden_dims, k_actor)
        critic = TwinQ(self.obs_dim, self.action_dim, cfg.hidden_dims, k_critic)
        log_alpha = jnp.asarray(0.0, jnp.float32)
        obs, env_state = jax.vmap(self.env.reset)(jr.split(k_reset, cfg.num_envs))
        c = self.capacity
        buffer = {
            "obs": jnp.zeros((c, self.obs_dim), jnp.float32),
            "action": jnp.zeros((c, self.action_dim), jnp.float32),
            "reward": jnp.zeros((c,), jnp.float32),
            "next_obs": jnp.zeros((c, self.obs_dim), jnp.float32),
            "done": jnp.zeros((c,), jnp.float32),
        }
        return SACState(
            policy=actor, critic=critic, target=critic, log_alpha=log_alpha,
            actor_opt=self.actor_optim.init(eqx.filter(actor, eqx.is_array)),
            critic_opt=self.critic_optim.init(eqx.filter(critic, eqx.is_array)),
            alpha_opt=self.alpha_optim.init(log_alpha),
            buffer=buffer, buffer_pos=jnp.asarray(0, jnp.int32), buffer_fill=jnp.asarray(0, jnp.int32),
            env_state=env_state, obs=obs, key=key, update=jnp.asarray(0, jnp.int32),
            reward_stats=init_stats(()), episode_return=jnp.zeros((cfg.num_envs,), jnp.float32),
        )

    # -- rollout ---------------------------------------------------------------------
    def _collect(self, state: SACState, key: Key) -> tuple[dict[str, Array], Any, Array]:
        def envs(shared, batched):
            actor, random_phase = shared

            def act(k, obs, _):
                k_pol, k_rand = jr.split(k)
                a, _ = actor.sample(k_pol, obs)
                a = where(random_phase, jr.uniform(k_rand, a.shape, minval=-1.0, maxval=1.0), a)
                return self.to_env_action(a), (obs, a)

            def one_env(k, s, o):
                return rollout(transition_step(self.env), k, s, length=self.config.n_steps, policy=act, init_obs=o)

            return jax.vmap(one_env)(*batched)

        random_phase = state.update * self.batch_size < self.learning_starts
        batched = (jr.split(key, self.config.num_envs), state.env_state, state.obs)
        env_state, last_obs, outs = self.per_env_shard(envs, (state.policy, random_phase), batched)
        next_obs, rewards, _, dones, _, (obs, actions) = outs
        traj = {"obs": obs, "action": actions, "reward": rewards, "next_obs": next_obs, "done": dones.astype(jnp.float32)}
        return traj, env_state, last_obs

    # -- losses ----------------------------------------------------------------------
    def _critic_loss(self, critic: TwinQ, actor: SACActor, target: TwinQ, alpha: Array, mb: dict[str, Array], key: Key) -> Array:
        keys = jr.split(key, mb["reward"].shape[0])
        next_a, next_logp = jax.vmap(actor.sample)(keys, mb["next_obs"])
        tq1, tq2 = jax.vmap(target)(mb["next_obs"], next_a)
        next_v = jnp.minimum(tq1, tq2) - alpha * next_logp
        y = jax.lax.stop_gradient(mb["reward"] + self.config.gamma * (1.0 - mb["done"]) * next_v)
        q1, q2 = jax.vmap(critic)(mb["obs"], mb["action"])
        return 0.5 * (jnp.mean((q1 - y) ** 2) + jnp.mean((q2 - y) ** 2))

    def _actor_loss(self, actor: SACActor, critic: TwinQ, alpha: Array, obs: Array, key: Key) -> tuple[Array, Array]:
        a, logp = jax.vmap(actor.sample)(jr.split(key, obs.shape[0]), obs)
        q1, q2 = jax.vmap(critic)(obs, a)
        return jnp.mean(alpha * logp - jnp.minimum(q1, q2)), jnp.mean(logp)

    def _gradient_step(self, carry: tuple, key: Key) -> tuple[tuple, dict[str, Array]]:
        actor, critic, target, log_alpha, a_opt, c_opt, al_opt, buffer, fill, scale = carry
        k_idx, k_c, k_a = jr.split(key, 3)
        idx = jr.randint(k_idx, (self.sample_size,), 0, jnp.maximum(fill, 1))
        mb = self.split_samples(jax.tree.map(lambda x: x[idx], buffer))
        mb["reward"] = mb["reward"] * scale
        alpha = jnp.exp(log_alpha)
        c_loss, c_grads = eqx.filter_value_and_grad(self._critic_loss)(critic, actor, target, alpha, mb, k_c)
        updates, c_opt = self.critic_optim.update(c_grads, c_opt, eqx.filter(critic, eqx.is_array))
        critic = eqx.apply_updates(critic, updates)
        (a_loss, logp), a_grads = eqx.filter_value_and_grad(self._actor_loss, has_aux=True)(actor, critic, alpha, mb["obs"], k_a)
        updates, a_opt = self.actor_optim.update(a_grads, a_opt, eqx.filter(actor, eqx.is_array))
        actor = eqx.apply_updates(actor, updates)
        al_grad = -(jax.lax.stop_gradient(logp) + self.target_entropy)  # d/dlogα of −logα·(logp + H̄)
        updates, al_opt = self.alpha_optim.update(al_grad, al_opt, log_alpha)
        log_alpha = cast(Array, optax.apply_updates(log_alpha, updates))
        target = jax.tree.map(
            lambda t, c: (1.0 - self.tau) * t + self.tau * c if eqx.is_inexact_array(t) else t, target, critic
        )
        stats = {"critic_loss": c_loss, "actor_loss": a_loss, "alpha": jnp.exp(log_alpha), "entropy": -logp}
        return (actor, critic, target, log_alpha, a_opt, c_opt, al_opt, buffer, fill, scale), stats

    # -- evaluation ------------------------------------------------------------------
    def evaluate_policy(self, actor: SACActor, key: Key) -> dict[str, Array]:
        """Deterministic episodes from reset, `eval_num_episodes` in parallel.

        **Arguments:**

        - `actor`: the [`SACActor`][powerzoojax.rl.algos.SACActor].
        - `key`: PRNG key.

        **Returns:**

        `{"eval_returns", ...}` plus the cost metrics.
        """
        return evaluate_single_agent(self, lambda o: self.deterministic_action(actor, o), (), key)

    # -- one update ------------------------------------------------------------------
    def update(self, state: SACState) -> tuple[SACState, dict[str, Array]]:
        cfg = self.config
        key, k_roll, k_grad, k_eval = jr.split(state.key, 4)
        traj, env_state, last_obs = self._collect(state, k_roll)
        flat = jax.tree.map(lambda x: x.reshape((self.batch_size,) + x.shape[2:]), traj)
        slots = (state.buffer_pos + jnp.arange(self.batch_size)) % self.capacity
        buffer = jax.tree.map(lambda b, x: b.at[slots].set(x), state.buffer, flat)
        pos = (state.buffer_pos + self.batch_size) % self.capacity
        fill = jnp.minimum(state.buffer_fill + self.batch_size, self.capacity)
        reward_stats = update_stats(state.reward_stats, flat["reward"]) if cfg.normalize_rewards else state.reward_stats
        scale = 1.0 / jnp.sqrt(reward_stats.var + 1e-8) if cfg.normalize_rewards else jnp.asarray(1.0, jnp.float32)

        carry = (state.policy, state.critic, state.target, state.log_alpha, state.actor_opt, state.critic_opt,
                 state.alpha_opt, buffer, fill, scale)
        carry, stats = jax.lax.scan(self._gradient_step, carry, jr.split(k_grad, self.grad_steps))
        actor, critic, target, log_alpha, a_opt, c_opt, al_opt, _, _, _ = carry

        rewards, dones = jnp.swapaxes(traj["reward"], 0, 1), jnp.swapaxes(traj["done"], 0, 1) > 0
        running = _discounted_returns(rewards, dones, state.episode_return, 1.0)
        n_done = jnp.sum(dones)
        metrics = {k: jnp.mean(v) for k, v in stats.items()}
        metrics.update(
            update=(state.update + 1).astype(jnp.float32),
            env_steps=((state.update + 1) * self.batch_size).astype(jnp.float32),
            mean_reward=jnp.mean(rewards),
            episodes_done=n_done.astype(jnp.float32),
            episode_return=mean_at_episode_ends(running, dones),
        )
        new_state = SACState(
            policy=actor, critic=critic, target=target, log_alpha=log_alpha, actor_opt=a_opt, critic_opt=c_opt,
            alpha_opt=al_opt, buffer=buffer, buffer_pos=pos, buffer_fill=fill, env_state=env_state, obs=last_obs,
            key=key, update=state.update + 1, reward_stats=reward_stats,
            episode_return=where(dones[-1], 0.0, running[-1]),
        )
        metrics.update(self.maybe_evaluate(state.update, self.evaluate_policy, actor, k_eval, initial=(state.policy, k_eval)))
        return new_state, metrics

    # -- whole runs: run_chunk, train and __call__ come from UpdateLoop ----------------
    def result(self, state: SACState, metrics: dict[str, Any], checkpoints: Any = None) -> TrainResult:
        """The [`TrainResult`][powerzoojax.rl.algos.TrainResult] of a finished state.

        **Arguments:**

        - `state`: the final [`SACState`][powerzoojax.rl.algos.SACState].
        - `metrics`: per-update metrics.
        - `checkpoints`: checkpoints kept during the run, or `None`.

        **Returns:**

        A [`TrainResult`][powerzoojax.rl.algos.TrainResult].
        """
        return TrainResult(params=state.policy, metrics=metrics, config=self.config, env_name=self.env.name, checkpoints=checkpoints)

    def make_act(self, result: TrainResult) -> Callable[[Array], Array]:
        """Jitted deterministic `act(obs) -> action` of a result.

        **Arguments:**

        - `result`: a [`TrainResult`][powerzoojax.rl.algos.TrainResult] of this trainer.

        **Returns:**

        `act(obs) -> action`.
        """
        actor = result.params
        return jax.jit(lambda obs: self.deterministic_action(actor, obs))


def make_sac_train(env: Any, config: TrainConfig, **kwargs: Any) -> SACTrainer:
    """SAC on a bound single-agent wrapper.

    **Arguments:**

    - `env`: the wrapper.
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `**kwargs`: `buffer_size`, `batch_size`, `tau`, `learning_starts`, `mesh` of
      [`SACTrainer`][powerzoojax.rl.algos.SACTrainer].

    **Returns:**

    A [`SACTrainer`][powerzoojax.rl.algos.SACTrainer]; `trainer(key) -> TrainResult`.
    """
    return SACTrainer(env, config, **kwargs)
