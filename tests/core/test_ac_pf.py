"""Newton-Raphson AC power flow against PYPOWER's ``runpf`` on the same MATPOWER cases
(``load_case(id, source="matpower")``).

The reference cases are read from the MATPOWER files (``matpowercaseframes``), not from
our registry, so a conversion error in the registry would also show up here.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference_matpower import matpower_ppc
from pypower.api import ppoption, runpf

from powerzoojax.case import load_case
from powerzoojax.physics import _ac_pf as ac_pf_module
from powerzoojax.physics import ac_power_flow, make_ac_network
from powerzoojax.utils.jax_utils import enable_x64

CASES = ("5", "14", "118", "300")
VM, VA, PD, QD, BUS_TYPE = 7, 8, 2, 3, 1
PG, QG, GEN_STATUS = 1, 2, 7
PF_COL = 13


@functools.cache
def _reference_ppc(case_id: str) -> dict:
    ppc = matpower_ppc(f"case{case_id}")
    if case_id == "5":
        # Our registry moves the case-5 slack from bus 4 to bus 1 (reference spec).
        types = ppc["bus"][:, BUS_TYPE]
        ppc["bus"][:, BUS_TYPE] = np.where(ppc["bus"][:, 0] == 1, 3, np.where(types == 3, 2, types))
    return ppc


def _scaled_inputs(case_id: str, seed: int, f32_tables: bool = False):
    """Per-bus load scaling in [0.85, 1.1] and a common generation scaling, applied to the
    reference tables; returns (ppc, pg, qg, pd, qd) in MW/MVAr (float64 NumPy)."""
    rng = np.random.default_rng(seed)
    source = _reference_ppc(case_id)
    ppc = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in source.items()}
    if f32_tables:
        # Our CaseData is float32: give the float64 reference the same rounded inputs.
        for key in ("bus", "gen", "branch"):
            ppc[key] = ppc[key].astype(np.float32).astype(np.float64)
    scale = rng.uniform(0.85, 1.1, ppc["bus"].shape[0])
    ppc["bus"][:, PD] *= scale
    ppc["bus"][:, QD] *= scale
    ppc["gen"][:, PG] *= float(np.mean(scale))
    on = ppc["gen"][:, GEN_STATUS] > 0
    pg = ppc["gen"][:, PG] * on
    qg = ppc["gen"][:, QG] * on
    return ppc, pg, qg, ppc["bus"][:, PD], ppc["bus"][:, QD]


def _run_reference(ppc: dict) -> dict:
    result, success = runpf(ppc, ppoption(VERBOSE=0, OUT_ALL=0, PF_TOL=1e-12, PF_MAX_IT=30))
    assert success
    return result


def _slack_va_deg(case_id: str) -> float:
    """The reference angle of the MATPOWER table (30 deg on case 118), which PYPOWER keeps."""
    bus = _reference_ppc(case_id)["bus"]
    return float(bus[bus[:, BUS_TYPE] == 3, VA][0])


@functools.cache
def _network(case_id: str, dtype=jnp.float32):
    return make_ac_network(load_case(case_id, source="matpower"), dtype=dtype, va_ref_deg=_slack_va_deg(case_id))


@functools.cache
def _solver(enforce_q_limits: bool = False, method: str = "newton"):
    def solve(net, pg, qg, pd, qd, tol):
        return ac_power_flow(
            net, pg, qg, pd, qd, tol=tol, enforce_q_limits=enforce_q_limits, method=method
        )

    return jax.jit(solve)


@pytest.mark.parametrize("case_id", CASES)
@pytest.mark.parametrize("seed", [3])
def test_float32_matches_pypower(case_id: str, seed: int) -> None:
    ppc, pg, qg, pd, qd = _scaled_inputs(case_id, seed)
    ref = _run_reference(ppc)
    net = _network(case_id)
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    res = _solver()(net, f32(pg), f32(qg), f32(pd), f32(qd), 1e-5)
    assert bool(res.converged)
    assert res.vm.dtype == jnp.float32
    slack = net.slack_idx
    np.testing.assert_allclose(np.asarray(res.vm), ref["bus"][:, VM], atol=1e-4, rtol=0)
    # Absolute angles: the slack keeps the case's reference angle (case 118: 30 deg).
    np.testing.assert_allclose(np.asarray(res.va), np.deg2rad(ref["bus"][:, VA]), atol=1e-4, rtol=0)
    # Branch flows and the slack's generation follow from the voltages: loose MW checks.
    np.testing.assert_allclose(np.asarray(res.line_p_from_mw), ref["branch"][:, PF_COL], atol=0.05)
    slack_gen = ref["gen"][ref["gen"][:, 0] == ref["bus"][slack, 0], PG].sum()
    assert abs(float(res.slack_p_mw) - slack_gen) < 0.05


@pytest.mark.parametrize(
    "case_id", ["5", "14", "118", pytest.param("300", marks=pytest.mark.slow)]
)
def test_float64_matches_pypower(case_id: str) -> None:
    ppc, pg, qg, pd, qd = _scaled_inputs(case_id, seed=7, f32_tables=True)
    ref = _run_reference(ppc)
    with enable_x64():
        net = make_ac_network(
            load_case(case_id, source="matpower"), dtype=jnp.float64, va_ref_deg=_slack_va_deg(case_id)
        )
        f64 = lambda x: jnp.asarray(x, jnp.float64)  # noqa: E731
        res = _solver()(net, f64(pg), f64(qg), f64(pd), f64(qd), 1e-10)
        assert res.vm.dtype == jnp.float64
        assert bool(res.converged)
        vm, va = np.asarray(res.vm), np.asarray(res.va)
    np.testing.assert_allclose(vm, ref["bus"][:, VM], atol=1e-7, rtol=0)
    np.testing.assert_allclose(va, np.deg2rad(ref["bus"][:, VA]), atol=1e-7, rtol=0)


def _nominal(case_id: str, factor: float = 1.0):
    case = load_case(case_id, source="matpower")
    on = np.asarray(case.unit_status) > 0
    pg = jnp.asarray(np.asarray(case.unit_pg) * on * factor, jnp.float32)
    return case, pg, case.node_pd * factor, case.node_qd * factor


@pytest.mark.parametrize("method", ["newton", "fdlf"])
def test_overloaded_case_reports_non_convergence_with_finite_outputs(method: str) -> None:
    case, pg, pd, qd = _nominal("14", factor=5.0)
    res = _solver(True, method)(_network("14"), pg, None, pd, qd, 1e-5)
    assert not bool(res.converged)
    assert float(res.max_mismatch) > 1e-3
    for leaf in jax.tree_util.tree_leaves(res):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert bool(jnp.all(jnp.isfinite(leaf)))


@pytest.mark.parametrize("method", ["newton", "fdlf"])
def test_islanded_bus_reports_non_convergence_with_finite_outputs(method: str) -> None:
    case, pg, pd, qd = _nominal("14")
    island = 7  # bus 8: a PV bus with a single line
    cut = (case.line_from_idx == island) | (case.line_to_idx == island)
    islanded = eqx.tree_at(lambda c: c.line_status, case, jnp.where(cut, 0, case.line_status))
    net = make_ac_network(islanded)
    res = _solver(True, method)(net, pg, None, pd.at[island].set(10.0), qd, 1e-5)
    assert not bool(res.converged)
    for leaf in jax.tree_util.tree_leaves(res):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert bool(jnp.all(jnp.isfinite(leaf)))


def test_vmap_equals_per_instance_solves() -> None:
    case, pg, pd, qd = _nominal("14")
    net = _network("14")
    scales = jnp.asarray([0.8, 1.0, 1.2, 5.0], jnp.float32)  # the last one diverges
    batched = jax.jit(
        jax.vmap(lambda s: ac_power_flow(net, pg * s, None, pd * s, qd * s))
    )(scales)
    single = jax.jit(lambda s: ac_power_flow(net, pg * s, None, pd * s, qd * s))
    for k, s in enumerate(scales):
        one = single(s)
        assert bool(batched.converged[k]) == bool(one.converged)
        if not bool(one.converged):
            continue  # a diverging iteration is chaotic: only its flag is comparable
        np.testing.assert_allclose(np.asarray(batched.vm[k]), np.asarray(one.vm), atol=1e-6)
        np.testing.assert_allclose(np.asarray(batched.va[k]), np.asarray(one.va), atol=1e-6)
        # A batched LU and a single one round differently: where the stopping test sits at
        # the round-off floor the two may stop one Newton update apart.
        assert abs(int(batched.n_iter[k]) - int(one.n_iter)) <= 1, (k, int(batched.n_iter[k]), int(one.n_iter))
    assert np.asarray(batched.converged).tolist() == [True, True, True, False]


def test_no_retrace_across_calls() -> None:
    case, pg, pd, qd = _nominal("5")
    net = _network("5")
    traces = []

    @jax.jit
    def solve(net, pg, pd, qd, tol, max_iter):
        traces.append(1)
        return ac_power_flow(net, pg, None, pd, qd, tol=tol, max_iter=max_iter)

    for k in range(3):
        res = solve(net, pg * (1 + 0.1 * k), pd * (1 + 0.1 * k), qd, 1e-5 * (k + 1), 20 + k)
        assert bool(res.converged)
    assert len(traces) == 1


def test_warm_start_takes_fewer_iterations_to_the_same_solution() -> None:
    case, pg, pd, qd = _nominal("14")
    net = _network("14")
    cold = _solver()(net, pg, None, pd, qd, 1e-5)
    warm = jax.jit(
        lambda vm, va: ac_power_flow(
            net, pg, None, pd, qd, init_vm=vm, init_va=va, enforce_q_limits=False
        )
    )(cold.vm, cold.va)
    assert bool(cold.converged) and bool(warm.converged)
    assert int(warm.n_iter) < int(cold.n_iter)
    np.testing.assert_allclose(np.asarray(warm.vm), np.asarray(cold.vm), atol=1e-5)


@pytest.mark.parametrize("case_id", ["14", pytest.param("118", marks=pytest.mark.slow)])
def test_fast_decoupled_matches_newton(case_id: str) -> None:
    case, pg, pd, qd = _nominal(case_id)
    net = _network(case_id)
    newton = _solver(False, "newton")(net, pg, None, pd, qd, 1e-5)
    fdlf = _solver(False, "fdlf")(net, pg, None, pd, qd, 1e-5)
    assert bool(newton.converged) and bool(fdlf.converged)
    np.testing.assert_allclose(np.asarray(fdlf.vm), np.asarray(newton.vm), atol=1e-4)
    np.testing.assert_allclose(np.asarray(fdlf.va), np.asarray(newton.va), atol=1e-4)


def test_q_limits_pin_switched_buses_at_their_limit() -> None:
    case, pg, pd, qd = _nominal("118")
    net = _network("118")
    res = _solver(True, "newton")(net, pg, None, pd, qd, 1e-5)
    assert bool(res.converged)
    switched = np.asarray(res.pv_switched)
    assert switched.any()  # case 118 has generators beyond their Q limits at nominal load
    q = np.asarray(res.bus_q_gen_mvar)
    lo, hi = np.asarray(net.q_min_mvar), np.asarray(net.q_max_mvar)
    at_limit = np.isclose(q, lo, atol=0.05) | np.isclose(q, hi, atol=0.05)
    assert at_limit[switched].all()
    still_pv = np.asarray(net.is_pv) & ~switched
    assert np.all((q[still_pv] >= lo[still_pv] - 0.05) & (q[still_pv] <= hi[still_pv] + 0.05))
    # Switched buses are PQ now: their voltage left the set point.
    assert np.abs(np.asarray(res.vm)[switched] - np.asarray(net.v_set)[switched]).max() > 1e-4


def test_case118_reference_angle_is_honoured() -> None:
    """MATPOWER's case 118 fixes its slack (bus 69) at 30 deg: our solution keeps it, and
    the network without a reference angle gives the same angles shifted by 30 deg."""
    case, pg, pd, qd = _nominal("118")
    assert _slack_va_deg("118") == 30.0
    with_ref = _solver(True, "fdlf")(_network("118"), pg, None, pd, qd, 1e-5)
    no_ref = _solver(True, "fdlf")(make_ac_network(case, va_ref_deg=0.0), pg, None, pd, qd, 1e-5)
    slack = case.slack_bus_idx
    assert bool(with_ref.converged) and bool(no_ref.converged)
    assert float(with_ref.va[slack]) == pytest.approx(np.deg2rad(30.0), abs=1e-7)
    np.testing.assert_allclose(np.asarray(with_ref.va) - np.deg2rad(30.0), np.asarray(no_ref.va), atol=1e-5)
    np.testing.assert_allclose(np.asarray(with_ref.vm), np.asarray(no_ref.vm), atol=1e-5)


def test_fast_decoupled_with_q_limits_matches_newton() -> None:
    """Case 118 at nominal load switches PV buses to PQ: the fast-decoupled solve (constant
    B'', switched buses through their Schur system) must land on Newton's solution."""
    case, pg, pd, qd = _nominal("118")
    net = _network("118")
    newton = _solver(True, "newton")(net, pg, None, pd, qd, 1e-5)
    fdlf = _solver(True, "fdlf")(net, pg, None, pd, qd, 1e-5)
    assert bool(newton.converged) and bool(fdlf.converged)
    assert np.asarray(fdlf.pv_switched).sum() >= 5
    np.testing.assert_array_equal(np.asarray(fdlf.pv_switched), np.asarray(newton.pv_switched))
    np.testing.assert_allclose(np.asarray(fdlf.vm), np.asarray(newton.vm), atol=1e-4)
    np.testing.assert_allclose(np.asarray(fdlf.va), np.asarray(newton.va), atol=1e-4)


def test_fast_decoupled_with_q_limits_matches_newton_on_random_set_points() -> None:
    """Case 118, nominal loads, unit set-points scattered +-20 % around the case's (the
    slack takes the imbalance): ~8 PV buses hit a Q limit per instance. The fast-decoupled
    switched-bus operators (Schur system in the initial-PV space) must switch the same
    buses and land on Newton's solution."""
    case, pg, pd, qd = _nominal("118")
    net = _network("118")
    rng = np.random.default_rng(11)
    pgs = jnp.asarray(np.asarray(pg)[None, :] * rng.uniform(0.8, 1.2, (6, pg.shape[0])), jnp.float32)

    def batch(method):
        return jax.jit(jax.vmap(lambda p: ac_power_flow(net, p, None, pd, qd, method=method)))(pgs)

    newton, fdlf = batch("newton"), batch("fdlf")
    assert np.asarray(newton.converged).all() and np.asarray(fdlf.converged).all()
    assert np.asarray(fdlf.pv_switched).sum(axis=1).min() >= 3
    np.testing.assert_array_equal(np.asarray(fdlf.pv_switched), np.asarray(newton.pv_switched))
    np.testing.assert_allclose(np.asarray(fdlf.vm), np.asarray(newton.vm), atol=1e-4)
    np.testing.assert_allclose(np.asarray(fdlf.va), np.asarray(newton.va), atol=1e-4)


@functools.cache
def _compaction_batch(case_id: str, n: int, seed: int):
    """Unit set-points uniform in [p_min, p_max] (the slack takes the imbalance), loads
    scaled per instance in [0.7, 1.3] and a few instances at 4x load (unsolvable), so
    that the lanes need very different iteration counts."""
    case = load_case(case_id, source="matpower")
    rng = np.random.default_rng(seed)
    on = np.asarray(case.unit_status) > 0
    lo, hi = np.asarray(case.unit_p_min), np.asarray(case.unit_p_max)
    pg = (lo + rng.uniform(0.0, 1.0, (n, lo.size)) * (hi - lo)) * on
    scale = rng.uniform(0.7, 1.3, (n, 1))
    scale[rng.choice(n, 3, replace=False)] = 4.0
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    pd = np.asarray(case.node_pd)[None, :] * scale
    qd = np.asarray(case.node_qd)[None, :] * scale
    return f32(pg), f32(pd), f32(qd)


@functools.cache
def _fdlf_solvers(case_id: str):
    net = _network(case_id)
    one = lambda pg, pd, qd: ac_power_flow(net, pg, None, pd, qd, method="fdlf")  # noqa: E731
    return jax.jit(one), jax.jit(jax.vmap(one)), jax.jit(jax.vmap(jax.vmap(one)))


def _assert_lanes_match_single_solves(batched, single, pg, pd, qd, net, n_lanes: int = 16) -> None:
    """The slowest ``n_lanes`` lanes (failures first: the ones the compaction moves to the
    smallest batches) and lane 0 against unbatched solves."""
    conv = np.asarray(batched.converged)
    order = np.argsort(-(np.asarray(batched.n_iter) + 1000 * ~conv), kind="stable")
    # A line's flow moves by base * |b_series| per radian of angle difference; two float32
    # ulps of an angle in [0.5, 1) rad (the case keeps its 30 deg reference) are the
    # resolution of the converged iterate (5.9e-4 MW per ulp on case 118's line 49,
    # 1.5e-3 MW on line 182), which no ordering of the arithmetic can beat.
    flow_ulp = 2 * float(net.base_mva) * np.abs(np.asarray(net.branch_b)[:, 1]) * float(np.spacing(np.float32(0.5)))
    for k in sorted({0, *order[:n_lanes].tolist()}):
        one = single(pg[k], pd[k], qd[k])
        assert bool(one.converged) == bool(conv[k]), k
        if not bool(one.converged):
            # An unsolvable lane's iterates wander (mismatches of hundreds of MW) until the
            # divergence test or the cap stops them: the iteration it stops at follows the
            # round-off, not the problem. Both runs fail it, with finite outputs.
            assert all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree.leaves(one)), k
            continue
        # A single solve is a matrix-vector product, a batch a GEMM: their round-off may
        # move the convergence test across tol by one iteration.
        assert abs(int(one.n_iter) - int(batched.n_iter[k])) <= 1, k
        # One update apart, the two iterates differ by about their mismatch: MW flows by up
        # to base * max |mismatch| more (case 118: 10 vs 11 fast-decoupled iterations,
        # max |mismatch| 5e-5 p.u., a flow 4.3e-3 MW apart).
        apart = int(one.n_iter) != int(batched.n_iter[k])
        step_mw = float(net.base_mva) * max(float(one.max_mismatch), float(batched.max_mismatch[k])) if apart else 0.0
        # Same iterations, but float32 GEMMs of different batch sizes round differently:
        # voltages agree to ~1e-6, MW-sized quantities to float32 resolution.
        flow_atol = 2e-3 + flow_ulp + step_mw
        for field, atol, rtol in (("vm", 1e-5, 0), ("va", 1e-5, 0), ("line_p_from_mw", flow_atol, 5e-5),
                                  ("line_loading_mva", flow_atol, 5e-5), ("unit_q_mvar", 1e-2, 5e-5)):
            got, ref = np.asarray(getattr(batched, field)[k]), np.asarray(getattr(one, field))
            bound = atol + rtol * np.abs(ref)
            assert np.all(np.abs(got - ref) <= bound), (k, field, float(np.max(np.abs(got - ref) / bound)))


@pytest.mark.parametrize("case_id", ["14", "118"])
def test_compacting_batched_loop_equals_single_solves(case_id: str) -> None:
    """At N = 64 the vmap rule of the iteration compacts the still-active lanes into
    smaller batches; every lane must take the iterations and reach the solution it reaches
    alone, the unsolvable ones included (converged False, finite outputs)."""
    pg, pd, qd = _compaction_batch(case_id, 64, seed=2)
    single, batched_fn, _ = _fdlf_solvers(case_id)
    batched = batched_fn(pg, pd, qd)
    n_iter, conv = np.asarray(batched.n_iter), np.asarray(batched.converged)
    # The batch exercises the compaction: lanes finish at very different iterations.
    assert n_iter.max() - n_iter[conv].min() >= 5
    assert (~conv).sum() >= 3 and conv.mean() > 0.8
    assert all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree.leaves(batched))
    _assert_lanes_match_single_solves(batched, single, pg, pd, qd, _network(case_id))
    # Against the plain vmapped loop (every lane iterates until the slowest is done): the
    # same GEMM row kernels, so the same iterations exactly.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ac_pf_module, "compaction_caps", lambda batch, min_lanes: [])
        net = _network(case_id)
        plain = jax.jit(jax.vmap(lambda p, d, q: ac_power_flow(net, p, None, d, q, method="fdlf")))(pg, pd, qd)
    np.testing.assert_array_equal(np.asarray(plain.n_iter), n_iter)
    np.testing.assert_array_equal(np.asarray(plain.converged), conv)
    np.testing.assert_allclose(np.asarray(plain.vm)[conv], np.asarray(batched.vm)[conv], atol=1e-6)
    np.testing.assert_allclose(np.asarray(plain.va)[conv], np.asarray(batched.va)[conv], atol=1e-6)


def test_compacting_loop_under_nested_vmap() -> None:
    pg, pd, qd = _compaction_batch("14", 128, seed=4)
    single, _, nested_fn = _fdlf_solvers("14")
    nested = nested_fn(pg.reshape(2, 64, -1), pd.reshape(2, 64, -1), qd.reshape(2, 64, -1))
    flat = jax.tree.map(lambda x: x.reshape(128, *x.shape[2:]), nested)
    _assert_lanes_match_single_solves(flat, single, pg, pd, qd, _network("14"))


def test_compacted_fdlf_lanes_match_newton() -> None:
    """Case 118, 64 lanes of random set-points (compaction path): every lane the
    fast-decoupled solve reports converged lands on Newton's solution (1e-4 p.u. / rad),
    and it misses none that Newton solves."""
    pg, pd, qd = _compaction_batch("118", 64, seed=6)
    _, fdlf_fn, _ = _fdlf_solvers("118")
    fdlf = fdlf_fn(pg, pd, qd)
    net = _network("118")
    newton = jax.jit(jax.vmap(lambda p, d, q: ac_power_flow(net, p, None, d, q, method="newton")))(pg, pd, qd)
    cf, cn = np.asarray(fdlf.converged), np.asarray(newton.converged)
    assert cf.sum() >= 55
    assert not (cn & ~cf).any()
    same = cf & cn & (np.asarray(fdlf.pv_switched) == np.asarray(newton.pv_switched)).all(axis=1)
    assert same.sum() >= 0.9 * cf.sum()
    np.testing.assert_allclose(np.asarray(fdlf.vm)[same], np.asarray(newton.vm)[same], atol=1e-4)
    np.testing.assert_allclose(np.asarray(fdlf.va)[same], np.asarray(newton.va)[same], atol=1e-4)


def _schedule_set_points(case, n: int, seed: int) -> np.ndarray:
    """The case's unit outputs plus a uniform offset of +-10 % of each unit's range,
    clipped to the range (the env benchmark's ``schedule`` scenario)."""
    rng = np.random.default_rng(seed)
    on = np.asarray(case.unit_status) > 0
    lo, hi = np.asarray(case.unit_p_min, np.float64), np.asarray(case.unit_p_max, np.float64)
    pg = np.asarray(case.unit_pg, np.float64) + 0.1 * (hi - lo) * rng.uniform(-1.0, 1.0, (n, lo.size))
    return np.clip(pg, lo, hi) * on


def _wrong_side(res, net) -> np.ndarray:
    """Per instance: some switched bus sits on the side of its set point where it would
    not need its limit (the permanent cold-start switch can leave such a bus)."""
    vm, vs, lim = np.asarray(res.vm), np.asarray(net.v_set), np.asarray(res.pv_limit)
    return ((lim > 0) & (vm > vs) | (lim < 0) & (vm < vs)).any(axis=-1)


def test_warm_started_q_limit_switches_reach_the_cold_solution_and_pypower() -> None:
    """Case 118, 12 pairs of successive schedule set-points (+-10 % of range each): the
    second solve started from the first's voltages *and* PV->PQ switches (``init_pv_limit``)
    must take fewer iterations and land on the cold solve's switches and voltages wherever
    the cold solve's switches are consistent (no switched bus on the wrong side of its set
    point; where one is, the warm solve may release it and the two legitimately differ);
    PYPOWER with the switched buses made PQ at those limits gives the same voltages."""
    case = load_case("118", source="matpower")
    net = _network("118")
    _, pd, qd = (None, *(jnp.asarray(x, jnp.float32) for x in (case.node_pd, case.node_qd)))
    n = 12
    prev_pg = jnp.asarray(_schedule_set_points(case, n, seed=21), jnp.float32)
    next_pg = jnp.asarray(_schedule_set_points(case, n, seed=22), jnp.float32)
    _, cold_fn, _ = _fdlf_solvers("118")  # shared with the compaction tests (one compile)
    warm_fn = jax.jit(jax.vmap(lambda p, vm, va, lim: ac_power_flow(
        net, p, None, pd, qd, init_vm=vm, init_va=va, init_pv_limit=lim, method="fdlf")))
    tile = lambda x: jnp.broadcast_to(x, (n, *x.shape))  # noqa: E731
    prev, cold = cold_fn(prev_pg, tile(pd), tile(qd)), cold_fn(next_pg, tile(pd), tile(qd))
    warm = warm_fn(next_pg, prev.vm, prev.va, prev.pv_limit)
    assert np.asarray(prev.converged).all() and np.asarray(cold.converged).all() and np.asarray(warm.converged).all()
    assert np.asarray(prev.pv_switched).sum(axis=1).min() >= 3  # the warm start carries switches
    assert float(np.mean(warm.n_iter)) <= float(np.mean(cold.n_iter)) - 1.0
    ok = ~_wrong_side(cold, net)
    assert ok.sum() >= n // 2
    np.testing.assert_array_equal(np.asarray(warm.pv_limit)[ok], np.asarray(cold.pv_limit)[ok])
    # Both converged to tol = 1e-5 p.u. from different starts: voltages agree to ~1e-6.
    np.testing.assert_allclose(np.asarray(warm.vm)[ok], np.asarray(cold.vm)[ok], atol=1e-5)
    np.testing.assert_allclose(np.asarray(warm.va)[ok], np.asarray(cold.va)[ok], atol=2e-5)
    # Inherited switches on the wrong side were released (none left on these instances).
    assert not _wrong_side(warm, net).any()

    source = _reference_ppc("118")
    gen_bus = source["gen"][:, 0].astype(int)
    bus_pos = {int(b): i for i, b in enumerate(source["bus"][:, 0])}
    for k in np.flatnonzero(ok)[:3]:
        ppc = {key: (v.copy() if isinstance(v, np.ndarray) else v) for key, v in source.items()}
        ppc["gen"][:, PG] = np.asarray(next_pg[k], np.float64)
        lim = np.asarray(warm.pv_limit[k])
        q_bus = np.where(lim > 0, np.asarray(net.q_max_mvar), np.asarray(net.q_min_mvar))
        ppc["gen"][:, QG] = 0.0
        for i in np.flatnonzero(lim):
            ppc["bus"][i, BUS_TYPE] = 1
            first = np.flatnonzero((np.array([bus_pos[b] for b in gen_bus]) == i) & (ppc["gen"][:, GEN_STATUS] > 0))[0]
            ppc["gen"][first, QG] = q_bus[i]
        ref = _run_reference(ppc)
        np.testing.assert_allclose(np.asarray(warm.vm[k]), ref["bus"][:, VM], atol=1e-4, rtol=0)
        np.testing.assert_allclose(np.asarray(warm.va[k]), np.deg2rad(ref["bus"][:, VA]), atol=1e-4, rtol=0)
