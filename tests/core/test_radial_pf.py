"""Balanced radial sweep against an independent NumPy Newton AC solve, the spec §6.3
case-33bw checkpoint, and its invariants (losses ≥ 0, supply = loads + losses)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_ac import newton_ac_pf


@functools.lru_cache(maxsize=None)
def _feeder(case_id):
    from powerzoojax.case import build_ybus, load_case
    from powerzoojax.physics import make_radial_network

    case = load_case(case_id)
    return case, make_radial_network(case), build_ybus(case)


@functools.lru_cache(maxsize=None)
def _solver():
    from powerzoojax.physics import radial_power_flow

    # One compiled function for every example (tol traced, so no retrace across tests).
    return jax.jit(radial_power_flow, static_argnames="max_iter")


def _nominal(case):
    p = np.asarray(case.node_pd, np.float64) / case.base_mva
    q = np.asarray(case.node_qd, np.float64) / case.base_mva
    return p, q


def _random_der_loads(case, n_feeders: int, seed: int, scale=(1.0, 1.0)):
    """``(p, q)`` of ``n_feeders`` feeders: nominal loads times a uniform ``scale`` less a
    ±0.5 MW DER at every non-slack bus (the DistGridEnv regime), float64."""
    p0, q0 = _nominal(case)
    rng = np.random.default_rng(seed)
    der = rng.uniform(-0.005, 0.005, (n_feeders, case.n_nodes))
    der[:, case.slack_bus_idx] = 0.0
    factor = rng.uniform(*scale, (n_feeders, 1))
    return p0 * factor - der, q0 * factor


# The sweep's residual is max |Δv²| between its last two iterates, and v² is O(1) p.u.², so
# residuals are resolved in float32 ulps of 1 (1.19e-7; the default tol 1e-6 is 8.4 of
# them). Two compiled programs of one solve (single solves in a lax.map, a vmapped batch
# and its compacted stages, the same program built for another CPU's vector width) round
# v² an ulp apart and the residual up to two: residuals are compared within that bound,
# never relatively, and where a feeder's stopping test sat within it of tol the two
# programs may stop one sweep apart. (2026-12-01: XLA:CPU limited to SSE4.2 rounds 10 of
# the 1,024 residuals of test_compacted_batch_gives_each_feeder_its_own_solve half an ulp
# away from its AVX2 build, which gives the lax.map and the batch bit for bit alike.)
_TOL = 1e-6
_RESIDUAL_ROUNDOFF = 2 * float(np.finfo(np.float32).eps)


def _near_tol(*flows):
    """Feeders whose last stopping test sat within round-off of the default tol in one of
    ``flows``: the only ones where two compiled programs may stop a sweep apart."""
    return np.any([np.abs(np.asarray(f.residual) - _TOL) <= _RESIDUAL_ROUNDOFF for f in flows], axis=0)


def _assert_same_sweeps(n_iter, expected, near):
    """Sweep counts equal to ``expected``, up to one sweep on the feeders ``near`` tol."""
    n_iter, expected = np.asarray(n_iter), np.asarray(expected)
    np.testing.assert_array_equal(n_iter[~near], expected[~near])
    off = np.abs(n_iter - expected)[near]
    assert np.all(off <= 1), (np.flatnonzero(near)[off > 1], n_iter[near][off > 1], expected[near][off > 1])


def test_topology_case33bw_excludes_open_ties():
    case, net, _ = _feeder("33bw")
    assert net.n_branches == 32
    assert np.all(np.asarray(case.line_status)[np.asarray(net.line_idx)] > 0)
    path = np.asarray(net.path_matrix)
    assert path.shape == (33, 32)
    assert not path[case.slack_bus_idx].any()
    # Each non-slack bus is fed by exactly one branch; each branch's receiving bus
    # has it on its path.
    assert sorted(np.asarray(net.recv_idx).tolist()) == [i for i in range(33) if i != case.slack_bus_idx]
    assert np.all(path[np.asarray(net.recv_idx), np.arange(32)] == 1)
    np.testing.assert_array_equal(np.asarray(net.downstream_matrix), path.T)


def test_case33bw_checkpoint():
    # Spec §6 item 3 (reference values, atol 1e-3).
    case, net, _ = _feeder("33bw")
    p, q = _nominal(case)
    flow = _solver()(net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32))
    assert bool(flow.converged)
    v = np.asarray(flow.v_mag)
    np.testing.assert_allclose(v[[1, 17, 32]], [0.99704452, 0.91329013, 0.91679245], atol=1e-3)
    first = int(np.flatnonzero(np.asarray(net.line_idx) == 0)[0])
    np.testing.assert_allclose(float(flow.p_branch[first]), 0.03901482, atol=1e-3)
    np.testing.assert_allclose(float(flow.q_branch[first]), 0.02425106, atol=1e-3)
    # The well-known exact Baran–Wu figures: 202.7 kW of losses, v_min 0.9131 at bus 18.
    np.testing.assert_allclose(float(jnp.sum(flow.p_loss)) * case.base_mva, 0.20268, atol=2e-4)
    assert int(np.argmin(v)) == 17


@pytest.mark.parametrize("case_id", ["33bw", "141"])
def test_matches_newton_ac_with_random_load_scalings(case_id):
    case, net, y_bus = _feeder(case_id)
    p0, q0 = _nominal(case)
    rng = np.random.default_rng(4)
    worst = 0.0
    for k in range(4):
        scale = np.ones(case.n_nodes) if k == 0 else rng.uniform(0.3, 1.6, case.n_nodes)
        p, q = p0 * scale, q0 * scale
        vm, va, _ = newton_ac_pf(y_bus, case.slack_bus_idx, p, q)
        flow = _solver()(net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32))
        assert bool(flow.converged)
        worst = max(worst, float(np.max(np.abs(np.asarray(flow.v_mag, np.float64) - vm))))
        # Sending-end branch flows against the AC solution's series-branch flows.
        v = vm * np.exp(1j * va)
        lines = np.asarray(net.line_idx)
        send, recv = np.asarray(net.send_idx), np.asarray(net.recv_idx)
        z = np.asarray(case.line_r, np.float64)[lines] + 1j * np.asarray(case.line_x, np.float64)[lines]
        s_send = v[send] * np.conj((v[send] - v[recv]) / z)
        np.testing.assert_allclose(np.asarray(flow.p_branch), s_send.real, atol=2e-5)
        np.testing.assert_allclose(np.asarray(flow.q_branch), s_send.imag, atol=2e-5)
    assert worst < 1e-5, f"max |v_bfs - v_newton| = {worst:.2e} p.u. on case {case_id}"


def test_v_slack_and_tol_are_traced():
    case, net, y_bus = _feeder("33bw")
    p, q = _nominal(case)
    vm, _, _ = newton_ac_pf(y_bus, case.slack_bus_idx, p, q, v_slack=1.03)
    flow = _solver()(net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32), jnp.float32(1.03), 100, jnp.float32(1e-4))
    assert bool(flow.converged)
    np.testing.assert_allclose(np.asarray(flow.v_mag), vm, atol=1e-4)
    assert float(flow.v_mag[0]) == pytest.approx(1.03, abs=1e-6)


def test_heavy_overload_is_finite_and_not_converged():
    case, net, _ = _feeder("33bw")
    p, q = _nominal(case)
    for factor in (8.0, 1e3):
        flow = _solver()(net, jnp.asarray(factor * p, jnp.float32), jnp.asarray(factor * q, jnp.float32))
        for leaf in jax.tree.leaves(flow):
            assert np.all(np.isfinite(np.asarray(leaf, np.float64)))
        assert not bool(flow.converged)
        assert int(flow.n_iter) <= 100
        v = np.asarray(flow.v_mag)
        assert v.min() >= 0.5 - 1e-6 and v.max() <= 2.0 + 1e-6
        # A failed solve hands the next one no warm start.
        np.testing.assert_array_equal(np.asarray(flow.loss_correction), 0.0)


@functools.lru_cache(maxsize=None)
def _warm_solver():
    from powerzoojax.physics import radial_power_flow

    return jax.jit(jax.vmap(lambda net, p, q, w: radial_power_flow(net, p, q, warm_start=w), in_axes=(None, 0, 0, 0)))


def test_warm_start_reaches_the_same_solution_in_fewer_sweeps():
    # One time step of smooth profiles: loads A, then A moved by up to ±3 % per bus. The
    # solve of B warm-started from A's loss_correction must land on B's fixed point (the
    # NumPy sweep to convergence) like the cold solve, in fewer sweeps. 256 feeders, so the
    # batched rule's peeled sweeps and a compaction stage run; the single solves agree.
    from powerzoojax.physics import radial_power_flow

    case, net, _ = _feeder("33bw")
    p_a, q_a = _random_der_loads(case, 256, seed=11, scale=(0.6, 1.4))
    rng = np.random.default_rng(12)
    move = rng.uniform(0.97, 1.03, p_a.shape)
    p_b, q_b = p_a * move, q_a * move
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    zeros = jnp.zeros((256, net.n_branches), jnp.float32)
    first = _warm_solver()(net, f32(p_a), f32(q_a), zeros)
    assert bool(jnp.all(first.converged))
    correction = first.loss_correction
    assert float(jnp.max(jnp.abs(correction))) > 0.0
    cold = _warm_solver()(net, f32(p_b), f32(q_b), zeros)
    warm = _warm_solver()(net, f32(p_b), f32(q_b), correction)
    assert bool(jnp.all(cold.converged)) and bool(jnp.all(warm.converged))
    n_cold, n_warm = np.asarray(cold.n_iter), np.asarray(warm.n_iter)
    assert n_warm.mean() <= n_cold.mean() - 0.3 and n_warm.max() <= n_cold.max(), (
        np.bincount(n_cold), np.bincount(n_warm)
    )
    worst = 0.0
    for i in range(0, 256, 32):
        v_sq, flow_p, _, _ = _distflow_reference(net, p_b[i], q_b[i])
        for flow in (cold, warm):
            worst = max(
                worst,
                float(np.max(np.abs(np.asarray(flow.v_sq[i], np.float64) - v_sq))),
                float(np.max(np.abs(np.asarray(flow.p_branch[i], np.float64) - flow_p))),
            )
    assert worst < 5e-6, worst
    np.testing.assert_allclose(np.asarray(warm.v_sq), np.asarray(cold.v_sq), atol=2e-6)
    # Batched warm solves are each feeder's own warm solve.
    alone = jax.jit(
        lambda p, q, w: jax.lax.map(lambda x: radial_power_flow(net, x[0], x[1], warm_start=x[2]), (p, q, w))
    )(f32(p_b), f32(q_b), correction)
    _assert_same_sweeps(alone.n_iter, n_warm, _near_tol(alone, warm))
    np.testing.assert_allclose(np.asarray(alone.v_sq), np.asarray(warm.v_sq), rtol=1e-5, atol=1e-8)


def test_warm_start_of_the_wrong_shape_is_refused():
    from powerzoojax.physics import radial_power_flow

    case, net, _ = _feeder("33bw")
    p, q = _nominal(case)
    with pytest.raises(ValueError, match=r"warm_start must have shape \(n_branches,\) = \(32,\), got \(33,\)"):
        radial_power_flow(net, p, q, warm_start=np.zeros(33))


def test_iteration_cap_reports_not_converged():
    case, net, _ = _feeder("33bw")
    p, q = _nominal(case)
    flow = _solver()(net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32), 1.0, 2)
    assert int(flow.n_iter) == 2 and not bool(flow.converged)
    assert float(flow.residual) > 1e-6


def test_vmap_over_loads():
    from powerzoojax.physics import radial_power_flow

    case, net, _ = _feeder("33bw")
    p, q = _nominal(case)
    scales = jnp.asarray([0.5, 1.0, 1.5], jnp.float32)[:, None]
    batched = jax.jit(jax.vmap(radial_power_flow, in_axes=(None, 0, 0)))(net, scales * p[None, :], scales * q[None, :])
    for i in range(3):
        one = _solver()(net, scales[i] * jnp.asarray(p, jnp.float32), scales[i] * jnp.asarray(q, jnp.float32))
        np.testing.assert_allclose(np.asarray(batched.v_mag[i]), np.asarray(one.v_mag), atol=1e-6)


def test_vmapped_random_der_matches_newton_ac_in_few_sweeps():
    # The DistGridEnv regime: ±0.5 MW DER at every bus, here on 1.5–2.2 × nominal loads
    # (v down to ~0.8 p.u.), many feeders in one vmapped solve (each stops on its own test).
    from powerzoojax.physics import radial_power_flow

    case, net, y_bus = _feeder("33bw")
    n_feeders = 32
    p, q = _random_der_loads(case, n_feeders, seed=11, scale=(1.5, 2.2))
    flows = jax.jit(jax.vmap(radial_power_flow, in_axes=(None, 0, 0)))(
        net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32)
    )
    assert bool(jnp.all(flows.converged))
    # The plain (unaccelerated) sweep needs up to 12 sweeps on these feeders, 8 with mixing.
    assert int(jnp.max(flows.n_iter)) <= 10
    worst = 0.0
    for i in range(n_feeders):
        vm, _, _ = newton_ac_pf(y_bus, case.slack_bus_idx, p[i], q[i])
        worst = max(worst, float(np.max(np.abs(np.asarray(flows.v_mag[i], np.float64) - vm))))
    assert worst < 1e-5, f"max |v_bfs - v_newton| = {worst:.2e} p.u."


def test_meshed_or_disconnected_topology_is_refused():
    import equinox as eqx

    from powerzoojax.physics import make_radial_network

    case, _, _ = _feeder("33bw")
    closed = eqx.tree_at(lambda c: c.line_status, case, jnp.ones_like(case.line_status))
    with pytest.raises(ValueError, match="not radial"):
        make_radial_network(closed)
    cut = eqx.tree_at(lambda c: c.line_status, case, case.line_status.at[0].set(0))
    with pytest.raises(ValueError, match="not connected to the slack bus"):
        make_radial_network(cut)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case_id=st.sampled_from(["33bw", "141"]),
    seed=st.integers(0, 2**31 - 1),
    load_scale=st.floats(0.0, 1.8),
    export_fraction=st.floats(0.0, 0.5),
)
def test_losses_nonnegative_and_supply_balances(case_id, seed, load_scale, export_fraction):
    case, net, _ = _feeder(case_id)
    p0, q0 = _nominal(case)
    rng = np.random.default_rng(seed)
    scale = load_scale * rng.uniform(0.0, 1.0, case.n_nodes)
    # Some buses export (DER), with either sign of reactive power.
    exporting = rng.uniform(size=case.n_nodes) < export_fraction
    p = np.where(exporting, -rng.uniform(0, 2, case.n_nodes) * p0.max(), p0 * scale)
    q = np.where(exporting, rng.uniform(-1, 1, case.n_nodes) * q0.max(), q0 * scale)
    flow = _solver()(net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32))
    assert bool(flow.converged)
    p_loss = np.asarray(flow.p_loss, np.float64)
    q_loss = np.asarray(flow.q_loss, np.float64)
    assert np.all(p_loss >= 0) and np.all(q_loss >= 0)
    # Slack supply = Σ net loads + Σ losses (the injections balance the losses).
    total = float(np.abs(p).sum() + np.abs(q).sum()) + 1.0
    assert abs(float(flow.p_slack) - (p.sum() + p_loss.sum())) < 2e-6 * total
    assert abs(float(flow.q_slack) - (q.sum() + q_loss.sum())) < 2e-6 * total


# --- the quasi-Newton sweep: reference values and honest per-feeder counters -----------


def _distflow_reference(net, p, q, v_slack=1.0, currents=None, n_sweeps=150):
    """Textbook DistFlow backward/forward sweep in float64, branch by branch (no dense
    matrices, no acceleration). Returns ``(v², P, Q, ℓ)``; with ``currents`` given, one
    pass from them (``ℓ`` is then the next iterate)."""
    send, recv = np.asarray(net.send_idx), np.asarray(net.recv_idx)
    r, x = np.asarray(net.r_pu, np.float64), np.asarray(net.x_pu, np.float64)
    feeder_of = {int(bus): k for k, bus in enumerate(recv)}
    ell = np.zeros(len(send)) if currents is None else np.asarray(currents, np.float64)
    for _ in range(1 if currents is not None else n_sweeps):
        flow_p, flow_q = np.zeros(len(send)), np.zeros(len(send))
        for k in reversed(range(len(send))):  # BFS order: children after their parents
            flow_p[k] += p[recv[k]] + r[k] * ell[k]
            flow_q[k] += q[recv[k]] + x[k] * ell[k]
            parent = feeder_of.get(int(send[k]))
            if parent is not None:
                flow_p[parent] += flow_p[k]
                flow_q[parent] += flow_q[k]
        v_sq = np.full(net.n_nodes, float(v_slack) ** 2)
        for k in range(len(send)):
            v_sq[recv[k]] = (
                v_sq[send[k]] - 2 * (r[k] * flow_p[k] + x[k] * flow_q[k]) + (r[k] ** 2 + x[k] ** 2) * ell[k]
            )
        ell = (flow_p**2 + flow_q**2) / v_sq[send]
    return v_sq, flow_p, flow_q, ell


def test_preconditioner_is_the_nominal_sweep_jacobian():
    # (I − J₀)⁻ᵀ with J₀ from central differences of the reference sweep map at the
    # nominal fixed point (independent of the dense matrices the solver folds).
    case, net, _ = _feeder("33bw")
    p, q = _nominal(case)
    _, _, _, ell = _distflow_reference(net, p, q)
    h = 1e-7

    def next_currents(currents):
        return _distflow_reference(net, p, q, currents=currents)[3]

    jac = np.stack(
        [(next_currents(ell + h * e) - next_currents(ell - h * e)) / (2 * h) for e in np.eye(net.n_branches)],
        axis=1,
    )
    expected = np.linalg.inv(np.eye(net.n_branches) - jac).T
    np.testing.assert_allclose(np.asarray(net.sweep_precond), expected, atol=2e-6)
    assert np.abs(expected - np.eye(net.n_branches)).max() > 1e-3  # not trivially the identity


def test_preconditioner_falls_back_to_identity_when_nominal_loads_do_not_solve():
    import equinox as eqx

    from powerzoojax.physics import make_radial_network

    case, _, _ = _feeder("33bw")
    # 8 × the nominal loads has no DistFlow solution (test_heavy_overload_is_finite...).
    heavy = eqx.tree_at(lambda c: (c.node_pd, c.node_qd), case, (8.0 * case.node_pd, 8.0 * case.node_qd))
    net = make_radial_network(heavy)
    np.testing.assert_array_equal(np.asarray(net.sweep_precond), np.eye(net.n_branches))
    # The solver still solves a feasible point on that network (plain steps + mixing).
    p, q = _nominal(case)
    flow = _solver()(net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32))
    ref_v_sq = _distflow_reference(net, p, q)[0]
    assert bool(flow.converged)
    np.testing.assert_allclose(np.asarray(flow.v_sq, np.float64), ref_v_sq, atol=5e-6)


@functools.lru_cache(maxsize=None)
def _batched_solver(max_iter):
    from powerzoojax.physics import radial_power_flow

    return jax.jit(jax.vmap(lambda net, p, q: radial_power_flow(net, p, q, 1.0, max_iter), in_axes=(None, 0, 0)))


def test_random_der_matches_reference_sweep_and_counters_are_honest():
    # The DistGridEnv regime (random ±0.5 MW DER at every non-slack bus, nominal loads:
    # v down to ~0.6 p.u. on the heaviest draws), many feeders in one vmapped solve.
    case, net, y_bus = _feeder("33bw")
    p0, q0 = _nominal(case)
    rng = np.random.default_rng(5)
    n_feeders = 32
    der = rng.uniform(-0.005, 0.005, (n_feeders, case.n_nodes))
    der[:, case.slack_bus_idx] = 0.0
    p, q = p0 - der, np.tile(q0, (n_feeders, 1))
    p32, q32 = jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32)
    flows = _batched_solver(100)(net, p32, q32)
    n_iter = np.asarray(flows.n_iter)
    assert bool(jnp.all(flows.converged))
    # Mixing alone needed up to 8 sweeps here (up to 15 plain); the quasi-Newton steps 7.
    assert n_iter.max() <= 7, n_iter
    worst_ref = worst_newton = 0.0
    for i in range(n_feeders):
        v_sq, flow_p, flow_q, _ = _distflow_reference(net, p[i], q[i])
        worst_ref = max(
            worst_ref,
            float(np.max(np.abs(np.asarray(flows.v_sq[i], np.float64) - v_sq))),
            float(np.max(np.abs(np.asarray(flows.p_branch[i], np.float64) - flow_p))),
            float(np.max(np.abs(np.asarray(flows.q_branch[i], np.float64) - flow_q))),
        )
        if i < 8:
            vm, _, _ = newton_ac_pf(y_bus, case.slack_bus_idx, p[i], q[i])
            worst_newton = max(worst_newton, float(np.max(np.abs(np.asarray(flows.v_mag[i], np.float64) - vm))))
    assert worst_ref < 5e-6, worst_ref
    assert worst_newton < 1e-5, worst_newton
    # n_iter is the first sweep at which each feeder passed its test, and residual is the
    # last sweep's max |Δv²|: cap the loop below and at each feeder's count.
    # (Each cap is its own compiled program: feeders whose test sat within round-off of tol
    # may stop a sweep apart from the uncapped solve, see _near_tol.)
    previous = None
    for cap in range(1, int(n_iter.max()) + 1):
        capped = _batched_solver(cap)(net, p32, q32)
        done = n_iter <= cap
        near = _near_tol(capped, flows) if previous is None else _near_tol(capped, flows, previous)
        np.testing.assert_array_equal(np.asarray(capped.converged)[~near], done[~near])
        _assert_same_sweeps(capped.n_iter, np.minimum(n_iter, cap), near)
        assert np.all(np.asarray(capped.residual)[~done & ~near] >= _TOL)
        # Same sweeps: v² within two ulps; a sweep apart: within that sweep's change (< tol).
        v_off = np.max(np.abs(np.asarray(capped.v_sq) - np.asarray(flows.v_sq)), axis=1)
        assert np.all(v_off[done & ~near] <= _RESIDUAL_ROUNDOFF) and np.all(v_off[done & near] <= _TOL + _RESIDUAL_ROUNDOFF)
        if previous is not None:
            stepped = ~np.asarray(previous.converged) & ~near
            change = np.max(np.abs(np.asarray(capped.v_sq) - np.asarray(previous.v_sq)), axis=1)
            np.testing.assert_allclose(
                np.asarray(capped.residual)[stepped], change[stepped], rtol=0, atol=_RESIDUAL_ROUNDOFF
            )
        previous = capped


def test_compacted_batch_gives_each_feeder_its_own_solve():
    # From 4 x 64 feeders up, the batched loop moves its last unconverged feeders into
    # smaller batches (N = 1024: 256, then 64) and writes them back. Every feeder must end
    # as when it is solved alone (same sweeps, same stopping test; values within float32
    # round-off of that solve's, see _near_tol), also under an iteration cap and under a
    # second vmap.
    from powerzoojax.physics import radial_power_flow

    case, net, _ = _feeder("33bw")
    n_feeders = 1024
    p, q = _random_der_loads(case, n_feeders, seed=7)
    p32, q32 = jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32)

    def one(pq):
        return radial_power_flow(net, pq[0], pq[1])

    def same(batched, reference):
        _assert_same_sweeps(batched.n_iter, reference.n_iter, _near_tol(batched, reference))
        np.testing.assert_array_equal(np.asarray(batched.converged), np.asarray(reference.converged))
        for field in ("v_sq", "p_branch", "q_branch", "p_loss"):
            np.testing.assert_allclose(
                np.asarray(getattr(batched, field)), np.asarray(getattr(reference, field)), rtol=1e-5, atol=1e-8
            )
        # The residual is round-off of v² by the time a feeder stops: below tol, and the
        # same sweep's residual within two ulps of 1 of the single solve's.
        residual, own = np.asarray(batched.residual), np.asarray(reference.residual)
        assert np.all(residual < _TOL), residual.max()
        same_sweep = np.asarray(batched.n_iter) == np.asarray(reference.n_iter)
        np.testing.assert_allclose(residual[same_sweep], own[same_sweep], rtol=0, atol=_RESIDUAL_ROUNDOFF)

    reference = jax.jit(lambda p, q: jax.lax.map(one, (p, q)))(p32, q32)
    n_iter = np.asarray(reference.n_iter)
    # The draw has a tail for the compacted stages to run (most feeders stop at 4).
    assert np.mean(n_iter <= 4) > 0.5 and np.sum(n_iter >= 6) >= 3, np.bincount(n_iter)
    assert bool(jnp.all(reference.converged))
    same(_batched_solver(100)(net, p32, q32), reference)
    capped = _batched_solver(5)(net, p32, q32)
    near = _near_tol(capped, reference)
    _assert_same_sweeps(capped.n_iter, np.minimum(n_iter, 5), near)
    np.testing.assert_array_equal(np.asarray(capped.converged)[~near], (n_iter <= 5)[~near])
    # A cap below the sweeps the batched rule runs before its loop (_PEELED_SWEEPS) binds them too.
    below = _batched_solver(2)(net, p32, q32)
    np.testing.assert_array_equal(np.asarray(below.n_iter), 2)
    assert not bool(jnp.any(below.converged))
    small = _batched_solver(2)(net, p32[:8], q32[:8])  # 8 feeders: the plain loop, nothing peeled
    np.testing.assert_allclose(np.asarray(below.v_sq)[:8], np.asarray(small.v_sq), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(np.asarray(below.residual)[:8], np.asarray(small.residual), rtol=0, atol=_RESIDUAL_ROUNDOFF)
    done = n_iter <= 5
    np.testing.assert_allclose(np.asarray(capped.v_sq)[done], np.asarray(reference.v_sq)[done], rtol=1e-5, atol=1e-8)
    assert np.all(np.asarray(capped.residual)[~done & ~near] >= _TOL)
    nested = jax.jit(jax.vmap(jax.vmap(radial_power_flow, in_axes=(None, 0, 0)), in_axes=(None, 0, 0)))(
        net, p32.reshape(4, 256, -1), q32.reshape(4, 256, -1)
    )
    same(jax.tree.map(lambda x: x.reshape(n_feeders, *x.shape[2:]), nested), reference)


# --- three-phase sweep -------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _feeder_3phase(mutual):
    from powerzoojax.physics import make_radial_3phase_network

    case, net, _ = _feeder("33bw")
    lines = np.asarray(net.line_idx)
    z = np.asarray(case.line_r, np.float64)[lines] + 1j * np.asarray(case.line_x, np.float64)[lines]
    coupling = np.eye(3) + mutual * (np.ones((3, 3)) - np.eye(3))
    z3 = z[:, None, None] * coupling
    frm = np.asarray(case.line_from_idx)[lines]
    to = np.asarray(case.line_to_idx)[lines]
    return make_radial_3phase_network(33, frm, to, z3)


@functools.lru_cache(maxsize=None)
def _solver_3phase():
    from powerzoojax.physics import radial_3phase_power_flow

    return jax.jit(radial_3phase_power_flow, static_argnames="max_iter")


def test_three_phase_balanced_feeder_equals_balanced_sweep():
    case, net, _ = _feeder("33bw")
    p, q = _nominal(case)
    balanced = _solver()(net, jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32))
    flow = _solver_3phase()(
        _feeder_3phase(0.0), jnp.asarray(np.repeat(p[:, None], 3, 1), jnp.float32),
        jnp.asarray(np.repeat(q[:, None], 3, 1), jnp.float32),
    )
    assert bool(flow.converged)
    v = np.asarray(flow.v_mag)
    for phase in range(3):
        np.testing.assert_allclose(v[:, phase], np.asarray(balanced.v_mag), atol=1e-5)
        np.testing.assert_allclose(np.asarray(flow.p_loss)[:, phase], np.asarray(balanced.p_loss), rtol=1e-3, atol=1e-8)
    # Phase angles stay 120° apart and the unbalance factor is ~0.
    angles = np.angle(np.asarray(flow.v))
    np.testing.assert_allclose(np.mod(angles[:, 0] - angles[:, 1], 2 * np.pi), 2 * np.pi / 3, atol=1e-4)
    assert float(jnp.max(flow.vuf_percent)) < 1e-3


def test_three_phase_unbalanced_conserves_power_per_phase():
    case, _, _ = _feeder("33bw")
    p, q = _nominal(case)
    rng = np.random.default_rng(3)
    p3 = p[:, None] * rng.uniform(0.0, 2.0, (33, 3))
    q3 = q[:, None] * rng.uniform(0.0, 2.0, (33, 3))
    net3 = _feeder_3phase(0.3)
    flow = _solver_3phase()(net3, jnp.asarray(p3, jnp.float32), jnp.asarray(q3, jnp.float32))
    assert bool(flow.converged)
    root = np.asarray(net3.send_idx) == 0
    supply = (np.asarray(net3.v_ref)[0] * np.conj(np.asarray(flow.i_branch)[root])).sum(axis=0)
    demand = p3[1:].sum(axis=0) + 1j * q3[1:].sum(axis=0)
    losses = np.asarray(flow.p_loss).sum(axis=0) + 1j * np.asarray(flow.q_loss).sum(axis=0)
    np.testing.assert_allclose(supply, demand + losses, atol=1e-6)
    assert float(np.sum(flow.p_loss)) > 0
    assert float(jnp.max(flow.vuf_percent)) > 0.1


def test_vuf_of_known_phasors():
    from powerzoojax.physics import voltage_unbalance_percent

    a = np.exp(2j * np.pi / 3)
    balanced = np.array([1.0, a**2, a])
    # Adding a pure negative-sequence component of 0.02 gives VUF = 2 %.
    unbalanced = balanced + 0.02 * np.array([1.0, a, a**2])
    vuf = voltage_unbalance_percent(jnp.asarray(np.stack([balanced, unbalanced]), jnp.complex64))
    np.testing.assert_allclose(np.asarray(vuf), [0.0, 2.0], atol=1e-4)
    assert float(voltage_unbalance_percent(jnp.zeros(3, jnp.complex64))) == 0.0


def test_three_phase_overload_is_finite_and_not_converged():
    case, _, _ = _feeder("33bw")
    p, q = _nominal(case)
    flow = _solver_3phase()(
        _feeder_3phase(0.3), jnp.asarray(np.repeat(40 * p[:, None], 3, 1), jnp.float32),
        jnp.asarray(np.repeat(40 * q[:, None], 3, 1), jnp.float32),
    )
    for leaf in jax.tree.leaves(flow):
        assert np.all(np.isfinite(np.asarray(leaf)))
    assert not bool(flow.converged)


def test_no_peeled_sweeps_gives_the_same_solves(monkeypatch):
    # `_PEELED_SWEEPS = 0` runs every sweep in the loop: each feeder must end as with the
    # sweeps peeled. The jit caches are cleared so that the solve is traced anew.
    from powerzoojax.physics import _radial, radial_power_flow

    case, net, _ = _feeder("33bw")
    p, q = _random_der_loads(case, 256, seed=11)
    p32, q32 = jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32)

    def batched(p, q):
        return jax.vmap(lambda p, q: radial_power_flow(net, p, q), in_axes=(0, 0))(p, q)

    assert "_peeled_sweeps" in str(jax.make_jaxpr(batched)(p32, q32))
    peeled = jax.jit(batched)(p32, q32)
    monkeypatch.setattr(_radial, "_PEELED_SWEEPS", 0)
    jax.clear_caches()
    assert "_peeled_sweeps" not in str(jax.make_jaxpr(batched)(p32, q32))
    looped = jax.jit(batched)(p32, q32)
    monkeypatch.undo()
    jax.clear_caches()
    near = _near_tol(peeled, looped)
    _assert_same_sweeps(looped.n_iter, peeled.n_iter, near)
    assert bool(jnp.all(peeled.converged)) and bool(jnp.all(looped.converged))
    for field in ("v_sq", "p_branch", "q_branch", "p_loss"):
        np.testing.assert_allclose(np.asarray(getattr(looped, field)), np.asarray(getattr(peeled, field)), rtol=1e-5, atol=1e-8)
