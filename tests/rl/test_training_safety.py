"""Trustworthy runs: periodic atomic checkpoints with checksums, resume rules, output-folder
checks, divergence stops, honest summaries."""

import hashlib
import json
import os

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

N_UPDATES = 6
# Every run of the module's trainer goes in chunks of two updates (three reports of six
# updates, or a checkpoint every second update), so one compiled chunk program serves them all.
N_REPORTS = 3


@pytest.fixture(scope="module")
def config(tiny_config):
    return tiny_config.replace(total_timesteps=N_UPDATES * 8 * 16, eval_freq=2 * 8 * 16, eval_num_episodes=4)


@pytest.fixture(scope="module")
def make(toy):
    from powerzoojax.rl import LogWrapper, make_train

    env, params = toy
    return lambda cfg: make_train(LogWrapper(env, params), cfg)


@pytest.fixture(scope="module")
def trainer(make, config):
    return make(config)


@pytest.fixture(scope="module")
def run_dir(trainer, tmp_path_factory):
    """A finished run that checkpointed every other update.

    Trained under the strict numerics the tests of this file run under (tests/conftest.py
    applies them to each test, after module-scoped fixtures are built): JAX traces again
    under other numerics, so this keeps the tests' runs on the programs compiled here."""
    from powerzoojax.rl import run_training

    out = tmp_path_factory.mktemp("run")
    with jax.numpy_rank_promotion("raise"), jax.numpy_dtype_promotion("strict"):
        result = run_training(trainer, jr.PRNGKey(3), output_dir=str(out), progress=False, checkpoint_every=2, n_reports=N_REPORTS)
    return out, result


def _leaves(tree):
    import equinox as eqx

    return [np.asarray(x) for x in jax.tree.leaves(eqx.filter(tree, eqx.is_array))]


def test_checkpoints_are_periodic_and_checksummed(run_dir):
    out, _ = run_dir
    names = sorted(os.listdir(out / "checkpoints"))
    assert names == [f"update_{u:06d}.{ext}" for u in (2, 4, 6) for ext in ("eqx", "json")]
    for u in (2, 4, 6):
        sidecar = json.loads((out / "checkpoints" / f"update_{u:06d}.json").read_text())
        digest = hashlib.sha256((out / "checkpoints" / f"update_{u:06d}.eqx").read_bytes()).hexdigest()
        assert sidecar["sha256"] == digest and sidecar["update"] == u and sidecar["metrics"]["update"] == u
    # Atomic writes leave no temporary files behind.
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]


def test_default_checkpoints_every_report_chunk(trainer, tmp_path):
    from powerzoojax.rl import run_training

    run_training(trainer, jr.PRNGKey(3), output_dir=str(tmp_path), progress=False, n_reports=N_REPORTS)
    # Six updates in three reports: a checkpoint after every second update, none only at the end.
    assert sorted(f for f in os.listdir(tmp_path / "checkpoints") if f.endswith(".eqx")) == [
        "update_000002.eqx", "update_000004.eqx", "update_000006.eqx"
    ]


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    from powerzoojax.rl.algos._files import atomic_write

    path = tmp_path / "result.json"
    atomic_write(str(path), "old")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        atomic_write(str(path), "new and longer")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["result.json"]


def test_a_corrupted_checkpoint_is_refused(run_dir, trainer, tmp_path):
    import shutil

    from powerzoojax.rl import CheckpointError, load_checkpoint

    out, _ = run_dir
    for ext in ("eqx", "json"):
        shutil.copy(out / "checkpoints" / f"update_000004.{ext}", tmp_path / f"update_000004.{ext}")
    path = tmp_path / "update_000004.eqx"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupted: its SHA-256 is"):
        load_checkpoint(str(path), trainer)


def test_a_checkpoint_holding_nan_is_refused(run_dir, trainer, tmp_path):
    import equinox as eqx

    from powerzoojax.rl import CheckpointError, load_checkpoint, save_checkpoint

    out, _ = run_dir
    state, rows = load_checkpoint(str(out / "checkpoints" / "update_000004.eqx"), trainer)
    poisoned = eqx.tree_at(lambda s: s.policy.log_std, state, state.policy.log_std.at[0].set(jnp.nan))
    path = str(tmp_path / "update_000004.eqx")
    save_checkpoint(path, trainer, poisoned, rows)  # a valid checksum: only the NaN check can refuse it
    with pytest.raises(CheckpointError, match="NaN"):
        load_checkpoint(path, trainer)


def test_resume_refuses_any_config_change_but_a_longer_run(run_dir, make, config):
    from powerzoojax.rl import CheckpointError, load_checkpoint

    out, _ = run_dir
    path = str(out / "checkpoints" / "update_000004.eqx")
    with pytest.raises(CheckpointError, match=r"fields \['seed'\]: seed: saved 42, now 7"):
        load_checkpoint(path, make(config.replace(seed=7)))
    with pytest.raises(CheckpointError, match=r"\['gamma', 'learning_rate'\]"):
        load_checkpoint(path, make(config.replace(learning_rate=1e-3, gamma=0.9)))
    with pytest.raises(CheckpointError, match="extended, not shortened"):
        load_checkpoint(path, make(config.replace(total_timesteps=2 * 8 * 16)))


def test_resume_continues_bit_for_bit_and_may_run_longer(run_dir, make, config, trainer, tmp_path):
    """Resuming update 4 with the same config ends bit for bit where the uninterrupted run
    ended. A longer ``total_timesteps`` continues the metrics files and runs on like a
    longer run from scratch; that is a different compiled program (the total enters it),
    whose float32 rounding may differ from the shorter one's by an ulp, so the longer run
    is compared within float32 tolerance."""
    import shutil

    from powerzoojax.rl import run_training

    out, full = run_dir
    same = tmp_path / "same"
    shutil.copytree(out, same)
    again = run_training(trainer, jr.PRNGKey(0), output_dir=str(same), progress=False, checkpoint_every=2,
                         resume_from=str(same / "checkpoints" / "update_000004.eqx"), n_reports=N_REPORTS)
    for a, b in zip(_leaves(again.params), _leaves(full.params)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.asarray(again.metrics["loss"])[4:], np.asarray(full.metrics["loss"])[4:])

    folder = tmp_path / "run"
    shutil.copytree(out, folder)
    longer = make(config.replace(total_timesteps=8 * 8 * 16))
    resumed = run_training(longer, jr.PRNGKey(0), output_dir=str(folder), progress=False, checkpoint_every=2,
                           resume_from=str(folder / "checkpoints" / "update_000004.eqx"), n_reports=N_REPORTS)
    # From scratch in the same chunks of two (an output folder makes the run chunked), so
    # the two runs share the longer trainer's compiled chunk.
    fresh = run_training(longer, jr.PRNGKey(3), output_dir=str(tmp_path / "fresh"), progress=False, checkpoint_every=2,
                         n_reports=N_REPORTS)
    for a, b in zip(_leaves(resumed.params), _leaves(fresh.params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    original = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == list(range(1, 9))
    assert rows[:4] == original[:4]  # the checkpoint's rows, then the resumed run's
    np.testing.assert_allclose(np.asarray(resumed.metrics["loss"]), np.asarray(fresh.metrics["loss"]), rtol=1e-4, atol=1e-6)
    assert (folder / "checkpoints" / "update_000008.eqx").exists()


@pytest.mark.parametrize("blocker", ["checkpoints_file", "output_is_file"])
def test_output_folder_problems_are_found_before_training(trainer, tmp_path, blocker):
    from powerzoojax.rl import run_training
    from powerzoojax.rl.algos._files import OutputDirError

    calls = []
    if blocker == "checkpoints_file":
        out = tmp_path / "run"
        out.mkdir()
        (out / "checkpoints").write_text("not a folder")
        bad = out / "checkpoints"
    else:
        (tmp_path / "taken").write_text("a file")
        out = bad = tmp_path / "taken" / "run"
    with pytest.raises(OutputDirError) as err:
        run_training(_Counting(trainer, calls), jr.PRNGKey(0), output_dir=str(out), progress=False)
    message = str(err.value)
    assert "\n" not in message and str(bad if blocker == "checkpoints_file" else tmp_path / "taken") in message
    assert calls == []  # nothing was compiled or trained


class _Counting:
    """A trainer stand-in that records any attempt to train."""

    def __init__(self, trainer, calls):
        self._trainer, self._calls = trainer, calls

    def __getattr__(self, name):
        if name in ("_jit_init", "_jit_chunk", "__call__"):
            self._calls.append(name)
        return getattr(self._trainer, name)


@pytest.mark.parametrize("poison", ["loss", "params"])
def test_divergence_stops_training_and_keeps_the_last_good_checkpoint(trainer, tmp_path, poison):
    import equinox as eqx

    from powerzoojax.rl import TrainingDiverged, run_training

    class Poisoned:
        """The real trainer, whose third chunk (updates 5 and 6) comes back with a NaN loss or parameter."""

        def __init__(self):
            self.n_chunks = 0

        def __getattr__(self, name):
            return getattr(trainer, name)

        def _jit_chunk(self, state, size):
            state, metrics = trainer._jit_chunk(state, size)
            self.n_chunks += 1
            if self.n_chunks == 3:
                if poison == "loss":
                    metrics = {**metrics, "loss": metrics["loss"].at[-1].set(jnp.nan)}
                else:
                    state = eqx.tree_at(lambda s: s.policy.log_std, state, state.policy.log_std * jnp.inf)
            return state, metrics

    with pytest.raises(TrainingDiverged) as err:
        run_training(Poisoned(), jr.PRNGKey(3), output_dir=str(tmp_path), progress=False, checkpoint_every=2, n_reports=N_REPORTS)
    good = str(tmp_path / "checkpoints" / "update_000004.eqx")
    assert err.value.checkpoint == good and err.value.update == 6 and good in str(err.value)
    assert ("non-finite loss at update 6" if poison == "loss" else "non-finite policy parameters after update 6") in str(err.value)
    assert sorted(f for f in os.listdir(tmp_path / "checkpoints") if f.endswith(".eqx"))[-1] == "update_000004.eqx"
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and (tmp_path / "learning_curve.png").exists()
    assert not (tmp_path / "result.json").exists()


def test_summary_names_its_source_and_takes_reward_and_cost_from_one_evaluation(run_dir):
    out, result = run_dir
    summary = result.summary
    m = {k: np.asarray(v) for k, v in result.metrics.items()}
    assert summary["final_source"].startswith("deterministic evaluation (4 episodes")
    assert summary["final_reward"] == pytest.approx(float(m["eval_returns"][-1]))
    assert summary["final_cost"] == pytest.approx(float(m["eval_total_cost"][-1]))
    assert summary["initial_reward"] == pytest.approx(float(m["eval_returns"][0]))
    assert summary["final_costs"]["out_of_band"]["value"] == pytest.approx(float(m["eval_cost_out_of_band"][-1]))
    saved = json.loads((out / "result.json").read_text())
    assert saved["summary"]["final_source"] == summary["final_source"] and saved["weights"] == "result.eqx"
    assert saved["weights_sha256"] == hashlib.sha256((out / "result.eqx").read_bytes()).hexdigest()
    import equinox as eqx

    zeros = jax.tree.map(jnp.zeros_like, {"params": result.params, "obs_stats": result.obs_stats})
    weights = eqx.tree_deserialise_leaves(str(out / "result.eqx"), zeros)
    for a, b in zip(_leaves(weights["params"]), _leaves(result.params)):
        np.testing.assert_array_equal(a, b)


def test_summary_without_evaluation_is_a_training_estimate_and_never_stale():
    from powerzoojax.rl import TrainConfig, TrainResult

    nan = np.nan
    metrics: dict[str, jax.Array | np.ndarray] = {
        "env_steps": np.asarray([10.0, 20.0, 30.0, 40.0]),
        "loss": np.asarray([1.0, 0.5, 0.4, 0.3]),
        "episode_return": np.asarray([nan, -5.0, nan, -3.0]),
        "episode_cost": np.asarray([nan, 2.0, nan, 1.0]),
    }
    config = TrainConfig(eval_freq=0)
    summary = TrainResult(params=None, metrics=metrics, config=config).summary
    assert summary["status"] == "ok" and summary["final_source"].startswith("training estimate")
    assert "update 4" in summary["final_source"] and "update 2" in summary["initial_source"]
    assert (summary["final_reward"], summary["final_cost"], summary["final_env_steps"]) == (-3.0, 1.0, 40.0)
    assert (summary["initial_reward"], summary["initial_cost"]) == (-5.0, 2.0)
    diverged = TrainResult(params=None, metrics={**metrics, "loss": np.asarray([1.0, 0.5, nan, nan])}, config=config)
    assert diverged.summary["status"] == "diverged" and diverged.summary["final_reward"] is None
    assert diverged.summary["final_cost"] is None
    # An evaluation whose final value is NaN reports None, not the previous evaluation.
    evaluated = TrainResult(params=None, config=TrainConfig(eval_num_episodes=4), metrics={
        **metrics, "eval_returns": np.asarray([-9.0, nan, -4.0, nan]), "eval_total_cost": np.asarray([3.0, nan, 2.0, nan]),
    })
    assert evaluated.summary["final_reward"] is None and evaluated.summary["initial_reward"] == -9.0


def test_cost_curves_are_labelled_with_channel_and_unit(case5_safe, tmp_path):
    from powerzoojax.rl import plot_learning_curve
    from powerzoojax.rl.training._report import _cost_series
    from powerzoojax.rl.training._units import channel_units

    units = channel_units(case5_safe)
    assert units == {"thermal_overload": "MW·step"}
    rows = [{"env_steps": 10.0 * i, "eval_returns": -1.0, "eval_cost_thermal_overload": 2.0 - i,
             "episode_cost_est_thermal_overload": 3.0 - i} for i in range(3)]
    labels = [label for _, label in _cost_series(rows, units)]
    assert labels == ["thermal_overload [MW·step] (evaluation)", "thermal_overload [MW·step] (training estimate)"]
    plot_learning_curve(rows, str(tmp_path / "curve.png"), cost_units=units)
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
