//===- Check.h - compare a kernel's device rounding to float64 --*- C++ -*-===//
//
// `kfuse check`, for every kind of kernel: runs a function in double (the
// reference) and the candidates as the GPU rounds them, on identical random
// inputs, for some steps, over some cases (shapes, storage), and reports
// each case's largest error of the tensors the reference writes. A 1-D
// update is one case of `numel` elements whose candidates are its unfused
// and fused plans; a norm and a 2-D update are cases over a matrix of
// shapes whose candidate is the function itself in f32.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_CHECK_H
#define KFUSE_INTERPRETER_CHECK_H

#include "interpreter/ElementOps.h"
#include "interpreter/Interpreter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kfuse {

/// The default element budget per tensor of `kfuse check`: 2^22, a few
/// hundred MB of doubles for the largest library kernel.
constexpr int64_t kMaxCheckElements = int64_t(1) << 22;

struct CheckOptions {
  uint64_t seed = 42;
  /// Steps of an update (a norm runs one).
  int steps = 3;
  /// The most elements per tensor a case may have (rows x cols, `numel` or
  /// a static shape); more is skipped, or an error where no case is left,
  /// rather than an allocation the host may not have. The interpreter keeps
  /// several double copies of every tensor.
  int64_t maxElements = kMaxCheckElements;
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

  // 1-D updates.
  /// Elements per tensor when the update's tensors are dynamically shaped.
  int64_t numel = 4099;
  /// The largest error (see `errorFloor`) that passes.
  double tolerance = 1e-6;
  /// The reference tracks near-tie decisions with this slack (interpret's
  /// `decisionSlack`) and the comparison leaves out the elements that hang
  /// on one: f32 may rightly decide those the other way (Lion's sign of a
  /// momentum within rounding of 0). f32 rounding of a decision's operands
  /// is ~1e-7 of their scale; 1e-5 leaves margin.
  double decisionSlack = 1e-5;
  /// The largest fraction of a tensor's elements left out that way; more
  /// fails, as a comparison that skips that much proves little.
  double maxAmbiguousFraction = 0.01;

  // Norms and 2-D updates.
  /// Row counts checked when a norm's rows are dynamic.
  std::vector<int64_t> rowCounts = {1, 3, 64};
  /// Row lengths checked when a norm's columns are dynamic (a static row
  /// length replaces them): tiny, odd, a multiple of every vector width,
  /// and lengths past one block's worth of registers.
  std::vector<int64_t> colCounts = {1, 1000, 1024, 5128, 12289};
  /// The (rows, cols) a 2-D update is checked over: a single row, sizes
  /// off every vector width, and a block's worth of rows.
  std::vector<std::pair<int64_t, int64_t>> updateShapes = {
      {1, 1000}, {3, 1024}, {37, 257}, {64, 1000}};
  /// The largest error that passes when every tensor is stored in f32: a
  /// norm's outputs go through several reductions and divisions of f32
  /// values over up to 12k columns, more rounding than an update's 1e-6
  /// allows.
  double f32Tolerance = 1e-5;
  /// ... and when any tensor is stored in bf16 or f16: one rounding of the
  /// stored outputs (2^-9 relative for bf16) dominates.
  double narrowTolerance = 1e-2;
  /// Positive: replaces both tolerances.
  double toleranceOverride = 0.0;
  /// Also check an f32 norm with bf16 storage of its full-shape tensors,
  /// emulated on the generic form: full-shape inputs rounded to bf16 for
  /// both precisions and the F32 run's full-shape outputs rounded to bf16,
  /// as the specialized form's loads and stores do.
  bool emulateBF16 = true;
};

/// One case of a check: one shape and storage, run for some steps.
struct CheckCase {
  /// rows x cols; a 1-D update's case has `rows` elements and no columns.
  int64_t rows = 0;
  int64_t cols = 0;
  /// The narrowest storage dtype of the case's tensors: "f32", "bf16"...
  std::string dtype;
  /// Whether the bf16 storage is emulated on an f32 norm.
  bool emulated = false;
  /// Each candidate's largest error, by its name ("unfused", "fused",
  /// "f32").
  std::vector<std::pair<std::string, double>> candidateErrors;
  /// The tensor closest to (or furthest past) its tolerance: its error, its
  /// tolerance, where the error is largest, and (for a norm) its
  /// input-rounding noise (see runNormCheck).
  double error = 0.0;
  double tolerance = 0.0;
  double inputNoise = 0.0;
  std::string worstArg;
  int64_t worstRow = -1;
  int64_t worstCol = -1;
  /// Whether that tolerance was raised above the dtype's by the noise.
  bool conditioned = false;
  /// Elements of the compared tensors left out as ambiguous, of all, and the
  /// largest fraction left out of one tensor.
  int64_t ambiguousElements = 0;
  int64_t comparedElements = 0;
  double maxAmbiguousFraction = 0.0;
  /// Whether every tensor is within its tolerance, and few enough elements
  /// were left out.
  bool passed = false;
};

struct CheckReport {
  std::string name;
  uint64_t seed = 0;
  int steps = 1;
  std::vector<CheckCase> cases;
  /// The (rows, cols) shapes left out as over CheckOptions::maxElements.
  std::vector<std::pair<int64_t, int64_t>> skippedShapes;
  int64_t maxElements = 0;

  unsigned numPassed() const;
  unsigned numFailed() const { return cases.size() - numPassed(); }
  bool passed() const { return !cases.empty() && numFailed() == 0; }
};

/// Random inputs of `func` over `rows` x `cols` (a 1-D function: `rows`
/// elements), drawn from a generator seeded by `seed` and the shape: params
/// and grads ~ N(0, 1); states ~ N(0, 0.1), or |N(0, 0.01)| when their name
/// contains "sq", "var" or "sum" (second moments, Adagrad's sum of squares),
/// and 0.01 |N(0, 1)| at the tensor
/// level; an input named "x" ~ N(1, 1) (a row mean away from zero, so a
/// mean output is well conditioned), other full-shape inputs ~ N(0, 1),
/// "weight" ~ 1 + N(0, 0.1^2), other per-column inputs ~ N(0, 1). Per-row
/// inputs are the statistics of the actual "x" rows: "mean" its row means,
/// "rstd" 1 / sqrt(var + eps) with the centered variance when the norm also
/// takes a "mean" (LayerNorm), else the mean square (RMSNorm), eps the
/// norm's "eps" default or 1e-5; without an "x", 0.5 + |N(0, 1)|. Values are
/// rounded to f32, to each argument's storage dtype and, when `fullStorage`
/// is given, full-shape inputs to it. Hypers take their kfuse.default; a
/// hyper named "step" without one is 1. Fails with a diagnostic on another
/// hyper without default or an argument that does not fit the shape.
mlir::FailureOr<ArgValues>
makeCheckInputs(mlir::func::FuncOp func, int64_t rows, int64_t cols,
                uint64_t seed,
                std::optional<ElementKind> fullStorage = std::nullopt);

/// Checks 1-D update `reference` (Precision::F64) against `unfused` and
/// `fused` (Precision::F32; a null one is skipped and reports 0) over
/// `options.steps` steps of one case of `numel` elements (a static shape
/// replaces it): inputs as makeCheckInputs draws them, fresh grads each
/// step, a hyper named "step" 1, 2, 3..., rounded to the narrowest storage
/// type any of the functions declares so that all start from identical
/// values; each function carries its own params and states. Compares every
/// tensor the reference writes after the last step, leaving out the
/// elements it marks ambiguous (CheckOptions::decisionSlack); too many of
/// them fail the check. Fails with a diagnostic when the functions do not
/// match or one cannot be run.
mlir::FailureOr<CheckReport> runCheck(mlir::func::FuncOp reference,
                                      mlir::func::FuncOp unfused,
                                      mlir::func::FuncOp fused,
                                      const CheckOptions &options);

/// Checks `norm` over every (rows, cols) of the options (static extents
/// replace them) with its declared storage dtypes, and, when all are f32
/// and `emulateBF16` is set, with emulated bf16 storage: F32 against F64 of
/// the function as written, one step. Each output's error is max |device -
/// exact| / max |exact| (computeTensorError, errorFloor 1).
///
/// Some outputs are pure cancellation at some shapes: RMSNorm's dx over one
/// column is g * rstd * eps / (x^2 + eps), the difference of two terms equal
/// up to eps, so its exact value already moves by far more than f32
/// precision when its f32 inputs do. A third run (F64, every input element
/// moved by about one f32 rounding) measures that input-rounding noise per
/// output; an output's tolerance is the dtype's, raised to 8 times its noise
/// (at most 1) where that is larger. Well-conditioned outputs have noise near
/// 1e-7 and keep the dtype's tolerance. Fails with a diagnostic when the
/// norm cannot be run.
mlir::FailureOr<CheckReport> runNormCheck(mlir::func::FuncOp norm,
                                          const CheckOptions &options);

/// Checks 2-D update `update` (isMatrixUpdate) over `options.steps` steps,
/// F32 against F64 of the function as written, over each of the options'
/// updateShapes (static extents of the params replace them): inputs as
/// makeCheckInputs draws them, fresh grads each step, each precision
/// carrying its own params and states, against f32Tolerance (or
/// toleranceOverride). Fails with a diagnostic when the update cannot be
/// run.
mlir::FailureOr<CheckReport> runMatrixUpdateCheck(mlir::func::FuncOp update,
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

/// A human-readable summary of `report` for the command line: a 1-D
/// update's candidates' errors and verdict, or one line per case, then
/// "check: N passed, M failed".
void printCheckReport(const CheckReport &report, const CheckOptions &options,
                      llvm::raw_ostream &os);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_CHECK_H
