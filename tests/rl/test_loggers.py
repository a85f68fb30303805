"""The runner's metric sinks: TensorBoard event files, Weights & Biases (against a stand-in
module: the real package is heavy and not a test dependency), the tqdm progress bar, and
their continuation when a run is resumed from a checkpoint."""

import io
import json
import os
import pathlib
import struct
import sys
import types

import jax.random as jr
import numpy as np
import pytest


def _read_scalars(log_dir: str) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the TensorBoard event files of ``log_dir``: ``{tag: [(step, value), ...]}`` in file order."""
    from tensorboardX.proto import event_pb2

    out: dict[str, list[tuple[int, float]]] = {}
    for name in sorted(os.listdir(log_dir)):
        with open(os.path.join(log_dir, name), "rb") as f:
            data = f.read()
        pos = 0
        while pos < len(data):  # TFRecord: length (u64), its CRC, payload, payload CRC
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((int(event.step), float(value.simple_value)))
    return out


class _FakeWandb:
    """Records what the logger asks of ``wandb``: ``init`` keyword arguments, logged rows, finish."""

    def __init__(self):
        self.inits: list[dict] = []
        self.logged: list[tuple[int, dict]] = []
        self.finished = 0
        self.util = types.SimpleNamespace(generate_id=lambda: "run123")

    def init(self, **kwargs):
        self.inits.append(kwargs)
        fake = self

        class Run:
            def log(self, data, step):
                fake.logged.append((step, dict(data)))

            def finish(self):
                fake.finished += 1

        return Run()


@pytest.fixture(scope="module")
def logged_run(toy, tiny_config, tmp_path_factory):
    """Four updates with TensorBoard and (stand-in) W&B, then a resume to six updates with a tqdm bar."""
    pytest.importorskip("tensorboardX")
    pytest.importorskip("tqdm")
    from powerzoojax.rl import LogWrapper, make_train, run_training

    env, params = toy
    out = str(tmp_path_factory.mktemp("logged"))
    fake = _FakeWandb()
    saved = sys.modules.get("wandb")
    sys.modules["wandb"] = fake
    try:
        config = tiny_config.replace(loggers=("tensorboard", "wandb"), eval_freq=2 * 8 * 16, eval_num_episodes=2)
        first = run_training(make_train(LogWrapper(env, params), config), jr.PRNGKey(0), output_dir=out, progress=False)
        n_first = len(fake.logged)
        bar = io.StringIO()
        longer = config.replace(total_timesteps=6 * 8 * 16, progress_bar="tqdm", loggers=("tensorboard", "wandb"))
        resumed = run_training(
            make_train(LogWrapper(env, params), longer), jr.PRNGKey(0), output_dir=out, progress=True, stream=bar,
            resume_from=os.path.join(out, "checkpoints", "update_000004.eqx"),
        )
    finally:
        if saved is None:
            sys.modules.pop("wandb", None)
        else:
            sys.modules["wandb"] = saved
    return out, first, resumed, fake, n_first, bar.getvalue()


def test_tensorboard_gets_every_row_at_its_env_step_and_continues_after_resume(logged_run):
    out, first, resumed, *_ = logged_run
    with open(os.path.join(out, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 6  # the files hold the whole run: restored rows, then the new ones
    scalars = _read_scalars(os.path.join(out, "tensorboard"))
    returns = scalars["train/episode_return"]
    assert [step for step, _ in returns] == [r["env_steps"] for r in rows]  # no step twice across the resume
    np.testing.assert_allclose([v for _, v in returns], [r["episode_return"] for r in rows], rtol=1e-6)
    evals = scalars["eval/returns"]
    assert [step for step, _ in evals] == [r["env_steps"] for r in rows if r.get("eval_returns") is not None]
    assert len(os.listdir(os.path.join(out, "tensorboard"))) == 2  # one event file per run


def test_wandb_logs_offline_and_the_resumed_run_continues_the_same_run(logged_run):
    out, first, resumed, fake, n_first, _ = logged_run
    assert len(fake.inits) == 2 and fake.finished == 2
    for init in fake.inits:
        assert init["mode"] == "offline" and init["project"] == "powerzoojax" and init["id"] == "run123"
        assert init["dir"] == os.path.join(out, "wandb") and init["resume"] == "allow"
        assert init["config"]["loggers"] == ["tensorboard", "wandb"]
    assert pathlib.Path(out, "wandb_run_id").read_text() == "run123"
    steps = [step for step, _ in fake.logged]
    assert n_first == 4 and steps == [(i + 1) * 8 * 16 for i in range(6)]
    assert "train/episode_return" in fake.logged[0][1] and "env_steps" not in fake.logged[0][1]


def test_tqdm_bar_counts_the_resumed_run_to_the_end(logged_run):
    *_, text = logged_run
    assert "768/768" in text and "100%" in text and "return=" in text


def test_loggers_need_an_output_folder_and_name_their_extra(toy, tiny_config, monkeypatch, tmp_path):
    from powerzoojax.rl import LogWrapper, make_train, run_training

    env, params = toy
    trainer = make_train(LogWrapper(env, params), tiny_config.replace(loggers=("tensorboard",)))
    with pytest.raises(ValueError, match=r"loggers=\['tensorboard'\] write under the output folder"):
        run_training(trainer, jr.PRNGKey(0), progress=False)
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match=r"needs tensorboardX: pip install 'pzj-rl\[tensorboard\]'"):
        run_training(trainer, jr.PRNGKey(0), output_dir=str(tmp_path), progress=False)


def test_logging_fields_may_change_on_resume_and_may_be_left_out_of_a_complete_config(tmp_path):
    import yaml

    from powerzoojax.rl import TrainConfig
    from powerzoojax.rl.algos._config import HOST_ONLY_FIELDS, load_config
    from powerzoojax.rl.training._checkpoint import config_differences

    saved = TrainConfig()._asdict()
    now = TrainConfig(loggers=("tensorboard",), progress_bar="tqdm", wandb_mode="online")._asdict()
    assert config_differences(saved, now) == []
    assert config_differences(saved, TrainConfig(learning_rate=1e-3)._asdict()) == ["learning_rate"]
    data = {k: v for k, v in TrainConfig()._asdict().items() if k not in HOST_ONLY_FIELDS}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    assert load_config(path, complete=True) == TrainConfig()
    assert TrainConfig().replace(loggers="tensorboard, wandb").loggers == ("tensorboard", "wandb")
    with pytest.raises(ValueError, match=r"loggers must be distinct names from \['tensorboard', 'wandb'\], got \['tb'\]"):
        TrainConfig(loggers=("tb",))
    with pytest.raises(ValueError, match=r"progress_bar must be one of \['line', 'tqdm'\], got 'bar'"):
        TrainConfig(progress_bar="bar")
