"""Command line: ``python -m powerzoojax`` / ``powerzoojax-train``.

    powerzoojax-train --list-presets
    powerzoojax-train --preset case5-economic-dispatch --seed 0 --output runs/ed
    powerzoojax-train --preset case5-safe-dispatch --total_timesteps 50000 --lambda_lr 0.1

``--config PATH`` (YAML) replaces the preset's config entirely; any other ``--key
value`` pair overrides that config field (values parsed as int, then float, then kept
as a string; ``true``/``false`` for boolean fields). ``--output PATH``: a directory that
receives ``result.json``, ``metrics.csv``/``.jsonl``, ``learning_curve.png``,
``config.yaml`` and ``checkpoints/``; a path ending in ``.json`` names the result file
and the rest goes next to it. ``--resume CHECKPOINT`` continues a run. Prints the
result summary as JSON.
"""

import argparse
import json
import os
import sys
from typing import Any


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if "," in text:
        return [_parse_value(t) for t in text.split(",") if t]
    return text


def _overrides(extra: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    while i < len(extra):
        token = extra[i]
        if not token.startswith("--"):
            raise SystemExit(f"powerzoojax-train: unexpected argument {token!r} (overrides are --key value pairs)")
        name = token[2:].replace("-", "_")
        if "=" in name:
            name, value = name.split("=", 1)
            i += 1
        else:
            if i + 1 >= len(extra):
                raise SystemExit(f"powerzoojax-train: override --{name} needs a value")
            value = extra[i + 1]
            i += 2
        out[name] = _parse_value(value)
    out.pop("seed", None)
    return out


def _print_presets(stream) -> None:
    from powerzoojax.rl.training._presets import list_presets

    rows = list_presets()
    width = max(len(r["name"]) for r in rows)
    stream.write(f"{'name':<{width}}  {'algo':<15} {'steps':>11}  description\n")
    for r in rows:
        stream.write(f"{r['name']:<{width}}  {r['algo']:<15} {r['total_timesteps']:>11,}  {r['description']}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="powerzoojax-train", description="Train a PowerZooJax preset (PPO, PPO-Lagrangian, Sauté-PPO)."
    )
    parser.add_argument("--list-presets", action="store_true", help="list the presets and exit")
    parser.add_argument("--preset", metavar="NAME", help="preset to train (see --list-presets)")
    parser.add_argument("--seed", type=int, default=42, help="PRNG seed (default 42)")
    parser.add_argument("--config", metavar="PATH", help="YAML config replacing the preset's")
    parser.add_argument("--output", metavar="PATH", help="output directory, or the result JSON path")
    parser.add_argument("--resume", metavar="CHECKPOINT", help="resume from a checkpoint (.eqx)")
    parser.add_argument("--progress", dest="progress", action="store_true", default=None, help="force the progress line")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress line")
    args, extra = parser.parse_known_args(argv)

    if args.list_presets:
        _print_presets(sys.stdout)
        return 0
    if not args.preset:
        parser.print_help(sys.stderr)
        return 1
    overrides = _overrides(extra)

    from powerzoojax.rl.algos._config import load_config
    from powerzoojax.rl.training._presets import get_preset
    from powerzoojax.rl.training._train import train

    try:
        get_preset(args.preset)
    except KeyError as err:
        sys.stderr.write(f"powerzoojax-train: {err.args[0]}\n")
        return 2
    config = load_config(args.config) if args.config else None
    output_dir, result_path = None, None
    if args.output:
        if args.output.endswith(".json"):
            result_path = args.output
            output_dir = os.path.dirname(args.output) or "."
        else:
            output_dir = args.output
            result_path = os.path.join(output_dir, "result.json")
    try:
        result = train(
            args.preset, config=config, seed=args.seed, output_dir=output_dir, progress=args.progress,
            resume_from=args.resume, **overrides,
        )
    except NotImplementedError as err:
        sys.stderr.write(f"powerzoojax-train: {err}\n")
        return 3
    except (TypeError, ValueError) as err:
        sys.stderr.write(f"powerzoojax-train: {err}\n")
        return 2
    if result_path is not None:
        result.save(result_path)
    print(json.dumps(result.summary, indent=2))
    return 0
