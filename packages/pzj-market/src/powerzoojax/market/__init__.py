"""Electricity markets (pzj-market): in-graph clearing and market environments.

The clearing kernels and market envs land with the markets issue; this package is the
distribution's skeleton so the namespace and the workspace are complete.
"""

__all__: list[str] = []
