"""Checkpoints of a training run: the whole training state plus a JSON sidecar.

`checkpoints/update_NNNNNN.eqx` (the update count, zero-padded to six digits) holds
`eqx.tree_serialise_leaves` of the training state — policy, optimiser state, env
states, PRNG key, normalisation statistics, Lagrange multipliers — so a resumed run
continues bit for bit. The sidecar `update_NNNNNN.json` holds the format version, the
config, the preset (when the run came from one), the update and env-step counts, the
checkpoint's own metric row (the run's history is `metrics.jsonl` in the run folder, which
a resumed run reads back up to the checkpoint's update), the evaluation return it is
ranked by (`score`) and the SHA-256 of the `.eqx` bytes; both files are written
atomically, the sidecar last, so a checkpoint without a sidecar is an unfinished write
and is ignored.

A run keeps the newest `keep_checkpoints` checkpoints plus the best one (the highest
deterministic evaluation return, `eval_returns`, of the policy saved; see
`prune_checkpoints`), so a run folder's size does not grow with the run's length. A run
folder resolves to its newest checkpoint whose bytes match their checksum: a newer one
that is corrupted or half-written is skipped with a one-line `CheckpointWarning`.

A checkpoint holds the global state whatever the run's device layout: a state split over
the devices of several processes is gathered first, and process 0 writes it. Any number
of processes and devices can resume from it.
"""

import io
import json
import math
import os
import warnings
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
from powerzoojax.rl.algos._config import HOST_ONLY_FIELDS, saved_fields
from powerzoojax.core._distributed import gather_to_host, is_writer
from powerzoojax.rl.algos._files import atomic_write, sha256_bytes, sha256_file

CHECKPOINT_FORMAT = 3
# Format 2 sidecars repeated the whole metrics history; they are still read.
READABLE_FORMATS = (2, 3)
WHICH = ("latest", "best")
# The one config field a resumed run may change: a longer run continues the same one.
_EXTENDABLE = ("total_timesteps",)


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, corrupted, non-finite, or from another run."""


class CheckpointWarning(UserWarning):
    """A run folder's newest checkpoint was unusable and an older intact one is used instead."""


def sidecar_path(path: str) -> str:
    return os.path.splitext(path)[0] + ".json"


def checkpoint_score(rows: list[dict[str, Any]], update: int) -> float | None:
    """The deterministic evaluation return of the policy after `update` updates, or None.

    Row `update - 1` holds that policy's evaluation when one was due on that update, bar
    the first row, which scores the untrained policy. A checkpoint written between
    evaluations has no score of its own (an earlier evaluation scored another policy) and
    is never the best one.
    """
    if not 1 < update <= len(rows):
        return None
    value = rows[update - 1].get("eval_returns")
    return float(value) if value is not None and math.isfinite(value) else None


def save_checkpoint(
    path: str, trainer: Any, state: Any, rows: list[dict[str, Any]], *, preset: str | None = None
) -> None:
    """Write `path` (the training state) and its sidecar, each atomically.

    **Arguments:**

    - `path`: the checkpoint file.
    - `trainer`: the trainer (its config is recorded).
    - `state`: the training state.
    - `rows`: the metric rows so far (the sidecar keeps the checkpoint's own row and its
      `score`, see `checkpoint_score`).
    - `preset`: name of the preset, recorded so `load_policy` can rebuild the env.

    In a multi-process run every process calls it (the state's env-split leaves are
    gathered from all of them) and process 0 writes.
    """
    state = gather_to_host(state)
    if not is_writer():
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    buffer = io.BytesIO()
    eqx.tree_serialise_leaves(buffer, state)
    data = buffer.getvalue()
    update = int(state.update)
    sidecar = {
        "format": CHECKPOINT_FORMAT,
        "algo": trainer.config.algo,
        "env": trainer.env.name,
        "preset": preset,
        "update": update,
        "env_steps": update * trainer.batch_size,
        "n_updates": trainer.n_updates,
        "sha256": sha256_bytes(data),
        "config": trainer.config._asdict(),
        "metrics": rows[update - 1] if 0 < update <= len(rows) else None,
        "score": checkpoint_score(rows, update),
    }
    atomic_write(path, data)
    atomic_write(sidecar_path(path), json.dumps(sidecar))


def read_sidecar(path: str) -> dict[str, Any]:
    """The sidecar of checkpoint `path`, after checking that the checkpoint's bytes match its checksum."""
    side = sidecar_path(path)
    if not os.path.isfile(path) or not os.path.isfile(side):
        missing = path if not os.path.isfile(path) else side
        raise CheckpointError(f"checkpoint {path}: {missing} does not exist")
    try:
        with open(side) as f:
            sidecar = json.load(f)
    except json.JSONDecodeError as err:
        raise CheckpointError(f"checkpoint {path}: sidecar {side} is not valid JSON ({err})") from None
    if sidecar.get("format") not in READABLE_FORMATS:
        raise CheckpointError(
            f"checkpoint {path}: format {sidecar.get('format')!r}, expected one of {list(READABLE_FORMATS)}"
        )
    digest = sha256_file(path)
    if digest != sidecar.get("sha256"):
        raise CheckpointError(
            f"checkpoint {path} is corrupted: its SHA-256 is {digest}, the sidecar records {sidecar.get('sha256')}"
        )
    return sidecar


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Fields whose values differ between two `TrainConfig._asdict()` dicts, sorted; the
    logging fields (`HOST_ONLY_FIELDS`) are left out: a resumed run may log differently."""
    return sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k) and k not in HOST_ONLY_FIELDS)


@jax.jit
def _finite_leaves(tree: Any) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.inexact)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.asarray(True)


def learned_state_is_finite(state: Any) -> bool:
    """Whether every float of what training learns (the policy and the optimiser state) is finite.

    Env states are left out: an env may carry `inf` on purpose (an unlimited line).
    """
    learned = {name: getattr(state, name) for name in ("policy", "opt_state", "critic", "target", "log_alpha", "log_lambda")
               if hasattr(state, name)}
    return bool(_finite_leaves(eqx.filter(learned, eqx.is_inexact_array)))


def load_checkpoint(path: str, trainer: Any, key: jax.Array | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """Training state and metric rows of a checkpoint written by
    [`save_checkpoint`][powerzoojax.rl.training.save_checkpoint].

    **Arguments:**

    - `path`: the checkpoint file.
    - `trainer`: the trainer whose state structure it holds.
    - `key`: PRNG key for the skeleton state; `None` uses a fixed key.

    **Returns:**

    `(state, rows)`: the training state and the metric rows of updates 1 .. the
    checkpoint's, read from `metrics.jsonl` of the run folder holding `checkpoints/`
    (rows it lacks are left empty, with a `CheckpointWarning`).

    Raises [`CheckpointError`][powerzoojax.rl.training.CheckpointError] (a `ValueError`)
    when the files are missing or their checksum does not match, when the checkpoint was
    written under another config (the message lists the differing fields; only
    `total_timesteps` may grow), or when the saved policy or optimiser state holds a NaN
    or an infinity.
    """
    path = os.fspath(path)
    sidecar = read_sidecar(path)
    saved, current = saved_fields(sidecar["config"]), trainer.config._asdict()
    diff = config_differences(saved, current)
    extended = [k for k in diff if k in _EXTENDABLE]
    refused = [k for k in diff if k not in _EXTENDABLE]
    if refused:
        detail = ", ".join(f"{k}: saved {saved.get(k)!r}, now {current.get(k)!r}" for k in refused)
        raise CheckpointError(
            f"checkpoint {path} was written with a different config (fields {refused}: {detail}); a resumed run "
            "keeps its config and may only raise total_timesteps"
        )
    if extended and trainer.n_updates < int(sidecar["update"]):
        raise CheckpointError(
            f"checkpoint {path} is at update {sidecar['update']}; total_timesteps={current['total_timesteps']} "
            f"gives only {trainer.n_updates} updates (a resumed run can be extended, not shortened)"
        )
    template = jax.eval_shape(trainer.init, jr.PRNGKey(0) if key is None else key)
    try:
        state = eqx.tree_deserialise_leaves(path, template)
    except Exception as err:  # noqa: BLE001 - any decoding failure means the file does not fit this trainer
        raise CheckpointError(f"checkpoint {path} does not hold this trainer's state ({err})") from None
    state = jax.tree.map(lambda x: jnp.asarray(x) if isinstance(x, np.ndarray) else x, state)
    if not learned_state_is_finite(state):
        raise CheckpointError(f"checkpoint {path} holds NaN or infinite policy/optimiser values; it cannot be resumed or evaluated")
    return state, _history(path, sidecar)


def _history(path: str, sidecar: dict[str, Any]) -> list[dict[str, Any]]:
    """The metric rows of updates 1 .. the checkpoint's: from the sidecar (format 2) or
    from `metrics.jsonl` of the run folder holding `checkpoints/` (format 3)."""
    if sidecar["format"] == 2:
        return list(sidecar["metrics"])
    update = int(sidecar["update"])
    metrics = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))), "metrics.jsonl")
    rows: list[dict[str, Any]] = []
    if os.path.isfile(metrics):
        with open(metrics) as f:
            for line in f:
                if len(rows) == update:
                    break
                if line.strip():
                    rows.append(json.loads(line))
    if len(rows) < update:
        warnings.warn(
            f"checkpoint {path}: {metrics} holds {len(rows)} of its {update} metric rows; the run's history "
            "before them is left empty (NaN) in the result",
            CheckpointWarning, stacklevel=3,
        )
        rows += [{} for _ in range(update - len(rows))]
    return rows


def list_checkpoints(output_dir: str) -> list[str]:
    """Complete checkpoints (`.eqx` with a sidecar) in `output_dir/checkpoints`, oldest first."""
    folder = os.path.join(os.fspath(output_dir), "checkpoints")
    if not os.path.isdir(folder):
        return []
    names = sorted(f for f in os.listdir(folder) if f.startswith("update_") and f.endswith(".eqx"))
    paths = [os.path.join(folder, f) for f in names]
    return [p for p in paths if os.path.isfile(sidecar_path(p))]


def _score(path: str) -> float | None:
    """The `score` a sidecar records, without verifying the checkpoint (None if unreadable)."""
    try:
        with open(sidecar_path(path)) as f:
            score = json.load(f).get("score")
    except (OSError, ValueError):
        return None
    return float(score) if isinstance(score, (int, float)) and math.isfinite(score) else None


def _best(paths: list[str]) -> str | None:
    """The path with the highest score (the newest among equal ones), or None if none has one."""
    scored = [(score, i, p) for i, p in enumerate(paths) if (score := _score(p)) is not None]
    return max(scored)[2] if scored else None


def prune_checkpoints(output_dir: str, keep: int) -> list[str]:
    """Delete all but the newest `keep` complete checkpoints and the best one of a run folder.

    **Arguments:**

    - `output_dir`: the run folder.
    - `keep`: newest checkpoints kept (at least 1).

    **Returns:**

    The checkpoint files deleted (each with its sidecar, the sidecar first, so no
    half-deleted checkpoint ever looks complete).
    """
    found = list_checkpoints(output_dir)
    kept = set(found[-keep:]) | {_best(found)}
    gone = [p for p in found if p not in kept]
    for path in gone:
        for name in (sidecar_path(path), path):
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
    return gone


def latest_checkpoint(output_dir: str) -> str | None:
    """The newest complete checkpoint of a run folder (not verified: see `resolve_checkpoint`).

    **Arguments:**

    - `output_dir`: the run folder.

    **Returns:**

    Its path, or `None`.
    """
    found = list_checkpoints(output_dir)
    return found[-1] if found else None


def best_checkpoint(output_dir: str) -> str | None:
    """The complete checkpoint of a run folder with the highest evaluation return (`score`
    in its sidecar; the newest among equal ones), or `None` when no checkpoint was evaluated.

    **Arguments:**

    - `output_dir`: the run folder.

    **Returns:**

    Its path, or `None`.
    """
    return _best(list_checkpoints(output_dir))


def _newest_intact(candidates: list[str], folder: str) -> str:
    """The first of `candidates` (newest first) whose sidecar and checksum verify; warns once,
    in one line, when newer ones were skipped."""
    skipped: list[str] = []
    for path in candidates:
        try:
            read_sidecar(path)
        except CheckpointError as err:
            reason = str(err).replace(f"checkpoint {path}", "", 1).lstrip(": ")
            if reason.startswith("is corrupted"):
                reason = "corrupted: its SHA-256 does not match its sidecar's"
            skipped.append(f"{os.path.basename(path)} ({reason})")
            continue
        if skipped:
            warnings.warn(
                f"{folder}: skipped {len(skipped)} unusable checkpoint(s), {'; '.join(skipped)}; using "
                f"{os.path.basename(path)}, the newest intact one",
                CheckpointWarning, stacklevel=3,
            )
        return path
    if skipped:
        raise CheckpointError(f"{folder} holds no intact checkpoint: {'; '.join(skipped)}")
    raise CheckpointError(f"{folder} holds no checkpoint (expected {os.path.join(folder, 'checkpoints', 'update_*.eqx')})")


def resolve_checkpoint(path: str, which: str = "latest") -> str:
    """A checkpoint path from a checkpoint file, its sidecar, or a run folder.

    **Arguments:**

    - `path`: a checkpoint `.eqx`, its `.json` sidecar, or a run folder.
    - `which`: for a run folder, `"latest"` (its newest intact checkpoint: newer ones whose
      files are missing, unreadable or fail their checksum are skipped with a one-line
      `CheckpointWarning`) or `"best"` (the highest evaluation return; a corrupted best
      one falls back to the newest intact checkpoint, with the same warning).

    **Returns:**

    The checkpoint file. `CheckpointError` when a folder holds no intact checkpoint.
    """
    if which not in WHICH:
        raise ValueError(f"resolve_checkpoint: which must be one of {list(WHICH)}, got {which!r}")
    path = os.fspath(path)
    if os.path.isdir(path):
        found = list_checkpoints(path)[::-1]
        if which == "best":
            best = _best(found)
            if best is None:
                raise CheckpointError(
                    f"{path} holds no evaluated checkpoint (the run had no evaluation, eval_freq=0); use the latest one"
                )
            found = [best] + [p for p in found if p != best]
        return _newest_intact(found, path)
    if path.endswith(".json"):
        return os.path.splitext(path)[0] + ".eqx"
    return path
