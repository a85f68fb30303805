"""The laws a radial feeder step obeys, checked on recorded rollouts (float64): the
DistFlow branch equation of the balanced sweep and Kirchhoff's laws per phase of the
unbalanced one."""

import numpy as np

from powerzoojax.core import Invariant, Trajectory, not_terminal


def distflow_laws(params) -> tuple[Invariant, ...]:
    """A converged sweep satisfies the DistFlow branch equation on every branch:
    `v²_send − v²_recv = 2(rP + xQ) − (r² + x²)(P² + Q²)/v²_send` with the sending-end
    flows `P, Q` [p.u.]."""
    net = params.network
    send = np.asarray(net.send_idx)
    recv = np.asarray(net.recv_idx)
    r = np.asarray(net.r_pu, np.float64)
    x = np.asarray(net.x_pu, np.float64)

    def branch_equation(traj: Trajectory, params) -> np.ndarray:
        s = traj.next_state
        v2 = np.asarray(s.v_mag, np.float64) ** 2
        p = np.asarray(s.p_branch, np.float64)
        q = np.asarray(s.q_branch, np.float64)
        v2_send = v2[:, send]
        drop = 2.0 * (r * p + x * q) - (r**2 + x**2) * (p**2 + q**2) / np.maximum(v2_send, 0.25)
        err = np.abs(v2_send - v2[:, recv] - drop).max(axis=1)
        converged = np.asarray(traj.info["bfs_converged"], bool)
        return not_terminal(traj, np.where(converged, err, np.nan))

    return (Invariant("distflow_branch_equation", branch_equation, 1e-4, "converged: v²_send − v²_recv = DistFlow drop [p.u.²]"),)


def _phasors(traj: Trajectory, params) -> tuple[np.ndarray, np.ndarray]:
    """Bus voltages `(T, N, 3)` (the reference bus at its balanced phasors) and the
    branch currents `(T, B, 3)` in BFS branch order, `I = conj(S_recv / V_recv)` from the
    recorded receiving-end powers (0 on absent phases)."""
    net = params.network
    s = traj.next_state
    n_steps = s.v_mag.shape[0]
    v = np.broadcast_to(np.asarray(net.v_ref, np.complex128), (n_steps, net.n_nodes, 3)).copy()
    v_nonref = np.asarray(s.V_real, np.float64) + 1j * np.asarray(s.V_imag, np.float64)
    v[:, np.asarray(params.nonref_idx)] = v_nonref.reshape(n_steps, -1, 3)
    line = np.asarray(net.line_idx)
    s_recv = (np.asarray(s.P_branch, np.float64) + 1j * np.asarray(s.Q_branch, np.float64)).reshape(n_steps, -1, 3)[:, line]
    v_recv = v[:, np.asarray(net.recv_idx)]
    present = np.asarray(net.branch_phase_mask, bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        current = np.where(present, np.conj(s_recv / np.where(present, v_recv, 1.0)), 0.0)
    return v, current


def three_phase_laws(params) -> tuple[Invariant, ...]:
    """A converged unbalanced sweep satisfies, per phase, Kirchhoff's voltage law on every
    branch, `V_send − V_recv = Z_b I_b` with the 3 × 3 series impedance, and (without
    resource bundles, whose injections the state does not record) Kirchhoff's current law
    at every bus: a branch carries the net load current `conj(S_net / V)` of its receiving
    bus plus the currents of the branches leaving it [p.u.]."""
    net = params.network
    send = np.asarray(net.send_idx)
    recv = np.asarray(net.recv_idx)
    z = np.asarray(net.z_pu, np.complex128)
    present = np.asarray(net.branch_phase_mask, bool)
    children = (send[None, :] == recv[:, None]).astype(np.float64)  # [b, c]: c leaves b's receiving bus

    def converged(traj: Trajectory, err: np.ndarray) -> np.ndarray:
        return not_terminal(traj, np.where(np.asarray(traj.info["bfs_converged"], bool), err, np.nan))

    def kvl(traj: Trajectory, params) -> np.ndarray:
        v, current = _phasors(traj, params)
        drop = np.einsum("bij,tbj->tbi", z, current)
        gap = np.where(present, v[:, send] - v[:, recv] - drop, 0.0)
        return converged(traj, np.abs(gap).reshape(gap.shape[0], -1).max(axis=1))

    def kcl(traj: Trajectory, params) -> np.ndarray:
        v, current = _phasors(traj, params)
        profiles = np.asarray(params.p_load_profiles, np.float64), np.asarray(params.q_load_profiles, np.float64)
        rows = np.asarray(traj.state.time_step) % profiles[0].shape[0]
        p_net, q_net = profiles[0][rows], profiles[1][rows]
        if params.include_der:
            action = np.asarray(traj.action, np.float64)[:, : 3 * (net.n_nodes - 1)]
            low, high = float(params.der_low), float(params.der_high)
            der = 0.5 * (low + high) + 0.5 * np.clip(action, -1.0, 1.0) * (high - low)
            p_net = p_net.copy()
            p_net[:, np.asarray(params.nonref_idx)] -= der.reshape(der.shape[0], -1, 3)
        s_net = p_net[:, recv] + 1j * q_net[:, recv]
        with np.errstate(divide="ignore", invalid="ignore"):
            load_current = np.where(present, np.conj(s_net / np.where(present, v[:, recv], 1.0)), 0.0)
        gap = current - load_current - np.einsum("bc,tcp->tbp", children, current)
        err = np.abs(gap).reshape(gap.shape[0], -1).max(axis=1)
        # A non-finite action entry was replaced by the guard: the step ran on another action.
        err = np.where(np.asarray(traj.info["invalid_action"], bool), np.nan, err)
        return converged(traj, err)

    laws = [Invariant("three_phase_kvl", kvl, 1e-4, "converged: V_send − V_recv = Z_b I_b per phase [p.u.]")]
    if not params.resources:
        laws.append(Invariant("three_phase_kcl", kcl, 1e-4, "converged: I_b = I_load(recv) + Σ downstream I per phase [p.u.]"))
    return tuple(laws)
