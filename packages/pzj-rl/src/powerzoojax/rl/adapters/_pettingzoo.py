"""A PowerZooJax multi-agent adapter as a PettingZoo `ParallelEnv` (NumPy in, NumPy out).

Works for every `MultiAgentEnvironment` (`GridMARLEnv`,
`DistGridMARLEnv`, `DistGrid3PhaseMARLEnv`, `MarketMARLEnv`): `possible_agents` is the
adapter's fixed agent order; all agents act every step and the episode ends for all of them
together after `max_steps` steps, the task's fixed horizon, reported as a truncation
(`truncations[agent]` True, `terminations[agent]` False; an episode the env ends earlier is
a termination; see `GymnasiumEnv` on why, and on the observation returned with it);
`agents` is then empty until `reset`. Seeding as in `GymnasiumEnv`: `reset(seed=s)` starts the PRNG key from
`s`. Each step is one compiled call of the adapter's stacked step.

Per-agent `infos[agent]` hold the (shared) env info as NumPy arrays, the same array
objects for every agent; copy before changing them in place.
"""

from typing import Any, ClassVar

import gymnasium
import jax
import numpy as np
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from powerzoojax.rl.adapters import _kernels
from powerzoojax.rl.adapters._gymnasium_env import check_render_mode
from powerzoojax.rl.adapters._render import render_rgb
from powerzoojax.rl.adapters._spaces import to_gymnasium_space


class PettingZooParallelEnv(ParallelEnv):
    """A multi-agent adapter behind PettingZoo's parallel API (see the module docstring).

    **Arguments:**

    - `env`: a `MultiAgentEnvironment` (params bound).
    - `render_mode`: None or `"rgb_array"`.
    - `env_id`: the registry id, used in pictures and `metadata["name"]`.

    Observation and action spaces are `Box` per agent, `(obs_dim,)` / `(action_dim,)`
    (zero-padded to the widest agent, as the adapter's stacked API).
    """

    metadata: ClassVar[dict[str, Any]] = {"name": "powerzoojax", "render_modes": ["rgb_array"], "render_fps": 4, "is_parallelizable": True}

    def __init__(self, env: Any, *, render_mode: str | None = None, env_id: str | None = None):
        if not (hasattr(env, "step_arrays") and hasattr(env, "agents")):
            raise TypeError(
                f"PettingZooParallelEnv: env must be a multi-agent adapter (powerzoojax.rl.marl), got {type(env).__name__}; "
                "wrap single-agent envs with GymnasiumEnv"
            )
        self.env = env
        self.env_id = env_id or env.name
        self.metadata = {**type(self).metadata, "name": self.env_id}  # pyright: ignore[reportAttributeAccessIssue, reportIncompatibleVariableOverride]
        self.render_mode = check_render_mode("PettingZooParallelEnv", render_mode)
        self.possible_agents = list(env.agents)
        self.agents: list[str] = []
        self._observation_spaces = {a: to_gymnasium_space(env.observation_space(a)) for a in self.possible_agents}
        self._action_spaces = {a: to_gymnasium_space(env.action_space(a)) for a in self.possible_agents}
        self._key: Any = None
        self._state: Any = None
        self._obs: Any = None
        self._rewards: list[float] = []
        self._np_random: np.random.Generator | None = None
        self.max_steps = int(env.max_steps)
        self._t = 0

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        """The agent's observation space (the same object on every call)."""
        return self._observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        """The agent's action space (the same object on every call)."""
        return self._action_spaces[self._known(agent)]

    def _known(self, agent: str) -> str:
        if agent not in self._observation_spaces:
            raise KeyError(f"{self.env_id}: unknown agent {agent!r}; agents are {self.possible_agents}")
        return agent

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        """Start an episode: `(observations, infos)` keyed by agent."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
            self._key = _kernels.keys_from_seeds(_kernels.seed_words([seed]))[0]
        elif self._key is None:
            if self._np_random is None:
                self._np_random, _ = seeding.np_random()
            self._key = _kernels.keys_from_seeds(_kernels.seed_words([int(self._np_random.integers(2**32))]))[0]  # pyright: ignore[reportOptionalMemberAccess]
        self._key, obs, self._state = _kernels.marl_reset(self.env, self._key)
        self._obs = obs
        self._rewards = []
        self._t = 0
        self.agents = list(self.possible_agents)
        host = np.array(jax.device_get(obs))
        return {a: host[i] for i, a in enumerate(self.agents)}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """One joint step: `(observations, rewards, terminations, truncations, infos)` keyed by agent."""
        if not self.agents:
            raise RuntimeError(f"{self.env_id}: no live agents (the episode ended or reset() was not called); call reset()")
        missing = [a for a in self.agents if a not in actions]
        unknown = sorted(str(a) for a in actions if a not in self._action_spaces)
        if missing or unknown:
            raise KeyError(f"{self.env_id}.step: actions missing for {missing}, given for unknown agents {unknown}; agents are {self.agents}")
        stacked = np.stack([self._agent_action(a, actions[a]) for a in self.agents])
        self._key, obs, self._state, rewards, done, info = _kernels.marl_step(self.env, self._key, self._state, stacked)  # pyright: ignore[reportArgumentType]
        self._obs = obs
        obs, rewards, done, info = jax.device_get((obs, rewards, done, info))
        info = {k: np.array(v) for k, v in info.items()}
        ended = bool(done)
        agents = self.agents
        obs = np.array(obs)
        observations = {a: obs[i] for i, a in enumerate(agents)}
        reward_dict = {a: float(rewards[i]) for i, a in enumerate(agents)}
        self._rewards.append(float(np.mean(rewards)))
        self._t += 1
        truncated = ended and self._t >= self.max_steps
        terminations = {a: ended and not truncated for a in agents}
        truncations = {a: truncated for a in agents}
        infos = {a: dict(info) for a in agents}
        if ended:
            self.agents = []
        return observations, reward_dict, terminations, truncations, infos

    def _agent_action(self, agent: str, action: Any) -> np.ndarray:
        row = np.asarray(action, np.float32)
        if row.shape != (self.env.action_dim,):
            raise ValueError(f"{self.env_id}.step: action of {agent!r} has shape {row.shape}, expected ({self.env.action_dim},)")
        return row

    def render(self) -> np.ndarray | None:
        """The current state as an `(H, W, 3)` uint8 array (`render_mode="rgb_array"`), else None."""
        if self.render_mode is None:
            gymnasium.logger.warn(f"{self.env_id}: render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if self._state is None:
            raise RuntimeError(f"{self.env_id}: call reset() before render()")
        title = f"{self.env_id}, step {len(self._rewards)}"
        return render_rgb(self._state.env_state, self.env.params, self._obs, self._rewards, title)

    def close(self) -> None:
        """Nothing to release (the compiled programs are shared)."""

    def __repr__(self) -> str:
        return f"PettingZooParallelEnv({self.env_id})"
