"""AC line outages inside `jit` and the batched contingency screen.

The outaged network built in the graph is checked against `make_ac_network` of the case with
the line taken out on the host (Ybus, branch terms and every fast-decoupled operator), and
the screen's solutions against PYPOWER's `runpf` on the same outaged MATPOWER tables, with
the same equations (reactive limits off on both sides): every single-line outage of case
118 and case 300 that keeps the network connected (the full sets are slow-marked; a
stride of them runs by default).
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pypower.api import ppoption, runpf
from reference_matpower import matpower_ppc

from powerzoojax.case import load_case
from powerzoojax.physics import (
    ac_network_with_line_outages,
    ac_network_with_line_outages_at,
    ac_network_with_line_outages_of_case,
    ac_power_flow,
    contingency_screen,
    make_ac_network,
    make_ac_outage_model,
    sampled_line_pair_outages,
    single_line_outages,
)

VM, VA, BUS_TYPE, PD, QD = 7, 8, 1, 2, 3
PG, GEN_STATUS = 1, 7
BR_STATUS, PF, QF, PT, QT = 10, 13, 14, 15, 16
# Case 118's line 8 (bus 9-10) is the only link of bus 10: its outage islands the bus.
ISLANDING_LINE_118 = 8
OPERATORS = (
    "g", "b", "y_real_t", "y_row_abs", "branch_g", "branch_b", "fdlf_bp_inv", "fdlf_bpp_inv",
    "fdlf_pq_solve_t", "fdlf_pv_rhs", "fdlf_pv_sel", "fdlf_pv_inv_schur", "fdlf_pv_schur_t", "fdlf_pv_out",
)


@functools.cache
def _case(case_id: str):
    return load_case(case_id, source="matpower")


def _slack_va_deg(case_id: str) -> float:
    bus = matpower_ppc(f"case{case_id}")["bus"]
    return float(bus[bus[:, BUS_TYPE] == 3, VA][0])


@functools.cache
def _model(case_id: str):
    case = _case(case_id)
    return make_ac_outage_model(case, make_ac_network(case, va_ref_deg=_slack_va_deg(case_id)))


@functools.cache
def _inputs(case_id: str):
    """The case's own operating point (MW / MVAr), float32."""
    ppc = matpower_ppc(f"case{case_id}")
    on = ppc["gen"][:, GEN_STATUS] > 0
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return f32(ppc["gen"][:, PG] * on), f32(ppc["bus"][:, PD]), f32(ppc["bus"][:, QD])


@functools.cache
def _screen(method: str, batch_size: int | None = None):
    """The screen by `method` (reactive limits off), jitted with the iteration budget, the
    ratings and the voltage band as arguments: every check of a method on outage sets of
    one shape shares one compiled program."""

    @jax.jit
    def run(model, pg, pd, qd, outages, rate_mva, v_min, v_max, max_iter):
        return contingency_screen(
            model, pg, None, pd, qd, outages, rate_mva=rate_mva, v_min=v_min, v_max=v_max, max_iter=max_iter,
            method=method, enforce_q_limits=False, batch_size=batch_size,
        )

    def screen(model, pg, pd, qd, outages, *, rate_mva=None, v_min=0.94, v_max=1.06, max_iter=30):
        # No rating is a rating of 0 (`contingency_screen`'s reading of `rate_mva=None`).
        rate = jnp.zeros((model.network.n_lines,), jnp.float32) if rate_mva is None else jnp.asarray(rate_mva, jnp.float32)
        return run(model, pg, pd, qd, outages, rate, jnp.float32(v_min), jnp.float32(v_max), jnp.int32(max_iter))

    return screen


# The in-graph outage builds, jitted once for every check (model and lines as arguments).
_opened_at = jax.jit(ac_network_with_line_outages_at)
_opened_by_mask = jax.jit(ac_network_with_line_outages)


@functools.cache
def _pypower(case_id: str, line: int):
    """PYPOWER's solution of the MATPOWER case with branch `line` out (reactive limits off)."""
    ppc = matpower_ppc(f"case{case_id}")
    ppc["branch"][line, BR_STATUS] = 0
    result, success = runpf(ppc, ppoption(VERBOSE=0, OUT_ALL=0, PF_TOL=1e-10, PF_MAX_IT=30))
    return bool(success), result


def _host_network(case_id: str, line: int):
    case = _case(case_id)
    status = np.asarray(case.line_status).copy()
    status[line] = 0
    opened = eqx.tree_at(lambda c: c.line_status, case, jnp.asarray(status))
    return make_ac_network(opened, va_ref_deg=_slack_va_deg(case_id))


@pytest.mark.parametrize("case_id,position", [("118", 20), ("118", 0), ("300", 5), ("300", 250)])
def test_opened_network_equals_the_host_built_network(case_id: str, position: int) -> None:
    """Both in-graph builds (Woodbury for an index list, dense inverses for a mask) give
    the operators `make_ac_network` computes in float64 for the case with the line out."""
    line = int(single_line_outages(_case(case_id))[position, 0])
    model, ref = _model(case_id), _host_network(case_id, line)
    mask = jnp.zeros((model.network.n_lines,), bool).at[line].set(True)
    for opened in (_opened_at(model, jnp.array([line, -1])), _opened_by_mask(model, mask)):
        assert not bool(opened.islanded)
        assert np.asarray(opened.line_out).tolist() == np.asarray(mask).tolist()
        for name in OPERATORS:
            got, want = np.asarray(getattr(opened.network, name)), np.asarray(getattr(ref, name))
            scale = max(float(np.max(np.abs(want))), 1.0)
            assert np.max(np.abs(got - want)) <= 2e-5 * scale, name


def test_no_outage_leaves_the_network_as_built() -> None:
    model = _model("118")
    opened = _opened_at(model, jnp.array([-1, -1]))
    for name in OPERATORS:
        np.testing.assert_allclose(
            np.asarray(getattr(opened.network, name)), np.asarray(getattr(model.network, name)), atol=1e-5, rtol=1e-5
        )


def _check_against_pypower(case_id: str, res, lines) -> None:
    base = _case(case_id).base_mva
    for row, line in enumerate(lines):
        ok, ref = _pypower(case_id, int(line))
        assert bool(res.converged[row]) == ok, f"line {line}: converged {bool(res.converged[row])}, PYPOWER {ok}"
        if not ok:
            continue
        np.testing.assert_allclose(np.asarray(res.vm[row]), ref["bus"][:, VM], atol=1e-4, rtol=0, err_msg=f"line {line}")
        np.testing.assert_allclose(
            np.asarray(res.va[row]), np.deg2rad(ref["bus"][:, VA]), atol=1e-4, rtol=0, err_msg=f"line {line}"
        )
        for field, col in (("line_p_from_mw", PF), ("line_q_from_mvar", QF), ("line_p_to_mw", PT), ("line_q_to_mvar", QT)):
            # PYPOWER leaves an opened branch's flows at 0 too.
            np.testing.assert_allclose(
                np.asarray(getattr(res, field)[row]) / base, ref["branch"][:, col] / base, atol=1e-2, rtol=0,
                err_msg=f"line {line} {field}",
            )


def _n_minus_1(case_id: str, stride: int):
    return single_line_outages(_case(case_id))[::stride]


@pytest.mark.parametrize(
    "case_id,method,stride",
    [
        # Slow: the fallback test checks Newton re-solves of outaged networks against PYPOWER, and
        # the snapshot tests the "newton" screen's batching.
        pytest.param("118", "newton", 9, marks=pytest.mark.slow),
        ("118", "fdlf", 9),
        ("300", "fdlf_only", 41),
        pytest.param("118", "newton", 1, marks=pytest.mark.slow),
        pytest.param("118", "fdlf", 1, marks=pytest.mark.slow),
        pytest.param("300", "fdlf_only", 1, marks=pytest.mark.slow),
        # Every set's verdict, with the Newton re-solve of the 16 sets that have no solution.
        pytest.param("300", "fdlf", 1, marks=pytest.mark.slow),
        pytest.param("300", "newton", 8, marks=pytest.mark.slow),
    ],
)
def test_single_line_outages_match_pypower(case_id: str, method: str, stride: int) -> None:
    outages = _n_minus_1(case_id, stride)
    res = _screen(method)(_model(case_id), *_inputs(case_id), jnp.asarray(outages))
    assert not np.any(np.asarray(res.islanded))
    _check_against_pypower(case_id, res, outages[:, 0])
    assert np.all(np.asarray(res.line_loading_mva)[np.arange(len(outages)), outages[:, 0]] == 0.0)


def test_islanding_outage_is_flagged_and_finite() -> None:
    """The islanding line screened among N-1 sets (in place of the first): that set alone is
    flagged and left unconverged, the others converge."""
    model, (pg, pd, qd) = _model("118"), _inputs("118")
    outages = _n_minus_1("118", 9).copy()
    outages[0, 0] = ISLANDING_LINE_118
    res = _screen("fdlf")(model, pg, pd, qd, jnp.asarray(outages))
    n_others = len(outages) - 1
    assert np.asarray(res.islanded).tolist() == [True] + [False] * n_others
    assert np.asarray(res.converged).tolist() == [False] + [True] * n_others
    for leaf in jax.tree.leaves(res):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert np.all(np.isfinite(np.asarray(leaf)))
    # The mask path flags the same set; its network stays the intact one (finite).
    mask = jnp.zeros((model.network.n_lines,), bool).at[ISLANDING_LINE_118].set(True)
    opened = _opened_by_mask(model, mask)
    assert bool(opened.islanded)
    assert np.flatnonzero(np.asarray(opened.node_islanded)).tolist() == [9]
    for name in OPERATORS:
        assert np.all(np.isfinite(np.asarray(getattr(opened.network, name))))


def test_newton_fallback_finishes_what_fdlf_leaves() -> None:
    """With a 3-iteration budget the fast-decoupled loop leaves outages unconverged; the
    default "fdlf" re-solves them by Newton (more updates than the budget in total) and
    matches PYPOWER, while "fdlf_only" reports them unconverged."""
    model, inputs = _model("118"), _inputs("118")
    outages = _n_minus_1("118", 9)
    only = _screen("fdlf_only")(model, *inputs, jnp.asarray(outages), max_iter=3)
    fallback = _screen("fdlf")(model, *inputs, jnp.asarray(outages), max_iter=3)
    missed = ~np.asarray(only.converged)
    assert missed.sum() >= 3
    assert np.all(np.asarray(fallback.converged))
    # (A lane may pass the final re-check at its last fast-decoupled iterate in one program
    # and not the other: it then needs no Newton update.)
    assert np.all(np.asarray(fallback.n_iter)[missed] >= 3)
    assert np.sum(np.asarray(fallback.n_iter)[missed] > 3) >= 3
    _check_against_pypower("118", fallback, outages[:, 0])


def test_masks_change_without_a_retrace_and_vmap_equals_single_solves() -> None:
    model, (pg, pd, qd) = _model("118"), _inputs("118")
    traces = []

    # The model and the operating point are arguments, not constants baked into the program.
    @jax.jit
    def solve(model, pg, pd, qd, mask):
        traces.append(1)
        opened = ac_network_with_line_outages(model, mask)
        return ac_power_flow(opened.network, pg, None, pd, qd, method="fdlf_only", enforce_q_limits=False)

    lines = (3, 20, 100)
    masks = jnp.zeros((len(lines), model.network.n_lines), bool).at[jnp.arange(len(lines)), jnp.array(lines)].set(True)
    singles = [solve(model, pg, pd, qd, m) for m in masks]
    assert len(traces) == 1
    batched = jax.jit(jax.vmap(solve, in_axes=(None, None, None, None, 0)))(model, pg, pd, qd, masks)
    for k, one in enumerate(singles):
        assert bool(one.converged) and bool(batched.converged[k])
        np.testing.assert_allclose(np.asarray(batched.vm[k]), np.asarray(one.vm), atol=1e-5)
        np.testing.assert_allclose(np.asarray(batched.va[k]), np.asarray(one.va), atol=1e-5)
    _check_against_pypower("118", jax.tree.map(lambda x: x, batched), lines)


def test_screen_reports_overloads_and_voltage_violations() -> None:
    model, (pg, pd, qd) = _model("118"), _inputs("118")
    outages = jnp.asarray(_n_minus_1("118", 9))
    rate = jnp.full((model.network.n_lines,), 120.0)
    res = _screen("fdlf_only")(model, pg, pd, qd, outages, rate_mva=rate, v_min=0.95, v_max=1.05)
    loading = np.asarray(res.line_loading_mva)
    np.testing.assert_allclose(np.asarray(res.loading_percent), loading / 1.2, rtol=1e-5)
    assert np.asarray(res.overloaded).tolist() == (loading > 120.0).tolist()
    assert np.asarray(res.n_overloads).tolist() == (loading > 120.0).sum(axis=1).tolist()
    vm = np.asarray(res.vm)
    assert np.asarray(res.n_voltage_violations).tolist() == ((vm < 0.95) | (vm > 1.05)).sum(axis=1).tolist()
    assert np.asarray(res.n_overloads).max() > 0
    # Chunked batches give the same screen.
    chunked = _screen("fdlf_only", batch_size=8)(model, pg, pd, qd, outages, rate_mva=rate)
    np.testing.assert_allclose(np.asarray(chunked.vm), vm, atol=1e-6)


def test_sampled_pairs_are_connected_distinct_and_screened() -> None:
    case = _case("118")
    pairs = sampled_line_pair_outages(case, 12, seed=1)
    assert pairs.shape == (12, 2) and len({tuple(p) for p in pairs.tolist()}) == 12
    # The fast-decoupled loop alone solves every pair (asserted), so the Newton fallback of the
    # default method would have nothing to do.
    res = _screen("fdlf_only")(_model("118"), *_inputs("118"), jnp.asarray(pairs))
    assert not np.any(np.asarray(res.islanded))
    assert np.all(np.asarray(res.converged))
    assert np.all(np.asarray(res.line_loading_mva)[np.arange(12)[:, None], pairs] == 0.0)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(method="gauss"), "method must be one of"),
        (dict(newton_step="lu"), "newton_step must be one of"),
        (dict(batch_size=0), "batch_size must be a positive int"),
    ],
)
def test_screen_rejects_bad_options(kwargs, message) -> None:
    model, (pg, pd, qd) = _model("118"), _inputs("118")
    with pytest.raises(ValueError, match=message):
        contingency_screen(model, pg, None, pd, qd, jnp.array([[1]]), **kwargs)


def test_screen_rejects_a_flat_outage_list() -> None:
    model, (pg, pd, qd) = _model("118"), _inputs("118")
    with pytest.raises(ValueError, match="outages must be a 2-D integer array"):
        contingency_screen(model, pg, None, pd, qd, jnp.array([1, 2]))


def test_sampled_pairs_reject_bad_counts() -> None:
    with pytest.raises(ValueError, match="n_sets must be a positive int"):
        sampled_line_pair_outages(_case("118"), 0)


def test_every_product_names_its_precision() -> None:
    from test_physics_precision import unset_products

    model, (pg, pd, qd) = _model("118"), _inputs("118")
    case = _case("118")
    mask = jnp.zeros((case.n_lines,), bool).at[20].set(True)
    for fn, args in (
        (lambda o: contingency_screen(model, pg, None, pd, qd, o, method="fdlf"), (jnp.array([[20], [30]]),)),
        (lambda m: ac_network_with_line_outages(model, m), (mask,)),
        (lambda m: ac_network_with_line_outages_of_case(case, model.network, m, already_out=m), (mask,)),
    ):
        assert unset_products(jax.make_jaxpr(fn)(*args).jaxpr) == []
