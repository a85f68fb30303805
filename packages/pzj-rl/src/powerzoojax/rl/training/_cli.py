"""Command line: `python -m powerzoojax` / `powerzoojax-train`.

    powerzoojax-train --list-presets
    powerzoojax-train --preset case5-economic-dispatch --seed 0 --output runs/ed
    powerzoojax-train --preset case5-safe-dispatch --total_timesteps 50000 --lambda_lr 0.1
    powerzoojax-train --resume runs/ed --total_timesteps 400000
    powerzoojax-train eval runs/ed --episodes 64 --split iid --trace runs/ed/episode.npz --plots runs/ed/plots

Every `TrainConfig` field is a flag of the same name (`--learning_rate` or
`--learning-rate`; `--lr` as in the YAML files); `--help` lists them with their
types, defaults and meaning. `--algo` offers the implemented algorithms (ppo,
ppo_lagrangian, saute_ppo, sac, apg, ippo, ippo_typed, ippo_typed_lagrangian). The
evaluation size is `--eval_num_episodes` (`--eval_episodes`, the reference's name, is
read as it). `--config PATH` (a YAML file of config fields) overrides the preset's
config: keys not given keep the preset's values, an unknown key is an error naming
it; the flags override single fields of both. `--output PATH`: a folder that
receives `result.json` (+ the weights `result.eqx`), `metrics.csv`/`.jsonl`,
`learning_curve.png`, `config.yaml` and `checkpoints/`; a path ending in `.json`
names the result file and the rest goes next to it. `--resume` takes a checkpoint or
a run folder, continues that run (same preset and config; only `--total_timesteps`
may grow) and writes into the same folder. Prints the result summary as JSON.

Several processes (one per host, or per GPU): start the same command in each with
`--coordinator HOST:PORT --num-processes P --process-id I` (or `--distributed` under
SLURM / Open MPI, where JAX reads them from the environment). The env batch
(`--num_envs`, the global batch) is split over every device of every process, process
0 writes the output folder, and every process can `--resume` from it. `--mesh` splits
the batch over the devices of a single process.

Exit codes: 0 done, 1 no preset given, 2 bad input (unknown preset, bad or missing
config file, output folder problem, unusable checkpoint, a run larger than the free
memory: refused before it starts, with XLA's estimate), 3 not implemented, 4 training
diverged, 128 + the signal number when SIGINT / SIGTERM stopped training (after
checkpointing). Every error is one line on stderr.
"""

import argparse
import contextlib
import json
import os
import sys
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any

EXIT_BAD_INPUT, EXIT_NOT_IMPLEMENTED, EXIT_DIVERGED = 2, 3, 4


# -- flags generated from TrainConfig ---------------------------------------------------


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _sequence(cast: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        try:
            return [cast(t) for t in text.split(",") if t.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {cast.__name__} values, got {text!r}") from None

    parse.__name__ = f"list of {cast.__name__}"
    return parse


def _converter(annotation: Any) -> tuple[Callable[[str], Any], str]:
    """`(parse, type name)` for a `TrainConfig` field annotation."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if annotation is bool:
        return _bool, "bool"
    if annotation in (int, float, str):
        return annotation, annotation.__name__
    if origin is tuple:
        return _sequence(args[0]), f"comma-separated {args[0].__name__}s"
    if origin in (typing.Union, types.UnionType):
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and rest[0] in (int, float):
            cast = rest[0]

            def parse(text: str) -> Any:
                return None if text.strip().lower() in ("none", "null") else cast(text)

            return parse, f"{cast.__name__} or none"
        if float in rest and any(typing.get_origin(a) is tuple for a in rest):
            many = _sequence(float)

            def parse(text: str) -> Any:
                return many(text) if "," in text else float(text)

            return parse, "float, or comma-separated floats (one per constraint)" + (" or none" if optional else "")
    raise TypeError(f"no command-line parser for TrainConfig annotation {annotation!r}")  # pragma: no cover


def _flag_names(name: str) -> list[str]:
    from powerzoojax.rl.algos._config import _ALIASES

    names = [f"--{name}"] + ([f"--{name.replace('_', '-')}"] if "_" in name else [])
    return names + [f"--{alias}" for alias, target in _ALIASES.items() if target == name]


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per field of the algorithms' configs (bar `seed`), with its type, default and meaning in
    the help. `--algo` offers the implemented algorithms only; `--eval_episodes` (the
    reference's unused field) is a hidden alias of `--eval_num_episodes`."""
    from powerzoojax.rl.algos._config import IMPLEMENTED_ALGOS, config_fields, field_docs

    docs = field_docs()
    group = parser.add_argument_group(
        "config overrides", "each field of the algorithms' configs; the default shown is TrainConfig's (a preset may "
        "set its own); a field the chosen algorithm does not read is refused"
    )
    for field in config_fields().values():
        if field.name == "seed":
            continue
        parse, type_name = _converter(field.type)
        default = field.default
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        metavar = type_name.split()[0].upper() if " " not in type_name else "VALUE"
        choices: tuple[str, ...] | None = None
        doc = docs.get(field.name, "")
        if field.name == "algo":
            choices, doc = IMPLEMENTED_ALGOS, "the training algorithm"
            metavar = "{" + ",".join(IMPLEMENTED_ALGOS) + "}"
        group.add_argument(
            *_flag_names(field.name), dest=field.name, type=parse, default=argparse.SUPPRESS, metavar=metavar,
            choices=choices, help=f"{type_name} (default: {shown})" + (f": {doc}" if doc else "").replace("%", "%%"),
        )
    parse, _ = _converter(int)
    group.add_argument("--eval_episodes", "--eval-episodes", dest="eval_num_episodes", type=parse,
                       default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _overrides(extra: list[str]) -> dict[str, Any]:
    """Config overrides from `--key value` flags (`--seed` is not one: it has its own flag)."""
    parser = argparse.ArgumentParser(prog="powerzoojax-train", add_help=False)
    parser.add_argument("--seed", type=int)
    add_config_flags(parser)
    values = vars(parser.parse_args(extra))
    values.pop("seed", None)
    return values


# -- training ---------------------------------------------------------------------------


def _print_presets(stream) -> None:
    from powerzoojax.rl.training._presets import list_presets

    rows = list_presets()
    width = max(len(r["name"]) for r in rows)
    stream.write(f"{'name':<{width}}  {'algo':<15} {'steps':>11}  description\n")
    for r in rows:
        stream.write(f"{r['name']:<{width}}  {r['algo']:<15} {r['total_timesteps']:>11,}  {r['description']}\n")


def _train_parser() -> argparse.ArgumentParser:
    from powerzoojax.rl.algos._config import IMPLEMENTED_ALGOS

    parser = argparse.ArgumentParser(
        prog="powerzoojax-train",
        description=f"Train a PowerZooJax preset with one of the algorithms {', '.join(IMPLEMENTED_ALGOS)} "
        "(--algo; each preset sets its own, see --list-presets). "
        "`powerzoojax-train eval RUN_DIR --help` evaluates a finished or stopped run.",
    )
    parser.add_argument("--list-presets", action="store_true", help="list the presets and exit")
    parser.add_argument("--preset", metavar="NAME", help="preset to train (see --list-presets)")
    parser.add_argument("--seed", type=int, default=None, help="PRNG seed (42; on --resume, the run's own)")
    parser.add_argument("--config", metavar="PATH", help="YAML file of config fields overriding the preset's "
                        "(the keys not given keep the preset's values; the flags override both)")
    parser.add_argument("--output", metavar="PATH", help="output folder, or the result JSON path")
    parser.add_argument("--resume", metavar="CHECKPOINT_OR_RUN_DIR", help="continue a run from a checkpoint "
                        "(a run folder: its newest); same config, --total_timesteps may grow")
    parser.add_argument("--checkpoint-every", type=int, metavar="UPDATES", default=None,
                        help="updates between checkpoints (default: every progress report, about 20 per run)")
    parser.add_argument("--progress", dest="progress", action="store_true", default=None,
                        help="force the progress line (default: live line on a terminal, plain lines every few seconds otherwise)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress line")
    group = parser.add_argument_group(
        "several devices and processes",
        "train data-parallel: the env batch split over every device of every process (jax.distributed)",
    )
    group.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0's coordinator (with "
                       "--num-processes and --process-id)")
    group.add_argument("--num-processes", type=int, metavar="P", help="processes in the run")
    group.add_argument("--process-id", type=int, metavar="I", help="this process's rank, 0 .. P-1")
    group.add_argument("--distributed", action="store_true", help="join a multi-process run whose coordinator, "
                       "size and rank JAX detects from the cluster (SLURM, Open MPI)")
    group.add_argument("--heartbeat-timeout", type=int, metavar="SECONDS", default=None,
                       help="seconds before a silent process counts as dead and the others stop (default: 30)")
    group.add_argument("--mesh", action="store_true", help="split the env batch over this process's devices "
                       "(implied in a multi-process run)")
    add_config_flags(parser)
    return parser


def _start_distributed(args: argparse.Namespace) -> tuple[bool, str | None]:
    """Join the multi-process run the flags describe, before anything computes with JAX;
    `(whether a mesh is wanted, error message)`."""
    explicit = [args.coordinator, args.num_processes, args.process_id]
    if all(v is None for v in explicit) and not args.distributed:
        if args.heartbeat_timeout is not None:
            return False, "--heartbeat-timeout needs a multi-process run (--coordinator ... or --distributed)"
        return bool(args.mesh), None
    if args.distributed and any(v is not None for v in explicit):
        return False, "--distributed detects the coordinator, size and rank; do not also give --coordinator/--num-processes/--process-id"
    from powerzoojax.core._distributed import DEFAULT_HEARTBEAT_TIMEOUT_S, init_distributed

    timeout = DEFAULT_HEARTBEAT_TIMEOUT_S if args.heartbeat_timeout is None else args.heartbeat_timeout
    try:
        init_distributed(args.coordinator, args.num_processes, args.process_id, heartbeat_timeout_s=timeout)
    except ValueError as err:
        return False, str(err)
    return True, None


def _fail(code: int, message: str) -> int:
    sys.stderr.write(f"powerzoojax-train: {message}\n")
    return code


@contextlib.contextmanager
def _notes():
    """Show a `CheckpointWarning` (an unusable checkpoint skipped for an older intact one) as
    one `powerzoojax-train: note: ...` line on stderr; other warnings pass through."""
    from powerzoojax.rl.training._checkpoint import CheckpointWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, CheckpointWarning):
            sys.stderr.write(f"powerzoojax-train: note: {message}\n")
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", CheckpointWarning)
        warnings.showwarning = show
        yield


def _resume_source(path: str) -> tuple[str, dict[str, Any]]:
    from powerzoojax.rl.training._checkpoint import read_sidecar, resolve_checkpoint

    checkpoint = resolve_checkpoint(path)
    return checkpoint, read_sidecar(checkpoint)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    with _notes():
        if argv and argv[0] == "eval":
            return eval_main(argv[1:])
        return _train_main(argv)


def _train_main(argv: list[str]) -> int:
    parser = _train_parser()
    args = parser.parse_args(argv)
    from powerzoojax.rl.algos._config import config_fields

    fields = config_fields()
    overrides = {k: v for k, v in vars(args).items() if k in fields and k != "seed"}

    if args.list_presets:
        _print_presets(sys.stdout)
        return 0
    want_mesh, problem = _start_distributed(args)
    if problem is not None:
        return _fail(EXIT_BAD_INPUT, problem)

    from powerzoojax.rl.algos._config import ConfigFileError, load_config
    from powerzoojax.rl.algos._files import OutputDirError
    from powerzoojax.rl.training._checkpoint import CheckpointError
    from powerzoojax.rl.training._presets import get_preset
    from powerzoojax.rl.training._runner import TrainingDiverged, TrainingInterrupted
    from powerzoojax.rl.training._train import train

    config, seed, preset, resume = None, args.seed, args.preset, None
    output = args.output
    try:
        if args.resume:
            resume, sidecar = _resume_source(args.resume)
            if sidecar.get("preset") is None:
                return _fail(EXIT_BAD_INPUT, f"{resume} comes from a run started from an env object; resume it with "
                             "train(env, resume_from=...)")
            if preset is not None and preset != sidecar["preset"]:
                return _fail(EXIT_BAD_INPUT, f"{resume} belongs to preset {sidecar['preset']!r}, not {preset!r}")
            preset = sidecar["preset"]
            config = load_config(sidecar["config"])
            seed = config.seed if seed is None else seed
            output = output or os.path.dirname(os.path.dirname(os.path.abspath(resume)))
        if not preset:
            parser.print_help(sys.stderr)
            return 1
        base = get_preset(preset).config if config is None else config
        if args.config:
            config = load_config(args.config, base=base)
            seed = config.seed if seed is None else seed
    except KeyError as err:
        return _fail(EXIT_BAD_INPUT, err.args[0])
    except (ConfigFileError, CheckpointError) as err:
        return _fail(EXIT_BAD_INPUT, str(err))
    seed = 42 if seed is None else seed
    output_dir, result_path = None, None
    if output:
        if output.endswith(".json"):
            result_path = output
            output_dir = os.path.dirname(output) or "."
        else:
            output_dir = output
            result_path = os.path.join(output_dir, "result.json")
    mesh = None
    if want_mesh:
        from powerzoojax.core import make_env_mesh

        mesh = make_env_mesh()
    try:
        result = train(
            preset, config=config, seed=seed, output_dir=output_dir, progress=args.progress, resume_from=resume,
            checkpoint_every=args.checkpoint_every, mesh=mesh, **overrides,
        )
    except NotImplementedError as err:
        return _fail(EXIT_NOT_IMPLEMENTED, str(err))
    except TrainingDiverged as err:
        return _fail(EXIT_DIVERGED, str(err))
    except TrainingInterrupted as err:
        return _fail(128 + err.signum, str(err))
    except (OutputDirError, CheckpointError) as err:
        return _fail(EXIT_BAD_INPUT, str(err))
    except (TypeError, ValueError) as err:
        return _fail(EXIT_BAD_INPUT, str(err))
    from powerzoojax.core._distributed import is_writer

    if not is_writer():
        return 0
    if result_path is not None and output_dir is not None and result_path != os.path.join(output_dir, "result.json"):
        result.save(result_path, preset=preset)
    print(json.dumps(_json_ready(result.summary), indent=2))
    return 0


def _json_ready(value: Any) -> Any:
    from powerzoojax.rl.algos._result import _jsonable

    return _jsonable(value)


# -- evaluation -------------------------------------------------------------------------


def eval_main(argv: list[str]) -> int:
    """`powerzoojax-train eval RUN_DIR`: evaluate a run's newest checkpoint, print and write `eval.json`."""
    from powerzoojax.rl.training._policy import SPLITS

    parser = argparse.ArgumentParser(
        prog="powerzoojax-train eval",
        description="Evaluate the deterministic policy of a run folder's newest checkpoint (or a checkpoint file); "
        "prints the evaluation as JSON and writes RUN_DIR/eval.json.",
    )
    parser.add_argument("run", metavar="RUN_DIR", help="run folder (or a checkpoint .eqx)")
    parser.add_argument("--checkpoint", choices=("latest", "best"), default="latest",
                        help="for a run folder: its newest intact checkpoint (default) or the one with the best "
                        "evaluation return")
    parser.add_argument("--episodes", type=int, default=32, help="evaluation episodes (default: 32)")
    parser.add_argument("--split", choices=SPLITS, default="iid",
                        help="iid (default): the training distribution on fresh episodes, or a task preset's iid split; "
                        "ood: a task preset's out-of-distribution split")
    parser.add_argument("--seed", type=int, default=None, help="evaluation seed (default: derived from the run's seed)")
    parser.add_argument("--trace", metavar="PATH", default=None,
                        help="also save one episode (observations, actions, rewards, costs, info, env states) as .npz")
    parser.add_argument("--plots", metavar="DIR", default=None,
                        help="also draw that episode into DIR: episode.png (load, dispatch, prices, reward, costs) and, "
                        "for an env on a case, network.png and episode.gif (needs matplotlib)")
    args = parser.parse_args(argv)

    from powerzoojax.rl.training._checkpoint import CheckpointError
    from powerzoojax.rl.training._policy import evaluate_run

    try:
        report = evaluate_run(args.run, episodes=args.episodes, split=args.split, seed=args.seed, trace_path=args.trace,
                              plots_dir=args.plots, which=args.checkpoint)
    except NotImplementedError as err:
        return _fail(EXIT_NOT_IMPLEMENTED, str(err))
    except (CheckpointError, KeyError, TypeError, ValueError) as err:
        return _fail(EXIT_BAD_INPUT, str(err.args[0] if isinstance(err, KeyError) else err))
    except OSError as err:  # the run folder's eval.json
        return _fail(EXIT_BAD_INPUT, f"cannot write {err.filename or args.run} ({err.strerror or type(err).__name__})")
    print(json.dumps(report, indent=2))
    if report.get("note"):
        sys.stderr.write(f"powerzoojax-train: note: {report['note']}\n")
    return 0
