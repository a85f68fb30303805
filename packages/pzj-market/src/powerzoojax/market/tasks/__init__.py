"""Frozen benchmark tasks built on the market envs (spec §4.2): GenCos."""
