"""The multi-agent contract (JaxMARL style, params bound) shared by the MARL adapters.

Dict API (agent order = ``env.agents``, fixed at construction)::

    obs, state = env.reset(key)                      # obs: {agent: (obs_dim,)}
    obs, state, rewards, dones, info = env.step(key, state, actions)
    # actions: {agent: (action_dim,)} or the stacked array (num_agents, action_dim)
    # rewards: {agent: ()}, dones: {agent: (), "__all__": ()}

The agent order is ``env.agents``, never the iteration order of a dict: dicts that
come back from ``jax.jit`` / ``vmap`` / ``scan`` have their keys sorted (a JAX pytree
rule; ``der_10`` sorts before ``der_2``). Use ``env.stack`` / ``env.unstack`` to go
between dicts and agent-major arrays.

``params`` may be passed as the last argument of ``reset`` / ``step`` (the seed
documents ``reset(key, params)``); by default the bound ``env.params`` is used.

Stacked API (what trainers use: agents on a leading axis, no dicts in the hot path)::

    obs, state = env.reset_arrays(key)               # obs (A, obs_dim)
    obs, state, rewards, done, info = env.step_arrays(key, state, actions)  # rewards (A,), done ()

``step_arrays`` has the rollout kernel's ``step_fn`` form, so
``powerzoojax.core.rollout(env.step_arrays, key, state, actions)`` runs an episode.
Observations and actions are zero-padded to uniform sizes (``obs_dim``,
``action_dim``); agents whose own action is shorter ignore the padding entries.
Every step auto-resets like the single-agent envs (the returned state / obs on a
terminal step belong to the next episode).
"""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, PyTree
from powerzoojax.core import Box, EnvParams, make_box
from powerzoojax.core._types import Info, Key


class MARLState(eqx.Module):
    """State of a multi-agent adapter: the wrapped env's state (``grid_state`` in the reference)."""

    env_state: PyTree

    @property
    def grid_state(self) -> PyTree:
        return self.env_state

    @property
    def time_step(self) -> Array:
        return self.env_state.time_step

    @property
    def done(self) -> Array:
        return self.env_state.done


def agent_type(name: str) -> str:
    """An agent's type: its name up to the first ``_`` (``battery_2`` → ``battery``)."""
    return name.split("_", 1)[0]


class MultiAgentEnvironment(eqx.Module):
    """Base of the dict-per-agent adapters. Subclasses set ``params`` and the static
    ``agents`` tuple and implement ``reset_arrays`` / ``step_arrays`` / ``obs_dim`` /
    ``action_dim``."""

    params: EnvParams
    agents: tuple[str, ...] = eqx.field(static=True)

    # -- static description ------------------------------------------------------------
    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def agent_names(self) -> list[str]:
        return list(self.agents)

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @property
    def agent_types(self) -> tuple[str, ...]:
        """Type of each agent, in agent order (name prefix before the first ``_``)."""
        return tuple(agent_type(a) for a in self.agents)

    @property
    def max_steps(self) -> int:
        return int(self.params.max_steps)

    @property
    @abc.abstractmethod
    def obs_dim(self) -> int:
        """Uniform per-agent observation size (zero-padded)."""

    @property
    @abc.abstractmethod
    def action_dim(self) -> int:
        """Uniform per-agent action size (zero-padded)."""

    def observation_space(self, agent: str | None = None) -> Box:
        self._check_agent(agent)
        return make_box(-np.inf, np.inf, (self.obs_dim,))

    def action_space(self, agent: str | None = None) -> Box:
        self._check_agent(agent)
        return make_box(-1.0, 1.0, (self.action_dim,))

    def _check_agent(self, agent: str | None) -> None:
        if agent is not None and agent not in self.agents:
            raise KeyError(f"{self.name}: unknown agent {agent!r}; agents are {list(self.agents)}")

    # -- stacked API (subclasses) ------------------------------------------------------
    @abc.abstractmethod
    def reset_arrays(self, key: Key, params: EnvParams | None = None) -> tuple[Float[Array, "n_agents obs_dim"], MARLState]:
        """``(obs (A, obs_dim), state)``."""

    @abc.abstractmethod
    def step_arrays(
        self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: EnvParams | None = None
    ) -> tuple[Float[Array, "n_agents obs_dim"], MARLState, Float[Array, " n_agents"], Bool[Array, ""], Info]:
        """``(obs (A, obs_dim), state, rewards (A,), done (), info)``; auto-resets."""

    # -- dict <-> stacked ---------------------------------------------------------------
    def stack(self, per_agent: dict[str, Array] | Array) -> Array:
        """Dict keyed by agent → array with agents on axis 0 (in ``agents`` order); arrays pass through."""
        if isinstance(per_agent, dict):
            missing = [a for a in self.agents if a not in per_agent]
            if missing:
                raise KeyError(f"{self.name}: actions missing for agent(s) {missing}; agents are {list(self.agents)}")
            return jnp.stack([jnp.asarray(per_agent[a], jnp.float32) for a in self.agents])
        return per_agent

    def unstack(self, stacked: Array) -> dict[str, Array]:
        """Array with agents on axis 0 → dict keyed by agent."""
        return {a: stacked[i] for i, a in enumerate(self.agents)}

    # -- dict API -----------------------------------------------------------------------
    def reset(self, key: Key, params: EnvParams | None = None) -> tuple[dict[str, Array], MARLState]:
        obs, state = self.reset_arrays(key, params)
        return self.unstack(obs), state

    def step(
        self, key: Key, state: MARLState, actions: dict[str, Array] | Array, params: EnvParams | None = None
    ) -> tuple[dict[str, Array], MARLState, dict[str, Array], dict[str, Array], Info]:
        actions = self.stack(actions)
        if actions.shape != (self.num_agents, self.action_dim):
            raise ValueError(
                f"{self.name}.step: stacked actions must have shape (num_agents, action_dim) = "
                f"({self.num_agents}, {self.action_dim}), got {actions.shape}"
            )
        obs, state, rewards, done, info = self.step_arrays(key, state, actions, params)
        dones = {a: done for a in self.agents}
        dones["__all__"] = done
        return self.unstack(obs), state, self.unstack(rewards), dones, info

    def step_auto_reset(
        self, key: Key, state: MARLState, actions: dict[str, Array] | Array, params: EnvParams | None = None
    ) -> tuple[dict[str, Array], MARLState, dict[str, Array], dict[str, Array], Info]:
        """``step`` with ``stop_gradient`` on the returned obs and state."""
        obs, state, rewards, dones, info = self.step(key, state, actions, params)
        return jax.lax.stop_gradient(obs), jax.lax.stop_gradient(state), rewards, dones, info

    def _p(self, params: EnvParams | None) -> EnvParams:
        return self.params if params is None else params


def pad_last(x: Float[Array, "*batch n"], size: int) -> Float[Array, "*batch size"]:
    """Zero-pad the last axis of ``x`` to ``size``."""
    extra = size - x.shape[-1]
    if extra == 0:
        return x
    return jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (extra,), x.dtype)], axis=-1)
