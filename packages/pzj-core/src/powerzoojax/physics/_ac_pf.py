"""Newton–Raphson (and fast-decoupled) AC power flow as a pure, fixed-shape JAX kernel.

API (stable; the AC env modes and AC-OPF build on it):

    net = make_ac_network(case)                      # host, once per case
    res = ac_power_flow(net, p_gen_mw, q_gen_mvar, load_p_mw, load_q_mvar,
                        v_set=None, *, init_vm=None, init_va=None,
                        init_pv_limit=None, max_iter=30, tol=1e-5, enforce_q_limits=True,
                        max_step=1.0, method="newton")

* `make_ac_network(case, dtype=jnp.float32) -> ACNetwork`: dense `Ybus` split into
  real `g`/`b` (N, N) [p.u.] (and stacked as `y_real_t`), branch pi-model terms
  `branch_g/branch_b` (L, 4: ff, ft, tf, tt) for flows, fast-decoupled operators, bus types (slack
  `net.slack_idx`; PV = type-2 or slack-type buses with an in-service unit; the rest PQ),
  default voltage set points from `unit_vg` of the in-service units (1 elsewhere), PV
  reactive limits, unit→bus and load→bus indices. Built in float64 on the host and
  stored in `dtype`; build it inside `powerzoojax.utils.jax_utils.enable_x64()` with
  `dtype=jnp.float64` for a float64 solve.
* `ac_power_flow` inputs [MW / MVAr]: `p_gen_mw (G)` unit active power (the slack
  bus' units are re-solved: their value only enters `unit_p_mw` via the split),
  `q_gen_mvar (G)` or `None` (zeros) — counted only at PQ buses, `load_p_mw (D)`,
  `load_q_mvar (D)`, `v_set (N)` optional voltage set points [p.u.] (used on PV and
  slack buses), `init_vm/init_va (N)` optional warm start (PV/slack magnitudes are
  re-pinned to the set points). `init_pv_limit (N)` optional int warm start of the
  PV->PQ switches (e.g. a previous result's `pv_limit`): +1 / -1 = this initial PV bus
  starts as PQ with Q pinned at its upper / lower limit (voltage from `init_vm`); each
  such bus is tested once, at the first iterate with max mismatch < 1e-2 p.u., and
  returns to PV if its voltage is on the side of its set point where it would not need
  the limit (at q_max with vm > v_set, at q_min with vm < v_set); from then on it
  switches like any PV bus. Cold solves switch permanently and never return, so a warm
  and a cold solve agree when the cold solve's switches are consistent in that sense.
  Computation dtype = the result dtype of the power inputs
  (float32 by default; float64 when they are float64 — the network is cast to it).
* Algorithm (MATPOWER's Newton power flow): unknowns `[Va, Vm]` on every non-slack bus, a fixed
  `(2 m)²` Jacobian (`m = N − 1`, MATPOWER's `dS/dV`), where the Q row of a bus
  that is currently PV is an identity row with zero mismatch, so PV→PQ switching is a
  traced mask, not a shape change. Each iteration computes P, Q; with
  `enforce_q_limits` a PV bus whose generator Q leaves `[q_min, q_max]` switches to
  PQ for good, Q pinned at the violated limit — checked only once the max mismatch is
  below 1e-2 p.u. (the reference checks from the flat start: there
  the computed Q is meaningless and spurious switches make case 300 diverge);
  converged iff every mismatch row `|F_i| < max(tol, 4 eps sum_k |Y_ik|)` [p.u.]
  (tested before the update; the second term is the float32 round-off floor,
  negligible in float64); then the Newton step `jnp.linalg.solve`. A step
  that is not finite (singular Jacobian: an islanded bus) stops the loop with the last
  finite iterate and `converged=False`; every step is also clamped to `max_step`
  (rad / p.u.) so a diverging case (loads far beyond the nose point) stays finite.
* `method="fdlf"`: fast-decoupled (XB) iterations with B', B'' inverted on the host —
  every iteration is two mismatch GEMMs and a few (m x m) GEMMs, no factorisation, so it
  is the batched choice for large N (the TransGridEnv default). PV->PQ switches keep the
  constant B'': the switched buses' voltages solve their Schur-complement system (B''
  with the PQ buses eliminated, precomputed over the initial PV buses) by 4
  Jacobi-preconditioned CG steps, and the PQ buses follow through a precomputed response
  matrix; those operators are stored in the initial-PV space with the selections folded
  in (one (m x m) and four (m x n_pv)-sized products per Q half-iteration). It converges
  on slightly fewer instances than Newton and takes more iterations. Newton (default
  here) is exact-quadratic and the reference's algorithm;
  its batched LU of a (2N-2)^2 Jacobian is the cost.
  `"fdlf"` re-solves by Newton, from the caller's start (flat or warm: exactly the
  solve `method="newton"` would run), every instance the fast-decoupled loop leaves
  unconverged after `max_iter`, in the same program: every point Newton solves is
  solved. Converged instances skip it; under `vmap` the unconverged ones are
  compacted first, so a batch where every lane converges pays one `lax.cond`.
  `n_iter` then counts both loops' updates.
  `method="fdlf_only"` is the fast-decoupled loop alone.
* Large networks (`N >= _ac_pf_krylov.KRYLOV_MIN_BUSES`, 500 buses: cases 552gb,
  1354pegase, 2383wp of the shipped set; a static choice made when tracing): the Newton
  step (of `method="newton"` and of the `"fdlf"` fallback) is an inexact Newton–Krylov
  step instead of the dense LU: flexible GMRES on `J dx = -F` to a relative residual of
  1e-3 (at most 40 Krylov steps), Jacobian-vector products from the iterate's voltages
  and currents over the branches (no Jacobian formed), preconditioned by the fast-decoupled solve (B'^-1, B''^-1, the switched
  PV buses' Schur CG), all plain XLA (`powerzoojax.physics._ac_pf_krylov`). Same
  iteration, switching and stopping rules; a Krylov step costs a few N^2 products where
  the LU costs (2N-2)^3 (one LU of case 2383wp's 4,764^2 Jacobian takes seconds).
* Smaller networks, `newton_step="auto"` (the default): the dense LU when the program is
  lowered for a CPU, the Krylov step for any other device (`jax.lax.platform_dependent`):
  a batched LU of many small Jacobians is slow on GPUs and TPUs, where the Krylov step is
  matrix products and elementwise work only. There the Jacobian-vector product is one
  product with the dense real `Ybus` (`y_real_t`) and GMRES runs a fixed 12 masked
  Arnoldi steps (`KRYLOV_SMALL_*`), its preconditioner 4 CG steps on the switched PV
  buses. `newton_step="dense"` / `"krylov"` force either.
* Newton stall stop: the Newton loop ends an instance (unconverged) once its max
  |mismatch| has gone `_NEWTON_STALL_ITERS` (8) iterations without a new minimum, so
  points beyond what any method solves do not run to `max_iter` (they set the length of
  a batched loop). Newton solves converge quadratically once near; the threshold keeps
  every solution of case 118 under random set-points (see the constant).
* Refinement (`refine_steps`, off by default): the loop's mismatch (one dense `Ybus`
  product) stops at the float32 round-off of `|Ybus| |V|`, so two devices, each with its
  own Newton step, stop at points a few 1e-6 apart. Converged instances may then take
  fast-decoupled iterations on the mismatch summed over the branches in difference form
  (`y (V_t - V_f)`, no cancellation), the reported injections and flows computed the same
  way: the voltages land within 1-2 float32 ulps of the exact solution. Reactive flows
  stay about 1e-5 of their range apart even so: one ulp of a voltage moves them that much
  on case 118 (`benchmarks/ac_pf_precision.py`).
* Reference angle: the slack bus keeps `net.va_ref` (the case's angle, see
  `make_ac_network`); flat starts put every angle there.
* `ACPFResult` fields: `vm, va` (N, p.u. / rad), `p_inj_mw, q_inj_mvar` (N,
  computed net injections), `bus_q_gen_mvar` (N, reactive generation needed per bus =
  `q_inj + load_q`), `slack_p_mw` (scalar, total generation at the slack bus),
  `unit_p_mw, unit_q_mvar` (G: slack units share the slack generation, PV/slack units
  share their bus' Q, evenly among in-service units; PQ-bus units keep their inputs),
  `line_p_from_mw, line_q_from_mvar, line_p_to_mw, line_q_to_mvar, line_s_from_mva,
  line_s_to_mva, line_loading_mva` (L; loading = max of both ends; zero for
  out-of-service lines), `pv_switched` (N bool, PV buses switched to PQ), `pv_limit`
  (N int32: +1 / -1 switched at the upper / lower Q limit, 0 otherwise), `converged`
  (bool: the loop's own test, or the re-check at the returned iterate), `n_iter`
  (int32, Newton updates taken), `max_mismatch` (p.u., at the returned iterate).

Everything is fixed-shape, `vmap`-able and `jit`-friendly: the network is a pytree
argument and `max_iter`/`tol` are traced, so changing them does not retrace;
`enforce_q_limits` and `max_step` are static.

Batched solves: the iteration loop has a `custom_vmap` rule (`_solve`) that compacts
the still-active instances into batches of 1/4 and 1/16 of the size (not below 16) instead
of iterating every instance until the slowest one is done; each instance takes exactly the
iterations it takes in the plain vmapped loop (same body, same stopping test). Derivatives
(`jax.grad`/`jax.jvp` w.r.t. the unit set-points, loads and voltage set points) do not
differentiate the loop: it runs with its inputs' tangents stopped and the solution is
differentiated implicitly at the final PV->PQ switches (`powerzoojax.physics._ac_pf_grad`).
Measurements: `benchmarks/results/ac_pf.md`, `ac_pf_fallback.md`.
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from powerzoojax.case._matrices import _branch_pi_terms, build_ybus
from powerzoojax.core._types import BoolScalar, FloatScalar, IntScalar, where
from powerzoojax.physics import _ac_pf_krylov as _krylov
from powerzoojax.physics._ac_pf_grad import ac_pf_solution_derivatives
from powerzoojax.physics._compaction import compacting_loop, compaction_caps
from powerzoojax.physics._entry import solver_entry as _solver_entry
from powerzoojax.physics._status import SolverStatus, is_successful, raise_if_failed
from powerzoojax.core import _precision as hp

PQ, PV, REF = 1, 2, 3
# "fdlf": fast-decoupled, then Newton on the instances it leaves unconverged;
# "fdlf_only": fast-decoupled without that fallback.
AC_PF_METHODS = ("newton", "fdlf", "fdlf_only")
# How a Newton iteration solves J dx = -F (see `ac_power_flow`'s `newton_step`).
NEWTON_STEPS = ("auto", "dense", "krylov")
# Finite stand-in for "no reactive limit" (±inf would make limit arithmetic produce NaN).
_NO_Q_LIMIT = 1e10
# Conjugate-gradient steps on the switched PV buses' Schur system per fast-decoupled
# Q half-iteration (exact after as many steps as switched buses; 4 measured enough on
# case 118 with ~17 switches: 99.6 % converged vs 98 % with 2).
_FDLF_CG_STEPS = 4
# The same CG on the switched buses' Schur system inside the Newton–Krylov preconditioner
# (`_ac_pf_krylov`), where it is applied once per Krylov step: more steps there cost little
# on a CPU (networks of KRYLOV_MIN_BUSES buses and more).
_KRYLOV_CG_STEPS = 8
# The same below KRYLOV_MIN_BUSES buses, where the Krylov step is the accelerators' (GPU,
# TPU) Newton step: each CG step adds small sequential kernels to every Arnoldi step, and
# fewer steps keep the dense step's converged flags (benchmarks/results/ac_pf.md).
_KRYLOV_SMALL_CG_STEPS = 4
# Voltage magnitudes below this [p.u.] are taken as this in the preconditioner's 1 / vm
# scaling (a diverging iterate may pass through 0).
_KRYLOV_VM_FLOOR = 0.1
_ROUNDOFF_FACTOR = 4.0
# The Newton loop stops an instance whose max |mismatch| has not reached a new minimum in
# this many iterations: it has stalled (cycling through PV->PQ switches or wandering
# beyond the nose point) and would otherwise run to `max_iter`, the cost of a batch where
# points no method solves are common. The margin over the longest run without a new
# minimum among solved instances is in benchmarks/results/ac_pf.md.
_NEWTON_STALL_ITERS = 8
# Q limits are checked once max |mismatch| is below this [p.u.]: 1e-2 switches the same buses
# as 1e-3 on cases 14/118 (random loads +-10 %) and saves 1-2 fdlf iterations per solve.
_Q_SWITCH_MISMATCH = 1e-2


def _loop_trig(va):
    """`(cos va, sin va)` of the iteration's angles."""
    return jnp.cos(va), jnp.sin(va)


class ACNetwork(eqx.Module):
    """Host-prepared AC network of one case; build with
    [`make_ac_network`][powerzoojax.physics.make_ac_network].

    **Arguments:**

    - `n_nodes`, `n_lines`, `n_units`, `n_loads`: sizes (static).
    - `base_mva`: system base [MVA] (static).
    - `slack_idx`: 0-based slack bus (static).
    - `g`, `b`: `(N, N)` real and imaginary parts of `Ybus` [p.u.].
    - `va_ref`: voltage angle of the slack bus [rad].
    - `pvpq_idx`: `(N − 1,)` the non-slack buses, whose `va` then `vm` are the unknowns.
    - `is_pv`: `(N,)` PV buses.
    - `v_set`: `(N,)` default voltage set-points [p.u.].
    - `q_min_mvar`, `q_max_mvar`: `(N,)` reactive limits of the PV buses [MVAr].
    - `unit_bus`, `unit_on`: `(G,)` bus of each unit and 1 where it is in service.
    - `load_bus`: `(D,)` bus of each load.
    - `line_from`, `line_to`: `(L,)` branch ends.
    - `branch_g`, `branch_b`: `(L, 4)` branch pi-model admittances (ff, ft, tf, tt), zero
      for out-of-service lines.
    - `shunt_g`, `shunt_b`: `(N,)` what `Ybus`'s diagonal holds beyond the branches' pi
      models (the bus shunts) [p.u.].
    - `y_real_t`: `(2N, 2N)` real form of `Ybus`, mapping `[e f]` to `[Re I, Im I]`.
    - `y_row_abs`: `(N,)` `Σ_k |Y_ik|`, which sets the round-off floor of the convergence
      test.
    - `fdlf_bp_inv`, `fdlf_bpp_inv`, `fdlf_pq_solve_t`, `fdlf_pv_rhs`, `fdlf_pv_sel`,
      `fdlf_pv_inv_schur`, `fdlf_pv_schur_t`, `fdlf_pv_out`: fast-decoupled operators over
      the non-slack buses (B', B'' inverses and the Schur-complement operators of buses
      switched from PV to PQ), inverted on the host.
    """

    n_nodes: int = eqx.field(static=True)
    n_lines: int = eqx.field(static=True)
    n_units: int = eqx.field(static=True)
    n_loads: int = eqx.field(static=True)
    base_mva: float = eqx.field(static=True)
    slack_idx: int = eqx.field(static=True)

    g: Float[Array, "n_nodes n_nodes"]
    b: Float[Array, "n_nodes n_nodes"]
    # Voltage angle of the reference (slack) bus [rad]: the case's, e.g. 30 deg on case 118.
    va_ref: Float[Array, ""]
    # Non-slack buses in index order: the unknowns are va then vm over these.
    pvpq_idx: Int[Array, " n_pvpq"]
    is_pv: Bool[Array, " n_nodes"]
    v_set: Float[Array, " n_nodes"]
    q_min_mvar: Float[Array, " n_nodes"]
    q_max_mvar: Float[Array, " n_nodes"]
    unit_bus: Int[Array, " n_units"]
    unit_on: Float[Array, " n_units"]
    load_bus: Int[Array, " n_loads"]
    line_from: Int[Array, " n_lines"]
    line_to: Int[Array, " n_lines"]
    # Branch pi-model admittances, columns (ff, ft, tf, tt); zero for out-of-service lines.
    branch_g: Float[Array, "n_lines 4"]
    branch_b: Float[Array, "n_lines 4"]
    shunt_g: Float[Array, " n_nodes"]
    shunt_b: Float[Array, " n_nodes"]
    # [[G^T, B^T], [-B^T, G^T]]: maps [e f] to [Re I, Im I] in one GEMM (see `_bus_power`).
    y_real_t: Float[Array, "two_n two_n"]
    # sum_k |Y_ik|: the round-off floor of bus i's mismatch is about eps * this (see
    # `ac_power_flow`'s convergence test).
    y_row_abs: Float[Array, " n_nodes"]
    # Fast-decoupled (XB) operators over the non-slack buses, inverted on the host:
    # B' (r = 0, no shunts/charging, taps 1); B0 = B'' (no phase shift) with the PV
    # rows reduced to their diagonal. For a PV bus i switched to PQ: 1 / S_ii, its
    # Schur-complement self-sensitivity with the PQ buses free (0 on PQ buses), and
    # K = -B''_pq,pq^-1 B''_pq,pv, the PQ voltages' response to its voltage change.
    # The switched-bus operators live in the space of the initial PV buses (n_pv of the
    # n_pvpq unknowns) with the selections folded in, so that the Q half-iteration costs
    # one (m x m) and four (m x n_pv)-sized products instead of seven (m x m) ones.
    fdlf_bp_inv: Float[Array, "n_pvpq n_pvpq"]
    fdlf_bpp_inv: Float[Array, "n_pvpq n_pvpq"]
    # diag(is PQ) B0^-1^T: the PQ buses' update with every initial PV voltage held.
    fdlf_pq_solve_t: Float[Array, "n_pvpq n_pvpq"]
    # rhs -> r_s = rhs_pv - B_pv,pq B_pq,pq^-1 rhs_pq (Schur right-hand side on PV buses).
    fdlf_pv_rhs: Float[Array, "n_pvpq n_pv"]
    # 0/1 selection of the initial PV buses among the unknowns.
    fdlf_pv_sel: Float[Array, "n_pvpq n_pv"]
    fdlf_pv_inv_schur: Float[Array, " n_pv"]
    fdlf_pv_schur_t: Float[Array, "n_pv n_pv"]
    # y_s -> its own placement plus the PQ buses' response K y_s.
    fdlf_pv_out: Float[Array, "n_pv n_pvpq"]


def make_ac_network(case, dtype=jnp.float32, va_ref_deg: float | None = None) -> ACNetwork:
    """Prepare the AC network of a `CaseData` (host-side, float64 products cast to `dtype`).

    Bus types: the case slack is the reference; a type-2 (or extra type-3) bus with at
    least one in-service unit is PV; every other bus is PQ. PV/slack voltage set-points
    are `unit_vg` of the first in-service unit at the bus. PV reactive limits are
    `[min unit q_min, max unit q_max]` over in-service units at the bus.

    **Arguments:**

    - `case`: the case.
    - `dtype`: dtype of the stored operators; use `jnp.float64` inside
      `powerzoojax.utils.jax_utils.enable_x64()` for a float64 solve.
    - `va_ref_deg`: angle of the slack bus [degrees]; `None` takes the case's own
      (`case.node_va_deg`). Every returned angle is relative to it, as in MATPOWER.

    **Returns:**

    An [`ACNetwork`][powerzoojax.physics.ACNetwork].
    """
    n = int(case.n_nodes)
    slack = int(case.slack_bus_idx)
    y_bus = build_ybus(case)
    node_type = np.asarray(case.node_type)
    unit_bus = np.asarray(case.unit_node_idx, np.int64)
    unit_on = np.asarray(case.unit_status) > 0
    has_unit = np.zeros(n, bool)
    has_unit[unit_bus[unit_on]] = True
    is_pv = ((node_type == PV) | (node_type == REF)) & has_unit
    is_pv[slack] = False

    v_set = np.ones(n)
    q_min = np.full(n, np.inf)
    q_max = np.full(n, -np.inf)
    unit_vg = np.asarray(case.unit_vg, np.float64)
    unit_qmin = np.asarray(case.unit_q_min, np.float64)
    unit_qmax = np.asarray(case.unit_q_max, np.float64)
    # Reverse order so that the first in-service unit at a bus sets its voltage.
    for unit in range(unit_bus.shape[0])[::-1]:
        if unit_on[unit]:
            bus = unit_bus[unit]
            v_set[bus] = unit_vg[unit]
            q_min[bus] = min(q_min[bus], unit_qmin[unit])
            q_max[bus] = max(q_max[bus], unit_qmax[unit])
    no_limit = ~is_pv
    q_min = np.where(no_limit | ~np.isfinite(q_min), -_NO_Q_LIMIT, q_min)
    q_max = np.where(no_limit | ~np.isfinite(q_max), _NO_Q_LIMIT, q_max)

    if va_ref_deg is None:
        va_ref_deg = float(np.asarray(case.node_va_deg, np.float64)[slack])
    va_ref_deg = float(va_ref_deg)
    if not np.isfinite(va_ref_deg):
        raise ValueError(f"make_ac_network: va_ref_deg must be finite, got {va_ref_deg}")

    y_branch = np.stack(_branch_pi_terms(case), axis=1)
    at_ends = np.zeros(n, complex)
    np.add.at(at_ends, np.asarray(case.line_from_idx), y_branch[:, 0])
    np.add.at(at_ends, np.asarray(case.line_to_idx), y_branch[:, 3])
    y_shunt = np.diagonal(y_bus) - at_ends
    cast = lambda x: jnp.asarray(np.asarray(x, np.float64), dtype)  # noqa: E731
    i32 = lambda x: jnp.asarray(np.asarray(x, np.int32))  # noqa: E731
    return ACNetwork(
        n_nodes=n,
        n_lines=int(case.n_lines),
        n_units=int(case.n_units),
        n_loads=int(case.n_loads),
        base_mva=float(case.base_mva),
        slack_idx=slack,
        g=cast(np.real(y_bus)),
        b=cast(np.imag(y_bus)),
        va_ref=cast(np.deg2rad(va_ref_deg)),
        pvpq_idx=i32(np.flatnonzero(np.arange(n) != slack)),
        is_pv=jnp.asarray(is_pv),
        v_set=cast(v_set),
        q_min_mvar=cast(q_min),
        q_max_mvar=cast(q_max),
        unit_bus=i32(unit_bus),
        unit_on=cast(unit_on.astype(np.float64)),
        load_bus=i32(case.load_node_idx),
        line_from=i32(case.line_from_idx),
        line_to=i32(case.line_to_idx),
        branch_g=cast(np.real(y_branch)),
        branch_b=cast(np.imag(y_branch)),
        shunt_g=cast(np.real(y_shunt)),
        shunt_b=cast(np.imag(y_shunt)),
        y_real_t=cast(np.block([[np.real(y_bus).T, np.imag(y_bus).T], [-np.imag(y_bus).T, np.real(y_bus).T]])),
        y_row_abs=cast(np.abs(y_bus).sum(axis=1)),
        **_fdlf_operators(case, slack, is_pv, cast),
    )


def _fast_decoupled_cases(case) -> tuple:
    """The cases whose `Ybus` imaginary parts are B' (r = 0, no shunts or charging, taps 1,
    no phase shift) and B'' (no phase shift), as `make_ac_network` builds them."""
    zeros = lambda x: jnp.zeros_like(jnp.asarray(x, jnp.float32))  # noqa: E731
    case_p = eqx.tree_at(
        lambda c: (c.node_gs, c.node_bs, c.line_b, c.line_r, c.line_ratio, c.line_angle),
        case,
        (zeros(case.node_gs), zeros(case.node_bs), zeros(case.line_b), zeros(case.line_r),
         jnp.ones_like(case.line_ratio), zeros(case.line_angle)),
    )
    case_pp = eqx.tree_at(lambda c: c.line_angle, case, zeros(case.line_angle))
    return case_p, case_pp


def _fdlf_operators(case, slack: int, is_pv: np.ndarray, cast) -> dict:
    """Pre-inverted XB fast-decoupled matrices (MATPOWER `makeB` alg 2), or zeros when
    the network is singular (an island): the fdlf solve then reports non-convergence."""
    n = int(case.n_nodes)
    keep = np.flatnonzero(np.arange(n) != slack)
    case_p, case_pp = _fast_decoupled_cases(case)
    bp = -np.imag(build_ybus(case_p))[np.ix_(keep, keep)]
    bpp_full = -np.imag(build_ybus(case_pp))[np.ix_(keep, keep)]
    bpp = bpp_full.copy()
    pv = is_pv[keep]
    bpp[pv, :] = 0.0
    bpp[pv, pv] = np.diag(bpp_full)[pv]
    out = {}
    for name, mat in (("fdlf_bp_inv", bp), ("fdlf_bpp_inv", bpp)):
        try:
            inv = np.linalg.inv(mat)
            if not np.all(np.isfinite(inv)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            inv = np.full_like(mat, np.nan)
        out[name] = cast(inv)
    # PV->PQ switches without refactorising: a switched bus keeps its B0 row (diagonal);
    # the switched buses' voltages solve the Schur system of B'' with the PQ buses
    # eliminated, S_ss y = r_s, and the PQ buses follow through K = -B_pq,pq^-1 B_pq,pv
    # (all from the host's B''_pq,pq^-1, which B0^-1 contains).
    b0_inv = np.asarray(out["fdlf_bpp_inv"], np.float64)
    pq = ~pv
    pv_pos = np.flatnonzero(pv)
    inv_pq = b0_inv[np.ix_(pq, pq)]
    response = np.zeros_like(bpp_full)  # column j: the PQ voltages' response to dV_j
    response[np.ix_(pq, pv)] = -(inv_pq @ bpp_full[np.ix_(pq, pv)])
    schur = bpp_full[np.ix_(pv, pv)] + bpp_full[np.ix_(pv, pq)] @ response[np.ix_(pq, pv)]
    diag = np.diag(schur)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["fdlf_pv_inv_schur"] = cast(np.where(np.abs(diag) > 0, 1.0 / diag, 0.0))
    out["fdlf_pv_schur_t"] = cast(schur.T)
    m = bpp_full.shape[0]
    select = np.zeros((m, pv_pos.size))
    select[pv_pos, np.arange(pv_pos.size)] = 1.0
    coupling = bpp_full[np.ix_(pv, pq)] @ inv_pq  # (n_pv, n_pq)
    pv_rhs = select.copy()
    pv_rhs[pq, :] = -coupling.T
    out["fdlf_pv_rhs"] = cast(pv_rhs)
    out["fdlf_pv_sel"] = cast(select)
    out["fdlf_pv_out"] = cast(select.T + response[:, pv_pos].T)
    out["fdlf_pq_solve_t"] = cast(np.where(pq[:, None], b0_inv.T, 0.0))
    return out


class ACPFResult(eqx.Module):
    """Solution of [`ac_power_flow`][powerzoojax.physics.ac_power_flow].

    **Arguments:**

    - `vm`, `va`: `(N,)` voltage magnitude [p.u.] and angle [rad].
    - `p_inj_mw`, `q_inj_mvar`: `(N,)` computed net injections [MW, MVAr].
    - `bus_q_gen_mvar`: `(N,)` reactive generation needed per bus, `q_inj + load_q` [MVAr].
    - `slack_p_mw`: total generation at the slack bus [MW].
    - `unit_p_mw`, `unit_q_mvar`: `(G,)` unit output [MW, MVAr]; slack units share the
      slack generation, PV/slack units their bus's Q, evenly among in-service units.
    - `line_p_from_mw`, `line_q_from_mvar`, `line_p_to_mw`, `line_q_to_mvar`: `(L,)` end
      flows [MW, MVAr].
    - `line_s_from_mva`, `line_s_to_mva`: `(L,)` end apparent powers [MVA].
    - `line_loading_mva`: `(L,)` max of both ends [MVA]; zero for out-of-service lines.
    - `pv_switched`: `(N,)` PV buses switched to PQ.
    - `pv_limit`: `(N,)` int, +1 / -1 switched at the upper / lower Q limit, 0 otherwise.
    - `status`: a [`SolverStatus`][powerzoojax.physics.SolverStatus]: `successful` (every
      mismatch row within its tolerance), `max_steps_reached` (`max_iter` spent),
      `diverged` (stopped before it: a non-finite Newton step, or a mismatch that stopped
      falling) or `nonfinite` (an iterate overflowed; the start point is returned).
    - `n_iter`: int scalar, updates taken.
    - `max_mismatch`: largest mismatch at the returned iterate [p.u.].

    `converged` (`status` is `successful`) is read from `status`.
    """

    vm: Float[Array, " n_nodes"]
    va: Float[Array, " n_nodes"]
    p_inj_mw: Float[Array, " n_nodes"]
    q_inj_mvar: Float[Array, " n_nodes"]
    bus_q_gen_mvar: Float[Array, " n_nodes"]
    slack_p_mw: FloatScalar
    unit_p_mw: Float[Array, " n_units"]
    unit_q_mvar: Float[Array, " n_units"]
    line_p_from_mw: Float[Array, " n_lines"]
    line_q_from_mvar: Float[Array, " n_lines"]
    line_p_to_mw: Float[Array, " n_lines"]
    line_q_to_mvar: Float[Array, " n_lines"]
    line_s_from_mva: Float[Array, " n_lines"]
    line_s_to_mva: Float[Array, " n_lines"]
    line_loading_mva: Float[Array, " n_lines"]
    pv_switched: Bool[Array, " n_nodes"]
    pv_limit: Int[Array, " n_nodes"]
    status: SolverStatus
    n_iter: IntScalar
    max_mismatch: FloatScalar

    @property
    def converged(self) -> Bool[Array, "*batch"]:
        """Every mismatch row met its tolerance (`status` is `successful`)."""
        return is_successful(self.status)


def _bus_power(net: "ACNetwork", dtype, vm, va, trig=None):
    """Computed injections `S = V conj(Ybus V)` [p.u.] and the complex voltage and current.

    One real GEMM `[e f] @ [[G^T, B^T], [-B^T, G^T]]` per call: under `vmap` it is a
    (batch, 2N) x (2N, 2N) product. A branch-wise form (gathers and scatter-adds over
    lines) has less float32 cancellation but batches poorly on a CPU
    (`benchmarks/results/contingency.md`); the round-off it leaves is handled by the per-row
    tolerance floor of `ac_power_flow`. `trig`: `(cos va, sin va)` when the caller
    has them (the iteration carries them).
    """
    cos_va, sin_va = (jnp.cos(va), jnp.sin(va)) if trig is None else trig
    e, f = vm * cos_va, vm * sin_va
    i_re, i_im = _krylov.dense_current(net.y_real_t.astype(dtype))(e, f)
    p = e * i_re + f * i_im
    q = f * i_re - e * i_im
    return p, q, (e, f, i_re, i_im)


def _branch_ends(net: "ACNetwork", e, f):
    """`(e_f, f_f, e_t, f_t, e_t - e_f, f_t - f_f)`, each `(L,)`: the branch ends' voltages and
    their differences, by products with the 0/±1 incidence (exact: one term, or one
    difference, per entry), which batch better on a CPU than gathers."""
    dtype = e.dtype
    sel_f = jax.nn.one_hot(net.line_from, net.n_nodes, dtype=dtype).T
    sel_t = jax.nn.one_hot(net.line_to, net.n_nodes, dtype=dtype).T
    ends = hp.matmul(jnp.stack([e, f]), jnp.concatenate([sel_f, sel_t, sel_t - sel_f], axis=1))
    n_lines = net.n_lines
    ef, et, de = ends[0, :n_lines], ends[0, n_lines : 2 * n_lines], ends[0, 2 * n_lines :]
    ff, ft, df = ends[1, :n_lines], ends[1, n_lines : 2 * n_lines], ends[1, 2 * n_lines :]
    return ef, ff, et, ft, de, df


def _branch_currents(net: "ACNetwork", ends):
    """End currents `(Re I_f, Im I_f, Re I_t, Im I_t)` of every branch, `(L,)` each, from
    its ends' voltages (`_branch_ends`), in difference form: `I_f = y_ft (V_t - V_f) +
    (y_ff + y_ft) V_f` (and the same for the to end). The series terms of `y_ff V_f +
    y_ft V_t` nearly cancel (|y| ~ 1e2-1e3 p.u. against currents of ~1 p.u.); taking the
    voltage difference first leaves float32 round-off relative to the current, not to
    |y| |V|."""
    ef, ff, et, ft, de, df = ends
    bg, bb = net.branch_g.astype(ef.dtype), net.branch_b.astype(ef.dtype)

    def mul(k, x, y):
        return bg[:, k] * x - bb[:, k] * y, bb[:, k] * x + bg[:, k] * y

    def own(k_self, k_other, x, y):
        g, b = bg[:, k_self] + bg[:, k_other], bb[:, k_self] + bb[:, k_other]
        return g * x - b * y, b * x + g * y

    (sf_re, sf_im), (of_re, of_im) = mul(1, de, df), own(0, 1, ef, ff)
    (st_re, st_im), (ot_re, ot_im) = mul(2, -de, -df), own(3, 2, et, ft)
    return sf_re + of_re, sf_im + of_im, st_re + ot_re, st_im + ot_im


def _bus_power_by_branches(net: "ACNetwork", dtype, vm, va, trig=None):
    """`_bus_power` with the current summed over the branches' difference-form end currents
    (`_branch_currents`) and the shunts: the mismatch to float32 round-off of the flows,
    not of `|Ybus| |V|`. Gathers and one product with the branch-to-bus incidence; for the
    final refinement and the reported injections, not for every iteration."""
    cos_va, sin_va = (jnp.cos(va), jnp.sin(va)) if trig is None else trig
    e, f = vm * cos_va, vm * sin_va
    if_re, if_im, it_re, it_im = _branch_currents(net, _branch_ends(net, e, f))
    ends = jax.nn.one_hot(jnp.concatenate([net.line_from, net.line_to]), net.n_nodes, dtype=dtype)
    i_re = net.shunt_g.astype(dtype) * e - net.shunt_b.astype(dtype) * f
    i_im = net.shunt_b.astype(dtype) * e + net.shunt_g.astype(dtype) * f
    i_re = i_re + hp.matmul(jnp.concatenate([if_re, it_re]), ends)
    i_im = i_im + hp.matmul(jnp.concatenate([if_im, it_im]), ends)
    p = e * i_re + f * i_im
    q = f * i_re - e * i_im
    return p, q, (e, f, i_re, i_im)


def _drop(x, k: int, axis: int = -1):
    """`x` without index `k` (the slack) along `axis`: two static slices, which stay
    slices under `vmap` (an index gather/scatter there is a slow batched gather)."""
    x = jnp.moveaxis(x, axis, -1)
    return jnp.moveaxis(jnp.concatenate([x[..., :k], x[..., k + 1 :]], axis=-1), -1, axis)


def _insert_zero(x, k: int):
    """Inverse of `_drop` on the last axis, with 0 at index `k`."""
    return jnp.concatenate([x[..., :k], jnp.zeros_like(x[..., :1]), x[..., k:]], axis=-1)


def _jacobian(g, b, vm, va, vif, slack: int, is_pv_red):
    """Fixed `(2m)²` Jacobian of `[P(pvpq); Q(pvpq)]` w.r.t. `[va(pvpq); vm(pvpq)]`.

    MATPOWER's `dSbus_dV` in complex form; Q rows of current PV buses become identity
    rows (their Vm is pinned, their Q mismatch is zeroed by the caller).
    """
    e, f, i_re, i_im = vif
    # Each part cast to the complex dtype of vm's width first, as implicit promotion would.
    cdtype = jnp.dtype(jnp.complex128 if vm.dtype == jnp.float64 else jnp.complex64)
    v = e.astype(cdtype) + 1j * f.astype(cdtype)
    current = i_re.astype(cdtype) + 1j * i_im.astype(cdtype)
    y = g.astype(cdtype) + 1j * b.astype(cdtype)
    v_unit = jnp.exp(1j * va.astype(cdtype))
    ds_dva = 1j * (jnp.diag(v * jnp.conj(current)) - v[:, None] * jnp.conj(y * v[None, :]))
    ds_dvm = v[:, None] * jnp.conj(y * v_unit[None, :]) + jnp.diag(jnp.conj(current) * v_unit)
    ds_dva = _drop(_drop(ds_dva, slack, 0), slack, 1)
    ds_dvm = _drop(_drop(ds_dvm, slack, 0), slack, 1)
    m = vm.shape[0] - 1
    eye = jnp.eye(m, dtype=vm.dtype)
    q_va = where(is_pv_red[:, None], 0.0, ds_dva.imag)
    q_vm = where(is_pv_red[:, None], eye, ds_dvm.imag)
    top = jnp.concatenate([ds_dva.real, ds_dvm.real], axis=1)
    bottom = jnp.concatenate([q_va, q_vm], axis=1)
    return jnp.concatenate([top, bottom], axis=0)


class _Carry(eqx.Module):
    vm: Array
    va: Array
    is_pv: Array
    q_target: Array  # Q scheduled [p.u.] (pinned limit on switched buses)
    it: Array
    done: Array
    converged: Array
    mismatch: Array
    # Smallest mismatch so far and the iterations since it was last lowered (the Newton
    # loop's stall test, `_NEWTON_STALL_ITERS`).
    best: Array
    stall: Array
    cos_va: Array  # cos/sin of `va` (fdlf's P half-step already has those of its angles)
    sin_va: Array
    # Warm start only (`init_pv_limit`): switched buses inherited from the caller that
    # have not yet had their one back-switch test; None on a cold start.
    inherited: Array | None


class _Lane(eqx.Module):
    """Per-instance data the iteration reads (batched under `vmap`)."""

    p_sched: Array  # scheduled net P [p.u.] (N)
    vs: Array  # voltage set points [p.u.] (N)
    q_lo: Array  # PV reactive limits net of load [p.u.] (N)
    q_hi: Array
    row_tol: Array  # per-row convergence tolerance (2 m)
    max_iter: Array  # int32 scalar


# Batched solves (`vmap`): the while loop runs until its slowest lane, and on random
# set-points a few lanes per thousand need 20-30 fast-decoupled iterations while the
# median needs 9-10; the batching rule of `_solve` compacts (`_compaction`). The stages were
# chosen by a same-process A/B (`benchmarks/results/ac_pf.md`): fewer, larger stages ran
# as fast and compiled sooner.
_MIN_COMPACT = 16


def _residual(net: "ACNetwork", lane: _Lane, p, q, is_pv, q_target):
    dp = _drop(p - lane.p_sched, net.slack_idx)
    dq = _drop(where(is_pv, 0.0, q - q_target), net.slack_idx)
    return jnp.concatenate([dp, dq])


def _active(c: _Carry, lane: _Lane) -> Array:
    return ~c.done & (c.it < lane.max_iter)


def _switched_schur_cg(net: "ACNetwork", dtype, rhs, sw, steps: int):
    """Voltage changes of the buses switched PV->PQ, in the space of the initial PV buses:
    `steps` Jacobi-preconditioned CG steps on the Schur system `S_ss y = r_s` of B'' with
    the PQ buses eliminated (`sw` selects the switched buses; `y` is 0 elsewhere)."""
    r = where(sw, hp.matmul(rhs, net.fdlf_pv_rhs.astype(dtype)), 0.0)
    return _schur_cg_solve(net.fdlf_pv_schur_t.astype(dtype), net.fdlf_pv_inv_schur.astype(dtype), r, sw, steps)


def _schur_cg_solve(s_t, d_inv, r, sw, steps: int):
    """`steps` Jacobi-preconditioned CG steps on `S_ss y = r` restricted to `sw` (`s_t`:
    the Schur complement's transpose, `d_inv`: its inverse diagonal); `y` is 0 off `sw`."""
    y = jnp.zeros_like(r)
    z = r * d_inv
    p_dir = z
    rz = jnp.sum(r * z, axis=-1, keepdims=True)
    for _ in range(steps):
        ap = where(sw, hp.matmul(p_dir, s_t), 0.0)
        pap = jnp.sum(p_dir * ap, axis=-1, keepdims=True)
        alpha = where(pap > 0, rz / where(pap > 0, pap, 1.0), 0.0)
        y = y + alpha * p_dir
        r = r - alpha * ap
        z = r * d_inv
        rz_new = jnp.sum(r * z, axis=-1, keepdims=True)
        beta = where(rz > 0, rz_new / where(rz > 0, rz, 1.0), 0.0)
        p_dir = z + beta * p_dir
        rz = rz_new
    return y


def _switch_pv(enforce_q_limits: bool, q_lo, q_hi, vs, is_pv, q_target, q, err, vm, inherited):
    """PV->PQ switching of one iterate: `(is_pv, q_target, inherited, released)`.

    Limits are checked only once the iterate is near a solution (`err`, the largest
    mismatch, below `_Q_SWITCH_MISMATCH`): at a flat start the computed Q is meaningless
    and permanent switches there are spurious (they make case 300 diverge). This
    approximates MATPOWER's outer loop. `inherited` (None on a cold start): switches
    carried over from a previous solve, each tested once for a return to PV.
    """
    if not enforce_q_limits:
        return is_pv, q_target, inherited, jnp.zeros((), bool)
    near = err < _Q_SWITCH_MISMATCH
    over = near & is_pv & (q > q_hi)
    under = near & is_pv & (q < q_lo)
    q_target = where(over, q_hi, where(under, q_lo, q_target))
    is_pv = is_pv & ~(over | under)
    if inherited is not None:
        # A switch carried over from the previous solve is tested once, at the first
        # near iterate: on the wrong side of its set point (at q_max with vm above it,
        # at q_min with vm below) the bus would not need its limit, so it returns to PV
        # (and from then on switches like any PV bus, permanently: no oscillation).
        at_hi = q_target >= q_hi
        release = near & inherited & where(at_hi, vm > vs, vm < vs)
        # A released bus' voltage is off its set point until the next update re-pins
        # it: no convergence declared on this iteration.
        return is_pv | release, q_target, inherited & ~near, jnp.any(release)
    return is_pv, q_target, inherited, jnp.zeros((), bool)


def _fdlf_update(net: "ACNetwork", dtype, max_step: float, bus_power, c: _Carry, is_pv, q_target, f):
    """One fast-decoupled iteration from `c` with mismatch `f`: a P half-iteration, then a Q
    half-iteration on the updated angles (MATPOWER fdpf, XB) with the constant pre-inverted
    B', B''; `bus_power` computes the injections between the halves. Returns
    `(d_va, d_vm, (cos va, sin va))` of the updated angles."""
    cast = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    slack = net.slack_idx
    m = net.n_nodes - 1
    red = lambda x: _drop(x, slack)  # noqa: E731
    vm_red = red(c.vm)
    d_va = hp.matmul(-(f[:m] / vm_red), cast(net.fdlf_bp_inv).T)
    ok = jnp.all(jnp.isfinite(d_va))
    va = c.va + _insert_zero(where(ok, jnp.clip(d_va, -max_step, max_step), 0.0), slack)
    trig = _loop_trig(va)
    p, q, _ = bus_power(net, dtype, c.vm, va, trig)
    rhs = red(where(is_pv, 0.0, q - q_target)) / vm_red
    # B0 = B'' with the rows of the initial PV buses reduced to their diagonal: B0^-1
    # solves the PQ buses with every initial PV voltage held (its PV rows are zero, so
    # rhs needs no masking).
    x = hp.matmul(rhs, cast(net.fdlf_pq_solve_t))
    # Buses switched PV->PQ since the start keep their B0 row; their voltages solve
    # the Schur system S_ss y = r_s of B'' with the PQ buses eliminated (precomputed
    # over every initial PV bus), then the PQ buses follow through K. No
    # refactorisation, fixed shapes, all in the space of the initial PV buses.
    sw = (hp.matmul(red(~is_pv).astype(dtype), cast(net.fdlf_pv_sel))) > 0.5
    y = _switched_schur_cg(net, dtype, rhs, sw, _FDLF_CG_STEPS)
    x = x + hp.matmul(y, cast(net.fdlf_pv_out))
    return d_va, -x, trig


def _newton_solver(net: "ACNetwork", dtype, newton_step: str):
    """`(carry, is_pv, F, (e, f, Re I, Im I)) -> (d_va, d_vm)`: the Newton update of `J dx = -F`
    at the carry's iterate, by the step `newton_step` names (see `ac_power_flow`)."""
    cast = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    n, slack = net.n_nodes, net.slack_idx
    m = n - 1
    red = lambda x: _drop(x, slack)  # noqa: E731

    def branch_current():
        return _krylov.branch_current(
            net.line_from, net.line_to, cast(net.branch_g), cast(net.branch_b), cast(net.shunt_g), cast(net.shunt_b)
        )

    def fdlf_precond(c, is_pv):
        # The fast-decoupled solve as an approximation of J^-1 (Newton–Krylov): angles by
        # B'^-1 (dP / vm), magnitudes by B''^-1 (dQ / vm) with the switched PV buses
        # through their Schur system; the identity Q rows of current PV buses pass their
        # entry through as the bus's voltage change, which the PQ buses follow through K.
        inv_vm = 1.0 / jnp.maximum(red(c.vm), _KRYLOV_VM_FLOOR)
        pv_sel = cast(net.fdlf_pv_sel)
        sw = (hp.matmul(red(~is_pv).astype(dtype), pv_sel)) > 0.5
        cg_steps = _KRYLOV_CG_STEPS if n >= _krylov.KRYLOV_MIN_BUSES else _KRYLOV_SMALL_CG_STEPS

        def apply(r):
            d_va = hp.matmul(r[:m] * inv_vm, cast(net.fdlf_bp_inv).T)
            rhs = where(red(is_pv), 0.0, r[m:] * inv_vm)
            x = hp.matmul(rhs, cast(net.fdlf_pq_solve_t))
            y = where(sw, _switched_schur_cg(net, dtype, rhs, sw, cg_steps), hp.matmul(r[m:], pv_sel))
            return jnp.concatenate([d_va, x + hp.matmul(y, cast(net.fdlf_pv_out))])

        return apply

    def krylov_step(c, is_pv, f, vif):
        # Small networks: the Jacobian-vector product through the dense real Ybus (one
        # matrix product per Krylov step); large ones through the branches.
        large = n >= _krylov.KRYLOV_MIN_BUSES
        current = branch_current() if large else _krylov.dense_current(cast(net.y_real_t))
        return _krylov.krylov_newton_step(
            current, (c.cos_va, c.sin_va), vif, red(is_pv), f, slack, fdlf_precond(c, is_pv)
        )

    def dense_step(c, is_pv, f, vif):
        jac = _jacobian(cast(net.g), cast(net.b), c.vm, c.va, vif, slack, red(is_pv))
        dx = jnp.linalg.solve(jac, -f)
        return dx[:m], dx[m:]

    def newton_step_of(c, is_pv, f, vif):
        if newton_step == "krylov" or (newton_step == "auto" and n >= _krylov.KRYLOV_MIN_BUSES):
            d_va, d_vm = krylov_step(c, is_pv, f, vif)
        elif newton_step == "dense":
            d_va, d_vm = dense_step(c, is_pv, f, vif)
        else:
            # Chosen when the program is lowered for its device: the CPU factorises (fast
            # there at these sizes); accelerators, where a batched LU of small systems is
            # slow and matrix products are fast, take the products-only Krylov step.
            d_va, d_vm = jax.lax.platform_dependent(c, is_pv, f, vif, cpu=dense_step, default=krylov_step)
        return d_va, d_vm

    return newton_step_of


def _make_body(
    net: "ACNetwork", lane: _Lane, *, dtype, method: str, enforce_q_limits: bool, max_step: float, newton_step: str
):
    """One iteration of one instance: Q-limit switching, convergence test, update.
    `newton_step`: `"dense"`, `"krylov"` or `"auto"` (see `ac_power_flow`)."""
    cast = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    n, slack = net.n_nodes, net.slack_idx
    m = n - 1
    red = lambda x: _drop(x, slack)  # noqa: E731
    is_slack = jnp.arange(n) == slack
    vs, q_lo, q_hi, row_tol = lane.vs, lane.q_lo, lane.q_hi, lane.row_tol

    def residual(p, q, is_pv, q_target):
        return _residual(net, lane, p, q, is_pv, q_target)

    def switch_pv(is_pv, q_target, q, err, vm, inherited):
        return _switch_pv(enforce_q_limits, q_lo, q_hi, vs, is_pv, q_target, q, err, vm, inherited)

    newton = _newton_solver(net, dtype, newton_step)

    def newton_step_of(c, is_pv, q_target, f, vif):
        d_va, d_vm = newton(c, is_pv, f, vif)
        return d_va, d_vm, None

    def fdlf_step(c, is_pv, q_target, f, vif):
        return _fdlf_update(net, dtype, max_step, _bus_power, c, is_pv, q_target, f)

    solve_step = fdlf_step if method == "fdlf" else newton_step_of

    def body(c: _Carry) -> _Carry:
        p, q, vif = _bus_power(net, dtype, c.vm, c.va, (c.cos_va, c.sin_va))
        err_types = jnp.max(jnp.abs(residual(p, q, c.is_pv, c.q_target)))
        is_pv, q_target, inherited, released = switch_pv(c.is_pv, c.q_target, q, err_types, c.vm, c.inherited)
        f = residual(p, q, is_pv, q_target)
        err = jnp.max(jnp.abs(f))
        conv = jnp.all(jnp.abs(f) < row_tol) & ~released
        # Newton stall test: no new smallest mismatch in _NEWTON_STALL_ITERS iterations.
        improved = err < c.best
        stall = where(improved, 0, c.stall + 1)
        stalled = (stall >= _NEWTON_STALL_ITERS) & ~conv if method == "newton" else jnp.zeros((), bool)
        d_va, d_vm, trig = solve_step(c, is_pv, q_target, f, vif)
        finite = jnp.all(jnp.isfinite(d_va)) & jnp.all(jnp.isfinite(d_vm))
        clamp = lambda d: jnp.clip(where(finite, d, 0.0), -max_step, max_step)  # noqa: E731
        step = ~conv & finite & ~stalled
        va = c.va + _insert_zero(where(step, clamp(d_va), 0.0), slack)
        vm = c.vm + _insert_zero(where(step, clamp(d_vm), 0.0), slack)
        vm = where(is_pv | is_slack, vs, vm)
        vm = where(step, vm, c.vm)
        # fdlf's angles after a step are exactly `va` (same clip; a step is finite).
        cos_va, sin_va = (jnp.cos(va), jnp.sin(va)) if trig is None else trig
        return _Carry(
            vm=vm,
            va=va,
            is_pv=is_pv,
            q_target=q_target,
            it=c.it + step.astype(jnp.int32),
            done=conv | ~finite | stalled,
            converged=conv,
            mismatch=err,
            best=jnp.minimum(err, c.best),
            stall=stall.astype(jnp.int32),
            cos_va=where(step, cos_va, c.cos_va),
            sin_va=where(step, sin_va, c.sin_va),
            inherited=inherited,
        )

    return body


def _solve(net: "ACNetwork", lane: _Lane, init: _Carry, *, skip_when_done: bool = False, **opts) -> _Carry:
    """The iteration loop of one instance; under `vmap` the compacting rule below.
    `skip_when_done`: the batched rule skips its compaction stages (gathers, scatters)
    under a `lax.cond` when no lane is active after the full-batch stage (the Newton
    fallback, whose lanes are mostly done before it starts)."""
    # No tangents into the loop: derivatives come from the solution (`_ac_pf_grad`).
    net, lane, init = jax.lax.stop_gradient((net, lane, init))

    def loop(net, lane, init):
        return jax.lax.while_loop(lambda c: _active(c, lane), _make_body(net, lane, **opts), init)

    solve = jax.custom_batching.custom_vmap(loop)

    @solve.def_vmap
    def _batched(axis_size, in_batched, net, lane, init):
        every = jax.tree.map(lambda _: True, init)
        net_b, lane_b, init_b = in_batched
        caps = compaction_caps(axis_size, _MIN_COMPACT)
        if any(jax.tree.leaves(net_b)) or not caps:
            # A batched network (rare) or a small batch: the plain vmapped loop.
            axes = jax.tree.map(lambda b: 0 if b else None, (net_b, lane_b, init_b))
            return jax.vmap(loop, in_axes=axes)(net, lane, init), every

        def bcast(x, batched):
            return x if batched else jnp.broadcast_to(x, (axis_size, *jnp.shape(x)))

        lane = jax.tree.map(bcast, lane, lane_b)
        c = jax.tree.map(bcast, init, init_b)
        step = jax.vmap(lambda ln, cr: _make_body(net, ln, **opts)(cr))

        def run(lane, c, cap: int):
            def body(c):
                act = _active(c, lane)
                new = step(lane, c)
                keep = lambda a, b: where(act.reshape(act.shape + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
                return jax.tree.map(keep, new, c)

            return jax.lax.while_loop(lambda c: jnp.sum(_active(c, lane)) > cap, body, c)

        c = compacting_loop(run, lambda lane, c: _active(c, lane), lane, c, caps, skip_when_done=skip_when_done)
        return c, every

    return solve(net, lane, init)


def _refine(net: "ACNetwork", lane: _Lane, c: _Carry, *, dtype, max_step: float, **_) -> _Carry:
    """One fast-decoupled iteration from the loop's converged iterates on the
    difference-form mismatch (`_bus_power_by_branches`). The loop's own mismatch, one dense
    `Ybus` product, stops at the float32 round-off of `|Ybus| |V|`, which leaves voltages
    off by up to ~5e-6 p.u. (case 118), and by a different amount on every device, since
    each takes its own Newton step; this iteration's far smaller round-off takes the
    voltages about ten times closer to the exact solution. Unconverged instances keep
    their iterate."""
    c = jax.lax.stop_gradient(c)
    n, slack = net.n_nodes, net.slack_idx
    p, q, _ = _bus_power_by_branches(net, dtype, c.vm, c.va)
    f = _residual(net, lane, p, q, c.is_pv, c.q_target)
    d_va, d_vm, _ = _fdlf_update(net, dtype, max_step, _bus_power_by_branches, c, c.is_pv, c.q_target, f)
    ok = c.converged & jnp.all(jnp.isfinite(d_va)) & jnp.all(jnp.isfinite(d_vm))
    clamp = lambda d: _insert_zero(where(ok, jnp.clip(d, -max_step, max_step), 0.0), slack)  # noqa: E731
    va = c.va + clamp(d_va)
    fixed = c.is_pv | (jnp.arange(n) == slack)
    vm = where(fixed, c.vm, c.vm + clamp(d_vm))
    return eqx.tree_at(lambda k: (k.vm, k.va, k.cos_va, k.sin_va), c, (vm, va, jnp.cos(va), jnp.sin(va)))


# Start of the Newton fallback: "init" (the caller's start, i.e. exactly the solve that
# `method="newton"` would run) or "fdlf" (the fast-decoupled iterate and its switches).
_FALLBACK_START = "init"


def _newton_fallback(net: "ACNetwork", lane: _Lane, init: _Carry, c: _Carry, *, dtype, **opts) -> _Carry:
    """Re-solve by Newton–Raphson the instances the fast-decoupled loop left unconverged.

    Converged instances enter the Newton loop already done, so on its own it takes no
    iteration and under `vmap` the compacting rule skips every stage (one `lax.cond`
    on "any lane active"); the rest are compacted to batches of 1/4 and 1/16 like the
    fast-decoupled loop. `n_iter` counts the updates of both loops.
    """
    p, q, _ = _bus_power(net, dtype, c.vm, c.va, (c.cos_va, c.sin_va))
    f = _residual(net, lane, p, q, c.is_pv, c.q_target)
    solved = c.converged | jnp.all(jnp.abs(f) < lane.row_tol)
    start = init if _FALLBACK_START == "init" else c
    start = eqx.tree_at(
        lambda k: (k.it, k.done, k.converged, k.best, k.stall),
        start,
        (jnp.zeros_like(c.it), solved, solved, jnp.full_like(c.best, jnp.inf), jnp.zeros_like(c.stall)),
    )
    newton = _solve(net, lane, start, method="newton", skip_when_done=True, dtype=dtype, **opts)
    keep = lambda a, b: where(solved, a, b)  # noqa: E731
    out = jax.tree.map(keep, eqx.tree_at(lambda k: k.converged, c, solved), newton)
    return eqx.tree_at(lambda k: k.it, out, c.it + where(solved, 0, newton.it))


def _line_flows(net: "ACNetwork", vm, va):
    """Branch end flows [MW, MVAr, MVA], each `(L,)`, from bus voltages `vm, va` `(N,)`."""
    coef = lambda x, k: x[:, k].astype(vm.dtype)  # noqa: E731
    bg, bb, base = net.branch_g, net.branch_b, net.base_mva
    sin_va, cos_va = jnp.sin(va), jnp.cos(va)
    ev, fv = vm * cos_va, vm * sin_va
    ef, ff_ = ev[net.line_from], fv[net.line_from]
    et, ft_ = ev[net.line_to], fv[net.line_to]

    def end_power(k_self, k_other, e_s, f_s, e_o, f_o):
        gs, bs, go, bo = coef(bg, k_self), coef(bb, k_self), coef(bg, k_other), coef(bb, k_other)
        i_re = gs * e_s - bs * f_s + go * e_o - bo * f_o
        i_im = bs * e_s + gs * f_s + bo * e_o + go * f_o
        return (e_s * i_re + f_s * i_im) * base, (f_s * i_re - e_s * i_im) * base

    pf, qf = end_power(0, 1, ef, ff_, et, ft_)
    pt, qt = end_power(3, 2, et, ft_, ef, ff_)
    return pf, qf, pt, qt, jnp.sqrt(pf * pf + qf * qf), jnp.sqrt(pt * pt + qt * qt)


def _line_flows_by_differences(net: "ACNetwork", vm, va):
    """`_line_flows` from the difference-form end currents (`_branch_currents`)."""
    ev, fv = vm * jnp.cos(va), vm * jnp.sin(va)
    ends = _branch_ends(net, ev, fv)
    if_re, if_im, it_re, it_im = _branch_currents(net, ends)
    ef, ff_, et, ft_ = ends[:4]
    base = net.base_mva
    pf, qf = (ef * if_re + ff_ * if_im) * base, (ff_ * if_re - ef * if_im) * base
    pt, qt = (et * it_re + ft_ * it_im) * base, (ft_ * it_re - et * it_im) * base
    return pf, qf, pt, qt, jnp.sqrt(pf * pf + qf * qf), jnp.sqrt(pt * pt + qt * qt)


@_solver_entry(static_argnames=("enforce_q_limits", "max_step", "method", "newton_step", "refine_steps", "throw"))
def ac_power_flow(
    net: ACNetwork,
    p_gen_mw: Float[Array, " n_units"],
    q_gen_mvar: Float[Array, " n_units"] | None,
    load_p_mw: Float[Array, " n_loads"],
    load_q_mvar: Float[Array, " n_loads"],
    v_set: Float[Array, " n_nodes"] | None = None,
    *,
    init_vm: Float[Array, " n_nodes"] | None = None,
    init_va: Float[Array, " n_nodes"] | None = None,
    init_pv_limit: Int[Array, " n_nodes"] | None = None,
    max_iter: int | IntScalar = 30,
    tol: float | FloatScalar = 1e-5,
    enforce_q_limits: bool = True,
    max_step: float = 1.0,
    method: str = "newton",
    newton_step: str = "auto",
    refine_steps: int = 0,
    throw: bool = False,
) -> ACPFResult:
    """Solve the AC power flow of `net` (MATPOWER's Newton power flow, or fast-decoupled).

    Unknowns are `[Va, Vm]` on every non-slack bus; PV→PQ switching is a traced mask, so
    the Jacobian keeps its shape. With `enforce_q_limits` a PV bus whose generator Q leaves
    `[q_min, q_max]` switches to PQ, Q pinned at the violated limit, once the largest
    mismatch is below 1e-2 p.u. A non-finite step (an islanded bus) stops the loop at the
    last finite iterate with `converged=False`; every step is clamped to `max_step`, so a
    diverging case stays finite. Fixed-shape, `jit`- and `vmap`-friendly; `max_iter` and
    `tol` are traced (no retrace when they change). The computation dtype is that of the
    power inputs. Not reverse-mode differentiable. Networks of 500 buses or more, and by
    default every network on a GPU or TPU, take an inexact Newton–Krylov step (GMRES
    preconditioned by the fast-decoupled operators) instead of factorising the dense
    Jacobian (`newton_step`). A Newton solve whose mismatch stops decreasing (8 iterations
    without a new minimum) ends unconverged before `max_iter`. `refine_steps` polishes
    converged float32 solutions on a cancellation-free (branch-wise) mismatch.

    **Arguments:**

    - `net`: the [`ACNetwork`][powerzoojax.physics.ACNetwork].
    - `p_gen_mw`: `(G,)` unit active power [MW]; the slack bus's units are re-solved.
    - `q_gen_mvar`: `(G,)` unit reactive power [MVAr], counted only at PQ buses; `None`
      for zeros.
    - `load_p_mw`, `load_q_mvar`: `(D,)` loads [MW, MVAr].
    - `v_set`: `(N,)` voltage set-points of the PV and slack buses [p.u.]; `None` takes
      `net.v_set`.
    - `init_vm`, `init_va`: `(N,)` warm start [p.u., rad]; PV/slack magnitudes are
      re-pinned to the set-points. `None` starts flat.
    - `init_pv_limit`: `(N,)` int warm start of the PV→PQ switches (e.g. a previous
      result's `pv_limit`); each such bus is tested once and may return to PV.
    - `max_iter`: iteration budget.
    - `tol`: convergence tolerance on every mismatch row [p.u.].
    - `enforce_q_limits`: switch PV buses at their reactive limits (static).
    - `max_step`: largest update per iteration [rad, p.u.] (static).
    - `method`: `"newton"`, `"fdlf"` (fast-decoupled, with a Newton re-solve of the
      instances it leaves unconverged) or `"fdlf_only"` (static).
    - `newton_step`: how the Newton iterations (of `"newton"` and of `"fdlf"`'s re-solve)
      solve `J dx = -F` (static): `"dense"` (LU of the Jacobian), `"krylov"` (matrix-free
      GMRES preconditioned by the fast-decoupled operators: products only), or `"auto"`:
      Krylov on networks of 500 buses or more; below that the dense LU on a CPU and the
      Krylov step on other devices (GPU, TPU), chosen when the program is lowered.
    - `refine_steps`: fast-decoupled iterations taken by each converged instance after
      the loop on the mismatch summed over the branches in difference form; with any,
      the reported injections and flows use that form too (static). The loop's mismatch
      (one dense `Ybus` product) stops at the float32 round-off of `|Ybus| |V|`: on case
      118 the voltages end about 5e-6 off the exact solution. Two iterations take them to
      1-2 float32 ulps of it whichever Newton step the loop took (so two devices agree to
      that), at about 1.2-1.5x the solve's time on a CPU (`benchmarks/ac_pf_precision.py`).
    - `throw`: raise (at run time, also under `jit`) with the status's message unless it
      is `successful` (static); by default failure is only reported in `status`.

    **Returns:**

    An [`ACPFResult`][powerzoojax.physics.ACPFResult].
    """
    if method not in AC_PF_METHODS:
        raise ValueError(f"ac_power_flow: method must be one of {AC_PF_METHODS}, got {method!r}")
    if newton_step not in NEWTON_STEPS:
        raise ValueError(f"ac_power_flow: newton_step must be one of {NEWTON_STEPS}, got {newton_step!r}")
    dtype = jnp.result_type(p_gen_mw, load_p_mw, load_q_mvar)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.float32
    cast = lambda x: jnp.asarray(x).astype(dtype)  # noqa: E731
    n, base = net.n_nodes, net.base_mva
    p_gen = cast(p_gen_mw) * cast(net.unit_on)
    q_gen = jnp.zeros_like(p_gen) if q_gen_mvar is None else cast(q_gen_mvar) * cast(net.unit_on)
    # One-hot maps built from the index leaves rather than scatter-adds (batched scatters
    # are slow on CPU); built in the graph so that a caller may swap `load_bus` for a
    # longer index vector (extra pseudo-loads) with `eqx.tree_at`.
    unit_map = jax.nn.one_hot(net.unit_bus, n, dtype=dtype).T
    load_map = jax.nn.one_hot(net.load_bus, n, dtype=dtype).T
    load_p = hp.matmul(load_map, cast(load_p_mw))
    load_q = hp.matmul(load_map, cast(load_q_mvar))
    gen_p_bus = hp.matmul(unit_map, p_gen)
    gen_q_bus = hp.matmul(unit_map, q_gen)
    p_sched = (gen_p_bus - load_p) / base
    q_sched = (gen_q_bus - load_q) / base
    vs = cast(net.v_set) if v_set is None else cast(v_set)
    q_lo = (cast(net.q_min_mvar) - load_q) / base
    q_hi = (cast(net.q_max_mvar) - load_q) / base

    is_pv0, q_target0, inherited0 = net.is_pv, q_sched, None
    if init_pv_limit is not None and enforce_q_limits:
        # Warm start of the PV->PQ switches (e.g. the previous env step's): these buses
        # start as PQ with Q pinned at that limit; each is tested once for a return to PV
        # (see `switch_pv`). Only initial PV buses can be switched.
        side = jnp.asarray(init_pv_limit)
        inherited0 = net.is_pv & (side != 0)
        is_pv0 = net.is_pv & ~inherited0
        q_target0 = where(inherited0, where(side > 0, q_hi, q_lo), q_sched)

    is_slack = jnp.arange(n) == net.slack_idx
    fixed_vm = net.is_pv | is_slack
    vm0 = jnp.ones((n,), dtype) if init_vm is None else cast(init_vm)
    va_ref = cast(net.va_ref)
    va0 = jnp.full((n,), va_ref, dtype) if init_va is None else cast(init_va)
    vm0 = where(is_pv0 | is_slack, vs, vm0)
    if init_va is not None:
        va0 = va0 - va0[net.slack_idx] + va_ref  # the slack angle is the reference

    slack = net.slack_idx
    red = lambda x: _drop(x, slack)  # noqa: E731
    # Per-row tolerance: a float32 iterate cannot represent V better than eps, which
    # leaves a mismatch of up to ~eps * sum_k |Y_ik| at bus i (measured <= 0.4x that on
    # cases 14-300); a stiff bus (case 300: sum |Y| ~ 5e3) could otherwise never reach
    # tol = 1e-5 although its voltages are exact to ~1e-7. In float64 the floor is far
    # below any useful tol, so there the test is plain max |F| < tol.
    floor = _ROUNDOFF_FACTOR * jnp.finfo(dtype).eps * red(cast(net.y_row_abs))
    row_tol = jnp.maximum(cast(tol), jnp.concatenate([floor, floor]))
    lane = _Lane(
        p_sched=p_sched, vs=vs, q_lo=q_lo, q_hi=q_hi, row_tol=row_tol,
        max_iter=jnp.asarray(max_iter, jnp.int32),
    )


    cos_va0, sin_va0 = _loop_trig(va0)
    init = _Carry(
        vm=vm0,
        va=va0,
        is_pv=is_pv0,
        q_target=q_target0,
        it=jnp.zeros((), jnp.int32),
        done=jnp.zeros((), bool),
        converged=jnp.zeros((), bool),
        mismatch=jnp.asarray(jnp.inf, dtype),
        best=jnp.asarray(jnp.inf, dtype),
        stall=jnp.zeros((), jnp.int32),
        cos_va=cos_va0,
        sin_va=sin_va0,
        inherited=inherited0,
    )
    opts: dict[str, Any] = dict(
        dtype=dtype, enforce_q_limits=enforce_q_limits, max_step=max_step, newton_step=newton_step
    )
    c = _solve(net, lane, init, method="newton" if method == "newton" else "fdlf", **opts)
    if method == "fdlf":
        c = _newton_fallback(net, lane, init, c, **opts)
    if not isinstance(refine_steps, int) or refine_steps < 0:
        raise ValueError(f"ac_power_flow: refine_steps must be an int >= 0, got {refine_steps!r}")
    for _ in range(refine_steps):
        c = _refine(net, lane, c, **opts)
    # The loop may stop on the iteration budget right after an update: re-check the
    # mismatch at the returned iterate (also the only place the final P, Q come from).
    if refine_steps:
        p, q, _ = _bus_power_by_branches(net, dtype, c.vm, c.va)
    else:
        p, q, _ = _bus_power(net, dtype, c.vm, c.va, (c.cos_va, c.sin_va))
    f = _residual(net, lane, p, q, c.is_pv, c.q_target)
    err = jnp.max(jnp.abs(f))
    # The loop's own test (taken at this same iterate when it stopped on convergence)
    # counts too: the re-check is another fusion of the same GEMM and can round a row
    # that sat just below its tolerance to just above (~1 lane in 4,000 cold, more often
    # warm-started, where the last mismatch lands nearer the float32 floor).
    converged = c.converged | jnp.all(jnp.abs(f) < row_tol)
    # A non-finite iterate can only come from overflow; report it as diverged, finite.
    ok = jnp.isfinite(err) & jnp.all(jnp.isfinite(c.vm)) & jnp.all(jnp.isfinite(c.va))
    vm = where(ok, c.vm, vm0)
    va = where(ok, c.va, va0)
    p = where(ok, p, p_sched)
    q = where(ok, q, q_sched)
    err = where(ok, err, jnp.asarray(jnp.finfo(dtype).max, dtype))
    converged = converged & ok
    # Unconverged: the budget was spent, or the loop stopped early (a non-finite step or a
    # stalled mismatch); an overflowed iterate is reported apart (the start is returned).
    status = SolverStatus.where(
        ~ok,
        SolverStatus.nonfinite,
        SolverStatus.where(
            converged,
            SolverStatus.successful,
            SolverStatus.where(c.it < lane.max_iter, SolverStatus.diverged, SolverStatus.max_steps_reached),
        ),
    )
    vm, va, p, q = ac_pf_solution_derivatives(
        net, vm, va, p, q, c.is_pv, c.q_target, p_sched, q_sched, q_lo, q_hi, vs, converged
    )

    p_inj = p * base
    q_inj = q * base
    bus_q_gen = q_inj + load_q
    slack_p = p_inj[net.slack_idx] + load_p[net.slack_idx]

    unit_on = cast(net.unit_on)
    at_slack = (net.unit_bus == net.slack_idx).astype(dtype) * unit_on
    n_slack_units = jnp.sum(at_slack)
    slack_extra = slack_p - jnp.sum(p_gen * at_slack)
    slack_share = where(n_slack_units > 0, slack_extra / jnp.maximum(n_slack_units, 1.0), 0.0)
    unit_p = p_gen + slack_share * at_slack
    regulating = fixed_vm[net.unit_bus].astype(dtype) * unit_on
    units_per_bus = hp.matmul(unit_map, regulating)
    bus_share = bus_q_gen / jnp.maximum(units_per_bus, 1.0)
    unit_q = where(regulating > 0, bus_share[net.unit_bus], q_gen)

    pf, qf, pt, qt, s_from, s_to = (_line_flows_by_differences if refine_steps else _line_flows)(net, vm, va)
    switched = net.is_pv & ~c.is_pv
    result = ACPFResult(
        vm=vm,
        va=va,
        p_inj_mw=p_inj,
        q_inj_mvar=q_inj,
        bus_q_gen_mvar=bus_q_gen,
        slack_p_mw=slack_p,
        unit_p_mw=unit_p,
        unit_q_mvar=unit_q,
        line_p_from_mw=pf,
        line_q_from_mvar=qf,
        line_p_to_mw=pt,
        line_q_to_mvar=qt,
        line_s_from_mva=s_from,
        line_s_to_mva=s_to,
        line_loading_mva=jnp.maximum(s_from, s_to),
        pv_switched=switched,
        pv_limit=where(switched, where(c.q_target >= q_hi, 1, -1), 0).astype(jnp.int32),
        status=status,
        n_iter=c.it,
        max_mismatch=err,
    )
    return raise_if_failed(result, status, throw)


__all__ = ["ACNetwork", "ACPFResult", "ac_power_flow", "make_ac_network"]
