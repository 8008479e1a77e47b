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

#include "codegen/KernelPlan.h"
#include "dialect/KFuseOps.h"

#include <string>
#include <vector>

namespace kfuse {

/// What the norm code generator needs beyond the specialized IR, and its
/// tuning knobs.
struct NormEmitOptions {
  /// The row length the norm was specialized on (kfuse-specialize's
  /// `cols`).
  int64_t cols = -1;
  /// The level of each argument as written, before specialization
  /// (getValueLevel). With `cols` == 1 a full tensor and a row tensor have
  /// the same type, so only this tells them apart. Empty: read from the
  /// argument types, which needs `cols` > 1.
  std::vector<ArgLevel> argLevels;
  /// Most elements of one tensor a thread keeps in registers (the row is
  /// split over at most 1024 threads; longer rows take the looped variant).
  unsigned maxElementsPerThread = 32;
  /// Threads the row kernel keeps resident per SM at least: the register
  /// cap per thread follows (more threads, more bytes in flight).
  unsigned minThreadsPerSM = 512;
  /// Blocks per SM the row kernel's __launch_bounds__ asks ptxas to fit; 0
  /// chooses (see chooseLaunchBlocks in CudaNormLayout.cpp). More blocks
  /// make ptxas allocate fewer registers, so more bytes are in flight.
  unsigned launchMinBlocksPerSM = 0;
  /// Threads per block the row kernel aims for when rows are short (several
  /// rows per block).
  unsigned targetBlockSize = 256;
  /// Upper bound on the row kernel's grid with column reductions: each block
  /// writes `cols` partial sums per reduction, which the finish kernel reads.
  unsigned maxColumnReductionGrid = 1024;
  /// The finish kernel's block: `finishColumnsPerBlock` columns (a warp's
  /// worth, so that each load of a partial row is one 128-byte access)
  /// times `finishBlockSize / finishColumnsPerBlock` slices of the partial
  /// rows, added up in slice order.
  unsigned finishBlockSize = 256;
  unsigned finishColumnsPerBlock = 32;
  /// Most buffers of a row group staged in shared memory (0: rows stay in
  /// registers; see Layout::stages in CudaNormInternal.h). Fewer are used
  /// where they do not fit; rows of vectors under 16 bytes are not staged.
  /// -1 chooses: the next row group is prefetched (2) when a block holds a
  /// single row, whose phases would otherwise leave the SM without loads
  /// in flight; blocks of several rows overlap each other well enough with
  /// one buffer, and prefetching, which needs a one-wave grid, costs them
  /// (measured on the H200: bench/results/2026-12-03-h200-norm-sweep.jsonl).
  int stages = -1;
  /// Where a block of one row keeps its column sums (every column has a
  /// single owner thread): `automatic` keeps them in the owner's registers
  /// where the register estimate allows, else in shared memory where that
  /// fits beside the stages; `registers` and `shared` force either. Blocks
  /// of several rows always add them up in registers.
  enum class ColumnSums { automatic, registers, shared };
  ColumnSums columnSums = ColumnSums::automatic;
  /// Where a thread keeps its vectors of the column inputs (weight, bias):
  /// `reload` loads them in every phase of every row that reads them;
  /// `registers` loads them once per thread, before the row loop, where the
  /// row is whole (in registers or staged). Reloading is the default: the
  /// held vectors cost occupancy, and on the H200 that cost more than the
  /// loads saved (the bf16 LayerNorm forward at 4096 columns: 86.5 % of
  /// the copy bandwidth reloading, 68.2 % held;
  /// bench/results/2026-12-03-h200-norm-columns-ab.jsonl).
  enum class ColumnInputs { reload, registers };
  ColumnInputs columnInputs = ColumnInputs::reload;
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
