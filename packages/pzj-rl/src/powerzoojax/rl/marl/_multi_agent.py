"""The multi-agent contract (JaxMARL style, params bound) shared by the MARL adapters.

Dict API (agent order = `env.agents`, fixed at construction):

    obs, state = env.reset(key)                      # obs: {agent: (obs_dim,)}
    obs, state, rewards, dones, info = env.step(key, state, actions)
    # actions: {agent: (action_dim,)} or the stacked array (num_agents, action_dim)
    # rewards: {agent: ()}, dones: {agent: (), "__all__": ()}

The agent order is `env.agents`, never the iteration order of a dict: dicts that
come back from `jax.jit` / `vmap` / `scan` have their keys sorted (a JAX pytree
rule; `der_10` sorts before `der_2`). Use `env.stack` / `env.unstack` to go
between dicts and agent-major arrays.

`params` may be passed as the last argument of `reset` / `step` (the seed
documents `reset(key, params)`); by default the bound `env.params` is used.

Stacked API (what trainers use: agents on a leading axis, no dicts in the hot path):

    obs, state = env.reset_arrays(key)               # obs (A, obs_dim)
    obs, state, rewards, done, info = env.step_arrays(key, state, actions)  # rewards (A,), done ()

`step_arrays` has the rollout kernel's `step_fn` form, so
`powerzoojax.core.rollout(env.step_arrays, key, state, actions)` runs an episode.
Observations and actions are zero-padded to uniform sizes (`obs_dim`,
`action_dim`); agents whose own action is shorter ignore the padding entries.
Every step auto-resets like the single-agent envs (the returned state / obs on a
terminal step belong to the next episode).

Bad input follows the single-agent contract (`powerzoojax.core.Environment`): a
non-finite action entry is replaced by 0 (the neutral value of `Box[-1, 1]`) and
reported as `info["invalid_action"]` (and `is_safe` False where reported). Entries a
step never reads (`ignored_action_entries`: the padding, and what the parent env
ignores) are set to 0 first, so they are not checked; wrong
shapes, unknown agents and params of the wrong class raise one-line errors naming the
agent or value and what was expected.
"""

import abc
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, PyTree
from powerzoojax.core import Box, EnvParams, make_box
from powerzoojax.core._guard import (
    as_action_array,
    drop_ignored_entries,
    flag_invalid_action,
    neutral_action,
    replace_non_finite,
    structural_hash,
)
from powerzoojax.core._types import Info, Key


class MARLState(eqx.Module):
    """State of a multi-agent adapter.

    **Arguments:**

    - `env_state`: the wrapped env's state.
    """

    env_state: PyTree

    @property
    def grid_state(self) -> PyTree:
        """The wrapped env's state (the reference's name)."""
        return self.env_state

    @property
    def time_step(self) -> Array:
        """The wrapped env's step count."""
        return self.env_state.time_step

    @property
    def done(self) -> Array:
        """The wrapped env's episode-end flag."""
        return self.env_state.done


def agent_type(name: str) -> str:
    """An agent's type: its name up to the first `_` (`battery_2` → `battery`)."""
    return name.split("_", 1)[0]


def _check_bound_params(env: "MultiAgentEnvironment", params: Any, owner: str) -> None:
    if params is not None and not isinstance(params, type(env.params)):
        raise TypeError(
            f"{owner}: params must be {type(env.params).__name__} (like the bound env.params) or None, "
            f"got {type(params).__name__}"
        )


class MultiAgentEnvironment(eqx.Module):
    """Base of the dict-per-agent adapters.

    Subclasses implement `reset_env` / `step_env` (agents stacked on axis 0, params
    given) and `obs_dim` / `action_dim`. The public `reset_arrays` / `step_arrays` are
    this class's: they check the params and the actions once for every adapter, clean the
    actions and call those two; the dict API (`reset` / `step`) is built on them.

    **Arguments:**

    - `params`: the wrapped env's params.
    - `agents`: the agent names, in stacking order (static).
    """

    params: EnvParams
    agents: tuple[str, ...] = eqx.field(static=True)

    def __hash__(self) -> int:
        # Hash without the bound params' array values, so `jax.jit(env.step)` works.
        return structural_hash(self)

    # -- static description ------------------------------------------------------------
    @property
    def name(self) -> str:
        """The adapter's class name."""
        return type(self).__name__

    @property
    def agent_names(self) -> list[str]:
        """The agent names, as a list."""
        return list(self.agents)

    @property
    def num_agents(self) -> int:
        """Number of agents."""
        return len(self.agents)

    @property
    def agent_types(self) -> tuple[str, ...]:
        """Type of each agent, in agent order (name prefix before the first `_`)."""
        return tuple(agent_type(a) for a in self.agents)

    @property
    def max_steps(self) -> int:
        """Episode length [steps]."""
        return int(self.params.max_steps)

    @property
    @abc.abstractmethod
    def obs_dim(self) -> int:
        """Uniform per-agent observation size (zero-padded)."""

    @property
    @abc.abstractmethod
    def action_dim(self) -> int:
        """Uniform per-agent action size (zero-padded)."""

    def ignored_action_entries(self, params: EnvParams | None = None) -> np.ndarray | None:
        """Which entries of the stacked actions a step never reads; `None` when it reads
        them all (the default).

        `step_arrays` sets these entries to their neutral value before its non-finite check, so
        a NaN there is not an `invalid_action`, and whatever computed them is dead code in a
        compiled step. The device adapters ignore the padding of agents with a shorter
        action and the entries their parent env ignores (the unit set-points under an OPF).

        **Arguments:**

        - `params`: the params of the step; `None` takes the bound ones.

        **Returns:**

        `None`, or a boolean NumPy array of shape `(num_agents, action_dim)`, True where the
        entry is ignored.
        """
        return None

    def observation_space(self, agent: str | None = None) -> Box:
        """Observation space of one agent.

        **Arguments:**

        - `agent`: agent name (every agent has the same space).

        **Returns:**

        A `(obs_dim,)` unbounded [`Box`][powerzoojax.core.Box].
        """
        self._check_agent(agent)
        return make_box(-np.inf, np.inf, (self.obs_dim,))

    def action_space(self, agent: str | None = None) -> Box:
        """Action space of one agent.

        **Arguments:**

        - `agent`: agent name (every agent has the same space).

        **Returns:**

        A `(action_dim,)` [`Box`][powerzoojax.core.Box] in [-1, 1].
        """
        self._check_agent(agent)
        return make_box(-1.0, 1.0, (self.action_dim,))

    def _check_agent(self, agent: str | None) -> None:
        if agent is not None and agent not in self.agents:
            raise KeyError(f"{self.name}: unknown agent {agent!r}; agents are {list(self.agents)}")

    # -- the adapter's own transition (subclasses) ---------------------------------------
    @abc.abstractmethod
    def reset_env(self, key: Key, params: EnvParams) -> tuple[Float[Array, "n_agents obs_dim"], MARLState]:
        """Start an episode, agents stacked on axis 0 (called by `reset_arrays`).

        **Arguments:**

        - `key`: PRNG key.
        - `params`: the env's params (checked; the bound ones when none were passed).

        **Returns:**

        `(obs (A, obs_dim), state)`.
        """

    @abc.abstractmethod
    def step_env(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: EnvParams
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        """One transition with auto-reset, agents stacked on axis 0 (called by `step_arrays`
        with checked, finite actions).

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`MARLState`][powerzoojax.rl.marl.MARLState].
        - `actions`: `(A, action_dim)` actions, ignored entries neutral, non-finite ones replaced.
        - `params`: the env's params (checked; the bound ones when none were passed).

        **Returns:**

        `(obs (A, obs_dim), state, rewards (A,), done (), info)`.
        """

    # -- stacked API ----------------------------------------------------------------------
    def reset_arrays(self, key: Key, params: Any = None) -> tuple[Float[Array, "n_agents obs_dim"], MARLState]:
        """Start an episode, agents stacked on axis 0.

        **Arguments:**

        - `key`: PRNG key.
        - `params`: the env's params; `None` takes `self.params`.

        **Returns:**

        `(obs (A, obs_dim), state)`.
        """
        _check_bound_params(self, params, f"{self.name}.reset")
        return self.reset_env(key, self._p(params))

    def step_arrays(
        self, key: Key, state: MARLState, actions: Any, params: Any = None
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        """One transition, agents stacked on axis 0; auto-resets.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`MARLState`][powerzoojax.rl.marl.MARLState].
        - `actions`: `(A, action_dim)` actions.
        - `params`: the env's params; `None` takes `self.params`.

        **Returns:**

        `(obs (A, obs_dim), state, rewards (A,), done (), info)`; `info["invalid_action"]`
        says whether a non-finite action entry was replaced.
        """
        owner = f"{self.name}.step"
        _check_bound_params(self, params, owner)
        shape = (self.num_agents, self.action_dim)
        actions = as_action_array(actions, f"{owner} (stacked actions (num_agents, action_dim))", shape)
        space = self.action_space()
        neutral = neutral_action(space.low, space.high, (self.action_dim,))
        actions = drop_ignored_entries(actions, neutral, self.ignored_action_entries(params), owner)
        actions, invalid = replace_non_finite(actions, neutral)
        obs, state, rewards, done, info = self.step_env(key, state, actions, self._p(params))
        return obs, state, rewards, done, flag_invalid_action(info, invalid)

    # -- dict <-> stacked ---------------------------------------------------------------
    def stack(self, per_agent: dict[str, Array] | Array) -> Array:
        """Dict keyed by agent (observations, actions, ...) → array with agents on axis 0.

        **Arguments:**

        - `per_agent`: dict keyed by agent, or an array (passed through).

        **Returns:**

        An array with agents on axis 0, in `agents` order.
        """
        if isinstance(per_agent, dict):
            self._check_agent_keys(per_agent, "entries")
            return jnp.stack([jnp.asarray(per_agent[a]) for a in self.agents])
        return per_agent

    def _check_agent_keys(self, per_agent: dict, what: str) -> None:
        missing = [a for a in self.agents if a not in per_agent]
        if missing:
            raise KeyError(f"{self.name}: {what} missing for agent(s) {missing}; agents are {list(self.agents)}")
        unknown = sorted(str(a) for a in per_agent if a not in self.agents)
        if unknown:
            raise KeyError(f"{self.name}: {what} for unknown agent(s) {unknown}; agents are {list(self.agents)}")

    def _stack_actions(self, actions: dict[str, Array] | Array) -> Array:
        """The actions dict as a float32 `(A, action_dim)` array, each agent's action checked
        (its shape, named by agent); a stacked array passes through."""
        if not isinstance(actions, dict):
            return actions
        self._check_agent_keys(actions, "actions")
        rows = [as_action_array(actions[a], f"{self.name}.step: agent {a!r}", (self.action_dim,)) for a in self.agents]
        return jnp.stack([row.astype(jnp.float32) for row in rows])

    def unstack(self, stacked: Array) -> dict[str, Array]:
        """Array with agents on axis 0 → dict keyed by agent.

        **Arguments:**

        - `stacked`: array with agents on axis 0.

        **Returns:**

        A dict keyed by agent.
        """
        return {a: stacked[i] for i, a in enumerate(self.agents)}

    # -- dict API -----------------------------------------------------------------------
    # `params: Any` on the public methods: the stacked methods check them and name the
    # expected class.
    def reset(self, key: Key, params: Any = None) -> tuple[dict[str, Array], MARLState]:
        """Start an episode, one observation per agent.

        **Arguments:**

        - `key`: PRNG key.
        - `params`: the env's params; `None` takes `self.params`.

        **Returns:**

        `(obs, state)`, `obs` a dict keyed by agent.
        """
        obs, state = self.reset_arrays(key, params)
        return self.unstack(obs), state

    def step(
        self, key: Key, state: MARLState, actions: Any, params: Any = None
    ) -> tuple[dict[str, Array], MARLState, dict[str, Array], dict[str, Array], Info]:
        """One transition with dicts keyed by agent; auto-resets.

        **Arguments:**

        - `key`: PRNG key.
        - `state`: the [`MARLState`][powerzoojax.rl.marl.MARLState].
        - `actions`: dict keyed by agent, or a stacked `(A, action_dim)` array.
        - `params`: the env's params; `None` takes `self.params`.

        **Returns:**

        `(obs, state, rewards, dones, info)`; `obs`, `rewards` and `dones` keyed by agent
        (`dones` also has `"__all__"`).
        """
        actions = self._stack_actions(actions)
        obs, state, rewards, done, info = self.step_arrays(key, state, actions, params)
        dones = {a: done for a in self.agents}
        dones["__all__"] = done
        return self.unstack(obs), state, self.unstack(rewards), dones, info

    def step_auto_reset(
        self, key: Key, state: MARLState, actions: Any, params: Any = None
    ) -> tuple[dict[str, Array], MARLState, dict[str, Array], dict[str, Array], Info]:
        """`step` with `stop_gradient` on the returned obs and state.

        **Arguments:**

        - `key`, `state`, `actions`, `params`: as for `step`.

        **Returns:**

        The 5-tuple of `step`.
        """
        obs, state, rewards, dones, info = self.step(key, state, actions, params)
        return jax.lax.stop_gradient(obs), jax.lax.stop_gradient(state), rewards, dones, info

    def _p(self, params: EnvParams | None) -> EnvParams:
        return self.params if params is None else params


def pad_last(x: Float[Array, "*batch n"], size: int) -> Float[Array, "*batch size"]:
    """Zero-pad the last axis of `x` to `size`."""
    extra = size - x.shape[-1]
    if extra == 0:
        return x
    return jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (extra,), x.dtype)], axis=-1)
