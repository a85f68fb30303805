"""The flexible-load bundle's short ring (``buffer_slots = max(horizon)``) against a NumPy
transcription of the spec's 64-slot ring (§4.5), and the bundles' bus injections against
``np.add.at``."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

T_STEPS = 14
DT, C_CURT, C_HOLD = 0.5, 50.0, 10.0


def spec_ring_reference(actions, cap_c, cap_s, horizon):
    """Spec §4.5 literally: 64 slots per device, pop the head, spread ``s/H`` over the H
    slots from the new head. Returns per-step arrays ``(T, D)`` in float64."""
    n_dev = len(horizon)
    buf = np.zeros((n_dev, 64))
    head = np.zeros(n_dev, int)
    size = np.zeros(n_dev, int)
    out = {k: [] for k in ("curtail", "s_out", "s_in", "size", "energy")}
    for a in actions:
        rows = {k: np.zeros(n_dev) for k in out}
        for d in range(n_dev):
            s_in = buf[d, head[d]] if size[d] > 0 else 0.0
            buf[d, head[d]] = 0.0
            head[d] = (head[d] + 1) % 64
            size[d] = max(size[d] - 1, 0)
            curtail = np.clip(a[d, 0], 0, 1) * cap_c[d]
            s_out = np.clip(a[d, 1], 0, 1) * cap_s[d]
            if s_out > 0:
                for k in range(horizon[d]):
                    buf[d, (head[d] + k) % 64] += s_out / horizon[d]
                size[d] = min(max(size[d], horizon[d]), 64)
            for k, v in (("curtail", curtail), ("s_out", s_out), ("s_in", s_in), ("size", size[d]),
                         ("energy", buf[d].sum())):
                rows[k][d] = v
        for k in out:
            out[k].append(rows[k])
    return {k: np.asarray(v) for k, v in out.items()}


# One compiled step per bundle layout (the bundle is an argument: its arrays are traced,
# its static fields key the cache), shared by every example.
_bundle_step = jax.jit(lambda bundle, state, action: bundle.step(state, action, {"time_step": 0}))
_bundle_observe = jax.jit(lambda bundle, state: bundle.observe(state, {}))


def _check_bundle_against_reference(horizon, actions, cap_c, cap_s):
    from powerzoojax.grid import make_flexload_bundle

    bundle = make_flexload_bundle(n_devices=len(horizon), cap_curtail_mw=cap_c, cap_shift_mw=cap_s, horizon=horizon,
                                  curtail_cost=C_CURT, holding_cost=C_HOLD, dt_hours=DT)
    assert bundle.buffer_slots == max(horizon)
    assert bundle.uniform_horizon == (min(horizon) == max(horizon))
    ref = spec_ring_reference(actions, cap_c, cap_s, horizon)
    state = bundle.reset(jr.PRNGKey(0))
    h = np.asarray(horizon, float)
    for t, a in enumerate(actions):
        state, p, q, obs, info = _bundle_step(bundle, state, jnp.asarray(a.reshape(-1), jnp.float32))
        r = {k: v[t] for k, v in ref.items()}
        np.testing.assert_allclose(np.asarray(p), r["curtail"] + r["s_out"] - r["s_in"], atol=2e-6)
        assert np.all(np.asarray(q) == 0.0)
        np.testing.assert_array_equal(np.asarray(state.buffer_size), r["size"])
        np.testing.assert_allclose(np.asarray(state.deferred_buffer).sum(-1), r["energy"], atol=2e-6)
        expected_obs = np.clip(np.stack([r["curtail"] / cap_c, r["s_out"] / cap_s, r["s_in"] / cap_s, r["size"] / h,
                                         r["energy"] / (cap_s * h)], axis=1), 0, 1).reshape(-1)
        np.testing.assert_allclose(np.asarray(obs), expected_obs, atol=1e-5)
        np.testing.assert_allclose(np.asarray(_bundle_observe(bundle, state)), expected_obs, atol=1e-5)
        np.testing.assert_allclose(np.asarray(info["cost_curtailment"]), r["curtail"] * DT * C_CURT,
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(info["cost_shift_discomfort"]), r["energy"] * DT * C_HOLD,
                                   rtol=1e-5, atol=1e-5)
        total = (r["curtail"] * DT * C_CURT + r["energy"] * DT * C_HOLD).sum()
        assert np.isclose(float(info["cost_sum"]), total, rtol=1e-5, atol=1e-5)
        for key, ref_key in (("curtailed_mw", "curtail"), ("shift_out_mw", "s_out"), ("shift_in_mw", "s_in")):
            assert np.isclose(float(info[key]), r[ref_key].sum(), atol=1e-5)


@pytest.mark.parametrize("horizon", [(4, 4, 4), (1, 3, 4), (2, 6, 2)])
def test_short_ring_matches_spec_ring(horizon):
    rng = np.random.default_rng(sum(horizon))
    # Actions outside [0, 1] exercise the clipping; bursts of zeros let the buffer drain.
    actions = rng.uniform(-0.5, 1.5, (T_STEPS, len(horizon), 2))
    actions[5:9] = 0.0
    _check_bundle_against_reference(horizon, actions, np.array([0.2, 0.1, 0.15]), np.array([0.1, 0.3, 0.15]))


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    horizon=st.sampled_from([(4, 4, 4), (1, 2, 3), (5, 1, 5), (3, 3, 3)]),
    sparsity=st.floats(0.0, 0.8),
)
def test_short_ring_matches_spec_ring_random_sequences(seed, horizon, sparsity):
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-0.5, 1.5, (T_STEPS, 3, 2))
    actions[rng.uniform(size=(T_STEPS, 3)) < sparsity] = 0.0
    _check_bundle_against_reference(horizon, actions, np.array([0.1, 0.2, 0.05]), np.array([0.1, 0.2, 0.05]))


def test_standalone_env_keeps_the_spec_ring():
    from powerzoojax.grid import FlexLoadEnv
    from powerzoojax.physics.devices import FLEX_BUFFER_SLOTS

    env = FlexLoadEnv()
    _, state = env.reset(jr.PRNGKey(0), env.default_params())
    assert state.deferred_buffer.shape == (FLEX_BUFFER_SLOTS,)


def test_bundle_injections_match_add_at_on_shared_buses():
    """Devices of several bundles, some on the same bus: the buses receive exactly the
    devices' own P and Q, summed per bus."""
    from powerzoojax.case import load_case
    from powerzoojax.grid import make_battery_bundle, make_flexload_bundle, make_renewable_bundle
    from powerzoojax.grid.resources import step_bundles

    case = load_case("33bw")
    bundles = (
        make_battery_bundle(case, [9, 9, 30], power_mw=0.3, energy_mwh=1.0, enable_q_control=True),
        make_renewable_bundle(case, [30, 14], capacity_mw=0.5, cf_profiles=np.full(4, 0.8)),
        make_flexload_bundle(case, [14, 6, 9], cap_curtail_mw=0.2, horizon=(2, 3, 3)),
    )
    states = tuple(b.reset(jr.PRNGKey(k)) for k, b in enumerate(bundles))
    rng = np.random.default_rng(3)
    ctx = {"time_step": jnp.asarray(0, jnp.int32)}
    step_all = jax.jit(lambda states, action: step_bundles(bundles, states, action, ctx, case.n_nodes))
    for _ in range(3):
        action = jnp.asarray(rng.uniform(-1, 1, sum(b.action_dim for b in bundles)), jnp.float32)
        out = step_all(states, action)
        p_ref, q_ref = np.zeros(case.n_nodes), np.zeros(case.n_nodes)
        offset = 0
        for b, s in zip(bundles, states):
            _, p, q, _, _ = _bundle_step(b, s, action[offset : offset + b.action_dim])
            offset += b.action_dim
            np.add.at(p_ref, np.asarray(b.bus_idx), np.asarray(p, np.float64))
            np.add.at(q_ref, np.asarray(b.bus_idx), np.asarray(q, np.float64))
        assert np.abs(p_ref).sum() > 0 and np.abs(q_ref).sum() > 0
        np.testing.assert_allclose(np.asarray(out.p_bus_mw), p_ref, atol=1e-6)
        np.testing.assert_allclose(np.asarray(out.q_bus_mvar), q_ref, atol=1e-6)
        states = out.states
