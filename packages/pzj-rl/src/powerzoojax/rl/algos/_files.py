"""Files a run writes: atomic replacement, checksums, and the output folder's preflight check.

A run may be stopped at any instant (Ctrl-C, a job scheduler's SIGTERM, a full disk);
every file is therefore written to a temporary name in its own folder and moved into
place with `os.replace`, so a reader sees the old file or the new one, never half of
one. The file gets the permissions `open()` would give it (`0o666` less the umask, so
`0o644` under the usual umask): a run folder is shared with collaborators like any
other output, whereas `tempfile.mkstemp` alone would leave every file private (`0o600`).
"""

import hashlib
import os
import tempfile
import threading


class OutputDirError(ValueError):
    """The output folder cannot receive the run's files (raised before training starts)."""


_UMASK_LOCK = threading.Lock()


def new_file_mode() -> int:
    """The mode `open(path, "w")` gives a new file: `0o666` less the process umask.

    The umask can only be read by setting it, so it is set and restored under a lock.
    """
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str, data: bytes | str) -> None:
    """Write `data` to `path` through a temporary file in the same folder and `os.replace`,
    with the permissions of a file created by `open()` (see the module docstring)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_output_dir(output_dir: str) -> None:
    """Create `output_dir` and its `checkpoints` folder and prove both writable.

    Raises `OutputDirError` with a one-line message naming the path when a file
    stands where a folder must be or a folder cannot be written, so the problem shows up
    before any training time is spent.
    """
    for folder in (output_dir, os.path.join(output_dir, "checkpoints")):
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise OutputDirError(f"output folder problem: {folder} is a file, expected a folder")
        try:
            os.makedirs(folder, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as err:
            reason = err.strerror or type(err).__name__
            raise OutputDirError(f"output folder problem: cannot write to {folder} ({reason})") from None
