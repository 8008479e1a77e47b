//===- NormPipeline.cpp - from norm IR text to a norm plan ---------------===//

#include "codegen/NormPipeline.h"

#include "codegen/DiagnosticErrors.h"
#include "codegen/Pipeline.h"
#include "dialect/KFuseUpdate.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/SourceMgr.h"

#include "llvm/Support/raw_ostream.h"
#include <cstdlib>

using namespace mlir;

namespace kfuse {

llvm::Error runNormPipeline(ModuleOp module, const NormSpecialization &spec) {
  func::FuncOp norm = findNorm(module);
  if (!norm)
    return llvm::createStringError(
        "no func.func with the 'kfuse.norm' attribute");
  SpecializePassOptions options;
  options.cols = spec.cols;
  options.alignment = spec.alignment;
  if (!spec.dtypes.empty()) {
    if (spec.dtypes.size() != norm.getNumArguments())
      return llvm::createStringError(formatLocation(norm.getLoc()) +
                                     ": error: expected " +
                                     std::to_string(norm.getNumArguments()) +
                                     " dtypes, one per argument, got " +
                                     std::to_string(spec.dtypes.size()));
    for (auto [type, dtype] :
         llvm::zip_equal(norm.getArgumentTypes(), spec.dtypes))
      if (isa<RankedTensorType>(type))
        options.argDTypes.push_back(dtypeName(dtype));
  }

  DiagnosticErrors errors(module.getContext());
  PassManager pm(module.getContext());
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createSpecializePass(options));
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
  if (failed(pm.run(module)))
    return errors.takeError("the kfuse norm pipeline failed");
  return llvm::Error::success();
}

/// The value of environment variable `name` when it is a positive number
/// below 2^20, else 0.
static unsigned positiveEnvironment(const char *name) {
  const char *text = std::getenv(name);
  unsigned value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value) ||
      value >= (1u << 20))
    return 0;
  return value;
}

/// KFUSE_NORM_STAGES, when set to 0, 1 or 2.
static std::optional<unsigned> stagesEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_STAGES");
  unsigned value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value) || value > 4)
    return std::nullopt;
  return value;
}

/// KFUSE_NORM_SUMS, when set to `registers` or `shared`.
static NormEmitOptions::ColumnSums columnSumsEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_SUMS");
  if (!text)
    return NormEmitOptions::ColumnSums::automatic;
  return llvm::StringSwitch<NormEmitOptions::ColumnSums>(text)
      .Case("registers", NormEmitOptions::ColumnSums::registers)
      .Case("shared", NormEmitOptions::ColumnSums::shared)
      .Default(NormEmitOptions::ColumnSums::automatic);
}

/// KFUSE_NORM_COLUMNS=registers holds the column inputs in registers.
static NormEmitOptions::ColumnInputs columnInputsEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_COLUMNS");
  return text && llvm::StringRef(text) == "registers"
             ? NormEmitOptions::ColumnInputs::registers
             : NormEmitOptions::ColumnInputs::reload;
}

/// The knobs' key as the environment sets them now.
static std::string readTuningKey() {
  std::optional<unsigned> stages = stagesEnvironment();
  NormEmitOptions::ColumnSums sums = columnSumsEnvironment();
  return "stages=" + (stages ? std::to_string(*stages) : std::string("-")) +
         ";min_threads=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_MIN_THREADS_PER_SM")) +
         ";launch_blocks=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_LAUNCH_BLOCKS")) +
         ";max_elements=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_MAX_ELEMENTS")) +
         ";block=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_BLOCK_SIZE")) +
         ";sums=" + std::to_string(static_cast<int>(sums)) + ";columns=" +
         std::to_string(static_cast<int>(columnInputsEnvironment()));
}

bool normLiveKnobs() {
  static const bool live = [] {
    const char *text = std::getenv("KFUSE_NORM_LIVE_KNOBS");
    return text && llvm::StringRef(text) == "1";
  }();
  return live;
}

const std::string &normTuningKey() {
  // Six getenv calls cost more than the rest of an in-memory cache hit, so
  // the knobs are read once, unless a measuring process asks to change them
  // as it goes.
  if (normLiveKnobs()) {
    thread_local std::string key;
    key = readTuningKey();
    return key;
  }
  static const std::string key = readTuningKey();
  return key;
}

NormEmitOptions getNormEmitOptions(ModuleOp module,
                                   const NormSpecialization &spec) {
  NormEmitOptions options;
  options.cols = spec.cols;
  // Measurement overrides (bench/bench_norm.py sweeps them); part of the
  // runtime's cache key through normTuningKey().
  if (unsigned value = positiveEnvironment("KFUSE_NORM_MIN_THREADS_PER_SM"))
    options.minThreadsPerSM = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_LAUNCH_BLOCKS"))
    options.launchMinBlocksPerSM = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_MAX_ELEMENTS"))
    options.maxElementsPerThread = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_BLOCK_SIZE"))
    options.targetBlockSize = value;
  if (std::optional<unsigned> stages = stagesEnvironment())
    options.stages = *stages;
  options.columnSums = columnSumsEnvironment();
  options.columnInputs = columnInputsEnvironment();
  if (func::FuncOp norm = findNorm(module))
    for (Type type : norm.getArgumentTypes())
      options.argShapes.push_back(getNormShape(type));
  return options;
}

llvm::Expected<NormPlan> emitNormPlan(ModuleOp module,
                                      const NormEmitOptions &options) {
  func::FuncOp norm = findNorm(module);
  if (!norm)
    return llvm::createStringError(
        "no func.func with the 'kfuse.norm' attribute");
  DiagnosticErrors errors(module.getContext());
  FailureOr<NormPlan> plan = emitNormCuda(norm, options);
  if (failed(plan))
    return errors.takeError("norm code generation failed");
  return std::move(*plan);
}

std::vector<NormArg> describeNorm(func::FuncOp norm) {
  std::vector<NormArg> args;
  for (unsigned i = 0, e = norm.getNumArguments(); i < e; ++i) {
    NormArg arg;
    arg.name = getArgName(norm, i);
    std::optional<Role> role = getArgRole(norm, i);
    arg.role = role == Role::output  ? NormArg::Role::output
               : role == Role::hyper ? NormArg::Role::hyper
                                     : NormArg::Role::input;
    arg.shape = getNormShape(norm.getArgumentTypes()[i]);
    arg.defaultValue = getArgDefault(norm, i);
    args.push_back(std::move(arg));
  }
  return args;
}

llvm::Expected<std::vector<NormArg>> describeNorm(StringRef text,
                                                  StringRef bufferName) {
  MLIRContext &context = threadContext();
  auto module = parseKernelModule(context, text, bufferName, KernelKind::norm);
  if (!module)
    return module.takeError();
  return describeNorm(findNorm(**module));
}

llvm::Expected<NormPlan> compileNormToPlan(StringRef text, StringRef bufferName,
                                           const NormSpecialization &spec) {
  MLIRContext &context = threadContext();
  auto module = parseKernelModule(context, text, bufferName, KernelKind::norm);
  if (!module)
    return module.takeError();
  NormEmitOptions options = getNormEmitOptions(**module, spec);
  if (llvm::Error error = runNormPipeline(**module, spec))
    return std::move(error);
  return emitNormPlan(**module, options);
}

} // namespace kfuse
