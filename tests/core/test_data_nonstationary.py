"""NonstationarySampler (determinism under a key, modes per spec 5.3) and apply_drift."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@pytest.fixture(scope="module")
def sampler():
    from powerzoojax.data import NonstationarySampler

    return NonstationarySampler(17520, total_episodes=500, max_steps=48)


@pytest.mark.parametrize("mode", ["train", "iid", "drift_shock", "fixed"])
def test_same_key_same_episode(sampler, mode):
    import jax.random as jr

    first = sampler.sample(7, jr.PRNGKey(3), mode=mode)
    again = sampler.sample(7, jr.PRNGKey(3), mode=mode)
    assert first == again
    starts, factors = sampler.sample_batch([0, 5, 9], jr.key(11), mode=mode)
    again_starts, again_factors = sampler.sample_batch(np.array([0, 5, 9]), jr.key(11), mode=mode)
    np.testing.assert_array_equal(starts, again_starts)
    np.testing.assert_array_equal(factors, again_factors)
    assert starts.dtype == np.int64 and factors.dtype == np.float64
    assert ((0 <= starts) & (starts <= sampler.max_start)).all()


def test_modes_follow_the_spec(sampler):
    import jax.random as jr

    keys = jr.split(jr.PRNGKey(0), 64)
    fixed = [sampler.sample(i, k, mode="fixed") for i, k in enumerate(keys[:4])]
    assert all(c.episode_start == 0 and c.drift_factor == 1.0 for c in fixed)
    iid = [sampler.sample(3, k, mode="iid") for k in keys]
    assert all(c.drift_factor == 1.0 for c in iid) and len({c.episode_start for c in iid}) > 50
    shock = sampler.sample(3, keys[0], mode="drift_shock")
    assert shock.drift_factor == 1.25
    assert shock.episode_start == sampler.sample(3, keys[0], mode="iid").episode_start
    train = sampler.sample(200, keys[1], mode="train")
    assert train.drift_factor == pytest.approx(1 + 3e-4 * 200)
    # The start follows training progress: late episodes start late in the profile.
    early, _ = sampler.sample_batch([10] * 200, keys[2], mode="train")
    late, _ = sampler.sample_batch([490] * 200, keys[3], mode="train")
    assert np.median(early) < 0.1 * sampler.max_start and np.median(late) > 0.9 * sampler.max_start
    assert abs(np.median(late) - 490 / 500 * sampler.max_start) < 720


def test_zero_sigma_train_start_is_the_progress_point():
    import jax.random as jr
    from powerzoojax.data import NonstationarySampler

    sampler = NonstationarySampler(1048, total_episodes=10, max_steps=48, rolling_sigma_steps=0)
    assert [sampler.sample(i, jr.PRNGKey(i)).episode_start for i in (0, 5, 10, 20)] == [0, 500, 1000, 1000]


def test_sampler_errors(sampler):
    import jax.random as jr
    from powerzoojax.data import NonstationarySampler

    with pytest.raises(ValueError, match=r"Unknown sampler mode 'ood'; valid modes: train, iid, drift_shock, fixed"):
        sampler.sample(0, jr.PRNGKey(0), mode="ood")
    with pytest.raises(ValueError, match=r"max_steps \(48\) must not exceed total_steps \(10\)"):
        NonstationarySampler(10)
    with pytest.raises(ValueError, match=r"total_steps must be an integer >= 1, got 0"):
        NonstationarySampler(0)
    with pytest.raises(ValueError, match=r"drift_rate must be a finite number >= 0.0, got -1"):
        NonstationarySampler(100, drift_rate=-1)
    with pytest.raises(ValueError, match=r"episode_idx must be an integer >= 0, got -1"):
        sampler.sample(-1, jr.PRNGKey(0))
    with pytest.raises(ValueError, match=r"episode_indices must hold at least one episode index"):
        sampler.sample_batch([], jr.PRNGKey(0))


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=6), elements=st.floats(-1e4, 1e4)),
    st.floats(0.0, 3.0),
)
def test_apply_drift_scales_both_and_keeps_power_factor(p, factor):
    from powerzoojax.data import apply_drift

    q = 0.3 * p
    p_new, q_new = apply_drift(p, q, factor)
    assert p_new.dtype == q_new.dtype == np.float32 and p_new.shape == p.shape
    np.testing.assert_allclose(p_new, np.float32(p) * np.float32(factor), rtol=1e-6)
    np.testing.assert_allclose(q_new, np.float32(q) * np.float32(factor), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(q_new, np.float64), 0.3 * np.asarray(p_new, np.float64), rtol=1e-5, atol=1e-2)
    p_same, _ = apply_drift(p, q, 1)
    np.testing.assert_array_equal(p_same, np.float32(p))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2_000), st.integers(0, 2**31 - 1))
def test_train_drift_grows_linearly_and_starts_stay_in_range(episode, seed):
    import jax.random as jr
    from powerzoojax.data import NonstationarySampler

    sampler = NonstationarySampler(4_000, total_episodes=1_000, max_steps=96, drift_rate=1e-3)
    config = sampler.sample(episode, jr.PRNGKey(seed))
    assert config.drift_factor == pytest.approx(1 + 1e-3 * episode)
    assert 0 <= config.episode_start <= 4_000 - 96


def test_apply_drift_errors():
    from powerzoojax.data import apply_drift

    with pytest.raises(ValueError, match=r"factor must be a finite number >= 0.0, got -0.5"):
        apply_drift(np.ones(2), np.ones(2), -0.5)
    with pytest.raises(ValueError, match=r"factor must be a finite number >= 0.0, got nan"):
        apply_drift(np.ones(2), np.ones(2), float("nan"))
    with pytest.raises(ValueError, match=r"p and q must have the same shape, got \(2,\) and \(3,\)"):
        apply_drift(np.ones(2), np.ones(3), 1.0)
