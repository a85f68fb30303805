"""Frozen benchmark tasks built on the grid envs: TSO, DSO, DERs, DC microgrid.

Each task (`tso`, `dso` and `ders` are packages of small modules, `dc_microgrid` one
module) holds its `TaskSpec` class (`TSOTask`, `DSOTask`, `DERsTask`, `DCMicrogridTask`)
and the reference's task API around it: parameter factories wired to the task's case and
data, baseline rollouts returning per-step records, metrics. Their public names are
re-exported here (`powerzoojax.tasks` forwards to this package).
"""

from powerzoojax.grid.tasks import dc_microgrid, ders, dso, tso
from powerzoojax.grid.tasks.dc_microgrid import *  # noqa: F403
from powerzoojax.grid.tasks.ders import *  # noqa: F403
from powerzoojax.grid.tasks.dso import *  # noqa: F403
from powerzoojax.grid.tasks.tso import *  # noqa: F403

__all__ = sorted({*dc_microgrid.__all__, *ders.__all__, *dso.__all__, *tso.__all__})
