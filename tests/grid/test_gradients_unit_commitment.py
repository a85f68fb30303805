"""Derivatives of the unit-commitment env's dispatch cost (its DC-OPF, dual simplex path)
against central finite differences (float64).

The step's generation cost `info["gen_cost"]` is differentiated w.r.t. the load row, the
linear cost coefficients (which set both the dispatch and its price) and the OPF's line
ratings, on MATPOWER's case 5 with line 1-2 rated 150 MW (it binds), every unit
committed, ramp windows open.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from powerzoojax.utils.jax_utils import enable_x64

pytestmark = pytest.mark.requires("powerzoojax.grid")

REL_TOL = 1e-4
STEP = 1e-5  # relative to the input's size along the direction
MAX_STEPS = 2


@pytest.fixture(autouse=True, scope="module")
def _float64():
    with enable_x64():
        yield


def _to_float64(leaf):
    if hasattr(leaf, "dtype") and leaf.dtype == np.float32:
        return jnp.asarray(leaf, jnp.float64)
    return leaf


@functools.cache
def _env():
    from powerzoojax.case import load_case
    from powerzoojax.grid import UnitCommitmentEnv, make_uc_params

    case = load_case("5", source="matpower")
    # Ramp windows wide enough not to bind: the reset's dispatch does not pin the step's.
    params = make_uc_params(case, max_steps=MAX_STEPS, ramp_up_frac=10.0, ramp_down_frac=10.0)
    params = jax.tree.map(_to_float64, params)
    return UnitCommitmentEnv(), params


def _point(seed: int) -> dict:
    _, params = _env()
    rng = np.random.default_rng(seed)
    case = params.case
    return {
        "load": params.load_profiles[0] * jnp.asarray(rng.uniform(0.8, 1.1, params.load_profiles.shape[1])),
        # Distinct costs: tied ones make the LP's dispatch non-unique.
        "cost_c": case.unit_cost_c + jnp.asarray(rng.uniform(0.0, 1.0, case.n_units)),
        "line_cap": params.dcopf.line_cap.at[0].set(150.0),  # congest line 1-2
    }


def _dispatch_cost(x: dict):
    env, params = _env()
    from powerzoojax.physics import load_line_flows

    # The fields `with_load_profiles` sets, without its cast to the env's float32.
    profiles = jnp.tile(x["load"], (MAX_STEPS, 1))
    params = eqx.tree_at(
        lambda p: (
            p.load_profiles, p.load_line_flow_mw, p.total_load_mw, p.case.unit_cost_c, p.dcopf.line_cap, p.dcopf.line_floor
        ),
        params,
        (profiles, load_line_flows(params.network, profiles), jnp.sum(profiles, axis=-1), x["cost_c"], x["line_cap"], -x["line_cap"]),
    )
    key = jr.key(0)
    _, state = env.reset(key, params)
    commit_all = jnp.ones(env.action_dim(params))
    _, _, _, _, _, info = env.step(key, state, commit_all, params)
    return info["gen_cost"], (info["opf_status"], info["n_committed"])


@functools.cache
def _programs():
    cost = jax.jit(_dispatch_cost)
    grad = jax.jit(jax.grad(_dispatch_cost, has_aux=True))
    return cost, grad


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_dispatch_cost_gradient_matches_finite_differences(seed: int) -> None:
    from powerzoojax.physics import SolverStatus, status_code

    OPTIMAL = int(status_code(SolverStatus.successful))

    cost, grad = _programs()
    x = _point(seed)
    value, (status, n_committed) = cost(x)
    _, params = _env()
    assert int(status) == OPTIMAL and int(n_committed) == params.case.n_units
    g, _ = grad(x)
    rng = np.random.default_rng(seed + 1)
    for name in x:
        d = x[name] * jnp.asarray(rng.normal(size=x[name].shape))
        fd = float(cost({**x, name: x[name] + STEP * d})[0] - cost({**x, name: x[name] - STEP * d})[0]) / (2 * STEP)
        analytic = float(jnp.sum(g[name] * d))
        assert np.isfinite(analytic)
        # Floor: round-off of the $/h cost over the step.
        assert abs(analytic - fd) <= REL_TOL * max(abs(fd), 1e-6 * float(value)), (name, analytic, fd)


def test_line_rating_gradient_is_nonzero_on_the_binding_line() -> None:
    # Relaxing the binding line lowers the cost: the derivative is the line's shadow price.
    _, grad = _programs()
    g, _ = grad(_point(0))
    assert float(jnp.min(g["line_cap"])) < -1e-3


def test_vmapped_gradients_match_single_ones() -> None:
    _, grad = _programs()
    x = _point(1)
    loads = x["load"][None] * jnp.asarray(np.random.default_rng(2).uniform(0.85, 1.05, (4, 1)))
    batched = jax.jit(jax.vmap(lambda load: jax.grad(lambda x: _dispatch_cost(x)[0])({**x, "load": load})))(loads)
    for k in (0, 3):
        expected, _ = grad({**x, "load": loads[k]})
        for name in x:
            np.testing.assert_allclose(np.asarray(batched[name][k]), np.asarray(expected[name]), rtol=1e-10, atol=1e-10)
