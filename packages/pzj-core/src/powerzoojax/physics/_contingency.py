"""Batched AC contingency screening: one program solves the power flow of every outage set.

`contingency_screen(model, p_gen, q_gen, load_p, load_q, outages)` solves the intact network
once, then every row of `outages` (line indices, `-1` padding) warm-started from the intact
solution (voltages and PV->PQ switches), as contingency tools do. With the fast-decoupled
methods the outage sets share the intact network's matrices and each adds a low-rank
correction (`_contingency_fdlf`); `"fdlf"` then re-solves by Newton, on the outaged network
([`ac_network_with_line_outages_at`][powerzoojax.physics.ac_network_with_line_outages_at]),
every set that loop leaves unconverged; `"newton"` solves every set that way. The sets are a
batch (in chunks of `batch_size` when given), so a screen of every single-line outage of a
case is one compiled program, and changing the sets does not recompile. Operating points
given with a leading snapshot axis `(K, ...)` multiply the batch: every set at every
snapshot, each started from its snapshot's intact solution.

Per outage set it reports bus voltages, branch flows and loadings against ratings, the
overloaded lines, the buses outside their voltage band, the convergence flag, the
iteration count and whether the set islands buses. An islanding set is flagged, not solved:
its voltages and flows are the intact network's and `converged` is False.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case import CaseData
from powerzoojax.core._types import FloatScalar, IntScalar, where
from powerzoojax.physics._ac_outages import ACOutageModel, ac_network_with_line_outages_at
from powerzoojax.physics._ac_pf import AC_PF_METHODS, NEWTON_STEPS, ACPFResult, ac_power_flow
from powerzoojax.physics._entry import solver_entry as _solver_entry
from powerzoojax.physics._contingency_fdlf import ScreenSolution as _Solved
from powerzoojax.physics._contingency_fdlf import fdlf_outage_solve, outage_terms, screen_start
from powerzoojax.physics._line_outages import _component_labels

# Outage sets the Newton fallback solves together (each round gathers this many of the
# sets the fast-decoupled loop left unconverged).
_FALLBACK_LANES = 16


def _newton_fallback(newton, n_lanes: int, res, islanded, batch_size):
    """Re-solve by Newton (`newton(lane ids)`, on the outaged network) every lane `res`
    leaves unconverged (islanding sets excepted), `_FALLBACK_LANES` at a time; a batch
    where every lane converged pays one loop test."""
    lanes = min(_FALLBACK_LANES, n_lanes, batch_size or n_lanes)
    todo0 = ~res.converged & ~islanded

    def body(carry):
        res, todo = carry
        pick = jnp.nonzero(todo, size=lanes, fill_value=n_lanes)[0]
        real = pick < n_lanes
        safe = jnp.minimum(pick, n_lanes - 1)
        solved, _ = jax.vmap(newton)(safe)
        solved = eqx.tree_at(lambda r: r.n_iter, solved, solved.n_iter + res.n_iter[safe])
        target = jnp.where(real, pick, n_lanes)  # out of range: dropped
        res = jax.tree.map(lambda a, b: a.at[target].set(b, mode="drop"), res, solved)
        return res, todo.at[target].set(False, mode="drop")

    res, _ = jax.lax.while_loop(lambda c: jnp.any(c[1]), body, (res, todo0))
    return res


class ContingencyResult(eqx.Module):
    """Result of [`contingency_screen`][powerzoojax.physics.contingency_screen]; `C` outage sets.

    With `K` operating points (snapshots) every field below gains a leading `K` axis
    (`vm` is `(K, C, N)`) and `base` holds the `K` intact solutions.

    **Arguments:**

    - `base`: the intact network's [`ACPFResult`][powerzoojax.physics.ACPFResult].
    - `outages`: `(C, k)` the screened line indices (`-1` padding).
    - `vm`, `va`: `(C, N)` bus voltage magnitude [p.u.] and angle [rad].
    - `line_p_from_mw`, `line_q_from_mvar`, `line_p_to_mw`, `line_q_to_mvar`: `(C, L)` end flows
      [MW, MVAr]; zero on the opened lines.
    - `line_loading_mva`: `(C, L)` the larger end's apparent power [MVA].
    - `loading_percent`: `(C, L)` loading over the rating [%]; 0 for lines without a rating.
    - `overloaded`: `(C, L)` lines above 100 % of their rating.
    - `n_overloads`: `(C,)` int, overloaded lines.
    - `max_loading_percent`: `(C,)` the most loaded line's loading [%].
    - `vm_low`, `vm_high`: `(C, N)` buses below / above their voltage band.
    - `n_voltage_violations`: `(C,)` int, buses outside their band.
    - `converged`: `(C,)` the power flow converged (False for an islanding set).
    - `islanded`: `(C,)` the set cuts buses off the slack (not solved).
    - `n_iter`: `(C,)` int, iterations taken from the warm start.
    - `max_mismatch`: `(C,)` largest mismatch at the returned iterate [p.u.].
    """

    base: ACPFResult
    outages: Int[Array, "*snapshots n_sets k"]
    vm: Float[Array, "*snapshots n_sets n_nodes"]
    va: Float[Array, "*snapshots n_sets n_nodes"]
    line_p_from_mw: Float[Array, "*snapshots n_sets n_lines"]
    line_q_from_mvar: Float[Array, "*snapshots n_sets n_lines"]
    line_p_to_mw: Float[Array, "*snapshots n_sets n_lines"]
    line_q_to_mvar: Float[Array, "*snapshots n_sets n_lines"]
    line_loading_mva: Float[Array, "*snapshots n_sets n_lines"]
    loading_percent: Float[Array, "*snapshots n_sets n_lines"]
    overloaded: Bool[Array, "*snapshots n_sets n_lines"]
    n_overloads: Int[Array, "*snapshots n_sets"]
    max_loading_percent: Float[Array, "*snapshots n_sets"]
    vm_low: Bool[Array, "*snapshots n_sets n_nodes"]
    vm_high: Bool[Array, "*snapshots n_sets n_nodes"]
    n_voltage_violations: Int[Array, "*snapshots n_sets"]
    converged: Bool[Array, "*snapshots n_sets"]
    islanded: Bool[Array, "*snapshots n_sets"]
    n_iter: Int[Array, "*snapshots n_sets"]
    max_mismatch: Float[Array, "*snapshots n_sets"]


@_solver_entry(static_argnames=("enforce_q_limits", "method", "newton_step", "batch_size", "warm_start"))
def contingency_screen(
    model: ACOutageModel,
    p_gen_mw: Float[Array, "... n_units"],
    q_gen_mvar: Float[Array, "... n_units"] | None,
    load_p_mw: Float[Array, "... n_loads"],
    load_q_mvar: Float[Array, "... n_loads"],
    outages: Int[Array, "..."],
    *,
    v_set: Float[Array, "... n_nodes"] | None = None,
    rate_mva: Float[Array, " n_lines"] | None = None,
    v_min: Float[Array, " n_nodes"] | float | FloatScalar = 0.94,
    v_max: Float[Array, " n_nodes"] | float | FloatScalar = 1.06,
    max_iter: int | IntScalar = 30,
    tol: float | FloatScalar = 1e-5,
    enforce_q_limits: bool = True,
    method: str = "fdlf",
    newton_step: str = "auto",
    batch_size: int | None = None,
    warm_start: bool = True,
) -> ContingencyResult:
    """AC power flow of every outage set in `outages` (one row each), batched in one program.

    **Arguments:**

    - `model`: the [`ACOutageModel`][powerzoojax.physics.ACOutageModel] of the case.
    - `p_gen_mw`, `q_gen_mvar`, `load_p_mw`, `load_q_mvar`, `v_set`: the operating point, as
      for [`ac_power_flow`][powerzoojax.physics.ac_power_flow] (`q_gen_mvar=None`: zeros).
      Any of them may carry a leading axis of `K` snapshots, `(K, ...)`, the others being
      shared: every outage set is then screened at every snapshot in the same program.
    - `outages`: `(C, k)` line indices opened together per set; `-1` pads shorter sets
      (e.g. `single_line_outages(case)` for N-1).
    - `rate_mva`: `(L,)` line ratings [MVA]; `None` or values `<= 0`: no rating.
    - `v_min`, `v_max`: voltage band [p.u.], scalars or `(N,)` (e.g. the case's `node_v_min`).
    - `max_iter`, `tol`, `enforce_q_limits`, `newton_step`: the power flow's options.
    - `method`: `"fdlf"` (default: the shared-operator fast-decoupled loop, then Newton on the
      sets it leaves unconverged), `"fdlf_only"` (that loop alone) or `"newton"` (static).
    - `batch_size`: (snapshot, set) pairs solved together (`None`: all at once); smaller
      bounds memory.
    - `warm_start`: start each outage from the intact solution (static).

    **Returns:**

    A [`ContingencyResult`][powerzoojax.physics.ContingencyResult].
    """
    if method not in AC_PF_METHODS:
        raise ValueError(f"contingency_screen: method must be one of {AC_PF_METHODS}, got {method!r}")
    if newton_step not in NEWTON_STEPS:
        raise ValueError(f"contingency_screen: newton_step must be one of {NEWTON_STEPS}, got {newton_step!r}")
    outages = jnp.asarray(outages)
    if outages.ndim != 2 or not jnp.issubdtype(outages.dtype, jnp.integer):
        raise ValueError(
            f"contingency_screen: outages must be a 2-D integer array (sets x lines), got shape "
            f"{outages.shape} and dtype {outages.dtype}"
        )
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"contingency_screen: batch_size must be a positive int or None, got {batch_size}")
    operating = dict(p_gen_mw=p_gen_mw, q_gen_mvar=q_gen_mvar, load_p_mw=load_p_mw, load_q_mvar=load_q_mvar, v_set=v_set)
    operating = {k: None if v is None else jnp.asarray(v) for k, v in operating.items()}
    batched = [k for k, v in operating.items() if v is not None and v.ndim == 2]
    if any(v is not None and v.ndim not in (1, 2) for v in operating.values()):
        raise ValueError("contingency_screen: the operating point's arrays must be 1-D, or 2-D (snapshots x ...)")
    snap_counts = {v.shape[0] for v in operating.values() if v is not None and v.ndim == 2}
    n_snap = snap_counts.pop() if batched else 1
    if snap_counts:
        raise ValueError(f"contingency_screen: the 2-D operating inputs {batched} disagree on the snapshot count")
    # Every input with a leading snapshot axis (K = 1 for a single operating point).
    point = {k: None if v is None else (v if k in batched else jnp.broadcast_to(v, (n_snap, *v.shape))) for k, v in operating.items()}
    opts = dict(max_iter=max_iter, tol=tol, enforce_q_limits=enforce_q_limits, method=method, newton_step=newton_step)

    def intact(pg, qg, pd, qd, vs):
        return ac_power_flow(model.network, pg, qg, pd, qd, vs, **opts)

    args = [point[k] for k in ("p_gen_mw", "q_gen_mvar", "load_p_mw", "load_q_mvar", "v_set")]
    if batched:
        axes = [None if a is None else 0 for a in args]
        base = jax.vmap(intact, in_axes=axes)(*args)
    else:
        base = jax.tree.map(lambda x: x[None], intact(*[None if a is None else a[0] for a in args]))
    pv_limit = base.pv_limit if enforce_q_limits else None
    outages = outages.astype(jnp.int32)
    n_sets = outages.shape[0]
    n_lanes = n_snap * n_sets  # lane = snapshot * n_sets + set

    def newton(lane):
        snap, lines = lane // n_sets, outages[lane % n_sets]
        pg, qg, pd, qd, vs = [None if a is None else a[snap] for a in args]
        start = (
            dict(init_vm=base.vm[snap], init_va=base.va[snap], init_pv_limit=None if pv_limit is None else pv_limit[snap])
            if warm_start else {}
        )
        opened = ac_network_with_line_outages_at(model, lines)
        res = ac_power_flow(opened.network, pg, qg, pd, qd, vs, **start, **opts)
        return _Solved(
            vm=res.vm, va=res.va, line_p_from_mw=res.line_p_from_mw, line_q_from_mvar=res.line_q_from_mvar,
            line_p_to_mw=res.line_p_to_mw, line_q_to_mvar=res.line_q_to_mvar, line_loading_mva=res.line_loading_mva,
            converged=res.converged & ~opened.islanded, n_iter=res.n_iter, max_mismatch=res.max_mismatch,
        ), opened.islanded

    def start_of(pg, qg, pd, qd, vs, vm, va, limit):
        init = (vm, va, limit) if warm_start else (None, None, None)
        return screen_start(model, pg, qg, pd, qd, vs, *init, enforce_q_limits=enforce_q_limits)

    def fast_inputs():
        """The sets' low-rank terms once (plus an empty set for padding), the snapshots' starts once."""
        padded_sets = jnp.concatenate([outages, jnp.full((1, outages.shape[1]), -1, jnp.int32)])
        all_terms = jax.vmap(lambda lines: outage_terms(model, lines))(padded_sets)
        start_args = [*args, base.vm, base.va, pv_limit]
        all_lanes, all_init = jax.vmap(start_of, in_axes=[None if a is None else 0 for a in start_args])(*start_args)
        return all_terms, all_lanes, all_init

    def solve_fast(terms, lanes, init):
        res = fdlf_outage_solve(
            model, terms, lanes, init, max_iter=max_iter, tol=tol, enforce_q_limits=enforce_q_limits
        )
        return res, terms.islanded

    def fast(lane_ids, all_terms, all_lanes, all_init):
        real = lane_ids < n_lanes
        set_idx, snap = jnp.where(real, lane_ids % n_sets, n_sets), jnp.where(real, lane_ids // n_sets, 0)
        lanes, init = jax.tree.map(lambda x: x[snap], (all_lanes, all_init))
        return solve_fast(jax.tree.map(lambda x: x[set_idx], all_terms), lanes, init)

    if method == "newton":
        if batch_size is None:
            res, islanded = jax.vmap(newton)(jnp.arange(n_lanes))
        else:
            res, islanded = jax.lax.map(newton, jnp.arange(n_lanes), batch_size=batch_size)
    elif batch_size is None or batch_size >= n_lanes:
        # Lanes in snapshot-major order: the sets' terms tiled, each snapshot's start repeated.
        all_terms, all_lanes, all_init = fast_inputs()
        terms = jax.tree.map(lambda x: jnp.tile(x[:n_sets], (n_snap,) + (1,) * (x.ndim - 1)), all_terms)
        lanes, init = jax.tree.map(lambda x: jnp.repeat(x, n_sets, axis=0), (all_lanes, all_init))
        res, islanded = solve_fast(terms, lanes, init)
    else:
        # Chunks of batch_size lanes, the last padded with the empty set (nothing opened).
        n_chunks = -(-n_lanes // batch_size)
        ids = jnp.arange(n_chunks * batch_size).reshape(n_chunks, batch_size)
        inputs = fast_inputs()
        res, islanded = jax.lax.map(lambda chunk: fast(chunk, *inputs), ids)
        res, islanded = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:])[:n_lanes], (res, islanded))
    if method == "fdlf":
        opts["method"] = "newton"
        res = _newton_fallback(newton, n_lanes, res, islanded, batch_size)
    if batched:
        outages_out = jnp.broadcast_to(outages, (n_snap, *outages.shape))
        res, islanded = jax.tree.map(lambda x: x.reshape(n_snap, n_sets, *x.shape[1:]), (res, islanded))
    else:
        outages_out = outages
        base = jax.tree.map(lambda x: x[0], base)

    dtype = res.vm.dtype
    rate = jnp.zeros((model.network.n_lines,), dtype) if rate_mva is None else jnp.asarray(rate_mva, dtype)
    # Each snapshot's and outage set's row of lines (explicitly, for batched results).
    rate = jnp.broadcast_to(rate, res.line_loading_mva.shape)
    has_rate = rate > 0
    loading_pct = where(has_rate, 100.0 * res.line_loading_mva / where(has_rate, rate, 1.0), 0.0)
    overloaded = loading_pct > 100.0
    vm_low = res.vm < jnp.asarray(v_min, dtype)
    vm_high = res.vm > jnp.asarray(v_max, dtype)
    lines_axis = res.line_loading_mva.ndim - 1
    converged = res.converged & ~islanded
    return ContingencyResult(
        base=base,
        outages=outages_out,
        vm=res.vm,
        va=res.va,
        line_p_from_mw=res.line_p_from_mw,
        line_q_from_mvar=res.line_q_from_mvar,
        line_p_to_mw=res.line_p_to_mw,
        line_q_to_mvar=res.line_q_to_mvar,
        line_loading_mva=res.line_loading_mva,
        loading_percent=loading_pct,
        overloaded=overloaded,
        n_overloads=jnp.sum(overloaded, axis=lines_axis, dtype=jnp.int32),
        max_loading_percent=jnp.max(loading_pct, axis=lines_axis),
        vm_low=vm_low,
        vm_high=vm_high,
        n_voltage_violations=jnp.sum(vm_low | vm_high, axis=-1, dtype=jnp.int32),
        converged=converged,
        islanded=islanded,
        n_iter=res.n_iter,
        max_mismatch=res.max_mismatch,
    )


def single_line_outages(case: CaseData, *, connected_only: bool = True) -> Int[np.ndarray, "n_sets 1"]:
    """Every N-1 line outage of `case` as a `(C, 1)` int32 array for
    [`contingency_screen`][powerzoojax.physics.contingency_screen] (host-side).

    **Arguments:**

    - `case`: the case.
    - `connected_only`: keep only the in-service lines whose outage leaves every bus
      connected to the slack (the others island buses and are flagged, not solved).

    **Returns:**

    `(C, 1)` int32 line indices.
    """
    in_service = np.flatnonzero(np.asarray(case.line_status) > 0)
    if connected_only:
        in_service = in_service[~_islanding_lines(case)[in_service]]
    return in_service.astype(np.int32)[:, None]


def sampled_line_pair_outages(case: CaseData, n_sets: int, *, seed: int = 0) -> Int[np.ndarray, "n_sets 2"]:
    """`n_sets` distinct random N-2 outage pairs of in-service lines (host-side), each of
    which leaves the network connected: a sample of the N-2 set for
    [`contingency_screen`][powerzoojax.physics.contingency_screen].

    **Arguments:**

    - `case`: the case.
    - `n_sets`: pairs to draw (at most the number of connected pairs).
    - `seed`: the NumPy generator's seed.

    **Returns:**

    `(n_sets, 2)` int32 line indices.
    """
    if n_sets < 1:
        raise ValueError(f"sampled_line_pair_outages: n_sets must be a positive int, got {n_sets}")
    lines = single_line_outages(case)[:, 0]
    n_pairs = lines.size * (lines.size - 1) // 2
    if n_sets > n_pairs:
        raise ValueError(f"sampled_line_pair_outages: n_sets={n_sets} exceeds the {n_pairs} pairs of this case")
    rng = np.random.default_rng(seed)
    status = np.asarray(case.line_status) > 0
    f, t, n = np.asarray(case.line_from_idx), np.asarray(case.line_to_idx), int(case.n_nodes)
    chosen: set[tuple[int, int]] = set()
    label = jax.jit(_component_labels, static_argnums=3)
    while len(chosen) < n_sets:
        a, b = sorted(rng.choice(lines, 2, replace=False).tolist())
        if (a, b) in chosen:
            continue
        active = status.copy()
        active[[a, b]] = False
        labels = np.asarray(label(jnp.asarray(f), jnp.asarray(t), jnp.asarray(active), n))
        if np.all(labels == labels[int(case.slack_bus_idx)]):
            chosen.add((a, b))
    return np.asarray(sorted(chosen), np.int32)


def _islanding_lines(case: CaseData) -> Bool[np.ndarray, " n_lines"]:
    """Lines whose single outage cuts buses off the slack (the bridges of the graph)."""
    status = np.asarray(case.line_status) > 0
    f, t, n = np.asarray(case.line_from_idx), np.asarray(case.line_to_idx), int(case.n_nodes)

    def cut(line):
        labels = _component_labels(jnp.asarray(f), jnp.asarray(t), jnp.asarray(status) & (jnp.arange(f.size) != line), n)
        return jnp.any(labels != labels[int(case.slack_bus_idx)])

    return np.asarray(jax.jit(jax.vmap(cut))(jnp.arange(f.size)))


__all__ = ["ContingencyResult", "contingency_screen", "sampled_line_pair_outages", "single_line_outages"]
