"""The DERs benchmark task, [`DERsTask`][powerzoojax.grid.tasks.ders.DERsTask]."""

import jax
import jax.numpy as jnp
import numpy as np

from powerzoojax.case import load_case
from powerzoojax.core import ConstraintSpec, EpisodeTrace, episode_rollout
from powerzoojax.grid.distribution import DistGridEnv, DistGridParams, make_dist_params
from powerzoojax.grid.resources import make_battery_bundle, make_flexload_bundle, make_renewable_bundle
from powerzoojax.grid.tasks.ders._baselines import ders_noop_action
from powerzoojax.grid.tasks.ders._constants import DERS_BATTERY_BUSES, DERS_FLEX_BUSES, DERS_PV_BUSES, _SPLITS
from powerzoojax.grid.tasks.ders._profiles import ders_shapes


class DERsTask:
    """Frozen DERs benchmark (implements [`TaskSpec`][powerzoojax.core.TaskSpec]).

    **Arguments:**

    - `max_steps`: episode length [steps].
    - `randomize_initial_soc`: draw the batteries' initial SOC on reset.
    """

    task_name = "ders"
    default_splits = tuple(_SPLITS)

    def __init__(self, max_steps: int = 48, randomize_initial_soc: bool = False):
        self.max_steps = int(max_steps)
        self.case = load_case("141")
        c = self.case
        self._batt = make_battery_bundle(
            c, DERS_BATTERY_BUSES, power_mw=0.10, energy_mwh=0.30, s_rated_mva=0.15, soc_min=0.1, soc_max=0.9,
            initial_soc=0.5, enable_q_control=True, randomize_initial_soc=randomize_initial_soc,
        )
        self._flex = make_flexload_bundle(c, DERS_FLEX_BUSES, cap_curtail_mw=0.10, horizon=4)

    def make_params(self, split: str = "train", start: int = 0, *, max_steps: int | None = None) -> DistGridParams:
        """Env params of one episode window.

        **Arguments:**

        - `split`: data split.
        - `start`: first row of the split's profiles.
        - `max_steps`: episode length [steps]; `None` takes the task's.

        **Returns:**

        [`DistGridParams`][powerzoojax.grid.distribution.DistGridParams].
        """
        if split not in _SPLITS:
            raise ValueError(f"DERsTask: unknown split {split!r}; valid: {tuple(_SPLITS)}")
        window, load_mult, pv_mult, (v_min, v_max) = _SPLITS[split]
        n = self.max_steps if max_steps is None else int(max_steps)
        load_shape, pv_shape = ders_shapes(window)
        rows = (int(start) + np.arange(n)) % load_shape.shape[0]
        base = float(self.case.base_mva)
        p0 = np.asarray(self.case.node_pd, np.float64) / base
        q0 = np.asarray(self.case.node_qd, np.float64) / base
        shape = load_shape[rows][:, None] * load_mult
        pv = self._pv(np.clip(pv_shape[rows] * pv_mult, 0.0, 1.0), pv_mult)
        return make_dist_params(
            self.case, max_steps=n, steps_per_day=48, v_min=v_min, v_max=v_max, loss_penalty_weight=0.1,
            resources=(self._batt, pv, self._flex), include_der=False,
            p_load_profiles=shape * p0, q_load_profiles=shape * q0,
        )

    def _pv(self, cf: np.ndarray, pv_mult: float):
        # PV × 2 doubles capacity (and inverter rating) rather than saturating the CF.
        return make_renewable_bundle(
            self.case, DERS_PV_BUSES, capacity_mw=0.20 * pv_mult, s_rated_mva=0.22 * pv_mult,
            cf_profiles=np.clip(cf / pv_mult, 0.0, 1.0), enable_curtailment=True, enable_q_control=True,
        )

    def make_env(self, split: str = "train") -> DistGridEnv:
        return DistGridEnv()

    def episode_params(
        self, split: str, episode_idx: int, n_episodes: int, max_steps: int, *, strategy: str = "uniform",
        seed: int = 0,
    ) -> DistGridParams:
        n_rows = ders_shapes(_SPLITS[split][0])[0].shape[0]
        span = max(n_rows - max_steps, 0)
        if strategy == "uniform":
            start = int(round(episode_idx * span / max(n_episodes - 1, 1))) if n_episodes > 1 else 0
        elif strategy == "seeded":
            start = int(np.random.default_rng(seed * 997 + episode_idx).integers(0, max(span, 1)))
        else:
            raise ValueError(f"DERsTask.episode_params: strategy must be 'uniform' or 'seeded', got {strategy!r}")
        return self.make_params(split, start, max_steps=max_steps)

    def rollout(self, env, params, key, policy_fn) -> EpisodeTrace:
        return episode_rollout(env, params, key, policy_fn)

    def baseline_names(self) -> tuple[str, ...]:
        return ("no_control", "volt_droop")

    def baseline_policy(self, name: str, params: DistGridParams):
        """The policy of a named baseline.

        **Arguments:**

        - `name`: one of `baseline_names()`.
        - `params`: the episode's params.

        **Returns:**

        `policy(obs, state, key) -> action`.
        """
        if name == "no_control":
            noop = ders_noop_action(params)
            return lambda obs, state, key: noop
        if name == "volt_droop":
            batt, pv, flex = params.resources

            def droop(obs, state, key):
                v_b, v_p, v_f = (state.v_mag[b.bus_idx] for b in (batt, pv, flex))
                q = lambda v: jnp.clip(10.0 * (1.0 - v), -1.0, 1.0)  # noqa: E731
                a_b = jnp.stack([jnp.zeros_like(v_b), q(v_b)], axis=1)
                a_p = jnp.stack([jnp.where(v_p > 1.03, -0.5, 1.0), q(v_p)], axis=1)
                a_f = jnp.stack([jnp.where(v_f < 0.97, 0.5, 0.0), jnp.zeros_like(v_f)], axis=1)
                return jnp.concatenate([a_b.reshape(-1), a_p.reshape(-1), a_f.reshape(-1)])
            return droop
        raise ValueError(f"DERsTask: unknown baseline {name!r}; valid: {self.baseline_names()}")

    def baseline_rollout(self, env, params, key, name: str) -> EpisodeTrace:
        return episode_rollout(env, params, key, self.baseline_policy(name, params))

    def compute_metrics(self, agent_rollout: EpisodeTrace, baseline_rollout: EpisodeTrace | None = None) -> dict[str, float]:
        info = jax.tree.map(np.asarray, agent_rollout.info)
        n_steps = info["p_loss_MW"].shape[-1]
        viol = info["cost_voltage_violation"] > 0
        out = {
            "total_reward": float(np.asarray(agent_rollout.reward).sum(-1).mean()),
            "total_cost": float(info["cost_sum"].sum(-1).mean()),
            "mean_p_loss_mw": float(info["p_loss_MW"].mean()),
            "voltage_violation_steps": float(viol.sum(-1).mean()),
            "voltage_violation_rate": float(viol.sum(-1).mean() / n_steps),
            "undervoltage_min_v": float(info["v_min_step"].min()),
            "overvoltage_max_v": float(info["v_max_step"].max()),
        }
        if baseline_rollout is not None:
            b = jax.tree.map(np.asarray, baseline_rollout.info)
            bl, bc = float(b["p_loss_MW"].mean()), float(b["cost_sum"].sum(-1).mean())
            out["loss_reduction_pct"] = 100.0 * (bl - out["mean_p_loss_mw"]) / max(bl, 1e-9)
            out["cost_reduction_pct"] = 100.0 * (bc - out["total_cost"]) / max(bc, 1e-9)
        return out

    def constraint_spec(self) -> ConstraintSpec:
        return ConstraintSpec(("voltage_violation", "thermal_overload", "resource"), (0.0, 0.0, 0.0), (4.0, 1.0, 1.0))
