"""The law a balanced radial feeder step obeys, checked on recorded rollouts (float64)."""

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
