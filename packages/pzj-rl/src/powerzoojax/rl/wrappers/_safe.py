"""`SafeRLWrapper`: the constrained-MDP view of an env, consumed by `make_cmdp_train`.

Step returns the 6-tuple `(obs, state, reward, selected_costs, done, info)`, where
`selected_costs` (float32, shape `(k,)`) are the chosen cost channels in the order
of `selected_constraint_names`.

Thresholds are never guessed: `cost_thresholds=None` means a budget of **zero** per
selected channel (every unit of cost counts against the policy). Pass
`cost_thresholds` (a number, broadcast, or one number per selected channel) to allow
a per-episode budget. Thresholds are per-episode sums of the env's cost channel. The
reference's positional `cost_threshold` (third argument) is accepted as the same thing
(it defaults to 25.0 there; here it has no default budget); the `cost_threshold`
attribute reads back the common budget (the tuple when the channels differ).
"""

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float
from powerzoojax.core import Environment, EnvParams
from powerzoojax.core._types import Key
from powerzoojax.rl.wrappers._base import BoundWrapper, ThresholdsMixin, accumulate, legacy_threshold, resolve_constraints
from powerzoojax.rl.wrappers._log import (
    LogEnvState,
    episode_info,
    record_episode,
    zero_episode_fields,
)
from powerzoojax.rl.wrappers._transition import Transition


class SafeRLState(LogEnvState):
    """`LogEnvState` plus running and latched per-episode sums of the selected costs.

    **Arguments:**

    - `env_state`, `episode_returns`, `episode_lengths`, `returned_episode_returns`,
      `returned_episode_lengths`: as [`LogEnvState`][powerzoojax.rl.wrappers.LogEnvState].
    - `episode_costs`: `(k,)` running sums of the selected costs.
    - `returned_episode_costs`: `(k,)` those of the last finished episode.
    """

    episode_costs: Float[Array, " k"]
    returned_episode_costs: Float[Array, " k"]


class SafeRLWrapper(ThresholdsMixin, BoundWrapper):
    """Constrained single-agent wrapper: the constrained-MDP view of an env, consumed by
    `make_cmdp_train`.

    Step returns the 6-tuple `(obs, state, reward, selected_costs, done, info)`, where
    `selected_costs` (float32, `(k,)`) are the chosen cost channels in the order of
    `selected_constraint_names`. Thresholds are per-episode sums of the env's cost
    channel and are never guessed: no threshold means a budget of zero per selected
    channel.

    **Arguments:**

    - `env`: the [`Environment`][powerzoojax.core.Environment].
    - `params`: its params; `None` takes `env.default_params()`.
    - `cost_threshold`: the reference's positional name of `cost_thresholds`.
    - `selected_names`: the constrained channels; `None` selects all.
    - `cost_thresholds`: a number (broadcast) or one number per selected channel; `None`
      means zero.

    Raises `ValueError` for an unknown or duplicated constraint name (listing the env's
    names) and for a threshold vector whose length does not match the selection.
    """

    selected_constraint_names: tuple[str, ...] = eqx.field(static=True)
    selected_indices: tuple[int, ...] = eqx.field(static=True)
    cost_thresholds: tuple[float, ...] = eqx.field(static=True)

    @property
    def emits_costs(self) -> bool:
        """True: the public step is the 6-tuple with the selected costs."""
        return True

    def __init__(
        self,
        env: Environment,
        params: EnvParams | None = None,
        cost_threshold: Sequence[float | int] | float | int | None = None,
        *,
        selected_names: Sequence[str] | str | None = None,
        cost_thresholds: Sequence[float | int] | float | int | None = None,
    ):
        self.env = env
        self.params = env.default_params() if params is None else params
        cost_thresholds = legacy_threshold(cost_threshold, cost_thresholds, "SafeRLWrapper")
        names, indices, thresholds = resolve_constraints(env, self.params, selected_names, cost_thresholds, "SafeRLWrapper")
        self.selected_constraint_names = names
        self.selected_indices = indices
        self.cost_thresholds = thresholds

    def reset(self, key: Key) -> tuple[Float[Array, "..."], SafeRLState]:
        """Start an episode.

        **Arguments:**

        - `key`: PRNG key.

        **Returns:**

        `(obs, state)` with a [`SafeRLState`][powerzoojax.rl.wrappers.SafeRLState].
        """
        obs, env_state = self.env.reset(key, self.params)
        zeros = jnp.zeros((self.num_constraints,), jnp.float32)
        return obs, SafeRLState(
            env_state=env_state, **zero_episode_fields(), episode_costs=zeros, returned_episode_costs=zeros
        )

    def select(self, costs: Float[Array, " n_costs"]) -> Float[Array, " k"]:
        """The selected channels of a full cost vector.

        **Arguments:**

        - `costs`: `(n_costs,)` the env's cost vector.

        **Returns:**

        A `(k,)` array.
        """
        return costs[jnp.asarray(self.selected_indices, jnp.int32)] if self.selected_indices else costs[:0]

    def _record(self, state: SafeRLState, out: tuple) -> Transition:
        obs, env_state, reward, costs, done, info = out
        selected = self.select(costs)
        fields = record_episode(state, reward, done)
        episode_costs, returned_costs = accumulate(state.episode_costs, state.returned_episode_costs, selected, done)
        new_state = SafeRLState(
            env_state=env_state, **fields, episode_costs=episode_costs, returned_episode_costs=returned_costs
        )
        cost_sum = jnp.sum(selected)
        info = {
            **info,
            "constraint_costs_all": costs,
            "constraint_costs": selected,
            "cost_sum": cost_sum,
            "cost": cost_sum,
            **episode_info(fields, done),
            "returned_episode_costs": returned_costs,
            "returned_episode_cost_sum": jnp.sum(returned_costs),
        }
        return Transition(obs, new_state, reward, selected, done, info)

    def transition(self, key: Key, state: SafeRLState, action: ArrayLike) -> Transition:
        """One transition with auto-reset, recording episode returns and costs.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`SafeRLState`][powerzoojax.rl.wrappers.SafeRLState].
        - `action`: the env's action.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition] whose `costs` are the selected
        channels `(k,)`. The public `step` is its `(obs, state, reward, selected_costs,
        done, info)`.
        """
        return self._record(state, self.env.step(key, state.env_state, action, self.params))

    def transition_auto_reset(self, key: Key, state: SafeRLState, action: ArrayLike) -> Transition:
        """`transition` with `stop_gradient` on obs, state and costs.

        **Arguments:**

        - `key`, `state`, `action`: as for `transition`.

        **Returns:**

        A [`Transition`][powerzoojax.rl.wrappers.Transition].
        """
        obs, env_state, reward, costs, done, info = self.env.step_auto_reset(
            key, state.env_state, action, self.params
        )
        t = self._record(state, (obs, env_state, reward, jax.lax.stop_gradient(costs), done, info))
        return Transition(t.obs, jax.lax.stop_gradient(t.state), t.reward, t.costs, t.done, t.info)


def describe_thresholds(wrapper: Any) -> dict[str, float]:
    """`{name: threshold}` of a Safe/Sauté wrapper, for logs and summaries."""
    return dict(zip(wrapper.selected_constraint_names, wrapper.cost_thresholds))
