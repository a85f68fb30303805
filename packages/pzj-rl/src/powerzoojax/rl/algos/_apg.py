"""Analytic policy gradient (APG): backpropagation through the differentiable env.

The physics of every PowerZooJax env is a JAX function with derivative rules for its
solvers (see the gradients guide), and an env's `step` stops the gradient only where an
episode ends. So the return of a short window of steps is a differentiable function of
the policy's parameters: APG follows that gradient directly instead of estimating it
from sampled returns as PPO does.

One update (all `num_envs` envs in parallel, `jax.vmap` over the rollout kernel):

1. From the carried env states, roll `K = n_steps` steps with the deterministic policy
   `a = squash(μ_θ(normalise(obs)))` through the wrapper's `step`, the env's
   differentiable step. The window starts from states whose gradient is stopped.
2. Loss `L(θ) = −(1 / (N K)) Σ_envs Σ_{t<K} γ^t r_t`; its gradient reaches every earlier
   action of the same episode inside the window through the observations the policy saw
   and through the env state (unit outputs, storage levels, ...).
3. `zero_nans → clip_by_global_norm(max_grad_norm) → adam(learning_rate)` (the PPO
   trainer's optimiser), then carry the window's last states on to the next update.

**Truncation.** The gradient is that of the window's return only: what an action does to
rewards after the window ends is ignored, and no gradient crosses an episode end (the
env's auto-reset state carries none). `K` trades bias (short windows see short-term
effects only) against the variance and cost of long backward passes, whose Jacobian
products can grow or vanish with `K`. Dispatch problems whose reward depends on the
current action and a slowly moving state are well served by `K` of a few to a few
dozen steps.

**Clipping.** Gradients through a solver can be large where the physics is stiff (a
line near its limit, a voltage near its bound) or where a solve did not converge (the
derivative rules then give zero, not NaN). Global-norm clipping bounds each step's
gradient before Adam, and `zero_nans` skips an update whose gradient is not finite.

The actions are squashed with `tanh` (then mapped affinely onto the action box) rather
than clipped: a clipped action has zero gradient outside its bounds, so a policy whose
mean left them would never come back. The network is the PPO trainer's
[`ActorCritic`][powerzoojax.rl.algos.ActorCritic]; APG trains its actor mean only (the
critic head and `log_std` get no gradient). Observation normalisation
(`normalize_observations`) uses the same running statistics as PPO, updated after each
update. The [`APGConfig`][powerzoojax.rl.algos.APGConfig] has no reward normalisation,
PPO loss knobs, epochs or minibatches: one gradient step per window.
"""

from collections.abc import Callable
from typing import Any, final

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Float

from powerzoojax.core import Box, rollout
from powerzoojax.core._types import Key
from powerzoojax.rl.algos._config import APGConfig, TrainConfig, family_config
from powerzoojax.rl.algos._networks import ActorCritic, BetaActorCritic
from powerzoojax.rl.algos._ppo import (
    TrainState,
    action_box,
    actor_critic_result,
    adam_clipped,
    eval_channels,
    evaluate_single_agent,
    evaluation_interval,
    init_actor_critic_state,
    mean_at_episode_ends,
    onto_box,
)
from powerzoojax.rl.algos._result import TrainResult
from powerzoojax.rl.algos._update_loop import Programs, UpdateLoop, check_mesh, compile_programs
from powerzoojax.rl.wrappers._running_stats import RunningStats, normalize, update_stats
from powerzoojax.rl.wrappers._transition import transition_step
from powerzoojax.core import _precision as hp


@final
class APGTrainer(UpdateLoop):
    """Analytic policy gradient on a bound wrapper over a differentiable env.

    Each update backpropagates the discounted return of a `K = config.n_steps` window,
    rolled by `config.num_envs` envs through the env's `step` (gradients flow within an
    episode), and takes one clipped Adam step. Truncation, clipping and the squashed
    deterministic policy are described in the module docstring. The state
    ([`TrainState`][powerzoojax.rl.algos.TrainState]), evaluation, results and checkpoints
    are those of the PPO trainer (the same plain functions build them), so the runner,
    `load_policy` and `make_act` work unchanged.

    **Arguments:**

    - `env`: the bound wrapper (`LogWrapper`, `SafeRLWrapper` with its costs only logged,
      or a `RewardWrapper` over one) whose `step` is differentiable.
    - `config`: the [`APGConfig`][powerzoojax.rl.algos.APGConfig] (`TrainConfig(algo="apg", ...)`);
      `n_steps` is the truncation length `K`, `max_grad_norm` the clipping norm.
    - `mesh`: a 1-D mesh: data-parallel over its devices; `None` runs on one device.
    """

    env: Any
    config: APGConfig
    obs_dim: int
    action_dim: int
    _act_centre: Float[Array, " action_dim"]
    _act_half: Float[Array, " action_dim"]
    eval_channels: tuple[str, ...]
    n_updates: int
    batch_size: int
    eval_every: int
    optimizer: Any
    mesh: Mesh | None
    programs: Programs

    def __init__(self, env: Any, config: TrainConfig, *, mesh: Mesh | None = None):
        config = family_config(config, APGConfig, "APGTrainer")
        space = env.action_space()
        if not isinstance(space, Box) or len(space.shape) != 1:
            raise NotImplementedError(
                f"APG here handles 1-D continuous Box action spaces; {env.name} has {type(space).__name__}{space.shape}"
            )
        self.env = env
        self.config = config
        self.obs_dim = int(env.observation_space().shape[0])
        self.action_dim = int(space.shape[0])
        self._act_centre, self._act_half = action_box(space)
        self.eval_channels = eval_channels(env, ())
        self.n_updates = config.n_updates
        # One gradient step per window: the batch is not cut into minibatches.
        self.batch_size = config.num_envs * config.n_steps
        self.eval_every = evaluation_interval(config, self.batch_size)
        self.optimizer = adam_clipped(config)
        self.mesh = check_mesh(mesh, config.num_envs)
        self.programs = compile_programs(self)

    def to_env_action(self, action: Float[Array, "*batch action_dim"]) -> Float[Array, "*batch action_dim"]:
        """Map unbounded policy outputs onto the env's action box through `tanh`.

        **Arguments:**

        - `action`: `(..., action_dim)` policy outputs (the actor mean).

        **Returns:**

        Actions of the same shape in the env's units, strictly inside finite bounds.
        """
        return onto_box(self._act_centre, self._act_half, jnp.tanh(action))

    def _norm_obs(self, stats: RunningStats, obs: Array) -> Array:
        return normalize(stats, obs) if self.config.normalize_observations else obs

    def deterministic_action(self, policy: ActorCritic | BetaActorCritic, obs_stats: RunningStats | None, obs: Array) -> Array:
        """The policy's squashed mean action in the env's units (unbatched `obs`).

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

    def init(self, key: Key) -> TrainState:
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jr.key_data(key)
        key, k_policy, k_reset = jr.split(key, 3)
        cfg = self.config
        policy = ActorCritic(
            self.obs_dim, self.action_dim, cfg.hidden_dims, k_policy, n_costs=0,
            log_std_init=cfg.log_std_init, shared=cfg.shared_torso,
        )
        return init_actor_critic_state(self.env, policy, self.optimizer, key, k_reset, cfg.num_envs, self.obs_dim, 0)

    def evaluate_policy(self, policy: ActorCritic | BetaActorCritic, obs_stats: RunningStats, key: Key) -> dict[str, Array]:
        """Deterministic (squashed mean-action) episodes from reset, `eval_num_episodes` in parallel.

        **Arguments:**

        - `policy`: the network.
        - `obs_stats`: the running observation statistics.
        - `key`: PRNG key.

        **Returns:**

        `{"eval_returns", ...}` plus the cost metrics.
        """
        act = lambda o: self.deterministic_action(policy, obs_stats, o)  # noqa: E731
        return evaluate_single_agent(self, act, self.eval_channels, key)

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

    def window_loss(
        self, policy: ActorCritic | BetaActorCritic, state: TrainState, key: Array
    ) -> tuple[Array, tuple]:
        """Minus the mean discounted return per step of one `K`-step window of every env.

        **Arguments:**

        - `policy`: the network (differentiated).
        - `state`: the [`TrainState`][powerzoojax.rl.algos.TrainState] the window starts from.
        - `key`: PRNG key of the window.

        **Returns:**

        `(loss, (env_state, last_obs, outputs))`: the scalar loss, the states and
        observations after the window and the rollout kernel's stacked outputs
        (`(num_envs, K, ...)`), with the raw observations the policy saw last.
        """
        cfg = self.config
        obs_stats = jax.lax.stop_gradient(state.obs_stats)

        def envs(shared, batched):
            net = shared

            def act(k, obs, _):
                return self.to_env_action(net.mean_action(self._norm_obs(obs_stats, obs))), obs

            def one_env(k, env_state, obs):
                # Truncation: the window starts from states that carry no gradient.
                env_state, obs = jax.lax.stop_gradient((env_state, obs))
                return rollout(
                    transition_step(self.env, differentiable=True), k, env_state, length=cfg.n_steps, policy=act,
                    init_obs=obs,
                )

            return jax.vmap(one_env)(*batched)

        batched = (jr.split(key, cfg.num_envs), state.env_state, state.obs)
        env_state, last_obs, outs = self.per_env_shard(envs, policy, batched)
        rewards = outs[1]
        discounts = cfg.gamma ** jnp.arange(cfg.n_steps, dtype=jnp.float32)
        loss = -jnp.mean(hp.matmul(rewards, discounts)) / cfg.n_steps
        return loss, (env_state, last_obs, outs)

    def update(self, state: TrainState) -> tuple[TrainState, dict[str, Array]]:
        cfg = self.config
        key, k_roll, k_eval = jr.split(state.key, 3)
        (loss, (env_state, last_obs, outs)), grads = eqx.filter_value_and_grad(self.window_loss, has_aux=True)(
            state.policy, state, k_roll
        )
        updates, opt_state = self.optimizer.update(grads, state.opt_state, eqx.filter(state.policy, eqx.is_array))
        policy = eqx.apply_updates(state.policy, updates)
        env_state, last_obs, outs = jax.lax.stop_gradient((env_state, last_obs, outs))
        _, rewards, _, dones, info, raw_obs = outs
        obs_stats = state.obs_stats
        if cfg.normalize_observations:
            obs_stats = update_stats(obs_stats, raw_obs.reshape((-1, self.obs_dim)))
        n_done = jnp.sum(dones)
        metrics = {
            "loss": loss,
            # Before zero_nans: a NaN gradient shows here even though the update skips it.
            "grad_norm": optax.tree.norm(grads),
            "update": (state.update + 1).astype(jnp.float32),
            "env_steps": ((state.update + 1) * self.batch_size).astype(jnp.float32),
            "mean_reward": jnp.mean(rewards),
            "step_mean_reward": jnp.mean(rewards),
            "step_done_rate": jnp.mean(dones.astype(jnp.float32)),
            "mean_cost": jnp.mean(info["cost_sum"]),
            "episodes_done": n_done.astype(jnp.float32),
            "episode_return": mean_at_episode_ends(info["returned_episode_returns"], dones),
        }
        new_state = TrainState(
            policy=policy,
            opt_state=opt_state,
            env_state=env_state,
            obs=last_obs,
            key=key,
            update=state.update + 1,
            obs_stats=obs_stats,
            return_stats=state.return_stats,
            discounted_return=state.discounted_return,
            log_lambda=state.log_lambda,
        )
        metrics.update(self.maybe_evaluate(
            state.update, self.evaluate_policy, policy, obs_stats, k_eval, initial=(state.policy, state.obs_stats, k_eval)
        ))
        return new_state, metrics


def make_apg_train(env: Any, config: TrainConfig, *, mesh: Mesh | None = None) -> APGTrainer:
    """Analytic policy gradient on a bound wrapper: truncated backpropagation through the env.

    Each update rolls `config.num_envs` envs `config.n_steps` (the truncation length `K`)
    steps through the env's differentiable `step`, backpropagates the window's discounted
    return into the policy and takes one Adam step after global-norm clipping at
    `config.max_grad_norm` (see [`APGTrainer`][powerzoojax.rl.algos.APGTrainer]).

    **Arguments:**

    - `env`: the bound wrapper (`LogWrapper`, `SafeRLWrapper` or a `RewardWrapper` over one).
    - `config`: the [`TrainConfig`][powerzoojax.rl.algos.TrainConfig].
    - `mesh`: a 1-D mesh: data-parallel over its devices; `None` runs on one device.

    **Returns:**

    An [`APGTrainer`][powerzoojax.rl.algos.APGTrainer]; `trainer(key) -> TrainResult`.
    """
    return APGTrainer(env, config, mesh=mesh)
