//===- NormInterpreter.h - CPU reference interpreter of norms ---*- C++ -*-===//
//
// Executes a function marked `kfuse.norm` (LayerNorm, RMSNorm, forward or
// backward) on host buffers: the generic form (tensor<?x?xf32>) or a
// specialized one (static columns, bf16/f16 storage with kfuse.convert).
// The oracle for tests and `kfuse check` on norms.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_NORMINTERPRETER_H
#define KFUSE_INTERPRETER_NORMINTERPRETER_H

#include "dialect/KFuseOps.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kfuse {

/// How a norm is computed.
enum class NormMode {
  /// Every value a double, nothing rounded (kfuse.convert and arith.truncf
  /// to bf16/f16 included), row and column sums compensated: the oracle.
  Exact,
  /// What the GPU computes: every op result rounded to its element type (f32
  /// arithmetic, bf16/f16 where the IR stores those), sums accumulated in
  /// f32 (f64 for f64 tensors) in sequential order. The GPU adds in a tree
  /// (rows) or in per-block partials (columns); the results differ from
  /// this order within f32 rounding, far below the check's tolerances.
  Device,
};

/// The runtime extents of a 2-D norm value.
struct NormExtents {
  int64_t rows = 0;
  int64_t cols = 0;
  bool operator==(const NormExtents &other) const {
    return rows == other.rows && cols == other.cols;
  }
};

/// A 2-D tensor of a norm: rows x cols (full), rows x 1 (one value per
/// row) or 1 x cols (one per column), row-major.
struct NormTensor {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> elements;

  NormTensor() = default;
  NormTensor(int64_t rows, int64_t cols, double fill = 0.0)
      : rows(rows), cols(cols),
        elements(static_cast<size_t>(rows * cols), fill) {}
  double &at(int64_t row, int64_t col) { return elements[row * cols + col]; }
  double at(int64_t row, int64_t col) const {
    return elements[row * cols + col];
  }
};

/// A norm's arguments by index. As inputs: a tensor for every `input`
/// argument (of a 2-D update: every param, grad and state), a scalar for a
/// state at the tensor level and, optionally, for `hyper` arguments (absent:
/// its kfuse.default). As results: a tensor for every written argument (a
/// scalar for a state at the tensor level). Other slots are empty.
struct NormValues {
  std::vector<std::optional<NormTensor>> tensors;
  std::vector<std::optional<double>> scalars;

  NormValues() = default;
  explicit NormValues(unsigned numArgs) : tensors(numArgs), scalars(numArgs) {}
};

/// The extents of a value of 2-D `type` in a norm over `rows` x `cols`: a
/// dimension of static extent 1 is 1, any other is the common extent (rows
/// for dimension 0, cols for dimension 1). Nothing when `type` is not 2-D
/// or has a static extent other than 1 and the common one.
std::optional<NormExtents> resolveNormExtents(mlir::RankedTensorType type,
                                              int64_t rows, int64_t cols);

/// The static row length of `norm` (a tensor argument with a static
/// dimension 1 other than 1), if it has one.
std::optional<int64_t> getStaticNormCols(mlir::func::FuncOp norm);

/// Runs `norm` (or a 2-D update, isMatrixUpdate) over `rows` rows on
/// `inputs` and returns what it writes. The
/// row length comes from the static types or the input tensors. Input
/// tensors must have their type's extents; inputs declared bf16/f16 are
/// rounded to that format on load in both modes (such a buffer holds
/// nothing else), f32 inputs in Device mode only. Fails with a diagnostic
/// (at the op's location where there is one) on a missing or misshapen
/// input, a missing hyperparameter without default, or an op the
/// interpreter does not support.
mlir::FailureOr<NormValues> runNorm(mlir::func::FuncOp norm, int64_t rows,
                                    const NormValues &inputs, NormMode mode);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_NORMINTERPRETER_H
