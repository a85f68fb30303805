"""The env contract of `Environment`: an env writes `reset_env` / `step_env`, and the base's
`reset` / `step` check the input and auto-reset, once, for it."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from jaxtyping import Array, Float

from powerzoojax.core import Box, Environment, EnvParams, EnvState, auto_reset, make_box, stack_costs


class CounterState(EnvState):
    level: Float[Array, ""]


class CounterParams(EnvParams):
    gain: Float[Array, ""]


class OtherParams(EnvParams):
    pass


def counter_params(max_steps: int = 3) -> CounterParams:
    return CounterParams(gain=jnp.asarray(1.0, jnp.float32), max_steps=max_steps)


class Counter(Environment):
    """level' = level + gain · (a0 + a1); reset draws the level from the key; entry 2 of the
    action is never read. Counts, on the host, how often its own methods are traced."""

    calls: dict = None  # type: ignore[assignment]

    def __init__(self, layout: str | None = None):
        self.calls = {"reset_env": 0, "step_env": 0, "layout": layout}

    def observation_space(self, params: CounterParams) -> Box:
        return make_box(-np.inf, np.inf, (2,))

    def action_space(self, params: CounterParams) -> Box:
        return make_box(-1.0, 1.0, (3,))

    def constraint_names(self, params: CounterParams) -> tuple[str, ...]:
        return ("high",)

    def ignored_action_entries(self, params: CounterParams) -> np.ndarray:
        return np.array([False, False, True])

    def action_layout(self, params: CounterParams) -> str | None:
        return self.calls["layout"]

    def _obs(self, state: CounterState) -> Float[Array, "2"]:
        return jnp.stack([state.level, state.time_step.astype(jnp.float32)])

    def reset_env(self, key, params: CounterParams):
        self.calls["reset_env"] += 1
        state = CounterState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False), level=jr.uniform(key))
        return self._obs(state), state

    def step_env(self, key, state: CounterState, action, params: CounterParams):
        self.calls["step_env"] += 1
        level = state.level + params.gain * (action[0] + action[1]) + 0.0 * action[2]
        t = state.time_step + 1
        nxt = CounterState(time_step=t, done=t >= params.max_steps, level=level)
        info = {"is_safe": jnp.asarray(True), "seen_action": action}
        return self._obs(nxt), nxt, -level, stack_costs(jnp.maximum(level, 0.0)), nxt.done, info


def _started(env: Environment, params: EnvParams) -> tuple[Array, CounterState]:
    obs, state = env.reset(jr.PRNGKey(0), params)
    assert isinstance(state, CounterState)
    return obs, state


def test_the_params_class_comes_from_reset_env_and_step_env():
    env, params = Counter(), counter_params()
    _, state = _started(env, params)
    with pytest.raises(TypeError, match=r"^Counter.reset: params must be CounterParams .* got OtherParams$"):
        env.reset(jr.PRNGKey(0), OtherParams())
    with pytest.raises(TypeError, match=r"^Counter.step: params must be CounterParams .* got OtherParams$"):
        env.step(jr.PRNGKey(0), state, jnp.zeros(3), OtherParams())


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ([0.1, 0.2, 0.3], r"Counter.step: action must be an array of shape \(3,\), got a list of 3 entries"),
        ((0.1, 0.2, 0.3), r"Counter.step: action must be an array of shape \(3,\), got a tuple of 3 entries"),
        (jnp.zeros(2), r"Counter.step: action has shape \(2,\) but the action space expects shape \(3,\)"),
    ],
)
def test_a_reset_env_step_env_env_gets_the_shape_checks(action, message):
    env, params = Counter(), counter_params()
    _, state = _started(env, params)
    with pytest.raises(ValueError, match=message) as err:
        env.step(jr.PRNGKey(1), state, action, params)
    assert "\n" not in str(err.value)


def test_the_layout_hint_is_named_in_the_shape_error():
    env, params = Counter(layout="[up, also_up, unused]"), counter_params()
    _, state = _started(env, params)
    with pytest.raises(
        ValueError, match=r"^Counter.step: action must have shape \(3,\) = \[up, also_up, unused\], got \(4,\)$"
    ):
        env.step(jr.PRNGKey(1), state, jnp.zeros(4), params)
    # A list is refused as such, layout or not.
    with pytest.raises(ValueError, match=r"got a list of 4 entries"):
        env.step(jr.PRNGKey(1), state, [0.0] * 4, params)


def test_step_env_sees_a_clean_action_and_the_flags_are_set():
    env, params = Counter(), counter_params()
    _, state = _started(env, params)
    _, nxt, _, _, _, info = env.step(jr.PRNGKey(1), state, jnp.array([jnp.nan, 0.25, jnp.inf]), params)
    # NaN -> neutral 0; the ignored entry takes its neutral value before the check, so it is not reported.
    np.testing.assert_array_equal(np.asarray(info["seen_action"]), np.array([0.0, 0.25, 0.0], np.float32))
    assert bool(info["invalid_action"]) and not bool(info["is_safe"])
    assert np.isclose(float(nxt.level), float(state.level) + 0.25)
    *_, clean = env.step(jr.PRNGKey(1), state, jnp.array([0.1, 0.2, jnp.nan]), params)
    assert not bool(clean["invalid_action"]) and bool(clean["is_safe"])


def test_auto_reset_happens_once_with_the_split_key():
    env, params = Counter(), counter_params(max_steps=2)
    _, state = _started(env, params)
    key = jr.PRNGKey(7)
    _, state, *_ = env.step(jr.PRNGKey(6), state, jnp.zeros(3), params)
    env.calls.update(reset_env=0, step_env=0)
    obs, last, _, _, done, _ = env.step(key, state, jnp.array([0.5, 0.5, 0.0]), params)
    # One step: one transition and one reset.
    assert (env.calls["step_env"], env.calls["reset_env"]) == (1, 1)
    assert bool(done)
    fresh_obs, fresh = env.reset(jr.split(key)[1], params)
    assert isinstance(fresh, CounterState)
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(fresh_obs))
    for a, b in zip(jax.tree.leaves(last), jax.tree.leaves(fresh)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The function form gives the same state.
    ended = CounterState(time_step=jnp.asarray(2, jnp.int32), done=jnp.asarray(True), level=jnp.asarray(9.0))
    kept = CounterState(time_step=jnp.asarray(1, jnp.int32), done=jnp.asarray(False), level=jnp.asarray(9.0))
    assert float(auto_reset(env, key, ended, params).level) == float(fresh.level)
    assert float(auto_reset(env, key, kept, params).level) == 9.0


def test_no_gradient_crosses_the_episode_boundary():
    env, params = Counter(), counter_params(max_steps=1)
    _, state = _started(env, params)

    def next_level(level):
        s = CounterState(time_step=state.time_step, done=state.done, level=level)
        return env.step(jr.PRNGKey(1), s, jnp.zeros(3), params)[1].level

    assert float(jax.grad(next_level)(jnp.asarray(0.3))) == 0.0  # terminal: the fresh episode's level
    within = counter_params(max_steps=5)
    grad = jax.grad(lambda lv: env.step(jr.PRNGKey(1), CounterState(time_step=state.time_step, done=state.done, level=lv), jnp.zeros(3), within)[1].level)
    assert float(grad(jnp.asarray(0.3))) == 1.0


class Plain(Environment):
    def observation_space(self, params: EnvParams) -> Box:
        return make_box(-np.inf, np.inf, (1,))

    def action_space(self, params: EnvParams) -> Box:
        return make_box(-1.0, 1.0, (1,))


def test_an_env_without_reset_env_or_step_env_says_what_to_write():
    env = Plain()
    with pytest.raises(NotImplementedError, match=r"Plain implements no reset_env\(key, params\)"):
        env.reset(jr.PRNGKey(0), EnvParams())
    state = EnvState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False))
    with pytest.raises(NotImplementedError, match=r"Plain implements no step_env\(key, state, action, params\)"):
        env.step(jr.PRNGKey(0), state, jnp.zeros(1), EnvParams())


class OwnStep(Plain):
    """An env written before reset_env/step_env: its own reset and step run as written."""

    def reset(self, key, params):
        state = EnvState(time_step=jnp.asarray(0, jnp.int32), done=jnp.asarray(False))
        return jnp.zeros(1), state

    def step(self, key, state, action, params):
        t = state.time_step + 1
        nxt = auto_reset(self, key, EnvState(time_step=t, done=t >= params.max_steps), params)
        return jnp.asarray(action, jnp.float32), nxt, jnp.zeros(()), jnp.zeros((0,)), t >= params.max_steps, {}


def test_an_env_that_overrides_reset_and_step_keeps_its_own():
    env, params = OwnStep(), EnvParams(max_steps=2)
    _, state = env.reset(jr.PRNGKey(0), params)
    # Its own step: no shape check, no invalid_action flag, the action passed through as given.
    obs, state, _, _, done, info = env.step(jr.PRNGKey(1), state, jnp.array([jnp.nan, 2.0]), params)
    assert info == {} and obs.shape == (2,) and not bool(done)
    _, state, _, _, done, _ = env.step(jr.PRNGKey(2), state, jnp.zeros(1), params)
    assert bool(done) and int(state.time_step) == 0


class ObservedCounter(Counter):
    """`Counter` that declares its observation a function of its state."""

    def observe(self, state: CounterState, params: CounterParams) -> Float[Array, "2"]:
        return 2.0 * self._obs(state)


def test_an_env_with_observe_is_observed_on_the_state_step_returns():
    env, params = ObservedCounter(), counter_params(max_steps=2)
    _, state = _started(env, params)
    step = jax.jit(env.step)
    for t in range(4):  # across an auto-reset
        obs, state, *_ = step(jr.PRNGKey(t), state, jnp.array([0.3, -0.1, 0.0]), params)
        assert isinstance(state, CounterState)
        np.testing.assert_array_equal(np.asarray(obs), np.asarray(env.observe(state, params)))
    # Without observe, step's observation is step_env's (here half of observe's).
    plain_obs, plain_state, *_ = jax.jit(Counter().step)(jr.PRNGKey(9), state, jnp.zeros(3), params)
    assert isinstance(plain_state, CounterState)
    np.testing.assert_array_equal(np.asarray(plain_obs), np.asarray(Counter()._obs(plain_state)))
