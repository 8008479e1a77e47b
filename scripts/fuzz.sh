#!/usr/bin/env bash
# Fuzzes kfuse's front end (tools/kfuse-fuzz/FuzzFrontEnd.cpp) with
# libFuzzer, AddressSanitizer and UBSan, assertions on (docs/Fuzzing.md).
#
#   scripts/fuzz.sh                 build, replay test/Fuzz, fuzz 120 s (seed 1)
#   scripts/fuzz.sh --seconds=3600 --seed=7 --jobs=2 --log=fuzz.log
#   scripts/fuzz.sh --replay-only   build and replay test/Fuzz only
#   (--log keeps libFuzzer's whole output)
#
# Builds into build-fuzz/ with clang-22 (installed with apt-get where
# missing). Every input of test/Fuzz/corpus and test/Fuzz/regressions runs
# once under the sanitizers, then libFuzzer mutates from them into
# build-fuzz/corpus (kept between runs) with test/Fuzz/kfuse.dict. A crash,
# a sanitizer report, a leak, an input slower than --timeout or a process
# past 4 GiB stops the run with a non-zero exit; the input is saved in
# build-fuzz/artifacts/. The last line reads
#   fuzz: N runs, coverage C edges (F features), 0 crashes
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=120
seed=1
jobs=1
timeout=20
replay_only=0
keep_log=""
for arg in "$@"; do
  case "$arg" in
    --seconds=*) seconds=${arg#*=} ;;
    --seed=*) seed=${arg#*=} ;;
    --jobs=*) jobs=${arg#*=} ;;
    --timeout=*) timeout=${arg#*=} ;;
    --replay-only) replay_only=1 ;;
    --log=*) keep_log=${arg#*=} ;;
    *) echo "fuzz: unknown argument '$arg' (see the header of $0)" >&2; exit 2 ;;
  esac
done

source scripts/install-packages.sh
install_packages fuzz clang-22 libclang-rt-22-dev cmake ninja-build libfmt-dev \
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -G Ninja -S . -B build-fuzz \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DKFUSE_SANITIZE="address;undefined" -DKFUSE_ASSERTIONS=ON -DKFUSE_FUZZ=ON \
    -DKFUSE_BUILD_TESTS=OFF \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCUDAToolkit_ROOT="$cuda" >/dev/null
fi
ninja -C build-fuzz kfuse-fuzz

root=$PWD
fuzzer=$root/build-fuzz/bin/kfuse-fuzz
rm -rf build-fuzz/artifacts build-fuzz/fuzz-*.log
mkdir -p build-fuzz/corpus build-fuzz/artifacts
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
common=(-timeout="$timeout" -rss_limit_mb=4096
        -artifact_prefix="$root/build-fuzz/artifacts/" -print_final_stats=1)
corpora=("$root/build-fuzz/corpus" "$root/test/Fuzz/corpus"
         "$root/test/Fuzz/regressions")

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "fuzz: replaying test/Fuzz/corpus and test/Fuzz/regressions"
"$fuzzer" "${common[@]}" -runs=0 test/Fuzz/corpus test/Fuzz/regressions 2>&1 |
  tail -n 20
if [ "$replay_only" -eq 1 ]; then
  echo "fuzz: replay passed"
  exit 0
fi

echo "fuzz: fuzzing for $seconds s (seed $seed, $jobs job(s))"
status=0
if [ "$jobs" -gt 1 ]; then
  # Workers share build-fuzz/corpus; each logs to build-fuzz/fuzz-N.log.
  (cd build-fuzz && "$fuzzer" "${common[@]}" -seed="$seed" \
    -max_total_time="$seconds" -max_len=8192 -dict="$root/test/Fuzz/kfuse.dict" \
    -jobs="$jobs" -workers="$jobs" "${corpora[@]}") > "$log" 2>&1 || status=$?
  cat build-fuzz/fuzz-*.log >> "$log" 2>/dev/null || true
else
  "$fuzzer" "${common[@]}" -seed="$seed" -max_total_time="$seconds" \
    -max_len=8192 -dict=test/Fuzz/kfuse.dict "${corpora[@]}" > "$log" 2>&1 ||
    status=$?
fi
[ -n "$keep_log" ] && cp "$log" "$keep_log"
grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==" "$log" | head -n 40 || true
runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" |
  awk '{ s += $1 } END { print s + 0 }')
cov=$(sed -nE 's/^#[0-9]+.* cov: ([0-9]+) .*/\1/p' "$log" | sort -n | tail -n 1)
ft=$(sed -nE 's/^#[0-9]+.* ft: ([0-9]+) .*/\1/p' "$log" | sort -n | tail -n 1)
crashes=$(find build-fuzz/artifacts -type f | wc -l)
echo "fuzz: $runs runs, coverage ${cov:-?} edges (${ft:-?} features), $crashes crashes"
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
  echo "fuzz: FAILED (exit $status); inputs in build-fuzz/artifacts/" >&2
  exit 1
fi
