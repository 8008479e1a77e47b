//===- NormCheck.cpp - compare a norm's device rounding to float64 -------===//

#include "interpreter/NormCheck.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/Check.h"
#include "interpreter/NormalSampler.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <random>

using namespace mlir;

namespace kfuse {

namespace {

/// Which extents of a norm's 2-D tensor are the common ones.
enum class TensorShape { Full, PerRow, PerColumn };

} // namespace

/// SplitMix64's finalizer: nearby seeds and shapes give unrelated streams.
static uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

static TensorShape classify(RankedTensorType type) {
  if (type.getDimSize(0) == 1)
    return TensorShape::PerColumn; // 1 x cols, and 1 x 1
  if (type.getDimSize(1) == 1)
    return TensorShape::PerRow;
  return TensorShape::Full;
}

/// How far above the input-rounding noise of an output its error may go.
constexpr double kNoiseFactor = 8.0;

static const char *kindName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
    return "f64";
  case ElementKind::F32:
    return "f32";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F16:
    return "f16";
  case ElementKind::I1:
    return "i1";
  }
  return "?";
}

static bool isNarrow(ElementKind kind) {
  return kind == ElementKind::BF16 || kind == ElementKind::F16;
}

/// Bits of a float kind, to find the narrowest storage type.
static unsigned width(ElementKind kind) {
  switch (kind) {
  case ElementKind::F64:
    return 64;
  case ElementKind::F32:
    return 32;
  case ElementKind::BF16:
  case ElementKind::F16:
    return 16;
  case ElementKind::I1:
    return 1;
  }
  return 0;
}

/// The index of the argument named `name` with role `role`, if any.
static std::optional<unsigned> findArg(func::FuncOp norm, StringRef name,
                                       Role role) {
  for (unsigned i = 0, e = norm.getNumArguments(); i < e; ++i)
    if (getArgRole(norm, i) == role && getArgName(norm, i) == name)
      return i;
  return std::nullopt;
}

FailureOr<ArgValues>
makeNormCheckInputs(func::FuncOp norm, int64_t rows, int64_t cols,
                    uint64_t seed, std::optional<ElementKind> fullStorage) {
  unsigned numArgs = norm.getNumArguments();
  ArgValues values(numArgs);
  NormalSampler sampler(mix(mix(mix(seed) ^ static_cast<uint64_t>(rows)) ^
                            static_cast<uint64_t>(cols)));

  struct InputInfo {
    unsigned index;
    TensorShape shape;
    Extents extents;
    ElementKind kind;
  };
  std::vector<InputInfo> inputs;
  for (unsigned i = 0; i < numArgs; ++i) {
    std::optional<Role> role = getArgRole(norm, i);
    std::string name = getArgName(norm, i);
    if (isPerTensorArg(norm, i)) {
      values.scalars[i] = 0.01 * std::fabs(sampler.sample());
      continue;
    }
    if (role == Role::hyper) {
      std::optional<double> value = getArgDefault(norm, i);
      if (!value)
        return norm.emitError()
               << "hyper argument #" << i << " '" << name
               << "' has no kfuse.default; check cannot choose its value";
      values.scalars[i] = *value;
      continue;
    }
    bool updateRead = role == Role::param || role == Role::grad ||
                      (role == Role::state && !isPerTensorArg(norm, i));
    if (role != Role::input && !updateRead)
      continue;
    auto type = dyn_cast<RankedTensorType>(norm.getArgumentTypes()[i]);
    std::optional<Extents> extents = resolveExtents(type, rows, cols);
    if (!extents)
      return norm.emitError()
             << "input argument #" << i << " '" << name << "' of type "
             << norm.getArgumentTypes()[i] << " does not fit a norm over "
             << rows << " x " << cols;
    FailureOr<ElementKind> kind =
        getElementKind(type, norm.getLoc(),
                       "argument #" + std::to_string(i) + " '" + name + "'");
    if (failed(kind))
      return failure();
    inputs.push_back({i, classify(type), *extents, *kind});
  }

  auto store = [&](const InputInfo &input, std::vector<double> elements) {
    for (double &element : elements) {
      element = roundToKind(roundToKind(element, ElementKind::F32), input.kind);
      if (fullStorage && input.shape == TensorShape::Full)
        element = roundToKind(element, *fullStorage);
    }
    HostTensor tensor;
    tensor.rows = input.extents.rows;
    tensor.cols = input.extents.cols;
    tensor.elements = std::move(elements);
    values.tensors[input.index] = std::move(tensor);
  };

  // Full-shape and per-column inputs first: the row statistics need "x".
  for (const InputInfo &input : inputs) {
    if (input.shape == TensorShape::PerRow)
      continue;
    std::string name = getArgName(norm, input.index);
    double mean = 0.0, stddev = 1.0;
    bool nonNegative = false;
    if (input.shape == TensorShape::Full && name == "x")
      mean = 1.0;
    if (getArgRole(norm, input.index) == Role::state) {
      // A second moment (its name says "sq" or "var") is non-negative.
      nonNegative =
          StringRef(name).contains("sq") || StringRef(name).contains("var");
      stddev = nonNegative ? 0.01 : 0.1;
    }
    if (input.shape == TensorShape::PerColumn && name == "weight") {
      mean = 1.0;
      stddev = 0.1;
    }
    std::vector<double> elements(
        static_cast<size_t>(input.extents.rows * input.extents.cols));
    for (double &element : elements) {
      element = mean + stddev * sampler.sample();
      if (nonNegative)
        element = std::fabs(element);
    }
    store(input, std::move(elements));
  }

  std::optional<unsigned> x = findArg(norm, "x", Role::input);
  const HostTensor *xValues = nullptr;
  if (x && values.tensors[*x] && values.tensors[*x]->rows == rows &&
      values.tensors[*x]->cols == cols)
    xValues = &*values.tensors[*x];
  bool centered = findArg(norm, "mean", Role::input).has_value();
  double eps = 1e-5;
  if (std::optional<unsigned> epsArg = findArg(norm, "eps", Role::hyper))
    eps = *values.scalars[*epsArg];
  for (const InputInfo &input : inputs) {
    if (input.shape != TensorShape::PerRow)
      continue;
    std::string name = getArgName(norm, input.index);
    std::vector<double> elements(static_cast<size_t>(input.extents.rows));
    for (int64_t r = 0; r < input.extents.rows; ++r) {
      if (getArgRole(norm, input.index) == Role::state) {
        elements[r] = 0.01 * std::fabs(sampler.sample());
        continue;
      }
      if (!xValues || (name != "mean" && name != "rstd")) {
        elements[r] = 0.5 + std::fabs(sampler.sample());
        continue;
      }
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c)
        sum += xValues->at(r, c);
      double mean = sum / static_cast<double>(cols);
      if (name == "mean") {
        elements[r] = mean;
        continue;
      }
      double squares = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        double d = xValues->at(r, c) - (centered ? mean : 0.0);
        squares += d * d;
      }
      elements[r] = 1.0 / std::sqrt(squares / static_cast<double>(cols) + eps);
    }
    store(input, std::move(elements));
  }
  return values;
}

/// `inputs` with every tensor element moved by one f32 rounding: times
/// 1 +- 2^-24 * (1 + k / 2) for the k-th input tensor, the sign random per
/// element. Distinct scales per tensor keep the moves of two inputs from
/// cancelling exactly in a product (x * rstd with one element each).
static ArgValues perturbInputs(const ArgValues &inputs, uint64_t seed) {
  ArgValues perturbed = inputs;
  std::mt19937_64 signs(mix(seed ^ 0x5eedULL));
  unsigned k = 0;
  for (std::optional<HostTensor> &tensor : perturbed.tensors) {
    if (!tensor)
      continue;
    double step = 0x1p-24 * (1.0 + 0.5 * k++);
    for (double &element : tensor->elements)
      element *= (signs() & 1) ? 1.0 + step : 1.0 - step;
  }
  return perturbed;
}

unsigned NormCheckReport::numPassed() const {
  unsigned count = 0;
  for (const NormCheckCase &check : cases)
    count += check.passed;
  return count;
}

FailureOr<NormCheckReport> runNormCheck(func::FuncOp norm,
                                        const NormCheckOptions &options) {
  if (!norm)
    return failure();
  if (!isNorm(norm))
    return norm.emitError()
           << "function '" << norm.getSymName() << "' is not marked kfuse.norm";

  // Static extents replace the matrix; the narrowest declared storage type
  // sets the tolerance.
  std::vector<int64_t> rowCounts = options.rowCounts;
  std::vector<int64_t> colCounts = options.colCounts;
  if (std::optional<int64_t> cols = getStaticCols(norm))
    colCounts = {*cols};
  else if (llvm::all_of(norm.getArgumentTypes(), [](Type type) {
             auto tensor = dyn_cast<RankedTensorType>(type);
             return !tensor || tensor.getRank() != 2 ||
                    tensor.getDimSize(1) == 1;
           }))
    colCounts = {1}; // every tensor a single column
  std::optional<ElementKind> declared;
  unsigned numArgs = norm.getNumArguments();
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = dyn_cast<RankedTensorType>(norm.getArgumentTypes()[i]);
    if (!type)
      continue;
    if (type.getRank() == 2 && !type.isDynamicDim(0) && type.getDimSize(0) != 1)
      rowCounts = {type.getDimSize(0)};
    FailureOr<ElementKind> kind =
        getElementKind(type, norm.getLoc(), "argument #" + std::to_string(i));
    if (failed(kind))
      return failure();
    if (!declared || width(*kind) < width(*declared))
      declared = *kind;
  }
  if (!declared)
    return norm.emitError() << "norm '" << norm.getSymName()
                            << "' has no tensor arguments to check";

  struct Variant {
    ElementKind kind;
    bool emulated;
  };
  std::vector<Variant> variants = {{*declared, false}};
  if (options.emulateBF16 && *declared == ElementKind::F32)
    variants.push_back({ElementKind::BF16, true});

  NormCheckReport report;
  report.normName = norm.getSymName().str();
  report.seed = options.seed;
  report.maxElements = options.maxElements;
  // Static extents come from the IR: shapes over the budget are left out
  // (and reported), never allocated.
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t rows : rowCounts)
    for (int64_t cols : colCounts) {
      int64_t elements;
      if (llvm::MulOverflow(rows, cols, elements) ||
          elements > options.maxElements)
        report.skippedShapes.push_back({rows, cols});
      else
        shapes.push_back({rows, cols});
    }
  if (shapes.empty())
    return norm.emitError()
           << "norm '" << norm.getSymName() << "' has no shape within the "
           << "check's budget of " << options.maxElements
           << " elements per tensor (the smallest is "
           << *llvm::min_element(rowCounts) << " x "
           << *llvm::min_element(colCounts) << ")";
  for (const Variant &variant : variants) {
    for (auto [rows, cols] : shapes) {
      FailureOr<ArgValues> inputs = makeNormCheckInputs(
          norm, rows, cols, options.seed,
          variant.emulated ? std::optional<ElementKind>(variant.kind)
                           : std::nullopt);
      if (failed(inputs))
        return failure();
      FailureOr<ArgValues> exact =
          interpret(norm, rows, *inputs, Precision::F64);
      if (failed(exact))
        return failure();
      FailureOr<ArgValues> device =
          interpret(norm, rows, *inputs, Precision::F32);
      if (failed(device))
        return failure();

      FailureOr<ArgValues> perturbed = interpret(
          norm, rows, perturbInputs(*inputs, options.seed), Precision::F64);
      if (failed(perturbed))
        return failure();

      NormCheckCase check;
      check.rows = rows;
      check.cols = cols;
      check.dtype = kindName(variant.kind);
      check.emulated = variant.emulated;
      check.passed = true;
      double tolerance = options.toleranceOverride > 0
                             ? options.toleranceOverride
                         : isNarrow(variant.kind) ? options.narrowTolerance
                                                  : options.f32Tolerance;
      double worstRatio = -1.0;
      for (unsigned i = 0; i < numArgs; ++i) {
        if (getArgRole(norm, i) != Role::output)
          continue;
        HostTensor &actual = *device->tensors[i];
        const HostTensor &expected = *exact->tensors[i];
        if (variant.emulated &&
            classify(cast<RankedTensorType>(norm.getArgumentTypes()[i])) ==
                TensorShape::Full)
          for (double &element : actual.elements)
            element = roundToKind(element, variant.kind);
        int64_t worstIndex = -1;
        double error = computeTensorError(actual.elements, expected.elements,
                                          /*errorFloor=*/1.0, &worstIndex);
        double noise = computeTensorError(perturbed->tensors[i]->elements,
                                          expected.elements,
                                          /*errorFloor=*/1.0);
        double bound = std::max(tolerance, std::min(1.0, kNoiseFactor * noise));
        double ratio = error / bound;
        bool passed = error <= bound;
        check.passed &= passed;
        // NaN errors are the worst of all; among equals, the output held
        // to the tighter tolerance is the one to show.
        if (worstRatio < 0 || !(ratio <= worstRatio) ||
            (ratio == worstRatio && bound < check.tolerance)) {
          worstRatio = ratio;
          check.error = error;
          check.tolerance = bound;
          check.inputNoise = noise;
          check.worstOutput = getArgName(norm, i);
          check.worstRow = worstIndex >= 0 ? worstIndex / expected.cols : -1;
          check.worstCol = worstIndex >= 0 ? worstIndex % expected.cols : -1;
        }
      }
      check.conditioned = check.tolerance > tolerance;
      report.cases.push_back(std::move(check));
    }
  }
  return report;
}

FailureOr<NormCheckReport>
runMatrixUpdateCheck(func::FuncOp update, int steps,
                     const NormCheckOptions &options) {
  if (!update)
    return failure();
  if (!isMatrixUpdate(update))
    return update.emitError()
           << "function '" << update.getSymName() << "' is not a 2-D update";
  unsigned numArgs = update.getNumArguments();
  std::optional<unsigned> stepArg = findArg(update, "step", Role::hyper);
  double tolerance = options.toleranceOverride > 0 ? options.toleranceOverride
                                                   : options.f32Tolerance;
  NormCheckReport report;
  report.normName = update.getSymName().str();
  report.seed = options.seed;
  report.maxElements = options.maxElements;
  // Static extents of the params replace the options' (one shape each).
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (auto [rows, cols] : options.updateShapes) {
    for (unsigned i = 0; i < numArgs; ++i) {
      if (getArgRole(update, i) != Role::param)
        continue;
      auto type = cast<RankedTensorType>(update.getArgumentTypes()[i]);
      if (!type.isDynamicDim(0))
        rows = type.getDimSize(0);
      if (!type.isDynamicDim(1))
        cols = type.getDimSize(1);
      break;
    }
    if (!llvm::is_contained(shapes, std::pair(rows, cols)))
      shapes.push_back({rows, cols});
  }
  for (auto [rows, cols] : shapes) {
    int64_t elements;
    if (llvm::MulOverflow(rows, cols, elements) ||
        elements > options.maxElements) {
      report.skippedShapes.push_back({rows, cols});
      continue;
    }
    FailureOr<ArgValues> initial =
        makeNormCheckInputs(update, rows, cols, options.seed);
    if (failed(initial))
      return failure();
    // Each precision carries its own params and states from step to step, as a
    // training run would; the grads are the same draw for both.
    ArgValues exact = *initial, device = *initial;
    for (int step = 1; step <= steps; ++step) {
      if (step > 1) {
        FailureOr<ArgValues> fresh =
            makeNormCheckInputs(update, rows, cols, options.seed + step);
        if (failed(fresh))
          return failure();
        for (unsigned i = 0; i < numArgs; ++i)
          if (getArgRole(update, i) == Role::grad)
            exact.tensors[i] = device.tensors[i] = fresh->tensors[i];
      }
      if (stepArg)
        exact.scalars[*stepArg] = device.scalars[*stepArg] = step;
      for (auto [values, precision] : {std::pair(&exact, Precision::F64),
                                       std::pair(&device, Precision::F32)}) {
        FailureOr<ArgValues> written =
            interpret(update, rows, *values, precision);
        if (failed(written))
          return failure();
        for (unsigned i = 0; i < numArgs; ++i) {
          if (written->tensors[i])
            values->tensors[i] = std::move(written->tensors[i]);
          if (written->scalars[i] && isPerTensorArg(update, i))
            values->scalars[i] = written->scalars[i];
        }
      }
    }
    NormCheckCase check;
    check.rows = rows;
    check.cols = cols;
    check.dtype = "f32";
    check.tolerance = tolerance;
    check.passed = true;
    double worst = -1.0;
    for (unsigned i = 0; i < numArgs; ++i) {
      std::optional<Role> role = getArgRole(update, i);
      if (role != Role::param && role != Role::state)
        continue;
      std::vector<double> actual, expected;
      int64_t width = 1;
      if (isPerTensorArg(update, i)) {
        actual = {*device.scalars[i]};
        expected = {*exact.scalars[i]};
      } else {
        actual = device.tensors[i]->elements;
        expected = exact.tensors[i]->elements;
        width = exact.tensors[i]->cols;
      }
      int64_t worstIndex = -1;
      double error =
          computeTensorError(actual, expected, /*errorFloor=*/1.0, &worstIndex);
      check.passed &= error <= tolerance;
      if (worst < 0 || !(error <= worst)) {
        worst = error;
        check.error = error;
        check.worstOutput = getArgName(update, i);
        check.worstRow = worstIndex >= 0 ? worstIndex / width : -1;
        check.worstCol = worstIndex >= 0 ? worstIndex % width : -1;
      }
    }
    report.cases.push_back(std::move(check));
  }
  if (report.cases.empty())
    return update.emitError() << "no shape of the check is within its budget "
                              << "of " << options.maxElements << " elements";
  return report;
}

void printNormCheckReport(const NormCheckReport &report,
                          llvm::raw_ostream &os) {
  bool anyEmulated = false;
  for (const NormCheckCase &check : report.cases) {
    std::string dtype = check.dtype + (check.emulated ? "*" : "");
    anyEmulated |= check.emulated;
    os << llvm::format("%5lld x %5lld  %-5s  max error %.3e  tolerance %.1e  "
                       "%s",
                       static_cast<long long>(check.rows),
                       static_cast<long long>(check.cols), dtype.c_str(),
                       check.error, check.tolerance,
                       check.passed ? "PASS" : "FAIL");
    if (check.error > 0 || std::isnan(check.error))
      os << "  (worst " << check.worstOutput << "[" << check.worstRow << ", "
         << check.worstCol << "])";
    if (check.conditioned)
      os << llvm::format("  (ill-conditioned: input-rounding noise %.1e)",
                         check.inputNoise);
    os << "\n";
  }
  if (anyEmulated)
    os << "bf16*: bf16 storage of the full-shape tensors, emulated on the f32 "
          "form\n";
  for (auto [rows, cols] : report.skippedShapes)
    os << llvm::format("%5lld x %5lld  skipped: over the check's budget of "
                       "%lld elements per tensor\n",
                       static_cast<long long>(rows),
                       static_cast<long long>(cols),
                       static_cast<long long>(report.maxElements));
  os << "check: " << report.numPassed() << " passed, " << report.numFailed()
     << " failed\n";
}

} // namespace kfuse
