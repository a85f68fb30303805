"""Episode start and drift sampling for non-stationary training and evaluation.

Host-side: the sampler draws with `jax.random` so that a key fixes the result, and returns
plain Python / NumPy values to build env params with; nothing here runs inside `jit`.
"""

import dataclasses
import math
from collections.abc import Sequence

import jax.random as jr
import numpy as np
from jaxtyping import ArrayLike, Float, Int, PRNGKeyArray

SAMPLER_MODES: tuple[str, ...] = ("train", "iid", "drift_shock", "fixed")
DRIFT_SHOCK_FACTOR = 1.25


@dataclasses.dataclass(frozen=True)
class EpisodeConfig:
    """Where an episode starts in a profile and how much its load is scaled.

    **Arguments:**

    - `episode_start`: row of the profile the episode starts at,
      `0 <= start <= T - max_steps`.
    - `drift_factor`: multiplier for the episode's load (`apply_drift`); 1 means unchanged.
    """

    episode_start: int
    drift_factor: float


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_float(name: str, value: object, minimum: float = 0.0) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(value)
        or value < minimum
    ):
        raise ValueError(f"{name} must be a finite number >= {minimum}, got {value!r}")
    return float(value)


class NonstationarySampler:
    """Samples `EpisodeConfig` for a profile of `total_steps` rows.

    Modes:

    - `train`: the start moves through the profile as training progresses,
      `clip(episode_idx / total_episodes * max_start + N(0, rolling_sigma_steps))`, and
      the load drifts slowly, `1 + drift_rate * episode_idx`.
    - `iid`: start uniform on `0 .. max_start`, no drift.
    - `drift_shock`: start uniform, load ×1.25 (parametric out-of-distribution test).
    - `fixed`: start 0, no drift (deterministic evaluation).

    `max_start = total_steps - max_steps` so that an episode never runs off the profile.

    **Arguments:**

    - `total_steps`: rows of the profile.
    - `total_episodes`: training episodes the start sweeps over in `train` mode.
    - `max_steps`: episode length [steps].
    - `drift_rate`: load drift per episode in `train` mode [fraction].
    - `rolling_sigma_steps`: standard deviation of the start's jitter [steps].

    Raises:
        ValueError: for a profile shorter than one episode or a negative rate / sigma.
    """

    def __init__(
        self,
        total_steps: int,
        total_episodes: int = 500,
        *,
        max_steps: int = 48,
        # float | int: beartype does not treat int as float, and users write 720.
        drift_rate: float | int = 3e-4,  # noqa: PYI041
        rolling_sigma_steps: float | int = 720.0,  # noqa: PYI041
    ):
        self.total_steps = _check_int("total_steps", total_steps, 1)
        self.total_episodes = _check_int("total_episodes", total_episodes, 1)
        self.max_steps = _check_int("max_steps", max_steps, 1)
        if self.max_steps > self.total_steps:
            raise ValueError(
                f"max_steps ({self.max_steps}) must not exceed total_steps ({self.total_steps}): "
                "an episode would run off the profile"
            )
        self.drift_rate = _check_float("drift_rate", drift_rate)
        self.rolling_sigma_steps = _check_float("rolling_sigma_steps", rolling_sigma_steps)
        self.max_start = self.total_steps - self.max_steps

    def _draw(
        self, episode_idx: Int[np.ndarray, " n"], key: PRNGKeyArray, mode: str
    ) -> tuple[Int[np.ndarray, " n"], Float[np.ndarray, " n"]]:
        if mode not in SAMPLER_MODES:
            raise ValueError(f"Unknown sampler mode {mode!r}; valid modes: {', '.join(SAMPLER_MODES)}")
        n = episode_idx.shape[0]
        if mode == "fixed":
            return np.zeros(n, np.int64), np.ones(n, np.float64)
        if mode == "train":
            centre = episode_idx / self.total_episodes * self.max_start
            noise = np.asarray(jr.normal(key, (n,)), np.float64) * self.rolling_sigma_steps
            starts = np.clip(np.rint(centre + noise), 0, self.max_start).astype(np.int64)
            return starts, 1.0 + self.drift_rate * episode_idx.astype(np.float64)
        starts = np.asarray(jr.randint(key, (n,), 0, self.max_start + 1), np.int64)
        factor = DRIFT_SHOCK_FACTOR if mode == "drift_shock" else 1.0
        return starts, np.full(n, factor, np.float64)

    def sample(self, episode_idx: int | np.integer, key: PRNGKeyArray, *, mode: str = "train") -> EpisodeConfig:
        """One episode's configuration; the same `(episode_idx, key, mode)` gives the same result.

        **Arguments:**

        - `episode_idx`: index of the episode, `>= 0`.
        - `key`: PRNG key.
        - `mode`: `"train"`, `"iid"`, `"drift_shock"` or `"fixed"`.

        **Returns:**

        An [`EpisodeConfig`][powerzoojax.data.EpisodeConfig].

        Raises:
            ValueError: for an unknown mode (the message lists the valid ones) or a negative
                `episode_idx`.
        """
        index = np.array([_check_int("episode_idx", episode_idx, 0)], np.int64)
        starts, factors = self._draw(index, key, mode)
        return EpisodeConfig(episode_start=int(starts[0]), drift_factor=float(factors[0]))

    def sample_batch(
        self, episode_indices: Sequence[int] | Int[np.ndarray, " n"], key: PRNGKeyArray, *, mode: str = "train"
    ) -> tuple[Int[np.ndarray, " n"], Float[np.ndarray, " n"]]:
        """Starts and drift factors for several episodes at once.

        **Arguments:**

        - `episode_indices`: `(n,)` episode indices.
        - `key`: PRNG key.
        - `mode`: as for `sample`.

        **Returns:**

        `(starts, factors)`: `(n,)` int64 starts and `(n,)` float64 drift factors.
        """
        indices = np.asarray(
            [_check_int("episode_idx", i, 0) for i in np.asarray(episode_indices).reshape(-1).tolist()],
            np.int64,
        ).reshape(-1)
        if indices.size == 0:
            raise ValueError("episode_indices must hold at least one episode index")
        return self._draw(indices, key, mode)


def apply_drift(
    p: ArrayLike, q: ArrayLike, factor: float | int  # noqa: PYI041
) -> tuple[Float[np.ndarray, "*shape"], Float[np.ndarray, "*shape"]]:
    """Scale active and reactive load `(p, q)` by `factor` (float32; power factor kept).

    **Arguments:**

    - `p`, `q`: active [MW] and reactive [MVAr] load, of one shape.
    - `factor`: the scale, finite and `>= 0`.

    **Returns:**

    `(p, q)` scaled, float32 NumPy arrays.

    Raises:
        ValueError: for a negative or non-finite factor, or `p` and `q` of different shapes.
    """
    factor = _check_float("factor", factor)
    p_arr, q_arr = np.asarray(p, np.float32), np.asarray(q, np.float32)
    if p_arr.shape != q_arr.shape:
        raise ValueError(f"p and q must have the same shape, got {p_arr.shape} and {q_arr.shape}")
    return p_arr * np.float32(factor), q_arr * np.float32(factor)
