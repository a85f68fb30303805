"""``--host-devices K`` for the CPU benchmarks: K XLA host devices, one env shard each.

XLA:CPU runs most fused kernels of one program on one thread, so a single-device run
leaves the second core of a 2-core box mostly idle. Forcing K host devices
(``--xla_force_host_platform_device_count``) and ``shard_map``-ping the env batch over
them makes each core step its ``N / K`` envs with its own loops; nothing crosses devices
inside a step, so every env computes exactly what it computes alone. A sharding
constraint instead would turn every batched solver's stopping test into a cross-device
reduction.

Import this module before JAX: the flag must be set before the CPU backend starts.
"""

import sys

from _xla_env import add_xla_flags


def host_devices_from_argv() -> int:
    """The value of ``--host-devices`` on the command line (1 when absent)."""
    for i, arg in enumerate(sys.argv[:-1]):
        if arg == "--host-devices":
            return int(sys.argv[i + 1])
    return 1


if host_devices_from_argv() > 1:
    add_xla_flags(f"--xla_force_host_platform_device_count={host_devices_from_argv()}")


def shard_over_hosts(fn, mesh):
    """``fn`` (every argument and output env-major) run per device on its slice of envs."""
    import jax
    from jax.sharding import PartitionSpec

    spec = PartitionSpec(mesh.axis_names[0])
    # check_vma=False: the batched solvers' loops start from constants, which shard_map's
    # varying-axis check rejects although every device computes its own slice.
    return jax.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
