"""Agents of the grid MARL adapters: one per scalar set-point of the parent env (units or
DERs) followed by one per device of each resource bundle, and the index arrays that map
between the env's flat observation / action vectors and the agents' stacked ones.

Both ``TransGridEnv`` and ``DistGridEnv`` lay out their action as ``[one entry per
fixed agent | bundle slices in bundle order, device-major]`` and their observation as
``[core | bundle observations in bundle order, device-major]``, so one layout serves both.

Bundle agents are named ``<BundleClass minus "Bundle", lowercased>_<index within that
type>``: two ``BatteryBundle``\\ s of 2 devices each give ``battery_0 … battery_3``.
"""

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int


def bundle_type_name(bundle: Any) -> str:
    """``BatteryBundle`` → ``battery``, ``FlexLoadBundle`` → ``flexload``."""
    name = type(bundle).__name__
    return (name[: -len("Bundle")] if name.endswith("Bundle") else name).lower()


class DeviceLayout(NamedTuple):
    """Host-built layout of the agents (see the module docstring)."""

    names: tuple[str, ...]
    own_obs_idx: np.ndarray  # (A, own_dim) int: entries of the env obs that form each agent's own slice
    own_obs_mask: np.ndarray  # (A, own_dim) float: 0 on padding
    action_src: np.ndarray  # (env action dim,) int: flat index into the stacked (A · action_dim) actions
    action_dim: int
    own_dim: int


def device_layout(prefix: str, fixed_obs_idx: list[list[int]], bundles: tuple, bundle_obs_start: int) -> DeviceLayout:
    """Layout for ``len(fixed_obs_idx)`` fixed agents ``<prefix>_i`` (one action entry each,
    own observation ``obs[fixed_obs_idx[i]]``) followed by every bundle device; bundle
    observations start at ``bundle_obs_start`` of the env observation."""
    names = [f"{prefix}_{i}" for i in range(len(fixed_obs_idx))]
    own = [list(ix) for ix in fixed_obs_idx]
    act_dims = [1] * len(fixed_obs_idx)
    counters: dict[str, int] = {}
    offset = bundle_obs_start
    for bundle in bundles:
        kind = bundle_type_name(bundle)
        for d in range(bundle.n_devices):
            names.append(f"{kind}_{counters.get(kind, 0)}")
            counters[kind] = counters.get(kind, 0) + 1
            start = offset + d * bundle.per_device_obs_dim
            own.append(list(range(start, start + bundle.per_device_obs_dim)))
            act_dims.append(bundle.per_device_action_dim)
        offset += bundle.obs_dim
    if len(set(names)) != len(names):
        raise ValueError(f"agent names collide: {names}")
    action_dim = max(act_dims)
    own_dim = max(len(ix) for ix in own)
    idx = np.zeros((len(names), own_dim), np.int32)
    mask = np.zeros((len(names), own_dim), np.float32)
    for a, ix in enumerate(own):
        idx[a, : len(ix)] = ix
        mask[a, : len(ix)] = 1.0
    src = np.concatenate([a * action_dim + np.arange(n, dtype=np.int32) for a, n in enumerate(act_dims)])
    return DeviceLayout(tuple(names), idx, mask, src.astype(np.int32), int(action_dim), int(own_dim))


def gather_own(
    obs: Float[Array, " env_obs"], idx: Int[Array, "n_agents own"], mask: Float[Array, "n_agents own"]
) -> Float[Array, "n_agents own"]:
    """Each agent's own slice of the env observation, zero-padded."""
    return obs[idx] * mask


def pack_actions(actions: Float[Array, "n_agents action_dim"], src: Int[Array, " env_act"]) -> Float[Array, " env_act"]:
    """Stacked per-agent actions → the env's flat action vector (padding entries dropped)."""
    return jnp.reshape(actions, (-1,))[src]
