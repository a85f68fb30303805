"""Compacting driver for batched iterative solvers (AC power flow, radial sweep).

A vmapped `while_loop` runs until its slowest lane, paying full-batch iterations for
the few lanes that need many. The driver runs the whole batch while more than `caps[0]`
lanes are active, gathers the (at most `caps[0]`) active lanes into a batch that size,
continues through `caps[1:]` the same way, runs the last batch to the end and scatters
every stage back. Each lane takes exactly the iterations it takes in the plain loop (the
caller's `run` uses one body and one stopping test); only idle work on finished lanes
is skipped. Every stage is a copy of the loop body in the compiled program, so stages
are few (`MAX_STAGES`).
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool

COMPACT_FACTOR = 4
MAX_STAGES = 2

# run(lanes, carry, cap) iterates every lane until at most `cap` are active;
# active(lanes, carry) is the per-lane stopping test of the same loop.
RunFn = Callable[[Any, Any, int], Any]
ActiveFn = Callable[[Any, Any], Bool[Array, " batch"]]


def compaction_caps(batch: int, min_lanes: int) -> list[int]:
    """Stage sizes `batch/4, batch/16` (at most `MAX_STAGES`), none below `min_lanes`."""
    caps, cap = [], batch
    while cap // COMPACT_FACTOR >= min_lanes and len(caps) < MAX_STAGES:
        cap //= COMPACT_FACTOR
        caps.append(cap)
    return caps


def compacting_loop(
    run: RunFn, active: ActiveFn, lanes: Any, carry: Any, caps: list[int], *, skip_when_done: bool = False
) -> Any:
    """Iterate `carry` (batch-major pytree, per-lane data `lanes`) to the end of every
    lane, compacting through `caps` (`[]`: one plain loop). `skip_when_done`: a
    `lax.cond` skips the gathers and scatters when the first stage finished every lane
    (worth it where that is common, e.g. feeders that all need the same sweeps; the cond
    also changes XLA's fusion of the loop, i.e. float32 round-off)."""
    if not caps:
        return run(lanes, carry, 0)
    carry = run(lanes, carry, caps[0])

    def compact(carry):
        parents, sub_lanes = [], lanes
        for k, cap in enumerate(caps):
            if k > 0:
                carry = run(sub_lanes, carry, cap)
            # The (at most cap) active lanes first; finished fillers ride along unchanged.
            _, idx = lax.top_k(active(sub_lanes, carry).astype(jnp.float32), cap)
            parents.append((carry, idx))
            sub_lanes = jax.tree.map(lambda x, i=idx: x[i], sub_lanes)
            carry = jax.tree.map(lambda x, i=idx: x[i], carry)
        carry = run(sub_lanes, carry, 0)
        for full, idx in reversed(parents):
            carry = jax.tree.map(lambda a, sub, i=idx: a.at[i].set(sub), full, carry)
        return carry

    if not skip_when_done:
        return compact(carry)
    return lax.cond(jnp.any(active(lanes, carry)), compact, lambda c: c, carry)
