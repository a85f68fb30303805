"""Line outages of an AC network inside `jit`: the `ACNetwork` of a case with a traced set
of lines opened, ready for [`ac_power_flow`][powerzoojax.physics.ac_power_flow].

`make_ac_outage_model(case)` keeps, next to the case's `ACNetwork`, each branch's stamps on
`Ybus`, on the fast-decoupled B' and on B'' (2 x 2 blocks at its end buses) and the base
B', B'' matrices. Opening a set of lines in the graph subtracts their stamps from `Ybus`
(and zeroes their pi-model terms, so their flows read zero), and rebuilds the
fast-decoupled operators that `make_ac_network` inverts on the host:

* up to `m / 8` lines at once (N-1, N-2 screening; `m` = non-slack buses) by a Woodbury
  update of the host inverses of B' and B0 (B'' with the PV rows reduced to their
  diagonal): a `(2k x 2k)` solve and a rank-`2k` product per outage set;
* more (a boolean mask over every line) by a dense inverse of the rebuilt B', B0 in the graph.

Both are exact. The Woodbury update is the choice wherever it applies: its cost grows
with the number of opened lines, the dense inverses' with the network's size
(`benchmarks/results/contingency.md`). The Schur-complement operators of buses switched from PV to PQ follow from
B0's inverse without another factorisation (`_switch_operators`).

An outage set that cuts buses off the slack is detected on the graph (the connected
components of the remaining lines) and flagged; the network is then returned unchanged
(every value finite), as [`line_outage_ptdf`][powerzoojax.physics.line_outage_ptdf] does
in DC.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.case._matrices import _branch_pi_terms, build_ybus
from powerzoojax.core import _precision as hp
from powerzoojax.core._types import where
from powerzoojax.physics._ac_pf import ACNetwork, _fast_decoupled_cases, make_ac_network
from powerzoojax.physics._line_outages import _component_labels

# Opened lines per set up to which the Woodbury update is used (as a share of the
# non-slack buses `m`): its cost grows as m^2 k + k^3 against m^3 for the dense inverses.
_WOODBURY_MAX_SHARE = 1.0 / 8.0


class ACOutageModel(eqx.Module):
    """An AC network with what opening its lines in the graph needs; build with
    [`make_ac_outage_model`][powerzoojax.physics.make_ac_outage_model].

    **Arguments:**

    - `network`: the case's [`ACNetwork`][powerzoojax.physics.ACNetwork], every line as in the case.
    - `in_service`: `(L,)` lines in service in the case.
    - `bp_stamp`, `bpp_stamp`: `(L, 4)` each branch's (ff, ft, tf, tt) entries in the
      fast-decoupled B' and B'' [p.u.] (zero for out-of-service lines).
    - `bp`, `bpp`: `(m, m)` B' and B'' over the non-slack buses.
    - `bp_inv`, `b0_inv`: their host inverses (B0: B'' with the PV rows reduced to their diagonal).
    - `pv_pos`, `pq_pos`: positions of the initial PV and of the PQ buses among the non-slack buses.
    """

    network: ACNetwork
    in_service: Bool[Array, " n_lines"]
    bp_stamp: Float[Array, "n_lines 4"]
    bpp_stamp: Float[Array, "n_lines 4"]
    bp: Float[Array, "n_pvpq n_pvpq"]
    bpp: Float[Array, "n_pvpq n_pvpq"]
    bp_inv: Float[Array, "n_pvpq n_pvpq"]
    b0_inv: Float[Array, "n_pvpq n_pvpq"]
    pv_pos: Int[Array, " n_pv"]
    pq_pos: Int[Array, " n_pq"]


class ACLineOutageNetwork(eqx.Module):
    """An [`ACNetwork`][powerzoojax.physics.ACNetwork] with some lines opened.

    When `islanded` is True, `network` is the model's network with nothing opened (finite,
    but not the outaged network): its power flow is not the outage's.

    **Arguments:**

    - `network`: the network with the lines opened.
    - `line_out`: `(L,)` the lines opened (the request restricted to in-service lines).
    - `islanded`: bool scalar, the opened lines cut buses off the slack.
    - `node_islanded`: `(N,)` the buses cut off.
    """

    network: ACNetwork
    line_out: Bool[Array, " n_lines"]
    islanded: Bool[Array, ""]
    node_islanded: Bool[Array, " n_nodes"]


def make_ac_outage_model(case: CaseData, network: ACNetwork | None = None, dtype=jnp.float32) -> ACOutageModel:
    """Prepare `case` for line outages inside `jit` (host-side, float64 products cast to `dtype`).

    **Arguments:**

    - `case`: the case.
    - `network`: its [`ACNetwork`][powerzoojax.physics.ACNetwork] (e.g. one built with a
      reference angle); `None` builds `make_ac_network(case, dtype)`.
    - `dtype`: dtype of the stored operators.

    **Returns:**

    An [`ACOutageModel`][powerzoojax.physics.ACOutageModel].
    """
    net = make_ac_network(case, dtype=dtype) if network is None else network
    if net.n_nodes != case.n_nodes or net.n_lines != case.n_lines:
        raise ValueError(
            f"make_ac_outage_model: network has {net.n_nodes} buses and {net.n_lines} lines, "
            f"expected the case's {case.n_nodes} and {case.n_lines}"
        )
    n, slack = int(case.n_nodes), int(case.slack_bus_idx)
    keep = np.flatnonzero(np.arange(n) != slack)
    case_p, case_pp = _fast_decoupled_cases(case)
    bp = -np.imag(build_ybus(case_p))[np.ix_(keep, keep)]
    bpp = -np.imag(build_ybus(case_pp))[np.ix_(keep, keep)]
    bp_stamp = -np.imag(np.stack(_branch_pi_terms(case_p), axis=1))
    bpp_stamp = -np.imag(np.stack(_branch_pi_terms(case_pp), axis=1))
    pv = np.asarray(net.is_pv)[keep]
    b0 = bpp.copy()
    b0[pv, :] = 0.0
    b0[pv, pv] = np.diag(bpp)[pv]
    with np.errstate(all="ignore"):
        try:
            bp_inv, b0_inv = np.linalg.inv(bp), np.linalg.inv(b0)
        except np.linalg.LinAlgError as err:
            raise ValueError("make_ac_outage_model: B' or B'' is singular; expected a connected case") from err
    cast = lambda x: jnp.asarray(np.asarray(x, np.float64), net.g.dtype)  # noqa: E731
    return ACOutageModel(
        network=net,
        in_service=jnp.asarray(np.asarray(case.line_status) > 0),
        bp_stamp=cast(bp_stamp),
        bpp_stamp=cast(bpp_stamp),
        bp=cast(bp),
        bpp=cast(bpp),
        bp_inv=cast(bp_inv),
        b0_inv=cast(b0_inv),
        pv_pos=jnp.asarray(np.flatnonzero(pv), jnp.int32),
        pq_pos=jnp.asarray(np.flatnonzero(~pv), jnp.int32),
    )


def _reduced_index(bus: Int[Array, "..."], slack: int) -> tuple[Int[Array, "..."], Bool[Array, "..."]]:
    """Position of `bus` among the non-slack buses, and False for the slack."""
    return where(bus > slack, bus - 1, bus), bus != slack


def _stamp_blocks(stamp: Float[Array, "k 4"], weight: Float[Array, " k"]) -> Float[Array, "k 2 2"]:
    return (stamp * weight[:, None]).reshape(-1, 2, 2)


def _woodbury_inverse(
    a_inv: Float[Array, "m m"], idx: Int[Array, " j"], valid: Bool[Array, " j"], s: Float[Array, "j j"]
) -> Float[Array, "m m"]:
    """`(A - U S U^T)^-1` from `A^-1`, `U` the columns `e_idx` (zero where not `valid`):
    `A^-1 + A^-1 U (I - S U^T A^-1 U)^-1 S U^T A^-1`."""
    cols = where(valid[None, :], a_inv[:, idx], 0.0)  # A^-1 U
    rows = where(valid[:, None], a_inv[idx, :], 0.0)  # U^T A^-1
    w = where(valid[:, None], cols[idx, :], 0.0)  # U^T A^-1 U
    core = jnp.linalg.solve(jnp.eye(idx.shape[0], dtype=a_inv.dtype) - hp.matmul(s, w), s)
    return a_inv + hp.matmul(cols, hp.matmul(core, rows))


def _switch_operators(model: ACOutageModel, b0_inv, bpp_pv_rows, dtype) -> dict:
    """The fast-decoupled PV->PQ switching operators of `make_ac_network`, from B0's inverse
    and the PV rows of B''. With B'' symmetric, B0^-1 = [[X, -X B_pq,pv D^-1], [0, D^-1]]
    (X = B_pq,pq^-1, D = B''s PV diagonal), so the PQ buses' response to the PV voltages,
    K = -X B_pq,pv, is B0^-1's (pq, pv) block times D, and the Schur right-hand side's PQ
    rows (and the switched voltages' placement plus the PQ response) are `select + K`."""
    pv, pq = model.pv_pos, model.pq_pos
    m = model.bp.shape[0]
    d_pv = jnp.take_along_axis(bpp_pv_rows, pv[:, None], axis=1)[:, 0]
    response_pq = b0_inv[pq[:, None], pv[None, :]] * d_pv[None, :]  # (n_pq, n_pv)
    schur = bpp_pv_rows[:, pv] + hp.matmul(bpp_pv_rows[:, pq], response_pq)
    diag = jnp.diagonal(schur)
    select = jnp.zeros((m, pv.shape[0]), dtype).at[pv, jnp.arange(pv.shape[0])].set(1.0)
    pv_rhs = select.at[pq, :].set(response_pq)
    is_pq = jnp.zeros((m,), bool).at[pq].set(True)
    return dict(
        fdlf_bpp_inv=b0_inv,
        fdlf_pq_solve_t=where(is_pq[:, None], b0_inv.T, 0.0),
        fdlf_pv_rhs=pv_rhs,
        fdlf_pv_sel=select,
        fdlf_pv_inv_schur=where(jnp.abs(diag) > 0, 1.0 / where(jnp.abs(diag) > 0, diag, 1.0), 0.0),
        fdlf_pv_schur_t=schur.T,
        fdlf_pv_out=pv_rhs.T,
    )


def _open_slots(model: ACOutageModel, slots: Int[Array, " k"], used: Bool[Array, " k"]) -> ACLineOutageNetwork:
    """Open the lines `slots[j]` where `used[j]` (distinct lines among the used slots)."""
    net = model.network
    n, slack, dtype = net.n_nodes, net.slack_idx, net.g.dtype
    m = n - 1
    k = slots.shape[0]
    used = used & model.in_service[slots]
    out = jnp.zeros((net.n_lines,), bool).at[slots].max(used)
    labels = _component_labels(net.line_from, net.line_to, model.in_service & ~out, n)
    node_islanded = labels != labels[slack]
    islanded = jnp.any(node_islanded)
    weight = where(used & ~islanded, 1.0, 0.0).astype(dtype)
    f, t = net.line_from[slots], net.line_to[slots]

    # Ybus without the opened branches' pi models; their own terms zeroed (flows read 0).
    # As products of one-hot maps rather than scatter-adds: a batched scatter into a copy
    # of an (N x N) matrix is an element loop on a CPU (`benchmarks/results/history.md`).
    rows = jax.nn.one_hot(jnp.stack([f, f, t, t], axis=1).reshape(-1), n, dtype=dtype)
    cols = jax.nn.one_hot(jnp.stack([f, t, f, t], axis=1).reshape(-1), n, dtype=dtype)

    def minus_stamps(y, stamps):
        return y - hp.matmul(rows.T, (stamps[slots] * weight[:, None]).reshape(-1)[:, None] * cols)

    g, b = minus_stamps(net.g, net.branch_g), minus_stamps(net.b, net.branch_b)
    keep_line = where(out & ~islanded, 0.0, 1.0).astype(dtype)[:, None]
    y_real_t = jnp.concatenate(
        [jnp.concatenate([g.T, b.T], axis=1), jnp.concatenate([-b.T, g.T], axis=1)], axis=0
    )

    # Fast-decoupled operators: the stamps on the non-slack buses.
    (rf, vf), (rt, vt) = _reduced_index(f, slack), _reduced_index(t, slack)
    idx = jnp.stack([rf, rt], axis=1).reshape(-1)  # (2k,)
    valid = jnp.stack([vf, vt], axis=1).reshape(-1)
    bp_blocks = _stamp_blocks(model.bp_stamp[slots], weight)
    bpp_blocks = _stamp_blocks(model.bpp_stamp[slots], weight)
    is_pv_red = jnp.zeros((m,), bool).at[model.pv_pos].set(True)
    # B0 keeps only the diagonal of a PV bus's row.
    pv_end = is_pv_red[idx].reshape(k, 2)
    off = jnp.array([[False, True], [True, False]])
    b0_blocks = where(off[None] & pv_end[:, :, None], 0.0, bpp_blocks)

    def block_diag(blocks):
        eye = jnp.eye(k, dtype=dtype)
        return (eye[:, None, :, None] * blocks[:, :, None, :]).reshape(2 * k, 2 * k)

    def scatter(mat, blocks):
        r = jnp.repeat(idx.reshape(k, 2), 2, axis=1).reshape(-1)
        c = jnp.tile(idx.reshape(k, 2), (1, 2)).reshape(-1)
        ok = (jnp.repeat(valid.reshape(k, 2), 2, axis=1) & jnp.tile(valid.reshape(k, 2), (1, 2))).reshape(-1)
        return mat.at[r, c].add(-where(ok, blocks.reshape(-1), 0.0))

    if k <= max(1, int(_WOODBURY_MAX_SHARE * m)):
        bp_inv = _woodbury_inverse(model.bp_inv, idx, valid, block_diag(bp_blocks))
        b0_inv = _woodbury_inverse(model.b0_inv, idx, valid, block_diag(b0_blocks))
        # The PV rows of B'' after the outages (only rows of PV buses at an opened line's end change).
        pv_rows = _pv_rows_update(model, idx, valid, block_diag(bpp_blocks))
    else:
        bp_new = scatter(model.bp, bp_blocks)
        b0_full = scatter(model.bpp, b0_blocks)
        diag_new = jnp.diagonal(scatter(model.bpp, bpp_blocks))
        b0_new = where(is_pv_red[:, None], jnp.diag(diag_new), b0_full)
        bp_inv, b0_inv = jnp.linalg.inv(bp_new), jnp.linalg.inv(b0_new)
        pv_rows = scatter(model.bpp, bpp_blocks)[model.pv_pos]
    ops = _switch_operators(model, b0_inv, pv_rows, dtype)
    network = eqx.tree_at(
        lambda x: (x.g, x.b, x.y_real_t, x.y_row_abs, x.branch_g, x.branch_b, x.fdlf_bp_inv,
                   x.fdlf_bpp_inv, x.fdlf_pq_solve_t, x.fdlf_pv_rhs, x.fdlf_pv_sel, x.fdlf_pv_inv_schur,
                   x.fdlf_pv_schur_t, x.fdlf_pv_out),
        net,
        (g, b, y_real_t, jnp.sum(jnp.sqrt(g * g + b * b), axis=1), net.branch_g * keep_line,
         net.branch_b * keep_line, bp_inv, ops["fdlf_bpp_inv"], ops["fdlf_pq_solve_t"], ops["fdlf_pv_rhs"],
         ops["fdlf_pv_sel"], ops["fdlf_pv_inv_schur"], ops["fdlf_pv_schur_t"], ops["fdlf_pv_out"]),
    )
    return ACLineOutageNetwork(network=network, line_out=out, islanded=islanded, node_islanded=node_islanded)


def _pv_rows_update(model: ACOutageModel, idx, valid, s) -> Float[Array, "n_pv n_pvpq"]:
    """The PV buses' rows of B'' minus `U S U^T` (`U` the columns `e_idx`), without forming B''."""
    m = model.bp.shape[0]
    rows = model.bpp[model.pv_pos]
    hit_row = (model.pv_pos[:, None] == idx[None, :]) & valid[None, :]  # (n_pv, 2k): U's PV rows
    col_hot = jax.nn.one_hot(idx, m, dtype=rows.dtype) * valid[:, None].astype(rows.dtype)  # U^T
    return rows - hp.matmul(hit_row.astype(rows.dtype), hp.matmul(s, col_hot))


def ac_network_with_line_outages(model: ACOutageModel, line_out: Bool[Array, " n_lines"]) -> ACLineOutageNetwork:
    """The network of `model` with the lines where `line_out` is True opened.

    `line_out` may be traced (`jit` / `vmap` over masks: no recompile when it changes);
    lines already out of service in the case are ignored. The fast-decoupled operators are
    rebuilt by dense inverses in the graph (any number of outages); for a few lines at a
    time, [`ac_network_with_line_outages_at`][powerzoojax.physics.ac_network_with_line_outages_at]
    costs a low-rank update instead.

    **Arguments:**

    - `model`: the [`ACOutageModel`][powerzoojax.physics.ACOutageModel].
    - `line_out`: `(L,)` bool outage mask.

    **Returns:**

    An [`ACLineOutageNetwork`][powerzoojax.physics.ACLineOutageNetwork].
    """
    n_lines = model.network.n_lines
    return _open_slots(model, jnp.arange(n_lines, dtype=jnp.int32), jnp.asarray(line_out, bool))


def ac_network_with_line_outages_at(model: ACOutageModel, lines: Int[Array, " k"]) -> ACLineOutageNetwork:
    """[`ac_network_with_line_outages`][powerzoojax.physics.ac_network_with_line_outages] for at
    most `k` lines given by index: the fast-decoupled inverses follow by a Woodbury update
    (a `(2k x 2k)` solve), so screening every single-line outage is a `vmap` over
    `lines[:, None]`.

    **Arguments:**

    - `model`: the [`ACOutageModel`][powerzoojax.physics.ACOutageModel].
    - `lines`: `(k,)` 0-based line indices; `-1` is no line (padding); repeats count once.

    **Returns:**

    An [`ACLineOutageNetwork`][powerzoojax.physics.ACLineOutageNetwork].
    """
    lines = jnp.asarray(lines, jnp.int32)
    slots = jnp.clip(lines, 0, model.network.n_lines - 1)
    earlier = jnp.tril(lines[:, None] == lines[None, :], k=-1)
    return _open_slots(model, slots, (lines >= 0) & ~jnp.any(earlier, axis=1))




def _in_graph_model(case: CaseData, network: ACNetwork, line_out: Bool[Array, " n_lines"]):
    """B', B'' (over the non-slack buses, `line_out` opened) and the PV / PQ positions built
    in the graph from the case's branch data: for params whose case and network are traced."""
    n, slack, dtype = network.n_nodes, network.slack_idx, network.g.dtype
    f32 = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    keep = f32(jnp.asarray(case.line_status) > 0) * f32(~jnp.asarray(line_out, bool))
    x, r, b, ratio = f32(case.line_x), f32(case.line_r), f32(case.line_b), f32(case.line_ratio)
    w_p = keep / x  # B': r = 0, no charging, taps 1
    y_im = -x / (r * r + x * x)  # Im(1 / (r + jx))
    s_tt = -(y_im + b / 2.0) * keep  # -Im of y_tt, y_ff = y_tt / ratio^2, y_ft = y_tf = -y_s / ratio
    s_ft = y_im / ratio * keep
    hot_f = jax.nn.one_hot(network.line_from, n, dtype=dtype)
    hot_t = jax.nn.one_hot(network.line_to, n, dtype=dtype)

    def assemble(ff, ft, tt):
        return (hp.matmul(hot_f.T, ff[:, None] * hot_f) + hp.matmul(hot_f.T, ft[:, None] * hot_t)
                + hp.matmul(hot_t.T, ft[:, None] * hot_f) + hp.matmul(hot_t.T, tt[:, None] * hot_t))

    reduce = lambda a: jnp.delete(jnp.delete(a, slack, axis=0, assume_unique_indices=True), slack, axis=1,  # noqa: E731
                                  assume_unique_indices=True)
    bp = reduce(assemble(w_p, -w_p, w_p))
    bpp = reduce(assemble(s_tt / (ratio * ratio), s_ft, s_tt) - jnp.diag(f32(network.shunt_b)))
    pv_pos = jnp.argmax(network.fdlf_pv_sel, axis=0).astype(jnp.int32)
    m, n_pv = n - 1, network.fdlf_pv_sel.shape[1]
    is_pv_red = jnp.zeros((m,), bool).at[pv_pos].set(True)
    pq_pos = jnp.nonzero(~is_pv_red, size=m - n_pv)[0].astype(jnp.int32)
    return bp, bpp, pv_pos, pq_pos, is_pv_red


def _branch_terms_of_case(case: CaseData, dtype) -> tuple[Array, Array]:
    """`(L, 4)` real and imaginary pi-model terms (ff, ft, tf, tt) of every in-service branch,
    from the case's branch data in the graph (as `make_ac_network` builds them on the host)."""
    f = lambda x: jnp.asarray(x).astype(jnp.complex64 if dtype == jnp.float32 else jnp.complex128)  # noqa: E731
    on = f(jnp.asarray(case.line_status) > 0)
    y_s = on / (f(case.line_r) + 1j * f(case.line_x))
    tap = f(case.line_ratio) * jnp.exp(1j * jnp.deg2rad(f(case.line_angle)))
    y_tt = y_s + on * 1j * f(case.line_b) / 2.0
    y = jnp.stack([y_tt / (tap * jnp.conj(tap)), -y_s / jnp.conj(tap), -y_s / tap, y_tt], axis=1)
    return jnp.real(y).astype(dtype), jnp.imag(y).astype(dtype)


def ac_network_with_line_outages_of_case(
    case: CaseData, network: ACNetwork, line_out: Bool[Array, " n_lines"], already_out: Bool[Array, " n_lines"] | None = None
) -> ACLineOutageNetwork:
    """[`ac_network_with_line_outages`][powerzoojax.physics.ac_network_with_line_outages]
    without a host-built model: the fast-decoupled matrices are assembled from the case's
    branch data and inverted in the graph, so `case` and `network` may themselves be traced
    (env params under `jit`). `network` must be `make_ac_network(case)` (any reference angle).

    **Arguments:**

    - `case`: the case.
    - `network`: its [`ACNetwork`][powerzoojax.physics.ACNetwork].
    - `line_out`: `(L,)` bool outage mask.
    - `already_out`: `(L,)` lines `network` has open already (a previous result's
      `line_out`): they are closed again first, so the new mask replaces the old one.

    **Returns:**

    An [`ACLineOutageNetwork`][powerzoojax.physics.ACLineOutageNetwork].
    """
    n, slack, dtype = network.n_nodes, network.slack_idx, network.g.dtype
    in_service = jnp.asarray(case.line_status) > 0
    if already_out is not None:
        closed = network.branch_g, network.branch_b
        terms_g, terms_b = _branch_terms_of_case(case, dtype)
        back = (jnp.asarray(already_out, bool) & in_service).astype(dtype)[:, None]
        rows_ = jax.nn.one_hot(jnp.concatenate([network.line_from, network.line_from, network.line_to, network.line_to]),
                               n, dtype=dtype)
        cols_ = jax.nn.one_hot(jnp.concatenate([network.line_from, network.line_to, network.line_from, network.line_to]),
                               n, dtype=dtype)
        plus = lambda y, t: y + hp.matmul(rows_.T, (t * back).T.reshape(-1)[:, None] * cols_)  # noqa: E731
        network = eqx.tree_at(
            lambda x: (x.g, x.b, x.branch_g, x.branch_b), network,
            (plus(network.g, terms_g), plus(network.b, terms_b), closed[0] + terms_g * back, closed[1] + terms_b * back),
        )
    out = jnp.asarray(line_out, bool) & in_service
    labels = _component_labels(network.line_from, network.line_to, in_service & ~out, n)
    node_islanded = labels != labels[slack]
    islanded = jnp.any(node_islanded)
    opened = out & ~islanded
    bp, bpp, pv_pos, pq_pos, is_pv_red = _in_graph_model(case, network, opened)
    b0 = where(is_pv_red[:, None], jnp.diag(jnp.diagonal(bpp)), bpp)
    bp_inv, b0_inv = jnp.linalg.inv(bp), jnp.linalg.inv(b0)
    keep_line = where(opened, 0.0, 1.0).astype(dtype)
    rows = jax.nn.one_hot(jnp.concatenate([network.line_from, network.line_from, network.line_to, network.line_to]), n,
                          dtype=dtype)
    cols = jax.nn.one_hot(jnp.concatenate([network.line_from, network.line_to, network.line_from, network.line_to]), n,
                          dtype=dtype)

    def minus_stamps(y, stamps):
        vals = (stamps * (1.0 - keep_line)[:, None]).T.reshape(-1)
        return y - hp.matmul(rows.T, vals[:, None] * cols)

    g, b = minus_stamps(network.g, network.branch_g), minus_stamps(network.b, network.branch_b)
    shim = ACOutageModel(
        network=network, in_service=in_service, bp_stamp=jnp.zeros((network.n_lines, 4), dtype),
        bpp_stamp=jnp.zeros((network.n_lines, 4), dtype), bp=bp, bpp=bpp, bp_inv=bp_inv, b0_inv=b0_inv,
        pv_pos=pv_pos, pq_pos=pq_pos,
    )
    ops = _switch_operators(shim, b0_inv, bpp[pv_pos], dtype)
    y_real_t = jnp.concatenate([jnp.concatenate([g.T, b.T], axis=1), jnp.concatenate([-b.T, g.T], axis=1)], axis=0)
    net = eqx.tree_at(
        lambda x: (x.g, x.b, x.y_real_t, x.y_row_abs, x.branch_g, x.branch_b, x.fdlf_bp_inv, x.fdlf_bpp_inv,
                   x.fdlf_pq_solve_t, x.fdlf_pv_rhs, x.fdlf_pv_inv_schur, x.fdlf_pv_schur_t, x.fdlf_pv_out),
        network,
        (g, b, y_real_t, jnp.sum(jnp.sqrt(g * g + b * b), axis=1), network.branch_g * keep_line[:, None],
         network.branch_b * keep_line[:, None], bp_inv, ops["fdlf_bpp_inv"], ops["fdlf_pq_solve_t"],
         ops["fdlf_pv_rhs"], ops["fdlf_pv_inv_schur"], ops["fdlf_pv_schur_t"], ops["fdlf_pv_out"]),
    )
    return ACLineOutageNetwork(network=net, line_out=out, islanded=islanded, node_islanded=node_islanded)


__all__ = [
    "ACLineOutageNetwork", "ACOutageModel", "ac_network_with_line_outages", "ac_network_with_line_outages_at",
    "ac_network_with_line_outages_of_case", "make_ac_outage_model",
]
