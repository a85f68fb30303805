"""The PettingZoo adapter: PettingZoo's own API and seed tests on GridMARLEnv, DistGridMARLEnv
and MarketMARLEnv, and its contract (agents, spaces, errors, rendering) on a core-only team."""

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pettingzoo = pytest.importorskip("pettingzoo")

MAX_STEPS = 3
# id -> overrides: each adapter family on a small case.
PETTINGZOO_IDS = {
    "GridMARL-case5-v0": {"max_steps": MAX_STEPS},
    "DistGridMARL-case33bw-v0": {"max_steps": MAX_STEPS},
    "MarketMARL-case5-v0": {"max_steps": MAX_STEPS},
}
REQUIRES = {"GridMARL": "powerzoojax.grid", "DistGridMARL": "powerzoojax.grid", "MarketMARL": "powerzoojax.market"}


def make_team():
    """Two agents sharing the toy env of tests/toy_env.py: the env moves by their mean action."""
    import jax.numpy as jnp
    from powerzoojax.rl.marl import MARLState, MultiAgentEnvironment
    from toy_env import ToyEnv, make_toy_params

    class ToyTeam(MultiAgentEnvironment):
        env: ToyEnv

        def __init__(self):
            self.env = ToyEnv()
            self.params = make_toy_params(max_steps=MAX_STEPS)
            self.agents = ("left", "right")

        @property
        def obs_dim(self):
            return 2

        @property
        def action_dim(self):
            return 1

        def reset_env(self, key, params):
            obs, state = self.env.reset(key, params)
            return jnp.stack([obs, obs]), MARLState(state)

        def step_env(self, key, state, actions, params):
            obs, env_state, reward, _, done, info = self.env.step(key, state.env_state, jnp.mean(actions, axis=0), params)
            return jnp.stack([obs, -obs]), MARLState(env_state), jnp.stack([reward, 2.0 * reward]), done, info

    return ToyTeam()


@pytest.fixture(scope="module")
def team():
    return make_team()


def test_team_passes_the_parallel_api_and_seed_tests(team):
    from pettingzoo.test import parallel_api_test, parallel_seed_test, seed_test
    from pettingzoo.utils.conversions import parallel_to_aec
    from powerzoojax.rl.adapters import PettingZooParallelEnv

    parallel_api_test(PettingZooParallelEnv(team), num_cycles=10)
    parallel_seed_test(lambda: PettingZooParallelEnv(team), num_cycles=10)
    seed_test(lambda: parallel_to_aec(PettingZooParallelEnv(team)), num_cycles=10)


def test_agents_rewards_and_the_episode_end(team):
    from powerzoojax.rl.adapters import PettingZooParallelEnv

    env = PettingZooParallelEnv(team)
    assert env.possible_agents == ["left", "right"] and env.agents == []
    obs, infos = env.reset(seed=1)
    assert set(obs) == set(infos) == {"left", "right"}
    np.testing.assert_array_equal(obs["left"], obs["right"])
    assert env.observation_space("left") is env.observation_space("left")
    assert env.action_space("right").shape == (1,)
    actions = {"left": np.array([1.0], np.float32), "right": np.array([-1.0], np.float32)}
    for step in range(MAX_STEPS):
        obs, rewards, terms, truncs, infos = env.step(actions)
        assert rewards["right"] == pytest.approx(2.0 * rewards["left"])
        np.testing.assert_array_equal(obs["right"], -obs["left"])
        # The horizon is a time limit: every agent is truncated together, none terminated.
        assert truncs == {"left": step == MAX_STEPS - 1, "right": step == MAX_STEPS - 1}
        assert terms == {"left": False, "right": False}
        assert "cost_sum" in infos["left"]
    assert env.agents == []
    with pytest.raises(RuntimeError, match="no live agents"):
        env.step(actions)
    first, _ = env.reset(seed=1)
    again, _ = PettingZooParallelEnv(team).reset(seed=1)
    np.testing.assert_array_equal(first["left"], again["left"])


def test_bad_actions_and_agents_are_named(team):
    from powerzoojax.rl.adapters import PettingZooParallelEnv

    env = PettingZooParallelEnv(team)
    env.reset(seed=0)
    with pytest.raises(KeyError, match="actions missing for \\['right'\\], given for unknown agents \\['ghost'\\]"):
        env.step({"left": np.zeros(1), "ghost": np.zeros(1)})
    with pytest.raises(ValueError, match="action of 'left' has shape \\(2,\\), expected \\(1,\\)"):
        env.step({"left": np.zeros(2), "right": np.zeros(1)})
    with pytest.raises(KeyError, match="unknown agent 'ghost'"):
        env.action_space("ghost")


def test_single_agent_envs_are_refused_and_render_draws(team):
    from powerzoojax.rl.adapters import PettingZooParallelEnv
    from toy_env import ToyEnv

    with pytest.raises(TypeError, match="must be a multi-agent adapter.*got ToyEnv; wrap single-agent envs with GymnasiumEnv"):
        PettingZooParallelEnv(ToyEnv())
    env = PettingZooParallelEnv(team, render_mode="rgb_array")
    env.reset(seed=0)
    env.step({"left": np.zeros(1), "right": np.zeros(1)})
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape[2] == 3


@pytest.mark.parametrize("env_id", sorted(PETTINGZOO_IDS))
def test_registry_adapters_pass_pettingzoo_tests(env_id):
    pytest.importorskip(REQUIRES[env_id.split("-")[0]])
    from pettingzoo.test import parallel_api_test, parallel_seed_test, seed_test
    from pettingzoo.utils.conversions import parallel_to_aec
    from powerzoojax.envs import make
    from powerzoojax.rl.adapters import PettingZooParallelEnv

    marl, _ = make(env_id, **PETTINGZOO_IDS[env_id])  # built once; the adapters below share it

    def build():
        return PettingZooParallelEnv(marl, env_id=env_id)

    parallel_api_test(build(), num_cycles=2 * MAX_STEPS)
    parallel_seed_test(build, num_cycles=2 * MAX_STEPS)
    seed_test(lambda: parallel_to_aec(build()), num_cycles=2 * MAX_STEPS)
    assert build().possible_agents == list(marl.agents)


@pytest.mark.requires("powerzoojax.grid")
def test_make_pettingzoo_env_and_the_single_agent_pointer():
    from powerzoojax.rl.adapters import make_pettingzoo_env

    env = make_pettingzoo_env("GridMARL-case5-v0", max_steps=MAX_STEPS)
    assert env.possible_agents == [f"unit_{i}" for i in range(5)] and env.metadata["name"] == "GridMARL-case5-v0"
    with pytest.raises(TypeError, match="'DistGrid-case33bw-v0' is a single-agent id; use make_gymnasium_env"):
        make_pettingzoo_env("DistGrid-case33bw-v0")
