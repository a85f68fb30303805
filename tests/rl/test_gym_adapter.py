"""The Gymnasium adapters: spaces, seeding, check_env, the vector env's next-step autoreset and
its one-call batched step, rendering, and check_env over the registry's single-agent ids.

The toy env (tests/toy_env.py) needs pzj-core only; the registry ids carry ``requires``.
Compiled programs are shared across tests: the adapters' kernels are module-level, keyed by
the env and the params' structure.
"""

import sys
import types
import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

# The default run: one id per env class (the smallest case) and each TransGrid network model
# on case 5 (dcopf_ac combines the dcopf and ac models; Wind is Solar's class, BidBasedMarket
# CostBasedMarket's base). The `slow` run: every other single-agent id.
REPRESENTATIVE_IDS = [
    "TransGrid-case5-dc-v0", "TransGrid-case5-dcopf-v0", "TransGrid-case5-ac-v0", "TransGrid-case5-acopf-v0",
    "UnitCommitment-case14-v0", "DistGrid-case33bw-v0", "DistGrid3Phase-case123-v0", "DataCenter-v0",
    "DataCenterMicrogrid-v0", "Battery-v0", "FlexLoad-v0", "Vehicle-v0", "Solar-v0", "CostBasedMarket-case5-v0", "dso-v0",
]
CHECK_MAX_STEPS = 4


@pytest.fixture(scope="module")
def toy():
    from toy_env import ToyEnv, make_toy_params

    return ToyEnv(), make_toy_params(max_steps=3)


def rollout_single(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((obs, reward, terminated, info["costs"], truncated))
    return out


# -- spaces ---------------------------------------------------------------------------------------


def test_spaces_convert_with_bounds_shapes_and_dtypes():
    import jax.numpy as jnp
    from powerzoojax.core import make_box, make_discrete, make_multi_binary, make_multi_discrete
    from powerzoojax.rl.adapters import to_gymnasium_space

    box = to_gymnasium_space(make_box([-1.0, 0.0], [1.0, jnp.inf]))
    assert isinstance(box, gymnasium.spaces.Box) and box.shape == (2,) and box.dtype == np.float32
    np.testing.assert_array_equal(box.low, [-1.0, 0.0])
    np.testing.assert_array_equal(box.high, [1.0, np.inf])
    assert to_gymnasium_space(make_discrete(4)) == gymnasium.spaces.Discrete(4)
    assert to_gymnasium_space(make_multi_discrete([2, 3])) == gymnasium.spaces.MultiDiscrete([2, 3])
    assert to_gymnasium_space(make_multi_binary(5)) == gymnasium.spaces.MultiBinary(5)
    nested = to_gymnasium_space({"p": make_box(0.0, 1.0, (3,)), "mode": (make_discrete(2), make_multi_binary(1))})
    assert isinstance(nested, gymnasium.spaces.Dict)
    assert nested["p"].shape == (3,) and nested["mode"] == gymnasium.spaces.Tuple((gymnasium.spaces.Discrete(2), gymnasium.spaces.MultiBinary(1)))
    with pytest.raises(TypeError, match="to_gymnasium_space: expected a Box.*got <class 'str'>"):
        to_gymnasium_space("box")


# -- single env -----------------------------------------------------------------------------------


def test_toy_env_passes_check_env(toy):
    from gymnasium.utils.env_checker import check_env
    from powerzoojax.rl.adapters import GymnasiumEnv

    env = GymnasiumEnv(*toy, render_mode="rgb_array")
    check_env(env)
    assert env.constraint_names == ("out_of_band",)


def test_same_seed_same_trajectory_and_the_horizon_is_a_truncation(toy):
    from powerzoojax.rl.adapters import GymnasiumEnv

    actions = [np.array([a], np.float32) for a in (0.5, -1.0, 1.0, 0.0)]
    first = rollout_single(GymnasiumEnv(*toy), 7, actions)
    again = rollout_single(GymnasiumEnv(*toy), 7, actions)
    other = rollout_single(GymnasiumEnv(*toy), 8, actions)
    for a, b in zip(first[1:], again[1:], strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1] == b[1] and a[2] == b[2]
    assert not np.array_equal(first[0], other[0])
    # max_steps = 3: the third step reaches the horizon, a time limit in Gymnasium's terms:
    # truncated, not terminated; the fourth step is the first of the next episode.
    assert [step[4] for step in first[1:]] == [False, False, True, False]
    assert [step[2] for step in first[1:]] == [False, False, False, False]
    assert all(isinstance(step[1], float) and isinstance(step[2], bool) and isinstance(step[4], bool) for step in first[1:])


def test_an_episode_the_env_ends_before_the_horizon_is_a_termination(toy):
    from powerzoojax.rl.adapters import GymnasiumEnv, GymnasiumVectorEnv

    # The toy env ends at its 3 steps; an adapter that counts a longer horizon sees an early end.
    env = GymnasiumEnv(*toy)
    env.max_steps = 10
    steps = rollout_single(env, 7, [np.zeros(1, np.float32)] * 4)
    assert [(s[2], s[4]) for s in steps[1:]] == [(False, False), (False, False), (True, False), (False, False)]
    venv = GymnasiumVectorEnv(*toy, num_envs=2)
    venv.max_steps = 10
    venv.reset(seed=0)
    for _ in range(2):
        venv.step(np.zeros((2, 1), np.float32))
    _, _, term, trunc, _ = venv.step(np.zeros((2, 1), np.float32))
    assert term.all() and not trunc.any()


def test_reset_without_seed_continues_the_key_stream(toy):
    from powerzoojax.rl.adapters import GymnasiumEnv

    env = GymnasiumEnv(*toy)
    seeded, _ = env.reset(seed=3)
    follow, _ = env.reset()
    env.reset(seed=3)
    np.testing.assert_array_equal(env.reset()[0], follow)
    assert not np.array_equal(seeded, follow)
    with pytest.raises(gymnasium.error.Error, match="greater or equal to zero"):
        env.reset(seed=-1)


def test_single_env_matches_the_raw_env(toy):
    """The adapter's first step is the env's own step from the documented key derivation."""
    import jax
    import jax.random as jr
    from powerzoojax.rl.adapters import GymnasiumEnv

    env, params = toy
    adapter = GymnasiumEnv(env, params)
    obs, _ = adapter.reset(seed=11)
    action = np.array([0.3], np.float32)
    step_obs, reward, *_ = adapter.step(action)
    key, sub = jr.split(jr.PRNGKey(11))
    raw_obs, state = env.reset(sub, params)
    key, sub = jr.split(key)
    raw = jax.jit(env.step)(sub, state, action, params)
    np.testing.assert_array_equal(obs, np.asarray(raw_obs))
    np.testing.assert_allclose(step_obs, np.asarray(raw[0]), rtol=1e-6)
    assert reward == pytest.approx(float(raw[2]), rel=1e-6)


def test_bad_construction_and_use(toy):
    from powerzoojax.rl.adapters import GymnasiumEnv, GymnasiumVectorEnv

    with pytest.raises(ValueError, match="render_mode must be None or one of \\['rgb_array'\\], got 'human'"):
        GymnasiumEnv(*toy, render_mode="human")
    with pytest.raises(TypeError, match="env must be a powerzoojax Environment, got str"):
        GymnasiumEnv("TransGrid-case5-dc-v0")
    with pytest.raises(RuntimeError, match="call reset\\(\\) before step\\(\\)"):
        GymnasiumEnv(*toy).step(np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="num_envs must be a positive integer, got 0"):
        GymnasiumVectorEnv(*toy, num_envs=0)


def test_render_falls_back_to_a_summary_picture(toy):
    from powerzoojax.rl.adapters import GymnasiumEnv

    env = GymnasiumEnv(*toy, render_mode="rgb_array")
    env.reset(seed=0)
    env.step(np.array([1.0], np.float32))
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.std() > 0  # something was drawn
    # Without a render mode, gymnasium's convention: a warning and no frame.
    with pytest.warns(UserWarning, match="render_mode"):
        assert GymnasiumEnv(*toy).render() is None


def test_render_uses_powerzoojax_viz_for_networks(monkeypatch):
    """Where powerzoojax.viz is importable and the params hold a case, render draws its network."""
    from powerzoojax.rl.adapters._render import render_rgb

    calls = []
    fake = types.ModuleType("powerzoojax.viz")

    def plot_network(case, state, *, title=None):
        calls.append((case, state, title))
        return "figure"

    fake.plot_network = plot_network
    fake.figure_to_rgb = lambda fig: np.full((4, 5, 4), 7, np.uint8)
    monkeypatch.setitem(sys.modules, "powerzoojax.viz", fake)
    params = types.SimpleNamespace(case="the case")
    frame = render_rgb({"x": np.zeros(2)}, params, np.zeros(3), [1.0], "a title")
    assert frame.shape == (4, 5, 3)
    assert len(calls) == 1 and calls[0][0] == "the case" and calls[0][2] == "a title"
    # Without a case (a device env), the summary picture is drawn even with viz present.
    assert render_rgb({"x": np.zeros(2)}, types.SimpleNamespace(), np.zeros(3), [], "t").shape[2] == 3
    assert len(calls) == 1


# -- vector env -----------------------------------------------------------------------------------


def test_vector_env_next_step_autoreset(toy):
    from gymnasium.vector import AutoresetMode
    from powerzoojax.rl.adapters import GymnasiumVectorEnv

    venv = GymnasiumVectorEnv(*toy, num_envs=4)
    assert venv.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert venv.observation_space.shape == (4, 2) and venv.action_space.shape == (4, 1)
    obs, info = venv.reset(seed=5)
    assert obs.shape == (4, 2) and info == {}
    zeros = np.zeros((4, 1), np.float32)
    for _ in range(2):
        obs, reward, term, trunc, infos = venv.step(zeros)
        assert not term.any() and not trunc.any() and infos["_costs"].all()
    obs, reward, term, trunc, infos = venv.step(zeros)
    assert trunc.all() and not term.any() and (reward != 0).all()  # the horizon: a truncation
    terminal_obs = obs.copy()
    # The next step resets: actions ignored, reward 0, no termination, info masked out.
    obs, reward, term, trunc, infos = venv.step(np.ones((4, 1), np.float32))
    assert (reward == 0).all() and not term.any() and not infos["_costs"].any() and not infos["_cost_sum"].any()
    np.testing.assert_array_equal(obs, terminal_obs)  # the new episode's first observation
    np.testing.assert_array_equal(obs[:, 1], 0.0)  # its time feature: step 0
    obs, reward, term, trunc, infos = venv.step(zeros)
    assert infos["_costs"].all() and (reward != 0).all()
    np.testing.assert_allclose(obs[:, 1], 1.0 / 3.0)
    assert reward.dtype == np.float32 and term.dtype == np.bool_ and infos["costs"].shape == (4, 1)


def test_vector_env_i_is_the_single_env_seeded_seed_plus_i(toy):
    from powerzoojax.rl.adapters import GymnasiumEnv, GymnasiumVectorEnv

    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (5, 3, 1)).astype(np.float32)
    venv = GymnasiumVectorEnv(*toy, num_envs=3)
    v_obs = [venv.reset(seed=20)[0]]
    v_rew = []
    for a in actions[:2]:
        obs, reward, *_ = venv.step(a)
        v_obs.append(obs)
        v_rew.append(reward)
    for i in range(3):
        single = rollout_single(GymnasiumEnv(*toy), 20 + i, list(actions[:2, i]))
        np.testing.assert_array_equal(single[0], v_obs[0][i])
        for t in range(2):
            np.testing.assert_allclose(single[t + 1][0], v_obs[t + 1][i], rtol=1e-6, atol=1e-7)
            assert single[t + 1][1] == pytest.approx(float(v_rew[t][i]), rel=1e-6, abs=1e-7)


def test_vector_env_is_one_compiled_call_per_step(toy, monkeypatch):
    from powerzoojax.rl.adapters import GymnasiumVectorEnv, _kernels
    from powerzoojax.rl.adapters import _gymnasium_vector as module

    calls = []
    original = _kernels.step_batch

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(module._kernels, "step_batch", counted)
    venv = GymnasiumVectorEnv(*toy, num_envs=8)
    venv.reset(seed=0)
    before = original._cache_size()
    for _ in range(7):  # through two episode ends and their next-step resets
        venv.step(np.zeros((8, 1), np.float32))
    assert len(calls) == 7
    assert original._cache_size() - before <= 1  # at most this batch size's one compile
    other = GymnasiumVectorEnv(*toy, num_envs=8)  # a second adapter reuses the program
    other.reset(seed=1)
    other.step(np.zeros((8, 1), np.float32))
    assert len(calls) == 8 and original._cache_size() - before <= 1


def test_vector_env_seeds_and_partial_reset(toy):
    from powerzoojax.rl.adapters import GymnasiumVectorEnv

    venv = GymnasiumVectorEnv(*toy, num_envs=3)
    a, _ = venv.reset(seed=[4, 5, 6])
    b, _ = venv.reset(seed=4)
    np.testing.assert_array_equal(a, b)
    venv.step(np.zeros((3, 1), np.float32))
    mask = np.array([True, False, False])
    obs, _ = venv.reset(seed=4, options={"reset_mask": mask})
    np.testing.assert_array_equal(obs[0], a[0])  # env 0 restarted from seed 4
    np.testing.assert_allclose(obs[1:, 1], 1.0 / 3.0)  # the others kept their step
    with pytest.raises(ValueError, match="reset_mask'\\] must be a bool NumPy array of shape \\(3,\\)"):
        venv.reset(options={"reset_mask": [True, False, False]})
    with pytest.raises(ValueError, match="got 2 seeds for 3 envs"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
        venv.reset(seed=[1, -1, 2])


def test_vector_env_disabled_autoreset_and_rejected_same_step(toy):
    from powerzoojax.rl.adapters import GymnasiumVectorEnv

    with pytest.raises(ValueError, match="autoreset_mode must be one of \\['NextStep', 'Disabled'\\].*final observation"):
        GymnasiumVectorEnv(*toy, num_envs=2, autoreset_mode="SameStep")
    venv = GymnasiumVectorEnv(*toy, num_envs=2, autoreset_mode="Disabled")
    venv.reset(seed=0)
    for _ in range(3):
        _, _, term, trunc, _ = venv.step(np.zeros((2, 1), np.float32))
    assert trunc.all() and not term.any()
    with pytest.raises(RuntimeError, match="envs \\[0, 1\\] ended; with autoreset_mode DISABLED"):
        venv.step(np.zeros((2, 1), np.float32))
    venv.reset(options={"reset_mask": np.array([True, True])})
    obs, reward, term, _, _ = venv.step(np.zeros((2, 1), np.float32))
    assert not term.any() and (reward != 0).all()


def test_vector_env_renders_one_frame_per_env(toy):
    from powerzoojax.rl.adapters import GymnasiumVectorEnv

    venv = GymnasiumVectorEnv(*toy, num_envs=2, render_mode="rgb_array")
    venv.reset(seed=0)
    venv.step(np.zeros((2, 1), np.float32))
    frames = venv.render()
    assert len(frames) == 2 and all(f.dtype == np.uint8 and f.shape[2] == 3 for f in frames)


# -- registry ids ---------------------------------------------------------------------------------


def _check_registry_id(env_id):
    from gymnasium.utils.env_checker import check_env
    from powerzoojax.rl.adapters import make_gymnasium_env

    env = make_gymnasium_env(env_id, max_steps=CHECK_MAX_STEPS, render_mode="rgb_array")
    with warnings.catch_warnings():
        # Unbounded observation boxes and the missing gymnasium spec draw advice, not errors.
        warnings.simplefilter("ignore", UserWarning)
        check_env(env)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape[2] == 3


@pytest.mark.requires("powerzoojax.grid", "powerzoojax.market")
@pytest.mark.parametrize("env_id", REPRESENTATIVE_IDS)
def test_check_env_on_representative_ids(env_id):
    _check_registry_id(env_id)


def _all_single_agent_ids():
    try:
        from powerzoojax.envs import list_envs

        return list_envs(multi_agent=False)
    except Exception:  # noqa: BLE001 - collection must not fail; the test below then has no cases
        return []


# Ids of cases 552gb-2383wp that once took minutes per step on a 2-core CPU
# (benchmarks/results/large-cases.md): AC power flow, where check_env's random set-points leave
# the fast-decoupled loop unconverged and the Newton fallback runs (now an inexact Newton-Krylov
# step on these cases, seconds per env step), and 1354pegase's DC-OPF (now tens of pivots).
# Each passed check_env in 12-120 s on 2026-12-05; their own marker keeps them out of `-m slow`.
LARGE_CASE_IDS = [
    "TransGrid-case552gb-ac-v0", "TransGrid-case552gb-dcopf_ac-v0", "TransGrid-case1354pegase-dcopf-v0",
    "TransGrid-case1354pegase-dcopf_ac-v0", "TransGrid-case2383wp-ac-v0", "TransGrid-case2383wp-dcopf_ac-v0",
]


@pytest.mark.slow
@pytest.mark.requires("powerzoojax.grid", "powerzoojax.market")
@pytest.mark.parametrize("env_id", sorted(set(_all_single_agent_ids()) - set(REPRESENTATIVE_IDS) - set(LARGE_CASE_IDS)))
def test_check_env_on_every_other_single_agent_id(env_id):
    _check_registry_id(env_id)


@pytest.mark.large_case
@pytest.mark.requires("powerzoojax.grid", "powerzoojax.market")
@pytest.mark.parametrize("env_id", LARGE_CASE_IDS)
def test_check_env_on_large_case_ids(env_id):
    _check_registry_id(env_id)


@pytest.mark.requires("powerzoojax.grid")
def test_large_case_ids_are_registered_single_agent_ids():
    assert set(LARGE_CASE_IDS) <= set(_all_single_agent_ids())


@pytest.mark.requires("powerzoojax.grid")
def test_multi_agent_ids_are_refused_with_a_pointer():
    from powerzoojax.rl.adapters import make_gymnasium_env

    with pytest.raises(TypeError, match="'GridMARL-case5-v0' is a multi-agent id; use make_pettingzoo_env"):
        make_gymnasium_env("GridMARL-case5-v0", max_steps=CHECK_MAX_STEPS)


@pytest.mark.requires("powerzoojax.grid")
def test_gymnasium_make_and_make_vec():
    from powerzoojax.rl.adapters import GymnasiumVectorEnv, register_gymnasium_envs

    added = register_gymnasium_envs()
    assert "powerzoojax/TransGrid-case5-dc-v0" in gymnasium.registry
    assert "powerzoojax/GridMARL-case5-v0" not in gymnasium.registry
    assert register_gymnasium_envs() == [] and len(added) >= 1
    env = gymnasium.make("powerzoojax/TransGrid-case5-dc-v0", max_steps=CHECK_MAX_STEPS)
    obs, _ = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape
    venv = gymnasium.make_vec("powerzoojax/TransGrid-case5-dc-v0", num_envs=3, vectorization_mode="vector_entry_point", max_steps=CHECK_MAX_STEPS)
    assert isinstance(venv, GymnasiumVectorEnv) and venv.num_envs == 3
    venv.reset(seed=0)
    obs, *_ = venv.step(venv.action_space.sample())
    assert obs.shape == (3, *env.observation_space.shape)
