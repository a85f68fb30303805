"""`python -m powerzoojax`: the training command line of pzj-rl (`powerzoojax.rl.training._cli`).

It lives in pzj-core so that the command answers in every install: with pzj-rl missing,
or a preset whose grid or market distribution is missing, it prints one line naming
what to install instead of a traceback.
"""

import sys

from powerzoojax.core._provider import import_provider, missing_extra_message

PROG = "python -m powerzoojax"


def run(argv: list[str] | None = None) -> int:
    """Exit status of the command line run on `argv` (default `sys.argv[1:]`)."""
    try:
        cli = import_provider("powerzoojax.rl.training._cli", "the training command line", "pzj-rl")
    except ImportError as err:
        sys.stderr.write(f"{PROG}: {err}\n")
        return 1
    try:
        return cli.main(argv)
    except ImportError as err:
        message = missing_extra_message(err, "the requested preset")
        if message is None:
            raise
        sys.stderr.write(f"{PROG}: {message}\n")
        return 1


if __name__ == "__main__":
    raise SystemExit(run())
