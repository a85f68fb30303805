#!/usr/bin/env bash
# On an offline accelerator host: install .accelerator/wheels (scripts/accelerator_bundle.sh)
# under /tmp, append that folder to PYTHONPATH so the host's own JAX and libtpu stay first,
# and run the given command with it. The few packages the host's own index holds (absl-py
# for optax, matplotlib for the training runner's plots) come from that index when present.
#
#   scripts/accelerator_run.sh python3 benchmarks/suite.py --device tpu
#   scripts/accelerator_run.sh python3 benchmarks/device_agreement.py --compare .accelerator/cpu_reference.npz
#   scripts/accelerator_run.sh python3 benchmarks/compare_reference.py .accelerator/reference --one-at-a-time \
#       --ref-python /tmp/pzj-reference-python --ours-python /tmp/pzj-python --ref-commit "$(cat .accelerator/reference/COMMIT)"
#
# /tmp/pzj-python runs the host's Python with this project's packages; with a bundled
# reference (.accelerator/reference), /tmp/pzj-reference-python runs it with the
# reference's package instead (compare_reference.py starts each side without PYTHONPATH).
set -euo pipefail
cd "$(dirname "$0")/.."
site=${PZJ_SITE:-/tmp/pzj-site}
index=${PZJ_HOST_INDEX:-/opt/pypi/simple}
if [ ! -d .accelerator/wheels ]; then
  echo "accelerator_run.sh: no .accelerator/wheels here; run scripts/accelerator_bundle.sh on a machine with network first" >&2
  exit 2
fi
if [ ! -f "$site/.complete" ]; then
  python3 -m pip install --quiet --no-index --no-deps --target "$site" .accelerator/wheels/*.whl
  if [ -d "$index" ]; then
    PIP_CONFIG_FILE=/dev/null python3 -m pip install --quiet --isolated --only-binary=:all: --no-deps \
      --index-url "file://$index" --target "$site" absl-py typing-extensions pyyaml matplotlib contourpy cycler \
      fonttools kiwisolver pillow pyparsing python-dateutil six packaging
  fi
  touch "$site/.complete"
fi
if [ -d .accelerator/reference ] && [ ! -f "$site-reference/.complete" ]; then
  python3 -m pip install --quiet --no-index --no-deps --target "$site-reference" .accelerator/reference-wheels/*.whl
  if [ -d "$index" ]; then
    PIP_CONFIG_FILE=/dev/null python3 -m pip install --quiet --isolated --only-binary=:all: --no-deps \
      --index-url "file://$index" --target "$site-reference" flax optax absl-py typing-extensions pyyaml pandas \
      pytz tzdata pyarrow matplotlib contourpy cycler fonttools kiwisolver pillow pyparsing python-dateutil six \
      packaging msgpack orbax-checkpoint tensorstore rich treescope etils humanize nest-asyncio protobuf \
      simplejson aiofiles markdown-it-py mdurl pygments zipp importlib-resources fsspec
  fi
  printf '#!/usr/bin/env bash\nPYTHONPATH="%s" exec python3 "$@"\n' \
    "${PYTHONPATH:+$PYTHONPATH:}$(pwd)/.accelerator/reference:$site-reference" > /tmp/pzj-reference-python
  chmod +x /tmp/pzj-reference-python
  touch "$site-reference/.complete"
fi
printf '#!/usr/bin/env bash\nPYTHONPATH="%s" exec python3 "$@"\n' "${PYTHONPATH:+$PYTHONPATH:}$site" > /tmp/pzj-python
chmod +x /tmp/pzj-python
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$site"
exec "$@"
