"""Reference numeric checkpoints on the default case ids (the reference benchmark tables).

Figures are the reference implementation's published goldens for the same tables: DC-OPF
on case 5 (both variants) and the PTDF flow they imply, Newton AC power flow on case 5,
the balanced radial sweep on case 33bw, AC-OPF on case 5 (inside the stated envelope, and
its objective against PYPOWER ``runopf`` on the same data), the cost and thermal
primitives, and the table constants. Case data come from ``load_case(id)`` with no
``source`` argument, so these checks fail if the defaults stop being the reference tables.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.case import load_case
from powerzoojax.physics import (
    SolverStatus,
    ac_opf,
    ac_power_flow,
    ac_thermal_check,
    dc_opf,
    dc_thermal_check,
    generation_cost,
    make_ac_network,
    make_ac_opf_setup,
    make_dc_opf_setup,
    make_radial_network,
    radial_power_flow,
)
from powerzoojax.utils.jax_utils import enable_x64

CASE5_LOAD_MW = [100.0, 150.0, 200.0, 180.0, 120.0]


@functools.cache
def _dc_opf_solver():
    # The setup is an argument: both variants share one compiled solver.
    return jax.jit(
        lambda setup, load, zeros: dc_opf(
            setup, load, cost_a=zeros, cost_b=zeros, max_iter=200, tol=1e-6
        )
    )


def _case5_dc_opf(line1_cap: float | None):
    case = load_case("5")
    cap = np.asarray(case.line_cap, np.float64).copy()
    if line1_cap is not None:
        cap[0] = line1_cap
    floor = np.where(np.arange(case.n_lines) == 0, -cap, np.asarray(case.line_floor, np.float64))
    setup = make_dc_opf_setup(case, cap, floor, algorithm="by_costs")
    # The checkpoint's objective is linear, mc_c · p: the quadratic and cubic marginal-cost
    # terms are zeroed explicitly (the case-5 table has none, so this is its own cost too).
    zeros = jnp.zeros(case.n_units)
    return _dc_opf_solver()(setup, jnp.asarray(CASE5_LOAD_MW), zeros)


def test_dc_opf_case5_uncongested():
    """Load [100, 150, 200, 180, 120] MW: dispatch [40, 80, 20, 10, 600] MW, LMP 15 at
    every bus, line 1 (bus 1 -> 2) 214.6589 MW, cost 8760 $/h."""
    res = _case5_dc_opf(None)
    assert bool(res.status == SolverStatus.successful) and bool(res.converged)
    np.testing.assert_allclose(res.p_mw, [40, 80, 20, 10, 600], atol=0.01)
    np.testing.assert_allclose(res.lmp, 15.0, atol=0.01)
    assert float(res.line_flow_mw[0]) == pytest.approx(214.6589, abs=0.01)
    assert float(res.objective) == pytest.approx(8760.0, abs=0.01)


def test_dc_opf_case5_line1_limited():
    """Line 1 limited to ±150 MW (line 6 keeps its 240 MW rating): dispatch [5, 10,
    140.0508, 10, 584.9492] MW, LMP [8.6479, 34.9911, 30, 16.2745, 10], line 1 at 150 MW,
    cost 10671.0167 $/h. The reference ran its ADMM with ``max_iter=200``; the interior
    point here runs up to 200 iterations to ``tol=1e-6``."""
    res = _case5_dc_opf(150.0)
    assert bool(res.status == SolverStatus.successful) and bool(res.converged)
    np.testing.assert_allclose(res.p_mw, [5, 10, 140.0508, 10, 584.9492], atol=0.01)
    np.testing.assert_allclose(res.lmp, [8.6479, 34.9911, 30, 16.2745, 10], atol=0.01)
    assert float(res.line_flow_mw[0]) == pytest.approx(150.0, abs=0.01)
    assert float(res.objective) == pytest.approx(10671.0167, abs=0.01)


def test_ptdf_line1_flow_of_the_dc_opf_dispatch():
    """The uncongested dispatch and load give 214.6589 MW on line 1 through the PTDF alone."""
    case = load_case("5")
    dispatch = np.array([40.0, 80.0, 20.0, 10.0, 600.0])
    injection = np.asarray(case.nodes_units_map, np.float64) @ dispatch - np.asarray(CASE5_LOAD_MW)
    np.testing.assert_allclose(injection, [20, -150, -180, -170, 480])
    flows = np.asarray(case.ptdf, np.float64) @ injection
    assert flows[0] == pytest.approx(214.6589, abs=1e-3)


def test_newton_ac_power_flow_case5():
    """At the case's own schedule (unit Pg, bus Pd/Qd; max_iter 30, tol 1e-5): the goldens
    within 1e-3 on voltages and 0.1 MW / MVAr on flows; bus 5 switches PV -> PQ at its
    lower reactive limit (-450 MVAr)."""
    case = load_case("5")
    np.testing.assert_array_equal(case.nodes_loads_map, np.eye(5))  # load k sits at bus k
    res = ac_power_flow(
        make_ac_network(case), case.unit_pg, case.unit_qg, case.node_pd, case.node_qd,
        max_iter=30, tol=1e-5, method="newton", enforce_q_limits=True,
    )  # fmt: skip
    assert bool(res.converged)
    np.testing.assert_allclose(res.vm, [1.06, 1.0081035, 1.01, 1.01, 1.0355649], atol=1e-3)
    np.testing.assert_allclose(
        res.va, [0, -0.05778046, -0.05269875, -0.04460529, 0.02209266], atol=1e-3
    )
    np.testing.assert_allclose(
        res.line_p_from_mw,
        [258.3105, 194.63712, -220.93748, -48.391262, -24.984663, -234.97176],
        atol=0.1,
    )
    np.testing.assert_allclose(
        res.line_q_from_mvar,
        [114.516174, 111.89816, 481.11795, -1.8610109, 7.3029137, -1.9211218],
        atol=0.1,
    )
    assert np.asarray(res.pv_switched).tolist() == [False, False, False, False, True]
    assert int(res.pv_limit[4]) == -1
    # Pinned at the limit up to the float32 mismatch floor (~3e-4 p.u. on this Ybus).
    assert float(res.bus_q_gen_mvar[4]) == pytest.approx(-450.0, abs=0.05)


def test_radial_sweep_case33bw():
    """Nominal loads on the 100 MVA base (atol 1e-3): v[bus 2] 0.99704452, v[bus 18]
    0.91329013, v[bus 33] 0.91679245; line 1 p 0.03901482, q 0.02425106 p.u."""
    case = load_case("33bw")
    assert case.base_mva == 100.0
    net = make_radial_network(case)
    flow = radial_power_flow(net, case.node_pd / case.base_mva, case.node_qd / case.base_mva)
    assert bool(flow.converged)
    np.testing.assert_allclose(
        np.asarray(flow.v_mag)[[1, 17, 32]], [0.99704452, 0.91329013, 0.91679245], atol=1e-3
    )
    line1 = int(np.flatnonzero(np.asarray(net.line_idx) == 0)[0])
    assert float(flow.p_branch[line1]) == pytest.approx(0.03901482, abs=1e-3)
    assert float(flow.q_branch[line1]) == pytest.approx(0.02425106, abs=1e-3)


# ---------------------------------------------------------------------------------------
# AC-OPF.

ACOPF_GOLDEN_P = [40.0, 170.0, 302.8434, 10.0, 477.1566]
ACOPF_GOLDEN_VM = [0.96014, 0.97318, 0.99028, 0.95, 0.95]
ACOPF_GOLDEN_LMP = [14.0, 14.0, 30.0, 40.0, 10.0]
ACOPF_GOLDEN_OBJECTIVE = 17366.87


def _pypower_case5(case, v_min: float, v_max: float) -> dict:
    """The same data as a PYPOWER ``ppc``: the reference table's buses, units (linear cost
    ``mc_c``), lines (r, x, b; ratings 400 / 240 MVA on lines 1 / 6) and voltage band."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    bus = np.zeros((case.n_nodes, 13))
    bus[:, 0], bus[:, 1] = f(case.node_ids), f(case.node_type)
    bus[:, 2], bus[:, 3], bus[:, 4], bus[:, 5] = (f(case.node_pd), f(case.node_qd), f(case.node_gs), f(case.node_bs))
    bus[:, 6], bus[:, 7], bus[:, 9], bus[:, 10] = 1, 1, 230, 1
    bus[:, 11], bus[:, 12] = v_max, v_min
    gen = np.zeros((case.n_units, 10))
    gen[:, 0], gen[:, 1] = f(case.unit_bus_ids), f(case.unit_pg)
    gen[:, 3], gen[:, 4], gen[:, 5] = f(case.unit_q_max), f(case.unit_q_min), f(case.unit_vg)
    gen[:, 6], gen[:, 7] = case.base_mva, 1
    gen[:, 8], gen[:, 9] = f(case.unit_p_max), f(case.unit_p_min)
    cap = f(case.line_cap)
    branch = np.zeros((case.n_lines, 13))
    branch[:, 0], branch[:, 1] = f(case.line_from), f(case.line_to)
    branch[:, 2], branch[:, 3], branch[:, 4] = f(case.line_r), f(case.line_x), f(case.line_b)
    branch[:, 5] = np.where(cap < 1e5, cap, 0.0)
    branch[:, 10], branch[:, 11], branch[:, 12] = 1, -360, 360
    gencost = np.zeros((case.n_units, 6))
    gencost[:, 0], gencost[:, 3], gencost[:, 4] = 2, 2, f(case.unit_cost_c)
    return {"version": "2", "baseMVA": case.base_mva, "bus": bus, "gen": gen, "branch": branch, "gencost": gencost}


@functools.cache
def _ac_opf_solver():
    return jax.jit(lambda setup, pd, qd: ac_opf(setup, pd, qd))


@pytest.mark.parametrize(
    "band",
    [None, (0.95, 1.05)],
    ids=["case-band-0.94-1.06", "acopf-default-band-0.95-1.05"],
)
def test_ac_opf_case5_envelope_and_pypower(band):
    """Nominal load (ΣPd 1000 MW): converged, balance residual < 1e-4 p.u., and within
    the envelope of the golden (±30 MW, ±0.15 p.u., ±25 $/MWh, ±2000 $/h); the objective
    equals PYPOWER ``runopf`` on the same data (our interior point and MATPOWER's PIPS
    agree to 1e-3 $/h).

    Run with the table's voltage band (no Vmin/Vmax columns: the builder's 0.94-1.06) and
    with the reference AC-OPF's own default band 0.95-1.05. The golden dispatch is lossless
    (it sums to exactly 1000 MW) and sits at 0.95 p.u. on buses 4 and 5, while the lossy
    optimum found by both solvers here carries 5.9 MW of losses at 1.04-1.06 p.u.
    (objective 17949.71 / 17959.01 $/h against the golden's 17366.87): inside the envelope,
    not on the golden, which is why the envelope is the acceptance test."""
    from pypower.api import ppoption, runopf

    case = load_case("5")
    v_min, v_max = (0.94, 1.06) if band is None else band
    with enable_x64():
        setup = make_ac_opf_setup(case, dtype=jnp.float64)
        if band is not None:
            setup = eqx.tree_at(
                lambda s: (s.v_min, s.v_max),
                setup,
                (jnp.full(case.n_nodes, v_min, jnp.float64), jnp.full(case.n_nodes, v_max, jnp.float64)),
            )
        np.testing.assert_allclose(setup.v_min, v_min)
        np.testing.assert_allclose(setup.v_max, v_max)
        pd = jnp.asarray(np.asarray(case.node_pd, np.float64))
        qd = jnp.asarray(np.asarray(case.node_qd, np.float64))
        res = _ac_opf_solver()(setup, pd, qd)
        assert bool(res.converged)
        assert float(res.max_mismatch) < 1e-4
        p, vm, lmp = np.asarray(res.p_mw), np.asarray(res.vm), np.asarray(res.lmp)
        objective = float(res.objective)
    np.testing.assert_allclose(p, ACOPF_GOLDEN_P, atol=30.0)
    np.testing.assert_allclose(vm, ACOPF_GOLDEN_VM, atol=0.15)
    np.testing.assert_allclose(lmp, ACOPF_GOLDEN_LMP, atol=25.0)
    assert abs(objective - ACOPF_GOLDEN_OBJECTIVE) <= 2000.0
    assert p.sum() > 1000.0  # losses are supplied: not the lossless golden

    ref = runopf(_pypower_case5(case, v_min, v_max), ppoption(VERBOSE=0, OUT_ALL=0))
    assert ref["success"]
    assert objective == pytest.approx(ref["f"], abs=1e-2)
    np.testing.assert_allclose(p, ref["gen"][:, 1], atol=0.01)
    np.testing.assert_allclose(vm, ref["bus"][:, 7], atol=1e-4)
    np.testing.assert_allclose(lmp, ref["bus"][:, 13], atol=0.01)


# ---------------------------------------------------------------------------------------
# Primitives and constants.


@pytest.mark.parametrize(
    ("p", "a", "b", "c", "expected"),
    [(6.0, 1.0, 0.0, 0.0, 72.0), (100.0, 0.0, 2.0, 5.0, 10500.0), (10.0, 0.5, 2.0, 1.0, 276.6667)],
)
def test_generation_cost_primitive(p, a, b, c, expected):
    """TC of MC = a p² + b p + c: p² at 6 -> 72; 2p + 5 at 100 -> 10500; 0.5p² + 2p + 1 at
    10 -> 276.67 (TC = a/3 p³ + b/2 p² + c p)."""
    cost = generation_cost(jnp.array([p]), jnp.array([a]), jnp.array([b]), jnp.array([c]))
    assert float(cost) == pytest.approx(expected, rel=1e-5)


def test_dc_thermal_primitive():
    """DC flow 500 MW against cap 400: one violation, cost 100."""
    overload, count = dc_thermal_check(jnp.array([500.0]), jnp.array([400.0]), jnp.array([-400.0]))
    assert (float(overload), int(count)) == (100.0, 1)


def test_ac_thermal_primitive():
    """AC pf = 100, qf = 0 and pt = 80, qt = 60 (100 MVA at both ends) against cap 90: cost 10."""
    overload, count = ac_thermal_check(
        jnp.array([100.0]), jnp.array([0.0]), jnp.array([80.0]), jnp.array([60.0]), jnp.array([90.0])
    )
    assert float(overload) == pytest.approx(10.0, abs=1e-5) and int(count) == 1


def test_case_constants():
    """case 5: base 100 MVA, ΣPd 1000, Σd_max 1500 (default profile 750 MW); case 118:
    ΣPd 4242 MW, Σp_max 9634 MW, 54 units, 186 lines; case 33bw: ΣPd 3.715 MW, 32 lines in
    service."""
    case5 = load_case("5")
    assert case5.base_mva == 100.0
    assert float(case5.node_pd.sum()) == pytest.approx(1000.0)
    assert float(case5.load_d_max.sum()) == pytest.approx(1500.0)
    assert float(((case5.load_d_max + case5.load_d_min) / 2).sum()) == pytest.approx(750.0)
    case118 = load_case("118")
    assert (case118.n_units, case118.n_lines) == (54, 186)
    assert float(case118.node_pd.sum()) == pytest.approx(4242.0)
    assert float(case118.unit_p_max.sum()) == pytest.approx(9634.0)
    case33 = load_case("33bw")
    assert float(case33.node_pd.sum()) == pytest.approx(3.715, abs=1e-5)
    assert int((np.asarray(case33.line_status) > 0).sum()) == 32
