"""Measurements as JSON lines for ``suite.py``: every throughput script reports its
headline figures through :func:`record`, which appends one line to the file named by
``PZJ_BENCH_RECORD`` (and does nothing when it is unset, so the scripts still run alone).
"""

import json
import os

RECORD_ENV = "PZJ_BENCH_RECORD"


def record(benchmark: str, config: str, value: float, unit: str, **extra: object) -> None:
    """Append ``{"benchmark", "config", "value", "unit", **extra}`` to ``$PZJ_BENCH_RECORD``."""
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    row = {"benchmark": benchmark, "config": config, "value": float(value), "unit": unit, **extra}
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
