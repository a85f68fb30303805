"""The data centre's zone-temperature band [°C].

The thermal model clips the zone temperature to it, the observations scale by its lower
edge, and the laws check that the zone stays inside it. It sits below both the env module
(`._datacenter`) and the laws (`._invariants`), which the env installs.
"""

T_ZONE_MIN, T_ZONE_MAX = 15.0, 45.0
