"""Balanced radial power flow: the backward/forward sweep on the DistFlow equations.

For a radial feeder rooted at the slack bus, with ``P_l, Q_l`` the power entering
branch ``l`` at its sending bus ``i`` and flowing to its receiving bus ``j``::

    P_l = Σ_{n downstream of l} p_n + Σ_{k downstream of l, k included} r_k I²_k
    I²_l = (P_l² + Q_l²) / v²_i
    v²_j = v²_i − 2 (r_l P_l + x_l Q_l) + (r_l² + x_l²) I²_l

(Baran & Wu 1989). These are exact for a tree of series impedances (no line charging,
bus shunts or off-nominal taps), so at convergence the sweep matches a full AC solve.

The tree is walked once, on the host, in :func:`make_radial_network`. A single feeder
is solved with dense matrix–vector products with the path and downstream matrices inside
one ``lax.while_loop``. Under ``vmap`` (many envs) a custom batching rule runs the same
iteration with the feeders as the contiguous last axis and the downstream/path products
as sums unrolled over the (static) tree: O(Σ depth) adds per feeder instead of O(B²)
multiply-adds, no gathers, each feeder stopping on its own convergence test. All powers
are per unit on the case base, loads positive.
"""

import functools
from collections import deque

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData

# Bounds on v² in both sweeps (0.5 <= |v| <= 2 p.u.): keep the current finite when a
# heavily overloaded feeder collapses. No operating point lies on them (the nose of a
# feeder's PV curve is well above 0.5 p.u.), so a solve that ends on one reports
# converged=False rather than a fixed point of the clipped equations, and never NaN.
_V_SQ_FLOOR = 0.25
_V_SQ_CEIL = 4.0
# Bound on |P|, |Q| [p.u.] inside the iteration: a diverging sweep grows the losses
# quadratically, and without a bound float32 overflows to inf within a few iterations.
_FLOW_BOUND = 1.0e4


class RadialNetwork(eqx.Module):
    """Setup-time topology of a radial feeder (in-service branches only, B of them).

    ``path_matrix[n, l] = 1`` iff branch ``l`` lies on the path from the slack bus to
    bus ``n``; ``downstream_matrix`` is its transpose; ``loss_matrix[l, k] = 1`` iff branch
    ``k`` is ``l`` or lies downstream of it (so ``P = D p + loss_matrix · r I²``). Branch
    ``l`` is oriented from ``send_idx[l]`` (nearer the slack) to ``recv_idx[l]``;
    ``line_idx[l]`` is its position among the case's lines. ``r_pu, x_pu`` on the case base.
    """

    path_matrix: Float[Array, "n_nodes n_branches"]
    downstream_matrix: Float[Array, "n_branches n_nodes"]
    loss_matrix: Float[Array, "n_branches n_branches"]
    root_branch: Float[Array, " n_branches"]
    send_idx: Int[Array, " n_branches"]
    recv_idx: Int[Array, " n_branches"]
    line_idx: Int[Array, " n_branches"]
    r_pu: Float[Array, " n_branches"]
    x_pu: Float[Array, " n_branches"]
    slack_bus_idx: int = eqx.field(static=True)
    n_nodes: int = eqx.field(static=True)
    n_branches: int = eqx.field(static=True)
    # The tree again, static, for the unrolled sweeps: the branch feeding each branch's
    # sending bus (-1 at the slack), each branch's receiving bus, the branch feeding
    # each bus (-1 for the slack).
    parent_branch: tuple[int, ...] = eqx.field(static=True)
    recv_bus: tuple[int, ...] = eqx.field(static=True)
    bus_branch: tuple[int, ...] = eqx.field(static=True)


class RadialFlow(eqx.Module):
    """Result of :func:`radial_power_flow` (per unit on the case base).

    ``p_branch, q_branch`` enter each branch at its sending end; ``p_loss, q_loss`` are
    the per-branch series losses ``r I², x I²``; ``p_slack, q_slack`` the net power the
    slack bus supplies (branch flows leaving it minus its own load). ``residual`` is the
    last ``max |Δv²|``; ``converged`` says it fell below the tolerance within
    ``max_iter`` sweeps (``n_iter`` of them) at a point off the safety bounds
    (``0.5 <= |v| <= 2`` p.u., ``|P|, |Q| < 1e4`` p.u.).
    """

    v_sq: Float[Array, " n_nodes"]
    v_mag: Float[Array, " n_nodes"]
    p_branch: Float[Array, " n_branches"]
    q_branch: Float[Array, " n_branches"]
    p_loss: Float[Array, " n_branches"]
    q_loss: Float[Array, " n_branches"]
    p_slack: Float[Array, ""]
    q_slack: Float[Array, ""]
    converged: Bool[Array, ""]
    n_iter: Int[Array, ""]
    residual: Float[Array, ""]


def radial_tree_order(
    n_nodes: int,
    from_idx: Int[np.ndarray, " n_lines"],
    to_idx: Int[np.ndarray, " n_lines"],
    active: Bool[np.ndarray, " n_lines"],
    root: int,
    node_ids: Int[np.ndarray, " n_nodes"],
) -> tuple[Int[np.ndarray, " n_branches"], Int[np.ndarray, " n_branches"], Int[np.ndarray, " n_branches"]]:
    """Breadth-first search from ``root`` over the active lines (host-side).

    Returns, per branch in BFS order, its line position, sending bus and receiving bus
    (0-based). Raises ``ValueError`` naming the bus (by ``node_ids``) where the lines
    close a loop or the buses the root cannot reach.
    """
    adjacency: list[list[tuple[int, int]]] = [[] for _ in range(n_nodes)]
    for line in np.flatnonzero(active):
        f, t = int(from_idx[line]), int(to_idx[line])
        if f == t:
            raise ValueError(f"make_radial_network: line {line} connects bus id {int(node_ids[f])} to itself")
        adjacency[f].append((int(line), t))
        adjacency[t].append((int(line), f))
    seen = np.zeros(n_nodes, bool)
    seen[root] = True
    used = np.zeros(len(from_idx), bool)
    lines, sends, recvs = [], [], []
    queue = deque([root])
    while queue:
        bus = queue.popleft()
        for line, other in adjacency[bus]:
            if used[line]:
                continue
            used[line] = True
            if seen[other]:
                raise ValueError(
                    "make_radial_network: the in-service lines are not radial: "
                    f"line {line} closes a loop at bus id {int(node_ids[other])}; "
                    "open it (line_status = 0)"
                )
            seen[other] = True
            lines.append(line)
            sends.append(bus)
            recvs.append(other)
            queue.append(other)
    if not seen.all():
        ids = node_ids[~seen]
        raise ValueError(
            f"make_radial_network: {int((~seen).sum())} buses are not connected to the slack bus by "
            f"in-service lines (bus ids {ids[:10].tolist()}); expected one connected radial feeder"
        )
    return np.asarray(lines, np.int64), np.asarray(sends, np.int64), np.asarray(recvs, np.int64)


def radial_path_matrix(
    n_nodes: int, sends: Int[np.ndarray, " n_branches"], recvs: Int[np.ndarray, " n_branches"]
) -> Float[np.ndarray, "n_nodes n_branches"]:
    """``path[n, l] = 1`` iff branch ``l`` lies on the root→``n`` path (branches in BFS order)."""
    path = np.zeros((n_nodes, sends.shape[0]), np.float64)
    # A bus's path is its sending bus's path plus its feeding branch; BFS order lists
    # every sending bus before the buses it feeds.
    for branch in range(sends.shape[0]):
        path[recvs[branch]] = path[sends[branch]]
        path[recvs[branch], branch] = 1.0
    return path


def make_radial_network(case: CaseData) -> RadialNetwork:
    """Build the sweep matrices of ``case`` on the host (lines with ``line_status > 0``).

    Raises ``ValueError`` if the in-service lines do not form one tree spanning every
    bus from the slack.
    """
    if not isinstance(case, CaseData):
        raise TypeError(f"make_radial_network: case must be a CaseData, got {type(case).__name__}")
    lines, sends, recvs = radial_tree_order(
        case.n_nodes,
        np.asarray(case.line_from_idx, np.int64),
        np.asarray(case.line_to_idx, np.int64),
        np.asarray(case.line_status) > 0,
        int(case.slack_bus_idx),
        np.asarray(case.node_ids),
    )
    n, b = case.n_nodes, lines.shape[0]
    path = radial_path_matrix(n, sends, recvs)
    downstream = path.T
    # Branch k's loss appears at its receiving bus, so it is carried by every branch
    # upstream of that bus, k included.
    loss_matrix = downstream[:, recvs]
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    bus_branch = np.full(n, -1, np.int64)
    bus_branch[recvs] = np.arange(b)
    return RadialNetwork(
        path_matrix=f32(path),
        downstream_matrix=f32(downstream),
        loss_matrix=f32(loss_matrix),
        root_branch=f32(sends == int(case.slack_bus_idx)),
        send_idx=jnp.asarray(sends, jnp.int32),
        recv_idx=jnp.asarray(recvs, jnp.int32),
        line_idx=jnp.asarray(lines, jnp.int32),
        r_pu=f32(np.asarray(case.line_r, np.float64)[lines]),
        x_pu=f32(np.asarray(case.line_x, np.float64)[lines]),
        slack_bus_idx=int(case.slack_bus_idx),
        n_nodes=n,
        n_branches=b,
        parent_branch=tuple(int(k) for k in bus_branch[sends]),
        recv_bus=tuple(int(j) for j in recvs),
        bus_branch=tuple(int(k) for k in bus_branch),
    )


def _rows(x: Float[Array, "k lanes"]) -> list[Float[Array, " lanes"]]:
    return [x[k] for k in range(x.shape[0])]


def _reduce_rows(op, x: Float[Array, "k lanes"]) -> Float[Array, " lanes"]:
    """``op``-reduce over the (short) leading axis as a balanced tree of elementwise ops:
    XLA:CPU runs a reduce over a non-minor axis an order of magnitude slower."""
    rows = _rows(x)
    while len(rows) > 1:
        rows = [op(rows[i], rows[i + 1]) if i + 1 < len(rows) else rows[i] for i in range(0, len(rows), 2)]
    return rows[0]


def _subtree_sum(network: RadialNetwork, rows: list) -> Float[Array, "n_branches lanes"]:
    """``downstream_matrix``-style sums in branch space: row ``l`` = Σ of ``rows[k]`` over
    the branches ``k`` at or below ``l`` (children come later in BFS order)."""
    out: list = [None] * network.n_branches
    children = _children(network.parent_branch)
    for k in reversed(range(network.n_branches)):
        total = rows[k]
        for c in children[k]:
            total = total + out[c]
        out[k] = total
    return jnp.stack(out)


def _path_sum(network: RadialNetwork, rows: list) -> Float[Array, "n_branches lanes"]:
    """``path_matrix``-style sums: row ``k`` = Σ of ``rows[l]`` over the branches from the slack to branch ``k``."""
    out: list = [None] * network.n_branches
    for k, parent in enumerate(network.parent_branch):
        out[k] = rows[k] if parent < 0 else out[parent] + rows[k]
    return jnp.stack(out)


@functools.lru_cache(maxsize=256)
def _children(parent_branch: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    kids: list[list[int]] = [[] for _ in parent_branch]
    for k, parent in enumerate(parent_branch):
        if parent >= 0:
            kids[parent].append(k)
    return tuple(tuple(k) for k in kids)


def _send_v_sq(network: RadialNetwork, v_recv: Float[Array, "n_branches lanes"], v_slack_sq) -> Float[Array, "n_branches lanes"]:
    rows = _rows(v_recv)
    root = jnp.broadcast_to(v_slack_sq, v_recv.shape[1:])
    return jnp.stack([root if parent < 0 else rows[parent] for parent in network.parent_branch])


def _sweep_lanes(
    network: RadialNetwork,
    p_load: Float[Array, "n_nodes lanes"],
    q_load: Float[Array, "n_nodes lanes"],
    v_slack_sq: Float[Array, " lanes"],
    tol: Float[Array, " lanes"],
    r: Float[Array, "n_branches #lanes"],
    x: Float[Array, "n_branches #lanes"],
    max_iter: int,
) -> tuple[Array, ...]:
    """The sweep for ``lanes`` independent feeders, feeders on the last (contiguous) axis.

    Everything is in branch space (branch ``k`` ↔ its receiving bus), and the
    downstream/path products are unrolled sums over the tree: O(Σ depth) adds per lane
    instead of O(B²) multiply-adds, with no gathers (the tree is static). Each lane stops
    on its own test, exactly as ``vmap`` of a per-feeder ``while_loop`` would.
    """
    lanes = p_load.shape[1]
    p_rows, q_rows = _rows(p_load), _rows(q_load)
    p_down = _subtree_sum(network, [p_rows[b] for b in network.recv_bus])
    q_down = _subtree_sum(network, [q_rows[b] for b in network.recv_bus])
    z_sq = r * r + x * x

    def backward(v_recv, p_branch, q_branch):
        inv_v_sq_send = 1.0 / jnp.maximum(_send_v_sq(network, v_recv, v_slack_sq), _V_SQ_FLOOR)
        current_sq = (p_branch * p_branch + q_branch * q_branch) * inv_v_sq_send
        p_loss, q_loss = r * current_sq, x * current_sq
        p_new = jnp.clip(p_down + _subtree_sum(network, _rows(p_loss)), -_FLOW_BOUND, _FLOW_BOUND)
        q_new = jnp.clip(q_down + _subtree_sum(network, _rows(q_loss)), -_FLOW_BOUND, _FLOW_BOUND)
        return p_new, q_new, p_loss, q_loss, inv_v_sq_send

    def cond(carry):
        n_iter, _, _, _, residual = carry
        return jnp.any((n_iter < max_iter) & (residual >= tol))

    def body(carry):
        n_iter, v_recv, p_branch, q_branch, residual = carry
        active = (n_iter < max_iter) & (residual >= tol)
        p_new, q_new, _, _, inv_v_sq_send = backward(v_recv, p_branch, q_branch)
        drop = 2.0 * (r * p_new + x * q_new) - z_sq * (p_new * p_new + q_new * q_new) * inv_v_sq_send
        v_new = jnp.clip(v_slack_sq - _path_sum(network, _rows(drop)), _V_SQ_FLOOR, _V_SQ_CEIL)
        res_new = _reduce_rows(jnp.maximum, jnp.abs(v_new - v_recv))
        # A NaN residual (NaN loads) would otherwise look converged to the `>=` test.
        res_new = jnp.where(jnp.isnan(res_new), jnp.inf, res_new)
        return (
            n_iter + active.astype(jnp.int32),
            jnp.where(active, v_new, v_recv),
            jnp.where(active, p_new, p_branch),
            jnp.where(active, q_new, q_branch),
            jnp.where(active, res_new, residual),
        )

    b = network.n_branches
    init = (
        jnp.zeros((lanes,), jnp.int32),
        jnp.broadcast_to(v_slack_sq, (b, lanes)),
        p_down,
        q_down,
        jnp.full((lanes,), jnp.inf, jnp.float32),
    )
    n_iter, v_recv, p_branch, q_branch, residual = lax.while_loop(cond, body, init)
    # One last backward sweep with the final voltages, so the reported flows carry
    # exactly the reported losses (slack supply = Σ loads + Σ losses to rounding).
    p_branch, q_branch, p_loss, q_loss, _ = backward(v_recv, p_branch, q_branch)
    v_rows = _rows(v_recv)
    slack_row = jnp.broadcast_to(v_slack_sq, (lanes,))
    v_sq = jnp.stack([slack_row if k < 0 else v_rows[k] for k in network.bus_branch])
    root = [k for k, parent in enumerate(network.parent_branch) if parent < 0]
    p_slack = sum(p_branch[k] for k in root) + p_rows[network.slack_bus_idx]
    q_slack = sum(q_branch[k] for k in root) + q_rows[network.slack_bus_idx]
    on_bound = (
        (_reduce_rows(jnp.minimum, v_sq) <= _V_SQ_FLOOR)
        | (_reduce_rows(jnp.maximum, v_sq) >= _V_SQ_CEIL)
        | (_reduce_rows(jnp.maximum, jnp.maximum(jnp.abs(p_branch), jnp.abs(q_branch))) >= _FLOW_BOUND)
    )
    converged = (residual < tol) & ~on_bound
    return v_sq, p_branch, q_branch, p_loss, q_loss, p_slack, q_slack, converged, n_iter, residual


def _solve_dense(network: RadialNetwork, p_load, q_load, v_slack_sq, tol, max_iter: int) -> tuple[Array, ...]:
    """One feeder: the sweep as dense products with the path and downstream matrices.

    Used for unbatched calls (a single feeder, e.g. a deterministic reset): it compiles
    in a fraction of the time of the unrolled tree sums, and one feeder is cheap either way.
    """
    z_sq = network.r_pu * network.r_pu + network.x_pu * network.x_pu

    def backward(v_sq, p_branch, q_branch):
        inv_v_sq_send = 1.0 / jnp.maximum(v_sq[network.send_idx], _V_SQ_FLOOR)
        current_sq = (p_branch * p_branch + q_branch * q_branch) * inv_v_sq_send
        p_loss, q_loss = network.r_pu * current_sq, network.x_pu * current_sq
        p_new = jnp.clip(network.downstream_matrix @ p_load + network.loss_matrix @ p_loss, -_FLOW_BOUND, _FLOW_BOUND)
        q_new = jnp.clip(network.downstream_matrix @ q_load + network.loss_matrix @ q_loss, -_FLOW_BOUND, _FLOW_BOUND)
        return p_new, q_new, p_loss, q_loss, inv_v_sq_send

    def cond(carry):
        n_iter, _, _, _, residual = carry
        return (n_iter < max_iter) & (residual >= tol)

    def body(carry):
        n_iter, v_sq, p_branch, q_branch, _ = carry
        p_branch, q_branch, _, _, inv_v_sq_send = backward(v_sq, p_branch, q_branch)
        drop = 2.0 * (network.r_pu * p_branch + network.x_pu * q_branch) - z_sq * (
            p_branch * p_branch + q_branch * q_branch
        ) * inv_v_sq_send
        v_sq_new = jnp.clip(v_slack_sq - network.path_matrix @ drop, _V_SQ_FLOOR, _V_SQ_CEIL)
        residual = jnp.max(jnp.abs(v_sq_new - v_sq))
        residual = jnp.where(jnp.isnan(residual), jnp.inf, residual)
        return n_iter + 1, v_sq_new, p_branch, q_branch, residual

    init = (
        jnp.asarray(0, jnp.int32),
        jnp.broadcast_to(v_slack_sq, p_load.shape),
        network.downstream_matrix @ p_load,
        network.downstream_matrix @ q_load,
        jnp.asarray(jnp.inf, jnp.float32),
    )
    n_iter, v_sq, p_branch, q_branch, residual = lax.while_loop(cond, body, init)
    p_branch, q_branch, p_loss, q_loss, _ = backward(v_sq, p_branch, q_branch)
    slack = network.slack_bus_idx
    on_bound = (
        (jnp.min(v_sq) <= _V_SQ_FLOOR)
        | (jnp.max(v_sq) >= _V_SQ_CEIL)
        | (jnp.max(jnp.maximum(jnp.abs(p_branch), jnp.abs(q_branch))) >= _FLOW_BOUND)
    )
    return (
        v_sq, p_branch, q_branch, p_loss, q_loss,
        network.root_branch @ p_branch + p_load[slack], network.root_branch @ q_branch + q_load[slack],
        (residual < tol) & ~on_bound, n_iter, residual,
    )


def _to_last(x: Array, batched: bool, lanes: int) -> Array:
    x = jnp.asarray(x)
    if batched:
        return jnp.moveaxis(x, 0, -1)
    return jnp.broadcast_to(x[..., None], (*x.shape, lanes))


@functools.lru_cache(maxsize=64)
def _lane_solver(max_iter: int):
    """``radial_power_flow``'s core for one ``max_iter``: a plain call solves one feeder
    with dense products; ``vmap`` runs all feeders as lanes of one loop (see
    :func:`_sweep_lanes`). Both are the same iteration; values agree to float32 rounding."""

    def lanes_call(network, p_load, q_load, v_slack_sq, tol, lanes, batched):
        nb, pb, qb, vb, tb = batched
        r = network.r_pu[:, None] if not nb.r_pu else jnp.moveaxis(network.r_pu, 0, -1)
        x = network.x_pu[:, None] if not nb.x_pu else jnp.moveaxis(network.x_pu, 0, -1)
        return _sweep_lanes(
            network,
            _to_last(p_load, pb, lanes),
            _to_last(q_load, qb, lanes),
            _to_last(v_slack_sq, vb, lanes),
            _to_last(tol, tb, lanes),
            r,
            x,
            max_iter,
        )

    @custom_vmap
    def solve(network, p_load, q_load, v_slack_sq, tol):
        return _solve_dense(network, p_load, q_load, v_slack_sq, tol, max_iter)

    @solve.def_vmap
    def solve_batched(axis_size, in_batched, network, p_load, q_load, v_slack_sq, tol):
        out = lanes_call(network, p_load, q_load, v_slack_sq, tol, axis_size, tuple(in_batched))
        out = tuple(jnp.moveaxis(o, -1, 0) for o in out)
        return out, tuple(True for _ in out)

    return solve


def radial_power_flow(
    network: RadialNetwork,
    p_load_pu: Float[ArrayLike, " n_nodes"],
    q_load_pu: Float[ArrayLike, " n_nodes"],
    v_slack: Float[ArrayLike, ""] | float = 1.0,
    max_iter: int = 100,
    tol: Float[ArrayLike, ""] | float = 1e-6,
) -> RadialFlow:
    """Solve the balanced radial power flow for net bus loads ``p_load_pu, q_load_pu`` [p.u.].

    Net load = demand − local generation (negative where a bus exports). ``v_slack``
    [p.u.] and ``tol`` (on ``max |Δv²|`` between sweeps) may be traced; ``max_iter`` is a
    Python int (it bounds the loop). Never raises on a hard case: a feeder that cannot
    carry its load returns finite values with ``converged=False``. Under ``vmap`` the
    feeders are solved as lanes of one loop, each stopping on its own test (the values of
    solving them one by one, to float32 rounding).
    """
    p_load = jnp.asarray(p_load_pu, jnp.float32)
    q_load = jnp.asarray(q_load_pu, jnp.float32)
    v_slack_sq = jnp.square(jnp.asarray(v_slack, jnp.float32))
    tol = jnp.asarray(tol, jnp.float32)
    v_sq, p_branch, q_branch, p_loss, q_loss, p_slack, q_slack, converged, n_iter, residual = _lane_solver(
        int(max_iter)
    )(network, p_load, q_load, v_slack_sq, tol)
    return RadialFlow(
        v_sq=v_sq,
        v_mag=jnp.sqrt(v_sq),
        p_branch=p_branch,
        q_branch=q_branch,
        p_loss=p_loss,
        q_loss=q_loss,
        p_slack=p_slack,
        q_slack=q_slack,
        converged=converged,
        n_iter=n_iter,
        residual=residual,
    )
