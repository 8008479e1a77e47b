//===- NormCheck.h - compare a norm's device rounding to float64 -*- C++
//-*-===//
//
// `kfuse check` for norm functions: runs a norm in the interpreter in F32
// (f32 arithmetic, storage rounding) and in F64 on identical random inputs over
// a fixed matrix of shapes and storage dtypes, and reports each output's
// largest error.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_NORMCHECK_H
#define KFUSE_INTERPRETER_NORMCHECK_H

#include "interpreter/Check.h"
#include "interpreter/ElementOps.h"
#include "interpreter/Interpreter.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfuse {

struct NormCheckOptions {
  uint64_t seed = 42;
  /// Row counts checked when the norm's rows are dynamic.
  std::vector<int64_t> rowCounts = {1, 3, 64};
  /// Row lengths checked when the norm's columns are dynamic (a static row
  /// length replaces them): tiny, odd, a multiple of every vector width,
  /// and lengths past one block's worth of registers.
  std::vector<int64_t> colCounts = {1, 1000, 1024, 5128, 12289};
  /// The largest max-norm relative error (see computeTensorError with
  /// errorFloor 1) that passes when every tensor is stored in f32: a norm's
  /// outputs go through several reductions and divisions of f32 values over
  /// up to 12k columns, more rounding than an update's 1e-6 allows.
  double f32Tolerance = 1e-5;
  /// ... and when any tensor is stored in bf16 or f16: one rounding of the
  /// stored outputs (2^-9 relative for bf16) dominates.
  double narrowTolerance = 1e-2;
  /// Positive: replaces both tolerances.
  double toleranceOverride = 0.0;
  /// The most elements (rows x cols) a case may have: larger shapes are
  /// skipped and reported, and a norm whose every shape is larger fails.
  int64_t maxElements = kMaxCheckElements;
  /// Also check an f32 norm with bf16 storage of its full-shape tensors,
  /// emulated on the generic form: full-shape inputs rounded to bf16 for
  /// both precisions and the F32 run's full-shape outputs rounded to bf16,
  /// as the specialized form's loads and stores do.
  bool emulateBF16 = true;
  /// The (rows, cols) a 2-D update is checked over: a single row, sizes
  /// off every vector width, and a block's worth of rows.
  std::vector<std::pair<int64_t, int64_t>> updateShapes = {
      {1, 1000}, {3, 1024}, {37, 257}, {64, 1000}};
};

/// One (shape, storage) case of a norm check.
struct NormCheckCase {
  int64_t rows = 0;
  int64_t cols = 0;
  /// The narrowest storage dtype of the case's tensors: "f32", "bf16"...
  std::string dtype;
  /// Whether the bf16 storage is emulated on an f32 norm.
  bool emulated = false;
  /// The output closest to (or furthest past) its tolerance: its error,
  /// its tolerance, where the error is largest, and its input-rounding
  /// noise (see runNormCheck).
  double error = 0.0;
  double tolerance = 0.0;
  double inputNoise = 0.0;
  std::string worstOutput;
  int64_t worstRow = -1;
  int64_t worstCol = -1;
  /// Whether that tolerance was raised above the dtype's by the noise.
  bool conditioned = false;
  /// Whether every output is within its tolerance.
  bool passed = false;
};

struct NormCheckReport {
  std::string normName;
  uint64_t seed = 0;
  std::vector<NormCheckCase> cases;
  /// The (rows, cols) shapes left out as over NormCheckOptions::maxElements.
  std::vector<std::pair<int64_t, int64_t>> skippedShapes;
  int64_t maxElements = 0;

  unsigned numPassed() const;
  unsigned numFailed() const { return cases.size() - numPassed(); }
  bool passed() const { return numFailed() == 0; }
};

/// Random inputs of `norm` over `rows` x `cols`, drawn from a generator
/// seeded by `seed` and the shape: an input named "x" ~ N(1, 1) (a row mean
/// away from zero, so a mean output is well conditioned), other full-shape
/// inputs ~ N(0, 1), "weight" ~ 1 + N(0, 0.1^2), other per-column inputs ~
/// N(0, 1). Per-row inputs are the statistics of the actual "x" rows: "mean"
/// its row means, "rstd" 1 / sqrt(var + eps) with the centered variance when
/// the norm also takes a "mean" (LayerNorm), else the mean square (RMSNorm),
/// eps the norm's "eps" default or 1e-5; without an "x", 0.5 + |N(0, 1)|.
/// Values are rounded to f32, to each argument's storage dtype and, when
/// `fullStorage` is given, full-shape inputs to it. Hypers take their
/// kfuse.default. Fails with a diagnostic on a hyper without default or an
/// argument that does not fit the shape.
mlir::FailureOr<ArgValues>
makeNormCheckInputs(mlir::func::FuncOp norm, int64_t rows, int64_t cols,
                    uint64_t seed,
                    std::optional<ElementKind> fullStorage = std::nullopt);

/// Checks `norm` over every (rows, cols) of the options (static extents
/// replace them) with its declared storage dtypes, and, when all are f32
/// and `emulateBF16` is set, with emulated bf16 storage. Each output's error
/// is max |device - exact| / max |exact| (computeTensorError, errorFloor 1).
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
mlir::FailureOr<NormCheckReport> runNormCheck(mlir::func::FuncOp norm,
                                              const NormCheckOptions &options);

/// Runs `steps` steps of 2-D update `update` (isMatrixUpdate) in F32 and
/// in F64 over each of the options' updateShapes: the same inputs
/// (params and states drawn as makeNormCheckInputs does, states named
/// "sq" or "var" non-negative), fresh grads each step, each precision carrying
/// its own params and states. Each case reports the largest error of any
/// written param or state after the last step (errorFloor 1) against
/// f32Tolerance (or toleranceOverride). Fails with a diagnostic when the
/// update cannot be run.
mlir::FailureOr<NormCheckReport>
runMatrixUpdateCheck(mlir::func::FuncOp update, int steps,
                     const NormCheckOptions &options);

/// One line per case, then "check: N passed, M failed".
void printNormCheckReport(const NormCheckReport &report, llvm::raw_ostream &os);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_NORMCHECK_H
