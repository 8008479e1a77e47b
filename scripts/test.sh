#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs every test: the lit suite
# (IR, passes, codegen, tools) and the GoogleTest unit tests. GPU tests skip
# where no GPU is present. Ends with one "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1

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
