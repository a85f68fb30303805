"""case29gb of ``source="matpower"`` (pandapower's GBreducednetwork) against pandapower itself.

The shipped tables were written by ``scripts/build_cases.py`` through pandapower's
``to_ppc``. Here they are checked against the pandapower network's own element tables
(loads, units, costs, ratings, line impedances) and, as a whole, by solving the same
operating point with our DC power flow (PTDF) and AC power flow and with pandapower's
``rundcpp`` / ``runpp``.
"""

import copy
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from powerzoojax.case import load_case
from powerzoojax.physics._ac_pf import ac_power_flow, make_ac_network
from powerzoojax.utils.jax_utils import enable_x64

pp = pytest.importorskip("pandapower")
pn = pytest.importorskip("pandapower.networks")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N_BUS = 29


@functools.cache
def _net():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pn.GBreducednetwork()


def _per_bus(buses, values) -> np.ndarray:
    out = np.zeros(N_BUS)
    np.add.at(out, np.asarray(buses), np.asarray(values, np.float64))
    return out


def _f64(x) -> np.ndarray:
    return np.asarray(x, np.float64)


def test_tables_match_the_pandapower_network():
    case, net = load_case("29gb", source="matpower"), _net()
    # Buses: ids are pandapower indices + 1; loads summed per bus.
    np.testing.assert_array_equal(case.node_ids, net.bus.index.to_numpy() + 1)
    np.testing.assert_allclose(case.node_pd, _per_bus(net.load.bus, net.load.p_mw), rtol=1e-6)
    np.testing.assert_allclose(case.node_qd, _per_bus(net.load.bus, net.load.q_mvar), rtol=1e-6)
    np.testing.assert_allclose(case.node_base_kv, net.bus.vn_kv, rtol=1e-7)
    np.testing.assert_allclose(case.node_v_max, net.bus.max_vm_pu, rtol=1e-7)
    np.testing.assert_allclose(case.node_v_min, net.bus.min_vm_pu, rtol=1e-7)
    assert int(case.node_ids[case.slack_bus_idx]) == int(net.ext_grid.bus.iloc[0]) + 1

    # Units: external grid, generators, static generator, in that order.
    buses = np.concatenate([net.ext_grid.bus, net.gen.bus, net.sgen.bus]) + 1
    np.testing.assert_array_equal(case.unit_bus_ids, buses)
    p_max = np.concatenate([net.ext_grid.max_p_mw, net.gen.max_p_mw, net.sgen.max_p_mw])
    p_min = np.concatenate([net.ext_grid.min_p_mw, net.gen.min_p_mw, net.sgen.min_p_mw])
    np.testing.assert_allclose(case.unit_p_max, p_max, rtol=1e-7)
    np.testing.assert_allclose(case.unit_p_min, p_min, atol=1e-9)
    np.testing.assert_allclose(case.unit_pg[1:65], net.gen.p_mw, rtol=1e-7)

    # Costs: pandapower TC = cp2 p^2 + cp1 p + cp0 -> MC = 2 cp2 p + cp1.
    kinds = ["ext_grid"] + ["gen"] * len(net.gen) + ["sgen"]
    elements = np.concatenate([net.ext_grid.index, net.gen.index, net.sgen.index])
    cost = net.poly_cost.set_index(["et", "element"])
    rows = cost.loc[list(zip(kinds, elements))]
    np.testing.assert_allclose(case.unit_cost_a, 0.0)
    np.testing.assert_allclose(case.unit_cost_b, 2.0 * rows.cp2_eur_per_mw2, rtol=1e-6)
    np.testing.assert_allclose(case.unit_cost_c, rows.cp1_eur_per_mw, rtol=1e-6)
    np.testing.assert_allclose(case.unit_cost_c0, rows.cp0_eur, rtol=1e-6)

    # Branches: 86 lines then 13 transformers (hv -> lv); ratings from thermal limits.
    n_line = len(net.line)
    from_bus = np.concatenate([net.line.from_bus, net.trafo.hv_bus]) + 1
    to_bus = np.concatenate([net.line.to_bus, net.trafo.lv_bus]) + 1
    np.testing.assert_array_equal(case.line_from, from_bus)
    np.testing.assert_array_equal(case.line_to, to_bus)
    vn = net.bus.vn_kv.to_numpy()[net.line.from_bus]
    rate = np.concatenate([np.sqrt(3.0) * vn * net.line.max_i_ka, net.trafo.sn_mva])
    np.testing.assert_allclose(case.line_rate_a, rate, rtol=1e-6)
    np.testing.assert_allclose(case.line_cap, rate, rtol=1e-6)
    z_base = vn**2 / net.sn_mva
    length = net.line.length_km / net.line.parallel
    r_pu, x_pu = (net.line[col] * length / z_base for col in ("r_ohm_per_km", "x_ohm_per_km"))
    np.testing.assert_allclose(case.line_r[:n_line], r_pu, rtol=1e-6)
    np.testing.assert_allclose(case.line_x[:n_line], x_pu, rtol=1e-6)
    np.testing.assert_allclose(case.line_angle[n_line:], net.trafo.shift_degree, atol=1e-9)


@pytest.mark.parametrize("scale", [1.0, 0.85])
def test_dc_power_flow_matches_pandapower_rundcpp(scale):
    # Our DC model is the spec's PTDF (b = -1/x, no phase shifters, §1.5): compare with
    # rundcpp on the same network with the four 2-degree phase shifts set to zero.
    case, net = load_case("29gb", source="matpower"), copy.deepcopy(_net())
    net.trafo["shift_degree"] = 0.0
    net.load["p_mw"] *= scale
    net.gen["p_mw"] *= scale
    pp.rundcpp(net, trafo_model="pi", calculate_voltage_angles=True)
    units = np.concatenate([net.res_ext_grid.p_mw, net.res_gen.p_mw, net.res_sgen.p_mw])
    injection = _f64(case.nodes_units_map) @ units - _per_bus(net.load.bus, net.load.p_mw)
    flows = jnp.asarray(case.ptdf) @ jnp.asarray(injection, jnp.float32)  # float32, as in envs
    expected = np.concatenate([net.res_line.p_from_mw, net.res_trafo.p_hv_mw])
    np.testing.assert_allclose(np.asarray(flows), expected, atol=0.05)  # MW, flows up to 6 GW
    assert np.abs(expected).max() > 1000.0


@functools.cache
def _ac_solver():
    with enable_x64():
        network = make_ac_network(load_case("29gb", source="matpower"), dtype=jnp.float64)

    def solve(p, q, pl, ql):
        return ac_power_flow(network, p, q, pl, ql, enforce_q_limits=False, tol=1e-10, max_iter=30)

    return jax.jit(solve)


@pytest.mark.parametrize("scale", [1.0, 0.9])
def test_ac_power_flow_matches_pandapower_runpp(scale):
    # Full AC model, phase shifters included; pandapower with the same transformer model.
    net = copy.deepcopy(_net())
    net.load[["p_mw", "q_mvar"]] *= scale
    net.gen["p_mw"] *= scale
    pp.runpp(net, trafo_model="pi", calculate_voltage_angles=True, init="flat",
             enforce_q_lims=False, tolerance_mva=1e-9)  # fmt: skip
    units_p = np.concatenate([[0.0], net.gen.p_mw, net.sgen.p_mw])
    units_q = np.concatenate([[0.0], np.zeros(len(net.gen)), net.sgen.q_mvar])
    with enable_x64():
        res = _ac_solver()(
            jnp.asarray(units_p), jnp.asarray(units_q),
            jnp.asarray(_per_bus(net.load.bus, net.load.p_mw)),
            jnp.asarray(_per_bus(net.load.bus, net.load.q_mvar)),
        )  # fmt: skip
        assert bool(res.converged)
        np.testing.assert_allclose(_f64(res.vm), net.res_bus.vm_pu, atol=1e-7)
        np.testing.assert_allclose(np.rad2deg(_f64(res.va)), net.res_bus.va_degree, atol=1e-5)
        p_from = np.concatenate([net.res_line.p_from_mw, net.res_trafo.p_hv_mw])
        q_from = np.concatenate([net.res_line.q_from_mvar, net.res_trafo.q_hv_mvar])
        np.testing.assert_allclose(_f64(res.line_p_from_mw), p_from, atol=1e-3)
        np.testing.assert_allclose(_f64(res.line_q_from_mvar), q_from, atol=1e-3)
        slack_gen = float(net.res_ext_grid.p_mw.iloc[0] + net.sgen.p_mw.sum())
        assert float(res.slack_p_mw) == pytest.approx(slack_gen, abs=1e-3)
