//===- Interpreter.h - CPU reference interpreter of kfuse functions -*- C++
//-*-===//
//
// Executes a kfuse function (an update over 1-D or 2-D tensors, or a norm),
// before or after fusion and specialization, on host buffers: the oracle for
// tests and `kfuse check`. One interpreter for every kind of function: a
// 1-D tensor of n elements is n rows of one column.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_INTERPRETER_H
#define KFUSE_INTERPRETER_INTERPRETER_H

#include "dialect/KFuseOps.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kfuse {

/// How results are rounded. Either way bf16 and f16 values are rounded to
/// their format (ties to even) where they are loaded (arguments) or made
/// (kfuse.convert, arith.truncf): storage is storage, also in the reference.
enum class Precision {
  /// Every other value kept in double, sums compensated: the reference.
  F64,
  /// What the GPU computes: every op result rounded to its element type.
  /// A reduction's result is the correctly rounded one, which the GPU's
  /// tree of f32 partial sums approaches in whatever order it adds.
  F32,
};

/// The runtime extents of a tensor: rows x cols. A 1-D tensor of n elements
/// is n x 1.
struct Extents {
  int64_t rows = 0;
  int64_t cols = 0;
  bool operator==(const Extents &other) const {
    return rows == other.rows && cols == other.cols;
  }
};

/// A tensor on the host: rows x cols (full), rows x 1 (one value per row,
/// or a 1-D tensor) or 1 x cols (one per column), row-major.
struct HostTensor {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> elements;

  HostTensor() = default;
  HostTensor(int64_t rows, int64_t cols, double fill = 0.0)
      : rows(rows), cols(cols),
        elements(static_cast<size_t>(rows * cols), fill) {}
  double &at(int64_t row, int64_t col) { return elements[row * cols + col]; }
  double at(int64_t row, int64_t col) const {
    return elements[row * cols + col];
  }
};

/// A function's arguments by index. As inputs: a tensor for every tensor
/// argument it reads (input, param, grad, state), a scalar for a state at
/// the tensor level and, optionally, for `hyper` arguments (absent: its
/// kfuse.default). As results: a tensor for every written argument (a
/// scalar for a state at the tensor level). Other slots are empty.
struct ArgValues {
  std::vector<std::optional<HostTensor>> tensors;
  std::vector<std::optional<double>> scalars;
  /// Per tensor argument (empty: none), 1 where the element's value hangs on
  /// a decision taken near its threshold (see InterpretOptions'
  /// `decisionSlack`). As results: for every written tensor when tracked.
  std::vector<std::vector<uint8_t>> ambiguous;

  ArgValues() = default;
  explicit ArgValues(unsigned numArgs) : tensors(numArgs), scalars(numArgs) {}
};

/// The extents of a value of `type` in a function over `rows` x `cols`. A
/// 1-D type is rows x 1 (its static extent, if any, must be rows). Of a 2-D
/// type, a dimension of static extent 1 is 1, any other is the common
/// extent (rows for dimension 0, cols for dimension 1). Nothing when `type`
/// is neither or has a static extent other than 1 and the common one.
std::optional<Extents> resolveExtents(mlir::RankedTensorType type, int64_t rows,
                                      int64_t cols);

/// The static row length of `func` (a 2-D tensor argument with a static
/// dimension 1 other than 1), if it has one.
std::optional<int64_t> getStaticCols(mlir::func::FuncOp func);

/// Runs `func` once over `rows` rows (a 1-D function: elements) on `inputs`
/// and returns what it writes; reads see the values before the step.
/// Unfused whole-tensor ops and kfuse.fused ops (the body once per element)
/// may be mixed. The row length of a 2-D function comes from its static
/// types or the input tensors. Input tensors must have their type's
/// extents; inputs declared bf16/f16 are rounded to that format on load in
/// both precisions (such a buffer holds nothing else), f32 inputs in F32
/// only. Fails with a diagnostic (at the op's location where there is one)
/// on a missing or misshapen input, a missing hyperparameter without
/// default, or an op the interpreter does not support.
///
/// With `decisionSlack` > 0 it also tracks which elements are ambiguous: a
/// comparison whose operands differ by at most `decisionSlack` times their
/// largest magnitude over the tensor, a floor or ceil that near an integer,
/// a copysign of a near-zero sign, a remainder near a multiple, and every
/// value computed from one of those. Another rounding of the same math (f32
/// against the f64 reference) may decide such an element the other way:
/// Lion's sign(c) for c within rounding of 0 moves the param by 2 * lr.
mlir::FailureOr<ArgValues> interpret(mlir::func::FuncOp func, int64_t rows,
                                     const ArgValues &inputs,
                                     Precision precision,
                                     double decisionSlack = 0.0);

/// A 1-D update's arguments by index: tensors for param/grad/state
/// arguments, scalars for hyper arguments and states at the tensor level
/// (the other vector of each index is unused). Writes replace the tensors
/// of their targets.
struct UpdateValues {
  std::vector<std::vector<double>> tensors;
  std::vector<double> scalars;
  /// Per tensor argument (empty: none), 1 where the element's value hangs on
  /// a decision taken near its threshold (see interpret's `decisionSlack`).
  /// Kept up to date only for written tensors; a caller that replaces a
  /// tensor's values clears its entry.
  std::vector<std::vector<uint8_t>> ambiguous;
};

/// `interpret` on a 1-D update's flat buffers, in place. Tensor buffers must
/// all have one size, the static one if the type has it; on failure
/// `values` is left unchanged.
mlir::LogicalResult interpretUpdate(mlir::func::FuncOp update,
                                    UpdateValues &values, Precision precision,
                                    double decisionSlack = 0.0);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_INTERPRETER_H
