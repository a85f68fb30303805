"""Implicit derivatives of the AC power flow at its solution (see `powerzoojax.physics._implicit`).

At a converged solve the voltages solve the power-mismatch equations with the PV->PQ
switches the solve ended with:

    P_i(V) − p_sched_i = 0                       every non-slack bus
    Q_i(V) − q_target_i = 0                      PQ buses (and PV buses switched to a limit)
    Vm_i − v_set_i = 0                           PV buses still regulating

in the unknowns `x = [Va, Vm]` of the non-slack buses (the slack holds `v_set` and
the reference angle). `q_target` is the scheduled net injection of a PQ bus and the
violated limit net of load (`(q_max − load_q) / base`) at a switched bus, so a switched
bus' voltage moves with its load while its generator stays at the limit. The switches are
held fixed: the derivative is that of the solution branch the solver found (one-sided
where a bus sits exactly on its reactive limit). Newton and fast-decoupled solves reach
the same solution, so they share this rule.
"""

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from powerzoojax.physics._implicit import implicit_outputs
from powerzoojax.physics._working_dtype import complex_dtype_of
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp


def _voltages(x, theta, aux):
    is_pv, pvpq = aux
    m = pvpq.shape[0]
    va = jnp.broadcast_to(theta["va_ref"], theta["vs"].shape).at[pvpq].set(x[:m])
    vm = theta["vs"].at[pvpq].set(x[m:])
    return vm, va


def _bus_power(vm, va, y_real_t):
    e, f = vm * jnp.cos(va), vm * jnp.sin(va)
    n = vm.shape[0]
    current = hp.matmul(jnp.concatenate([e, f]), y_real_t)
    i_re, i_im = current[:n], current[n:]
    return e * i_re + f * i_im, f * i_re - e * i_im


def _residual(x, theta, aux):
    is_pv, pvpq = aux
    vm, va = _voltages(x, theta, aux)
    p, q = _bus_power(vm, va, theta["y_real_t"])
    dp = p - theta["p_sched"]
    dq = jnp.where(is_pv, vm - theta["vs"], q - theta["q_target"])
    return jnp.concatenate([dp[pvpq], dq[pvpq]])


def _as_complex(real: Array) -> Array:
    """`real` as the complex dtype of its precision (complex128 for float64, else complex64)."""
    return real.astype(complex_dtype_of(real.dtype))


def _residual_jacobian(x, theta, aux):
    """`∂(residual)/∂x` in closed form (MATPOWER's `dSbus_dV`), `O(N²)` per instance where
    `jax.jacfwd` would take one `(2N × 2N)` product per unknown."""
    is_pv, pvpq = aux
    vm, va = _voltages(x, theta, aux)
    n = vm.shape[0]
    y_real_t = theta["y_real_t"]
    # y_real_t = [[Gᵀ, Bᵀ], [−Bᵀ, Gᵀ]]
    # Each real operand cast to its complex counterpart, the cast promotion made implicitly.
    y = (_as_complex(y_real_t[:n, :n]) + 1j * _as_complex(y_real_t[:n, n:])).T
    v_unit = jnp.exp(1j * _as_complex(va))
    v = _as_complex(vm) * v_unit
    current = hp.matmul(y, v)
    ds_dva = 1j * (jnp.diag(v * jnp.conj(current)) - v[:, None] * jnp.conj(y * v[None, :]))
    ds_dvm = v[:, None] * jnp.conj(y * v_unit[None, :]) + jnp.diag(jnp.conj(current) * v_unit)
    ds_dva, ds_dvm = ds_dva[pvpq][:, pvpq], ds_dvm[pvpq][:, pvpq]
    pv = is_pv[pvpq][:, None]
    eye = jnp.eye(pvpq.shape[0], dtype=vm.dtype)
    top = jnp.concatenate([ds_dva.real, ds_dvm.real], axis=1)
    bottom = jnp.concatenate([where(pv, 0.0, ds_dva.imag), where(pv, eye, ds_dvm.imag)], axis=1)
    return jnp.concatenate([top, bottom], axis=0)


def _outputs(x, theta, aux):
    vm, va = _voltages(x, theta, aux)
    p, q = _bus_power(vm, va, theta["y_real_t"])
    return vm, va, p, q


def ac_pf_solution_derivatives(
    net,
    vm: Float[Array, " n_nodes"],
    va: Float[Array, " n_nodes"],
    p: Float[Array, " n_nodes"],
    q: Float[Array, " n_nodes"],
    is_pv: Bool[Array, " n_nodes"],
    q_target: Float[Array, " n_nodes"],
    p_sched: Float[Array, " n_nodes"],
    q_sched: Float[Array, " n_nodes"],
    q_lo: Float[Array, " n_nodes"],
    q_hi: Float[Array, " n_nodes"],
    vs: Float[Array, " n_nodes"],
    converged: Bool[Array, ""],
) -> tuple[Array, Array, Array, Array]:
    """`(vm, va, p, q)` unchanged, differentiable w.r.t. the schedules and set points.

    `is_pv`/`q_target` are the solve's final switch state (the loop's, tangents
    stopped); `p_sched, q_sched, q_lo, q_hi, vs` [p.u.] the differentiable inputs the
    solve was given. `p, q` [p.u.] are the computed injections at `vm, va`.
    """
    dtype = vm.dtype
    switched = net.is_pv & ~is_pv
    # The value the loop pinned (compared against the same limits, tangents stopped),
    # rebuilt from the differentiable limits.
    q_pinned = jnp.where(switched, jnp.where(q_target >= q_hi, q_hi, q_lo), q_sched)
    theta = {
        "p_sched": p_sched,
        "q_target": q_pinned,
        "vs": vs,
        "va_ref": jnp.asarray(net.va_ref).astype(dtype),
        "y_real_t": jnp.asarray(net.y_real_t).astype(dtype),
    }
    aux = (is_pv, net.pvpq_idx)
    x = jnp.concatenate([va[net.pvpq_idx], vm[net.pvpq_idx]])
    return implicit_outputs(
        _residual, _outputs, (vm, va, p, q), x, theta, aux, converged, jacobian=_residual_jacobian
    )
