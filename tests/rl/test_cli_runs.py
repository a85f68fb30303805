"""The command line and reloading a run: generated flags, strict config files, output-folder
errors, stop signals, divergence exit code, resume, ``load_policy`` and ``eval``."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import equinox as eqx
import jax
import jax.random as jr
import numpy as np
import pytest

PRESET = "case5-economic-dispatch"
TINY = ["--num_envs", "8", "--n_steps", "16", "--hidden_dims", "16,16", "--n_epochs", "1", "--n_minibatches", "2"]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_help_lists_every_config_field_with_type_and_default(capsys):
    import dataclasses

    from powerzoojax.rl import TrainConfig
    from powerzoojax.rl.training._cli import _converter, main

    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = _flat(capsys.readouterr().out)
    for field in dataclasses.fields(TrainConfig):
        if field.name == "seed":
            assert "--seed SEED" in text
            continue
        if field.name == "eval_episodes":  # the reference's unused name: a hidden alias of --eval_num_episodes
            assert "--eval_episodes" not in text and "--eval_num_episodes" in text
            continue
        default = ",".join(map(str, field.default)) if isinstance(field.default, tuple) else field.default
        type_name = _converter(field.type)[1]
        assert f"--{field.name}" in text, field.name
        assert _flat(f"{type_name} (default: {default})") in text, field.name


def test_every_yaml_key_is_a_flag_of_the_same_name():
    import yaml

    from powerzoojax.rl import TrainConfig
    from powerzoojax.rl.algos._config import config_yaml
    from powerzoojax.rl.training._cli import _overrides

    original = TrainConfig(algo="ppo_lagrangian", hidden_dims=(32, 16), cost_thresholds=(1.0, 2.0), lambda_lr=(0.1, 0.2),
                           saute_horizon=24, normalize_rewards=True)
    data = yaml.safe_load(config_yaml(original))
    argv = []
    for key, value in data.items():
        if key == "seed":
            continue
        text = "none" if value is None else ",".join(map(str, value)) + ("," if len(value) == 1 else "") if isinstance(
            value, list) else str(value)
        argv += [f"--{key}", text]
    rebuilt = TrainConfig(seed=original.seed).replace(**_overrides(argv))
    assert rebuilt == original
    assert _overrides(["--lr", "0.01"]) == {"learning_rate": 0.01}  # the YAML files' alias


@pytest.mark.parametrize(
    "text, expected",
    [
        ("num_envs: [8\n", r"is not valid YAML at line 2"),
        ("full+num_envs: many", r"has bad value\(s\): num_envs: (TrainConfig: num_envs must be a positive integer|expected int), got 'many'"),
        ("full+mystery: 3", r"unknown key\(s\) \['mystery'\]"),
        ("num_env: 8\n", r"unknown key\(s\) \['num_env'\] \('num_env': did you mean 'num_envs'\?\)"),
        ("algo: td3\n", r"algo 'td3' is not implemented; algorithms: \['ppo', 'ppo_lagrangian'"),
    ],
)
def test_a_bad_config_file_is_an_error_naming_the_file_and_keys(tmp_path, capsys, text, expected):
    import re

    from powerzoojax.rl import TrainConfig
    from powerzoojax.rl.algos._config import config_yaml
    from powerzoojax.rl.training._cli import main

    full = config_yaml(TrainConfig())
    if text.startswith("full+"):
        key = text[len("full+"):].split(":")[0]
        text = "".join(line for line in full.splitlines(keepends=True) if not line.startswith(key + ":")) + text[5:] + "\n"
    path = tmp_path / "partial.yaml"
    path.write_text(text)
    assert main(["--preset", PRESET, "--config", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and re.search(expected, err), err
    assert err.count("\n") == 1


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_output_folder_problem_is_a_one_line_error(tmp_path, capsys):
    from powerzoojax.rl.training._cli import main

    (tmp_path / "checkpoints").write_text("in the way")
    rc = main(["--preset", PRESET, "--output", str(tmp_path), "--no-progress", "--total_timesteps", "128", *TINY])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and f"{tmp_path / 'checkpoints'} is a file" in err
    assert not (tmp_path / "metrics.jsonl").exists()


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_divergence_exits_non_zero_with_a_clear_message(tmp_path, capsys):
    from powerzoojax.rl.training._cli import EXIT_DIVERGED, main

    rc = main(["--preset", PRESET, "--output", str(tmp_path), "--no-progress", "--total_timesteps", "256", *TINY,
               "--eval_freq", "0", "--lr", "1e38"])
    err = capsys.readouterr().err
    assert rc == EXIT_DIVERGED == 4
    assert "training diverged: non-finite" in err and "at update 1" in err and "learning_rate" in err
    assert not (tmp_path / "result.json").exists()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny case-5 run through train(), as the command line runs it."""
    from powerzoojax.rl import train

    out = tmp_path_factory.mktemp("case5")
    result = train(PRESET, seed=1, output_dir=out, progress=False, total_timesteps=4 * 128, num_envs=8, n_steps=16,
                   hidden_dims=(16, 16), n_epochs=1, n_minibatches=2, eval_freq=256, eval_num_episodes=2)
    return out, result


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_load_policy_rebuilds_env_and_policy_from_a_checkpoint(run):
    from powerzoojax.envs import TransGridEnv
    from powerzoojax.rl import load_policy, make_act

    out, result = run
    loaded = load_policy(out)
    assert isinstance(loaded.env, TransGridEnv) and loaded.preset == PRESET and loaded.config == result.config
    assert loaded.checkpoint.endswith("update_000004.eqx")
    obs, _ = loaded.wrapped.reset(jr.PRNGKey(0))
    action = np.asarray(loaded.policy(obs, jr.PRNGKey(1)))
    np.testing.assert_array_equal(action, np.asarray(loaded.policy(obs, jr.PRNGKey(2))))  # deterministic
    # The checkpoint round trip is exact: the saved policy is bitwise the in-memory result's.
    from powerzoojax.rl import load_checkpoint
    from powerzoojax.rl.training._train import build_trainer

    trainer, _ = build_trainer(PRESET, loaded.config, None, loaded.config.seed)
    state, _ = load_checkpoint(loaded.checkpoint, trainer)
    saved, kept = (jax.tree.leaves(eqx.filter(t, eqx.is_array)) for t in (state.policy, result.params))
    assert len(saved) == len(kept) > 0
    for a, b in zip(saved, kept):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # So the two act functions agree; they are two compiled programs (one closes over the
    # weights as constants), which may round a float32 product differently by an ulp.
    np.testing.assert_allclose(action, np.asarray(make_act(result, loaded.wrapped)(jr.PRNGKey(0), obs)),
                               rtol=1e-5, atol=1e-8)
    sampling = load_policy(out, deterministic=False)
    a1, a2 = (np.asarray(sampling.policy(obs, jr.PRNGKey(k))) for k in (1, 2))
    assert not np.array_equal(a1, a2)
    space = loaded.wrapped.action_space()
    assert np.all(a1 >= np.asarray(space.low)) and np.all(a1 <= np.asarray(space.high))


def test_load_policy_needs_the_env_of_a_run_started_from_an_env(toy, tiny_config, tmp_path):
    from powerzoojax.rl import CheckpointError, LogWrapper, load_policy, train

    env, params = toy
    train(LogWrapper(env, params), tiny_config.replace(total_timesteps=128), output_dir=tmp_path, progress=False)
    with pytest.raises(CheckpointError, match=r"pass the env it was trained on"):
        load_policy(tmp_path)
    loaded = load_policy(tmp_path, env=LogWrapper(env, params))
    assert loaded.preset is None and loaded.env is env


def _assert_the_trace_carries_what_the_pictures_need(trace_path, trace: dict) -> None:
    """The case-5 preset's 48-step trace holds what `eval --plots` draws from: the env's
    states, its info and the step length, the transmission env's load and the reward's unit
    (which its info does not carry)."""
    from powerzoojax.viz import episode_series

    series = episode_series(trace_path)
    assert series.dispatch is not None and series.load is not None
    assert series.delta_t_hours == 0.5 and series.dispatch.shape == (48, 5) and series.cost_units[0] == "MW·step"
    np.testing.assert_allclose(series.load, 750.0, rtol=1e-6)
    assert series.reward_unit == "−0.01 × generation cost [$/h], 300 $/MWh outside unit limits"
    assert np.all(np.isfinite(series.states["line_flow_mw"][:-1])) and np.all(np.isnan(series.states["line_flow_mw"][-1]))
    assert "info/gen_cost" in trace and trace["info/gen_cost"].shape == (48,)


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_eval_command_writes_eval_json_and_a_trace(run, tmp_path, capsys):
    from powerzoojax.rl.training._cli import main

    out, _ = run
    trace_path = tmp_path / "episode.npz"
    assert main(["eval", str(out), "--episodes", "3", "--trace", str(trace_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "eval.json").read_text())
    assert printed == saved and saved["split"] == "iid" and saved["episodes"] == 3 and saved["preset"] == PRESET
    assert saved["source"].startswith("deterministic evaluation")
    assert list(saved["costs"]) == ["thermal_overload", "voltage_violation", "power_balance", "resource"]
    assert saved["costs"]["thermal_overload"]["unit"] == "MW·step"
    assert saved["costs"]["voltage_violation"]["unit"] == "p.u.·step"
    with np.load(trace_path) as npz:
        trace = dict(npz)
    assert trace["reward"].shape == (48,) and trace["action"].shape == (48, 5) and list(trace["cost_names"])[0] == "thermal_overload"
    # Case 5's nominal profile and a deterministic policy make every episode the same, so
    # the evaluation's statistics must agree with the separately rolled-out trace.
    assert saved["return"]["std"] == pytest.approx(0.0, abs=1e-4)
    assert saved["distinct_episodes"] == 1 and saved["note"].startswith("all 3 episodes were identical")
    assert saved["return"]["mean"] == pytest.approx(float(np.sum(trace["reward"])), rel=1e-5)
    for i, name in enumerate(trace["cost_names"]):
        assert saved["costs"][str(name)]["mean"] == pytest.approx(float(np.sum(trace["constraint_costs"][:, i])), rel=1e-5, abs=1e-6)
    assert saved["cost_sum"]["mean"] == pytest.approx(float(np.sum(trace["cost_sum"])), rel=1e-5, abs=1e-6)
    _assert_the_trace_carries_what_the_pictures_need(trace_path, trace)


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_eval_ood_without_a_task_is_refused(run, capsys):
    from powerzoojax.rl.training._cli import main

    out, _ = run
    assert main(["eval", str(out), "--split", "ood"]) == 2
    assert "has no ood split" in capsys.readouterr().err


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_cli_resume_keeps_the_config_and_may_extend_it(run, capsys, tmp_path):
    import shutil

    from powerzoojax.rl.training._cli import main

    out, _ = run
    folder = tmp_path / "run"
    shutil.copytree(out, folder)
    assert main(["--resume", str(folder), "--seed", "5"]) == 2
    assert "fields ['seed']" in capsys.readouterr().err
    assert main(["--resume", str(folder), "--learning_rate", "0.1", "--no-progress"]) == 2
    assert "learning_rate" in capsys.readouterr().err
    assert main(["--resume", str(folder), "--total_timesteps", str(6 * 128), "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["env_steps"] == 6 * 128 and summary["seed"] == 1 and summary["env"] == PRESET
    rows = (folder / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(r)["update"] for r in rows] == [1, 2, 3, 4, 5, 6]


# SIGTERM takes the same path as SIGINT (one handler for both); it runs with the slow tests.
@pytest.mark.requires("powerzoojax.grid")
@pytest.mark.parametrize("signum", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_a_stopped_run_leaves_checkpoint_metrics_and_plot(tmp_path, signum):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "powerzoojax", "--preset", PRESET, "--output", str(out), "--no-progress",
         "--total_timesteps", "1000000", *TINY, "--hidden_dims", "8", "--eval_freq", "0", "--checkpoint-every", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    try:
        deadline = time.monotonic() + 240
        while not list((out / "checkpoints").glob("*.json")) if (out / "checkpoints").exists() else True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() and proc.stderr else "timeout"
            time.sleep(0.2)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert f"training stopped by {signal.Signals(signum).name}" in err
    checkpoints = sorted((out / "checkpoints").glob("update_*.json"))
    sidecar = json.loads(checkpoints[-1].read_text())
    assert str(checkpoints[-1].with_suffix(".eqx")) in err
    rows = (out / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == sidecar["update"] >= 1 and sidecar["metrics"]["update"] == sidecar["update"]
    assert (out / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
@pytest.mark.requires("powerzoojax.grid")
def test_eval_of_a_task_preset_reports_the_task_metrics(tmp_path):
    from powerzoojax.grid.tasks.dso import DSOTask
    from powerzoojax.rl import evaluate_run, train

    train("dso-nflex", seed=0, output_dir=tmp_path, progress=False, total_timesteps=2 * 48, num_envs=2, n_steps=48,
          hidden_dims=(8,), n_epochs=1, n_minibatches=2, eval_freq=0)
    report = evaluate_run(tmp_path, episodes=2, split="ood")
    assert report["split"] == "ood" and list(report["costs"]) == ["voltage_violation", "thermal_overload", "resource"]
    assert report["costs"]["voltage_violation"]["unit"] == "buses·step"
    metrics = report["task_metrics"]
    assert metrics and all(isinstance(v, float) for v in metrics.values())
    # The evaluation ran on the task's summer split, not on the synthetic training shapes.
    summer = DSOTask().make_params("summer_ood")
    assert report["episode_steps"] == int(summer.max_steps)


# Drawing the 48 frames of the GIF is most of this test's time; it runs with the slow tests.
# The default run keeps the trace's picture data (test_eval_command_writes_eval_json_and_a_trace),
# `eval --plots`' error path (test_eval_plots_into_an_unwritable_place_keep_eval_json) and the
# drawing functions themselves, GIF included (tests/core/test_viz.py).
@pytest.mark.slow
@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_eval_command_draws_the_episode_and_its_network(run, tmp_path, capsys):
    from PIL import Image

    from powerzoojax.rl.training._cli import main

    out, _ = run
    trace_path, plots = tmp_path / "episode.npz", tmp_path / "plots"
    assert main(["eval", str(out), "--episodes", "2", "--trace", str(trace_path), "--plots", str(plots)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["plots"] == [str(plots / "episode.png"), str(plots / "network.png"), str(plots / "episode.gif")]
    with np.load(trace_path) as npz:
        trace = dict(npz)
    _assert_the_trace_carries_what_the_pictures_need(trace_path, trace)
    for name in ("episode.png", "network.png"):
        with Image.open(plots / name) as image:
            pixels = np.asarray(image.convert("RGB"), np.int16)
        assert pixels.shape[0] > 300 and np.mean(np.any(pixels < 245, axis=2)) > 0.02
    with Image.open(plots / "episode.gif") as gif:
        assert gif.n_frames == 48  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_eval_and_resume_fall_back_to_the_newest_intact_checkpoint(run, tmp_path, capsys):
    import shutil

    from powerzoojax.rl.training._cli import main

    out, _ = run
    folder = tmp_path / "run"
    shutil.copytree(out, folder)
    newest = folder / "checkpoints" / "update_000004.eqx"
    newest.write_bytes(newest.read_bytes()[:-10])  # a truncated write
    assert main(["eval", str(folder), "--episodes", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("powerzoojax-train: note: ")
    assert "update_000004.eqx (corrupted" in captured.err and "using update_000003.eqx" in captured.err
    assert json.loads(captured.out)["checkpoint"] == os.path.join("checkpoints", "update_000003.eqx")
    assert main(["--resume", str(folder), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "using update_000003.eqx" in captured.err
    assert json.loads(captured.out)["env_steps"] == 4 * 128


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_eval_of_the_best_checkpoint(run, capsys):
    from powerzoojax.rl.training import best_checkpoint
    from powerzoojax.rl.training._cli import main

    out, _ = run
    best = best_checkpoint(str(out))
    assert best is not None
    assert main(["eval", str(out), "--episodes", "1", "--checkpoint", "best"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["checkpoint"] == os.path.relpath(best, out)
    assert report["env_steps_trained"] == json.loads(pathlib.Path(best[:-4] + ".json").read_text())["env_steps"]


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_an_oversized_num_envs_is_refused_before_allocating(tmp_path, capsys):
    from powerzoojax.rl.training._cli import main

    # A billion envs: the state alone is hundreds of GB; refused from its shapes, nothing allocated.
    rc = main(["--preset", PRESET, "--output", str(tmp_path), "--no-progress", *TINY, "--num_envs", "1000000000"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "num_envs=1000000000" in err and "GB" in err and "lower num_envs" in err
    assert not list((tmp_path / "checkpoints").glob("*.eqx"))


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_a_program_larger_than_free_memory_is_refused_with_its_figure(tmp_path, capsys, monkeypatch):
    import re

    from powerzoojax.rl.training import _runner
    from powerzoojax.rl.training._cli import main

    # Pretend the host has 20 kB free: the state of 8 envs fits, the compiled chunk does not.
    # The config is the one the partial config file below trains, so the compiled chunk
    # is the same program (JAX's compilation cache serves it there).
    monkeypatch.setattr(_runner, "available_memory", lambda: (20_000, "host memory (CPU backend)"))
    rc = main(["--preset", PRESET, "--output", str(tmp_path), "--no-progress", *TINY, "--total_timesteps", "128",
               "--eval_num_episodes", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    match = re.search(r"num_envs=8, n_steps=16, eval_num_episodes=2 needs about (\d+) kB for one compiled chunk", err)
    assert match and int(match.group(1)) > 20 and "more than the 20 kB of free host memory" in err
    assert not list((tmp_path / "checkpoints").glob("*.eqx"))


def test_help_lists_the_implemented_algorithms_only(capsys):
    from powerzoojax.rl.algos._config import IMPLEMENTED_ALGOS
    from powerzoojax.rl.training._cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = _flat(capsys.readouterr().out)
    assert "{" + ",".join(IMPLEMENTED_ALGOS) + "}" in text
    assert {"apg", "ippo_typed", "ippo_typed_lagrangian"} <= set(IMPLEMENTED_ALGOS)
    assert not {"td3", "dqn", "mappo"} & set(text.replace(",", " ").replace("{", " ").replace("}", " ").split())
    assert "policy snapshots kept in memory" in text  # --n_checkpoints says what it is
    with pytest.raises(SystemExit) as exit_:
        main(["--preset", PRESET, "--algo", "td3"])
    assert exit_.value.code == 2 and "invalid choice: 'td3'" in capsys.readouterr().err


def test_a_missing_config_file_is_a_one_line_error(tmp_path, capsys):
    from powerzoojax.rl.training._cli import main

    missing = tmp_path / "nowhere.yaml"
    assert main(["--preset", PRESET, "--config", str(missing), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == f"powerzoojax-train: config file {missing} does not exist\n"


def test_a_partial_config_overrides_the_preset():
    from powerzoojax.rl.algos._config import ConfigFileError, load_config
    from powerzoojax.rl.training._presets import get_preset

    preset = get_preset(PRESET).config
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("num_envs: 8\nlr: 0.01\neval_episodes: 4\nhidden_dims: [16, 16]\n")
    config = load_config(f.name, base=preset)
    os.unlink(f.name)
    assert (config.num_envs, config.learning_rate, config.eval_num_episodes, config.hidden_dims) == (8, 0.01, 4, (16, 16))
    assert config.replace(num_envs=preset.num_envs, learning_rate=preset.learning_rate,
                          eval_num_episodes=preset.eval_num_episodes, hidden_dims=preset.hidden_dims) == preset
    with pytest.raises(ConfigFileError, match=r"unknown key\(s\) \['mystery'\]"):
        load_config({"mystery": 1}, base=preset)


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_a_partial_config_file_and_the_eval_episodes_alias_on_the_command_line(tmp_path, capsys):
    import yaml

    from powerzoojax.rl.training._cli import main
    from powerzoojax.rl.training._presets import get_preset

    path = tmp_path / "small.yaml"
    path.write_text("num_envs: 8\nn_steps: 16\nhidden_dims: [16, 16]\nn_epochs: 1\nn_minibatches: 2\ntotal_timesteps: 128\n")
    out = tmp_path / "run"
    assert main(["--preset", PRESET, "--config", str(path), "--eval_episodes", "2", "--output", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    saved = yaml.safe_load((out / "config.yaml").read_text())
    preset = get_preset(PRESET).config
    assert saved["num_envs"] == 8 and saved["eval_num_episodes"] == 2 and "eval_episodes" not in saved
    assert saved["learning_rate"] == preset.learning_rate and saved["normalize_rewards"] is True
    assert "# policy snapshots kept in memory" in (out / "config.yaml").read_text()


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_eval_plots_into_an_unwritable_place_keep_eval_json(run, tmp_path, capsys):
    import shutil

    from powerzoojax.rl.training._cli import main

    out, _ = run
    folder = tmp_path / "run"
    shutil.copytree(out, folder)
    (folder / "eval.json").unlink(missing_ok=True)
    blocked = tmp_path / "plots"
    blocked.write_text("a file where the folder should be")
    assert main(["eval", str(folder), "--episodes", "1", "--plots", str(blocked)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write the plots into {blocked}" in err and "eval.json was written" in err
    assert json.loads((folder / "eval.json").read_text())["episodes"] == 1
