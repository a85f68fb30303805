"""The contingency screen's fast-decoupled loop: the intact network's operators, shared by
every outage set, plus low-rank corrections per set.

Solving each outage set with its own `ACNetwork` (`ac_network_with_line_outages_at` then
`ac_power_flow`) makes every product of the loop a batched matrix-vector product with
that set's own `Ybus` and B'/B'' inverses, which is bound by memory traffic (case 300, 300
sets: 46 ms per `Ybus` product against 5.5 ms for one shared matrix product). Here each
product is with the intact network's matrix, shared by the batch, and the outage enters as:

* currents: `Ybus' V = Ybus V - (the opened branches' pi-model currents at their ends)`;
* the P and Q half-steps: the Woodbury form of B'^-1 and B0^-1 (as in
  `_ac_outages`), applied as the shared product plus a rank-`2k` correction.

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
    _Q_SWITCH_MISMATCH,
    _ROUNDOFF_FACTOR,
    _drop,
    _insert_zero,
    _line_flows,
    _switched_schur_cg,
)
from powerzoojax.physics._compaction import compaction_caps, compacting_loop
from powerzoojax.physics._line_outages import _component_labels

# Smallest compacted batch (as `ac_power_flow`'s batched loop).
_MIN_COMPACT = 16


class OutageTerms(eqx.Module):
    """What one outage set changes, for the shared-operator loop (per set under `vmap`)."""

    line_out: Bool[Array, " n_lines"]
    islanded: Bool[Array, ""]
    hot_from: Float[Array, "k n_nodes"]  # one-hot of the opened lines' from buses (0 when unused)
    hot_to: Float[Array, "k n_nodes"]
    from_bus: Int[Array, " k"]
    to_bus: Int[Array, " k"]
    y_g: Float[Array, "k 4"]  # opened pi-model terms (ff, ft, tf, tt), zero when unused
    y_b: Float[Array, "k 4"]
    idx: Int[Array, " two_k"]  # opened lines' ends among the non-slack buses
    valid: Bool[Array, " two_k"]
    bp_cols: Float[Array, "n_pvpq two_k"]  # B'^-1 U
    bp_core: Float[Array, "two_k two_k"]  # (I - S W)^-1 S
    b0_cols: Float[Array, "n_pvpq two_k"]
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
        return cols, jnp.linalg.solve(jnp.eye(2 * k, dtype=dtype) - hp.matmul(s, w), s)

    bp_cols, bp_core = woodbury(model.bp_inv, bp_blocks)
    b0_cols, b0_core = woodbury(model.b0_inv, b0_blocks)
    hot = lambda bus: jax.nn.one_hot(bus, n, dtype=dtype) * weight[:, None]  # noqa: E731
    return OutageTerms(
        line_out=out, islanded=islanded, hot_from=hot(f), hot_to=hot(t), from_bus=f, to_bus=t,
        y_g=net.branch_g[slots] * weight[:, None], y_b=net.branch_b[slots] * weight[:, None],
        idx=idx, valid=valid, bp_cols=bp_cols, bp_core=bp_core, b0_cols=b0_cols, b0_core=b0_core,
    )


def _low_rank(x, cols, core, idx, valid):
    """`x + cols core (x[idx])`: the Woodbury correction of a shared inverse's product `x`."""
    return x + hp.matmul(cols, hp.matmul(core, where(valid, x[idx], 0.0)))


class _State(eqx.Module):
    vm: Array
    va: Array
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


def fdlf_outage_solve(
    model: ACOutageModel,
    batch: OutageTerms,
    p_gen_mw, q_gen_mvar, load_p_mw, load_q_mvar, v_set, init_vm, init_va, init_pv_limit,
    *, max_iter, tol, enforce_q_limits: bool, max_step: float = 1.0,
) -> ScreenSolution:
    """Fast-decoupled power flows of the intact network with each of `batch`'s outage sets
    opened (`batch` has a leading set axis; see the module docstring), started from `init_*`
    (the intact solution, or flat when `None`). The loop runs batched and compacts the
    still-active sets like `ac_power_flow`'s batched loop (`_compaction`), so a few slow
    sets do not keep the whole batch iterating."""
    net = model.network
    dtype = jnp.result_type(p_gen_mw, load_p_mw, load_q_mvar)
    cast = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    n, slack, base = net.n_nodes, net.slack_idx, net.base_mva
    m = n - 1
    red = lambda x: _drop(x, slack)  # noqa: E731
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
    floor = _ROUNDOFF_FACTOR * jnp.finfo(dtype).eps * red(cast(net.y_row_abs))
    row_tol = jnp.maximum(cast(tol), jnp.concatenate([floor, floor]))
    is_slack = jnp.arange(n) == slack
    y_real_t = cast(net.y_real_t)

    def power(terms, vm, va):
        yg, yb = cast(terms.y_g), cast(terms.y_b)
        hot_f, hot_t = cast(terms.hot_from), cast(terms.hot_to)
        e, f = vm * jnp.cos(va), vm * jnp.sin(va)
        i_re, i_im = _krylov.dense_current(y_real_t)(e, f)
        ef, ff, et, ft = e[terms.from_bus], f[terms.from_bus], e[terms.to_bus], f[terms.to_bus]

        def cur(ks, ko, es, fs, eo, fo):
            re = yg[:, ks] * es - yb[:, ks] * fs + yg[:, ko] * eo - yb[:, ko] * fo
            im = yb[:, ks] * es + yg[:, ks] * fs + yb[:, ko] * eo + yg[:, ko] * fo
            return re, im

        (cf_re, cf_im), (ct_re, ct_im) = cur(0, 1, ef, ff, et, ft), cur(3, 2, et, ft, ef, ff)
        i_re = i_re - hp.matmul(cf_re, hot_f) - hp.matmul(ct_re, hot_t)
        i_im = i_im - hp.matmul(cf_im, hot_f) - hp.matmul(ct_im, hot_t)
        return e * i_re + f * i_im, f * i_re - e * i_im

    def residual(p, q, is_pv, q_target):
        return jnp.concatenate([red(p - p_sched), red(where(is_pv, 0.0, q - q_target))])

    def switch(s: _State, q, err):
        if not enforce_q_limits:
            return s.is_pv, s.q_target, s.inherited, jnp.zeros((), bool)
        near = err < _Q_SWITCH_MISMATCH
        over, under = near & s.is_pv & (q > q_hi), near & s.is_pv & (q < q_lo)
        q_target = where(over, q_hi, where(under, q_lo, s.q_target))
        is_pv = s.is_pv & ~(over | under)
        # A switch inherited from the intact solution is tested once for a return to PV
        # (the rule of `ac_power_flow`'s `init_pv_limit`).
        release = near & s.inherited & where(q_target >= q_hi, s.vm > vs, s.vm < vs)
        return is_pv | release, q_target, s.inherited & ~near, jnp.any(release)

    bp_inv_t, pq_solve_t = cast(net.fdlf_bp_inv).T, cast(net.fdlf_pq_solve_t)
    pv_sel, pv_out = cast(net.fdlf_pv_sel), cast(net.fdlf_pv_out)

    def body(terms: OutageTerms, s: _State) -> _State:
        p, q = power(terms, s.vm, s.va)
        err0 = jnp.max(jnp.abs(residual(p, q, s.is_pv, s.q_target)))
        is_pv, q_target, inherited, released = switch(s, q, err0)
        f = residual(p, q, is_pv, q_target)
        conv = jnp.all(jnp.abs(f) < row_tol) & ~released
        vm_red = red(s.vm)
        d_va = -_low_rank(hp.matmul(f[:m] / vm_red, bp_inv_t), terms.bp_cols, terms.bp_core, terms.idx, terms.valid)
        ok = jnp.all(jnp.isfinite(d_va))
        va = s.va + _insert_zero(where(ok & ~conv, jnp.clip(d_va, -max_step, max_step), 0.0), slack)
        p, q = power(terms, s.vm, va)
        rhs = red(where(is_pv, 0.0, q - q_target)) / vm_red
        x = _low_rank(hp.matmul(rhs, pq_solve_t), terms.b0_cols, terms.b0_core, terms.idx, terms.valid)
        sw = hp.matmul(red(~is_pv).astype(dtype), pv_sel) > 0.5
        x = x + hp.matmul(_switched_schur_cg(net, dtype, rhs, sw, _FDLF_CG_STEPS), pv_out)
        finite = ok & jnp.all(jnp.isfinite(x))
        step = ~conv & finite
        vm = s.vm + _insert_zero(where(step, jnp.clip(-x, -max_step, max_step), 0.0), slack)
        vm = where(step, where(is_pv | is_slack, vs, vm), s.vm)
        return _State(
            vm=vm, va=where(step, va, s.va), is_pv=is_pv, q_target=q_target, inherited=inherited,
            it=s.it + step.astype(jnp.int32), done=conv | ~finite, converged=conv,
        )

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
    init = _State(
        vm=vm0, va=va0, is_pv=is_pv0, q_target=q_target0, inherited=inherited0,
        it=jnp.zeros((), jnp.int32), done=jnp.zeros((), bool), converged=jnp.zeros((), bool),
    )
    def _finish(terms: OutageTerms, s: _State) -> ScreenSolution:
        p, q = power(terms, s.vm, s.va)
        f = residual(p, q, s.is_pv, s.q_target)
        err = jnp.max(jnp.abs(f))
        ok = jnp.isfinite(err) & jnp.all(jnp.isfinite(s.vm)) & jnp.all(jnp.isfinite(s.va))
        converged = (s.converged | jnp.all(jnp.abs(f) < row_tol)) & ok & ~terms.islanded
        vm, va = where(ok, s.vm, vm0), where(ok, s.va, va0)
        pf, qf, pt, qt, s_from, s_to = _line_flows(net, vm, va)
        opened = lambda x: where(terms.line_out, 0.0, x)  # noqa: E731
        return ScreenSolution(
            vm=vm, va=va, line_p_from_mw=opened(pf), line_q_from_mvar=opened(qf), line_p_to_mw=opened(pt),
            line_q_to_mvar=opened(qt), line_loading_mva=opened(jnp.maximum(s_from, s_to)), converged=converged,
            n_iter=s.it, max_mismatch=where(ok, err, jnp.asarray(jnp.finfo(dtype).max, dtype)),
        )

    max_iter = jnp.asarray(max_iter, jnp.int32)
    n_sets = batch.islanded.shape[0]
    init = jax.tree.map(lambda x: jnp.broadcast_to(x, (n_sets, *jnp.shape(x))), init)
    step = jax.vmap(body)

    def active(_, s):
        return ~s.done & (s.it < max_iter)

    def run(lanes, c, cap: int):
        def loop_body(c):
            act = active(lanes, c)
            new = step(lanes, c)
            keep = lambda a, b: where(act.reshape(act.shape + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
            return jax.tree.map(keep, new, c)

        return jax.lax.while_loop(lambda c: jnp.sum(active(lanes, c)) > cap, loop_body, c)

    s = compacting_loop(run, active, batch, init, compaction_caps(n_sets, _MIN_COMPACT), skip_when_done=True)
    return jax.vmap(lambda terms, s: _finish(terms, s))(batch, s)
