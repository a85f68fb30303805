#!/usr/bin/env bash
# Prepare a run on an offline accelerator host (a TPU VM with JAX and libtpu but no network):
# put this project's wheels, and the wheels of its dependencies that such a host's package
# index lacks, into .accelerator/wheels (git-ignored), at the versions of uv.lock. Copy or
# mount the checkout there and run scripts/accelerator_run.sh.
#
#   scripts/accelerator_bundle.sh                      # Python 3.11, manylinux x86-64 (the TPU VM image)
#   PZJ_PYTHON_VERSION=3.12 scripts/accelerator_bundle.sh
#   scripts/accelerator_bundle.sh /path/to/PowerZooJax # also the reference implementation, for
#                                                      # benchmarks/compare_reference.py there
#
# The reference's package goes to .accelerator/reference (its parquet data sets stay out:
# the benchmark workloads do not read them), and the wheels it needs beyond the host's
# index (chex, jaxopt) to .accelerator/reference-wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.accelerator/wheels
rm -rf "$out"
mkdir -p "$out"
uv build --all-packages --wheel --out-dir "$out" >/dev/null
# Pure-Python dependencies missing from a stock TPU image, pinned to the lock.
pins=$(python3 - <<'PY'
import tomllib
wanted = {"equinox", "beartype", "jaxtyping", "wadler-lindig", "optax", "chex", "toolz"}
lock = tomllib.load(open("uv.lock", "rb"))
print(" ".join(f"{p['name']}=={p['version']}" for p in lock["package"] if p["name"] in wanted))
PY
)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "${PZJ_PYTHON_VERSION:-3.11}" \
  --platform manylinux_2_17_x86_64 --dest "$out" $pins
if [ $# -ge 1 ]; then
  ref=$(cd "$1" && pwd)
  rm -rf .accelerator/reference .accelerator/reference-wheels
  mkdir -p .accelerator/reference .accelerator/reference-wheels
  if git -C "$ref" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$ref" ls-tree -r --name-only HEAD powerzoojax | grep -v '/data/parquet/' \
      | xargs git -C "$ref" archive HEAD -- | tar -x -C .accelerator/reference
    git -C "$ref" rev-parse --short HEAD > .accelerator/reference/COMMIT
  else
    (cd "$ref" && tar -c --exclude='powerzoojax/data/parquet' powerzoojax) | tar -x -C .accelerator/reference
  fi
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "${PZJ_PYTHON_VERSION:-3.11}" \
    --platform manylinux_2_17_x86_64 --dest .accelerator/reference-wheels chex jaxopt toolz
fi
du -sh .accelerator/*
