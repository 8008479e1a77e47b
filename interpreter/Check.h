//===- Check.h - compare compiled updates against the reference -*- C++ -*-===//
//
// `kfuse check`: runs the reference update in double and the candidate forms
// (unfused and fused plans) as the GPU rounds them, on identical random
// inputs for a few steps, and reports the largest error of the written
// tensors.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_CHECK_H
#define KFUSE_INTERPRETER_CHECK_H

#include "interpreter/Interpreter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace kfuse {

/// The default element budget per tensor of `kfuse check` (updates and
/// norms): 2^22, a few hundred MB of doubles for the largest library kernel.
constexpr int64_t kMaxCheckElements = int64_t(1) << 22;

struct CheckOptions {
  uint64_t seed = 42;
  /// Elements per tensor when the update's tensors are dynamically shaped.
  int64_t numel = 4099;
  /// The most elements per tensor the check runs (`numel` or a static
  /// shape); more is an error rather than an allocation the host may not
  /// have. The interpreter keeps several double copies of every tensor.
  int64_t maxElements = kMaxCheckElements;
  int steps = 3;
  /// The largest error (see `errorFloor`) that passes.
  double tolerance = 1e-6;
  /// Each element's error is |candidate - reference| divided by
  /// max(|reference|, errorFloor * max|reference over the tensor|). Pure
  /// relative error is meaningless near zero, where f32 cancellation leaves
  /// an absolute error at the scale of the operands (m = beta1 * m +
  /// (1 - beta1) * g near 0 is off by ~1e-6 relative to a floor of 1e-2 of
  /// the tensor's magnitude). The default 1 makes it the max-norm relative
  /// error, max |a - b| / max |b| per tensor: f32 rounding stays near 1e-7,
  /// while any wrong element larger than 1e-6 of the tensor's scale (a
  /// skipped tail, a wrong constant) fails. Smaller values weigh small
  /// elements more and need a larger tolerance.
  double errorFloor = 1.0;
  /// The reference tracks near-tie decisions with this slack
  /// (interpretUpdate's `decisionSlack`) and the comparison leaves out the
  /// elements that hang on one: f32 may rightly decide those the other way
  /// (Lion's sign of a momentum within rounding of 0). f32 rounding of a
  /// decision's operands is ~1e-7 of their scale; 1e-5 leaves margin.
  double decisionSlack = 1e-5;
  /// The largest fraction of a tensor's elements left out that way; more
  /// fails, as a comparison that skips that much proves little.
  double maxAmbiguousFraction = 0.01;
};

struct CheckReport {
  double maxRelErrorUnfused = 0.0;
  double maxRelErrorFused = 0.0;
  /// The argument and element of the largest error over both candidates.
  std::string worstArg;
  int64_t worstIndex = -1;
  /// Elements of the compared tensors left out as ambiguous, of all, and the
  /// largest fraction left out of one tensor.
  int64_t ambiguousElements = 0;
  int64_t comparedElements = 0;
  double maxAmbiguousFraction = 0.0;
  bool passed = false;
};

/// Runs `options.steps` steps of `reference` (Precision::F64) and of each
/// candidate (Precision::F32; a null candidate is skipped and reports 0) on
/// the same inputs: params and grads ~ N(0, 1) (fresh grads each step),
/// states ~ N(0, 0.1), or |N(0, 0.01)| when their name contains "sq"
/// (second moments); hypers take their kfuse.default, and a hyper named
/// "step" is 1, 2, 3... Inputs are rounded to the narrowest storage type any
/// of the functions declares, so all start from identical values. Compares
/// every param and state tensor after the last step, leaving out the
/// elements the reference marks ambiguous (CheckOptions::decisionSlack); too
/// many of them fail the check. Fails with a
/// diagnostic when the functions do not match or one cannot be run.
mlir::FailureOr<CheckReport> runCheck(mlir::func::FuncOp reference,
                                      mlir::func::FuncOp unfused,
                                      mlir::func::FuncOp fused,
                                      const CheckOptions &options);

/// The error of `candidate` against `reference` under the metric of
/// CheckOptions::errorFloor, and in `worstIndex` (if given) where it is
/// largest. A NaN or infinity on one side only is an infinite error.
/// Elements where `skip` (empty, or one entry per element) is nonzero are
/// left out.
double computeTensorError(llvm::ArrayRef<double> candidate,
                          llvm::ArrayRef<double> reference, double errorFloor,
                          int64_t *worstIndex = nullptr,
                          llvm::ArrayRef<uint8_t> skip = {});

/// The fraction of an `elements`-long tensor that `ambiguous` marks.
double getAmbiguousFraction(llvm::ArrayRef<uint8_t> ambiguous, size_t elements);

/// A human-readable summary of `report` for the command line.
void printCheckReport(const CheckReport &report, const CheckOptions &options,
                      llvm::raw_ostream &os);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_CHECK_H
