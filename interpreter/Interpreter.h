//===- Interpreter.h - CPU reference interpreter of updates -----*- C++ -*-===//
//
// Executes an update function, before or after fusion and specialization, on
// host buffers: the oracle for tests and `kfuse check`.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_INTERPRETER_H
#define KFUSE_INTERPRETER_INTERPRETER_H

#include "dialect/KFuseOps.h"

#include <cstdint>
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
  /// Per tensor argument (empty: none), 1 where the element's value hangs on
  /// a decision taken near its threshold (see interpretUpdate's
  /// `decisionSlack`). Kept up to date only for written tensors; a caller
  /// that replaces a tensor's values clears its entry.
  std::vector<std::vector<uint8_t>> ambiguous;
};

/// Runs `update` once on `values` in place: unfused whole-tensor ops,
/// kfuse.fused ops (the body once per element) or a mix. Tensor buffers must
/// all have one size, the static one if the type has it. Fails with a
/// diagnostic at the first op it cannot execute, on mismatched buffer sizes
/// or missing values; `values` is then left unchanged.
///
/// With `decisionSlack` > 0 it also tracks which elements are ambiguous: a
/// comparison whose operands differ by at most `decisionSlack` times their
/// largest magnitude over the tensor, a floor or ceil that near an integer,
/// a copysign of a near-zero sign, a remainder near a multiple, and every
/// value computed from one of those. Another rounding of the same math (f32
/// against the f64 reference) may decide such an element the other way:
/// Lion's sign(c) for c within rounding of 0 moves the param by 2 * lr.
mlir::LogicalResult interpretUpdate(mlir::func::FuncOp update,
                                    UpdateValues &values, Precision precision,
                                    double decisionSlack = 0.0);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_INTERPRETER_H
