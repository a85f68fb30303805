"""The env contract's input guards (core): non-finite actions, wrong shapes and params
classes, and hashing of modules that hold arrays."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

from non_finite_actions import check_non_finite_actions


@pytest.fixture(scope="module")
def toy():
    from toy_env import ToyEnv, make_toy_params

    return ToyEnv(), make_toy_params(max_steps=3)


def test_non_finite_action_entries_are_replaced_and_flagged(toy):
    check_non_finite_actions(*toy)


def test_finite_action_sets_the_flag_false(toy):
    env, params = toy
    _, state = env.reset(jr.PRNGKey(0), params)
    *_, info = env.step(jr.PRNGKey(1), state, jnp.array([0.5]), params)
    assert info["invalid_action"].dtype == jnp.bool_ and not bool(info["invalid_action"])


def test_neutral_value_is_zero_clipped_into_the_bounds():
    from powerzoojax.core._guard import neutral_action, replace_non_finite

    neutral = neutral_action(jnp.array([-1.0, 0.2, -3.0]), jnp.array([1.0, 1.0, -2.0]), (3,))
    np.testing.assert_array_equal(np.asarray(neutral), np.float32([0.0, 0.2, -2.0]))
    clean, invalid = replace_non_finite(jnp.array([jnp.nan, 0.5, -jnp.inf]), neutral)
    np.testing.assert_array_equal(np.asarray(clean), [0.0, 0.5, -2.0])
    assert bool(invalid)
    ints, flag = replace_non_finite(jnp.array([1, 2]), 0)
    assert ints.dtype == jnp.int32 and not bool(flag)


def test_gradient_flows_through_finite_entries(toy):
    env, params = toy
    _, state = env.reset(jr.PRNGKey(0), params)
    grad = jax.grad(lambda a: env.step(jr.PRNGKey(1), state, a, params)[2])(jnp.array([0.2]))
    assert bool(jnp.all(jnp.isfinite(grad))) and float(jnp.abs(grad[0])) > 0


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (0.5, r"ToyEnv.step: action has shape \(\) but the action space expects shape \(1,\)"),
        ([0.5], r"ToyEnv.step: action must be an array of shape \(1,\), got a list of 1 entries"),
        (jnp.zeros(3), r"ToyEnv.step: action has shape \(3,\) but the action space expects shape \(1,\)"),
        ("up", r"ToyEnv.step: action must be an array of shape \(1,\), got str"),
    ],
)
def test_malformed_action_raises_one_line(toy, action, message):
    env, params = toy
    _, state = env.reset(jr.PRNGKey(0), params)
    with pytest.raises(ValueError, match=message) as err:
        env.step(jr.PRNGKey(1), state, action, params)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("method", ["reset", "step"])
def test_wrong_params_class_raises_one_line(toy, method):
    env, params = toy
    _, state = env.reset(jr.PRNGKey(0), params)
    wrong = {"max_steps": 3}
    call = (lambda: env.reset(jr.PRNGKey(0), wrong)) if method == "reset" else (
        lambda: env.step(jr.PRNGKey(1), state, jnp.zeros(1), wrong)
    )
    with pytest.raises(TypeError, match=rf"ToyEnv.{method}: params must be ToyParams .* got dict") as err:
        call()
    assert "\n" not in str(err.value)


def test_structural_hash_ignores_array_values():
    import equinox as eqx

    from powerzoojax.core._guard import structural_hash

    class Holder(eqx.Module):
        values: jax.Array
        label: str = eqx.field(static=True)

    a, b = Holder(jnp.zeros(3), "x"), Holder(jnp.ones(3), "x")
    assert structural_hash(a) == structural_hash(b)
    assert structural_hash(a) != structural_hash(Holder(jnp.zeros(4), "x"))


def test_ignored_entries_take_the_neutral_value_and_a_bad_mask_is_named():
    from powerzoojax.core._guard import drop_ignored_entries

    action, neutral = jnp.array([1.0, 2.0]), jnp.array([0.0, 0.5])
    np.testing.assert_array_equal(np.asarray(drop_ignored_entries(action, neutral, np.array([True, False]), "E.step")), [0.0, 2.0])
    np.testing.assert_array_equal(np.asarray(drop_ignored_entries(action, neutral, np.array([True, True]), "E.step")), [0.0, 0.5])
    assert drop_ignored_entries(action, neutral, None, "E.step") is action
    with pytest.raises(ValueError, match=r"E\.step: ignored_action_entries must be None or a boolean array of the action's shape \(2,\), got int64 of shape \(2,\)"):
        drop_ignored_entries(action, neutral, np.array([1, 0]), "E.step")
    with pytest.raises(ValueError, match=r"shape \(2,\), got bool of shape \(3,\)"):
        drop_ignored_entries(action, neutral, np.ones(3, bool), "E.step")
