"""N PowerZooJax envs as one `gymnasium.vector.VectorEnv`: each `step` is one call of
the jitted, vmapped step (NumPy actions in, NumPy batches out).

Autoreset. Our envs reset inside `step`: on the step where an episode ends, `done` is
True and the returned state is already the next episode's first (same-step auto-reset,
without the final observation). Gymnasium's default, `AutoresetMode.NEXT_STEP`, which
this class implements, reports the episode's end on that step (`terminations[i]` True)
and resets env `i` on the *next* `step`, which ignores `actions[i]` and returns the
new episode's first observation with reward 0 and `terminations[i]` / `truncations[i]`
False. An episode that reaches `params.max_steps` (the task's fixed horizon) ends with
`truncations[i]` True and `terminations[i]` False; one the env ends earlier, with
`terminations[i]` True (see `GymnasiumEnv`). Here the reset state our step produced is kept for that next step, so the batch
still runs as one program. `AutoresetMode.DISABLED` is supported too (`reset(options=
{"reset_mask": mask})` restarts ended envs; stepping one that ended raises);
`SAME_STEP` is not, since it hands back the final observation, which our same-step
auto-reset does not keep. As in `GymnasiumEnv`, the observation returned with an
episode's end is already the next episode's first.

Infos follow Gymnasium's vector convention: `infos[k]` is an `(N, ...)` array and
`infos["_" + k]` a boolean mask of the envs it is valid for (False for envs that were
reset on this step). `infos["costs"]` holds the `(N, n_costs)` constraint costs.
"""

from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from powerzoojax.rl.adapters import _kernels
from powerzoojax.rl.adapters._gymnasium_env import check_render_mode, check_single_agent
from powerzoojax.rl.adapters._render import render_rgb
from powerzoojax.rl.adapters._spaces import to_env_action, to_gymnasium_space

SUPPORTED_AUTORESET_MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)


class GymnasiumVectorEnv(VectorEnv):
    """`num_envs` copies of one PowerZooJax env behind `gymnasium.vector.VectorEnv` (see
    the module docstring for the autoreset semantics).

    **Arguments:**

    - `env`: a single-agent `Environment`.
    - `params`: its params, shared by every copy (default: `env.default_params()`).
    - `num_envs`: the batch size N.
    - `autoreset_mode`: `AutoresetMode.NEXT_STEP` (default) or `DISABLED` (or their
      string values); stored in `metadata["autoreset_mode"]`.
    - `render_mode`: None or `"rgb_array"` (`render()` returns one frame per env).
    - `env_id`: the registry id, used in pictures.

    `reset(seed=s)` seeds env `i` with `s + i` (a list gives one seed per env);
    `step(actions)` takes an `(N, ...)` NumPy batch and returns `(obs (N, ...),
    rewards (N,) float32, terminations (N,) bool, truncations (N,) bool, infos)`; an
    episode reaching `params.max_steps` ends with a truncation.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012 - replaced per instance
        "render_modes": ["rgb_array"], "render_fps": 4, "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        env: Any,
        params: Any = None,
        num_envs: int = 1,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        env_id: str | None = None,
    ):
        check_single_agent("GymnasiumVectorEnv", env)
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"GymnasiumVectorEnv: num_envs must be a positive integer, got {num_envs!r}")
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            mode = None
        if mode not in SUPPORTED_AUTORESET_MODES:
            raise ValueError(
                f"GymnasiumVectorEnv: autoreset_mode must be one of {[m.value for m in SUPPORTED_AUTORESET_MODES]}, got "
                f"{autoreset_mode!r} (SAME_STEP needs the final observation, which the same-step auto-reset of our envs "
                "does not keep)"
            )
        self.env = env
        self.params = env.default_params() if params is None else params
        self.num_envs = int(num_envs)
        self.env_id = env_id or env.name
        self.autoreset_mode = mode
        self.render_mode = check_render_mode("GymnasiumVectorEnv", render_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self._action_space_ours = env.action_space(self.params)
        self.single_observation_space = to_gymnasium_space(env.observation_space(self.params))
        self.single_action_space = to_gymnasium_space(self._action_space_ours)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.constraint_names = tuple(env.constraint_names(self.params))
        self._keys: Any = None
        self._states: Any = None
        self._obs: Any = None
        self._ended = np.zeros(self.num_envs, bool)
        self.max_steps = int(self.params.max_steps)
        self._t = np.zeros(self.num_envs, np.int64)
        self._rewards: list[list[float]] = [[] for _ in range(self.num_envs)]
        self._layout: _kernels.HostLayout | None = None

    # -- reset -------------------------------------------------------------------------
    def _seed_keys(self, seed: int | list[int] | None) -> Any:
        if seed is None:
            seeds = self.np_random.integers(2**32, size=self.num_envs)
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)  # pyright: ignore[reportArgumentType]
            if len(seeds) != self.num_envs:
                raise ValueError(f"GymnasiumVectorEnv.reset: got {len(seeds)} seeds for {self.num_envs} envs")
        return _kernels.keys_from_seeds(_kernels.seed_words(seeds))

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every env, or those of `options["reset_mask"]` (an `(N,)` bool array):
        `(obs (N, ...), {})`."""
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))
        mask = None if options is None else options.get("reset_mask")
        if mask is not None:
            mask = self._check_reset_mask(mask)
        if self._keys is None or (seed is not None and mask is None):
            self._keys = self._seed_keys(seed)
        elif seed is not None:
            self._keys = jnp.where(jnp.asarray(mask)[:, None], self._seed_keys(seed), self._keys)
        if mask is None or self._states is None:
            self._keys, self._obs, self._states = _kernels.reset_batch(self.env, self._keys, self.params)
            self._ended[:] = False
            self._t[:] = 0
            self._rewards = [[] for _ in range(self.num_envs)]
        else:
            self._keys, self._obs, self._states = _kernels.reset_masked(
                self.env, self._keys, self.params, jnp.asarray(mask), self._states, self._obs
            )
            self._ended[mask] = False
            self._t[mask] = 0
            for i in np.flatnonzero(mask):
                self._rewards[i] = []
        return np.array(jax.device_get(self._obs)), {}

    def _check_reset_mask(self, mask: Any) -> np.ndarray:
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
            raise ValueError(
                f"GymnasiumVectorEnv.reset: options['reset_mask'] must be a bool NumPy array of shape ({self.num_envs},), "
                f"got {type(mask).__name__} {getattr(mask, 'dtype', '')} {getattr(mask, 'shape', '')}"
            )
        return mask

    # -- step --------------------------------------------------------------------------
    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env once (one device call); see the module docstring for the autoreset."""
        if self._states is None:
            raise RuntimeError(f"{self.env_id}: call reset() before step()")
        if self.autoreset_mode is AutoresetMode.DISABLED and self._ended.any():
            raise RuntimeError(
                f"{self.env_id}: envs {np.flatnonzero(self._ended).tolist()} ended; with autoreset_mode DISABLED, reset them "
                "first (reset(options={'reset_mask': mask}))"
            )
        skip = self._ended.copy()
        actions = to_env_action(self._action_space_ours, actions)
        if self._layout is None:
            shapes = _kernels.step_batch_outputs(self.env, self._keys, self._states, self._obs, skip, actions, self.params)
            self._layout = _kernels.HostLayout(shapes, batch_ndim=1)
        self._keys, self._obs, self._states, packed = _kernels.step_batch(
            self.env, self._keys, self._states, self._obs, skip, actions, self.params
        )
        obs, reward, costs, done, info = self._layout.unpack(packed)
        stepped = ~skip
        infos: dict[str, Any] = {}
        for key, value in (*info.items(), ("costs", costs)):
            infos[key] = value
            infos["_" + key] = stepped.copy()
        self._ended = done.copy()
        self._t[stepped] += 1
        truncated = done & (self._t >= self.max_steps)
        self._t[done] = 0  # their returned state is already the next episode's first
        if self.render_mode is not None:
            for i in range(self.num_envs):
                self._rewards[i] = [] if skip[i] else [*self._rewards[i], float(reward[i])]
        return obs, reward.astype(np.float32, copy=False), done & ~truncated, truncated, infos

    # -- render ------------------------------------------------------------------------
    def render(self) -> tuple[np.ndarray, ...] | None:
        """One `(H, W, 3)` uint8 frame per env (`render_mode="rgb_array"`), else None.
        Each frame is drawn on the host: for many envs, render a slice of them instead."""
        if self.render_mode is None:
            gymnasium.logger.warn(f"{self.env_id}: render() called without a render_mode; pass render_mode='rgb_array'")
            return None
        if self._states is None:
            raise RuntimeError(f"{self.env_id}: call reset() before render()")
        states, obs = jax.device_get((self._states, self._obs))
        return tuple(
            render_rgb(
                jax.tree.map(lambda leaf, i=i: leaf[i], states), self.params, obs[i], self._rewards[i],
                f"{self.env_id} [{i}], step {len(self._rewards[i])}",
            )
            for i in range(self.num_envs)
        )

    def __repr__(self) -> str:
        return f"GymnasiumVectorEnv({self.env_id}, num_envs={self.num_envs})"
