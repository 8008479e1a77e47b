//===- Pipeline.cpp - from kernel IR text to a plan -----------------------===//

#include "codegen/Pipeline.h"

#include "codegen/CudaEmitter.h"
#include "codegen/CudaNorm.h"
#include "codegen/CudaOps.h"
#include "codegen/DiagnosticErrors.h"
#include "dialect/KFuseUpdate.h"
#include "dialect/SourceLimits.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kfuse {

std::unique_ptr<MLIRContext> createContext() {
  DialectRegistry registry;
  registry.insert<KFuseDialect, arith::ArithDialect, math::MathDialect,
                  func::FuncDialect>();
  // Single-threaded: an update or norm is one function, and a thread pool
  // per context would only cost threads.
  auto context =
      std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  // A pass's error names its op by location; a dump of the whole update in
  // generic form after it helps no user.
  context->printOpOnDiagnostic(false);
  return context;
}

namespace {
/// Collects diagnostics as FILE:LINE:COL: error: text for an llvm::Error.
class DiagnosticCollector {
public:
  DiagnosticCollector(MLIRContext &context, llvm::SourceMgr &sourceMgr)
      : stream(text), handler(sourceMgr, &context, stream) {}
  llvm::Error takeError(StringRef fallback) {
    stream.flush();
    StringRef message = StringRef(text).rtrim();
    return llvm::createStringError(message.empty() ? fallback : message);
  }

private:
  std::string text;
  llvm::raw_string_ostream stream;
  SourceMgrDiagnosticHandler handler;
};
} // namespace

llvm::Expected<ParsedKernel> parseKernel(MLIRContext &context, StringRef text,
                                         StringRef bufferName,
                                         std::optional<KernelKind> required) {
  // Parse errors are rendered with their source line here; later
  // diagnostics print file:line:col only, so the buffer need not outlive us.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  DiagnosticCollector diagnostics(context, sourceMgr);
  if (llvm::Error error = checkSourceLimits(sourceMgr))
    return std::move(error);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return diagnostics.takeError(!required ? "failed to parse the kernel"
                                 : required == KernelKind::norm
                                     ? "failed to parse the norm"
                                     : "failed to parse the update");
  func::FuncOp first;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (!isUpdate(func) && !isNorm(func))
      continue;
    if (first) {
      {
        InFlightDiagnostic diag =
            func.emitError()
            << "a second kernel function '" << func.getSymName()
            << "'; a kfuse source holds one update or norm";
        diag.attachNote(first.getLoc()) << "the first is here";
      } // reported here, before the collector is read
      return diagnostics.takeError("a second kernel function");
    }
    first = func;
  }
  KernelKind kind = required.value_or(
      first && isNorm(first) ? KernelKind::norm : KernelKind::update);
  if (!first || isNorm(first) != (kind == KernelKind::norm)) {
    emitError(module->getLoc()) << "no func.func with the '"
                                << (!required ? "kfuse.update' or 'kfuse.norm"
                                    : kind == KernelKind::norm ? "kfuse.norm"
                                                               : "kfuse.update")
                                << "' attribute";
    return diagnostics.takeError("no kernel function");
  }
  if (isElementForm(first)) {
    // Everything after the parser takes the tensor form.
    PassManager pm(&context);
    pm.nest<func::FuncOp>().addPass(createLiftElementFormPass());
    if (failed(pm.run(*module)))
      return diagnostics.takeError("failed to lift the element-form update");
  }
  int64_t numOps = 0;
  first.walk([&](Operation *) { ++numOps; });
  if (numOps > kMaxKernelOps) {
    first.emitError() << "'" << first.getSymName() << "' has " << numOps
                      << " operations; kfuse compiles at most "
                      << kMaxKernelOps;
    return diagnostics.takeError("too many operations");
  }
  return ParsedKernel{std::move(module), kind};
}

llvm::Expected<OwningOpRef<ModuleOp>> parseKernelModule(MLIRContext &context,
                                                        StringRef text,
                                                        StringRef bufferName,
                                                        KernelKind kind) {
  llvm::Expected<ParsedKernel> parsed =
      parseKernel(context, text, bufferName, kind);
  if (!parsed)
    return parsed.takeError();
  return std::move(parsed->module);
}

/// The norm pipeline: kfuse-specialize (a dtype per tensor argument, the
/// row length, the alignment), canonicalize and CSE; the update options
/// have nothing to act on.
static llvm::Error runNormPipeline(func::FuncOp norm,
                                   const Specialization &spec) {
  MLIRContext *context = norm.getContext();
  SpecializePassOptions options;
  options.cols = spec.cols;
  options.alignment = spec.alignment;
  if (!spec.argDTypes.empty()) {
    if (spec.argDTypes.size() != norm.getNumArguments())
      return llvm::createStringError(formatLocation(norm.getLoc()) +
                                     ": error: expected " +
                                     std::to_string(norm.getNumArguments()) +
                                     " dtypes, one per argument, got " +
                                     std::to_string(spec.argDTypes.size()));
    for (auto [type, dtype] :
         llvm::zip_equal(norm.getArgumentTypes(), spec.argDTypes))
      if (isa<RankedTensorType>(type))
        options.argDTypes.push_back(dtypeName(dtype));
  }
  DiagnosticErrors errors(context);
  PassManager pm(context);
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createSpecializePass(options));
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
  if (failed(pm.run(norm->getParentOfType<ModuleOp>())))
    return errors.takeError("the kfuse norm pipeline failed");
  return llvm::Error::success();
}

/// A specialized update's phases and their regions: kfuse-schedule-phases,
/// kfuse-fuse-elementwise, canonicalize and CSE.
static void addPhasePasses(OpPassManager &funcPm,
                           const PipelineOptions &options) {
  SchedulePhasesPassOptions phases;
  phases.gridBarrier = options.gridBarrier;
  funcPm.addPass(createSchedulePhasesPass(phases));
  FuseElementwisePassOptions fuse;
  fuse.maxGroupSize = options.fuse ? options.maxGroupSize : 1;
  funcPm.addPass(createFuseElementwisePass(fuse));
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
}

llvm::Error runPipeline(ModuleOp module, const Specialization &spec,
                        const PipelineOptions &options) {
  MLIRContext *context = module.getContext();
  if (func::FuncOp norm = findNorm(module))
    return runNormPipeline(norm, spec);
  DiagnosticErrors errors(context);
  func::FuncOp matrixUpdate = findUpdate(module);
  if (matrixUpdate && !isMatrixUpdate(matrixUpdate))
    matrixUpdate = nullptr;
  if (matrixUpdate) {
    // Not yet for 2-D updates: the passes say so at the function too.
    StringRef missing = options.clipGradNorm && !options.clipNormExternal
                            ? "gradient clipping by a norm reduced in the plan"
                        : options.masterWeights ? "master weights"
                                                : "";
    if (!missing.empty()) {
      matrixUpdate.emitError()
          << "'" << matrixUpdate.getSymName() << "' is a 2-D update; "
          << missing << " is not generated for 2-D updates yet"
          << (options.clipGradNorm && !options.clipNormExternal
                  ? " (clipping by the caller's norm is: "
                    "--clip-external-norm, KFUSE_PLAN_CLIP_EXTERNAL_NORM)"
                  : "");
      return errors.takeError("a 2-D update");
    }
  }

  // Per-tensor reductions and states run over the multi-tensor table: it
  // is what gives each chunk its tensor (a table of one for one tensor).
  auto hasPerTensorState = [&] {
    func::FuncOp update = findUpdate(module);
    if (!update)
      return false;
    for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i)
      if (isPerTensorArg(update, i))
        return true;
    return false;
  };
  // A 2-D update's table gives each tensor its row length.
  bool multiTensor =
      options.multiTensor || options.clipGradNorm || matrixUpdate ||
      module.walk([](ReduceOp) { return WalkResult::interrupt(); })
          .wasInterrupted() ||
      hasPerTensorState();
  if (options.gradScaling && !multiTensor)
    return llvm::createStringError(
        "grad scaling needs a multi-tensor plan: the found-inf flag is part "
        "of the multi-tensor kernel signature");
  // The passes that add arguments (model copies, hypers) append them, so
  // the update's own keep their indices for the storage dtypes after; the
  // added ones take their role's.
  func::FuncOp written = findUpdate(module);
  unsigned ownArgs = written ? written.getNumArguments() : 0;
  PassManager transforms(context);
  OpPassManager &transformsPm = transforms.nest<func::FuncOp>();
  if (options.masterWeights)
    transformsPm.addPass(createMasterWeightsPass());
  // Before grad scaling, which then unscales the norm's reads too.
  if (options.clipGradNorm) {
    ClipGradNormPassOptions clip;
    clip.externalNorm = options.clipNormExternal;
    transformsPm.addPass(createClipGradNormPass(clip));
  }
  if (options.gradScaling)
    transformsPm.addPass(createGradScalingPass());
  if (failed(transforms.run(module)))
    return errors.takeError("the kfuse pipeline failed");

  PassManager pm(context);
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  SpecializePassOptions specialize;
  specialize.paramDType = dtypeName(spec.paramDType);
  specialize.gradDType = dtypeName(spec.gradDType);
  specialize.stateDType = dtypeName(spec.stateDType);
  specialize.modelDType = dtypeName(spec.modelDType);
  if (func::FuncOp update = findUpdate(module);
      update && !spec.argDTypes.empty())
    for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i) {
      if (!isa<RankedTensorType>(update.getArgumentTypes()[i]))
        continue;
      auto role = static_cast<ArgRole>(*getArgRole(update, i));
      specialize.argDTypes.push_back(dtypeName(
          i < ownArgs ? spec.dtypeOf(i, role) : spec.roleDType(role)));
    }
  // Groups of a multi-tensor plan have sizes of their own.
  specialize.numel = multiTensor ? -1 : spec.numel;
  specialize.alignment = spec.alignment;
  specialize.numelMultiple = multiTensor ? 1 : spec.numelMultiple;
  funcPm.addPass(createSpecializePass(specialize));
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());
  if (multiTensor)
    funcPm.addPass(createHorizontalPass());
  addPhasePasses(funcPm, options);
  if (failed(pm.run(module)))
    return errors.takeError("the kfuse pipeline failed");
  return llvm::Error::success();
}

MLIRContext &threadContext() {
  // Dialect loading costs about what parsing an update does; the runtime
  // compiles on few threads, so each keeps one context.
  thread_local std::unique_ptr<MLIRContext> context = createContext();
  return *context;
}

std::vector<ArgInfo> describeArgs(func::FuncOp kernel) {
  std::vector<ArgInfo> args;
  for (unsigned i = 0, e = kernel.getNumArguments(); i < e; ++i) {
    ArgInfo info;
    info.name = getArgName(kernel, i);
    info.role = static_cast<ArgRole>(*getArgRole(kernel, i));
    info.defaultValue = getArgDefault(kernel, i);
    // A scalar state is per element in element form unless kfuse.level
    // says per tensor; a tensor's shape gives its level.
    Type type = kernel.getArgumentTypes()[i];
    info.level = isPerTensorArg(kernel, i)     ? ArgLevel::tensor
                 : isa<RankedTensorType>(type) ? getValueLevel(type)
                                               : ArgLevel::element;
    info.dtype =
        getStorageDType(getElementTypeOrSelf(type)).value_or(DType::f32);
    args.push_back(std::move(info));
  }
  return args;
}

llvm::Expected<std::vector<ArgInfo>>
describeKernel(StringRef text, StringRef bufferName, KernelKind kind) {
  auto module = parseKernelModule(threadContext(), text, bufferName, kind);
  if (!module)
    return module.takeError();
  return describeArgs(kind == KernelKind::norm ? findNorm(**module)
                                               : findUpdate(**module));
}

static llvm::Expected<KernelPlan>
emitNormThroughUpdates(ModuleOp module, const NormEmitOptions &options);

llvm::Expected<KernelPlan> compileToPlan(StringRef text, StringRef bufferName,
                                         const Specialization &spec,
                                         const PipelineOptions &options,
                                         int ptxSm) {
  MLIRContext &context = threadContext();
  llvm::Expected<ParsedKernel> parsed = parseKernel(context, text, bufferName);
  if (!parsed)
    return parsed.takeError();
  ModuleOp module = *parsed->module;
  // A norm's emitter options read its argument levels as written.
  std::optional<NormEmitOptions> normOptions;
  if (parsed->kind == KernelKind::norm)
    normOptions = getNormEmitOptions(findNorm(module), spec.cols);
  if (llvm::Error error = runPipeline(module, spec, options))
    return std::move(error);
  if (normOptions) {
    llvm::Expected<KernelPlan> plan = emitNormPlan(module, *normOptions);
    if (plan && ptxSm)
      plan->ptxUnsupported = "norms are compiled through NVRTC";
    return plan;
  }

  DiagnosticErrors errors(&context);
  PtxTarget ptxTarget{ptxSm};
  FailureOr<KernelPlan> plan =
      emitCuda(findUpdate(module), ptxSm ? &ptxTarget : nullptr);
  if (failed(plan))
    return errors.takeError("code generation failed");
  return std::move(*plan);
}

/// A specialized norm as a one-phase 2-D update (the update's phase
/// scheduling and fusion), emitted as a norm plan by the update emitter's
/// register-row loop.
static llvm::Expected<KernelPlan>
emitNormThroughUpdates(ModuleOp module, const NormEmitOptions &options) {
  func::FuncOp norm = findNorm(module);
  MLIRContext *context = module.getContext();
  DiagnosticErrors errors(context);
  // Specialized to one column, a row's tensors read as values per row.
  if (options.cols == 1)
    return llvm::createStringError(
        formatLocation(norm.getLoc()) +
        ": error: a norm over rows of one column is generated by the norm "
        "emitter only; unset KFUSE_NORM_EMITTER=update");
  norm->removeAttr(KFuseDialect::kNormAttrName);
  norm->setAttr(KFuseDialect::kUpdateAttrName, UnitAttr::get(context));
  norm->setAttr(KFuseDialect::kMultiTensorAttrName, UnitAttr::get(context));
  norm->setAttr(KFuseDialect::kRowKernelAttrName, UnitAttr::get(context));
  PassManager pm(context);
  addPhasePasses(pm.nest<func::FuncOp>(), PipelineOptions());
  if (failed(pm.run(module)))
    return errors.takeError("the kfuse pipeline failed");
  FailureOr<KernelPlan> plan = emitRowsCuda(norm, options);
  if (failed(plan))
    return errors.takeError("norm code generation failed");
  return std::move(*plan);
}

llvm::Expected<KernelPlan> emitNormPlan(ModuleOp module,
                                        const NormEmitOptions &options) {
  func::FuncOp norm = findNorm(module);
  if (!norm)
    return llvm::createStringError(
        "no func.func with the 'kfuse.norm' attribute");
  if (options.throughUpdateEmitter)
    return emitNormThroughUpdates(module, options);
  DiagnosticErrors errors(module.getContext());
  FailureOr<KernelPlan> plan = emitNormCuda(norm, options);
  if (failed(plan))
    return errors.takeError("norm code generation failed");
  return std::move(*plan);
}

} // namespace kfuse
