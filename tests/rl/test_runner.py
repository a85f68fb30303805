"""Host driver: checkpoints that resume bit for bit, metrics files, plot, progress line."""

import io
import json

import jax
import jax.random as jr
import numpy as np
import pytest


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(scope="module")
def trainer(toy, tiny_config):
    from powerzoojax.rl import SafeRLWrapper, make_train

    env, params = toy
    # PPO-Lagrangian with reward and observation normalisation: every piece of carried
    # state (λ, running statistics, env states, key) must survive the checkpoint.
    config = tiny_config.replace(
        algo="ppo_lagrangian", total_timesteps=6 * 8 * 16, n_checkpoints=2, normalize_rewards=True,
        normalize_observations=True, eval_freq=3 * 8 * 16, eval_num_episodes=4, keep_checkpoints=6,
    )
    return make_train(SafeRLWrapper(env, params, cost_thresholds=0.1), config)


@pytest.fixture(scope="module")
def full_run(trainer, tmp_path_factory):
    from powerzoojax.rl import run_training

    out = tmp_path_factory.mktemp("full")
    stream = _Terminal()
    result = run_training(trainer, jr.PRNGKey(5), output_dir=str(out), progress=None, stream=stream)
    return out, result, stream.getvalue()


def test_checkpoint_at_half_resumes_bit_for_bit(trainer, full_run, tmp_path):
    from powerzoojax.rl import run_training

    out, full, _ = full_run
    half = out / "checkpoints" / "update_000003.eqx"
    assert half.exists() and (out / "checkpoints" / "update_000006.eqx").exists()
    sidecar = json.loads(half.with_suffix(".json").read_text())
    assert sidecar["update"] == 3 and sidecar["env_steps"] == 3 * 8 * 16 and sidecar["metrics"]["update"] == 3
    assert sidecar["config"]["algo"] == "ppo_lagrangian"
    resumed = run_training(trainer, jr.PRNGKey(99), resume_from=str(half), output_dir=str(tmp_path), progress=False)
    for a, b in zip(jax.tree.leaves(resumed.params), jax.tree.leaves(full.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for a, b in zip(jax.tree.leaves(resumed.obs_stats), jax.tree.leaves(full.obs_stats)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for name in full.metrics:
        np.testing.assert_array_equal(resumed.metrics[name], full.metrics[name], err_msg=name)


def test_chunked_run_matches_the_single_compiled_run(trainer, full_run):
    _, full, _ = full_run
    fused = trainer(jr.PRNGKey(5))
    for a, b in zip(jax.tree.leaves(fused.params), jax.tree.leaves(full.params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


def test_chunks_compile_once(trainer, full_run):
    assert trainer._jit_chunk._cache_size() == 1


def test_metrics_files_and_plot(trainer, full_run):
    out, result, _ = full_run
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == trainer.n_updates == 6
    assert [r["update"] for r in rows] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert rows[1]["eval_returns"] is None and rows[2]["eval_returns"] is not None  # NaN -> null
    assert rows[0]["eval_returns"] is not None  # the untrained policy, evaluated at the start
    # PPO-Lagrangian evaluation costs: one selected channel, so its episode cost is the total
    assert rows[2]["eval_cost_out_of_band"] == pytest.approx(rows[2]["eval_total_cost"])
    assert rows[2]["eval_cost_per_step"] == pytest.approx(rows[2]["eval_total_cost"] / 8)
    csv_lines = (out / "metrics.csv").read_text().splitlines()
    assert len(csv_lines) == 7 and "lambda_out_of_band" in csv_lines[0].split(",")
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((out / "result.json").read_text())
    assert saved["summary"]["algo"] == "ppo_lagrangian" and saved["config"]["n_checkpoints"] == 2
    assert len(result.checkpoints) == 2 and result.checkpoints[0][0] == 3 * 8 * 16


def test_progress_line_on_a_terminal(full_run):
    _, _, text = full_run
    assert "\r" in text and "steps/s" in text and "[100.0%]" in text and "6 * 8 * 16".replace(" ", "") not in text
    assert "768/768 steps" in text


def test_plain_progress_lines_when_not_a_terminal(trainer):
    from powerzoojax.rl import run_training

    stream = io.StringIO()
    run_training(trainer, jr.PRNGKey(5), progress=None, stream=stream)
    lines = stream.getvalue().splitlines()
    assert lines and "\r" not in stream.getvalue() and "\033" not in stream.getvalue()
    assert "[100.0%] 768/768 steps" in lines[-1]
    quiet = io.StringIO()
    run_training(trainer, jr.PRNGKey(5), progress=False, stream=quiet)
    assert quiet.getvalue() == ""


def test_plain_progress_lines_are_spaced_in_time():
    from powerzoojax.rl.training._report import Progress

    stream = io.StringIO()
    bar = Progress(total_updates=4, steps_per_update=10, stream=stream, interval=3600.0)
    for done in range(1, 5):
        bar.chunk_done(done, 1, [{"episode_return": 1.0}])
    lines = stream.getvalue().splitlines()
    # The first report, then nothing within the interval, then always the last one.
    assert len(lines) == 2 and lines[0].startswith("[ 25.0%] 10/40") and lines[1].startswith("[100.0%] 40/40")


def test_resume_refuses_a_different_config(trainer, full_run, toy):
    from powerzoojax.rl import SafeRLWrapper, load_checkpoint, make_train

    out, _, _ = full_run
    other = make_train(SafeRLWrapper(*toy, cost_thresholds=0.1), trainer.config.replace(learning_rate=1e-3))
    with pytest.raises(ValueError, match="learning_rate"):
        load_checkpoint(str(out / "checkpoints" / "update_000003.eqx"), other)
