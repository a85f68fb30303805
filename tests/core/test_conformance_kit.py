"""The conformance kit must fail on envs that break the contract."""

import jax.numpy as jnp
import pytest


def _broken(cls_name, **overrides):
    from toy_env import ToyEnv

    return type(cls_name, (ToyEnv,), overrides)()


def test_kit_rejects_wrong_cost_length(toy):
    from powerzoojax.testing import check_env_api

    _, params = toy
    env = _broken("TwoNames", constraint_names=lambda self, p: ("a", "b"))
    with pytest.raises(AssertionError, match="len\\(constraint_names\\)"):
        check_env_api(env, params)


def test_kit_rejects_reset_that_reuses_the_step_key(toy):
    from toy_env import ToyEnv

    from powerzoojax.core import select_tree
    from powerzoojax.testing import check_env_api

    _, params = toy

    class ReusesKey(ToyEnv):
        def step(self, key, state, action, params):
            obs, nxt, r, c, d, info = super().step(key, state, action, params)
            _, fresh = self.reset(key, params)  # wrong: the transition key itself
            nxt = select_tree(d, fresh, nxt)
            return self._obs(nxt, params), nxt, r, c, d, info

    with pytest.raises(AssertionError, match="terminal step vs reset"):
        check_env_api(ReusesKey(), params)


def test_kit_rejects_unexpected_float_dtype(toy):
    from powerzoojax.testing import check_env_api

    env, params = toy
    with pytest.raises(AssertionError, match="expected one of"):
        check_env_api(env, params, float_dtypes=(jnp.float16,))


def test_kit_detects_retracing(toy):
    from toy_env import ToyEnv, ToyParams

    from powerzoojax.testing import check_no_retrace

    env, params = toy
    # Params whose variants change a static field force a retrace: the kit must say so.
    variant = ToyParams(drift=params.drift, max_steps=params.max_steps + 1)
    with pytest.raises(AssertionError, match="traced 2 times"):
        check_no_retrace(env, params, param_variants=[variant])
    del ToyEnv


def test_kit_deterministic_env_flagged_when_claimed_stochastic(toy):
    from toy_env import ToyEnv

    import jax.random as jr

    from powerzoojax.testing import check_env_api

    _, params = toy

    class Deterministic(ToyEnv):
        def reset(self, key, params):
            return super().reset(jr.PRNGKey(0), params)

        def step(self, key, state, action, params):
            return super().step(jr.PRNGKey(0), state, action, params)

    with pytest.raises(AssertionError, match="different keys gave identical"):
        check_env_api(Deterministic(), params, stochastic=True)
