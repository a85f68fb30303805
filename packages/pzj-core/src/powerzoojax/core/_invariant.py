"""Physics invariants an environment declares about its own transitions.

An env lists the laws its steps must obey (power balance, flows equal to PTDF times
injections, state of charge inside its bounds, ...) through
[`physics_invariants`][powerzoojax.core.Environment.physics_invariants]. Each law is an
[`Invariant`][powerzoojax.core.Invariant]: a host-side NumPy function of a recorded [`Trajectory`][powerzoojax.core.Trajectory] that
returns one residual per step, compared with a tolerance. The checks run after the
rollout, on the host, in float64, so they are independent of the compiled step they
check and cost nothing inside `jit`. [`powerzoojax.testing.check_invariants`][powerzoojax.testing.check_invariants]
evaluates them together with the contract every env shares.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np


class Trajectory(NamedTuple):
    """A recorded rollout as NumPy arrays with a leading time axis `T`.

    `state` is the state each step started from and `next_state` the state it
    returned; on a terminal step (`done`) the returned state is already the next
    episode's first one (auto-reset), so laws about the post-step physics apply to the
    steps where `done` is False. `info` is the step's info dict.

    **Arguments:**

    - `state`: states the steps started from, leaves `(T, ...)`.
    - `action`: `(T, ...)` actions.
    - `obs`: `(T, ...)` observations each step returned.
    - `next_state`: states the steps returned, leaves `(T, ...)`.
    - `reward`: `(T,)` rewards.
    - `costs`: `(T, n_costs)` cost vectors.
    - `done`: `(T,)` episode-end flags.
    - `info`: dict of `(T, ...)` info arrays.
    """

    state: Any
    action: Any
    obs: np.ndarray
    next_state: Any
    reward: np.ndarray
    costs: np.ndarray
    done: np.ndarray
    info: dict[str, np.ndarray]


@dataclass(frozen=True)
class Invariant:
    """A law of an env's transitions.

    `residual(trajectory, params)` returns a float array of shape `(T,)`: how far each
    step is from the law, in the law's own units (MW, p.u., fraction of capacity), NaN
    where it does not apply (e.g. a step whose solver did not converge). A step violates
    the law when its residual exceeds `tol`.

    **Arguments:**

    - `name`: short name of the law, used in violation reports.
    - `residual`: `residual(trajectory, params) -> (T,)` float array.
    - `tol`: largest residual that still obeys the law, in the residual's unit.
    - `doc`: one-line statement of the law.
    """

    name: str
    residual: Callable[[Trajectory, Any], np.ndarray]
    tol: float
    doc: str = ""

    def violations(self, trajectory: Trajectory, params: Any) -> list[tuple[int, float]]:
        """`(step, residual)` of every step that breaks the law (NaN residuals are skipped).

        **Arguments:**

        - `trajectory`: a recorded [`Trajectory`][powerzoojax.core.Trajectory].
        - `params`: the params it was recorded with.

        **Returns:**

        A list of `(step index, residual)` pairs, in step order.
        """
        r = np.asarray(self.residual(trajectory, params), np.float64).reshape(-1)
        bad = np.flatnonzero(np.nan_to_num(r, nan=-np.inf) > self.tol)
        return [(int(t), float(r[t])) for t in bad]


def not_terminal(trajectory: Trajectory, residual: np.ndarray) -> np.ndarray:
    """`residual` with the terminal steps set to NaN (their returned state is a reset).

    **Arguments:**

    - `trajectory`: the recorded rollout.
    - `residual`: `(T,)` residuals of a law.

    **Returns:**

    A `(T,)` float copy of `residual`.
    """
    r = np.asarray(residual, np.float64).copy()
    r[np.asarray(trajectory.done, bool)] = np.nan
    return r
