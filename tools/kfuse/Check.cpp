//===- Check.cpp - kfuse check -------------------------------------------===//
//
// One command for every kernel, one engine (interpreter/Check.h):
// - a 1-D update: the unfused and the fused plan run in the interpreter
//   against float64, and the generated kernels against the same reference
//   where a GPU is present;
// - a norm: the function as written in f32 against float64 over a fixed
//   matrix, rows 1, 3 and 64 times columns 1, 1000, 1024, 5128 and 12289 (a
//   static row length replaces the columns), with the declared storage
//   dtypes and, for an f32 norm, emulated bf16 storage of the full-shape
//   tensors; --seed and --tolerance apply, the update options are refused;
// - a 2-D update: the same over fixed shapes, for --steps steps.
// A check that passes must mean the file compiles: the checked plans are
// emitted (a norm's for every row length checked), and an emitter error
// fails the check.
//
//===----------------------------------------------------------------------===//

#include "tools/kfuse/Commands.h"
#include "tools/kfuse/DeviceRun.h"

#include "codegen/CudaEmitter.h"
#include "codegen/Pipeline.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/Check.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace mlir;

namespace kfuse {

namespace {
struct DeviceCheck {
  bool ran = false;
  std::string skipReason;
  double maxError = 0;
  /// The largest fraction of a tensor the reference left out as ambiguous.
  double maxAmbiguousFraction = 0;
};
} // namespace

/// Runs the generated kernels on the GPU against `reference` in float64.
static Expected<DeviceCheck> checkOnDevice(StringRef text,
                                           const CommonOptions &options,
                                           func::FuncOp reference,
                                           const CheckOptions &checkOptions) {
  DeviceCheck result;
  if (options.pipeline.multiTensor || options.pipeline.gradScaling ||
      options.pipeline.masterWeights) {
    result.skipReason = "multi-tensor, grad-scaling and master-weight plans "
                        "run on the GPU through bench/test_gpu.py";
    return result;
  }
  // A reduction or a state at the tensor level needs the table: a plan.
  bool needsTable =
      reference.walk([](ReduceOp) { return WalkResult::interrupt(); })
          .wasInterrupted() ||
      llvm::any_of(llvm::seq(reference.getNumArguments()),
                   [&](unsigned i) { return isPerTensorArg(reference, i); });
  if (needsTable) {
    result.skipReason = "updates with reductions or states at the tensor "
                        "level run as multi-tensor plans, on the GPU through "
                        "bench/test_gpu_optim_reduce.py";
    return result;
  }
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver) {
    result.skipReason = toString(driver.takeError());
    return result;
  }
  if (Expected<DeviceInfo> device = driver->currentDevice(); !device) {
    result.skipReason = toString(device.takeError());
    return result;
  }
  Expected<std::unique_ptr<Update>> update =
      Update::create(text, options.input);
  if (!update)
    return update.takeError();
  std::vector<ArgInfo> args =
      withStorageDTypes((*update)->args(), options.spec);

  // The inputs the interpreter's check draws, with the same seeds.
  auto draw = [&](uint64_t seed) {
    return drawCheckInputs(reference, args.size(), checkOptions.numel, seed);
  };
  Expected<UpdateValues> expected = draw(checkOptions.seed);
  if (!expected)
    return expected.takeError();
  Expected<DeviceTensors> tensors =
      DeviceTensors::upload(*driver, args, *expected, checkOptions.numel);
  if (!tensors)
    return tensors.takeError();
  for (int step = 1; step <= checkOptions.steps; ++step) {
    if (step > 1) {
      // Fresh grads on both sides; params and states stay each side's own.
      Expected<UpdateValues> fresh = draw(checkOptions.seed + step);
      if (!fresh)
        return fresh.takeError();
      for (auto [index, arg] : llvm::enumerate(args))
        if (arg.role == ArgRole::grad) {
          expected->tensors[index] = std::move(fresh->tensors[index]);
          if (index < expected->ambiguous.size())
            expected->ambiguous[index].clear();
          if (Error error = tensors->write(index, expected->tensors[index]))
            return std::move(error);
        }
    }
    setStep(args, *expected, step);
    if (failed(interpretUpdate(reference, *expected, Precision::F64,
                               checkOptions.decisionSlack)))
      return createStringError("the reference interpreter failed");
    if (Error error = (*update)->launch(tensors->launchArgs(*expected),
                                        /*stream=*/nullptr, options.pipeline))
      return std::move(error);
  }
  UpdateValues actual = *expected;
  if (Error error = tensors->download(actual))
    return std::move(error);
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (arg.role != ArgRole::param && arg.role != ArgRole::state)
      continue;
    ArrayRef<uint8_t> ambiguous;
    if (index < expected->ambiguous.size())
      ambiguous = expected->ambiguous[index];
    result.maxError = std::max(
        result.maxError,
        computeTensorError(actual.tensors[index], expected->tensors[index],
                           checkOptions.errorFloor, nullptr, ambiguous));
    result.maxAmbiguousFraction = std::max(
        result.maxAmbiguousFraction,
        getAmbiguousFraction(ambiguous, expected->tensors[index].size()));
  }
  result.ran = true;
  return result;
}

/// Parses `text` and runs the pipeline with `pipeline` on it.
static Expected<OwningOpRef<ModuleOp>>
compileModule(MLIRContext &context, StringRef text,
              const CommonOptions &options, const PipelineOptions &pipeline) {
  auto module =
      parseKernelModule(context, text, options.input, KernelKind::update);
  if (!module)
    return module.takeError();
  if (Error error = runPipeline(**module, options.spec, pipeline))
    return std::move(error);
  return std::move(*module);
}

/// The elements per tensor of a check of `update`: `requested`, else its
/// static size, else CheckOptions' default.
static Expected<int64_t> checkNumel(func::FuncOp update,
                                    std::optional<int64_t> requested) {
  if (requested)
    return *requested;
  for (Type type : update.getArgumentTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.hasStaticShape()) {
      if (tensor.getNumElements() > kMaxCheckElements)
        return createStringError(
            "'" + update.getSymName() + "' has a static shape of " +
            Twine(tensor.getNumElements()) +
            " elements; kfuse check runs at most " + Twine(kMaxCheckElements));
      return tensor.getNumElements();
    }
  return CheckOptions().numel;
}

/// Emits the CUDA plan of `text` for each row length in `report`: true when
/// every one emits, after printing the line that says so or the error.
static bool emitsForCheckedShapes(const CommonOptions &options, StringRef text,
                                  const CheckReport &report) {
  llvm::SetVector<int64_t> columns;
  for (const CheckCase &checked : report.cases)
    columns.insert(checked.cols);
  unsigned kernels = 0;
  for (int64_t cols : columns) {
    Specialization spec;
    spec.cols = cols;
    Expected<KernelPlan> plan = compileToPlan(text, options.input, spec);
    if (!plan) {
      outs() << "emit: FAIL for " << cols
             << " columns: " << toString(plan.takeError()) << "\n";
      return false;
    }
    kernels = !plan->finishKernel() ? 1 : 2;
  }
  outs() << "emit: " << columns.size()
         << (columns.size() == 1 ? " row length, " : " row lengths, ")
         << kernels << (kernels == 1 ? " kernel" : " kernels") << " each\n";
  return true;
}

static int runNormCheckCommand(const CommonOptions &options, StringRef text,
                               ModuleOp module, double tolerance,
                               uint64_t seed) {
  func::FuncOp norm = findNorm(module);

  CheckOptions checkOptions;
  checkOptions.seed = seed;
  checkOptions.toleranceOverride = tolerance;
  FailureOr<CheckReport> result = runNormCheck(norm, checkOptions);
  if (failed(result))
    return 1;
  outs() << "kfuse check: " << options.input << " (norm '" << norm.getSymName()
         << "', device rounding vs float64, seed " << seed << ")\n";
  printCheckReport(*result, checkOptions, outs());
  bool emits = emitsForCheckedShapes(options, text, *result);
  outs() << "gpu: skipped (norms are checked in the interpreter only)\n";
  return result->passed() && emits ? 0 : 1;
}

static int runMatrixUpdateCheckCommand(const CommonOptions &options,
                                       StringRef text, ModuleOp module,
                                       int steps, double tolerance,
                                       uint64_t seed) {
  func::FuncOp update = findUpdate(module);
  CheckOptions checkOptions;
  checkOptions.seed = seed;
  checkOptions.steps = steps;
  checkOptions.toleranceOverride = tolerance;
  FailureOr<CheckReport> result = runMatrixUpdateCheck(update, checkOptions);
  if (failed(result))
    return 1;
  outs() << "kfuse check: " << options.input << " (2-D update '"
         << update.getSymName() << "', " << steps
         << (steps == 1 ? " step" : " steps")
         << ", device rounding vs float64, seed " << seed << ")\n";
  printCheckReport(*result, checkOptions, outs());
  // A check that passes must mean the file compiles: the kernels are
  // generated as kfuse compile generates them.
  Expected<KernelPlan> plan =
      compileToPlan(text, options.input, options.spec, options.pipeline);
  if (!plan) {
    outs() << "emit: FAIL: " << toString(plan.takeError()) << "\n";
    return 1;
  }
  outs() << "emit: OK\n";
  return result->passed() ? 0 : 1;
}

int runCheck(const CommonOptions &options, std::optional<int64_t> requested,
             int steps, double tolerance, uint64_t seed) {
  Expected<std::string> text = readInput(options);
  if (!text)
    return reportError(text.takeError());
  std::unique_ptr<MLIRContext> context = createContext();
  DiagnosticPrinter diagnostics(*context);
  Expected<ParsedKernel> parsed = parseKernel(*context, *text, options.input);
  if (!parsed)
    return reportError(parsed.takeError());
  if (Error error = checkOptionsApply(options, parsed->kind))
    return reportError(std::move(error));
  if (parsed->kind == KernelKind::norm)
    return runNormCheckCommand(options, *text, *parsed->module, tolerance,
                               seed);
  if (isMatrixUpdate(findUpdate(*parsed->module))) {
    // Checked as written: fixed shapes, the declared dtypes, no plan.
    for (const std::string &given : options.updateOnly)
      if (given != "--steps")
        return reportError(createStringError(
            given + " applies to 1-D updates; a 2-D update is checked as "
                    "written, over fixed shapes in its declared dtypes"));
    return runMatrixUpdateCheckCommand(options, *text, *parsed->module, steps,
                                       tolerance, seed);
  }
  Expected<int64_t> numel = checkNumel(findUpdate(*parsed->module), requested);
  if (!numel)
    return reportError(numel.takeError());
  CommonOptions specialized = options;
  specialized.spec.numel = *numel;
  std::vector<ArgInfo> args = describeArgs(findUpdate(*parsed->module));
  if (Error error = applyNamedDTypes(specialized, args))
    return reportError(std::move(error));
  CheckOptions checkOptions;
  checkOptions.numel = *numel;
  checkOptions.steps = steps;
  checkOptions.seed = seed;
  bool narrow = false;
  for (auto [index, arg] : llvm::enumerate(args))
    narrow |= arg.role != ArgRole::hyper && !arg.perTensor() &&
              specialized.spec.dtypeOf(index, arg.role) != DType::f32;
  checkOptions.tolerance = tolerance > 0 ? tolerance : narrow ? 1e-2 : 1e-6;

  PipelineOptions unfusedPipeline = options.pipeline;
  unfusedPipeline.fuse = false;
  auto unfused = compileModule(*context, *text, specialized, unfusedPipeline);
  if (!unfused)
    return reportError(unfused.takeError());
  auto fused = compileModule(*context, *text, specialized, options.pipeline);
  if (!fused)
    return reportError(fused.takeError());

  // The unfused plan in float64 is the reference: same storage rounding,
  // exact compute.
  func::FuncOp reference = findUpdate(**unfused);
  FailureOr<CheckReport> report =
      kfuse::runCheck(reference, reference, findUpdate(**fused), checkOptions);
  if (failed(report))
    return 1;
  outs() << "kfuse check: " << options.input << " (" << *numel
         << " elements, param " << dtypeName(options.spec.paramDType)
         << ", grad " << dtypeName(options.spec.gradDType) << ", state "
         << dtypeName(options.spec.stateDType);
  for (const auto &[name, dtype] : options.namedDTypes)
    outs() << ", " << name << " " << dtypeName(dtype);
  outs() << ")\n";
  printCheckReport(*report, checkOptions, outs());

  // A check that passes must mean the file compiles: the fused module just
  // checked is emitted, and an emitter error (reported at its op) fails.
  bool passed = report->passed();
  FailureOr<KernelPlan> plan = emitCuda(findUpdate(**fused));
  if (succeeded(plan)) {
    outs() << "emit: " << plan->kernels.size()
           << (plan->kernels.size() == 1 ? " kernel\n" : " kernels\n");
  } else {
    outs() << "emit: FAIL (the error above)\n";
    passed = false;
  }

  Expected<DeviceCheck> device =
      checkOnDevice(*text, specialized, reference, checkOptions);
  if (!device)
    return reportError(device.takeError());
  if (device->ran) {
    bool devicePassed =
        device->maxError <= checkOptions.tolerance &&
        device->maxAmbiguousFraction <= checkOptions.maxAmbiguousFraction;
    outs() << "gpu max error:     " << format("%.3e", device->maxError)
           << (devicePassed ? " PASS" : " FAIL");
    if (device->maxAmbiguousFraction > 0)
      outs() << " (left out at most "
             << format("%.4f", device->maxAmbiguousFraction * 100)
             << " % of a tensor as near-tie decisions)";
    outs() << "\n";
    passed &= devicePassed;
  } else {
    outs() << "gpu: skipped (" << device->skipReason << ")\n";
  }
  return passed ? 0 : 1;
}

} // namespace kfuse
