"""The contingency screen's fast-decoupled loop: the intact network's operators, shared by
every outage set, plus low-rank corrections per set.

Solving each outage set with its own `ACNetwork` (`ac_network_with_line_outages_at` then
`ac_power_flow`) makes every product of the loop a batched matrix-vector product with
that set's own `Ybus` and B'/B'' inverses, which is bound by memory traffic. Here each
product is with the intact network's matrix, shared by the batch, and the outage enters as:

* currents: `Ybus' V = Ybus V - (the opened branches' pi-model currents at their ends)`;
* the P and Q half-steps: the Woodbury form of B'^-1 and B0^-1 (as in
  `_ac_outages`), applied as the shared product plus a rank-`2k` correction.

The loop works over all `N` buses: the shared inverses are stored with a zero row and
column at the slack (so the slack's angle and magnitude never move and its mismatch
rows are ignored), which keeps every per-iteration array at its full width instead of
dropping and re-inserting the slack each half-step. The opened lines' end values are
read with one-hot rows rather than index gathers, so that a batch of sets stays a batch
of dense elementwise work.

Each lane of the batch carries its own operating point (`ScreenLanes`): the lanes may be
the outage sets of one operating point, or of several at once.

The reactive-limit switches keep the intact network's Schur-complement operators (B''
changes near the opened lines only): like any fast-decoupled operator they set the
speed of the iteration, not its fixed point, which the exact mismatch decides. Instances
this loop leaves unconverged are re-solved by Newton on the outaged network
(`_contingency.contingency_screen`).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.core import _precision as hp
from powerzoojax.core._types import where
from powerzoojax.physics import _ac_pf_krylov as _krylov
from powerzoojax.physics._ac_outages import ACOutageModel, _reduced_index, _stamp_blocks
from powerzoojax.physics._ac_pf import (
    _FDLF_CG_STEPS,
    _ROUNDOFF_FACTOR,
    _line_flows,
    _schur_cg_solve,
    _switch_pv,
)
from powerzoojax.physics._compaction import compaction_caps, compacting_loop
from powerzoojax.physics._line_outages import _component_labels

# Smallest compacted batch: the last stage runs the few slowest sets (up to 30
# iterations against a mean of 6-11), so it is kept small.
_MIN_COMPACT = 8


class OutageTerms(eqx.Module):
    """What one outage set changes, for the shared-operator loop (per set under `vmap`)."""

    line_out: Bool[Array, " n_lines"]
    islanded: Bool[Array, ""]
    hot_from: Float[Array, "k n_nodes"]  # one-hot of the opened lines' from buses (0 when unused)
    hot_to: Float[Array, "k n_nodes"]
    y_g: Float[Array, "k 4"]  # opened pi-model terms (ff, ft, tf, tt), zero when unused
    y_b: Float[Array, "k 4"]
    ends_hot: Float[Array, "two_k n_nodes"]  # one-hot of the opened lines' ends (from, to, ...)
    bp_cols: Float[Array, "n_nodes two_k"]  # B'^-1 U over every bus (zero row at the slack)
    bp_core: Float[Array, "two_k two_k"]  # (I - S W)^-1 S
    b0_cols: Float[Array, "n_nodes two_k"]
    b0_core: Float[Array, "two_k two_k"]


def outage_terms(model: ACOutageModel, lines: Int[Array, " k"]) -> OutageTerms:
    """The low-rank description of opening `lines` (`-1` padding, repeats once)."""
    net = model.network
    n, slack, dtype = net.n_nodes, net.slack_idx, net.g.dtype
    m = n - 1
    lines = jnp.asarray(lines, jnp.int32)
    k = lines.shape[0]
    slots = jnp.clip(lines, 0, net.n_lines - 1)
    earlier = jnp.tril(lines[:, None] == lines[None, :], k=-1)
    used = (lines >= 0) & ~jnp.any(earlier, axis=1) & model.in_service[slots]
    out = jnp.zeros((net.n_lines,), bool).at[slots].max(used)
    labels = _component_labels(net.line_from, net.line_to, model.in_service & ~out, n)
    islanded = jnp.any(labels != labels[slack])
    weight = where(used & ~islanded, 1.0, 0.0).astype(dtype)
    f, t = net.line_from[slots], net.line_to[slots]
    (rf, vf), (rt, vt) = _reduced_index(f, slack), _reduced_index(t, slack)
    idx = jnp.stack([rf, rt], axis=1).reshape(-1)
    valid = jnp.stack([vf, vt], axis=1).reshape(-1)
    is_pv_red = jnp.zeros((m,), bool).at[model.pv_pos].set(True)
    off = jnp.array([[False, True], [True, False]])
    bp_blocks = _stamp_blocks(model.bp_stamp[slots], weight)
    bpp_blocks = _stamp_blocks(model.bpp_stamp[slots], weight)
    b0_blocks = where(off[None] & is_pv_red[idx].reshape(k, 2)[:, :, None], 0.0, bpp_blocks)
    eye_k = jnp.eye(k, dtype=dtype)

    def woodbury(a_inv, blocks):
        s = (eye_k[:, None, :, None] * blocks[:, :, None, :]).reshape(2 * k, 2 * k)
        cols = where(valid[None, :], a_inv[:, idx], 0.0)
        w = where(valid[:, None], cols[idx, :], 0.0)
        core = jnp.linalg.solve(jnp.eye(2 * k, dtype=dtype) - hp.matmul(s, w), s)
        return jnp.insert(cols, slack, 0.0, axis=0), core

    bp_cols, bp_core = woodbury(model.bp_inv, bp_blocks)
    b0_cols, b0_core = woodbury(model.b0_inv, b0_blocks)
    hot = lambda bus: jax.nn.one_hot(bus, n, dtype=dtype) * weight[:, None]  # noqa: E731
    # The slack's end reads zero: its rows of the shared products are zero anyway.
    ends = jnp.stack([f, t], axis=1).reshape(-1)
    ends_hot = jax.nn.one_hot(ends, n, dtype=dtype) * valid[:, None].astype(dtype)
    return OutageTerms(
        line_out=out, islanded=islanded, hot_from=hot(f), hot_to=hot(t),
        y_g=net.branch_g[slots] * weight[:, None], y_b=net.branch_b[slots] * weight[:, None],
        ends_hot=ends_hot, bp_cols=bp_cols, bp_core=bp_core, b0_cols=b0_cols, b0_core=b0_core,
    )


def _low_rank(x, cols, core, ends_hot):
    """`x + cols core (x at the opened ends)`: the Woodbury correction of a shared
    inverse's product `x` (one-hot reads and a rank-`2k` outer product: elementwise work
    under `vmap`, where an index gather per set is not)."""
    at_ends = jnp.sum(ends_hot * x[None, :], axis=1)
    weights = jnp.sum(core * at_ends[None, :], axis=1)
    return x + jnp.sum(cols * weights[None, :], axis=1)


class ScreenLanes(eqx.Module):
    """One lane's operating point (per lane under `vmap`): what the loop reads besides
    the outage set."""

    p_sched: Float[Array, " n_nodes"]  # scheduled net P [p.u.]
    vs: Float[Array, " n_nodes"]  # voltage set points [p.u.]
    q_lo: Float[Array, " n_nodes"]  # PV reactive limits net of load [p.u.]
    q_hi: Float[Array, " n_nodes"]


class _State(eqx.Module):
    vm: Array
    va: Array
    cos_va: Array  # cos/sin of `va` (the P half-step computes those of its angles anyway)
    sin_va: Array
    is_pv: Array
    q_target: Array
    inherited: Array
    it: Array
    done: Array
    converged: Array


class ScreenSolution(eqx.Module):
    """One outage set's solution by the shared-operator loop."""

    vm: Float[Array, " n_nodes"]
    va: Float[Array, " n_nodes"]
    line_p_from_mw: Float[Array, " n_lines"]
    line_q_from_mvar: Float[Array, " n_lines"]
    line_p_to_mw: Float[Array, " n_lines"]
    line_q_to_mvar: Float[Array, " n_lines"]
    line_loading_mva: Float[Array, " n_lines"]
    converged: Bool[Array, ""]
    n_iter: Int[Array, ""]
    max_mismatch: Float[Array, ""]


def screen_start(
    model: ACOutageModel,
    p_gen_mw, q_gen_mvar, load_p_mw, load_q_mvar, v_set, init_vm, init_va, init_pv_limit,
    *, enforce_q_limits: bool,
) -> tuple[ScreenLanes, _State]:
    """One operating point's lane data and starting iterate (`init_*`: the intact
    solution, or a flat start when `None`)."""
    net = model.network
    dtype = jnp.result_type(p_gen_mw, load_p_mw, load_q_mvar)
    cast = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    n, slack, base = net.n_nodes, net.slack_idx, net.base_mva
    unit_map = jax.nn.one_hot(net.unit_bus, n, dtype=dtype).T
    load_map = jax.nn.one_hot(net.load_bus, n, dtype=dtype).T
    p_gen = cast(p_gen_mw) * cast(net.unit_on)
    q_gen = jnp.zeros_like(p_gen) if q_gen_mvar is None else cast(q_gen_mvar) * cast(net.unit_on)
    load_q = hp.matmul(load_map, cast(load_q_mvar))
    p_sched = (hp.matmul(unit_map, p_gen) - hp.matmul(load_map, cast(load_p_mw))) / base
    q_sched = (hp.matmul(unit_map, q_gen) - load_q) / base
    vs = cast(net.v_set) if v_set is None else cast(v_set)
    q_lo = (cast(net.q_min_mvar) - load_q) / base
    q_hi = (cast(net.q_max_mvar) - load_q) / base
    is_slack = jnp.arange(n) == slack
    is_pv0, q_target0 = net.is_pv, q_sched
    inherited0 = jnp.zeros((n,), bool)
    if init_pv_limit is not None and enforce_q_limits:
        side = jnp.asarray(init_pv_limit)
        inherited0 = net.is_pv & (side != 0)
        is_pv0 = net.is_pv & ~inherited0
        q_target0 = where(inherited0, where(side > 0, q_hi, q_lo), q_sched)
    va_ref = cast(net.va_ref)
    vm0 = jnp.ones((n,), dtype) if init_vm is None else cast(init_vm)
    va0 = jnp.full((n,), va_ref, dtype) if init_va is None else cast(init_va)
    vm0 = where(is_pv0 | is_slack, vs, vm0)
    state = _State(
        vm=vm0, va=va0, cos_va=jnp.cos(va0), sin_va=jnp.sin(va0), is_pv=is_pv0, q_target=q_target0,
        inherited=inherited0, it=jnp.zeros((), jnp.int32), done=jnp.zeros((), bool), converged=jnp.zeros((), bool),
    )
    return ScreenLanes(p_sched=p_sched, vs=vs, q_lo=q_lo, q_hi=q_hi), state


def fdlf_outage_solve(
    model: ACOutageModel,
    batch: OutageTerms,
    lanes: ScreenLanes,
    init: _State,
    *, max_iter, tol, enforce_q_limits: bool, max_step: float = 1.0,
) -> ScreenSolution:
    """Fast-decoupled power flows of the intact network with each of `batch`'s outage sets
    opened, at each lane's operating point (`batch`, `lanes` and `init`, from
    `screen_start`, share a leading lane axis; see the module docstring). The loop runs
    batched and compacts the still-active lanes like `ac_power_flow`'s batched loop
    (`_compaction`), so a few slow sets do not keep the whole batch iterating."""
    net = model.network
    dtype = lanes.p_sched.dtype
    cast = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    n, slack = net.n_nodes, net.slack_idx
    is_slack = jnp.arange(n) == slack
    floor = _ROUNDOFF_FACTOR * jnp.finfo(dtype).eps * cast(net.y_row_abs)
    # Per-bus tolerance of the P and Q rows; the slack's rows are not tested.
    row_tol = where(is_slack, jnp.inf, jnp.maximum(cast(tol), floor))
    y_real_t = cast(net.y_real_t)

    def full(a, axis):
        return jnp.insert(cast(a), slack, 0.0, axis=axis)

    # The shared operators over every bus, zero at the slack's row and column.
    bp_inv_t = full(full(net.fdlf_bp_inv.T, 0), 1)
    pq_solve_t = full(full(net.fdlf_pq_solve_t, 0), 1)
    pv_rhs, pv_sel, pv_out = full(net.fdlf_pv_rhs, 0), full(net.fdlf_pv_sel, 0), full(net.fdlf_pv_out, 1)
    pv_schur_t, pv_inv_schur = cast(net.fdlf_pv_schur_t), cast(net.fdlf_pv_inv_schur)

    def power(terms: OutageTerms, vm, cos_va, sin_va):
        yg, yb = cast(terms.y_g), cast(terms.y_b)
        hot_f, hot_t = cast(terms.hot_from), cast(terms.hot_to)
        e, f = vm * cos_va, vm * sin_va
        i_re, i_im = _krylov.dense_current(y_real_t)(e, f)
        ef, ff = jnp.sum(hot_f * e[None, :], axis=1), jnp.sum(hot_f * f[None, :], axis=1)
        et, ft = jnp.sum(hot_t * e[None, :], axis=1), jnp.sum(hot_t * f[None, :], axis=1)

        def cur(ks, ko, es, fs, eo, fo):
            re = yg[:, ks] * es - yb[:, ks] * fs + yg[:, ko] * eo - yb[:, ko] * fo
            im = yb[:, ks] * es + yg[:, ks] * fs + yb[:, ko] * eo + yg[:, ko] * fo
            return re, im

        (cf_re, cf_im), (ct_re, ct_im) = cur(0, 1, ef, ff, et, ft), cur(3, 2, et, ft, ef, ff)
        i_re = i_re - jnp.sum(cf_re[:, None] * hot_f + ct_re[:, None] * hot_t, axis=0)
        i_im = i_im - jnp.sum(cf_im[:, None] * hot_f + ct_im[:, None] * hot_t, axis=0)
        return e * i_re + f * i_im, f * i_re - e * i_im

    def mismatch(lane: ScreenLanes, p, q, is_pv, q_target):
        """P and Q mismatch over every bus, zero on the slack's rows and the PV buses' Q."""
        return where(is_slack, 0.0, p - lane.p_sched), where(is_pv | is_slack, 0.0, q - q_target)

    def within_tol(dp, dq):
        # |x| < tol, exactly, as one reduction: the sign of |x| - tol (-inf on the slack).
        return jnp.max(jnp.maximum(jnp.abs(dp) - row_tol, jnp.abs(dq) - row_tol)) < 0

    def body(terms: OutageTerms, lane: ScreenLanes, s: _State) -> _State:
        p, q = power(terms, s.vm, s.cos_va, s.sin_va)
        dp, dq0 = mismatch(lane, p, q, s.is_pv, s.q_target)
        err0 = jnp.max(jnp.maximum(jnp.abs(dp), jnp.abs(dq0)))
        is_pv, q_target, inherited, released = _switch_pv(
            enforce_q_limits, lane.q_lo, lane.q_hi, lane.vs, s.is_pv, s.q_target, q, err0, s.vm, s.inherited
        )
        assert inherited is not None  # the screen's state always carries it
        dq = where(is_pv | is_slack, 0.0, q - q_target)
        conv = within_tol(dp, dq) & ~released
        d_va = -_low_rank(hp.matmul(dp / s.vm, bp_inv_t), terms.bp_cols, terms.bp_core, terms.ends_hot)
        ok = jnp.all(jnp.isfinite(d_va))
        move_va = ok & ~conv
        va = s.va + where(move_va, jnp.clip(d_va, -max_step, max_step), 0.0)
        cos_va, sin_va = jnp.cos(va), jnp.sin(va)
        p, q = power(terms, s.vm, cos_va, sin_va)
        rhs = where(is_pv | is_slack, 0.0, q - q_target) / s.vm
        x = _low_rank(hp.matmul(rhs, pq_solve_t), terms.b0_cols, terms.b0_core, terms.ends_hot)
        sw = hp.matmul((~is_pv).astype(dtype), pv_sel) > 0.5
        y = _schur_cg_solve(pv_schur_t, pv_inv_schur, where(sw, hp.matmul(rhs, pv_rhs), 0.0), sw, _FDLF_CG_STEPS)
        x = x + hp.matmul(y, pv_out)
        finite = ok & jnp.all(jnp.isfinite(x))
        step = ~conv & finite
        vm = s.vm + where(step, jnp.clip(-x, -max_step, max_step), 0.0)
        vm = where(step, where(is_pv | is_slack, lane.vs, vm), s.vm)
        return _State(
            vm=vm, va=where(step, va, s.va), cos_va=where(step, cos_va, s.cos_va), sin_va=where(step, sin_va, s.sin_va),
            is_pv=is_pv, q_target=q_target, inherited=inherited,
            it=s.it + step.astype(jnp.int32), done=conv | ~finite, converged=conv,
        )

    def _finish(terms: OutageTerms, lane: ScreenLanes, s0: _State, s: _State) -> ScreenSolution:
        p, q = power(terms, s.vm, s.cos_va, s.sin_va)
        dp, dq = mismatch(lane, p, q, s.is_pv, s.q_target)
        err = jnp.max(jnp.maximum(jnp.abs(dp), jnp.abs(dq)))
        ok = jnp.isfinite(err) & jnp.all(jnp.isfinite(s.vm)) & jnp.all(jnp.isfinite(s.va))
        converged = (s.converged | within_tol(dp, dq)) & ok & ~terms.islanded
        vm, va = where(ok, s.vm, s0.vm), where(ok, s.va, s0.va)
        pf, qf, pt, qt, s_from, s_to = _line_flows(net, vm, va)
        opened = lambda x: where(terms.line_out, 0.0, x)  # noqa: E731
        return ScreenSolution(
            vm=vm, va=va, line_p_from_mw=opened(pf), line_q_from_mvar=opened(qf), line_p_to_mw=opened(pt),
            line_q_to_mvar=opened(qt), line_loading_mva=opened(jnp.maximum(s_from, s_to)), converged=converged,
            n_iter=s.it, max_mismatch=where(ok, err, jnp.asarray(jnp.finfo(dtype).max, dtype)),
        )

    max_iter = jnp.asarray(max_iter, jnp.int32)
    n_sets = batch.islanded.shape[0]
    step = jax.vmap(body)

    def active(_, s):
        return ~s.done & (s.it < max_iter)

    def run(lane_data, c, cap: int):
        terms, lane = lane_data

        def loop_body(c):
            act = active(lane_data, c)
            new = step(terms, lane, c)
            keep = lambda a, b: where(act.reshape(act.shape + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
            return jax.tree.map(keep, new, c)

        return jax.lax.while_loop(lambda c: jnp.sum(active(lane_data, c)) > cap, loop_body, c)

    caps = compaction_caps(n_sets, _MIN_COMPACT)
    s = compacting_loop(run, active, (batch, lanes), init, caps, skip_when_done=True)
    return jax.vmap(_finish)(batch, lanes, init, s)
