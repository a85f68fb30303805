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


# -- iteration counts (Environment.iteration_count_keys) --------------------------------


def test_kit_leaves_named_iteration_counts_out_of_cross_program_comparisons(toy):
    from toy_env import CountingToyEnv

    from powerzoojax.testing import check_env_api, check_no_retrace

    _, params = toy
    env = CountingToyEnv()  # solver_iterations is 3 op by op, 4 jitted, 5 vmapped
    check_env_api(env, params, stochastic=True)
    assert check_no_retrace(env, params) == {"reset": 1, "step": 1, "rollout": 1}


def test_kit_compares_an_unnamed_count_exactly(toy):
    from toy_env import CountingToyEnv

    from powerzoojax.testing import check_env_api

    _, params = toy
    with pytest.raises(AssertionError, match=r"eager step vs jit step: leaf \d+ \(\[5\]\['solver_iterations'\]\) differs: 3 vs 4"):
        check_env_api(CountingToyEnv(counts=()), params)


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ((0, 1, 1), r"eager step vs jit step: leaf \d+ \(\[5\]\['n_switches'\]\) differs: 0 vs 1"),
        ((1, 1, 2), r"vmap\(step\)\[0\] vs step: leaf \d+ \(\[5\]\['n_switches'\]\) differs: 2 vs 1"),
        ((0.0, 0.5, 0.5), r"eager step vs jit step: leaf \d+ \(\[5\]\['gap'\]\) differs"),
    ],
)
def test_kit_still_compares_every_other_info_key(toy, offsets, message):
    # Naming solver_iterations leaves every other key compared: integers exactly (between
    # eager and jit, and between vmap and single steps), floats within the tolerance.
    from toy_env import CountingToyEnv

    from powerzoojax.testing import check_env_api

    _, params = toy
    name = "gap" if isinstance(offsets[0], float) else "n_switches"
    with pytest.raises(AssertionError, match=message):
        check_env_api(CountingToyEnv(extra=((name, offsets),)), params)


def test_kit_rejects_a_named_count_that_is_missing_or_not_an_integer(toy):
    from toy_env import CountingToyEnv

    from powerzoojax.testing import check_env_api

    _, params = toy
    with pytest.raises(AssertionError, match=r"iteration_count_keys names 'sweeps', which info lacks"):
        check_env_api(CountingToyEnv(counts=("solver_iterations", "sweeps")), params)
    with pytest.raises(AssertionError, match=r"names 'gap': an iteration count must be an integer, got float32"):
        check_env_api(CountingToyEnv(counts=("solver_iterations", "gap"), extra=(("gap", (0.5, 0.5, 0.5)),)), params)
