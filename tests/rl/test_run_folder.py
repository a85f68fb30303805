"""A run folder stays small and shareable: the newest checkpoints plus the best one, sidecars
with their own row only, files readable by others, and a corrupted newest checkpoint that
falls back to the intact one before it."""

import json
import os
import shutil
import stat

import jax.random as jr
import numpy as np
import pytest

N_UPDATES = 8


@pytest.fixture(scope="module")
def trainer(toy, tiny_config):
    from powerzoojax.rl import LogWrapper, make_train

    env, params = toy
    config = tiny_config.replace(total_timesteps=N_UPDATES * 8 * 16, eval_freq=2 * 8 * 16, eval_num_episodes=4,
                                 keep_checkpoints=2)
    return make_train(LogWrapper(env, params), config)


@pytest.fixture(scope="module")
def run_dir(trainer, tmp_path_factory):
    """A run that checkpointed after every update under the umask 022."""
    from powerzoojax.rl import run_training

    out = tmp_path_factory.mktemp("run")
    old = os.umask(0o022)
    try:
        result = run_training(trainer, jr.PRNGKey(3), output_dir=str(out), progress=False, checkpoint_every=1)
    finally:
        os.umask(old)
    return out, result


def _updates(folder):
    return sorted(int(f[len("update_"):-len(".eqx")]) for f in os.listdir(folder / "checkpoints") if f.endswith(".eqx"))


def _scores(result):
    """Evaluation return of the policy after each update (None where none was evaluated)."""
    evals = result.metrics["eval_returns"]
    return {u: float(evals[u - 1]) for u in range(2, N_UPDATES + 1) if np.isfinite(evals[u - 1])}


def test_the_newest_checkpoints_and_the_best_one_are_kept(run_dir):
    out, result = run_dir
    scores = _scores(result)
    assert sorted(scores) == [2, 4, 6, 8]
    best = max(scores, key=lambda u: (scores[u], u))
    assert _updates(out) == sorted({7, 8, best})
    for u in _updates(out):
        sidecar = json.loads((out / "checkpoints" / f"update_{u:06d}.json").read_text())
        assert sidecar["format"] == 3 and sidecar["score"] == scores.get(u)
    from powerzoojax.rl.training import best_checkpoint, resolve_checkpoint

    assert best_checkpoint(str(out)).endswith(f"update_{best:06d}.eqx")
    assert resolve_checkpoint(str(out), "best") == best_checkpoint(str(out))
    assert resolve_checkpoint(str(out)).endswith("update_000008.eqx")


def test_a_sidecar_holds_its_own_row_not_the_history(run_dir):
    out, result = run_dir
    sidecar = json.loads((out / "checkpoints" / "update_000008.json").read_text())
    assert isinstance(sidecar["metrics"], dict) and sidecar["metrics"]["update"] == 8
    assert sidecar["metrics"]["eval_returns"] == pytest.approx(float(result.metrics["eval_returns"][-1]))
    # The history is metrics.jsonl; a sidecar's size does not grow with the run's length.
    rows = (out / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == N_UPDATES
    sizes = {u: os.path.getsize(out / "checkpoints" / f"update_{u:06d}.json") for u in _updates(out)}
    assert max(sizes.values()) - min(sizes.values()) < 200, sizes


def test_files_get_the_permissions_of_the_umask(run_dir, tmp_path):
    out, _ = run_dir
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".eqx" for p in files) and any(p.name == "metrics.csv" for p in files)
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
    from powerzoojax.rl.algos._files import atomic_write

    old = os.umask(0o077)
    try:
        atomic_write(str(tmp_path / "private.txt"), "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600


def _corrupt(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_corrupted_newest_checkpoint_falls_back_to_the_intact_one(run_dir, trainer, tmp_path):
    from powerzoojax.rl import CheckpointWarning, run_training
    from powerzoojax.rl.training import resolve_checkpoint

    out, full = run_dir
    folder = tmp_path / "run"
    shutil.copytree(out, folder)
    _corrupt(folder / "checkpoints" / "update_000008.eqx")
    with pytest.warns(CheckpointWarning) as caught:
        path = resolve_checkpoint(str(folder))
    message = str(caught[0].message)
    assert path.endswith("update_000007.eqx") and "\n" not in message
    assert "update_000008.eqx" in message and "corrupted" in message and "using update_000007.eqx" in message
    # Resuming from the folder continues from update 7 and reaches the same end bit for bit.
    with pytest.warns(CheckpointWarning):
        resumed = run_training(trainer, jr.PRNGKey(0), resume_from=resolve_checkpoint(str(folder)),
                               output_dir=str(folder), progress=False, checkpoint_every=1)
    np.testing.assert_array_equal(resumed.metrics["eval_returns"], full.metrics["eval_returns"])
    rows = [json.loads(r) for r in (folder / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == list(range(1, N_UPDATES + 1))


def test_no_intact_checkpoint_is_a_one_line_error(run_dir, tmp_path):
    from powerzoojax.rl import CheckpointError
    from powerzoojax.rl.training import resolve_checkpoint

    out, _ = run_dir
    folder = tmp_path / "run"
    shutil.copytree(out, folder)
    for path in (folder / "checkpoints").glob("*.eqx"):
        _corrupt(path)
    with pytest.raises(CheckpointError, match=r"holds no intact checkpoint: update_\d+\.eqx \(corrupted") as err:
        resolve_checkpoint(str(folder))
    assert "\n" not in str(err.value)


def test_the_checkpoints_guide_names_the_files_as_written():
    from snippets import DOCS_DIR

    text = (DOCS_DIR / "guides" / "checkpoints.md").read_text(encoding="utf-8")
    assert "checkpoints/update_<NNNNNN>.eqx" in text and "update_000007.eqx" in text and "step_<" not in text
    assert "keep_checkpoints" in text and "n_checkpoints" in text


def test_distinct_episodes_counts_episodes_that_differ():
    from powerzoojax.rl.training._policy import _distinct_episodes

    same = {"return": np.full(4, -3.0), "cost_sum": np.zeros(4), "constraint_costs": np.zeros((4, 2))}
    assert _distinct_episodes(same) == 1
    costs = np.zeros((4, 2))
    costs[3, 1] = 0.5  # one episode differs in one cost channel only
    assert _distinct_episodes({**same, "constraint_costs": costs}) == 2
    assert _distinct_episodes({**same, "return": np.arange(4.0)}) == 4
