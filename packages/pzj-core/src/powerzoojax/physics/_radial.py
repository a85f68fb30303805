"""Balanced radial power flow: the backward/forward sweep on the DistFlow equations.

For a radial feeder rooted at the slack bus, with `P_l, Q_l` the power entering
branch `l` at its sending bus `i` and flowing to its receiving bus `j`:

    P_l = Σ_{n downstream of l} p_n + Σ_{k downstream of l, k included} r_k ℓ_k
    ℓ_l = (P_l² + Q_l²) / v²_i
    v²_j = v²_i − 2 (r_l P_l + x_l Q_l) + (r_l² + x_l²) ℓ_l

(Baran & Wu 1989). These are exact for a tree of series impedances (no line charging,
bus shunts or off-nominal taps), so at convergence the sweep matches a full AC solve.

Given the squared branch currents `ℓ`, the flows and voltages are affine in `ℓ` and
in the loads, so the tree is walked once, on the host ([`make_radial_network`][powerzoojax.physics.make_radial_network]), into
dense matrices: one sweep is `y = c + ℓ W` with `y = [P | Q | v²_recv | v²_send]`,
then `ℓ ← (P² + Q²) / v²_send` (the backward sweep's flows and the forward sweep's
voltages from the same currents). The iteration starts from LinDistFlow's currents and
takes quasi-Newton steps `ℓ ← ℓ + (ℓ' − ℓ)(I − J₀)⁻ᵀ` (row vectors) with `J₀` the
sweep's Jacobian at the case's nominal loads (a constant, computed once on the host), plus
depth-1 Anderson mixing (an earlier solve's loss correction may be added to the start:
`warm_start`). Under `vmap` (many envs) a sweep is one `(feeders, B) @ (B, 4B)`
product, one `(feeders, B) @ (B, B)` product and a few elementwise kernels, each feeder
stopping on its own convergence test; the loop has its own batching rule that moves the
last unconverged feeders into a smaller batch (see `_iterate`). All powers
are per unit on the case base, loads positive.
"""

import functools
from collections import deque
from typing import cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.physics._compaction import compacting_loop, compaction_caps
from powerzoojax.physics._entry import solver_entry as _solver_entry
from powerzoojax.physics._implicit import implicit_outputs
from powerzoojax.physics._working_dtype import cast_floating_leaves, working_float_dtype
from powerzoojax.core import _precision as hp

# Bounds on v² in both sweeps (0.5 <= |v| <= 2 p.u.): keep the current finite when a
# heavily overloaded feeder collapses. No operating point lies on them (the nose of a
# feeder's PV curve is well above 0.5 p.u.), so a solve that ends on one reports
# converged=False rather than a fixed point of the clipped equations, and never NaN.
_V_SQ_FLOOR = 0.25
_V_SQ_CEIL = 4.0
# Bound on |P|, |Q| [p.u.] inside the iteration: a diverging sweep grows the losses
# quadratically, and without a bound float32 overflows to inf within a few iterations.
_FLOW_BOUND = 1.0e4
# The largest squared current those bounds allow, (2 · bound²) / floor: bounds the mixed
# currents of a diverging solve, which would otherwise overflow.
_CURRENT_SQ_BOUND = 2.0 * _FLOW_BOUND**2 / _V_SQ_FLOOR


class RadialNetwork(eqx.Module):
    """Setup-time topology of a radial feeder (in-service branches only, B of them); build
    with [`make_radial_network`][powerzoojax.physics.make_radial_network].

    Branch `l` is oriented from `send_idx[l]` (nearer the slack) to `recv_idx[l]`. The
    sweep is an affine map of `y = [P | Q | v²_recv | v²_send]` (4B per feeder) computed
    with small dense products.

    **Arguments:**

    - `path_matrix`: `(N, B)`, 1 iff branch `l` lies on the path from the slack to bus `n`.
    - `downstream_matrix`: `(B, N)`, its transpose.
    - `loss_matrix`: `(B, B)`, 1 iff branch `k` is `l` or lies downstream of it.
    - `sweep_drop_matrix`: `(B, n_sweep_v)` map of the lossless voltage drops into `y`.
    - `sweep_loss_matrix`: `(B, n_sweep)` map of the squared currents into `y`.
    - `sweep_precond`: `(B, B)` constant preconditioner of the quasi-Newton step,
      `(I − J₀)⁻ᵀ` at the nominal-load solution (identity when it does not exist).
    - `recv_to_bus`: `(B, N)`, 1 iff branch `l` feeds bus `n`.
    - `root_branch`: `(B,)`, 1 on the branches leaving the slack.
    - `send_idx`, `recv_idx`: `(B,)` branch ends.
    - `line_idx`: `(B,)` position of each branch among the case's lines.
    - `r_pu`, `x_pu`: `(B,)` branch impedance [p.u. on the case base].
    - `slack_bus_idx`, `n_nodes`, `n_branches`: slack bus and sizes (static).
    """

    path_matrix: Float[Array, "n_nodes n_branches"]
    downstream_matrix: Float[Array, "n_branches n_nodes"]
    loss_matrix: Float[Array, "n_branches n_branches"]
    sweep_drop_matrix: Float[Array, "n_branches n_sweep_v"]
    sweep_loss_matrix: Float[Array, "n_branches n_sweep"]
    sweep_precond: Float[Array, "n_branches n_branches"]
    recv_to_bus: Float[Array, "n_branches n_nodes"]
    root_branch: Float[Array, " n_branches"]
    send_idx: Int[Array, " n_branches"]
    recv_idx: Int[Array, " n_branches"]
    line_idx: Int[Array, " n_branches"]
    r_pu: Float[Array, " n_branches"]
    x_pu: Float[Array, " n_branches"]
    slack_bus_idx: int = eqx.field(static=True)
    n_nodes: int = eqx.field(static=True)
    n_branches: int = eqx.field(static=True)


class RadialFlow(eqx.Module):
    """Result of [`radial_power_flow`][powerzoojax.physics.radial_power_flow] (per unit on the
    case base).

    **Arguments:**

    - `v_sq`, `v_mag`: `(n_nodes,)` squared and plain voltage magnitudes [p.u.].
    - `p_branch`, `q_branch`: `(n_branches,)` power entering each branch at its sending
      end [p.u.].
    - `p_loss`, `q_loss`: `(n_branches,)` series losses `r I²`, `x I²` [p.u.].
    - `p_slack`, `q_slack`: net power the slack bus supplies (branch flows leaving it minus
      its own load) [p.u.].
    - `converged`: the last `max |Δv²|` fell below the tolerance within `max_iter` sweeps
      at a point off the safety bounds (`0.5 <= |v| <= 2` p.u., `|P|, |Q| < 1e4` p.u.).
    - `n_iter`: sweeps taken.
    - `residual`: the last `max |Δv²|`.
    - `loss_correction`: `(n_branches,)` the solution's squared currents minus
      LinDistFlow's for the same loads (zero when not converged); pass it as the next
      solve's `warm_start`.
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
    loss_correction: Float[Array, " n_branches"]


def radial_tree_order(
    n_nodes: int,
    from_idx: Int[np.ndarray, " n_lines"],
    to_idx: Int[np.ndarray, " n_lines"],
    active: Bool[np.ndarray, " n_lines"],
    root: int,
    node_ids: Int[np.ndarray, " n_nodes"],
) -> tuple[Int[np.ndarray, " n_branches"], Int[np.ndarray, " n_branches"], Int[np.ndarray, " n_branches"]]:
    """Breadth-first search from `root` over the active lines (host-side).

    Returns, per branch in BFS order, its line position, sending bus and receiving bus
    (0-based). Raises `ValueError` naming the bus (by `node_ids`) where the lines
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
    """`path[n, l] = 1` iff branch `l` lies on the root→`n` path (branches in BFS order)."""
    path = np.zeros((n_nodes, sends.shape[0]), np.float64)
    # A bus's path is its sending bus's path plus its feeding branch; BFS order lists
    # every sending bus before the buses it feeds.
    for branch in range(sends.shape[0]):
        path[recvs[branch]] = path[sends[branch]]
        path[recvs[branch], branch] = 1.0
    return path


def sweep_preconditioner(
    load_matrix: Float[np.ndarray, "n_loads n_sweep"],
    slack: Float[np.ndarray, " n_sweep"],
    loss_matrix: Float[np.ndarray, "n_branches n_sweep"],
    p_load: Float[np.ndarray, " n_nodes"],
    q_load: Float[np.ndarray, " n_nodes"],
) -> Float[np.ndarray, "n_branches n_branches"]:
    """`(I − J₀)⁻ᵀ` for the sweep `ℓ' = (P² + Q²) / v²_send` (row form, float64, host).

    `J₀ = ∂ℓ'/∂ℓ` at the fixed point of `p_load, q_load` with `v_slack = 1`. With it,
    a step's error is `(I − J₀)⁻¹ (J − J₀)` times the last one instead of `J`: on case
    33bw with random ±0.5 MW DER at every bus (v down to 0.6 p.u.), with the LinDistFlow
    start and Anderson mixing, the slowest of 8192 feeders needs 7 sweeps instead of 8, the
    mean 4.2 instead of 5.2. Returns the identity (the plain sweep) when the nominal point
    does not converge or `I − J₀` is singular.
    """
    b = loss_matrix.shape[0]
    base = np.concatenate([p_load, q_load]) @ load_matrix + slack
    current_sq, previous = np.zeros(b), np.full(b, np.inf)
    with np.errstate(all="ignore"):
        for _ in range(500):
            y = base + current_sq @ loss_matrix
            flow_p, flow_q, v_send = y[:b], y[b : 2 * b], y[3 * b :]
            current_sq, previous = (flow_p**2 + flow_q**2) / v_send, current_sq
            if not np.all(np.isfinite(current_sq)) or np.min(v_send) <= _V_SQ_FLOOR:
                return np.eye(b)
            if np.max(np.abs(current_sq - previous)) <= 1e-14 * max(1.0, float(np.max(current_sq))):
                break
        else:
            return np.eye(b)
        # ∂ℓ'_k/∂ℓ_j through P_k, Q_k and v²_send,k (y = c + ℓ W, so ∂y_k/∂ℓ_j = W[j, k]).
        jac = (
            (2.0 * flow_p / v_send)[:, None] * loss_matrix[:, :b].T
            + (2.0 * flow_q / v_send)[:, None] * loss_matrix[:, b : 2 * b].T
            - (current_sq / v_send)[:, None] * loss_matrix[:, 3 * b :].T
        )
        try:
            precond = np.linalg.inv(np.eye(b) - jac)
        except np.linalg.LinAlgError:
            return np.eye(b)
    return precond.T if np.all(np.isfinite(precond)) else np.eye(b)


def make_radial_network(case: CaseData) -> RadialNetwork:
    """Build the sweep matrices of `case` on the host (lines with `line_status > 0`).

    **Arguments:**

    - `case`: a radial case.

    **Returns:**

    A [`RadialNetwork`][powerzoojax.physics.RadialNetwork]. Raises `ValueError` if the
    in-service lines do not form one tree spanning every bus from the slack.
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
    r = np.asarray(case.line_r, np.float64)[lines]
    x = np.asarray(case.line_x, np.float64)[lines]
    path_recv, path_send = path[recvs], path[sends]
    # drop = 2 (r P + x Q) − z² ℓ with P = D p + loss_matrix r ℓ, Q likewise: v²_j =
    # v²_slack − Σ_{l on the path to j} drop_l is affine in (p, q, ℓ).
    drop_p, drop_q = 2.0 * r[:, None] * downstream, 2.0 * x[:, None] * downstream
    drop_loss = 2.0 * (r[:, None] * loss_matrix * r + x[:, None] * loss_matrix * x) - np.diag(r * r + x * x)
    zeros_n = np.zeros((b, n))
    # The v²_recv rows in the order of the buses they feed (the non-slack buses, in order).
    by_bus = np.argsort(recvs, kind="stable")
    path_recv = path_recv[by_bus]
    sweep_p = np.concatenate([downstream, zeros_n, -path_recv @ drop_p, -path_send @ drop_p])
    sweep_q = np.concatenate([zeros_n, downstream, -path_recv @ drop_q, -path_send @ drop_q])
    sweep_loss = np.concatenate(
        [loss_matrix * r, loss_matrix * x, -path_recv @ drop_loss, -path_send @ drop_loss]
    )
    recv_to_bus = np.zeros((b, n))
    recv_to_bus[np.arange(b), recvs] = 1.0
    load_matrix = np.concatenate([sweep_p.T, sweep_q.T])
    slack_vec = np.concatenate([np.zeros(2 * b), np.ones(2 * b)])
    precond = sweep_preconditioner(
        load_matrix, slack_vec, sweep_loss.T,
        np.asarray(case.node_pd, np.float64) / float(case.base_mva),
        np.asarray(case.node_qd, np.float64) / float(case.base_mva),
    )
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    return RadialNetwork(
        path_matrix=f32(path),
        downstream_matrix=f32(downstream),
        loss_matrix=f32(loss_matrix),
        sweep_drop_matrix=f32(-np.concatenate([path_recv.T, path_send.T], axis=1)),
        sweep_loss_matrix=f32(sweep_loss.T),
        sweep_precond=f32(precond),
        recv_to_bus=f32(recv_to_bus),
        root_branch=f32(sends == int(case.slack_bus_idx)),
        send_idx=jnp.asarray(sends, jnp.int32),
        recv_idx=jnp.asarray(recvs, jnp.int32),
        line_idx=jnp.asarray(lines, jnp.int32),
        r_pu=f32(r),
        x_pu=f32(x),
        slack_bus_idx=int(case.slack_bus_idx),
        n_nodes=n,
        n_branches=b,
    )


def _sweep_base(
    network: RadialNetwork,
    p_load: Float[Array, " n_nodes"],
    q_load: Float[Array, " n_nodes"],
    v_slack_sq: Float[Array, ""],
) -> Float[Array, " n_sweep"]:
    """`c`: everything in `y` but the losses' contribution, once per solve."""
    p0 = hp.matmul(p_load, network.path_matrix)
    q0 = hp.matmul(q_load, network.path_matrix)
    drop = 2.0 * (network.r_pu * p0 + network.x_pu * q0)
    return jnp.concatenate([p0, q0, v_slack_sq + hp.matmul(drop, network.sweep_drop_matrix)])


def _sweep_bounds(b: int) -> tuple[Array, Array]:
    lower = jnp.concatenate([jnp.full((2 * b,), -_FLOW_BOUND), jnp.full((2 * b,), _V_SQ_FLOOR)])
    upper = jnp.concatenate([jnp.full((2 * b,), _FLOW_BOUND), jnp.full((2 * b,), _V_SQ_CEIL)])
    return lower, upper


def _sweep_terms(y: Float[Array, "*feeders n_sweep"], b: int) -> tuple[Array, Array]:
    """`(v²_recv, ℓ')` of a sweep's `y` (rows = feeders, or one feeder)."""
    p, q, v_recv, v_send = y[..., :b], y[..., b : 2 * b], y[..., 2 * b : 3 * b], y[..., 3 * b :]
    return v_recv, (p * p + q * q) / v_send


# The loop state, one row per feeder: (n_iter, ℓ, v²_recv, residual, g_prev, f_prev).
_Carry = tuple[Array, Array, Array, Array, Array, Array]


def _active(carry: _Carry, tol: Array, max_iter: int) -> Array:
    n_iter, _, _, residual, _, _ = carry
    return (n_iter < max_iter) & (residual >= tol)


def _lin_dist_flow(network: RadialNetwork, base: Float[Array, "*feeders n_sweep"]) -> tuple[Array, Array]:
    """`(v²_recv, ℓ)` of LinDistFlow: the lossless flows and voltages (ℓ = 0, no product)."""
    lower, upper = _sweep_bounds(network.n_branches)
    return _sweep_terms(jnp.clip(base, lower, upper), network.n_branches)


def _start(v_recv: Float[Array, "feeders n_branches"], current_sq: Float[Array, "feeders n_branches"]) -> _Carry:
    # The first currents and, as the previous iterate of the first test, LinDistFlow's
    # voltages (see _sweep).
    rows = current_sq.shape[0]
    zeros = jnp.zeros_like(current_sq)
    return (
        jnp.zeros((rows,), jnp.int32), current_sq, v_recv, jnp.full((rows,), jnp.inf, current_sq.dtype), zeros, zeros
    )


def _make_body(network: RadialNetwork, base: Array, tol: Array, max_iter: int):
    """One sweep of every feeder (rows of `base`, `tol`); a feeder whose test has
    passed (or that has used `max_iter` sweeps) keeps its state."""
    b = network.n_branches
    # As rows, to clip the (feeders, n_sweep) sweep explicitly.
    lower, upper = (bound[None, :] for bound in _sweep_bounds(b))

    def body(carry: _Carry) -> _Carry:
        n_iter, current_sq, v_recv, _, g_prev, f_prev = carry
        v_new, g = _sweep_terms(jnp.clip(base + hp.matmul(current_sq, network.sweep_loss_matrix), lower, upper), b)
        residual = jnp.max(jnp.abs(v_new - v_recv), axis=1)
        # A NaN residual (NaN loads) would otherwise look converged to the `>=` test.
        residual = jnp.where(jnp.isnan(residual), jnp.inf, residual)
        # Quasi-Newton step with the nominal point's Jacobian (see sweep_preconditioner),
        # then depth-1 Anderson mixing on the preconditioned steps: one secant step on the
        # last two removes most of what the constant Jacobian misses. 33bw with random
        # ±0.5 MW DER at every bus: at most 7-8 sweeps (8 with mixing alone, 15 plain).
        f = hp.matmul(g - current_sq, network.sweep_precond)
        g = current_sq + f
        df = f - f_prev
        gamma = jnp.sum(df * f, axis=1) / jnp.maximum(jnp.sum(df * df, axis=1), 1e-30)
        gamma = jnp.where((n_iter > 0) & jnp.isfinite(gamma), gamma, 0.0)
        mixed = jnp.clip(g - gamma[:, None] * (g - g_prev), 0.0, _CURRENT_SQ_BOUND)
        new = (n_iter + 1, mixed, v_new, residual, g, f)
        act = _active(carry, tol, max_iter)
        return cast(_Carry, tuple(jnp.where(act.reshape((-1,) + (1,) * (x.ndim - 1)), x, old) for x, old in zip(new, carry)))

    return body


# Batched solves: the loop runs until its slowest feeder. Most feeders converge within a
# sweep or two of each other and a few need several more, so a plain vmapped loop sweeps
# the whole batch for its slowest lanes; the batching rule compacts (`_compaction`; the
# sweep counts are in `benchmarks/results/dist.md`). When the first stage leaves nothing
# active (feeders that all need the same sweeps), the compaction is skipped altogether.
_MIN_COMPACT = 64
# Sweeps every batched solve runs before its loop (see _loop): almost no feeder converges
# in fewer (the first test compares against LinDistFlow's voltages, so a converged feeder
# takes at least 2), and a fourth would be an idle full-batch sweep on the DSO task.
_PEELED_SWEEPS = 3


def _loop(
    network: RadialNetwork, base: Array, tol: Array, v_start: Array, current_start: Array, max_iter: int, caps: list[int]
) -> _Carry:
    """Sweep every row of `base` (tolerances `tol`, first iterate `v_start`,
    `current_start`) to convergence, compacting through `caps` (see above; `[]`:
    one plain loop)."""
    carry = _start(v_start, current_start)
    if caps and _PEELED_SWEEPS:
        carry = _peeled_sweeps(carry, network, base, tol, max_iter)

    def run(lanes, carry, cap):
        base, tol = lanes
        body = _make_body(network, base, tol, max_iter)
        return lax.while_loop(lambda c: jnp.sum(_active(c, tol, max_iter).astype(jnp.int32)) > cap, body, carry)

    return compacting_loop(run, lambda lanes, c: _active(c, lanes[1], max_iter), (base, tol), carry, caps, skip_when_done=True)


@functools.partial(jax.jit, static_argnums=4)
def _peeled_sweeps(
    carry: _Carry, network: RadialNetwork, base: Array, tol: Array, max_iter: int
) -> _Carry:
    """The first `_PEELED_SWEEPS` sweeps of a batched solve as straight-line code: a loop
    body pays XLA's carry copies and cannot fuse across sweeps. Same values as running
    them in the loop, since a sweep changes only active feeders either way. A named
    `jax.jit`, inlined by XLA, whose outputs are its first inputs' updates:
    `benchmarks/xla_tricks.py` drops it to time the solve with every sweep in the loop."""
    body = _make_body(network, base, tol, max_iter)
    for _ in range(_PEELED_SWEEPS):
        carry = body(carry)
    return carry


def _iterate(
    network: RadialNetwork,
    base: Float[Array, " n_sweep"],
    tol: Float[Array, ""],
    v_start: Float[Array, " n_branches"],
    current_start: Float[Array, " n_branches"],
    max_iter: int,
) -> tuple[Array, Array, Array, Array]:
    """`(n_iter, ℓ, v²_recv, residual)` of one feeder; under `vmap` the compacting rule."""

    def one(network, base, tol, v_start, current_start):
        n_iter, current_sq, v_recv, residual, _, _ = _loop(
            network, base[None], tol[None], v_start[None], current_start[None], max_iter, []
        )
        return n_iter[0], current_sq[0], v_recv[0], residual[0]

    solve = jax.custom_batching.custom_vmap(one)

    @solve.def_vmap
    def _iterate_batched(axis_size, in_batched, network, *lanes):
        net_b, *lanes_b = in_batched
        out_b = (True, True, True, True)
        if any(jax.tree.leaves(net_b)):
            # Batched networks (rare): the plain vmapped loop.
            axes = (jax.tree.map(lambda x: 0 if x else None, net_b), *(0 if b else None for b in lanes_b))
            return jax.vmap(one, in_axes=axes)(network, *lanes), out_b
        rows = [x if batched else jnp.broadcast_to(x, (axis_size, *x.shape)) for x, batched in zip(lanes, lanes_b)]
        carry = _loop(network, *rows, max_iter=max_iter, caps=compaction_caps(axis_size, _MIN_COMPACT))
        n_iter, current_sq, v_recv, residual, _, _ = carry
        return (n_iter, current_sq, v_recv, residual), out_b

    return solve(network, base, tol, v_start, current_start)


def _sweep(
    network: RadialNetwork,
    p_load: Float[Array, " n_nodes"],
    q_load: Float[Array, " n_nodes"],
    v_slack_sq: Float[Array, ""],
    tol: Float[Array, ""],
    warm: Float[Array, " n_branches"],
    max_iter: int,
) -> tuple[Array, ...]:
    """Sweeps from LinDistFlow (+ `warm`) until `max |Δv²| < tol` or `max_iter` sweeps.

    Returns `(v_sq, p_branch, q_branch, current_sq, n_iter, residual, lin_current_sq)`;
    the flows are those of the final currents, so they carry exactly the reported losses.
    """
    b = network.n_branches
    base = _sweep_base(network, p_load, q_load, v_slack_sq)
    # LinDistFlow once: its voltages are the first test's previous iterate, its currents
    # plus the warm-start correction (zero: a cold start) the first iterate, and the
    # solution's correction is taken against them.
    v_lin, current_lin = _lin_dist_flow(network, base)
    current_start = jnp.clip(current_lin + warm, 0.0, _CURRENT_SQ_BOUND)
    # The loop sees no tangents: the solution is differentiated implicitly (below).
    lanes = lax.stop_gradient((network, base, tol, v_lin, current_start))
    n_iter, current_sq, v_recv, residual = _iterate(*lanes, max_iter)
    current_sq, v_recv = _solution_derivatives(network, base, current_sq, v_recv, residual < tol)
    # The flows of the final currents (slack supply = Σ loads + Σ losses to rounding);
    # only the flow columns of the product.
    flows = jnp.clip(
        base[: 2 * b] + hp.matmul(current_sq, network.sweep_loss_matrix[:, : 2 * b]), -_FLOW_BOUND, _FLOW_BOUND
    )
    p_branch, q_branch = flows[:b], flows[b:]
    # v_recv holds the non-slack buses in bus order: insert the slack's (a static slice,
    # not a scatter or a product).
    slack = network.slack_bus_idx
    v_sq = jnp.concatenate([v_recv[:slack], v_slack_sq[None], v_recv[slack:]])
    return v_sq, p_branch, q_branch, current_sq, n_iter, residual, current_lin


def _fixed_point_residual(current_sq, base, matrices):
    """`ℓ' − ℓ` of one sweep: zero at the solution (the quasi-Newton step and the
    mixing only change how the iteration gets there)."""
    loss_matrix, lower, upper = matrices
    _, current_new = _sweep_terms(jnp.clip(base + hp.matmul(current_sq, loss_matrix), lower, upper), current_sq.shape[0])
    return current_new - current_sq


def _fixed_point_outputs(current_sq, base, matrices):
    loss_matrix, lower, upper = matrices
    v_recv, _ = _sweep_terms(jnp.clip(base + hp.matmul(current_sq, loss_matrix), lower, upper), current_sq.shape[0])
    return current_sq, v_recv


def _solution_derivatives(network: RadialNetwork, base: Array, current_sq: Array, v_recv: Array, settled: Array):
    """`(ℓ, v²_recv)` unchanged, differentiable w.r.t. `base` (the loads and slack
    voltage) by the implicit function theorem on the sweep's fixed point. Zero derivative
    where the sweep did not settle or the solution sits on a safety bound (there the
    clipped equations are not the physics)."""
    lower, upper = _sweep_bounds(network.n_branches)
    y = base + hp.matmul(lax.stop_gradient(current_sq), network.sweep_loss_matrix)
    inside = jnp.all((y > lower) & (y < upper))
    matrices = (network.sweep_loss_matrix.astype(base.dtype), lower.astype(base.dtype), upper.astype(base.dtype))
    return implicit_outputs(
        _fixed_point_residual, _fixed_point_outputs, (current_sq, v_recv), current_sq, base, matrices, settled & inside
    )


@_solver_entry(static_argnames=("max_iter",))
def radial_power_flow(
    network: RadialNetwork,
    p_load_pu: Float[ArrayLike, " n_nodes"],
    q_load_pu: Float[ArrayLike, " n_nodes"],
    v_slack: Float[ArrayLike, ""] | float = 1.0,
    max_iter: int = 100,
    tol: Float[ArrayLike, ""] | float = 1e-6,
    warm_start: Float[ArrayLike, " n_branches"] | None = None,
) -> RadialFlow:
    """Solve the balanced radial power flow for net bus loads.

    Net load = demand − local generation (negative where a bus exports). Never raises on a
    hard case: a feeder that cannot carry its load returns finite values with
    `converged=False`. Under `vmap` each feeder stops on its own test (the values of
    solving them one by one).

    **Arguments:**

    - `network`: the [`RadialNetwork`][powerzoojax.physics.RadialNetwork].
    - `p_load_pu`, `q_load_pu`: `(n_nodes,)` net loads [p.u.].
    - `v_slack`: slack voltage [p.u.]; may be traced.
    - `max_iter`: sweep budget (static Python int).
    - `tol`: bound on `max |Δv²|` between sweeps; may be traced.
    - `warm_start`: `(n_branches,)` the `loss_correction` of an earlier solve of the same
      feeder; `None` starts cold from LinDistFlow. It changes where the iteration starts,
      not what it converges to.

    **Returns:**

    A [`RadialFlow`][powerzoojax.physics.RadialFlow].
    """
    # float32 unless the loads are float64 (with x64 enabled): a float64 solve for
    # derivative checks against finite differences.
    dtype = working_float_dtype(p_load_pu, q_load_pu)
    network = cast_floating_leaves(network, dtype)
    p_load = jnp.asarray(p_load_pu, dtype)
    q_load = jnp.asarray(q_load_pu, dtype)
    v_slack_sq = jnp.square(jnp.asarray(v_slack, dtype))
    tol = jnp.asarray(tol, dtype)
    b = network.n_branches
    if warm_start is None:
        warm = jnp.zeros((b,), dtype)
    else:
        warm = jnp.asarray(warm_start, dtype)
        if warm.shape != (b,):
            raise ValueError(
                f"radial_power_flow: warm_start must have shape (n_branches,) = ({b},), got {warm.shape}"
            )
    v_sq, p_branch, q_branch, current_sq, n_iter, residual, lin_current_sq = _sweep(
        network, p_load, q_load, v_slack_sq, tol, warm, int(max_iter)
    )
    # min v² <= floor, max v² >= ceil or max |P|, |Q| >= bound, as one reduction.
    on_bound = (
        jnp.max(
            jnp.concatenate(
                [_V_SQ_FLOOR - v_sq, v_sq - _V_SQ_CEIL, jnp.abs(p_branch) - _FLOW_BOUND, jnp.abs(q_branch) - _FLOW_BOUND]
            )
        )
        >= 0.0
    )
    slack = network.slack_bus_idx
    converged = (residual < tol) & ~on_bound
    return RadialFlow(
        v_sq=v_sq,
        v_mag=jnp.sqrt(v_sq),
        p_branch=p_branch,
        q_branch=q_branch,
        p_loss=network.r_pu * current_sq,
        q_loss=network.x_pu * current_sq,
        p_slack=hp.matmul(p_branch, network.root_branch) + p_load[slack],
        q_slack=hp.matmul(q_branch, network.root_branch) + q_load[slack],
        converged=converged,
        n_iter=n_iter,
        residual=residual,
        loss_correction=jnp.where(converged, current_sq - lin_current_sq, 0.0),
    )
