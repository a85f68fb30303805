"""Testing tools for envs of this library and of yours.

* The conformance kit every env in the project passes: :func:`check_env_api` (the env
  contract, jit = eager, vmap = loop, auto-reset, determinism) and
  :func:`check_no_retrace` (one compiled program across steps, episodes and param values).
* Invariant checks on recorded rollouts: :func:`check_invariants` /
  :func:`assert_invariants` (the shared contract plus the physics each env declares in
  ``physics_invariants``) and :func:`env_property_test`, a one-line hypothesis property test.
* :mod:`powerzoojax.testing.strategies`: hypothesis strategies for cases, line outages,
  load profiles, params keyword sets, actions (valid or not), PRNG keys and multi-agent
  action dicts (needs the ``testing`` extra, which installs hypothesis).
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
