"""Process-wide XLA:CPU settings for the benchmark scripts; import before JAX.

XLA reads ``XLA_FLAGS`` once, when its CPU backend starts, so every setting here must
run before the first ``import jax``; the scripts import this module (directly or through
``_host_devices``) above it.

``one_core`` is the single-core setting: XLA:CPU has no flag that caps its intra-op
thread pool (the ``intra_op_parallelism_threads=1`` of earlier "1-thread" commands was
not an XLA flag, and XLA ignored it), so the process is pinned to one CPU, which is what
``taskset -c 0`` does, and Eigen's own threading is switched off.
"""

import os


def add_xla_flags(*flags: str) -> None:
    """Append ``flags`` to ``XLA_FLAGS``, keeping whatever the caller already set."""
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *flags]).strip()


def one_core() -> int:
    """Pin this process (and the threads XLA will start) to its first allowed CPU; returns it."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    add_xla_flags("--xla_cpu_multi_thread_eigen=false")
    return cpu
