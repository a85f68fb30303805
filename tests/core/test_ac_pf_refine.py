"""`ac_power_flow(refine_steps=...)`: fast-decoupled iterations on the branch-wise,
difference-form mismatch take a converged float32 solution to float32 round-off of the
exact (float64) one, whichever Newton step the loop took."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from powerzoojax.case import load_case
from powerzoojax.physics import ac_power_flow, make_ac_network
from powerzoojax.physics._ac_pf import _branch_currents, _branch_ends
from powerzoojax.utils.jax_utils import enable_x64

N_INSTANCES = 8


@pytest.fixture(scope="module")
def case118():
    return load_case("case118")


def _inputs(case, dtype):
    rng = np.random.default_rng(3)
    scale = rng.uniform(0.9, 1.1, (N_INSTANCES, 1))
    loads = np.asarray(case.load_node_idx)
    return tuple(
        jnp.asarray(x, dtype)
        for x in (
            np.asarray(case.unit_pg)[None] * scale,
            np.asarray(case.node_pd)[loads][None] * scale,
            np.asarray(case.node_qd)[loads][None] * scale,
        )
    )


def _solve(net, inputs, step: str, refine: int, tol: float = 1e-5):
    def one(p, lp, lq):
        return ac_power_flow(net, p, None, lp, lq, newton_step=step, tol=tol, refine_steps=refine)

    res = jax.jit(jax.vmap(one))(*inputs)
    return {k: np.asarray(getattr(res, k), np.float64) for k in ("vm", "va", "line_p_from_mw", "converged")}


@pytest.fixture(scope="module")
def exact(case118):
    with enable_x64():
        net = make_ac_network(case118, jnp.float64)
        return _solve(net, _inputs(case118, jnp.float64), "dense", 0, tol=1e-11)


@pytest.fixture(scope="module")
def float32_solves(case118):
    net = make_ac_network(case118, jnp.float32)
    inputs = _inputs(case118, jnp.float32)
    return {(step, k): _solve(net, inputs, step, k) for step in ("dense", "krylov") for k in (0, 2)}


def test_refined_voltages_are_within_float32_round_off_of_the_exact_solution(exact, float32_solves) -> None:
    assert exact["converged"].all()
    for step in ("dense", "krylov"):
        plain, refined = float32_solves[(step, 0)], float32_solves[(step, 2)]
        assert refined["converged"].all() and plain["converged"].all()
        for key in ("vm", "va"):
            err_plain = np.max(np.abs(plain[key] - exact[key]))
            err_refined = np.max(np.abs(refined[key] - exact[key]))
            # A few float32 ulps of a voltage near 1 p.u. (ulp 1.2e-7) or an angle below 1 rad.
            assert err_refined < 1.5e-6, (step, key, err_refined)
            assert err_refined < 0.5 * err_plain, (step, key, err_refined, err_plain)


def test_refined_solutions_agree_whichever_newton_step_the_loop_took(float32_solves) -> None:
    dense, krylov = float32_solves[("dense", 2)], float32_solves[("krylov", 2)]
    np.testing.assert_allclose(dense["vm"], krylov["vm"], rtol=0, atol=5e-7)
    np.testing.assert_allclose(dense["va"], krylov["va"], rtol=0, atol=1e-6)
    scale = np.max(np.abs(dense["line_p_from_mw"]))
    np.testing.assert_allclose(dense["line_p_from_mw"], krylov["line_p_from_mw"], rtol=0, atol=1e-5 * scale)


def test_difference_form_currents_are_ybus_times_v(case118) -> None:
    with enable_x64():
        net = make_ac_network(case118, jnp.float64)
        rng = np.random.default_rng(0)
        v = rng.uniform(0.95, 1.05, net.n_nodes) * np.exp(1j * rng.uniform(-0.5, 0.5, net.n_nodes))
        e, f = jnp.asarray(v.real), jnp.asarray(v.imag)
        if_re, if_im, it_re, it_im = (np.asarray(x) for x in _branch_currents(net, _branch_ends(net, e, f)))
    y_branch = np.asarray(net.branch_g) + 1j * np.asarray(net.branch_b)
    frm, to = np.asarray(net.line_from), np.asarray(net.line_to)
    np.testing.assert_allclose(if_re + 1j * if_im, y_branch[:, 0] * v[frm] + y_branch[:, 1] * v[to], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(it_re + 1j * it_im, y_branch[:, 2] * v[frm] + y_branch[:, 3] * v[to], rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("bad", [-1, -3])
def test_refine_steps_must_be_a_non_negative_int(case118, bad) -> None:
    net = make_ac_network(case118)
    p, lp, lq = (x[0] for x in _inputs(case118, jnp.float32))
    with pytest.raises(ValueError, match="refine_steps"):
        ac_power_flow(net, p, None, lp, lq, refine_steps=bad)
