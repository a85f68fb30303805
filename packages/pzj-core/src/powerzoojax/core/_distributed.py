"""Several processes running one program: `jax.distributed` set-up and the moves of
pytrees between each process's host memory and arrays on a mesh that spans processes.

JAX's multi-controller model does the work: every process runs the same Python program,
`jax.devices()` lists the devices of all processes, and a `jax.jit` over arrays
sharded on a mesh of those devices is one program that XLA partitions and links with
collectives. What is here only starts that system with settings that suit the library
(CPU collectives, bounded failure detection) and converts data at its edges: host values
that every process holds alike become global arrays, and global arrays become host
values on every process.
"""

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jaxtyping import PyTree

# A process that stops sending heartbeats for this long is declared dead, and the
# coordination service then stops every other process with a message that names it.
# JAX's own default (100 s) lets a job idle for minutes after a crash.
DEFAULT_HEARTBEAT_TIMEOUT_S = 30
DEFAULT_INIT_TIMEOUT_S = 120


def init_distributed(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_device_ids: int | Sequence[int] | None = None,
    heartbeat_timeout_s: int = DEFAULT_HEARTBEAT_TIMEOUT_S,
    initialization_timeout_s: int = DEFAULT_INIT_TIMEOUT_S,
    cpu_collectives: str = "gloo",
) -> None:
    """Join this process to a multi-process JAX run (`jax.distributed.initialize`).

    Call it first, before anything computes with JAX. With no address, count or rank,
    JAX detects them from the cluster environment (SLURM, Open MPI, Cloud TPU); give all
    three for a run started by hand. Afterwards `jax.devices()` lists every device of
    every process and [`make_env_mesh`][powerzoojax.core.make_env_mesh] spans them.

    CPU devices exchange data through `cpu_collectives` (`"gloo"`; JAX's CPU client
    has no cross-process collectives unless one is chosen); GPU and TPU use their own.

    If a process dies, the others stop (abort with the coordination service's message
    "another task died") within about `heartbeat_timeout_s` seconds instead of waiting
    in a collective forever; if not all processes arrive, start-up fails after
    `initialization_timeout_s`.

    **Arguments:**

    - `coordinator_address`: `"host:port"` of process 0 (every process passes the same).
    - `num_processes`: processes in the run.
    - `process_id`: this process's rank, `0 … num_processes − 1`.
    - `local_device_ids`: the local devices this process uses (default: all).
    - `heartbeat_timeout_s`: seconds without a heartbeat before a process counts as dead.
    - `initialization_timeout_s`: seconds to wait for all processes at start-up.
    - `cpu_collectives`: `jax_cpu_collectives_implementation` (`"gloo"` or `"mpi"`).

    **Returns:**

    Nothing; raises `ValueError` naming the bad argument, or when no argument is given
    and no cluster environment is detected.
    """
    given = {"coordinator_address": coordinator_address, "num_processes": num_processes, "process_id": process_id}
    if any(v is not None for v in given.values()) and any(v is None for v in given.values()):
        missing = [k for k, v in given.items() if v is None]
        raise ValueError(f"init_distributed: give coordinator_address, num_processes and process_id together; missing {missing}")
    if num_processes is not None:
        if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 1:
            raise ValueError(f"init_distributed: num_processes must be a positive integer, got {num_processes!r}")
        if isinstance(process_id, bool) or not isinstance(process_id, int) or not 0 <= process_id < num_processes:
            raise ValueError(f"init_distributed: process_id must be in [0, {num_processes - 1}], got {process_id!r}")
    if coordinator_address is not None:
        host, sep, port = str(coordinator_address).rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"init_distributed: coordinator_address must be 'host:port', got {coordinator_address!r}")
    for name, value in (("heartbeat_timeout_s", heartbeat_timeout_s), ("initialization_timeout_s", initialization_timeout_s)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"init_distributed: {name} must be a positive number of seconds, got {value!r}")
    jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    try:
        jax.distributed.initialize(
            coordinator_address, num_processes, process_id, local_device_ids=local_device_ids,
            initialization_timeout=initialization_timeout_s, heartbeat_timeout_seconds=heartbeat_timeout_s,
        )
    except ValueError as err:
        if coordinator_address is None:
            raise ValueError(
                "init_distributed: no cluster environment detected (SLURM, Open MPI, TPU); give "
                f"coordinator_address, num_processes and process_id ({err})"
            ) from None
        raise


def is_writer() -> bool:
    """Whether this process writes the run's files.

    **Arguments:**

    None.

    **Returns:**

    True on process 0, which is the only process of a single-process run.
    """
    return jax.process_index() == 0


def any_process(flag: bool) -> bool:
    """`flag` or-ed over all processes (a collective: every process must call it).

    Host-side decisions that one process can reach alone (a signal, a full disk) must be
    shared before the next compiled call, or the others would wait in its collectives.

    **Arguments:**

    - `flag`: this process's value.

    **Returns:**

    True when any process passed True.
    """
    if jax.process_count() == 1:
        return bool(flag)
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.asarray(bool(flag)))))


def put_global(tree: PyTree, shardings: Any) -> PyTree:
    """Host values that every process holds alike, as global arrays laid out by `shardings`.

    Each process copies only the slices its own devices hold. Works with one process too,
    where it is `jax.device_put`.

    **Arguments:**

    - `tree`: a pytree of arrays (NumPy or JAX), the same in every process.
    - `shardings`: one `jax.sharding.Sharding`, or a pytree of them matching `tree`.

    **Returns:**

    `tree` with every leaf a `jax.Array` of the same global shape.
    """
    if isinstance(shardings, jax.sharding.Sharding):
        shardings = jax.tree.map(lambda _: shardings, tree)

    def put(x, sharding):
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

    return jax.tree.map(put, tree, shardings)


def gather_to_host(tree: PyTree) -> PyTree:
    """Every leaf as a NumPy array of its global value, on every process.

    Leaves split across processes are gathered (a collective: every process must call
    it); replicated or local leaves are copied out directly.

    **Arguments:**

    - `tree`: a pytree of `jax.Array` (global or local) and NumPy arrays.

    **Returns:**

    The same pytree with NumPy leaves (other leaves unchanged).
    """
    leaves, treedef = jax.tree.flatten(tree)
    split = [i for i, x in enumerate(leaves)
             if isinstance(x, jax.Array) and not x.is_fully_addressable and not x.is_fully_replicated]
    out = [np.asarray(x) if isinstance(x, (jax.Array, np.ndarray)) and i not in split else x
           for i, x in enumerate(leaves)]
    if split:
        from jax.experimental import multihost_utils

        # One gather for all split leaves: a collective per leaf would cost a round trip each.
        gathered = multihost_utils.process_allgather([leaves[i] for i in split], tiled=True)
        for i, x in zip(split, gathered):
            out[i] = np.asarray(x)
    return jax.tree.unflatten(treedef, out)
