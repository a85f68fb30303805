"""Fixtures of the RL tests (powerzoojax is imported inside fixtures, never at module level)."""

import pytest


@pytest.fixture(scope="session")
def tiny_config():
    """A PPO config small enough for the default suite (a few updates on few envs)."""
    from powerzoojax.rl import TrainConfig

    return TrainConfig(
        total_timesteps=4 * 8 * 16, num_envs=8, n_steps=16, n_epochs=2, n_minibatches=2,
        hidden_dims=(16, 16), eval_freq=0,
    )


@pytest.fixture(scope="session")
def case5_log(trans5):
    from powerzoojax.rl import LogWrapper

    env, params = trans5
    return LogWrapper(env, params)


@pytest.fixture(scope="session")
def case5_safe(trans5):
    from powerzoojax.rl import SafeRLWrapper

    env, params = trans5
    return SafeRLWrapper(env, params, selected_names=("thermal_overload",), cost_thresholds=(0.0,))
