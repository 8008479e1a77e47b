//===- CudaNormInternal.h - analysis shared by the norm emitter -*- C++ -*-===//
//
// The norm code generator in two steps: CudaNorm.cpp classifies every value
// of a specialized norm (scalar, per row, per column, per element) and splits
// the program into phases at its row reductions; CudaNormSource.cpp lays the
// row out over threads and writes the kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_CUDANORMINTERNAL_H
#define KFUSE_CODEGEN_CUDANORMINTERNAL_H

#include "codegen/CudaNorm.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace kfuse::norm {

/// Where a value lives: uniform over the whole launch, one per row (uniform
/// over the threads of a row), one per column, one per element, or the
/// result of a column reduction (complete only after every row; it can only
/// be converted and written, by the finish kernel).
enum class ValueKind { scalar, row, col, full, columnSum };

/// A column output: the finish kernel sums the partials of `reduce`'s input
/// and stores them through `converts` (in order) into argument `arg`.
struct ColumnOutput {
  WriteOp write;
  ReduceOp reduce;
  llvm::SmallVector<ConvertOp> converts;
  unsigned arg = 0;
};

/// A specialized norm, classified and split into phases.
struct NormProgram {
  mlir::func::FuncOp func;
  KernelPlan plan; // kind, name, args and cols filled
  unsigned vectorWidth = 1;
  llvm::DenseMap<mlir::Value, ValueKind> kinds;
  /// Row reductions a value depends on, transitively (a row reduction
  /// counts itself): values of level k can be computed once the row
  /// reductions of levels <= k are done.
  llvm::DenseMap<mlir::Value, unsigned> levels;
  /// Values some write depends on; the rest is dead and not emitted.
  llvm::DenseSet<mlir::Value> needed;
  /// The body's operations in program order, return excluded.
  llvm::SmallVector<mlir::Operation *> ops;
  /// phases[k] holds the needed row reductions of level k + 1.
  llvm::SmallVector<llvm::SmallVector<ReduceOp>> phases;
  /// Writes of full and row outputs, done in the last phase.
  llvm::SmallVector<WriteOp> elementWrites, rowWrites;
  llvm::SmallVector<ColumnOutput> columnOutputs;

  ValueKind kindOf(mlir::Value value) const { return kinds.lookup(value); }
  unsigned levelOf(mlir::Value value) const { return levels.lookup(value); }
};

/// Threads of a warp, and most threads a row is spread over.
constexpr unsigned kWarpSize = 32;
constexpr unsigned kMaxThreadsPerRow = 1024;
/// Bytes of dynamic shared memory one block may use (sm_90's opt-in limit).
constexpr unsigned kMaxSharedBytes = 227 * 1024;

/// How a row is spread over threads.
struct Layout {
  unsigned vec = 1;      // elements per vector access
  int64_t vectors = 0;   // vectors per row, the last one maybe partial
  unsigned threads = 32; // threads per row
  unsigned items = 1;    // vectors a thread handles per chunk
  unsigned chunks = 1;   // chunks per row: 1 when the row is in registers
  unsigned rows = 1;     // rows per block
  /// The whole row at once (in registers, or staged when stages > 0), not
  /// looped over in chunks.
  bool inRegisters = true;
  /// Where column sums accumulate: in registers; with one row per block
  /// (each column has a single owner thread) in shared memory, or, when that
  /// is too small, in the block's own slice of the partials.
  enum class Sums { registers, shared, global } sums = Sums::registers;

  /// Buffers of the row group staged in shared memory: 0 keeps the full
  /// inputs in registers; 1 copies them in (cp.async) and reads them back
  /// per phase, which frees the registers for more resident blocks; 2 also
  /// copies the next row group while the current one is computed, in a
  /// grid of one wave.
  unsigned stages = 0;

  /// Whether each thread loads its vectors of the column inputs (weight,
  /// bias) once, before the row loop, and keeps them in registers for every
  /// row it handles, instead of loading them again in each phase of each
  /// row: their loads then overlap the row's own instead of waiting behind
  /// the row reduction. Rows in registers or staged only.
  bool columnInputsInRegisters = false;

  /// Blocks per SM the kernel's __launch_bounds__ asks ptxas to fit (see
  /// chooseLaunchBlocks in CudaNormLayout.cpp).
  unsigned launchBlocks = 1;

  unsigned blockSize() const { return threads * rows; }
  /// Vectors of one full input a row slot stages: every (item, thread).
  int64_t slotVectors() const { return int64_t(threads) * items; }
  unsigned warpsPerRow() const {
    return threads > kWarpSize ? threads / kWarpSize : 1;
  }
  /// Whether every (chunk, item, thread) slot holds a vector of the row.
  bool exact() const { return int64_t(threads) * items * chunks == vectors; }
};

/// What a thread keeps live per element it owns, for the register estimate.
struct RegisterDemand {
  unsigned fullInputs = 0; // arrays loaded once per row
  unsigned colInputs = 0;  // per-column loads in flight in a phase
  unsigned columnSums = 0; // accumulators, unless in shared memory
  /// For staging: bytes of one element of every full input together, and
  /// of the narrowest and the widest one.
  unsigned fullInputBytes = 0;
  unsigned narrowestInputBytes = 4;
  unsigned widestInputBytes = 0;
  /// Full inputs counted two elements a register (16-bit ones of a long
  /// row kept in registers; see chooseRowsLayout).
  bool packedFullInputs = false;
};

/// Blocks of a row kernel of `blockSize` threads kept resident per SM.
unsigned minBlocksPerSM(unsigned blockSize, unsigned minThreadsPerSM);

/// The row of `cols` columns, accessed `vec` elements at a time, spread over
/// threads: staged in shared memory (options.stages > 0, in as many buffers
/// as fit), else in registers when they fit, else the looped variant.
Layout chooseLayout(int64_t cols, unsigned vec, const RegisterDemand &demand,
                    const NormEmitOptions &options);

/// Bytes of shared memory one stage of a row group takes (every full
/// input of every row slot), and the column sums kept there, per block.
uint64_t stageBytes(const Layout &layout, const RegisterDemand &demand);
uint64_t columnSumBytes(const Layout &layout, const RegisterDemand &demand);

/// Classifies the specialized norm `func`; a diagnostic at the offending op
/// for anything the code generator does not support.
mlir::FailureOr<NormProgram> analyzeNorm(mlir::func::FuncOp func,
                                         const NormEmitOptions &options);

/// The expression of the single result of the elementwise op `op` on
/// element (scalar) operands spelled `operands`: emitOpExpression applied to
/// a scalar twin of `op`.
mlir::FailureOr<std::string>
emitElementExpression(mlir::Operation *op,
                      llvm::ArrayRef<std::string> operands);

/// Writes the kernels of `program` into its plan.
mlir::LogicalResult emitNormSource(NormProgram &program,
                                   const NormEmitOptions &options);

} // namespace kfuse::norm

#endif // KFUSE_CODEGEN_CUDANORMINTERNAL_H
