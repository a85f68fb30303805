"""The task contract and the episode runner every task's rollouts share.

A task freezes an env, its data splits, baselines and metrics so results are comparable
across algorithms. Tasks live next to their envs (`powerzoojax.grid.tasks`,
`powerzoojax.market.tasks`); `powerzoojax.tasks` maps names to them lazily.
"""

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax.random as jr
from jaxtyping import Array, PyTree

from powerzoojax.core._environment import EnvParams, Environment
from powerzoojax.core._rollout import rollout
from powerzoojax.core._types import Key

# policy(obs, state, key) -> action: baselines read the env state (time step, voltages)
# as well as the observation, so the state is passed alongside it.
TaskPolicy = Callable[[Any, Any, Key], Any]


class ConstraintSpec(NamedTuple):
    """Which env cost channels a safe-RL algorithm constrains, their thresholds, and the
    weights a penalty method falls back to."""

    selected_names: tuple[str, ...]
    thresholds: tuple[float, ...]
    fallback_weights: tuple[float, ...]


class EpisodeTrace(NamedTuple):
    """One episode, stacked over time (leading axis T; a further leading axis under vmap)."""

    obs: PyTree  # observation the action was chosen from
    action: PyTree
    reward: Array
    costs: Array
    done: Array
    info: Mapping[str, Array]


def episode_rollout(
    env: Environment, params: EnvParams, key: Key, policy: TaskPolicy, *, n_steps: int | None = None
) -> EpisodeTrace:
    """Reset, then run `policy` for `n_steps` (default `params.max_steps`) on the
    one rollout kernel. Pure: jit it, vmap it over keys or params."""
    length = int(params.max_steps if n_steps is None else n_steps)
    reset_key, run_key = jr.split(key)
    obs0, state0 = env.reset(reset_key, params)

    def step(k: Key, carry, _x):
        state, obs = carry
        policy_key, env_key = jr.split(k)
        action = policy(obs, state, policy_key)
        next_obs, next_state, reward, costs, done, info = env.step(env_key, state, action, params)
        return obs, (next_state, next_obs), action, reward, costs, done, info

    _, _, (obs, action, reward, costs, done, info) = rollout(step, run_key, (state0, obs0), length=length)
    return EpisodeTrace(obs, action, reward, costs, done, info)


@runtime_checkable
class TaskSpec(Protocol):
    """`episode_params` with `strategy="uniform"` spreads evaluation windows
    evenly over a split; `"seeded"` draws one training window from `seed`."""

    task_name: str
    default_splits: tuple[str, ...]

    def make_env(self, split: str = "train") -> Any: ...

    def episode_params(
        self,
        split: str,
        episode_idx: int,
        n_episodes: int,
        max_steps: int,
        *,
        strategy: str = "uniform",
        seed: int = 0,
    ) -> Any: ...

    def rollout(self, env: Any, params: Any, key: Key, policy_fn: Callable[..., Any]) -> Any: ...

    def baseline_rollout(self, env: Any, params: Any, key: Key, name: str) -> Any: ...

    def compute_metrics(self, agent_rollout: Any, baseline_rollout: Any) -> dict[str, float]: ...

    def baseline_names(self) -> tuple[str, ...]: ...

    def constraint_spec(self) -> ConstraintSpec: ...
