#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs every test: the lit suite
# (IR, passes, codegen, tools) and the GoogleTest unit tests, then the fuzz
# smoke run (scripts/fuzz.sh: the front end under ASan and UBSan, 120 s from
# seed 1; KFUSE_FUZZ_SECONDS=0 skips it). GPU tests skip where no GPU is
# present. Ends with one "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

# PyTorch (Debian's CPU build) for the CPU tests of kfuse.torch; without it
# they are reported unsupported and the rest runs.
if ! python3 -c "import torch" 2>/dev/null &&
   ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  source scripts/install-packages.sh
  install_packages test python3-torch ||
    echo "test: python3-torch not installed; its tests skip"
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

fuzz_seconds=${KFUSE_FUZZ_SECONDS:-120}
if [ "$fuzz_seconds" -gt 0 ]; then
  if scripts/fuzz.sh --seconds="$fuzz_seconds" --seed=1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    status=1
  fi
fi
echo "kfuse: $passed passed, $failed failed, $skipped skipped"
exit "$status"
