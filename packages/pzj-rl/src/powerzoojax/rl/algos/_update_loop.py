"""The outer training loop every trainer shares: periodic evaluation inside the compiled
update, chunked runs for checkpointing, and whole runs as one scan over updates.

A trainer provides `init(key)`, `update(state) -> (state, metrics)`, `n_updates`
and `eval_every`; its data always comes through the one rollout kernel.
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, PyTree

import jax.random as jr

from powerzoojax.core import Key, rollout
from powerzoojax.rl.algos._config import TrainConfig


def nan_like(tree: PyTree) -> PyTree:
    return jax.tree.map(lambda x: jnp.full(x.shape, jnp.nan, x.dtype), tree)


def _nan_of_shape(fn: Callable[..., Any], *args: Any) -> PyTree:
    """NaNs shaped like `fn(*args)`'s output, without running it."""
    return nan_like(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(fn, *args)))


# Cost channels the single-agent evaluation reports when the env's info has them.
EVAL_COST_KEYS = ("cost_voltage_violation", "reserve_shortfall", "cost_thermal_overload")


def eval_cost_metrics(info: dict[str, Array], max_steps: int, selected_names: tuple[str, ...] = ()) -> dict[str, Array]:
    """Cost metrics of deterministic evaluation episodes (`info` leaves `(episodes, steps, ...)`).

    `eval_total_cost` (= `eval_cost`): mean episode sum of `info["cost_sum"]`;
    `eval_cost_per_step` = that / `max_steps`; for each of `EVAL_COST_KEYS` in
    `info`: `eval_<key>_total` (mean episode sum) and `eval_<key>_rate` (fraction of
    steps with a positive value); with `selected_names` (the channels of
    `info["constraint_costs"]` in that order: a `SafeRLWrapper`'s selected ones, or
    every channel of the env): `eval_cost_<name>`, the mean episode sum of each.
    """
    total = jnp.mean(jnp.sum(info["cost_sum"], axis=1))
    out = {"eval_cost": total, "eval_total_cost": total, "eval_cost_per_step": total / max_steps}
    for key in EVAL_COST_KEYS:
        if key in info:
            x = info[key]
            out[f"eval_{key}_total"] = jnp.mean(jnp.sum(x.reshape(x.shape[:2] + (-1,)), axis=(1, 2)))
            out[f"eval_{key}_rate"] = jnp.mean((x > 0).astype(jnp.float32))
    if selected_names and info["constraint_costs"].shape[-1] == len(selected_names):
        per = jnp.mean(jnp.sum(info["constraint_costs"], axis=1), axis=0)
        out.update({f"eval_cost_{n}": per[i] for i, n in enumerate(selected_names)})
    return out


class UpdateLoop:
    env: Any
    config: TrainConfig
    n_updates: int
    eval_every: int

    def init(self, key: Key) -> Any:
        """The state of a run before its first update.

        **Arguments:**

        - `key`: PRNG key of the run.

        **Returns:**

        The trainer's state (policy, optimiser, env states, ...).
        """
        raise NotImplementedError

    def update(self, state: Any) -> tuple[Any, dict[str, Array]]:
        """One update: collect a batch, then the optimisation steps.

        **Arguments:**

        - `state`: the trainer's state.

        **Returns:**

        `(state, metrics)`, a dict of scalar metrics of the update.
        """
        raise NotImplementedError

    def maybe_evaluate(
        self, update_index: Array, evaluate: Callable[..., dict[str, Array]], *args: Any, initial: tuple | None = None
    ) -> dict[str, Array]:
        """`evaluate(*args)` every `eval_every` updates and after the last; NaN metrics
        otherwise, so the metrics pytree has one shape on every update.

        `initial`: the same arguments before this update (the policy the update started
        from). On the first update of a run the evaluation scores those instead, so the
        first row's evaluation is the untrained policy (the reference: "eval at start").
        """
        if not self.eval_every:
            return {}
        first = update_index == 0
        due = first | ((update_index + 1) % self.eval_every == 0) | (update_index + 1 == self.n_updates)
        if initial is not None:
            args = jax.tree.map(
                lambda before, after: jnp.where(first, before, after) if eqx.is_array(after) else after, initial, args
            )
        return jax.lax.cond(due, lambda: evaluate(*args), lambda: _nan_of_shape(evaluate, *args))

    def eval_episodes(
        self, reset: Callable[[Key], Any], step: Callable[..., Any], act: Callable[[Any], Any], key: Key
    ) -> tuple[Any, ...]:
        """`config.eval_num_episodes` deterministic episodes from reset, in parallel, on
        the one rollout kernel; returns the rollout's stacked outputs (episode axis first)."""
        n = self.config.eval_num_episodes
        k_reset, k_roll = jr.split(key)
        obs, env_state = jax.vmap(reset)(jr.split(k_reset, n))

        def policy(k, o, _):
            return act(o), ()

        def one_env(k, s, o):
            return rollout(step, k, s, length=self.env.max_steps, policy=policy, init_obs=o)[2]

        return jax.vmap(one_env)(jr.split(k_roll, n), env_state, obs)

    def run_chunk(self, state: Any, n_updates: int) -> tuple[Any, dict[str, Array]]:
        """`n_updates` updates in one scan; updates past the run's total are skipped (NaN metrics)."""

        def guarded(s, _):
            return jax.lax.cond(
                s.update < self.n_updates, self.update, lambda s_: (s_, _nan_of_shape(lambda x: self.update(x)[1], s_)), s
            )

        return jax.lax.scan(guarded, state, None, length=n_updates)

    def train(self, key: Key) -> tuple[Any, dict[str, Array]]:
        """A whole run from `key`: one scan over all updates (pure; jit and vmap it freely)."""
        state = self.init(key)
        return jax.lax.scan(lambda s, _: self.update(s), state, None, length=self.n_updates)
