#!/usr/bin/env bash
# The main job on a built-in default: sets up and builds, compiles the
# library's AdamW for the local GPU (sm_90 where there is none) and prints
# the kernel summary; checks it against float64 (on the GPU too, where one
# is present) and times it there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
update=${1:-library/optim/adamw.mlir}

echo "== kfuse compile $update --stats"
build/bin/kfuse compile "$update" --stats -o /dev/null
echo "== kfuse compile $update --no-fusion --stats"
build/bin/kfuse compile "$update" --no-fusion --stats -o /dev/null
echo "== kfuse check $update"
build/bin/kfuse check "$update"
echo "== kfuse bench $update"
build/bin/kfuse bench "$update" || echo "(bench needs a GPU)"
