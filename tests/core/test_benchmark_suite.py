"""benchmarks/suite.py: what it would run on each device (no benchmark is run here; a
--quick pass of all scripts takes minutes), that XLA:CPU tuning never reaches a GPU run,
and that --device gpu without a GPU stops at once with a message saying what to install."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _module(name: str):
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_throughput_script_is_in_the_suite_on_both_devices():
    suite = _module("suite")
    scripts = {p.name for p in BENCHMARKS.glob("*_throughput.py")}
    for device in ("cpu", "gpu", "tpu"):
        for quick in (False, True):
            planned = {os.path.basename(argv[1]) for _, argv in suite.plan(device, quick)}
            assert planned == scripts, (device, quick, planned ^ scripts)


def test_cpu_tuning_is_left_out_of_a_gpu_run(monkeypatch):
    suite = _module("suite")
    cpu = [" ".join(argv) for _, argv in suite.plan("cpu", False, cores=2)]
    for device in ("gpu", "tpu"):
        accelerator = [" ".join(argv) for _, argv in suite.plan(device, False, cores=2)]
        assert not any("--host-devices" in c or "--single-thread" in c or "--one-thread" in c for c in accelerator)
    assert sum("--host-devices 2" in c for c in cpu) == 2
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_force_host_platform_device_count=2")
    env = suite.child_env("gpu", "record.jsonl")
    assert env["JAX_PLATFORMS"] == "cuda" and env["XLA_FLAGS"] == ""
    env = suite.child_env("tpu", "record.jsonl")
    assert env["JAX_PLATFORMS"] == "tpu" and env["XLA_FLAGS"] == ""
    assert suite.child_env("cpu", "record.jsonl")["XLA_FLAGS"].startswith("--xla_cpu_use_fusion_emitters=false")

    xla_env = _module("_xla_env")
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    xla_env.add_xla_flags("--xla_cpu_multi_thread_eigen=false", "--xla_force_host_platform_device_count=2",
                          "--xla_gpu_deterministic_ops=true")
    assert os.environ["XLA_FLAGS"] == "--xla_gpu_deterministic_ops=true"
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    xla_env.add_xla_flags("--xla_cpu_multi_thread_eigen=false")
    assert os.environ["XLA_FLAGS"].endswith("--xla_cpu_multi_thread_eigen=false")


def test_gpu_without_a_gpu_is_a_clear_error():
    pytest.importorskip("jax")
    import jax

    if any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("this machine has a GPU")
    out = subprocess.run([sys.executable, str(BENCHMARKS / "suite.py"), "--device", "gpu", "--only", "rollout"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "no GPU found by JAX" in out.stderr and "pzj-core[cuda12]" in out.stderr, out.stderr
