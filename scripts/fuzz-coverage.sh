#!/usr/bin/env bash
# The line coverage of kfuse's front end (dialect/, passes/, codegen/,
# interpreter/) by the fuzz corpora: build-fuzz/corpus (what scripts/fuzz.sh
# found), test/Fuzz/corpus and test/Fuzz/regressions, each input run once
# through kfuse-fuzz-replay built with clang's source-based coverage into
# build-cov/. Prints llvm-cov's per-file report and one line per folder:
#   coverage: dialect 91.8% of 470 lines, ...
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-packages.sh
install_packages fuzz-coverage clang-22 cmake ninja-build libfmt-dev \
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f build-cov/build.ninja ]; then
  cmake -G Ninja -S . -B build-cov \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
    -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" \
    -DKFUSE_BUILD_TESTS=OFF \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCUDAToolkit_ROOT="$cuda" >/dev/null
fi
ninja -C build-cov kfuse-fuzz-replay

profiles=$(mktemp -d)
trap 'rm -rf "$profiles"' EXIT
corpora=(test/Fuzz/corpus test/Fuzz/regressions)
[ -d build-fuzz/corpus ] && corpora=(build-fuzz/corpus "${corpora[@]}")
LLVM_PROFILE_FILE="$profiles/%p.profraw" build-cov/bin/kfuse-fuzz-replay \
  "${corpora[@]}"
llvm=/usr/lib/llvm-22/bin
"$llvm/llvm-profdata" merge -o "$profiles/merged.profdata" "$profiles"/*.profraw
report=$("$llvm/llvm-cov" report build-cov/bin/kfuse-fuzz-replay \
  -instr-profile="$profiles/merged.profdata" dialect passes codegen interpreter)
echo "$report"
# Columns: file, regions, missed, cover, functions, missed, executed, lines,
# missed lines, line cover, ...
echo "$report" | awk '
  $1 ~ /^(dialect|passes|codegen|interpreter)\// {
    split($1, parts, "/"); dir = parts[1]
    lines[dir] += $8; missed[dir] += $9 }
  END {
    out = "coverage:"
    n = split("dialect passes codegen interpreter", dirs, " ")
    for (i = 1; i <= n; i++) {
      d = dirs[i]; total += lines[d]; gone += missed[d]
      out = out sprintf(" %s %.1f%% of %d lines,", d,
                        100 * (lines[d] - missed[d]) / lines[d], lines[d]) }
    printf "%s total %.1f%% of %d lines\n", out,
           100 * (total - gone) / total, total }'
