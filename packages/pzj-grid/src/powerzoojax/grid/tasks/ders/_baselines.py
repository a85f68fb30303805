"""DERs baselines of the reference API: the do-nothing action, the rollout record, no
control, local Q-V droop, and agents dropping out.
"""

from typing import Any

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from powerzoojax.core import episode_rollout
from powerzoojax.grid.distribution import DistGridEnv, DistGridParams
from powerzoojax.grid.resources import RenewableBundle


def ders_noop_action(params: DistGridParams) -> Float[Array, " action_dim"]:
    """The do-nothing action of every bundle: battery `[P, Q] = 0`, PV `[curtail, Q] = [+1, 0]`
    (+1 = no curtailment), flexible load `[0, 0]`; other bundles 0.

    **Arguments:**

    - `params`: the DERs params.

    **Returns:**

    An `(action_dim,)` float32 array.
    """
    parts = []
    for bundle in params.resources:
        a = np.zeros((bundle.n_devices, bundle.per_device_action_dim), np.float32)
        if isinstance(bundle, RenewableBundle) and bundle.enable_curtailment:
            a[:, 0] = 1.0
        parts.append(a.reshape(-1))
    return jnp.asarray(np.concatenate(parts) if parts else np.zeros((0,), np.float32))


def rollout_ders(env: DistGridEnv, params: DistGridParams, key, policy_fn) -> dict[str, Array]:
    """One episode (one `lax.scan`) of `policy_fn`.

    **Arguments:**

    - `env`: the env.
    - `params`: its params.
    - `key`: PRNG key.
    - `policy_fn`: `policy(obs, key) -> action`.

    **Returns:**

    `{"reward", "cost_continuous", "p_loss_MW", "v_min_episode", "v_max_episode"}`, each
    `(max_steps,)` (the last two: the step's lowest / highest bus voltage [p.u.]), plus the
    band `metric_v_min`, `metric_v_max` the metrics should use.
    """
    trace = episode_rollout(env, params, key, lambda obs, state, k: policy_fn(obs, k))
    return {
        "reward": trace.reward,
        "cost_continuous": trace.info["cost_continuous"],
        "p_loss_MW": trace.info["p_loss_MW"],
        "v_min_episode": trace.info["v_min_step"],
        "v_max_episode": trace.info["v_max_step"],
        "metric_v_min": params.v_min,
        "metric_v_max": params.v_max,
    }


def ders_no_control_rollout(env: DistGridEnv, params: DistGridParams, key) -> dict[str, Array]:
    """Baseline: [`ders_noop_action`][powerzoojax.grid.tasks.ders.ders_noop_action] every step.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_ders`.

    **Returns:**

    The [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record.
    """
    noop = ders_noop_action(params)
    return rollout_ders(env, params, key, lambda obs, k: noop)


def ders_volt_droop_rollout(env: DistGridEnv, params: DistGridParams, key) -> dict[str, Array]:
    """Baseline: local Q–V droop.

    Battery `P = 0`, `Q = clip(10(1 − v), ±1)`; PV curtails to 75 % (action −0.5) above
    1.03 p.u., same Q droop; flexible loads curtail half below 0.97 p.u.; voltages read
    from the observation's first N entries.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_ders`.

    **Returns:**

    The [`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] record.
    """
    batt, pv, flex = params.resources
    n = params.network.n_nodes

    def policy(obs, k):
        v = 1.0 + 0.1 * obs[:n]
        q = lambda u: jnp.clip(10.0 * (1.0 - u), -1.0, 1.0)  # noqa: E731
        v_b, v_p, v_f = v[batt.bus_idx], v[pv.bus_idx], v[flex.bus_idx]
        a_b = jnp.stack([jnp.zeros_like(v_b), q(v_b)], axis=1)
        a_p = jnp.stack([jnp.where(v_p > 1.03, -0.5, 1.0), q(v_p)], axis=1)
        a_f = jnp.stack([jnp.where(v_f < 0.97, 0.5, 0.0), jnp.zeros_like(v_f)], axis=1)
        return jnp.concatenate([a_b.reshape(-1), a_p.reshape(-1), a_f.reshape(-1)]).astype(jnp.float32)

    return rollout_ders(env, params, key, policy)


def agent_dropout_rollout(
    env: DistGridEnv, params: DistGridParams, key, policy_fn=None, n_dropout: int = 2, seed: int = 0
) -> dict[str, Any]:
    """[`rollout_ders`][powerzoojax.grid.tasks.ders.rollout_ders] with `n_dropout` devices
    offline: their action is the device's no-op at every step.

    **Arguments:**

    - `env`, `params`, `key`: as for `rollout_ders`.
    - `policy_fn`: `policy(obs, key) -> action`; `None` is the no-op for everyone.
    - `n_dropout`: number of devices dropped.
    - `seed`: seed of the draw of the dropped devices.

    **Returns:**

    The record, plus `dropped_agent_indices` (device order = agent order of the MARL
    adapter).
    """
    sizes = [b.per_device_action_dim for b in params.resources for _ in range(b.n_devices)]
    n_agents = len(sizes)
    if not 0 <= int(n_dropout) <= n_agents:
        raise ValueError(f"agent_dropout_rollout: n_dropout must be in 0..{n_agents}, got {n_dropout!r}")
    dropped = sorted(int(a) for a in np.random.default_rng(seed).choice(n_agents, size=int(n_dropout), replace=False))
    starts = np.cumsum([0] + sizes[:-1])
    keep = np.ones(sum(sizes), np.float32)
    for a in dropped:
        keep[starts[a] : starts[a] + sizes[a]] = 0.0
    keep_j, noop = jnp.asarray(keep), ders_noop_action(params)
    base = policy_fn if policy_fn is not None else (lambda obs, k: noop)
    out: dict[str, Any] = rollout_ders(env, params, key, lambda obs, k: keep_j * base(obs, k) + (1.0 - keep_j) * noop)
    out["dropped_agent_indices"] = dropped
    return out
