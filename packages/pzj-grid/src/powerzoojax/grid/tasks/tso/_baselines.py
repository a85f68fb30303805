"""Rule-based TSO baselines: commit everything, or commit by merit order; their policies
and the reference's dict-of-arrays rollouts.
"""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from powerzoojax.case import CaseData
from powerzoojax.core._task import episode_rollout
from powerzoojax.grid.transmission import UCParams, UCState, UnitCommitmentEnv


def tso_all_on_policy(params: UCParams):
    """Commit everything (+1), neutral dispatch preference (0).

    **Arguments:**

    - `params`: the episode's params.

    **Returns:**

    `policy(obs, state, key) -> action`.
    """
    n = params.case.n_units
    action = jnp.concatenate([jnp.ones((n,), jnp.float32), jnp.zeros((n,), jnp.float32)])
    return lambda obs, state, key: action


def tso_merit_order_policy(params: UCParams):
    """Commit units by ascending marginal cost at half output until
    `Σ p_max ≥ load·(1 + margin)` for the load of the step being decided; neutral dispatch
    preference.

    **Arguments:**

    - `params`: the episode's params.

    **Returns:**

    `policy(obs, state, key) -> action`.
    """
    n = params.case.n_units
    order = jnp.argsort(unit_merit_cost(params.case))
    cum_before = jnp.cumsum(params.case.unit_p_max[order]) - params.case.unit_p_max[order]
    zeros = jnp.zeros((n,), jnp.float32)

    def policy(obs, state: UCState, key):
        row = jnp.minimum(state.episode_start_idx + state.time_step, params.total_load_mw.shape[0] - 1)
        target = params.total_load_mw[row] * (1.0 + params.reserve_margin_frac)
        commit_sorted = cum_before < target
        commit = jnp.zeros((n,), bool).at[order].set(commit_sorted)
        return jnp.concatenate([jnp.where(commit, 1.0, -1.0).astype(jnp.float32), zeros])

    return policy


def unit_merit_cost(case: CaseData) -> Float[Array, " n_units"]:
    """Marginal cost of each unit at half its `p_max` (the merit-order key).

    **Arguments:**

    - `case`: the case.

    **Returns:**

    `(n_units,)` [$/MWh].
    """
    half = 0.5 * case.unit_p_max
    return (case.unit_cost_a * half + case.unit_cost_b) * half + case.unit_cost_c


_BASELINES = {"all_on": tso_all_on_policy, "merit_order": tso_merit_order_policy}


def _rollout_dict(env, params, key, policy) -> dict[str, Array]:
    """One episode as `{info key: (T,) array}` plus `reward` (the reference's rollout
    record; [`compute_tso_metrics`][powerzoojax.grid.tasks.tso.compute_tso_metrics] reads it)."""
    trace = episode_rollout(env, params, key, policy)
    return {**dict(trace.info), "reward": trace.reward}


def tso_all_on_rollout(env: UnitCommitmentEnv, params: UCParams, key) -> dict[str, Array]:
    """Reference baseline: every unit committed, neutral dispatch preference (the DC-OPF
    dispatches).

    **Arguments:**

    - `env`: the [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv].
    - `params`: its params.
    - `key`: PRNG key.

    **Returns:**

    `{info key: (max_steps,) array, "reward": (max_steps,) array}`.
    """
    return _rollout_dict(env, params, key, tso_all_on_policy(params))


def _fixed_count_policy(params: UCParams, n_commit: int):
    n = params.case.n_units
    if not 1 <= int(n_commit) <= n:
        raise ValueError(f"tso_merit_order_rollout: n_commit must be in 1..{n}, got {n_commit!r}")
    order = np.argsort(np.asarray(unit_merit_cost(params.case)), kind="stable")
    commit = np.full(n, -1.0, np.float32)
    commit[order[: int(n_commit)]] = 1.0
    action = jnp.concatenate([jnp.asarray(commit), jnp.zeros((n,), jnp.float32)])
    return lambda obs, state, key: action


def tso_merit_order_rollout(env: UnitCommitmentEnv, params: UCParams, key, n_commit: int | None = None) -> dict[str, Array]:
    """Priority-list baseline (see
    [`tso_merit_order_policy`][powerzoojax.grid.tasks.tso.tso_merit_order_policy]).

    Per step, the cheapest units until `Σ p_max ≥ load·(1 + margin)`, or with `n_commit`
    always that many cheapest units.

    **Arguments:**

    - `env`: the [`UnitCommitmentEnv`][powerzoojax.grid.transmission.UnitCommitmentEnv].
    - `params`: its params.
    - `key`: PRNG key.
    - `n_commit`: fixed number of committed units; `None` follows the load.

    **Returns:**

    `{info key: (max_steps,) array, "reward": (max_steps,) array}`.
    """
    policy = tso_merit_order_policy(params) if n_commit is None else _fixed_count_policy(params, n_commit)
    return _rollout_dict(env, params, key, policy)
