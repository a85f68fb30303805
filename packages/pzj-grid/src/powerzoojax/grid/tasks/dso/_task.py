"""The DSO benchmark task, [`DSOTask`][powerzoojax.grid.tasks.dso.DSOTask]."""

import jax.numpy as jnp
import numpy as np

from powerzoojax.case import load_case
from powerzoojax.core import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.grid.distribution import DistGridEnv, DistGridParams, make_dist_params
from powerzoojax.grid.resources import make_flexload_bundle
from powerzoojax.grid.tasks.dso._constants import (
    DSO_BUS_MULTIPLIERS,
    DSO_FLEX_BUSES,
    DSO_FROZEN_CAPS_MW,
    DSO_TRAIN_WINDOW_STARTS,
)
from powerzoojax.grid.tasks.dso._metrics import dso_metrics
from powerzoojax.grid.tasks.dso._profiles import (
    dso_base_loads,
    feeder_shapes,
    feeder_to_bus_shapes,
    synthetic_feeder_shapes,
)


class DSOTask:
    """Frozen DSO benchmark (implements [`TaskSpec`][powerzoojax.core.TaskSpec]).

    **Arguments:**

    - `caps_mw`: curtailment and shift capacity of each of the six flexible loads [MW].
    - `v_slack`: substation voltage [p.u.].
    - `load_scale`: multiplier of the case's static loads.
    - `bus_multipliers`: `{bus number: factor}` moving load along the feeders.
    - `renormalise_feeders`: rescale each feeder to its total before the multipliers.
    - `synthetic`: use the synthetic feeder shapes instead of data.
    - `max_steps`: episode length [steps].
    - `v_min`, `v_max`: voltage band [p.u.].
    """

    task_name = "dso"
    default_splits = ("train", "iid", "summer_ood", "zone_holdout")

    def __init__(
        self,
        caps_mw: tuple = DSO_FROZEN_CAPS_MW,
        v_slack: float = 1.045,
        load_scale: float = 0.83,
        bus_multipliers: dict | None = DSO_BUS_MULTIPLIERS,
        renormalise_feeders: bool = True,
        synthetic: bool = False,
        max_steps: int = 48,
        v_min: float = 0.94,
        v_max: float = 1.06,
    ):
        self.caps_mw = tuple(float(c) for c in caps_mw)
        self.v_slack, self.load_scale, self.max_steps = float(v_slack), float(load_scale), int(max_steps)
        self.bus_multipliers = dict(bus_multipliers or {})
        self.renormalise_feeders, self.synthetic = bool(renormalise_feeders), bool(synthetic)
        self.v_min, self.v_max = float(v_min), float(v_max)
        self.case = load_case("33bw")
        self._base_p, self._base_q = self._base_loads()
        self._bundle = make_flexload_bundle(self.case, DSO_FLEX_BUSES, cap_curtail_mw=self.caps_mw, horizon=4)

    # -- data --------------------------------------------------------------------------------

    def _base_loads(self) -> tuple[np.ndarray, np.ndarray]:
        return dso_base_loads(self.case, self.load_scale, self.bus_multipliers, self.renormalise_feeders)

    def _shapes(self, split: str) -> np.ndarray:
        return synthetic_feeder_shapes(48) if self.synthetic else feeder_shapes(split)

    def _bus_shapes(self, shapes: np.ndarray) -> np.ndarray:
        return feeder_to_bus_shapes(self.case, shapes)

    def make_params(self, split: str = "train", start: int = 0, *, max_steps: int | None = None) -> DistGridParams:
        """Env params whose load rows are the `max_steps` rows of `split` from `start` (wrapping
        around the split).

        **Arguments:**

        - `split`: data split.
        - `start`: first row.
        - `max_steps`: episode length [steps]; `None` takes the task's.

        **Returns:**

        [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
        """
        n = self.max_steps if max_steps is None else int(max_steps)
        shapes = self._shapes(split)
        rows = (int(start) + np.arange(n)) % shapes.shape[0]
        bus = self._bus_shapes(shapes[rows])
        return make_dist_params(
            self.case, max_steps=n, steps_per_day=48, v_slack=self.v_slack, v_min=self.v_min, v_max=self.v_max,
            loss_penalty_weight=0.1, resources=(self._bundle,), include_der=False,
            p_load_profiles=bus * self._base_p, q_load_profiles=bus * self._base_q,
        )

    # -- TaskSpec ----------------------------------------------------------------------------

    def make_env(self, split: str = "train") -> DistGridEnv:
        return DistGridEnv()

    def episode_params(
        self, split: str, episode_idx: int, n_episodes: int, max_steps: int, *, strategy: str = "uniform",
        seed: int = 0,
    ) -> DistGridParams:
        n_rows = self._shapes(split).shape[0]
        if strategy == "uniform":
            span = max(n_rows - max_steps, 0)
            start = int(round(episode_idx * span / max(n_episodes - 1, 1))) if n_episodes > 1 else 0
        elif strategy == "seeded":
            start = int(np.random.default_rng(seed * 997 + episode_idx).integers(0, max(n_rows - max_steps, 1)))
        else:
            raise ValueError(f"DSOTask.episode_params: strategy must be 'uniform' or 'seeded', got {strategy!r}")
        return self.make_params(split, start, max_steps=max_steps)

    def train_params_bank(self) -> list[DistGridParams]:
        """The eight frozen training windows (`train_window_starts`).

        **Returns:**

        A list of eight [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
        """
        return [self.make_params("train", s) for s in DSO_TRAIN_WINDOW_STARTS]

    def rollout(self, env, params, key, policy_fn) -> EpisodeTrace:
        return episode_rollout(env, params, key, policy_fn)

    def baseline_names(self) -> tuple[str, ...]:
        return ("no_control", "tou", "droop")

    def baseline_policy(self, name: str, params: DistGridParams):
        """The policy of a named baseline.

        **Arguments:**

        - `name`: one of `baseline_names()`.
        - `params`: the episode's params.

        **Returns:**

        `policy(obs, state, key) -> action (12,)`.
        """
        n_dev = params.resources[0].n_devices
        bus_idx = params.resources[0].bus_idx
        spd = params.steps_per_day
        if name == "no_control":
            return lambda obs, state, key: jnp.zeros((2 * n_dev,), jnp.float32)
        if name == "tou":
            def tou(obs, state, key):
                t = state.time_step % spd
                on = ((t >= 16) & (t < 21)).astype(jnp.float32)
                return jnp.tile(jnp.asarray([0.8, 0.5], jnp.float32), n_dev) * on
            return tou
        if name == "droop":
            def droop(obs, state, key):
                v = state.v_mag[bus_idx]
                curtail = jnp.clip((0.96 - v) / 0.04, 0.0, 1.0)
                shift = jnp.clip((0.96 - v) / 0.06, 0.0, 0.5)
                return jnp.stack([curtail, shift], axis=1).reshape(-1)
            return droop
        raise ValueError(f"DSOTask: unknown baseline {name!r}; valid: {self.baseline_names()}")

    def baseline_rollout(self, env, params, key, name: str) -> EpisodeTrace:
        return episode_rollout(env, params, key, self.baseline_policy(name, params))

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout: EpisodeTrace | None = None) -> dict[str, float]:
        return dso_metrics(agent_rollout, baseline_rollout)

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("voltage_violation",), (0.0,), (1.0,))
