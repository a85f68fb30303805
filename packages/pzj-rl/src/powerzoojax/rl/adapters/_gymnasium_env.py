"""A PowerZooJax env as a single `gymnasium.Env` (NumPy in, NumPy out).

Seeding: `reset(seed=s)` starts the env's PRNG key from `s` (`uint32`, so seeds are
taken mod 2³²); every later `reset()` and `step` splits that key, so one seed and one
action sequence give one trajectory. The `i`-th env of `GymnasiumVectorEnv` reset
with seed `s` follows the trajectory of this env reset with `s + i`.

Episode end: a PowerZooJax episode ends after `params.max_steps` steps, the end of the
task's fixed horizon (a day of dispatch). In Gymnasium's terms that is a time limit, not a
terminal state of the system (the grid goes on the next day), so the step that reaches
`max_steps` is reported as `truncated=True, terminated=False`, and learners that bootstrap
across truncations (Stable-Baselines3, CleanRL) do so. An episode the env ends earlier (an
env whose own `done` fires before `max_steps`) is reported as `terminated=True`. The JAX
side keeps its one `done` flag; our own trainers treat it as the end of the task, without
bootstrapping.

Our `step` resets in the same step and keeps no final observation, so the observation
returned with `truncated=True` is already the next episode's first one: a learner that
bootstraps from it values the state the next day starts in, which is the continuation
of the day-to-day process when the state carries little over (case 5's dispatch: the time
of day), and an approximation where the reset restores stored state (a battery's
state of charge restarts at its initial value). The next `reset()` starts a fresh
episode either way.
"""

from typing import Any, ClassVar

import gymnasium
import jax
import numpy as np

from powerzoojax.core import Environment
from powerzoojax.rl.adapters import _kernels
from powerzoojax.rl.adapters._render import render_rgb
from powerzoojax.rl.adapters._spaces import to_env_action, to_gymnasium_space

RENDER_MODES = ("rgb_array",)


def check_render_mode(owner: str, render_mode: str | None) -> str | None:
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"{owner}: render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}")
    return render_mode


def check_single_agent(owner: str, env: Any) -> None:
    if not isinstance(env, Environment):
        hint = " (a multi-agent adapter: use PettingZooParallelEnv)" if hasattr(env, "step_arrays") else ""
        raise TypeError(f"{owner}: env must be a powerzoojax Environment{hint}, got {type(env).__name__}")


class GymnasiumEnv(gymnasium.Env):
    """One PowerZooJax env behind the `gymnasium.Env` API (see the module docstring).

    **Arguments:**

    - `env`: a single-agent `Environment`.
    - `params`: its params (default: `env.default_params()`).
    - `render_mode`: None or `"rgb_array"` (`render()` returns an `(H, W, 3)` uint8
      array: the network picture of `powerzoojax.viz` where available, else a summary).
    - `env_id`: the registry id, used in pictures and `repr`.

    `observation_space` / `action_space` are our spaces converted
    (`to_gymnasium_space`); `step` returns `(obs, reward, terminated, truncated,
    info)` with `info` the env's info as NumPy arrays plus `info["costs"]`, the
    constraint-cost vector ordered as `constraint_names`; the step that reaches
    `params.max_steps` is a truncation (see the module docstring). Reset and step each run one
    compiled program, shared by all adapters over equal envs.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": 4}  # pyright: ignore[reportIncompatibleVariableOverride]

    def __init__(self, env: Any, params: Any = None, *, render_mode: str | None = None, env_id: str | None = None):
        check_single_agent("GymnasiumEnv", env)
        self.env = env
        self.params = env.default_params() if params is None else params
        self.env_id = env_id or env.name
        self.render_mode = check_render_mode("GymnasiumEnv", render_mode)
        self._action_space_ours = env.action_space(self.params)
        self.observation_space = to_gymnasium_space(env.observation_space(self.params))
        self.action_space = to_gymnasium_space(self._action_space_ours)
        self.constraint_names = tuple(env.constraint_names(self.params))
        self._key: Any = None
        self._state: Any = None
        self._obs: Any = None
        self._rewards: list[float] = []
        self._layout: _kernels.HostLayout | None = None
        self.max_steps = int(self.params.max_steps)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Start an episode: `(obs, info)`; `seed` restarts the PRNG key (see the module docstring)."""
        super().reset(seed=seed)
        if seed is not None:
            self._key = _kernels.keys_from_seeds(_kernels.seed_words([seed]))[0]
        elif self._key is None:
            self._key = _kernels.keys_from_seeds(_kernels.seed_words([int(self.np_random.integers(2**32))]))[0]
        self._key, obs, self._state = _kernels.reset_one(self.env, self._key, self.params)
        self._obs = obs
        self._rewards = []
        self._t = 0
        return np.array(jax.device_get(obs)), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """One transition: `(obs, reward, terminated, truncated, info)`."""
        if self._state is None:
            raise RuntimeError(f"{self.env_id}: call reset() before step()")
        action = to_env_action(self._action_space_ours, action)
        if self._layout is None:
            shapes = _kernels.step_one_outputs(self.env, self._key, self._state, action, self.params)
            self._layout = _kernels.HostLayout(shapes, batch_ndim=0)
        self._key, self._state, packed = _kernels.step_one(self.env, self._key, self._state, action, self.params)
        obs, reward, costs, done, info = self._layout.unpack(packed)
        self._obs = obs
        self._rewards.append(float(reward))
        info = dict(info)
        info["costs"] = costs
        self._t += 1
        ended = bool(done)
        truncated = ended and self._t >= self.max_steps
        if ended:
            self._t = 0  # the returned state is already the next episode's first
        return obs, float(reward), ended and not truncated, truncated, info

    def render(self) -> np.ndarray | None:
        """The current state as an `(H, W, 3)` uint8 array (`render_mode="rgb_array"`), else None."""
        if self.render_mode is None:
            gymnasium.logger.warn(f"{self.env_id}: render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if self._state is None:
            raise RuntimeError(f"{self.env_id}: call reset() before render()")
        title = f"{self.env_id}, step {len(self._rewards)}"
        return render_rgb(self._state, self.params, self._obs, self._rewards, title)

    def __repr__(self) -> str:
        return f"GymnasiumEnv({self.env_id})"
