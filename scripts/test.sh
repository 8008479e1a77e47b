#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs every test: the lit suite
# (IR, passes, codegen, tools) and the GoogleTest unit tests. GPU tests skip
# where no GPU is present. Ends with one "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

# PyTorch (Debian's CPU build) for the CPU tests of kfuse.torch; without it
# they are reported unsupported and the rest runs.
if ! python3 -c "import torch" 2>/dev/null &&
   ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "test: installing python3-torch for the CPU tests of kfuse.torch"
  $sudo apt-get update -qq >/dev/null 2>&1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch \
    >/dev/null || echo "test: python3-torch not installed; its tests skip"
fi

log=$(mktemp)
/usr/lib/llvm-22/bin/lit -sv build/test build/test/unit 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
count() { sed -nE "s/^ +$1 *: +([0-9]+).*/\1/p" "$log" | head -1; }
passed=$(( $(count Passed) + 0 ))
failed=$(( $(count Failed) + $(count Unresolved) + $(count "Timed Out") + 0 ))
skipped=$(( $(count Unsupported) + $(count Skipped) + 0 ))
rm -f "$log"
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "kfuse: $passed passed, $failed failed, $skipped skipped"
exit "$status"
