#!/usr/bin/env bash
# The one script run on the GPU machine. It builds nothing: the build dir
# (default build/, or $KFUSE_BUILD) travels with the working tree.
#   bash scripts/gpu_run.sh
# Writes under $OUT (at most 8 files come back): gpu_run.log (everything),
# gtest.json, test_gpu.json, kfuse_bench.json, bench_multi_tensor.json,
# bench_adamw.json, test_gpu_norm.json, test_gpu_norm_update.json,
# host_norm.jsonl, bench_norm.json,
# profile_norm.jsonl, ab_emitters.jsonl,
# bench_compile.json, test_gpu_optim.json, test_gpu_optim_reduce.json,
# test_gpu_nn.json, test_gpu_dist.json,
# seed_stages.json
# (with KFUSE_GPU_SWEEP=1
# also sweep_norm.jsonl, and ln_bf16.sass).
# KFUSE_GPU_ONLY=optim, =norm, =torch, =ptx, =pkg, =models (or several,
# comma-separated) runs the unit tests and only those parts (the whole
# script does not fit one 10-minute device call); the ptx part writes ptx_check.log lines into gpu_run.log,
# ptx_bench.jsonl, ptx_plans.json and bench_load.json; pkg builds the wheel, installs it into a fresh venv and
# writes doctor.json; models writes real_models.json (KFUSE_MODELS,
# KFUSE_MODEL_IMPLS, KFUSE_MODEL_ROUNDS, KFUSE_LOSS_STEPS choose what).
# KFUSE_GPU_QUICK=1 leaves out the slow common steps (the cold-start
# benchmark, the unit tests, the plan cache, and optim's kfuse check and
# kfuse bench over every library file: about 9 minutes together), for a
# short device budget: KFUSE_GPU_QUICK=1 KFUSE_GPU_ONLY=torch runs the
# drop-ins' GPU tests alone.
set -u -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${KFUSE_BUILD:-build}
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export KFUSE_LIBRARY=$ROOT/$BUILD/lib/libkfuse.so
# NVRTC comes from the CUDA toolkit there; $BUILD/lib may hold bundled libs.
export LD_LIBRARY_PATH=$ROOT/$BUILD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
LOG=$OUT/gpu_run.log
: >"$LOG"
FAILURES=()

step() { echo; echo "=== $* ===" | tee -a "$LOG"; }
want() { [ "${KFUSE_GPU_ONLY:-all}" = all ] || [[ ",$KFUSE_GPU_ONLY," == *",$1,"* ]]; }
run() {
  # Runs a command, logs it, records a failure without stopping.
  echo "+ $*" >>"$LOG"
  "$@" 2>&1 | tee -a "$LOG"
  local rc=$?
  if [ $rc -ne 0 ]; then FAILURES+=("$* (exit $rc)"); fi
  return $rc
}

step "machine"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
  echo "commit: ${KFUSE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  ldd "$KFUSE_LIBRARY"; } 2>&1 | tee -a "$LOG"
# nvJitLink (the direct PTX path): the toolkit's, else a wheel's.
if ! python3 -c 'import ctypes; ctypes.CDLL("libnvJitLink.so.13")' 2>/dev/null &&
   [ ! -e /usr/local/cuda/lib64/libnvJitLink.so.13 ] && [ -z "${KFUSE_NVJITLINK:-}" ]; then
  found=$(find /usr /opt -name 'libnvJitLink.so.13*' 2>/dev/null | head -n 1)
  if [ -n "$found" ]; then export KFUSE_NVJITLINK=$found; fi
fi
echo "nvJitLink: ${KFUSE_NVJITLINK:-by soname or /usr/local/cuda/lib64}" | tee -a "$LOG"
if ldd "$KFUSE_LIBRARY" | grep -q "not found"; then
  FAILURES+=("libkfuse.so has unresolved libraries")
fi

quick() { [ "${KFUSE_GPU_QUICK:-0}" = 1 ]; }

if ! quick; then
  step "JIT cold start: AdamW IR to cubin vs a trivial NVRTC compile, disk hit"
  run python3 bench/bench_compile.py --kfuse "$BUILD/bin/kfuse" --out "$OUT"
fi

UNIT=$BUILD/test/unit/KFuseUnitTests
if [ -x "$UNIT" ] && ! quick; then
  step "unit tests (GPU present: driver tests run, no-GPU tests skip)"
  run "$UNIT" --gtest_output=json:"$OUT/gtest.json" --gtest_brief=1
fi

KFUSE=$BUILD/bin/kfuse
if [ -x "$KFUSE" ] && ! quick; then
  # As test/Runtime/plan-cache-gpu.test, for a machine without lit: the
  # runtime stores the plan, and a second process runs from the disk alone.
  step "plan cache through the runtime"
  PLAN_DIR=$(mktemp -d)
  for expect in "miss," "hit-disk,"; do
    line=$(KFUSE_CACHE_DIR=$PLAN_DIR KFUSE_LOG=info "$KFUSE" check \
      library/optim/adamw.mlir 2>&1 | tee -a "$LOG" | grep -m1 "compiled @adamw")
    echo "plan cache, expected $expect: $line" | tee -a "$LOG"
    case "$line" in *": $expect"*) ;; *) FAILURES+=("plan cache: expected $expect") ;; esac
  done
  rm -rf "$PLAN_DIR"
fi
if [ -x "$KFUSE" ] && want optim && ! quick; then
  step "kfuse check"
  for f in library/optim/*.mlir; do
    run "$KFUSE" check "$f"
    run "$KFUSE" check "$f" --param-dtype=bf16 --state-dtype=f32
    run "$KFUSE" check "$f" --no-fusion --numel=1000003
  done
  step "kfuse bench"
  : >"$OUT/kfuse_bench.json"
  for f in library/optim/*.mlir; do
    for dt in f32 bf16; do
      echo "+ $KFUSE bench $f --param-dtype=$dt" >>"$LOG"
      if "$KFUSE" bench "$f" --param-dtype=$dt --state-dtype=f32 --numel=67108864 \
          >>"$OUT/kfuse_bench.json" 2>>"$LOG"; then
        tail -n 1 "$OUT/kfuse_bench.json" | tee -a "$LOG"
      else
        FAILURES+=("kfuse bench $f $dt")
      fi
    done
  done
  step "grid size: blocks per SM (AdamW f32, 2^27 elements)"
  for blocks in 4 8 16 64 512; do
    if KFUSE_BLOCKS_PER_SM=$blocks "$KFUSE" bench library/optim/adamw.mlir \
        --numel=134217728 >>"$OUT/kfuse_bench.json" 2>>"$LOG"; then
      tail -n 1 "$OUT/kfuse_bench.json" | tee -a "$LOG"
    else
      FAILURES+=("kfuse bench blocks_per_sm=$blocks")
    fi
  done
fi

if [ -x "$KFUSE" ] && { want optim || want ptx; }; then
  step "direct PTX: kfuse check against the interpreter (--codegen=ptx)"
  for f in library/optim/adam.mlir library/optim/adamw.mlir library/optim/lion.mlir; do
    for dtypes in "--param-dtype=f32" "--param-dtype=bf16 --state-dtype=f32" \
        "--param-dtype=bf16" "--param-dtype=f16 --state-dtype=f32"; do
      for n in 1000003 1048576 7; do
        # shellcheck disable=SC2086
        run "$KFUSE" check "$f" --codegen=ptx $dtypes --numel=$n
      done
    done
  done
  step "direct PTX against the CUDA image: AdamW bandwidth, same run"
  : >"$OUT/ptx_bench.jsonl"
  for dt in f32 bf16; do
    for codegen in ptx cuda ptx cuda; do
      echo "+ $KFUSE bench adamw --codegen=$codegen --param-dtype=$dt" >>"$LOG"
      if "$KFUSE" bench library/optim/adamw.mlir --codegen=$codegen \
          --param-dtype=$dt --state-dtype=f32 --numel=268435456 \
          >>"$OUT/ptx_bench.jsonl" 2>>"$LOG"; then
        echo "codegen=$codegen $(tail -n 1 "$OUT/ptx_bench.jsonl")" | tee -a "$LOG"
      else
        FAILURES+=("kfuse bench adamw $codegen $dt")
      fi
    done
  done
  if want ptx; then
    step "python GPU tests through the default codegen (auto), compiles logged"
    KFUSE_LOG=info run timeout 200 python3 bench/test_gpu.py --json "$OUT/test_gpu.json"
    echo "compiles of direct PTX by the driver: $(grep -c 'miss, codegen .* driver' "$LOG")," \
      "through nvrtc: $(grep -c 'miss, codegen .* nvrtc' "$LOG")" | tee -a "$LOG"
    step "plans through the direct PTX against NVRTC: bits, step, first step"
    run timeout 150 python3 bench/ptx_plans.py --steps 10 --out "$OUT"
    step "the runtime's cold start (driver JIT, NVRTC) against a trivial compile"
    run timeout 300 python3 bench/bench_load.py --repeats 3 --out "$OUT"
  fi
fi

if want optim; then
  step "python GPU tests"
  run python3 bench/test_gpu.py --json "$OUT/test_gpu.json"

  step "multi-tensor AdamW benchmark (GPT-2 small list, 4096 tiny tensors, graphs)"
  run timeout 240 python3 bench/bench_multi_tensor.py --out "$OUT"

  step "AdamW benchmark"
  run python3 bench/bench_adamw.py --out "$OUT"
fi

if want norm; then
  step "python GPU tests: norms"
  run python3 bench/test_gpu_norm.py --json "$OUT/test_gpu_norm.json"
  # Every row layout, forced: registers, staged, staged with prefetch of
  # one and of two row groups.
  for stages in 0 1 2 3; do
    step "python GPU tests: norms with KFUSE_NORM_STAGES=$stages"
    KFUSE_NORM_STAGES=$stages run python3 bench/test_gpu_norm.py
  done

  # Every norm test again with the update emitter's row kernels.
  step "python GPU tests: norms with KFUSE_NORM_EMITTER=update"
  KFUSE_NORM_EMITTER=update run python3 bench/test_gpu_norm.py \
    --json "$OUT/test_gpu_norm_update.json"

  # The row kernels of the update emitter (KFUSE_NORM_EMITTER=update)
  # beside the norm emitter's, in one process per norm: outputs and speed.
  : >"$OUT/ab_emitters.jsonl"
  for n in layernorm_fwd rmsnorm_fwd layernorm_bwd rmsnorm_bwd; do
    step "norm emitter against the update emitter's rows: $n"
    run timeout 120 python3 bench/ab_norm.py --variant "norm=library/norm/$n.mlir" \
      --variant "update=library/norm/$n.mlir:KFUSE_NORM_EMITTER=update" \
      --rounds 3 --out "$OUT" &&
      cat "$OUT/ab_norm.jsonl" >>"$OUT/ab_emitters.jsonl"
  done

  if [ -x "$KFUSE" ]; then
    step "SASS of the bf16 LayerNorm forward (1024 columns)"
    "$KFUSE" compile library/norm/layernorm_fwd.mlir --cols=1024 \
      --input-dtype=bf16 --emit=cubin -o "$OUT/ln_bf16.cubin" 2>>"$LOG" &&
      cuobjdump -sass "$OUT/ln_bf16.cubin" >"$OUT/ln_bf16.sass" 2>>"$LOG" &&
      grep -cE '^ +/\*[0-9a-f]{4}\*/' "$OUT/ln_bf16.sass" | tee -a "$LOG"
    rm -f "$OUT/ln_bf16.cubin"
  fi

  step "host time per norm call (programmatic dependent launch on, off)"
  run python3 bench/host_norm.py --out "$OUT" --label pdl
  KFUSE_PDL=0 run python3 bench/host_norm.py --out "$OUT" --label no_pdl

  step "norm benchmark (LayerNorm, RMSNorm: kfuse, torch, torch.compile)"
  run timeout 300 python3 bench/bench_norm.py --out "$OUT"

  step "norm kernels under the profiler (row kernel vs finish kernel)"
  run timeout 120 python3 bench/profile_norm.py --out "$OUT"

  if [ "${KFUSE_GPU_SWEEP:-0}" = 1 ]; then
    step "norm layout sweep"
    run timeout "${KFUSE_SWEEP_TIMEOUT:-240}" python3 bench/sweep_norm.py --out "$OUT"
  fi
fi

if want torch; then
  step "python GPU tests: kfuse.torch.optim against torch.optim"
  run timeout 240 python3 bench/test_gpu_optim.py --json "$OUT/test_gpu_optim.json"

  step "python GPU tests: optimizers with reductions and fused clipping"
  run timeout 240 python3 bench/test_gpu_optim_reduce.py \
    --json "$OUT/test_gpu_optim_reduce.json"

  step "python GPU tests: kfuse.torch.nn against torch.nn"
  run timeout 240 python3 bench/test_gpu_nn.py --json "$OUT/test_gpu_nn.json"

  step "python GPU tests: kfuse.torch.optim under torch.distributed (FSDP2, DDP)"
  run timeout 240 python3 bench/test_gpu_dist.py --json "$OUT/test_gpu_dist.json"

  step "the seed's staged benchmark: GPT of 135 M params, kfuse and torch"
  run timeout 420 python3 bench/seed_stages.py --out "$OUT/seed_stages.json"
fi

if want pkg; then
  # The wheel as a user installs it (no KFUSE_* variable, a fresh venv that
  # sees the machine's torch), then the doctor: its launch check runs AdamW
  # on the GPU against the interpreter.
  step "wheel, installed apart, python -m kfuse doctor"
  # The machine's python3 is a venv holding torch; a venv made from it would
  # not see torch, so the wheel goes into a directory of its own on
  # PYTHONPATH, with no KFUSE_* variable.
  WHEEL_DIR=$(mktemp -d)
  run python3 -m pip wheel --no-deps -q -w "$WHEEL_DIR/dist" ./python \
    --config-settings libkfuse="$ROOT/$BUILD/lib/libkfuse.so"
  run python3 -m pip install -q --no-index --no-deps \
    --target "$WHEEL_DIR/site" "$WHEEL_DIR"/dist/kfuse-*.whl
  (cd / && env -u KFUSE_LIBRARY -u KFUSE_LIBRARY_DIR LD_LIBRARY_PATH= \
     PYTHONPATH="$WHEEL_DIR/site" python3 -m kfuse doctor --json \
     >"$OUT/doctor.json" 2>>"$LOG")
  rc=$?
  tee -a "$LOG" <"$OUT/doctor.json"
  [ $rc -eq 0 ] || FAILURES+=("python -m kfuse doctor (exit $rc)")
fi

if want models; then
  step "real models: GPT-2, BERT, Llama-style, torch's best against kfuse"
  run timeout "${KFUSE_MODELS_TIMEOUT:-540}" python3 bench/real_models.py \
    --models "${KFUSE_MODELS:-gpt2,bert,llama}" \
    --impls "${KFUSE_MODEL_IMPLS:-torch,kfuse}" \
    --rounds "${KFUSE_MODEL_ROUNDS:-7}" --loss-steps "${KFUSE_LOSS_STEPS:-0}" \
    --out "$OUT/real_models.json"
fi

step "summary"
if [ ${#FAILURES[@]} -eq 0 ]; then
  echo "all steps passed" | tee -a "$LOG"
  exit 0
fi
printf 'FAILED: %s\n' "${FAILURES[@]}" | tee -a "$LOG"
exit 1
