"""Every throughput benchmark in one command, one table: on the CPU, a GPU or a TPU.

    uv run python benchmarks/suite.py --device gpu                 # the full set on a GPU
    scripts/accelerator_run.sh python3 benchmarks/suite.py --device tpu   # on an offline TPU host
    uv run python benchmarks/suite.py --device cpu --quick         # a smoke run (small N, few repeats)
    uv run python benchmarks/suite.py --device cpu --only rollout training --output table.md

It runs the scripts of this folder one after another, each in its own process (each sets
process-wide XLA options before JAX starts), and collects the headline figure of every
configuration they time (they append it to the file named by ``PZJ_BENCH_RECORD``, see
``_record.py``) into one Markdown table: benchmark, configuration, throughput, first call
or compile seconds. The scripts' own output (references, accuracy checks, machine lines)
goes to the terminal as they run.

``--device gpu`` (``tpu``) runs every script with ``JAX_PLATFORMS=cuda`` (``tpu``) and without the XLA:CPU
tuning (forced host devices, single-core pinning, ``--xla_cpu_*`` flags: ``_xla_env``
drops them on a GPU run). When JAX finds no GPU it stops at once with exit code 2 and says
what to install (``pzj-core[cuda12]`` or ``[cuda13]``) instead of timing the CPU under a GPU
label. ``--device cpu`` splits the env batch of the scripts that support it over one XLA
host device per core.

Exit code: 0 when every script ran, 1 when one failed (its row says how), 2 on bad input.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name, script, arguments of the full run, arguments of --quick, CPU-only arguments (a
# function of the core count). The full runs are the README's target checks.
BENCHMARKS = (
    ("rollout", "rollout_throughput.py",
     ["--cases", "5", "118", "--n-envs", "256", "4096", "--repeats", "3"],
     ["--cases", "5", "--n-envs", "256", "--repeats", "2", "--horizon", "16", "--numpy-steps", "96"], None),
    ("opf", "opf_throughput.py", ["--quick"], ["--quick", "--cases", "5"], None),
    ("uc", "trans_modes_throughput.py",
     ["--cases", "118", "--kinds", "dcopf", "uc", "--n-envs", "256", "--horizon", "16", "--repeats", "3"],
     ["--quick", "--cases", "5", "--kinds", "dcopf", "uc", "--baseline-calls", "3"], None),
    ("ac", "trans_modes_throughput.py",
     ["--kinds", "acpf", "--cases", "118", "--n-envs", "1024", "--horizon", "4", "--repeats", "1"],
     ["--quick", "--kinds", "acpf", "--cases", "5", "--baseline-calls", "3"], None),
    ("ac-pf", "ac_pf_throughput.py", ["--quick"], ["--cases", "5", "--n-envs", "64", "--repeats", "2"], None),
    ("distribution", "dist_throughput.py", ["--quick", "--harness", "table"],
     ["--workloads", "DistGridEnv 33bw", "--n-envs", "256", "--repeats", "2", "--harness", "table"],
     lambda cores: ["--host-devices", str(cores)] if cores > 1 else []),
    ("dcmg", "dcmg_throughput.py", ["--n-envs", "256", "--repeats", "5", "--pre-drawn"],
     ["--quick", "--n-envs", "64"],
     lambda cores: ["--host-devices", str(cores)] if cores > 1 else []),
    ("market", "market_throughput.py",
     ["--n-envs", "1024", "--repeats", "3", "--highs-instances", "200", "--gencos-n-envs", "256", "1024",
      "--gencos-steps", "16"],
     ["--n-envs", "64", "--repeats", "2", "--highs-instances", "10", "--gencos-n-envs", "64", "--gencos-steps", "8"],
     None),
    ("training", "train_throughput.py", ["--n-envs", "256", "--repeats", "2"],
     ["--n-envs", "64", "--updates", "1", "--repeats", "1", "--n-steps", "16", "--epochs", "1"], None),
    ("ippo", "ippo_throughput.py", ["--quick"], ["--quick", "--n-envs", "64", "--n-steps", "8"], None),
)
NAMES = tuple(b[0] for b in BENCHMARKS)
PLATFORM = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"}


def plan(device: str, quick: bool, only: tuple[str, ...] = (), cores: int | None = None) -> list[tuple[str, list[str]]]:
    """``(name, argv)`` of every script the suite runs, in order."""
    cores = (os.cpu_count() or 1) if cores is None else cores
    out = []
    for name, script, full, short, cpu_only in BENCHMARKS:
        if only and name not in only:
            continue
        argv = [sys.executable, os.path.join(HERE, script), *(short if quick else full)]
        if device == "cpu" and cpu_only is not None:
            argv += cpu_only(cores)
        out.append((name, argv))
    return out


def child_env(device: str, record_path: str) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS=PLATFORM[device], PZJ_BENCH_RECORD=record_path)
    if device in ("gpu", "tpu"):
        # Each script is its own process, one after another: no need to grab 75 % of the
        # device's memory up front, and an inherited XLA:CPU flag has nothing to tune.
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(("--xla_cpu_", "--xla_force_host"))]
        env["XLA_FLAGS"] = " ".join(flags)
    return env


def probe(device: str) -> tuple[dict | None, str]:
    """``(JAX's version and the devices the suite would run on, "")``, or ``(None, why
    not)``; asked in a child process, the suite's own stays free of JAX."""
    code = (
        "import json, jax\n"
        "try:\n"
        f"    d = jax.devices({device!r})\n"
        "except Exception as err:\n"
        "    print(json.dumps({'error': f'{type(err).__name__}: {err}'}))\n"
        "else:\n"
        "    print(json.dumps({'jax': jax.__version__, 'backend': d[0].platform, 'devices': [x.device_kind for x in d]}))\n"
    )
    # Without JAX_PLATFORMS, so that a missing GPU reads as JAX's own explanation.
    env = {k: v for k, v in child_env(device, os.devnull).items() if k != "JAX_PLATFORMS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        errors = [line for line in out.stderr.strip().splitlines() if line.strip()]
        return None, errors[-1] if errors else f"exit code {out.returncode}"
    info = json.loads(lines[-1])
    return (None, info["error"]) if "error" in info else (info, "")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def table(rows: list[dict], header: list[str]) -> str:
    lines = header + ["", "| benchmark | configuration | throughput | unit | first call / compile s |",
                      "|---|---|---:|---|---:|"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['benchmark']} | **failed**: {r['failed']} | – | – | – |")
            continue
        compile_s = f"{r['compile_s']:.1f}" if r.get("compile_s") is not None else "–"
        lines.append(f"| {r['benchmark']} | {r['config']} | {r['value']:,.0f} | {r['unit']} | {compile_s} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu", "tpu"), required=True, help="the backend every script runs on")
    ap.add_argument("--quick", action="store_true", help="a smoke run: small batches, few repeats (minutes on a CPU)")
    ap.add_argument("--only", nargs="+", choices=NAMES, default=(), metavar="NAME",
                    help=f"run these benchmarks only ({', '.join(NAMES)})")
    ap.add_argument("--output", metavar="PATH", help="also write the table (Markdown) here")
    ap.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    args = ap.parse_args(argv)
    steps = plan(args.device, args.quick, tuple(args.only))
    if args.dry_run:
        env = child_env(args.device, "RECORD")
        print(f"JAX_PLATFORMS={env['JAX_PLATFORMS']} XLA_FLAGS={env.get('XLA_FLAGS', '')!r}")
        for name, cmd in steps:
            print(f"{name}: {' '.join(cmd)}")
        return 0
    info, problem = probe(args.device)
    if info is None:
        sys.stderr.write(
            f"suite.py --device {args.device}: no {args.device.upper()} found by JAX ({problem}). "
            + ("Install JAX's CUDA wheels (uv sync --all-packages --extra cuda12, or pip install 'pzj-core[cuda12]' / "
               "'pzj-core[cuda13]') on a Linux machine with an NVIDIA driver, or run --device cpu.\n"
               if args.device == "gpu" else
               "On a TPU VM, JAX's libtpu must be installed (pip install 'pzj-core[tpu]'; on an offline host, "
               "scripts/accelerator_run.sh).\n" if args.device == "tpu" else "\n")
        )
        return 2
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    rows: list[dict] = []
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in steps:
            record = os.path.join(tmp, f"{name}.jsonl")
            print(f"\n== {name}: {' '.join(os.path.relpath(c) if c.startswith(HERE) else c for c in cmd[1:])}", flush=True)
            rc = subprocess.run(cmd, env=child_env(args.device, record)).returncode
            got = []
            if os.path.exists(record):
                with open(record) as f:
                    got = [json.loads(line) for line in f if line.strip()]
            rows.extend(got)
            if rc != 0 or not got:
                failed = True
                rows.append({"benchmark": name, "failed": f"exit code {rc}" if rc else "no measurement recorded"})
    minutes = (time.perf_counter() - start) / 60
    header = [
        f"Benchmark suite, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{'--quick' if args.quick else 'full'}, --device {args.device}",
        "",
        f"JAX {info['jax']} ({info['backend']}: {len(info['devices'])} × {info['devices'][0]}); "
        f"host {cpu_model()}, {os.cpu_count()} cores; load average {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; {minutes:.1f} min in all",
    ]
    text = table(rows, header)
    print("\n" + text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
