"""Training across processes: two processes on 127.0.0.1 (gloo CPU collectives), two host
devices each, roll out (``batch_rollout``) and train as one process does with the same
global batch, write one set of files
(process 0), resume from the shared checkpoint, and stop within a bounded time when one of
them is killed; the command line starts such a run.

Each process is a subprocess (``multiprocess_worker.py``) with its own timeout; ports come
from binding port 0. The processes share the suite's persistent compilation cache.
"""

import glob
import json
import os
import re
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "multiprocess_worker.py")
REPO = os.path.dirname(os.path.dirname(HERE))
# Float32 sums over the env batch run in another order once split over devices.
RTOL, ATOL = 1e-4, 1e-5


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env() -> dict[str, str]:
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "")
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count=2".strip()
    env["JAX_PLATFORMS"] = "cpu"
    env.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(REPO, ".pytest_cache", "jax-compile"))
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    return env


def launch(argv_of_rank, tmp_path, n: int = 2) -> list[subprocess.Popen]:
    procs = []
    for rank in range(n):
        # The child holds its own copy of the descriptor: the parent's closes at once.
        with open(tmp_path / f"log.rank{rank}.txt", "w") as log:
            procs.append(subprocess.Popen(argv_of_rank(rank), stdout=log, stderr=subprocess.STDOUT, env=process_env(),
                                          cwd=REPO))
    return procs


def finish(procs, tmp_path, timeout: float) -> list[str]:
    """Wait for every process (killing all of them past ``timeout``); their logs."""
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        raise
    return [(tmp_path / f"log.rank{r}.txt").read_text() for r in range(len(procs))]


def worker(mode: str, port: int, out, *algos: str):
    return lambda rank: [sys.executable, WORKER, mode, str(port), "2", str(rank), str(out), *algos]


def reference(algo: str) -> dict[str, np.ndarray]:
    """The same run in this process, on one device, without a mesh."""
    import jax
    import jax.random as jr

    sys.path.insert(0, HERE)
    from multiprocess_worker import flat_params, setup, toy_rollout

    from powerzoojax.rl import make_train

    if algo == "rollout":
        return {f"leaf_{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(toy_rollout()))}
    env, config = setup(algo)
    return flat_params(make_train(env, config)(jr.PRNGKey(0)))


def assert_same_run(got, ref, what: str) -> None:
    assert set(got.files) == set(ref), f"{what}: different parameters or metrics {set(got.files) ^ set(ref)}"
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=RTOL, atol=ATOL, err_msg=f"{what}: {name}")


def run_two_processes(tmp_path, algos: tuple[str, ...], timeout: float) -> list[str]:
    procs = launch(worker("train", free_port(), tmp_path, *algos), tmp_path)
    try:
        refs = {algo: reference(algo) for algo in algos}  # while the two processes run
    finally:
        logs = finish(procs, tmp_path, timeout)
    for rank, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"rank {rank} failed:\n{log[-3000:]}"
    assert "2 processes, 4 devices" in logs[0]
    for algo in algos:
        for rank in (0, 1):
            assert_same_run(np.load(tmp_path / f"{algo}.rank{rank}.npz"), refs[algo], f"{algo} rank {rank}")
    return logs


def test_two_processes_roll_out_and_train_as_one_write_once_and_resume(tmp_path):
    run_two_processes(tmp_path, ("rollout", "ppo_lagrangian"), timeout=240)
    from multiprocess_worker import UPDATES

    # Process 0 wrote the run's files, process 1 none.
    written = [json.loads((tmp_path / f"writes.rank{r}.json").read_text()) for r in (0, 1)]
    assert written[1] == []
    assert any(p.endswith(f"update_{UPDATES:06d}.eqx") for p in written[0])
    assert any(p.endswith("result.json") for p in written[0])
    checkpoints = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "run" / "checkpoints" / "*.eqx")))
    assert checkpoints == [f"update_{u:06d}.eqx" for u in range(1, UPDATES + 1)]
    # Resumed on both processes from the half-way checkpoint: the uninterrupted run.
    full = np.load(tmp_path / "ppo_lagrangian.rank0.npz")
    for rank in (0, 1):
        resumed = np.load(tmp_path / f"resumed.rank{rank}.npz")
        for name in full.files:
            np.testing.assert_array_equal(resumed[name], full[name], err_msg=f"resumed rank {rank}: {name}")


@pytest.mark.slow  # two more trainers compiled in three processes: 236 s on 2 busy cores (2026-12-02)
def test_two_processes_train_sac_and_ippo_as_one(tmp_path):
    run_two_processes(tmp_path, ("sac", "ippo_typed"), timeout=480)


def test_a_killed_process_stops_the_others_within_the_heartbeat_timeout(tmp_path):
    procs = launch(worker("hold", free_port(), tmp_path), tmp_path)
    first = tmp_path / "run" / "checkpoints" / "update_000001.json"
    try:
        deadline = time.monotonic() + 180
        # A checkpoint exists once both processes have finished an update together.
        while not first.exists():
            assert all(p.poll() is None for p in procs), "a process ended before training started"
            assert time.monotonic() < deadline, "training did not start"
            time.sleep(0.2)
        procs[1].kill()
        killed = time.monotonic()
        procs[0].wait(timeout=90)
        waited = time.monotonic() - killed
    finally:
        logs = finish(procs, tmp_path, timeout=10)
    assert procs[0].returncode != 0
    # heartbeat_timeout_s=5 in the worker: the survivor stops well before a minute.
    assert waited < 60, waited
    # The coordination service's message, or gloo's when a collective lost its peer first:
    # a closed or reset connection, or (the peer killed mid-message) a truncated message
    # caught by the TCP pair's own check.
    lost_peer = r"another task died|Connection (closed|reset) by peer|gloo::EnforceNotMet.*\n.*tcp/pair\.cc"
    assert re.search(lost_peer, logs[0]), logs[0][-3000:]


@pytest.mark.requires("powerzoojax.grid")  # the case-5 preset's TransGridEnv
def test_the_command_line_starts_a_two_process_run(tmp_path):
    out = tmp_path / "run"
    port = free_port()

    def cli(rank):
        return [sys.executable, "-m", "powerzoojax", "--preset", "case5-economic-dispatch", "--total_timesteps", "32",
                "--num_envs", "4", "--n_steps", "4", "--hidden_dims", "8", "--n_epochs", "1", "--n_minibatches", "2",
                "--eval_freq", "0", "--no-progress", "--output", str(out), "--coordinator", f"127.0.0.1:{port}",
                "--num-processes", "2", "--process-id", str(rank), "--heartbeat-timeout", "10"]

    procs = launch(cli, tmp_path)
    logs = finish(procs, tmp_path, timeout=240)
    assert [p.returncode for p in procs] == [0, 0], logs
    summary = json.loads((out / "result.json").read_text())["summary"]
    assert summary["env_steps"] == 32 and summary["status"] == "ok"
    assert (out / "checkpoints" / "update_000002.eqx").exists() and (out / "checkpoints" / "update_000002.json").exists()
    # Process 0 prints the summary; process 1 trained the same run silently.
    assert '"env_steps": 32' in logs[0] and '"env_steps"' not in logs[1]


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--coordinator", "127.0.0.1:1", "--process-id", "0"], "missing ['num_processes']"),
        (["--coordinator", "localhost", "--num-processes", "2", "--process-id", "0"], "must be 'host:port', got 'localhost'"),
        (["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"], "process_id must be in [0, 1], got 2"),
        (["--distributed", "--process-id", "0"], "do not also give --coordinator"),
        (["--heartbeat-timeout", "10"], "--heartbeat-timeout needs a multi-process run"),
        (["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "0", "--heartbeat-timeout", "0"],
         "heartbeat_timeout_s must be a positive number of seconds, got 0"),
    ],
)
def test_bad_multi_process_flags_are_one_line_errors(flags, expected, capsys):
    from powerzoojax.rl.training._cli import main

    assert main(["--preset", "case5-economic-dispatch", *flags]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1, err
