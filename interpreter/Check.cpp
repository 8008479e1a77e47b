//===- Check.cpp - compare compiled updates against the reference --------===//

#include "interpreter/Check.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/ElementOps.h"
#include "interpreter/NormalSampler.h"

#include "llvm/Support/Format.h"

#include <cmath>
#include <limits>
#include <random>

using namespace mlir;

namespace kfuse {

namespace {

/// A function under test and how it runs.
struct Subject {
  func::FuncOp func;
  Precision precision;
  UpdateValues values;
};

/// How an argument's initial values are drawn.
enum class Distribution { Standard, FirstMoment, SecondMoment };

} // namespace

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
  struct Candidate {
    func::FuncOp func;
    const char *what;
    double *error;
  };
  CheckReport report;
  SmallVector<Candidate, 2> candidates;
  if (unfused)
    candidates.push_back({unfused, "unfused", &report.maxRelErrorUnfused});
  if (fused)
    candidates.push_back({fused, "fused", &report.maxRelErrorFused});
  for (const Candidate &candidate : candidates)
    if (failed(checkSignature(reference, candidate.func, candidate.what)))
      return failure();

  std::vector<Subject> subjects;
  subjects.push_back({reference, Precision::F64, {}});
  for (const Candidate &candidate : candidates)
    subjects.push_back({candidate.func, Precision::F32, {}});

  // The element count: a static shape anywhere fixes it.
  unsigned numArgs = reference.getNumArguments();
  std::optional<int64_t> staticSize;
  for (Subject &subject : subjects)
    for (BlockArgument arg : subject.func.getArguments())
      if (auto tensor = dyn_cast<RankedTensorType>(arg.getType());
          tensor && tensor.hasStaticShape()) {
        if (staticSize && *staticSize != tensor.getNumElements())
          return subject.func.emitError()
                 << "argument #" << arg.getArgNumber() << " of type " << tensor
                 << " does not have the " << *staticSize
                 << " elements of the other tensors";
        staticSize = tensor.getNumElements();
      }
  if (staticSize.value_or(options.numel) > options.maxElements)
    return reference.emitError()
           << "check runs at most " << options.maxElements
           << " elements per tensor, got " << staticSize.value_or(options.numel)
           << (staticSize ? " (a static shape)" : "");
  auto numel = static_cast<size_t>(staticSize.value_or(options.numel));

  NormalSampler sampler(options.seed);
  // Draws `stddev`-scaled normals, rounded to f32 and to every storage type
  // the argument has in any subject, so all subjects read the same values.
  auto draw = [&](unsigned index,
                  Distribution distribution) -> FailureOr<std::vector<double>> {
    double stddev = distribution == Distribution::Standard      ? 1.0
                    : distribution == Distribution::FirstMoment ? 0.1
                                                                : 0.01;
    std::vector<double> elements(numel);
    for (double &element : elements) {
      element = sampler.sample(stddev);
      if (distribution == Distribution::SecondMoment)
        element = std::fabs(element);
      element = roundToKind(element, ElementKind::F32);
    }
    for (Subject &subject : subjects) {
      FailureOr<ElementKind> kind = getElementKind(
          subject.func.getArgument(index).getType(), subject.func.getLoc(),
          "argument '" + getArgName(subject.func, index) + "'");
      if (failed(kind))
        return failure();
      for (double &element : elements)
        element = roundToKind(element, *kind);
    }
    return elements;
  };

  for (Subject &subject : subjects) {
    subject.values.tensors.resize(numArgs);
    subject.values.scalars.resize(numArgs);
  }
  SmallVector<unsigned> gradArgs, hyperArgs, comparedArgs;
  for (unsigned i = 0; i < numArgs; ++i) {
    std::string name = getArgName(reference, i);
    std::optional<Role> role = getArgRole(reference, i);
    if (!role)
      return reference.emitError()
             << "argument #" << i << " '" << name
             << "' has no kfuse.role; check cannot choose its inputs";
    if (*role == Role::grad) {
      gradArgs.push_back(i);
      continue;
    }
    if (*role == Role::hyper) {
      hyperArgs.push_back(i);
      if (name != "step" && !getArgDefault(reference, i))
        return reference.emitError()
               << "hyper argument #" << i << " '" << name
               << "' has no kfuse.default; check cannot choose its value";
      continue;
    }
    comparedArgs.push_back(i);
    Distribution distribution = Distribution::Standard;
    if (*role == Role::state)
      distribution = StringRef(name).contains("sq") ? Distribution::SecondMoment
                                                    : Distribution::FirstMoment;
    FailureOr<std::vector<double>> initial = draw(i, distribution);
    if (failed(initial))
      return failure();
    for (Subject &subject : subjects) {
      if (isPerTensorArg(reference, i))
        subject.values.scalars[i] = initial->empty() ? 0.0 : initial->front();
      else
        subject.values.tensors[i] = *initial;
    }
  }

  for (int step = 1; step <= options.steps; ++step) {
    for (unsigned i : gradArgs) {
      FailureOr<std::vector<double>> grad = draw(i, Distribution::Standard);
      if (failed(grad))
        return failure();
      for (Subject &subject : subjects) {
        subject.values.tensors[i] = *grad;
        if (i < subject.values.ambiguous.size())
          subject.values.ambiguous[i].clear();
      }
    }
    for (unsigned i : hyperArgs) {
      double value = getArgName(reference, i) == "step"
                         ? static_cast<double>(step)
                         : *getArgDefault(reference, i);
      for (Subject &subject : subjects)
        subject.values.scalars[i] = value;
    }
    for (auto [index, subject] : llvm::enumerate(subjects))
      if (failed(interpretUpdate(subject.func, subject.values,
                                 subject.precision,
                                 index == 0 ? options.decisionSlack : 0.0)))
        return failure();
  }

  const UpdateValues &expected = subjects[0].values;
  auto getAmbiguous = [&](unsigned i) -> ArrayRef<uint8_t> {
    if (i < expected.ambiguous.size())
      return expected.ambiguous[i];
    return {};
  };
  for (unsigned i : comparedArgs) {
    size_t size = expected.tensors[i].size();
    size_t count = llvm::count(getAmbiguous(i), uint8_t(1));
    report.ambiguousElements += static_cast<int64_t>(count);
    report.comparedElements += static_cast<int64_t>(size);
    if (size > 0)
      report.maxAmbiguousFraction =
          std::max(report.maxAmbiguousFraction,
                   static_cast<double>(count) / static_cast<double>(size));
  }
  double worst = -1.0;
  for (auto [index, candidate] : llvm::enumerate(candidates)) {
    const UpdateValues &values = subjects[index + 1].values;
    for (unsigned i : comparedArgs) {
      int64_t worstIndex;
      // A state at the tensor level compares as a tensor of one.
      bool perTensor = isPerTensorArg(reference, i);
      double error = computeTensorError(
          perTensor ? std::vector<double>{values.scalars[i]}
                    : values.tensors[i],
          perTensor ? std::vector<double>{expected.scalars[i]}
                    : expected.tensors[i],
          options.errorFloor, &worstIndex, getAmbiguous(i));
      *candidate.error = std::max(*candidate.error, error);
      if (error > worst) {
        worst = error;
        report.worstArg = getArgName(reference, i);
        report.worstIndex = worstIndex;
      }
    }
  }
  report.passed = report.maxRelErrorUnfused <= options.tolerance &&
                  report.maxRelErrorFused <= options.tolerance &&
                  report.maxAmbiguousFraction <= options.maxAmbiguousFraction;
  return report;
}

void printCheckReport(const CheckReport &report, const CheckOptions &options,
                      llvm::raw_ostream &os) {
  os << "unfused max error: " << llvm::format("%.3e", report.maxRelErrorUnfused)
     << "\n";
  os << "fused max error:   " << llvm::format("%.3e", report.maxRelErrorFused)
     << "\n";
  if (report.worstIndex >= 0)
    os << "worst: " << report.worstArg << "[" << report.worstIndex << "]\n";
  if (report.ambiguousElements > 0)
    os << "left out: " << report.ambiguousElements << " of "
       << report.comparedElements << " elements decided within "
       << llvm::format("%.0e", options.decisionSlack)
       << " of a tie (a comparison, floor, sign), which f32 may decide "
          "otherwise\n";
  if (report.maxAmbiguousFraction > options.maxAmbiguousFraction)
    os << "too ambiguous: "
       << llvm::format("%.2f", report.maxAmbiguousFraction * 100)
       << " % of a tensor hangs on near-tie decisions (at most "
       << llvm::format("%.2f", options.maxAmbiguousFraction * 100)
       << " % may)\n";
  os << (report.passed ? "PASS" : "FAIL") << " (tolerance "
     << llvm::format("%.1e", options.tolerance) << ", " << options.steps
     << " steps, seed " << options.seed << ")\n";
}

} // namespace kfuse
