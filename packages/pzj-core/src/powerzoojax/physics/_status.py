"""How an iterative solver ended: one status type shared by every solver of the project.

The dual simplex, the dispatch interior point, the DC-OPF, the offer SCED, the AC power
flow and the AC-OPF all report a `SolverStatus` item in their result's `status`. An item
is a pytree (an int32 leaf and the enumeration as static data), so it passes through
`jit`, `vmap` and `scan` like any array, and a batch of results holds a batch of items.
Compare items with items (`res.status == SolverStatus.successful`), never with integers.

Failure is a value by default: a solver returns its best answer and says how it ended,
so an environment step carries on and records the status in its info. A caller who
wants an error instead passes `throw=True` to the solver, which then raises (through
`equinox.error_if`, also inside `jit`) with the member's message.

The members' order fixes their integer codes (0, 1, 2, ...), which the environments
store in their info dictionaries through `status_code`: 0, 1 and 2 are the codes the
DC-OPF and the SCED have always reported (optimal, infeasible, unconverged).
"""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Int, PyTree


class SolverStatus(eqx.Enumeration):
    """How a solver ended. Members, with the meaning each solver gives them:"""

    successful = "successful: the solver met its tolerance (an optimal, converged answer)"
    infeasible = (
        "infeasible: no point meets every constraint (demand outside the offered capacity, or limits that "
        "cannot all be met); the answer is the solver's best effort"
    )
    max_steps_reached = (
        "max_steps_reached: the iteration ended before meeting its tolerance (the budget ran out, or a solver "
        "that reports no finer cause stopped making progress); the last finite iterate is returned"
    )
    diverged = (
        "diverged: the iteration stopped early without converging (a non-finite step, e.g. a singular Jacobian "
        "at an islanded bus, or a mismatch that stopped falling); the last finite iterate is returned"
    )
    nonfinite = "nonfinite: an iterate turned non-finite (overflow); the starting point is returned instead"


def status_code(status: SolverStatus) -> Int[Array, "*batch"]:
    """The member's integer code, as environments record it in their info.

    **Arguments:**

    - `status`: a `SolverStatus` item (or a batch of them).

    **Returns:**

    Its position in `SolverStatus` (int32, the batch's shape): 0 successful, 1 infeasible,
    2 max_steps_reached, 3 diverged, 4 nonfinite.
    """
    return jnp.asarray(status._value, jnp.int32)


def is_successful(status: SolverStatus) -> Bool[Array, "*batch"]:
    """Whether `status` is `SolverStatus.successful` (element-wise on a batch of items)."""
    return status_code(status) == status_code(SolverStatus.successful)


def raise_if_failed(result: PyTree, status: SolverStatus, throw: bool) -> PyTree:
    """`result`, unchanged; with `throw` (static) an error carrying the member's message
    is raised when `status` is not `successful`, at run time inside `jit` as well."""
    if not throw:
        return result
    return status.error_if(result, ~is_successful(status))


__all__ = ["SolverStatus", "is_successful", "raise_if_failed", "status_code"]
