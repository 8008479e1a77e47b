#!/usr/bin/env bash
# The main job on a built-in default: sets up and builds, installs the
# Python package (the wheel of python/, libkfuse.so and library/ inside)
# into the python3 on PATH and runs `python3 -m kfuse doctor`, compiles the
# library's AdamW for the local GPU (sm_90 where there is none) and prints
# the kernel summary; checks it against float64 (on the GPU too, where one
# is present) and times it there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
update=${1:-library/optim/adamw.mlir}

echo "== python3 -m pip install ./python"
if python3 -m pip install --no-deps --force-reinstall -q ./python; then
  (cd /tmp && python3 -m kfuse doctor)
else
  echo "(pip could not install into $(command -v python3); in a virtual" \
       "environment: python3 -m pip install ./python)"
fi

echo "== kfuse compile $update --stats"
build/bin/kfuse compile "$update" --stats -o /dev/null
echo "== kfuse compile $update --no-fusion --stats"
build/bin/kfuse compile "$update" --no-fusion --stats -o /dev/null
echo "== kfuse check $update"
build/bin/kfuse check "$update"
echo "== kfuse bench $update"
build/bin/kfuse bench "$update" || echo "(bench needs a GPU)"
