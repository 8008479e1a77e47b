//===- CudaNorm.h - CUDA C++ for normalizations -----------------*- C++ -*-===//
//
// The code generator of norm functions (`kfuse.norm`): from a norm that
// kfuse-specialize has specialized (storage dtypes, a static row
// length), a KernelPlan with a row kernel and, with column reductions, a
// finish kernel, following the launch ABI under "Norm plans" in
// codegen/KernelPlan.h.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_CUDANORM_H
#define KFUSE_CODEGEN_CUDANORM_H

#include "codegen/CudaRows.h"
#include "codegen/KernelPlan.h"
#include "dialect/KFuseOps.h"

#include <string>
#include <vector>

namespace kfuse {

/// What the norm code generator needs beyond the specialized IR: the row
/// length and levels, the row layout's knobs, and the finish kernel's.
struct NormEmitOptions : RowLayoutOptions {
  /// The row length the norm was specialized on (kfuse-specialize's
  /// `cols`).
  int64_t cols = -1;
  /// The level of each argument as written, before specialization
  /// (getValueLevel). With `cols` == 1 a full tensor and a row tensor have
  /// the same type, so only this tells them apart. Empty: read from the
  /// argument types, which needs `cols` > 1.
  std::vector<ArgLevel> argLevels;
  /// Upper bound on the row kernel's grid with column reductions: each block
  /// writes `cols` partial sums per reduction, which the finish kernel reads.
  unsigned maxColumnReductionGrid = 1024;
  /// The finish kernel's block: `finishColumnsPerBlock` columns (a warp's
  /// worth, so that each load of a partial row is one 128-byte access)
  /// times `finishBlockSize / finishColumnsPerBlock` slices of the partial
  /// rows, added up in slice order.
  unsigned finishBlockSize = 256;
  unsigned finishColumnsPerBlock = 32;
  /// Generate the row kernel with the register-row loop of 2-D updates
  /// (emitRowsCuda) instead of this emitter: KFUSE_NORM_EMITTER=update, for
  /// comparing the two on one-phase norms while the loop gains what this
  /// emitter has.
  bool throughUpdateEmitter = false;
};

/// Emits the CUDA source and launch plan of the specialized norm `norm`.
/// Fails with a diagnostic at the offending op (or the function) for
/// anything it cannot generate.
mlir::FailureOr<KernelPlan> emitNormCuda(mlir::func::FuncOp norm,
                                         const NormEmitOptions &options);

/// The emitter's options for the norm `norm` as written (its argument
/// levels; call before runPipeline specializes it) over `cols` columns, with
/// the layout knobs the environment sets.
NormEmitOptions getNormEmitOptions(mlir::func::FuncOp norm, int64_t cols);

/// The layout overrides the environment sets for measuring
/// (KFUSE_NORM_STAGES, KFUSE_NORM_MIN_THREADS_PER_SM, KFUSE_NORM_LAUNCH_BLOCKS,
/// KFUSE_NORM_MAX_ELEMENTS,
/// KFUSE_NORM_BLOCK_SIZE, KFUSE_NORM_SUMS, KFUSE_NORM_COLUMNS), as a
/// cache-key fragment: kernels compiled under other overrides are other
/// kernels. Read once per process, at the first call; with
/// KFUSE_NORM_LIVE_KNOBS=1 at every call, for processes that change the
/// knobs between compiles (bench/ab_norm.py, bench/sweep_norm.py).
/// getNormEmitOptions always reads them afresh.
const std::string &normTuningKey();

/// Whether KFUSE_NORM_LIVE_KNOBS=1 asks for the norm knobs (the layout ones
/// above and the runtime's KFUSE_NORM_BLOCKS_PER_SM) to be read at every
/// use instead of once per process.
bool normLiveKnobs();

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDANORM_H
