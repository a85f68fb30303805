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
    weights a penalty method falls back to.

    **Arguments:**

    - `selected_names`: names of the constrained cost channels (a subset of the env's
      `constraint_names`).
    - `thresholds`: one budget per selected channel, in that channel's unit per step.
    - `fallback_weights`: one penalty weight per selected channel, used by methods
      without a learned multiplier.
    """

    selected_names: tuple[str, ...]
    thresholds: tuple[float, ...]
    fallback_weights: tuple[float, ...]


class EpisodeTrace(NamedTuple):
    """One episode, stacked over time (leading axis T; a further leading axis under vmap).

    **Arguments:**

    - `obs`: `(T, ...)` observation each action was chosen from.
    - `action`: `(T, ...)` actions.
    - `reward`: `(T,)` rewards.
    - `costs`: `(T, n_costs)` cost vectors.
    - `done`: `(T,)` episode-end flags.
    - `info`: dict of `(T, ...)` info arrays.
    """

    obs: PyTree  # observation the action was chosen from
    action: PyTree
    reward: Array
    costs: Array
    done: Array
    info: Mapping[str, Array]


def episode_rollout(
    env: Environment, params: EnvParams, key: Key, policy: TaskPolicy, *, n_steps: int | None = None
) -> EpisodeTrace:
    """Reset, then run `policy` for `n_steps` on the one rollout kernel.

    Pure: jit it, vmap it over keys or params.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key (split into the reset key and one key per step).
    - `policy`: `policy(obs, state, key) -> action`.
    - `n_steps`: episode length [steps]; `None` takes `params.max_steps`.

    **Returns:**

    An [`EpisodeTrace`][powerzoojax.core.EpisodeTrace] of `n_steps` steps.
    """
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
    """The interface of a frozen benchmark task (see [`get_task`][powerzoojax.tasks.get_task]).

    `episode_params` with `strategy="uniform"` spreads evaluation windows evenly over a
    split; `"seeded"` draws one training window from `seed`.

    **Arguments:**

    - `task_name`: registry name of the task (`"tso"`, `"dso"`, ...).
    - `default_splits`: the data splits the task evaluates on.
    """

    task_name: str
    default_splits: tuple[str, ...]

    def make_env(self, split: str = "train") -> Any:
        """The task's env.

        **Arguments:**

        - `split`: data split (`"train"`, `"val"`, `"test"`, ...).

        **Returns:**

        An [`Environment`][powerzoojax.core.Environment].
        """

    def episode_params(
        self,
        split: str,
        episode_idx: int,
        n_episodes: int,
        max_steps: int,
        *,
        strategy: str = "uniform",
        seed: int = 0,
    ) -> Any:
        """Params of one episode of a split.

        **Arguments:**

        - `split`: data split.
        - `episode_idx`: index of the episode, `0 <= episode_idx < n_episodes`.
        - `n_episodes`: number of episodes the split is spread over.
        - `max_steps`: episode length [steps].
        - `strategy`: `"uniform"` (evenly spread windows) or `"seeded"` (one drawn window).
        - `seed`: seed of the `"seeded"` draw.

        **Returns:**

        The env's params for that episode window.
        """

    def rollout(self, env: Any, params: Any, key: Key, policy_fn: Callable[..., Any]) -> Any:
        """One episode of `policy_fn` on the task.

        **Arguments:**

        - `env`, `params`: the task's env and one episode's params.
        - `key`: PRNG key.
        - `policy_fn`: `policy(obs, state, key) -> action`.

        **Returns:**

        The episode, typically an [`EpisodeTrace`][powerzoojax.core.EpisodeTrace].
        """

    def baseline_rollout(self, env: Any, params: Any, key: Key, name: str) -> Any:
        """One episode of the named baseline policy.

        **Arguments:**

        - `env`, `params`: the task's env and one episode's params.
        - `key`: PRNG key.
        - `name`: one of `baseline_names()`.

        **Returns:**

        The episode, as `rollout` returns it.
        """

    def compute_metrics(self, agent_rollout: Any, baseline_rollout: Any) -> dict[str, float]:
        """The task's metrics of an agent episode, relative to a baseline episode.

        **Arguments:**

        - `agent_rollout`: episode of the agent.
        - `baseline_rollout`: episode of a baseline, or `None` where the task allows it.

        **Returns:**

        A dict of metric name to float.
        """
        ...

    def baseline_names(self) -> tuple[str, ...]:
        """Names of the task's baseline policies.

        **Returns:**

        A tuple of names accepted by `baseline_rollout`.
        """
        ...

    def constraint_spec(self) -> ConstraintSpec:
        """The cost channels the task constrains.

        **Returns:**

        A [`ConstraintSpec`][powerzoojax.core.ConstraintSpec].
        """
        ...
