"""Agents of the grid MARL adapters: one per scalar set-point of the parent env (units or
DERs) followed by one per device of each resource bundle, and the index arrays that map
between the env's flat observation / action vectors and the agents' stacked ones.

Both `TransGridEnv` and `DistGridEnv` lay out their action as `[one entry per
fixed agent | bundle slices in bundle order, device-major]` and their observation as
`[core | bundle observations in bundle order, device-major]`, so one layout serves both.

Bundle agents are named `<BundleClass minus "Bundle", lowercased>_<index within that
type>`: two `BatteryBundle`s of 2 devices each give `battery_0 … battery_3`.
"""

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int
from powerzoojax.core._types import Info, Key
from powerzoojax.rl.marl._multi_agent import MARLState, MultiAgentEnvironment


def bundle_type_name(bundle: Any) -> str:
    """`BatteryBundle` → `battery`, `FlexLoadBundle` → `flexload`."""
    name = type(bundle).__name__
    return (name[: -len("Bundle")] if name.endswith("Bundle") else name).lower()


class DeviceLayout(eqx.Module):
    """Host-built layout of the agents: which entries of the env's observation form each
    agent's own slice and where each agent's actions go in the env's action vector."""

    names: tuple[str, ...] = eqx.field(static=True)
    own_obs_idx: Int[Array, "n_agents own_dim"]  # entries of the env obs that form each agent's own slice
    own_obs_mask: Float[Array, "n_agents own_dim"]  # 0 on padding
    action_src: Int[Array, " env_action_dim"]  # flat index into the stacked (A · action_dim) actions
    action_dim: int = eqx.field(static=True)
    own_dim: int = eqx.field(static=True)
    agent_action_dims: tuple[int, ...] = eqx.field(static=True)  # each agent's own action size


def device_layout(prefix: str, fixed_obs_idx: list[list[int]], bundles: tuple, bundle_obs_start: int) -> DeviceLayout:
    """Layout for `len(fixed_obs_idx)` fixed agents `<prefix>_i` (one action entry each,
    own observation `obs[fixed_obs_idx[i]]`) followed by every bundle device; bundle
    observations start at `bundle_obs_start` of the env observation."""
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
    src = _action_src(act_dims, action_dim)
    return DeviceLayout(
        tuple(names),
        jnp.asarray(idx),
        jnp.asarray(mask),
        jnp.asarray(src, jnp.int32),
        int(action_dim),
        int(own_dim),
        tuple(int(n) for n in act_dims),
    )


def _action_src(act_dims: list[int] | tuple[int, ...], action_dim: int) -> np.ndarray:
    """Flat index, into the stacked `(A · action_dim)` actions, of each entry of the env's
    action vector: every agent's own entries, padding skipped."""
    return np.concatenate([a * action_dim + np.arange(n, dtype=np.int32) for a, n in enumerate(act_dims)])


def gather_own(
    obs: Float[Array, " env_obs"], idx: Int[Array, "n_agents own"], mask: Float[Array, "n_agents own"]
) -> Float[Array, "n_agents own"]:
    """Each agent's own slice of the env observation, zero-padded."""
    return obs[idx] * mask


def pack_actions(actions: Float[Array, "n_agents action_dim"], src: Int[Array, " env_act"]) -> Float[Array, " env_act"]:
    """Stacked per-agent actions → the env's flat action vector (padding entries dropped)."""
    return jnp.reshape(actions, (-1,))[src]


class DeviceAgentsEnv(MultiAgentEnvironment):
    """What `GridMARLEnv` and `DistGridMARLEnv` share: a parent env (`env`, its
    `params` bound) split into the agents of one `DeviceLayout`.

    Subclasses set `env`, `params`, `core_dim` and `layout` (through
    `_set_layout`) and implement `step_env` with `_env_step`.
    `own_obs_idx`, `own_obs_mask`, `action_src`, `own_dim` and `action_dim`
    read the layout.
    """

    env: Any
    layout: DeviceLayout
    core_dim: int = eqx.field(static=True)

    def _set_layout(self, layout: DeviceLayout) -> None:
        self.layout = layout
        self.agents = layout.names

    @property
    def own_obs_idx(self) -> Int[Array, "n_agents own_dim"]:
        return self.layout.own_obs_idx

    @property
    def own_obs_mask(self) -> Float[Array, "n_agents own_dim"]:
        return self.layout.own_obs_mask

    @property
    def action_src(self) -> Int[Array, " env_action_dim"]:
        return self.layout.action_src

    @property
    def own_dim(self) -> int:
        return self.layout.own_dim

    @property
    def action_dim(self) -> int:
        return self.layout.action_dim

    @property
    def obs_dim(self) -> int:
        """Global observations: the grid core and the agent's own slice."""
        return self.core_dim + self.own_dim

    def _agent_obs(self, obs: Float[Array, " env_obs"]) -> Float[Array, "n_agents obs_dim"]:
        core = jnp.broadcast_to(obs[: self.core_dim], (self.num_agents, self.core_dim))
        return jnp.concatenate([core, gather_own(obs, self.own_obs_idx, self.own_obs_mask)], axis=1)

    def reset_env(self, key: Key, params: Any) -> tuple[Float[Array, "n_agents obs_dim"], MARLState]:
        obs, state = self.env.reset(key, params)
        return self._agent_obs(obs), MARLState(state)

    def _env_step(self, key: Key, state: MARLState, actions: Float[Array, "n_agents action_dim"], params: Any) -> tuple:
        """The parent env's 6-tuple for the packed agent actions, `info` plus
        `constraint_costs` (the env's cost vector) and `cost` (= `cost_sum`)."""
        obs, env_state, reward, costs, done, info = self.env.step(
            key, state.env_state, pack_actions(actions, self.action_src), params
        )
        info: Info = {**info, "constraint_costs": costs, "cost": info["cost_sum"]}
        return obs, env_state, reward, costs, done, info

    def ignored_action_entries(self, params: Any = None) -> np.ndarray | None:
        # Built from the layout's static sizes, not `action_src`: the adapter may be a
        # traced argument, its arrays then unknown while the step is traced.
        dims, width = self.layout.agent_action_dims, self.action_dim
        src = _action_src(dims, width)
        parent = self.env.ignored_action_entries(self._p(params))
        read = np.zeros((len(dims) * width,), bool)
        read[src] = True if parent is None else ~np.asarray(parent, bool)
        return None if read.all() else ~read.reshape(len(dims), width)

    def constraint_names(self) -> tuple[str, ...]:
        return self.env.constraint_names(self.params)
