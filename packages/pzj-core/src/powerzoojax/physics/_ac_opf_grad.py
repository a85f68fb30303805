"""Derivatives of an AC-OPF solution from its KKT conditions.

Applied through `powerzoojax.physics._implicit`. The problem of
`powerzoojax.physics._ac_opf`, in `x = [Va, Vm, Pg, Qg]` (p.u.), is

    min f(x)   s.t.   h(x, θ) = 0  (2N + 1 rows),   g(x, θ) ≤ 0  (flows, then the
                                                     Vm, Pg, Qg bounds)

with `θ` the loads, unit bounds, cost coefficients, limits and network data. At a solution
with a fixed active set its KKT conditions are equations in `w = [x, λ, z]`:

    ∇f(x) + Jhᵀ λ + Jgᵀ z = 0
    h(x, θ) = 0
    g_i(x, θ) = 0        inequalities held on their limit
    z_i = 0              the others

Active set, read off the interior point's final iterate (multiplier `z_i`, slack
`s_i = −g_i`): an inequality is held where its multiplier is nonzero, judged against its
slack, `z_i > s_i`. At the optimum `z_i s_i` is driven to the barrier parameter
(`≈ 1e-9` at `tol = 1e-6`), so a priced limit has `z_i ≫ s_i` and a slack one `s_i ≫ z_i`,
by many decades either way. This is the DC-OPF's rule for line limits (held where on the
limit *and* priced; a limit on its bound with a zero multiplier is released). At a
degenerate optimum (a limit reached with a zero multiplier: both small) the comparison
picks one side and the result is the one-sided derivative of that branch. Where the
solve did not converge (infeasible loads, iteration cap) the derivative is zero: finite,
and `converged` says so.

The KKT matrix is equilibrated before it is factored: its rows mix the cost's curvature
(~1e3..1e4 per p.u.²) with limit rows of ones, a spread float32's singularity test read
as singular (case 5: pivot ratio 1e-6, condition ~1e6; equilibrated ~1e3). Where it is
rank-deficient the minimum-norm solution is taken: two units on one bus whose voltage is
held and whose reactive limits are not have a free reactive split (no cost, no
constraint fixes it), yet the dispatch, voltages, flows, prices and cost are determined;
their derivative is exact and the split's is its minimum-norm change.

`∂F/∂w` is formed in closed form from MATPOWER's second derivatives (the same functions
the interior point uses), dense: `4N + 2G + 1 + n_in` unknowns (65 on case 5, 115 on
case 14, 1033 on case 118).
"""

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, PyTree

from powerzoojax.physics._ac_opf_model import (
    branch_derivatives,
    branch_sq_hessian,
    bus_derivatives,
    bus_hessian,
    reported_solution,
)
from powerzoojax.physics._implicit import implicit_outputs
from powerzoojax.physics._working_dtype import working_float_dtype
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp


def kkt_parameters(setup, load_p_mw, load_q_mvar, p_min, p_max) -> dict:
    """The data `θ` of the KKT equations: `setup` plus the call's loads and unit bounds [p.u.]."""
    base = setup.net.base_mva
    dtype = working_float_dtype(load_p_mw)
    cast = lambda v: jnp.asarray(v, dtype)  # noqa: E731
    return {
        "setup": setup,
        "pd": cast(load_p_mw) / base,
        "qd": cast(load_q_mvar) / base,
        "plo": cast(setup.p_min if p_min is None else p_min) / base,
        "phi": cast(setup.p_max if p_max is None else p_max) / base,
    }


def _sizes(theta):
    setup = theta["setup"]
    n, g = setup.net.n_nodes, setup.net.n_units
    n_flow = 2 * setup.rate_pu.shape[0]
    return n, g, n_flow, 2 * n + 2 * g, 2 * n + 1, n_flow + 2 * n + 4 * g


def _split_w(w, theta):
    _, _, _, n_x, n_eq, _ = _sizes(theta)
    return w[:n_x], w[n_x : n_x + n_eq], w[n_x + n_eq :]


def _model(x, theta):
    """Constraints, their Jacobians, `∇f`, `f''` and what the Hessian needs at `x`."""
    setup = theta["setup"]
    net = setup.net
    n, g_units, _, _, _, _ = _sizes(theta)
    dtype = theta["pd"].dtype
    base = net.base_mva
    cast = lambda v: jnp.asarray(v).astype(dtype)  # noqa: E731
    va, vm, pg, qg = x[:n], x[n : 2 * n], x[2 * n : 2 * n + g_units], x[2 * n + g_units :]
    umap = cast(setup.unit_map)
    cplx = lambda re, im: lax.complex(cast(re), cast(im))  # noqa: E731
    ybus = cplx(setup.y_re, setup.y_im)
    ybr = jnp.concatenate([cplx(setup.yf_re, setup.yf_im), cplx(setup.yt_re, setup.yt_im)])
    cbr = cast(jnp.concatenate([setup.cf, setup.ct]))
    vn = lax.complex(jnp.cos(va), jnp.sin(va))
    v = vm.astype(vn.dtype) * vn  # the real-to-complex cast promotion made, written out
    s_bus, ibus, dsb_dva, dsb_dvm = bus_derivatives(ybus, v, vn)
    slack = net.slack_idx
    h = jnp.concatenate(
        [s_bus.real - (hp.matmul(umap, pg) - theta["pd"]), s_bus.imag - (hp.matmul(umap, qg) - theta["qd"]), va[slack : slack + 1] - cast(net.va_ref)]
    )
    zeros_ng = jnp.zeros((n, g_units), dtype)
    slack_row = jnp.zeros((1, 2 * n + 2 * g_units), dtype).at[0, slack].set(1.0)
    jh = jnp.concatenate(
        [
            jnp.concatenate([dsb_dva.real, dsb_dvm.real, -umap, zeros_ng], axis=1),
            jnp.concatenate([dsb_dva.imag, dsb_dvm.imag, zeros_ng, -umap], axis=1),
            slack_row,
        ]
    )
    s_br, dsr_dva, dsr_dvm = branch_derivatives(ybr, cbr, v, vn)
    rate2 = cast(setup.rate_pu) ** 2
    flow = s_br.real**2 + s_br.imag**2 - jnp.concatenate([rate2, rate2])
    j_flow = 2.0 * (jnp.conj(s_br)[:, None] * jnp.concatenate([dsr_dva, dsr_dvm], axis=1)).real
    qlo, qhi = cast(setup.q_min) / base, cast(setup.q_max) / base
    vlo, vhi = cast(setup.v_min), cast(setup.v_max)
    gv = jnp.concatenate([flow, vm - vhi, vlo - vm, pg - theta["phi"], theta["plo"] - pg, qg - qhi, qlo - qg])
    eye_n, eye_g = jnp.eye(n, dtype=dtype), jnp.eye(g_units, dtype=dtype)
    z_nn, z_ng, z_gn, z_gg = (jnp.zeros(s, dtype) for s in ((n, n), (n, g_units), (g_units, n), (g_units, g_units)))
    bound_v = jnp.concatenate([z_nn, eye_n, z_ng, z_ng], axis=1)
    bound_p = jnp.concatenate([z_gn, z_gn, eye_g, z_gg], axis=1)
    bound_q = jnp.concatenate([z_gn, z_gn, z_gg, eye_g], axis=1)
    j_flow_x = jnp.concatenate([j_flow, jnp.zeros((j_flow.shape[0], 2 * g_units), dtype)], axis=1)
    jg = jnp.concatenate([j_flow_x, bound_v, -bound_v, bound_p, -bound_p, bound_q, -bound_q])
    a, b, c = cast(setup.cost_a), cast(setup.cost_b), cast(setup.cost_c)
    pmw = pg * base
    # The solver divides the cost by base, so ∇f is the marginal cost [$/MWh].
    df = jnp.concatenate([jnp.zeros((2 * n,), dtype), (a * pmw + b) * pmw + c, jnp.zeros((g_units,), dtype)])
    d2f = (2.0 * a * pmw + b) * base
    return h, gv, jh, jg, df, d2f, (ybus, ybr, cbr, v, ibus, s_br, dsr_dva, dsr_dvm)


def kkt_residual(w: Array, theta: dict, active: Array) -> Array:
    """The KKT equations of the module docstring with the held inequalities `active`."""
    x, lam, z = _split_w(w, theta)
    h, gv, jh, jg, df, _, _ = _model(x, theta)
    z_held = jnp.where(active, z, 0.0)
    return jnp.concatenate([df + hp.matmul(lam, jh) + hp.matmul(z_held, jg), h, jnp.where(active, gv, z)])


def kkt_jacobian(w: Array, theta: dict, active: Array) -> Array:
    """`∂(kkt_residual)/∂w` in closed form (MATPOWER's `d2Sbus_dV2`, `d2ASbr_dV2`)."""
    n, g_units, n_flow, n_x, n_eq, n_in = _sizes(theta)
    x, lam, z = _split_w(w, theta)
    _, _, jh, jg, _, d2f, (ybus, ybr, cbr, v, ibus, s_br, dsr_dva, dsr_dvm) = _model(x, theta)
    dtype = x.dtype
    z_held = jnp.where(active, z, 0.0)
    lam_s = lax.complex(lam[:n], -lam[n : 2 * n])
    h_v = bus_hessian(ybus, v, ibus, lam_s) + branch_sq_hessian(ybr, cbr, v, s_br, dsr_dva, dsr_dvm, z_held[:n_flow])
    z_vg = jnp.zeros((2 * n, 2 * g_units), dtype)
    h_g = jnp.diag(jnp.concatenate([d2f, jnp.zeros((g_units,), dtype)]))
    hess = jnp.block([[h_v, z_vg], [z_vg.T, h_g]])
    jg_held = jnp.where(active[:, None], jg, 0.0)
    return jnp.block(
        [
            [hess, jh.T, jg_held.T],
            [jh, jnp.zeros((n_eq, n_eq), dtype), jnp.zeros((n_eq, n_in), dtype)],
            [jg_held, jnp.zeros((n_in, n_eq), dtype), jnp.diag(jnp.where(active, 0.0, 1.0).astype(dtype))],
        ]
    )


def _safe_norm(re, im):
    """`|re + j im|` whose derivative at zero is zero (an idle line), not NaN."""
    sq = re * re + im * im
    positive = sq > 0
    return where(positive, jnp.sqrt(where(positive, sq, 1.0)), 0.0)


def kkt_outputs(w: Array, theta: dict, active: Array) -> tuple:
    """The reported solution as a function of `w`: dispatch, voltages, flows, prices, cost."""
    del active
    setup = theta["setup"]
    net = setup.net
    n, g_units, _, _, _, _ = _sizes(theta)
    x, lam, _ = _split_w(w, theta)
    dtype = x.dtype
    cost_abc = tuple(jnp.asarray(v).astype(dtype) for v in (setup.cost_a, setup.cost_b, setup.cost_c))
    return reported_solution(net, x, lam, n, g_units, cost_abc, _safe_norm)


def ac_opf_kkt_derivatives(
    values: tuple,
    x: Float[Array, " n_x"],
    lam: Float[Array, " n_eq"],
    z: Float[Array, " n_in"],
    s: Float[Array, " n_in"],
    theta: dict,
    converged: Bool[Array, ""],
) -> PyTree:
    """`values` (the tuple `kkt_outputs` returns) unchanged, differentiable w.r.t. `θ`.

    **Arguments:**

    - `values`: the solver's reported answers, in `kkt_outputs`' order.
    - `x`, `lam`: `(2N + 2G,)` primal and `(2N + 1,)` equality multipliers at the solution.
    - `z`, `s`: `(n_in,)` inequality multipliers and slacks of the final iterate.
    - `theta`: from `kkt_parameters`.
    - `converged`: the solver met its tolerance; the derivative is zero where false.

    **Returns:** `values`; see the module docstring for the derivative.
    """
    w = jnp.concatenate([x, lam, z])
    active = z > s
    settled = converged & jnp.all(jnp.isfinite(w)) & jnp.all(jnp.isfinite(s))
    return implicit_outputs(
        kkt_residual, kkt_outputs, values, w, theta, active, settled, jacobian=kkt_jacobian, equilibrate=True, min_norm=True
    )


__all__ = ["ac_opf_kkt_derivatives", "kkt_jacobian", "kkt_outputs", "kkt_parameters", "kkt_residual"]
