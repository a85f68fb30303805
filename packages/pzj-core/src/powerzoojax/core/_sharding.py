"""Multi-device batched rollouts: the same program, env axis sharded over a device mesh.

Nothing here changes the maths: `batch_rollout(..., mesh=m)` equals the unsharded
call; XLA partitions the `vmap` axis across the mesh's devices and keeps params
replicated.
The mesh may span several processes (after
`powerzoojax.core.init_distributed`): the same jitted call then runs in every
process, each stepping the envs of its own devices, with global arrays in and out
(`powerzoojax.core.put_global`, `powerzoojax.core.gather_to_host`).
"""

from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Array, PyTree

from powerzoojax.core._environment import EnvParams, Environment
from powerzoojax.core._rollout import scan_rollout

ENV_AXIS = "envs"


def make_env_mesh(devices: Sequence[jax.Device] | None = None, axis_name: str = ENV_AXIS) -> Mesh:  # pyright: ignore[reportInvalidTypeForm]
    """A 1-D mesh named `axis_name` over `devices`.

    **Arguments:**

    - `devices`: the mesh's devices; default `jax.devices()`, every device of every
      process (in a single-process run, its local devices), ordered by process.
    - `axis_name`: the name of the env axis.

    **Returns:**

    A `jax.sharding.Mesh` of shape `(len(devices),)`.
    """
    devs = list(jax.devices() if devices is None else devices)
    if not devs:
        raise ValueError("make_env_mesh: no devices given")
    return Mesh(np.asarray(devs), (axis_name,))


def env_sharding(mesh: Mesh, axis_name: str = ENV_AXIS) -> NamedSharding:
    """Sharding that splits an array's leading (env) axis over `mesh`.

    **Arguments:**

    - `mesh`: the device mesh.
    - `axis_name`: the mesh axis to split over.

    **Returns:**

    A `NamedSharding`.
    """
    return NamedSharding(mesh, PartitionSpec(axis_name))


def shard_envs(tree: PyTree, mesh: Mesh, axis_name: str = ENV_AXIS) -> PyTree:
    """Constrain every leaf's leading axis to be split over `mesh` (usable in and out of jit).

    **Arguments:**

    - `tree`: pytree of arrays with a leading env axis.
    - `mesh`: the device mesh.
    - `axis_name`: the mesh axis to split over.

    **Returns:**

    `tree` with sharding constraints. Raises `ValueError` if a leading axis is not
    divisible by the mesh size.
    """
    n_dev = mesh.shape[axis_name]
    for leaf in jax.tree.leaves(tree):
        n = leaf.shape[0] if leaf.ndim else None
        if n is None or n % n_dev:
            raise ValueError(
                f"shard_envs: leading (env) axis {n} of a leaf with shape {leaf.shape} "
                f"must be divisible by the {n_dev} devices of the mesh"
            )
    sharding = env_sharding(mesh, axis_name)
    return jax.tree.map(lambda x: jax.lax.with_sharding_constraint(x, sharding), tree)


def batch_rollout(
    env: Environment,
    keys: Array,
    init_states: PyTree,
    params: EnvParams,
    actions: PyTree,
    *,
    mesh: Mesh | None = None,
) -> tuple[PyTree, Array, Array, Array, Array, dict[str, Array]]:
    """`vmap(scan_rollout)` over envs; with `mesh` the env axis is sharded across devices.

    **Arguments:**

    - `env`: the env.
    - `keys`: `(N, 2)` PRNG keys, one per env copy.
    - `init_states`: states with a leading `N` axis.
    - `params`: params shared by the batch.
    - `actions`: `(N, T, *action_shape)` actions.
    - `mesh`: device mesh from [`make_env_mesh`][powerzoojax.core.make_env_mesh]; `None`
      runs on the default device. `N` must be divisible by the mesh size.

    **Returns:**

    The [`scan_rollout`][powerzoojax.core.scan_rollout] tuple with a leading `N` axis on
    every output.
    """
    if mesh is not None:
        keys, init_states, actions = shard_envs((keys, init_states, actions), mesh)

    def single(key, state, action_seq):
        return scan_rollout(env, key, state, params, action_seq)

    out = jax.vmap(single)(keys, init_states, actions)
    if mesh is not None:
        out = shard_envs(out, mesh)
    return out
