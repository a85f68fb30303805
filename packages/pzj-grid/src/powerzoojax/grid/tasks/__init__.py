"""Frozen benchmark tasks built on the grid envs (spec §4.2): TSO, DSO, DERs, DC microgrid."""
