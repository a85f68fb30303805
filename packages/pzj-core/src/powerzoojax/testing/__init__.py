"""Testing tools for envs of this library and of yours.

* The conformance kit every env in the project passes: [`check_env_api`][powerzoojax.testing.check_env_api] (the env
  contract, jit = eager, vmap = loop, auto-reset, determinism) and
  [`check_no_retrace`][powerzoojax.testing.check_no_retrace] (one compiled program across steps, episodes and param values).
* Invariant checks on recorded rollouts: [`check_invariants`][powerzoojax.testing.check_invariants] /
  [`assert_invariants`][powerzoojax.testing.assert_invariants] (the shared contract plus the physics each env declares in
  `physics_invariants`) and [`env_property_test`][powerzoojax.testing.env_property_test], a one-line hypothesis property test.
* `powerzoojax.testing.strategies`: hypothesis strategies for cases, line outages,
  load profiles, params keyword sets, actions (valid or not), PRNG keys and multi-agent
  action dicts (needs the `testing` extra, which installs hypothesis).
"""

from powerzoojax.core import Invariant, Trajectory, not_terminal
from powerzoojax.testing._checks import check_env_api, check_no_retrace
from powerzoojax.testing._invariants import (
    Violation,
    assert_invariants,
    check_invariants,
    env_property_test,
    record_trajectory,
)

__all__ = [
    "Invariant",
    "Trajectory",
    "Violation",
    "assert_invariants",
    "check_env_api",
    "check_invariants",
    "check_no_retrace",
    "env_property_test",
    "not_terminal",
    "record_trajectory",
]
