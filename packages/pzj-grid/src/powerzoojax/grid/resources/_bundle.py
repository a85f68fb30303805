"""The resource-bundle protocol and the helpers a parent env uses to drive a
tuple of bundles without knowing their device types.

A bundle is an immutable struct-of-arrays for `n_devices` devices of one kind: static
`n_devices, per_device_action_dim, per_device_obs_dim, dt_hours`; traced `bus_idx`
(int32, internal bus positions) and per-device arrays. It is an `eqx.Module` pytree, so a
params object holding a tuple of bundles stays vmappable over its array leaves.

Methods:

    bstate = bundle.reset(key)
    bstate, p_inject_mw, q_inject_mvar, obs_slice, cost_info = bundle.step(bstate, action_slice, ctx)
    obs_slice = bundle.observe(bstate, ctx)

`p/q_inject` are per device (n_devices,), positive = injection into the bus. Obs slices
are device-major, `(n_devices · per_device_obs_dim,)`; action slices likewise.
`cost_info` always holds a scalar `cost_sum` (≥ 0, what the parent's `resource`
channel adds up) and may hold the flex-load statistics `curtailed_mw`,
`shift_out_mw`, `shift_in_mw` (scalars, summed over devices).

`ctx` is a dict of what devices may read from the parent: `time_step` (int32 scalar,
always given) and, when the parent has them, `v_mag` (bus voltages, p.u., the
pre-step network state) and `lmp` (bus prices, $/MWh). Bundles must not require more.
"""

import abc
from typing import Any, NamedTuple

import equinox as eqx
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from jaxtyping import Array, Float, Int

from powerzoojax.core import Invariant
from powerzoojax.core._types import Key
from powerzoojax.core import _precision as hp

BundleCtx = dict[str, Any]

# Flex-load statistics the parents report in their info (summed over every bundle).
FLEX_STAT_KEYS = ("curtailed_mw", "shift_out_mw", "shift_in_mw")


class ResourceBundle(eqx.Module):
    """Abstract bundle; subclasses declare `bus_idx` and the four static fields."""

    bus_idx: eqx.AbstractVar[Int[Array, " n_devices"]]
    n_devices: eqx.AbstractVar[int]
    per_device_action_dim: eqx.AbstractVar[int]
    per_device_obs_dim: eqx.AbstractVar[int]
    dt_hours: eqx.AbstractVar[float]

    @property
    def action_dim(self) -> int:
        """Length of the bundle's slice of the parent's action, `n_devices · per_device_action_dim`.
        """
        return self.n_devices * self.per_device_action_dim

    @property
    def obs_dim(self) -> int:
        """Length of the bundle's slice of the parent's observation, `n_devices · per_device_obs_dim`.
        """
        return self.n_devices * self.per_device_obs_dim

    @abc.abstractmethod
    def reset(self, key: Key) -> Any:
        """Initial bundle state.

        **Arguments:**

        - `key`: PRNG key (used by bundles with a random initial state).

        **Returns:**

        The bundle state.
        """

    @abc.abstractmethod
    def step(
        self, bstate: Any, action: Float[Array, " action_dim"], ctx: BundleCtx
    ) -> tuple[Any, Float[Array, " n_devices"], Float[Array, " n_devices"], Float[Array, " obs_dim"], dict]:
        """Advance every device of the bundle one step.

        **Arguments:**

        - `bstate`: the bundle state.
        - `action`: `(action_dim,)` the bundle's slice of the action, device-major.
        - `ctx`: what the parent env tells its bundles, e.g. `{"time_step", "v_mag"}`
          (pre-step voltages [p.u.]).

        **Returns:**

        `(bstate', p_inject_mw (n_devices,), q_inject_mvar (n_devices,), obs_slice (obs_dim,),
        cost_info)`: injections [MW, MVAr] into the devices' buses and a dict of costs.
        """

    @abc.abstractmethod
    def observe(self, bstate: Any, ctx: BundleCtx) -> Float[Array, " obs_dim"]:
        """Observation slice of `bstate` (device-major).

        **Arguments:**

        - `bstate`: the bundle state.
        - `ctx`: the parent's context, as for `step`.

        **Returns:**

        An `(obs_dim,)` array.
        """

    def physics_invariants(self) -> tuple[Invariant, ...]:
        """The laws this bundle's transitions obey.

        A grid env that attaches the bundle checks these laws beside its own, named
        `resources[k].<law>`. Each law's residual is called as `residual(trajectory, bundle)`
        on a [`Trajectory`][powerzoojax.core.Trajectory] whose `state` and `next_state` are
        this bundle's states (leading time axis, then the device axis) and whose `done` and
        `info` are the parent's, so [`not_terminal`][powerzoojax.core.not_terminal] applies.

        **Returns:**

        A tuple of [`Invariant`][powerzoojax.core.Invariant]; `()` (the default) declares none.
        """
        return ()


class BundlesStep(NamedTuple):
    """Result of [`step_bundles`][powerzoojax.grid.resources.step_bundles]: everything a parent
    needs, summed over bundles.

    **Arguments:**

    - `states`: the new bundle states, in bundle order.
    - `p_bus_mw`, `q_bus_mvar`: `(n_bus,)` injections per bus [MW, MVAr].
    - `obs`: the bundles' observation slices, concatenated.
    - `cost_sum`: the bundles' `cost_sum`, summed.
    - `stats`: summed statistics (`curtailed_mw`, `shift_out_mw`, `shift_in_mw`, ...).
    """

    states: tuple
    p_bus_mw: Float[Array, " n_bus"]
    q_bus_mvar: Float[Array, " n_bus"]
    obs: Float[Array, " bundle_obs"]
    cost_sum: Float[Array, ""]
    stats: dict


def bundles_action_dim(bundles: tuple) -> int:
    """Total action length of `bundles`.

    **Arguments:**

    - `bundles`: tuple of [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle].

    **Returns:**

    An int.
    """
    return sum(b.action_dim for b in bundles)


def bundles_obs_dim(bundles: tuple) -> int:
    """Total observation length of `bundles`.

    **Arguments:**

    - `bundles`: tuple of [`ResourceBundle`][powerzoojax.grid.resources.ResourceBundle].

    **Returns:**

    An int.
    """
    return sum(b.obs_dim for b in bundles)


def reset_bundles(bundles: tuple, key: Key) -> tuple:
    """Reset every bundle with its own key split off `key`.

    **Arguments:**

    - `bundles`: tuple of bundles.
    - `key`: PRNG key.

    **Returns:**

    The tuple of bundle states.
    """
    if not bundles:
        return ()
    keys = jr.split(key, len(bundles))
    return tuple(b.reset(k) for b, k in zip(bundles, keys))


def observe_bundles(bundles: tuple, states: tuple, ctx: BundleCtx) -> Float[Array, " bundle_obs"]:
    """The bundles' observation slices, concatenated in bundle order.

    **Arguments:**

    - `bundles`: tuple of bundles.
    - `states`: their states.
    - `ctx`: the parent's context.

    **Returns:**

    A 1-D array (`(0,)` without bundles).
    """
    if not bundles:
        return jnp.zeros((0,), jnp.float32)
    return jnp.concatenate([b.observe(s, ctx) for b, s in zip(bundles, states)])


def step_bundles(
    bundles: tuple, states: tuple, action: Float[Array, " bundle_act"], ctx: BundleCtx, n_bus: int
) -> BundlesStep:
    """Step every bundle on its slice of `action` (in bundle order) and add the injections
    onto `n_bus` buses.

    **Arguments:**

    - `bundles`: tuple of bundles.
    - `states`: their states.
    - `action`: the bundles' concatenated actions.
    - `ctx`: the parent's context.
    - `n_bus`: number of buses.

    **Returns:**

    A [`BundlesStep`][powerzoojax.grid.resources.BundlesStep].
    """
    cost_sum = jnp.zeros((), jnp.float32)
    stats = {k: jnp.zeros((), jnp.float32) for k in FLEX_STAT_KEYS}
    new_states, obs, p_dev, q_dev, bus_idx = [], [], [], [], []
    offset = 0
    for bundle, bstate in zip(bundles, states):
        a = action[offset : offset + bundle.action_dim]
        offset += bundle.action_dim
        bstate, p, q, o, info = bundle.step(bstate, a, ctx)
        p_dev.append(jnp.asarray(p, jnp.float32))
        q_dev.append(jnp.asarray(q, jnp.float32))
        bus_idx.append(bundle.bus_idx)
        cost_sum = cost_sum + jnp.asarray(info["cost_sum"], jnp.float32)
        for k in FLEX_STAT_KEYS:
            if k in info:
                stats[k] = stats[k] + info[k]
        new_states.append(bstate)
        obs.append(o)
    if not bundles:
        zero = jnp.zeros((n_bus,), jnp.float32)
        return BundlesStep((), zero, zero, jnp.zeros((0,), jnp.float32), cost_sum, stats)
    # Every device of every bundle onto its bus with one product by a one-hot incidence
    # matrix: no scatter (a batched scatter is a serial loop on a CPU), and a dot reads the
    # injections once, where an elementwise add chain over devices gets the devices' whole
    # step fused into it and recomputed for every bus.
    to_bus = (jnp.concatenate(bus_idx)[:, None] == jnp.arange(n_bus)[None, :]).astype(jnp.float32)
    p_bus = hp.dot(jnp.concatenate(p_dev), to_bus)
    q_bus = hp.dot(jnp.concatenate(q_dev), to_bus)
    return BundlesStep(tuple(new_states), p_bus, q_bus, jnp.concatenate(obs), cost_sum, stats)


# ----------------------------------------------------------------------------- host helpers


def resolve_bus_ids(caller: str, node_ids: Any, bus_ids: Any, n_devices: int) -> np.ndarray:
    """External bus ids → internal positions through `node_ids` (the case's bus numbers).

    **Arguments:**

    - `caller`: name used in error messages.
    - `node_ids`: `(n_nodes,)` the case's bus numbers.
    - `bus_ids`: bus numbers of the devices; `None` (busless) gives `arange(n_devices)`.
    - `n_devices`: number of devices.

    **Returns:**

    An `(n_devices,)` int32 NumPy array. Raises `ValueError` for an unknown bus number.
    """
    if bus_ids is None:
        return np.arange(n_devices, dtype=np.int32)
    ids = np.atleast_1d(np.asarray(bus_ids))
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{caller}: bus_ids must be a 1-D sequence of integer bus ids, got {bus_ids!r}")
    if node_ids is None:
        raise ValueError(f"{caller}: bus_ids given without a case to resolve them against")
    nodes = np.asarray(node_ids).astype(np.int64)
    position = {int(b): k for k, b in enumerate(nodes)}
    out = []
    for b in ids:
        if int(b) not in position:
            raise ValueError(
                f"{caller}: bus id {int(b)} is not in the case; valid bus ids are "
                f"{int(nodes.min())}..{int(nodes.max())} ({nodes.size} buses)"
            )
        out.append(position[int(b)])
    return np.asarray(out, np.int32)


def device_array(
    caller: str, name: str, value: Any, n_devices: int, *, positive: bool = False, non_negative: bool = False
) -> Float[Array, " n_devices"]:
    """A scalar or length-`n_devices` argument as a finite float32 `(n_devices,)` array."""
    arr = np.asarray(value, dtype=np.float64) if not isinstance(value, str) else None
    if arr is None or arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n_devices):
        raise ValueError(
            f"{caller}: {name} must be a scalar or have length n_devices={n_devices}, got {value!r}"
        )
    arr = np.broadcast_to(arr, (n_devices,))
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{caller}: {name} must be finite, got {value!r}")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{caller}: {name} must be > 0, got {value!r}")
    if non_negative and np.any(arr < 0):
        raise ValueError(f"{caller}: {name} must be >= 0, got {value!r}")
    return jnp.asarray(arr, jnp.float32)


def n_devices_of(caller: str, n_devices: Any, bus_ids: Any) -> int:
    """Device count from `n_devices` or the length of `bus_ids` (which must agree)."""
    if bus_ids is not None:
        n = int(np.atleast_1d(np.asarray(bus_ids)).shape[0])
        if n_devices is not None and int(n_devices) != n:
            raise ValueError(f"{caller}: n_devices={n_devices} but {n} bus ids were given")
        return n
    if n_devices is None or isinstance(n_devices, bool) or int(n_devices) <= 0:
        raise ValueError(f"{caller}: n_devices must be a positive integer, got {n_devices!r}")
    return int(n_devices)
