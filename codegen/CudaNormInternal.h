//===- CudaNormInternal.h - analysis shared by the norm emitter -*- C++ -*-===//
//
// The norm code generator in two steps: CudaNorm.cpp classifies every value
// of a specialized norm (scalar, per row, per column, per element) and splits
// the program into phases at its row reductions; CudaNormSource.cpp writes
// the kernels, with the row layout and the combination of a row's parts
// that 2-D updates use too (CudaRows.h).
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
