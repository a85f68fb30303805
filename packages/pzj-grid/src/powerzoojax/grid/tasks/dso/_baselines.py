"""Rule-based DSO baselines of the reference API: no control, a time-of-use rule and a
voltage-droop rule, each rolled out into the dict-of-arrays record.
"""

import jax.numpy as jnp
from jaxtyping import Array

from powerzoojax.core import episode_rollout
from powerzoojax.grid.distribution import DistGridEnv, DistGridParams
from powerzoojax.grid.resources import FlexLoadBundle


# Rollout record key -> env info key (one (T,) array each).
_DSO_RECORD = {
    "losses": "p_loss_MW", "violations": "n_violations", "voltage_violations": "cost_voltage_violation",
    "thermal_violations": "cost_thermal_overload", "curtailed": "resource_curtailed_mw",
    "shifted": "resource_shift_out_mw", "shift_in": "resource_shift_in_mw",
}


def rollout_dso(env: DistGridEnv, params: DistGridParams, key, policy_fn, max_steps: int | None = None) -> dict[str, Array]:
    """One episode (one `lax.scan`) of `policy_fn`.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key.
    - `policy_fn`: `policy(obs, state, key) -> action`.
    - `max_steps`: episode length; `None` takes `params.max_steps`.

    **Returns:**

    `{"rewards", "losses", "violations", "voltage_violations", "thermal_violations",
    "curtailed", "shifted", "shift_in"}`, each `(max_steps,)`.
    """
    trace = episode_rollout(env, params, key, policy_fn, n_steps=max_steps)
    return {"rewards": trace.reward, **{k: trace.info[v] for k, v in _DSO_RECORD.items()}}


def _flex_bundle(params: DistGridParams) -> FlexLoadBundle:
    for bundle in params.resources:
        if isinstance(bundle, FlexLoadBundle):
            return bundle
    raise ValueError("DSO baselines need a FlexLoadBundle in params.resources")


def _dso_action_dim(params: DistGridParams) -> int:
    return sum(b.action_dim for b in params.resources) + (params.network.n_nodes - 1) * int(params.include_der)


def dso_no_control_rollout(env: DistGridEnv, params: DistGridParams, key) -> dict[str, Array]:
    """Baseline: zero action every step.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_dso`.

    **Returns:**

    The [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.
    """
    zeros = jnp.zeros((_dso_action_dim(params),), jnp.float32)
    return rollout_dso(env, params, key, lambda obs, state, k: zeros)


def _flex_action(params: DistGridParams, flex_action: Array) -> Array:
    """Place the flexible loads' `(2·n_dev,)` action in the env's full action vector."""
    out = jnp.zeros((_dso_action_dim(params),), jnp.float32)
    start = (params.network.n_nodes - 1) * int(params.include_der)
    for bundle in params.resources:
        if isinstance(bundle, FlexLoadBundle):
            return out.at[start : start + bundle.action_dim].set(flex_action)
        start += bundle.action_dim
    raise ValueError("DSO baselines need a FlexLoadBundle in params.resources")


def dso_tou_rule_based_rollout(env: DistGridEnv, params: DistGridParams, key, peak_start: int = 16, peak_end: int = 21) -> dict[str, Array]:
    """Time-of-use rule: every device curtails 80 % and shifts out 50 % on day steps
    `[peak_start, peak_end)`, nothing otherwise.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_dso`.
    - `peak_start`, `peak_end`: peak window [steps of the day].

    **Returns:**

    The [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.
    """
    n_dev = _flex_bundle(params).n_devices
    spd = params.steps_per_day

    def policy(obs, state, k):
        t = state.time_step % spd
        on = ((t >= peak_start) & (t < peak_end)).astype(jnp.float32)
        return _flex_action(params, jnp.tile(jnp.asarray([0.8, 0.5], jnp.float32), n_dev) * on)

    return rollout_dso(env, params, key, policy)


def dso_droop_rule_based_rollout(env: DistGridEnv, params: DistGridParams, key, v_low: float = 0.96, v_high: float = 1.04) -> dict[str, Array]:
    """Voltage-droop rule per device from its bus voltage.

    Curtail `clip((v_low − v)/0.04, 0, 1)`, shift out `clip((v_low − v)/0.06, 0, 0.5)`; at
    `v ≥ v_low` no action, so deferred load is released.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_dso`.
    - `v_low`: voltage below which devices act [p.u.].
    - `v_high`: upper band edge [p.u.] (no action above `v_low`).

    **Returns:**

    The [`rollout_dso`][powerzoojax.grid.tasks.dso.rollout_dso] record.
    """
    del v_high  # above the band the rule already does nothing
    bus_idx = _flex_bundle(params).bus_idx

    def policy(obs, state, k):
        v = state.v_mag[bus_idx]
        curtail = jnp.clip((v_low - v) / 0.04, 0.0, 1.0)
        shift = jnp.clip((v_low - v) / 0.06, 0.0, 0.5)
        return _flex_action(params, jnp.stack([curtail, shift], axis=1).reshape(-1))

    return rollout_dso(env, params, key, policy)


dso_tou_heuristic_rollout = dso_tou_rule_based_rollout
dso_droop_heuristic_rollout = dso_droop_rule_based_rollout
