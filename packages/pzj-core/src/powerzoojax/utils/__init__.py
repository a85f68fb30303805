"""Seed-facing names (`powerzoojax.utils.jax_utils`)."""

from powerzoojax.utils.jax_utils import batch_reset, batch_step, scan_rollout, split_key_for_envs

__all__ = ["batch_reset", "batch_step", "scan_rollout", "split_key_for_envs"]
