"""Line outages inside `jit`: the PTDF of a case with a traced set of lines opened.

Method: line-outage distribution factors on the whole outage set at once. With
`H = PTDF·Aᵀ` (`H[l, k]`: MW on line `l` per MW moved from line `k`'s from bus to
its to bus), opening the set `O` is simulated by transfers `t_O` across the opened
lines chosen so that each opened line carries exactly its own transfer, i.e. nothing is
left for the rest of the network to see: `t_O = (I − H_OO)⁻¹ PTDF_O`, and
`PTDF' = PTDF + H_·O t_O` with the opened rows set to zero.

The set has a fixed size: `k` slots, each a line and a 0/1 flag `m`, and
`(I − M H M) T = M·PTDF_slots` is one `(k × k)` solve whose unused rows are identity
rows (`T` = 0 there), so the same program serves every outage set and `vmap` over sets
is one batched solve. A boolean mask over all lines is the case `k = L`
([`line_outage_ptdf`][powerzoojax.physics.line_outage_ptdf]); a short list of line indices ([`line_outage_ptdf_of_lines`][powerzoojax.physics.line_outage_ptdf_of_lines])
keeps `k` at the number of simultaneous outages, which is what makes N−1 screening of a
large case cheap.

Why LODF rather than refactorising the reduced `B` in the graph: the host-built PTDF is
float64-accurate, and the only float32 system solved is `I − H_OO`, whose conditioning
is set by the outaged lines alone (`1/(1 − H_kk)` for one line); a float32 inverse of
the reduced `B` carries the conditioning of the whole network instead (2.9e3 on case
118, 1.1e5 on case 300) and costs `(N × N)` per outage set whatever its size. An outage that islands buses makes `I − H_OO` singular; it is detected
exactly on the graph (label propagation), flagged, and the solve is then skipped so that
every value stays finite.
"""

import equinox as eqx
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp


class LineOutagePTDF(eqx.Module):
    """PTDF of a case with some lines opened.

    When `islanded` is True, `ptdf` is the case's PTDF with the opened rows zeroed (no
    redistribution): finite, but not a physical flow pattern.

    **Arguments:**

    - `ptdf`: `(n_lines, n_nodes)` [MW/MW], zero rows for the opened and the already
      out-of-service lines.
    - `line_out`: `(n_lines,)` the outage mask restricted to lines that were in service.
    - `islanded`: bool scalar, the opened lines cut buses off the slack.
    - `node_islanded`: `(n_nodes,)` the buses cut off.
    """

    ptdf: Float[Array, "n_lines n_nodes"]
    line_out: Bool[Array, " n_lines"]
    islanded: Bool[Array, ""]
    node_islanded: Bool[Array, " n_nodes"]


def _component_labels(
    line_from_idx: Int[Array, " n_lines"],
    line_to_idx: Int[Array, " n_lines"],
    line_active: Bool[Array, " n_lines"],
    n_nodes: int,
) -> Int[Array, " n_nodes"]:
    """Smallest node index of each node's component over the active lines."""
    inactive = jnp.asarray(n_nodes, jnp.int32)

    def sweep(carry: tuple[Array, Array]) -> tuple[Array, Array]:
        labels, _ = carry
        edge_min = jnp.where(line_active, jnp.minimum(labels[line_from_idx], labels[line_to_idx]), inactive)
        new = labels.at[line_from_idx].min(edge_min).at[line_to_idx].min(edge_min)
        # Every label is the index of a node of the same component with a label no larger,
        # so following it once more is safe and halves the remaining path.
        new = new[new]
        return new, jnp.any(new != labels)

    start = jnp.arange(n_nodes, dtype=jnp.int32)
    labels, _ = lax.while_loop(lambda carry: carry[1], sweep, (start, jnp.asarray(True)))
    return labels


def line_outage_ptdf(case: CaseData, line_out: Bool[Array, " n_lines"]) -> LineOutagePTDF:
    """The PTDF of `case` with the lines where `line_out` is True opened.

    `line_out` may be traced (`jit` / `vmap` over masks); lines already out of service
    in the case are ignored. Cost: one `(L × L)` solve with `N` right-hand sides, for any
    number of outages; when at most a few lines are out at once,
    [`line_outage_ptdf_of_lines`][powerzoojax.physics.line_outage_ptdf_of_lines] costs
    `(k × k)` instead.

    **Arguments:**

    - `case`: the case.
    - `line_out`: `(n_lines,)` bool outage mask.

    **Returns:**

    A [`LineOutagePTDF`][powerzoojax.physics.LineOutagePTDF].
    """
    slots = jnp.arange(case.n_lines, dtype=jnp.int32)
    return _ptdf_with_slots_opened(case, slots, jnp.asarray(line_out, bool))


def line_outage_ptdf_of_lines(case: CaseData, lines: Int[Array, " k"]) -> LineOutagePTDF:
    """[`line_outage_ptdf`][powerzoojax.physics.line_outage_ptdf] for at most `k` lines given
    by index: one `(k × k)` solve, so screening every single-line outage of a large case is
    a `vmap` over `lines[:, None]`.

    **Arguments:**

    - `case`: the case.
    - `lines`: `(k,)` 0-based line indices; `-1` is no line (padding); repeats count once.

    **Returns:**

    A [`LineOutagePTDF`][powerzoojax.physics.LineOutagePTDF].
    """
    lines = jnp.asarray(lines, jnp.int32)
    slots = jnp.clip(lines, 0, case.n_lines - 1)
    earlier = jnp.tril(lines[:, None] == lines[None, :], k=-1)
    return _ptdf_with_slots_opened(case, slots, (lines >= 0) & ~jnp.any(earlier, axis=1))


def _ptdf_with_slots_opened(case: CaseData, slots: Int[Array, " k"], used: Bool[Array, " k"]) -> LineOutagePTDF:
    """Open the lines `slots[j]` where `used[j]` (distinct lines among the used slots)."""
    ptdf = case.ptdf
    n_nodes = ptdf.shape[1]
    in_service = case.line_status > 0
    used = used & in_service[slots]
    out = jnp.zeros(in_service.shape, bool).at[slots].max(used)
    labels = _component_labels(case.line_from_idx, case.line_to_idx, in_service & ~out, n_nodes)
    node_islanded = labels != labels[case.slack_bus_idx]
    islanded = jnp.any(node_islanded)
    mask = jnp.where(used & ~islanded, 1.0, 0.0).astype(ptdf.dtype)
    # transfer[l, j]: MW on line l per MW moved across slot j's line, from its from bus to its to bus.
    transfer = ptdf[:, case.line_from_idx[slots]] - ptdf[:, case.line_to_idx[slots]]
    lhs = jnp.eye(slots.shape[0], dtype=ptdf.dtype) - mask[:, None] * transfer[slots] * mask[None, :]
    compensation = jnp.linalg.solve(lhs, mask[:, None] * ptdf[slots])
    redistributed = ptdf + hp.matmul(transfer, compensation)
    return LineOutagePTDF(
        ptdf=where((out | ~in_service)[:, None], 0.0, redistributed),
        line_out=out,
        islanded=islanded,
        node_islanded=node_islanded,
    )
