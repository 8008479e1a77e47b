//===- Check.cpp - compare a kernel's device rounding to float64 ---------===//
//
// One engine for every kind of kernel: a case draws inputs (makeCheckInputs),
// runs the reference in F64 and each candidate in F32 for some steps (fresh
// grads each step, every function carrying its own params and states), and
// compares every tensor the reference writes.
//
//===----------------------------------------------------------------------===//

#include "interpreter/Check.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/NormalSampler.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <random>

using namespace mlir;

namespace kfuse {

namespace {

/// Which extents of a 2-D tensor are the common ones.
enum class TensorShape { Full, PerRow, PerColumn };

/// A candidate of a check: a function run in F32, and its name.
struct Candidate {
  func::FuncOp func;
  std::string name;
};

/// How one case runs.
struct CaseSetup {
  int64_t rows = 0;
  /// The row length; 0 for a 1-D update.
  int64_t cols = 0;
  int steps = 1;
  uint64_t seed = 0;
  /// Full-shape tensors stored in this kind, emulated on the function.
  std::optional<ElementKind> emulated;
  double tolerance = 0.0;
  double errorFloor = 1.0;
  double decisionSlack = 0.0;
  double maxAmbiguousFraction = 1.0;
  /// Whether each written tensor's tolerance is raised to its input-rounding
  /// noise (a norm's outputs; see runNormCheck).
  bool conditionOnNoise = false;
};

} // namespace

/// SplitMix64's finalizer: nearby seeds and shapes give unrelated streams.
static uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

static TensorShape classify(RankedTensorType type) {
  if (type.getRank() != 2)
    return TensorShape::Full; // a 1-D update's tensor
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

FailureOr<ArgValues> makeCheckInputs(func::FuncOp func, int64_t rows,
                                     int64_t cols, uint64_t seed,
                                     std::optional<ElementKind> fullStorage) {
  func::FuncOp norm = func; // the names below read as a norm's
  if (rows < 0 || cols < 0)
    return func.emitError() << "check inputs need non-negative extents, got "
                            << rows << " x " << cols;
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
      if (!value && name == "step")
        value = 1.0; // the check counts the steps
      if (!value)
        return norm.emitError()
               << "hyper argument #" << i << " '" << name
               << "' has no kfuse.default, so there is no value to run it with";
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
             << norm.getArgumentTypes()[i] << " does not fit a "
             << (isNorm(norm) ? "norm" : "function") << " over " << rows
             << " x " << cols;
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
      // A second moment or a sum of squares (its name says "sq", "var" or
      // "sum": Adagrad's) is non-negative.
      nonNegative = StringRef(name).contains("sq") ||
                    StringRef(name).contains("var") ||
                    StringRef(name).contains("sum");
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

double computeTensorError(ArrayRef<double> candidate,
                          ArrayRef<double> reference, double errorFloor,
                          int64_t *worstIndex, ArrayRef<uint8_t> skip) {
  auto skipped = [&](size_t i) { return i < skip.size() && skip[i]; };
  double scale = 0.0;
  for (auto [i, value] : llvm::enumerate(reference))
    if (std::isfinite(value) && !skipped(i))
      scale = std::max(scale, std::fabs(value));
  double floor =
      std::max(errorFloor * scale, std::numeric_limits<double>::min());
  double worst = 0.0;
  int64_t worstAt = -1;
  size_t size = std::min(candidate.size(), reference.size());
  for (size_t i = 0; i < size; ++i) {
    if (skipped(i))
      continue;
    double a = candidate[i], b = reference[i];
    double error;
    if (std::isnan(a) || std::isnan(b))
      error = std::isnan(a) == std::isnan(b)
                  ? 0.0
                  : std::numeric_limits<double>::infinity();
    else if (a == b)
      error = 0.0;
    else if (std::isinf(a) || std::isinf(b))
      error = std::numeric_limits<double>::infinity();
    else
      error = std::fabs(a - b) / std::max(std::fabs(b), floor);
    if (worstAt < 0 || error > worst) {
      worst = error;
      worstAt = static_cast<int64_t>(i);
    }
  }
  // Buffers of different sizes never match.
  if (candidate.size() != reference.size()) {
    worst = std::numeric_limits<double>::infinity();
    worstAt = static_cast<int64_t>(size);
  }
  if (worstIndex)
    *worstIndex = worstAt;
  return worst;
}

double getAmbiguousFraction(ArrayRef<uint8_t> ambiguous, size_t elements) {
  if (elements == 0)
    return 0.0;
  return static_cast<double>(llvm::count(ambiguous, uint8_t(1))) /
         static_cast<double>(elements);
}

unsigned CheckReport::numPassed() const {
  unsigned count = 0;
  for (const CheckCase &check : cases)
    count += check.passed;
  return count;
}

/// Whether `candidate` takes the same arguments as `reference`.
static LogicalResult checkSignature(func::FuncOp reference,
                                    func::FuncOp candidate, StringRef what) {
  if (candidate.getNumArguments() != reference.getNumArguments())
    return candidate.emitError()
           << what << " update '" << candidate.getSymName() << "' has "
           << candidate.getNumArguments() << " arguments but the reference '"
           << reference.getSymName() << "' has " << reference.getNumArguments();
  for (unsigned i = 0, e = reference.getNumArguments(); i < e; ++i) {
    std::string name = getArgName(reference, i);
    if (getArgName(candidate, i) != name ||
        getArgRole(candidate, i) != getArgRole(reference, i) ||
        isa<ShapedType>(candidate.getArgument(i).getType()) !=
            isa<ShapedType>(reference.getArgument(i).getType()))
      return candidate.emitError()
             << what << " update argument #" << i << " '"
             << getArgName(candidate, i) << "' of type "
             << candidate.getArgument(i).getType()
             << " does not match the reference's '" << name << "' of type "
             << reference.getArgument(i).getType();
  }
  return success();
}

/// Rounds every input tensor to the storage kind each candidate declares
/// for it, so that all functions start from identical values.
static LogicalResult roundForCandidates(ArgValues &values,
                                        ArrayRef<Candidate> candidates) {
  for (auto [index, tensor] : llvm::enumerate(values.tensors)) {
    if (!tensor)
      continue;
    for (Candidate candidate : candidates) {
      Type type = candidate.func.getArgumentTypes()[index];
      FailureOr<ElementKind> kind = getElementKind(
          type, candidate.func.getLoc(),
          "argument '" + getArgName(candidate.func, index) + "'");
      if (failed(kind))
        return failure();
      for (double &element : tensor->elements)
        element = roundToKind(element, *kind);
    }
  }
  return success();
}

/// Replaces the arguments `written` holds in `values`, ambiguity included.
static void applyWrites(ArgValues &values, ArgValues &written) {
  for (unsigned i = 0, e = values.tensors.size(); i < e; ++i) {
    if (written.tensors[i])
      values.tensors[i] = std::move(written.tensors[i]);
    if (written.scalars[i])
      values.scalars[i] = written.scalars[i];
    if (i < written.ambiguous.size() && !written.ambiguous[i].empty()) {
      if (values.ambiguous.size() < e)
        values.ambiguous.resize(e);
      values.ambiguous[i] = std::move(written.ambiguous[i]);
    }
  }
}

/// A near tie decided either way is no error, but the two values it leaves
/// must not part the runs in later steps (a value rounded to an integer,
/// which a row's maximum then spreads over the row): where the reference's
/// written element hangs on a near decision, the candidates continue from
/// the reference's value, rounded to f32, which then counts as decided.
static void continueFromReference(ArgValues &expected,
                                  MutableArrayRef<ArgValues> actual) {
  for (unsigned i = 0; i < expected.ambiguous.size(); ++i) {
    std::vector<uint8_t> &flags = expected.ambiguous[i];
    if (flags.empty() || !expected.tensors[i])
      continue;
    const std::vector<double> &exact = expected.tensors[i]->elements;
    for (ArgValues &values : actual) {
      if (!values.tensors[i] ||
          values.tensors[i]->elements.size() != exact.size())
        continue;
      for (size_t k = 0; k < flags.size(); ++k)
        if (flags[k])
          values.tensors[i]->elements[k] =
              static_cast<double>(static_cast<float>(exact[k]));
    }
    flags.clear();
  }
}

/// Runs one case of `reference` (F64) against `candidates` (F32).
static FailureOr<CheckCase> runCase(func::FuncOp reference,
                                    ArrayRef<Candidate> candidates,
                                    const CaseSetup &setup) {
  unsigned numArgs = reference.getNumArguments();
  int64_t extentCols = std::max<int64_t>(setup.cols, 1);
  FailureOr<ArgValues> initial = makeCheckInputs(
      reference, setup.rows, extentCols, setup.seed, setup.emulated);
  if (failed(initial) || failed(roundForCandidates(*initial, candidates)))
    return failure();
  std::optional<unsigned> stepArg;
  for (unsigned i = 0; i < numArgs; ++i)
    if (getArgRole(reference, i) == Role::hyper &&
        getArgName(reference, i) == "step")
      stepArg = i;

  // Each function carries its own params and states from step to step, as a
  // training run would; the grads are the same draw for all.
  ArgValues expected = *initial;
  std::vector<ArgValues> actual(candidates.size(), *initial);
  // Which arguments the reference writes (a tensor, or a state at the tensor
  // level): the ones compared.
  std::vector<bool> writesTensor(numArgs), writesScalar(numArgs);
  for (int step = 1; step <= setup.steps; ++step) {
    if (step > 1) {
      FailureOr<ArgValues> fresh = makeCheckInputs(
          reference, setup.rows, extentCols, setup.seed + step, setup.emulated);
      if (failed(fresh) || failed(roundForCandidates(*fresh, candidates)))
        return failure();
      for (unsigned i = 0; i < numArgs; ++i) {
        if (getArgRole(reference, i) != Role::grad)
          continue;
        expected.tensors[i] = fresh->tensors[i];
        if (i < expected.ambiguous.size())
          expected.ambiguous[i].clear();
        for (ArgValues &values : actual)
          values.tensors[i] = fresh->tensors[i];
      }
    }
    if (stepArg) {
      expected.scalars[*stepArg] = step;
      for (ArgValues &values : actual)
        values.scalars[*stepArg] = step;
    }
    FailureOr<ArgValues> written = interpret(
        reference, setup.rows, expected, Precision::F64, setup.decisionSlack);
    if (failed(written))
      return failure();
    for (unsigned i = 0; i < numArgs; ++i) {
      writesTensor[i] = written->tensors[i].has_value();
      writesScalar[i] = written->scalars[i].has_value();
    }
    applyWrites(expected, *written);
    for (auto [candidate, values] : llvm::zip_equal(candidates, actual)) {
      FailureOr<ArgValues> result =
          interpret(candidate.func, setup.rows, values, Precision::F32);
      if (failed(result))
        return failure();
      applyWrites(values, *result);
    }
    if (step < setup.steps)
      continueFromReference(expected, actual);
  }
  // Input-rounding noise: the reference again, every input moved by about
  // one f32 rounding (one step; a norm's outputs).
  std::optional<ArgValues> perturbed;
  if (setup.conditionOnNoise) {
    FailureOr<ArgValues> run =
        interpret(reference, setup.rows, perturbInputs(*initial, setup.seed),
                  Precision::F64);
    if (failed(run))
      return failure();
    perturbed = std::move(*run);
  }

  CheckCase check;
  check.rows = setup.rows;
  check.cols = setup.cols;
  check.passed = true;
  check.tolerance = setup.tolerance;
  for (const Candidate &candidate : candidates)
    check.candidateErrors.push_back({candidate.name, 0.0});
  double worstRatio = -1.0;
  for (unsigned i = 0; i < numArgs; ++i) {
    bool scalar = writesScalar[i];
    if (!writesTensor[i] && !scalar)
      continue;
    // A state at the tensor level compares as a tensor of one.
    auto valuesOf = [&](const ArgValues &values) {
      return scalar ? std::vector<double>{values.scalars[i].value_or(NAN)}
                    : values.tensors[i]->elements;
    };
    std::vector<double> exact = valuesOf(expected);
    ArrayRef<uint8_t> ambiguous;
    if (!scalar && i < expected.ambiguous.size())
      ambiguous = expected.ambiguous[i];
    size_t left = llvm::count(ambiguous, uint8_t(1));
    check.ambiguousElements += static_cast<int64_t>(left);
    check.comparedElements += static_cast<int64_t>(exact.size());
    if (!exact.empty())
      check.maxAmbiguousFraction = std::max(
          check.maxAmbiguousFraction,
          static_cast<double>(left) / static_cast<double>(exact.size()));
    double noise = 0.0, bound = setup.tolerance;
    if (perturbed && !scalar) {
      noise = computeTensorError(perturbed->tensors[i]->elements, exact,
                                 setup.errorFloor);
      bound = std::max(bound, std::min(1.0, kNoiseFactor * noise));
    }
    int64_t width = scalar ? 1 : expected.tensors[i]->cols;
    bool full = !scalar && expected.tensors[i]->rows == setup.rows &&
                width == extentCols;
    for (auto [index, values] : llvm::enumerate(actual)) {
      std::vector<double> candidate = valuesOf(values);
      // Emulated narrow storage: the full-shape stores round.
      if (setup.emulated && full)
        for (double &element : candidate)
          element = roundToKind(element, *setup.emulated);
      int64_t worstIndex = -1;
      double error = computeTensorError(candidate, exact, setup.errorFloor,
                                        &worstIndex, ambiguous);
      double &candidateError = check.candidateErrors[index].second;
      candidateError = std::max(candidateError, error);
      double ratio = bound > 0   ? error / bound
                     : error > 0 ? std::numeric_limits<double>::infinity()
                                 : 0.0;
      check.passed &= error <= bound;
      // NaN errors are the worst of all; among equals, the tensor held to
      // the tighter tolerance is the one to show.
      if (worstRatio < 0 || !(ratio <= worstRatio) ||
          (ratio == worstRatio && bound < check.tolerance)) {
        worstRatio = ratio;
        check.error = error;
        check.tolerance = bound;
        check.inputNoise = noise;
        check.worstArg = getArgName(reference, i);
        check.worstRow = worstIndex >= 0 ? worstIndex / width : -1;
        check.worstCol = worstIndex >= 0 ? worstIndex % width : -1;
      }
    }
  }
  check.conditioned = check.tolerance > setup.tolerance;
  check.passed &= check.maxAmbiguousFraction <= setup.maxAmbiguousFraction;
  return check;
}

FailureOr<CheckReport> runCheck(func::FuncOp reference, func::FuncOp unfused,
                                func::FuncOp fused,
                                const CheckOptions &options) {
  if (!reference)
    return failure();
  if (options.numel <= 0 || options.steps <= 0 || !(options.tolerance >= 0))
    return reference.emitError()
           << "check needs a positive element count and step count and a "
              "non-negative tolerance (got numel "
           << options.numel << ", steps " << options.steps << ", tolerance "
           << options.tolerance << ")";
  SmallVector<Candidate, 2> candidates;
  for (auto [func, name] :
       {std::pair(unfused, "unfused"), std::pair(fused, "fused")}) {
    if (!func)
      continue;
    if (failed(checkSignature(reference, func, name)))
      return failure();
    candidates.push_back({func, name});
  }
  // The element count: a static shape anywhere fixes it.
  std::optional<int64_t> staticSize;
  for (func::FuncOp func : {reference, unfused, fused}) {
    if (!func)
      continue;
    for (BlockArgument arg : func.getArguments())
      if (auto tensor = dyn_cast<RankedTensorType>(arg.getType());
          tensor && tensor.hasStaticShape()) {
        if (staticSize && *staticSize != tensor.getNumElements())
          return func.emitError()
                 << "argument #" << arg.getArgNumber() << " of type " << tensor
                 << " does not have the " << *staticSize
                 << " elements of the other tensors";
        staticSize = tensor.getNumElements();
      }
  }
  if (staticSize.value_or(options.numel) > options.maxElements)
    return reference.emitError()
           << "check runs at most " << options.maxElements
           << " elements per tensor, got " << staticSize.value_or(options.numel)
           << (staticSize ? " (a static shape)" : "");
  for (unsigned i = 0, e = reference.getNumArguments(); i < e; ++i)
    if (!getArgRole(reference, i))
      return reference.emitError()
             << "argument #" << i << " '" << getArgName(reference, i)
             << "' has no kfuse.role; check cannot choose its inputs";

  CaseSetup setup;
  setup.rows = staticSize.value_or(options.numel);
  setup.steps = options.steps;
  setup.seed = options.seed;
  setup.tolerance = options.tolerance;
  setup.errorFloor = options.errorFloor;
  setup.decisionSlack = options.decisionSlack;
  setup.maxAmbiguousFraction = options.maxAmbiguousFraction;
  FailureOr<CheckCase> check = runCase(reference, candidates, setup);
  if (failed(check))
    return failure();
  // Both plans report, a skipped one as 0.
  std::vector<std::pair<std::string, double>> errors;
  for (const char *name : {"unfused", "fused"}) {
    double error = 0.0;
    for (const auto &[candidate, value] : check->candidateErrors)
      if (candidate == name)
        error = value;
    errors.push_back({name, error});
  }
  check->candidateErrors = std::move(errors);
  CheckReport report;
  report.name = reference.getSymName().str();
  report.seed = options.seed;
  report.steps = options.steps;
  report.maxElements = options.maxElements;
  report.cases.push_back(std::move(*check));
  return report;
}

/// Keeps the shapes of `shapes` within `report`'s budget, records the others.
static std::vector<std::pair<int64_t, int64_t>>
withinBudget(ArrayRef<std::pair<int64_t, int64_t>> shapes,
             CheckReport &report) {
  std::vector<std::pair<int64_t, int64_t>> kept;
  for (auto [rows, cols] : shapes) {
    int64_t elements;
    if (llvm::MulOverflow(rows, cols, elements) ||
        elements > report.maxElements)
      report.skippedShapes.push_back({rows, cols});
    else
      kept.push_back({rows, cols});
  }
  return kept;
}

FailureOr<CheckReport> runNormCheck(func::FuncOp norm,
                                    const CheckOptions &options) {
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

  CheckReport report;
  report.name = norm.getSymName().str();
  report.seed = options.seed;
  report.maxElements = options.maxElements;
  // Static extents come from the IR: shapes over the budget are left out
  // (and reported), never allocated.
  std::vector<std::pair<int64_t, int64_t>> matrix;
  for (int64_t rows : rowCounts)
    for (int64_t cols : colCounts)
      matrix.push_back({rows, cols});
  std::vector<std::pair<int64_t, int64_t>> shapes =
      withinBudget(matrix, report);
  if (shapes.empty())
    return norm.emitError()
           << "norm '" << norm.getSymName() << "' has no shape within the "
           << "check's budget of " << options.maxElements
           << " elements per tensor (the smallest is "
           << *llvm::min_element(rowCounts) << " x "
           << *llvm::min_element(colCounts) << ")";

  struct Variant {
    ElementKind kind;
    bool emulated;
  };
  std::vector<Variant> variants = {{*declared, false}};
  if (options.emulateBF16 && *declared == ElementKind::F32)
    variants.push_back({ElementKind::BF16, true});
  Candidate candidate{norm, "f32"};
  for (const Variant &variant : variants) {
    for (auto [rows, cols] : shapes) {
      CaseSetup setup;
      setup.rows = rows;
      setup.cols = cols;
      setup.seed = options.seed;
      if (variant.emulated)
        setup.emulated = variant.kind;
      setup.tolerance = options.toleranceOverride > 0
                            ? options.toleranceOverride
                        : isNarrow(variant.kind) ? options.narrowTolerance
                                                 : options.f32Tolerance;
      setup.conditionOnNoise = true;
      FailureOr<CheckCase> check = runCase(norm, candidate, setup);
      if (failed(check))
        return failure();
      check->dtype = kindName(variant.kind);
      check->emulated = variant.emulated;
      report.cases.push_back(std::move(*check));
    }
  }
  return report;
}

FailureOr<CheckReport> runMatrixUpdateCheck(func::FuncOp update,
                                            const CheckOptions &options) {
  if (!update)
    return failure();
  if (!isMatrixUpdate(update))
    return update.emitError()
           << "function '" << update.getSymName() << "' is not a 2-D update";
  CheckReport report;
  report.name = update.getSymName().str();
  report.seed = options.seed;
  report.steps = options.steps;
  report.maxElements = options.maxElements;
  // Static extents of the params replace the options' (one shape each).
  std::vector<std::pair<int64_t, int64_t>> matrix;
  for (auto [rows, cols] : options.updateShapes) {
    if (std::optional<unsigned> index = getWholeRowsArg(update)) {
      auto type = cast<RankedTensorType>(update.getArgumentTypes()[*index]);
      if (!type.isDynamicDim(0))
        rows = type.getDimSize(0);
      if (!type.isDynamicDim(1))
        cols = type.getDimSize(1);
    }
    if (!llvm::is_contained(matrix, std::pair(rows, cols)))
      matrix.push_back({rows, cols});
  }
  Candidate candidate{update, "f32"};
  for (auto [rows, cols] : withinBudget(matrix, report)) {
    CaseSetup setup;
    setup.rows = rows;
    setup.cols = cols;
    setup.steps = options.steps;
    setup.seed = options.seed;
    setup.tolerance = options.toleranceOverride > 0 ? options.toleranceOverride
                                                    : options.f32Tolerance;
    // Near ties left out as in a 1-D update's check (a rounding to an
    // integer, a comparison).
    setup.decisionSlack = options.decisionSlack;
    setup.maxAmbiguousFraction = options.maxAmbiguousFraction;
    FailureOr<CheckCase> check = runCase(update, candidate, setup);
    if (failed(check))
      return failure();
    check->dtype = "f32";
    report.cases.push_back(std::move(*check));
  }
  if (report.cases.empty())
    return update.emitError() << "no shape of the check is within its budget "
                              << "of " << options.maxElements << " elements";
  return report;
}

/// The 1-D update's report: each plan's error, where the worst is, what was
/// left out, the verdict.
static void printElementsReport(const CheckReport &report,
                                const CheckOptions &options,
                                llvm::raw_ostream &os) {
  const CheckCase &check = report.cases.front();
  for (const auto &[name, error] : check.candidateErrors)
    os << llvm::left_justify(name + " max error:", 19)
       << llvm::format("%.3e", error) << "\n";
  if (check.worstRow >= 0)
    os << "worst: " << check.worstArg << "[" << check.worstRow << "]\n";
  if (check.ambiguousElements > 0)
    os << "left out: " << check.ambiguousElements << " of "
       << check.comparedElements << " elements decided within "
       << llvm::format("%.0e", options.decisionSlack)
       << " of a tie (a comparison, floor, sign), which f32 may decide "
          "otherwise\n";
  if (check.maxAmbiguousFraction > options.maxAmbiguousFraction)
    os << "too ambiguous: "
       << llvm::format("%.2f", check.maxAmbiguousFraction * 100)
       << " % of a tensor hangs on near-tie decisions (at most "
       << llvm::format("%.2f", options.maxAmbiguousFraction * 100)
       << " % may)\n";
  os << (check.passed ? "PASS" : "FAIL") << " (tolerance "
     << llvm::format("%.1e", options.tolerance) << ", " << report.steps
     << " steps, seed " << report.seed << ")\n";
}

void printCheckReport(const CheckReport &report, const CheckOptions &options,
                      llvm::raw_ostream &os) {
  if (report.cases.size() == 1 && report.cases.front().cols == 0)
    return printElementsReport(report, options, os);
  bool anyEmulated = false;
  for (const CheckCase &check : report.cases) {
    std::string dtype = check.dtype + (check.emulated ? "*" : "");
    anyEmulated |= check.emulated;
    os << llvm::format("%5lld x %5lld  %-5s  max error %.3e  tolerance %.1e  "
                       "%s",
                       static_cast<long long>(check.rows),
                       static_cast<long long>(check.cols), dtype.c_str(),
                       check.error, check.tolerance,
                       check.passed ? "PASS" : "FAIL");
    if (check.error > 0 || std::isnan(check.error))
      os << "  (worst " << check.worstArg << "[" << check.worstRow << ", "
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
