"""powerzoojax.testing's strategies and invariant checks, on a small battery env of a user's.

The env is written here as a user would write one: it declares its state-of-charge law
through ``physics_invariants``. A faulty variant that forgets to clip the SOC must be
caught by the checks and shrunk by hypothesis to a short, plain counterexample.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jaxtyping import Array, Float

from powerzoojax.core import Box, Discrete, Environment, EnvParams, EnvState, MultiDiscrete, make_box
from powerzoojax.testing import Invariant, Violation, assert_invariants, check_invariants, env_property_test
from powerzoojax.testing import strategies as pst


class ToyBatteryState(EnvState):
    soc: Float[Array, ""]


class ToyBatteryParams(EnvParams):
    capacity_mwh: Float[Array, ""]
    power_mw: Float[Array, ""]


class ToyBattery(Environment):
    """A battery charged at ``action · power_mw``; ``clip=False`` is the bug under test."""

    clip: bool = eqx.field(static=True, default=True)

    def reset_env(self, key, params):
        state = ToyBatteryState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False), soc=jnp.asarray(0.5, jnp.float32))
        return state.soc[None], state

    def step_env(self, key, state: ToyBatteryState, action, params: ToyBatteryParams):  # pyright: ignore[reportIncompatibleMethodOverride]
        delta = action[0] * params.power_mw * params.delta_t_hours / params.capacity_mwh
        soc = state.soc + delta
        soc = jnp.clip(soc, 0.0, 1.0) if self.clip else soc
        t = state.time_step + 1
        done = t >= params.max_steps
        nxt = ToyBatteryState(time_step=t, done=done, soc=soc)
        return nxt.soc[None], nxt, jnp.asarray(-jnp.abs(delta), jnp.float32), jnp.zeros((0,), jnp.float32), done, {}

    def observation_space(self, params):
        return make_box(-np.inf, np.inf, (1,))

    def action_space(self, params):
        return make_box(-1.0, 1.0, (1,))

    def physics_invariants(self, params):
        def soc_outside(traj, params):
            soc = np.asarray(traj.next_state.soc, np.float64)
            return np.maximum(np.maximum(-soc, soc - 1.0), 0.0)

        return (Invariant("soc_bounds", soc_outside, 1e-6, "SOC within [0, 1]"),)


# Hypothesis's explain phase re-runs a shrunk failure up to a hundred times per drawn
# argument to report which ones could vary freely; the toy env ignores its key, so every
# key fails alike and all hundred runs happen. The tests here check that a failure is
# found and shrunk, which the other phases do.
_FIND_AND_SHRINK = tuple(phase for phase in Phase if phase is not Phase.explain)


PARAMS = ToyBatteryParams(capacity_mwh=jnp.asarray(1.0), power_mw=jnp.asarray(1.0), max_steps=4, delta_t_hours=0.5)


def test_a_correct_env_breaks_no_law_over_episodes():
    acts = jnp.ones((9, 1))  # charge flat out across two auto-resets
    assert check_invariants(ToyBattery(), PARAMS, jax.random.PRNGKey(0), acts) == []


def test_the_faulty_env_is_caught_at_the_step_that_leaves_the_band():
    violations = check_invariants(ToyBattery(clip=False), PARAMS, jax.random.PRNGKey(0), jnp.ones((4, 1)))
    # SOC 0.5 -> 1.0 -> 1.5: the second step leaves the band; the fourth is terminal (reset).
    assert [(v.name, v.step) for v in violations] == [("soc_bounds", 1), ("soc_bounds", 2)]
    assert isinstance(violations[0], Violation) and "residual 0.5" in str(violations[0])
    with pytest.raises(AssertionError, match="soc_bounds at step 1"):
        assert_invariants(ToyBattery(clip=False), PARAMS, jax.random.PRNGKey(0), jnp.ones((4, 1)))


def test_the_shared_contract_is_checked_without_any_declared_law():
    class LateDone(ToyBattery):
        def step(self, key, state, action, params):
            obs, nxt, r, c, done, info = super().step(key, state, action, params)
            return obs, nxt, r, c, jnp.asarray(False), info  # never reports the episode end

    violations = check_invariants(LateDone(), PARAMS, jax.random.PRNGKey(0), jnp.zeros((4, 1)), physics=False)
    assert [(v.name, v.step) for v in violations] == [("done_at_max_steps", 3)]


def test_non_finite_output_is_reported_by_name():
    # A zero capacity makes the SOC update 0/0 (non-finite actions themselves are replaced
    # by the env contract, so they cannot be the source).
    broken = eqx.tree_at(lambda p: p.capacity_mwh, PARAMS, jnp.asarray(0.0))
    violations = check_invariants(ToyBattery(), broken, jax.random.PRNGKey(0), jnp.zeros((3, 1)))
    names = {v.name for v in violations}
    assert {"obs_finite", "reward_finite", "state_finite"} <= names


def test_hypothesis_finds_and_shrinks_the_soc_bug():
    """The property test fails on the faulty env; the shrunk example is three full discharges."""
    found = []
    faulty = ToyBattery(clip=False)  # one env object: every example reuses its compiled rollout

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None, phases=_FIND_AND_SHRINK)  # pyright: ignore[reportArgumentType]
    @given(acts=pst.action_sequences(faulty.action_space(PARAMS), 3), key=pst.prng_keys())
    def prop(acts, key):
        try:
            assert_invariants(faulty, PARAMS, key, jnp.asarray(acts))
        except AssertionError:
            found.append(np.asarray(acts))
            raise

    with pytest.raises(AssertionError, match="soc_bounds"):
        prop()
    shrunk = found[-1]
    # Minimal failing input: the low end of the action space (full discharge) long enough
    # to go below zero, the other entries at the space's low end too.
    assert shrunk.shape == (3, 1) and np.all(shrunk == -1.0)


@env_property_test(lambda: (ToyBattery(), PARAMS), max_examples=8)
def test_env_property_test_runs_the_checks_and_the_users_body(env, params, trajectory):
    assert trajectory.reward.shape == (params.max_steps + 1,)
    assert np.all((trajectory.next_state.soc >= 0) & (trajectory.next_state.soc <= 1))


def test_env_property_test_fails_a_faulty_env():
    @env_property_test(lambda: (ToyBattery(clip=False), PARAMS), max_examples=30, hypothesis_settings={"phases": _FIND_AND_SHRINK})
    def test_faulty():
        pass

    with pytest.raises(AssertionError, match="soc_bounds"):
        test_faulty()

    # The settings given replace the decorator's: two examples, not ten.
    runs = []

    @env_property_test(lambda: (ToyBattery(), PARAMS), max_examples=10, hypothesis_settings={"max_examples": 2})
    def test_correct():
        runs.append(1)

    test_correct()
    assert len(runs) == 2


def test_env_property_test_draws_params_and_finds_the_ones_that_break_a_law():
    """``vary_params`` draws the params each example runs on: the body sees them, and a
    capacity small enough for a step to overshoot the band is found by the unclipped env."""
    seen = []

    def capacities(params):
        return st.floats(0.2, 4.0).map(lambda c: eqx.tree_at(lambda p: p.capacity_mwh, params, jnp.asarray(c, jnp.float32)))

    @env_property_test(lambda: (ToyBattery(), PARAMS), vary_params=capacities, max_examples=6)
    def test_drawn(env, params, trajectory):
        seen.append(float(params.capacity_mwh))

    test_drawn()
    assert len(set(seen)) > 1 and all(0.2 <= c <= 4.0 for c in seen)

    # At 4 MWh a half-hour at 1 MW moves the SOC by 0.125: an episode's three steps before
    # the reset stay inside the band from 0.5, so only smaller drawn capacities break it.
    @env_property_test(
        lambda: (ToyBattery(clip=False), PARAMS), vary_params=capacities, max_examples=40,
        hypothesis_settings={"phases": _FIND_AND_SHRINK},
    )
    def test_faulty():
        pass

    with pytest.raises(AssertionError, match="soc_bounds"):
        test_faulty()


def test_property_tests_reuse_one_compiled_program():
    from powerzoojax.testing._checks import _programs

    env = ToyBattery()
    for seed in range(3):
        acts = jax.random.uniform(jax.random.PRNGKey(seed), (5, 1), minval=-1, maxval=1)
        params = eqx.tree_at(lambda p: p.power_mw, PARAMS, jnp.asarray(1.0 + seed))
        assert check_invariants(env, params, jax.random.PRNGKey(seed), acts) == []
    assert _programs(env, PARAMS).counts["rollout"] == 1


def test_weakly_typed_actions_share_the_compiled_rollout():
    from powerzoojax.testing import record_trajectory
    from powerzoojax.testing._checks import _programs

    env = ToyBattery(clip=True)
    weak = jax.lax.broadcast(jnp.asarray(0.25), (5, 1))  # built from a Python scalar
    assert weak.aval.weak_type
    for acts in (weak, np.full((5, 1), 0.25, np.float32), jnp.full((5, 1), 0.25)):
        traj, _ = record_trajectory(env, PARAMS, jax.random.PRNGKey(0), acts)
        assert traj.action.dtype == np.float32
    assert _programs(env, PARAMS).counts["rollout"] == 1


# --- strategies ------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_action_strategies_draw_inside_the_space_unless_asked_otherwise(data):
    box = Box(low=jnp.asarray([-1.0, 0.0]), high=jnp.asarray([1.0, 5.0]), shape=(2,))
    space = data.draw(st.sampled_from([box, Discrete(n=3), MultiDiscrete(nvec=jnp.asarray([2, 4]), n_dims=2, shape=(2,))]))
    seq = data.draw(pst.action_sequences(space, 4))
    assert seq.shape == (4, *space.shape)
    assert all(bool(space.contains(jnp.asarray(a))) for a in seq)
    bad = data.draw(pst.action_sequences(space, 4, invalid=True))
    assert not all(bool(space.contains(jnp.asarray(a))) for a in bad)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_cases_outages_and_profiles_are_valid(data):
    from powerzoojax.testing.strategies import _connected_without

    case = data.draw(pst.cases(ids=("5", "14")))
    mask = data.draw(pst.connected_line_outages(case, max_outages=2))
    assert mask.shape == (case.n_lines,) and mask.sum() <= 2
    assert _connected_without(case, mask)
    profiles = data.draw(pst.load_profiles(case, st.integers(1, 6), scale=(0.9, 1.0)))
    d_min, d_max = np.asarray(case.load_d_min), np.asarray(case.load_d_max)
    assert profiles.dtype == np.float32 and profiles.shape[1] == case.n_loads and 1 <= profiles.shape[0] <= 6
    assert np.all(np.isfinite(profiles))
    assert np.all(profiles >= 0.9 * np.minimum(d_min, d_max) - 1e-3) and np.all(profiles <= d_max + 1e-3)


def test_outage_strategy_never_islands_a_bus():
    from powerzoojax.case import load_case
    from powerzoojax.testing.strategies import _connected_without

    case = load_case("14")
    islanding = [k for k in range(case.n_lines) if not _connected_without(case, np.eye(case.n_lines, dtype=bool)[k])]
    assert islanding, "case 14 has a radial line (bus 8 hangs on line 7-8)"

    @settings(max_examples=40, deadline=None)
    @given(pst.connected_line_outages(case, max_outages=1))
    def prop(mask):
        assert not mask[islanding].any()

    prop()


def test_keyword_strategies_build_params():
    from hypothesis import find

    kw = find(pst.trans_params_kwargs(), lambda kw: True)
    assert kw["physics"] == 0 and kw["solver_mode"] == 0 and kw["max_steps"] == 4  # shrinks to the default mode
    soc = find(pst.market_params_kwargs(), lambda kw: True)["battery_soc_range"]
    assert 0.0 <= soc[0] < soc[1] <= 0.9


@settings(max_examples=10, deadline=None)
@given(pst.marl_action_dicts({"a": make_box(-1.0, 1.0, (2,)), "b": Discrete(n=2)}, invalid_agents=1))
def test_marl_action_dicts_have_one_invalid_agent(actions):
    spaces = {"a": make_box(-1.0, 1.0, (2,)), "b": Discrete(n=2)}
    assert set(actions) == {"a", "b"}
    assert sum(not bool(spaces[k].contains(jnp.asarray(v))) for k, v in actions.items()) == 1


def test_bad_strategy_arguments_are_named():
    from powerzoojax.case import load_case

    with pytest.raises(ValueError, match="shape must be"):
        pst.load_profiles(load_case("5"), 3, shape="bogus")
    with pytest.raises(ValueError, match="n_steps must be >= 1"):
        pst.action_sequences(make_box(-1.0, 1.0, (1,)), 0)
    with pytest.raises(ValueError, match="no reference case"):
        pst.case_ids("transmission", max_buses=2)



def test_strategies_leave_pythons_random_state_alone():
    """Nothing the strategies call while hypothesis draws may touch the global `random`
    state (hypothesis flags it with a HypothesisDeprecationWarning). The suite imports the
    library under beartype (the jaxtyping import hook in pyproject's addopts), which samples
    one item of a `list[float]`-style argument with `random`: helpers called inside a draw
    must take arrays or bare containers, and library code (case loading, the shipped
    profiles) must run when the strategy is built, not when it is drawn from."""
    import warnings

    from hypothesis.errors import HypothesisDeprecationWarning

    from powerzoojax.testing.strategies import _cached_case, _shipped_shape

    _cached_case.cache_clear()  # so the cases and profiles are built again in this test
    _shipped_shape.cache_clear()
    box = make_box(-1.0, 1.0, (3,))

    @settings(max_examples=10, deadline=None, database=None)
    @given(data=st.data())
    def draw_everything(data):
        case = data.draw(pst.cases(ids=("5", "14")))
        data.draw(pst.cases())
        data.draw(pst.connected_line_outages(case, max_outages=2))
        data.draw(pst.load_profiles(case, st.integers(1, 3), shape="shipped", case_id="14" if case.n_nodes == 14 else "5"))
        data.draw(pst.action_sequences(box, 2))
        data.draw(pst.action_sequences(box, 2, invalid=True))
        data.draw(pst.actions(MultiDiscrete(nvec=jnp.asarray([2, 4]), n_dims=2, shape=(2,))))
        data.draw(pst.marl_action_dicts({"a": box, "b": Discrete(n=2)}, invalid_agents=1))
        data.draw(pst.prng_keys())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw_everything()
    flagged = [str(w.message) for w in caught if issubclass(w.category, HypothesisDeprecationWarning)]
    assert not flagged, flagged[:3]
