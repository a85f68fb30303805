"""Frozen benchmark tasks built on the market envs: GenCos, with the
reference's task API (factories, rollouts, metrics) re-exported here."""

from powerzoojax.market.tasks import gencos
from powerzoojax.market.tasks.gencos import *  # noqa: F403

__all__ = list(gencos.__all__)
