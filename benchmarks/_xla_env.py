"""Process-wide XLA settings for the benchmark scripts; import before JAX.

XLA reads ``XLA_FLAGS`` once, when its backend starts, so every setting here must run
before the first ``import jax``; the scripts import this module (directly or through
``_host_devices``) above it.

``one_core`` is the single-core setting: XLA:CPU has no flag that caps its intra-op
thread pool (the ``intra_op_parallelism_threads=1`` of earlier "1-thread" commands was
not an XLA flag, and XLA ignored it), so the process is pinned to one CPU, which is what
``taskset -c 0`` does, and Eigen's own threading is switched off.

The CPU tuning flags (``--xla_cpu_*``, forced host devices) are dropped, with a note on
stderr, when the run targets a GPU (``JAX_PLATFORMS`` names ``cuda``, ``gpu`` or
``rocm``, as ``suite.py --device gpu`` sets it, or ``tpu``): they tune a backend that is not used.
"""

import os
import sys

CPU_ONLY_PREFIXES = ("--xla_cpu_", "--xla_force_host_platform_device_count")


def targets_gpu() -> bool:
    """Whether ``JAX_PLATFORMS`` asks for an accelerator (GPU or TPU) backend."""
    platforms = os.environ.get("JAX_PLATFORMS", "").lower().split(",")
    return any(p.strip() in ("cuda", "gpu", "rocm", "tpu") for p in platforms)


def add_xla_flags(*flags: str) -> None:
    """Append ``flags`` to ``XLA_FLAGS``, keeping whatever the caller already set; on a GPU
    run the XLA:CPU-only ones are left out."""
    if targets_gpu():
        dropped = [f for f in flags if f.startswith(CPU_ONLY_PREFIXES)]
        if dropped:
            sys.stderr.write(f"# GPU run: XLA:CPU flags not applied: {' '.join(dropped)}\n")
        flags = tuple(f for f in flags if f not in dropped)
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *flags]).strip()


def one_core() -> int:
    """Pin this process (and the threads XLA will start) to its first allowed CPU; returns it."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    add_xla_flags("--xla_cpu_multi_thread_eigen=false")
    return cpu
