"""The rollout helpers (and a float64 scope) under the names the documentation uses.

They are the core kernel itself (`powerzoojax.core`), re-exported, not copies.
"""

from powerzoojax.core._distributed import gather_to_host, init_distributed, put_global
from powerzoojax.core._rollout import batch_reset, batch_step, scan_rollout, split_key_for_envs
from powerzoojax.core._sharding import batch_rollout, make_env_mesh, shard_envs
from powerzoojax.core._x64 import enable_x64

__all__ = [
    "batch_reset",
    "batch_rollout",
    "batch_step",
    "enable_x64",
    "gather_to_host",
    "init_distributed",
    "make_env_mesh",
    "put_global",
    "scan_rollout",
    "shard_envs",
    "split_key_for_envs",
]
