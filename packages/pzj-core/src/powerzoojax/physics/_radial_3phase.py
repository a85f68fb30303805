"""Unbalanced three-phase radial power flow (backward/forward sweep on branch currents).

Teng's BIBC/BCBV method (2003) with the bus-injection-to-branch-current matrix kept
as the (N × B) path matrix and the 3 × 3 branch impedances applied blockwise, so a
sweep is two dense matrix products plus a batched 3 × 3 product:

    I_n = conj(S_n / V_n)                 load current drawn at bus n, per phase
    J   = Pathᵀ I                         branch currents, sending → receiving
    V   = V_ref − Path (Z_b J_b)_b        bus voltages

Quantities are per phase and per unit (voltages on the phase base, loads on the same
base as `Z`), so a feeder with `Z_b = z_b I₃` and equal loads `p` on every phase
solves to the balanced sweep with loads `p`. Phase `k` exists at a bus iff the branch
feeding it has `|Z_kk| > 1e-12`; absent phases carry no load and report `|V| = 0`.
"""

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, ArrayLike, Bool, Complex, Float, Int

from powerzoojax.physics._radial import radial_path_matrix, radial_tree_order
from powerzoojax.physics._entry import solver_entry as _solver_entry
from powerzoojax.physics._implicit import implicit_outputs
from powerzoojax.physics._working_dtype import cast_floating_leaves, working_float_dtype
from powerzoojax.core._types import where
from powerzoojax.core import _precision as hp

# |V|² floor in the current injection: collapse gives finite values and converged=False.
_V_SQ_FLOOR = 0.25
_PHASE_EPS = 1e-12
_ALPHA = complex(math.cos(2 * math.pi / 3), math.sin(2 * math.pi / 3))


class Radial3PhaseNetwork(eqx.Module):
    """Setup-time topology of a three-phase radial feeder (B = N − 1 branches, BFS order).

    **Arguments:**

    - `path_matrix`: `(N, B)`, 1 where a branch lies on the path from the reference bus.
    - `downstream_matrix`: `(B, N)`, its transpose.
    - `z_pu`: `(B, 3, 3)` branch series impedances [p.u.].
    - `phase_mask`: `(N, 3)` whether phase `k` exists at bus `n`.
    - `branch_phase_mask`: `(B, 3)` whether phase `k` exists on branch `b`.
    - `v_ref`: `(N, 3)` balanced reference phasors `v_ref_mag · (1, α², α)` [p.u.].
    - `send_idx`, `recv_idx`: `(B,)` sending and receiving bus of each branch.
    - `line_idx`: `(B,)` input line of each branch.
    - `ref_bus`, `n_nodes`, `n_branches`: reference bus and sizes (static).
    """

    path_matrix: Float[Array, "n_nodes n_branches"]
    downstream_matrix: Float[Array, "n_branches n_nodes"]
    z_pu: Complex[Array, "n_branches 3 3"]
    phase_mask: Bool[Array, "n_nodes 3"]
    branch_phase_mask: Bool[Array, "n_branches 3"]
    v_ref: Complex[Array, "n_nodes 3"]
    send_idx: Int[Array, " n_branches"]
    recv_idx: Int[Array, " n_branches"]
    line_idx: Int[Array, " n_branches"]
    ref_bus: int = eqx.field(static=True)
    n_nodes: int = eqx.field(static=True)
    n_branches: int = eqx.field(static=True)


class Radial3PhaseFlow(eqx.Module):
    """Result of [`radial_3phase_power_flow`][powerzoojax.physics.radial_3phase_power_flow]
    (per phase, per unit).

    **Arguments:**

    - `v`: `(n_nodes, 3)` complex voltages [p.u.].
    - `v_mag`: `(n_nodes, 3)` voltage magnitudes [p.u.].
    - `i_branch`: `(n_branches, 3)` complex branch currents [p.u.].
    - `p_branch`, `q_branch`: `(n_branches, 3)` powers delivered at each branch's
      receiving end [p.u.].
    - `p_loss`, `q_loss`: `(n_branches, 3)` series losses `Re/Im(conj(J) · Z J)` [p.u.].
    - `vuf_percent`: `(n_nodes,)` voltage unbalance factor [%].
    - `converged`: bool scalar.
    - `n_iter`: int scalar, sweeps taken.
    - `residual`: last `max |ΔV|` [p.u.].
    """

    v: Complex[Array, "n_nodes 3"]
    v_mag: Float[Array, "n_nodes 3"]
    i_branch: Complex[Array, "n_branches 3"]
    p_branch: Float[Array, "n_branches 3"]
    q_branch: Float[Array, "n_branches 3"]
    p_loss: Float[Array, "n_branches 3"]
    q_loss: Float[Array, "n_branches 3"]
    vuf_percent: Float[Array, " n_nodes"]
    converged: Bool[Array, ""]
    n_iter: Int[Array, ""]
    residual: Float[Array, ""]


def make_radial_3phase_network(
    n_nodes: int,
    from_nodes: ArrayLike,
    to_nodes: ArrayLike,
    z_3ph_pu: ArrayLike,
    ref_bus: int = 0,
    v_ref_mag: float | int = 1.0,
) -> Radial3PhaseNetwork:
    """Build the sweep matrices of a strict tree (`n_lines = n_nodes − 1`, 0-based bus indices).

    **Arguments:**

    - `n_nodes`: number of buses.
    - `from_nodes`, `to_nodes`: `(n_nodes − 1,)` 0-based line ends.
    - `z_3ph_pu`: `(n_nodes − 1, 3, 3)` line impedances [p.u.].
    - `ref_bus`: 0-based reference bus.
    - `v_ref_mag`: reference voltage magnitude [p.u.].

    **Returns:**

    A [`Radial3PhaseNetwork`][powerzoojax.physics.Radial3PhaseNetwork]. Raises `ValueError`
    naming the bad argument when shapes, indices or the tree structure are wrong.
    """
    from_idx = np.asarray(from_nodes)
    to_idx = np.asarray(to_nodes)
    z = np.asarray(z_3ph_pu)
    if not isinstance(n_nodes, (int, np.integer)) or isinstance(n_nodes, bool) or n_nodes < 2:
        raise ValueError(f"make_radial_3phase_network: n_nodes must be an integer >= 2, got {n_nodes!r}")
    n_lines = n_nodes - 1
    if from_idx.shape != (n_lines,) or to_idx.shape != (n_lines,):
        raise ValueError(
            f"make_radial_3phase_network: from_nodes and to_nodes must have shape (n_nodes - 1,) = ({n_lines},) "
            f"for a radial feeder, got {from_idx.shape} and {to_idx.shape}"
        )
    if not (np.issubdtype(from_idx.dtype, np.integer) and np.issubdtype(to_idx.dtype, np.integer)):
        raise ValueError(
            f"make_radial_3phase_network: from_nodes and to_nodes must be integer bus indices, "
            f"got dtypes {from_idx.dtype} and {to_idx.dtype}"
        )
    for name, idx in (("from_nodes", from_idx), ("to_nodes", to_idx)):
        if idx.min() < 0 or idx.max() >= n_nodes:
            raise ValueError(
                f"make_radial_3phase_network: {name} must be 0-based bus indices in [0, {n_nodes - 1}], "
                f"got values in [{int(idx.min())}, {int(idx.max())}]"
            )
    if z.shape != (n_lines, 3, 3):
        raise ValueError(
            f"make_radial_3phase_network: Z_3ph_pu must have shape (n_lines, 3, 3) = ({n_lines}, 3, 3), got {z.shape}"
        )
    if not np.all(np.isfinite(z)):
        raise ValueError("make_radial_3phase_network: Z_3ph_pu must be finite")
    if not (isinstance(ref_bus, (int, np.integer)) and 0 <= ref_bus < n_nodes):
        raise ValueError(f"make_radial_3phase_network: ref_bus must be a bus index in [0, {n_nodes - 1}], got {ref_bus!r}")
    v_ref_mag = float(v_ref_mag)
    if not (math.isfinite(v_ref_mag) and v_ref_mag > 0):
        raise ValueError(f"make_radial_3phase_network: v_ref_mag must be finite and > 0, got {v_ref_mag}")

    lines, sends, recvs = radial_tree_order(
        n_nodes, from_idx, to_idx, np.ones(n_lines, bool), int(ref_bus), np.arange(n_nodes)
    )
    path = radial_path_matrix(n_nodes, sends, recvs)
    z_tree = z[lines].astype(np.complex128)
    branch_phases = np.abs(np.diagonal(z_tree, axis1=1, axis2=2)) > _PHASE_EPS
    phase_mask = np.ones((n_nodes, 3), bool)
    phase_mask[recvs] = branch_phases
    rotation = np.array([1.0, _ALPHA**2, _ALPHA])
    return Radial3PhaseNetwork(
        path_matrix=jnp.asarray(path, jnp.float32),
        downstream_matrix=jnp.asarray(path.T, jnp.float32),
        z_pu=jnp.asarray(z_tree, jnp.complex64),
        phase_mask=jnp.asarray(phase_mask),
        branch_phase_mask=jnp.asarray(branch_phases),
        v_ref=jnp.asarray(np.tile(v_ref_mag * rotation, (n_nodes, 1)), jnp.complex64),
        send_idx=jnp.asarray(sends, jnp.int32),
        recv_idx=jnp.asarray(recvs, jnp.int32),
        line_idx=jnp.asarray(lines, jnp.int32),
        ref_bus=int(ref_bus),
        n_nodes=int(n_nodes),
        n_branches=int(n_lines),
    )


def voltage_unbalance_percent(v: Complex[Array, "*batch 3"]) -> Float[Array, " *batch"]:
    """Fortescue VUF `100 |V⁻| / |V⁺|` of ABC phasors (0 where `|V⁺| <= 1e-6`).

    **Arguments:**

    - `v`: `(..., 3)` complex phase voltages.

    **Returns:**

    A `(...)` float array [%].
    """
    a, b, c = v[..., 0], v[..., 1], v[..., 2]
    positive = (a + _ALPHA * b + _ALPHA**2 * c) / 3.0
    negative = (a + _ALPHA**2 * b + _ALPHA * c) / 3.0
    pos_mag = jnp.abs(positive)
    safe = pos_mag > 1e-6
    return jnp.where(safe, 100.0 * jnp.abs(negative) / jnp.where(safe, pos_mag, 1.0), 0.0)


def _sweep(network: Radial3PhaseNetwork, s_load: Array, v: Array) -> tuple[Array, Array]:
    """One backward/forward sweep from voltages `v`: `(new voltages, branch currents)`."""
    ctype = v.dtype
    v_sq = jnp.maximum(jnp.real(v) ** 2 + jnp.imag(v) ** 2, _V_SQ_FLOOR)
    # conj(S / V) = conj(S) V / |V|²
    i_load = jnp.conj(s_load) * v / v_sq.astype(ctype)
    i_branch = hp.matmul(network.downstream_matrix.astype(ctype), i_load)
    drop = hp.einsum("bij,bj->bi", network.z_pu.astype(ctype), i_branch)
    v_new = network.v_ref.astype(ctype) - hp.matmul(network.path_matrix.astype(ctype), drop)
    return jnp.where(network.phase_mask, v_new, 0.0), i_branch


def _complex_dtype(real: Array) -> np.dtype:
    """The complex dtype of `real`'s width (complex64 below float64)."""
    return np.dtype(np.complex128 if real.dtype == np.float64 else np.complex64)


def _complex(re: Array, im: Array) -> Array:
    """`re + 1j * im`, both cast to their complex dtype first (as implicit promotion would)."""
    ctype = _complex_dtype(re)
    return re.astype(ctype) + 1j * im.astype(ctype)


def _complex_of(x: Array, shape: tuple[int, ...]) -> Array:
    half = x.shape[0] // 2
    return _complex(x[:half], x[half:]).reshape(shape)


def _fixed_point_residual(x, load, network):
    """`V − sweep(V)` as real numbers (real parts, then imaginary): zero at the solution."""
    p, q = load
    v = _complex_of(x, p.shape)
    s_load = where(network.phase_mask, _complex(p, q), 0.0).at[network.ref_bus].set(0.0)
    r = (v - _sweep(network, s_load, v)[0]).ravel()
    return jnp.concatenate([jnp.real(r), jnp.imag(r)])


def _fixed_point_outputs(x, load, network):
    return _complex_of(x, load[0].shape)


@_solver_entry(static_argnames=("max_iter",))
def radial_3phase_power_flow(
    network: Radial3PhaseNetwork,
    p_load_pu: Float[ArrayLike, "n_nodes 3"],
    q_load_pu: Float[ArrayLike, "n_nodes 3"],
    max_iter: int = 100,
    tol: Float[ArrayLike, ""] | float = 1e-6,
) -> Radial3PhaseFlow:
    """Solve the unbalanced radial power flow for per-phase net loads.

    The reference bus holds `network.v_ref`; its own load is not part of the solve.
    Loads on absent phases are ignored. Never raises on a hard case: it returns finite
    values with `converged=False`.

    **Arguments:**

    - `network`: the [`Radial3PhaseNetwork`][powerzoojax.physics.Radial3PhaseNetwork].
    - `p_load_pu`, `q_load_pu`: `(n_nodes, 3)` net loads [p.u.].
    - `max_iter`: sweep budget (static).
    - `tol`: bound on `max |ΔV|` between sweeps [p.u.]; may be traced.

    **Returns:**

    A [`Radial3PhaseFlow`][powerzoojax.physics.Radial3PhaseFlow].
    """
    mask = network.phase_mask
    # float32 unless the loads are float64 (with x64 enabled): a float64 solve for
    # derivative checks against finite differences.
    dtype = working_float_dtype(p_load_pu, q_load_pu)
    network = cast_floating_leaves(network, dtype)
    p_load, q_load = jnp.asarray(p_load_pu, dtype), jnp.asarray(q_load_pu, dtype)
    ctype = _complex_dtype(p_load)
    s_load = jnp.where(mask, _complex(p_load, q_load), 0.0).astype(ctype)
    s_load = s_load.at[network.ref_bus].set(0.0)
    tol = jnp.asarray(tol, dtype)
    # The loop sees no tangents: the solution is differentiated implicitly (below).
    net_fixed, s_fixed = lax.stop_gradient((network, s_load))

    def sweep(v):
        return _sweep(net_fixed, s_fixed, v)

    def cond(carry):
        n_iter, _, residual = carry
        return (n_iter < max_iter) & (residual >= tol)

    def body(carry):
        n_iter, v, _ = carry
        v_new, _ = sweep(v)
        residual = jnp.max(jnp.abs(v_new - v))
        residual = jnp.where(jnp.isnan(residual), jnp.inf, residual)
        return n_iter + 1, v_new, residual

    v0 = jnp.where(mask, net_fixed.v_ref.astype(ctype), 0.0)
    n_iter, v, residual = lax.while_loop(
        cond, body, (jnp.asarray(0, jnp.int32), v0, jnp.asarray(jnp.inf, dtype))
    )
    collapsed = jnp.any(mask & (jnp.abs(v) ** 2 <= _V_SQ_FLOOR))
    x = jnp.concatenate([jnp.real(v).ravel(), jnp.imag(v).ravel()])
    v = implicit_outputs(
        _fixed_point_residual, _fixed_point_outputs, v, x, (p_load, q_load), network, (residual < tol) & ~collapsed
    )
    _, i_branch = _sweep(network, s_load, v)
    v_mag = jnp.abs(v)
    s_recv = v[network.recv_idx] * jnp.conj(i_branch)
    s_loss = jnp.conj(i_branch) * hp.einsum("bij,bj->bi", network.z_pu.astype(ctype), i_branch)
    return Radial3PhaseFlow(
        v=v,
        v_mag=v_mag,
        i_branch=i_branch,
        p_branch=jnp.real(s_recv),
        q_branch=jnp.imag(s_recv),
        p_loss=jnp.real(s_loss),
        q_loss=jnp.imag(s_loss),
        vuf_percent=voltage_unbalance_percent(v),
        converged=(residual < tol) & ~collapsed,
        n_iter=n_iter,
        residual=residual,
    )
