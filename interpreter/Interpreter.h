//===- Interpreter.h - CPU reference interpreter of updates -----*- C++ -*-===//
//
// Executes an update function, before or after fusion and specialization, on
// host buffers: the oracle for tests and `kfuse check`.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_INTERPRETER_H
#define KFUSE_INTERPRETER_INTERPRETER_H

#include "dialect/KFuseOps.h"

#include <vector>

namespace kfuse {

/// How results are rounded. Either way bf16 and f16 values are rounded to
/// their format (ties to even) where they are loaded (arguments) or made
/// (kfuse.convert, arith.truncf): storage is storage, also in the reference.
enum class Precision {
  F64, // every other value kept in double: the reference
  F32, // every result rounded to its element type, as the GPU computes
};

/// The update's arguments by index: tensors for param/grad/state arguments,
/// scalars for hyper arguments (the other vector of each index is unused).
/// Writes replace the tensors of their targets.
struct UpdateValues {
  std::vector<std::vector<double>> tensors;
  std::vector<double> scalars;
};

/// Runs `update` once on `values` in place: unfused whole-tensor ops,
/// kfuse.fused ops (the body once per element) or a mix. Tensor buffers must
/// all have one size, the static one if the type has it. Fails with a
/// diagnostic at the first op it cannot execute, on mismatched buffer sizes
/// or missing values; `values` is then left unchanged.
mlir::LogicalResult interpretUpdate(mlir::func::FuncOp update,
                                    UpdateValues &values, Precision precision);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_INTERPRETER_H
