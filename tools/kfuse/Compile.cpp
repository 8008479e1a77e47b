//===- Compile.cpp - kfuse compile ---------------------------------------===//

#include "tools/kfuse/Commands.h"

#include "codegen/CudaEmitter.h"
#include "codegen/DiagnosticErrors.h"
#include "dialect/KFuseUpdate.h"
#include "dialect/SourceLimits.h"
#include "runtime/CudaDriver.h"
#include "runtime/Dump.h"
#include "runtime/ImageCache.h"
#include "runtime/Jit.h"
#include "runtime/Log.h"
#include "runtime/Nvrtc.h"
#include "runtime/PlanCache.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>
#include <future>

using namespace llvm;
using namespace mlir;

namespace kfuse {

int reportError(Error error) {
  handleAllErrors(std::move(error), [](const ErrorInfoBase &info) {
    std::string message = info.message();
    // Diagnostics rendered from the IR already carry "file:line:col: error:".
    if (StringRef(message).contains(": error: "))
      errs() << message << "\n";
    else
      WithColor::error(errs(), "kfuse") << message << "\n";
  });
  return 1;
}

DiagnosticPrinter::DiagnosticPrinter(MLIRContext &context)
    : handler(&context, [](Diagnostic &diag) {
        errs() << formatLocation(diag.getLocation()) << ": "
               << (diag.getSeverity() == DiagnosticSeverity::Error ? "error"
                                                                   : "note")
               << ": " << diag << "\n";
        for (Diagnostic &note : diag.getNotes())
          errs() << formatLocation(note.getLocation()) << ": note: " << note
                 << "\n";
        return success();
      }) {}

Error checkOptionsApply(const CommonOptions &options, KernelKind kind) {
  const std::vector<std::string> &wrong =
      kind == KernelKind::norm ? options.updateOnly : options.normOnly;
  if (wrong.empty())
    return Error::success();
  return createStringError(wrong.front() + " applies to " +
                           (kind == KernelKind::norm ? "updates" : "norms") +
                           " only; '" + options.input + "' holds " +
                           (kind == KernelKind::norm ? "a norm" : "an update"));
}

Error applyNamedDTypes(CommonOptions &options, ArrayRef<ArgInfo> args) {
  if (options.namedDTypes.empty())
    return Error::success();
  std::vector<DType> dtypes;
  for (auto [index, arg] : llvm::enumerate(args))
    dtypes.push_back(options.spec.dtypeOf(index, arg.role));
  for (const auto &[name, dtype] : options.namedDTypes) {
    const ArgInfo *arg = llvm::find_if(
        args, [&, &name = name](const ArgInfo &a) { return a.name == name; });
    if (arg == args.end())
      return createStringError("--dtype " + name + "=" + dtypeName(dtype) +
                               ": '" + options.input +
                               "' has no argument named '" + name + "'");
    if (arg->role == ArgRole::hyper || arg->perTensor())
      return createStringError("--dtype " + name + "=" + dtypeName(dtype) +
                               ": '" + name + "' is " +
                               (arg->role == ArgRole::hyper
                                    ? "a hyperparameter"
                                    : "a state at the tensor level (one f32)") +
                               "; only tensors have a storage dtype");
    dtypes[arg - args.begin()] = dtype;
  }
  options.spec.argDTypes = std::move(dtypes);
  return Error::success();
}

Expected<std::string> readInput(const CommonOptions &options) {
  return readKernelSource(options.input);
}

std::string resolveArch(const std::string &requested) {
  if (!requested.empty())
    return requested;
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver) {
    consumeError(driver.takeError());
    return "sm_90";
  }
  Expected<DeviceInfo> device = driver->currentDevice();
  if (!device) {
    consumeError(device.takeError());
    return "sm_90";
  }
  return device->arch;
}

/// Milliseconds since `start`.
static double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// Where the time of one compile went, for --stats.
struct StageTimes {
  double parseMs = 0, passesMs = 0, emitMs = 0;
  json::Object toJson(const CompiledImage *image) const {
    json::Object stages{
        {"parse_ms", parseMs}, {"passes_ms", passesMs}, {"emit_ms", emitMs}};
    if (image) {
      stages["cache"] = cacheSourceName(image->source);
      stages["cache_ms"] = image->diskMs;
    }
    return stages;
  }
};

/// `source` (generated from `irText`) compiled for `arch` through the
/// process's disk cache, and dumped where KFUSE_DUMP asks.
static Expected<CompiledImage>
compileSource(StringRef irText, const std::string &source,
              const std::string &name, const std::string &arch, bool ptxOnly) {
  NvrtcOptions nvrtcOptions;
  nvrtcOptions.arch = arch;
  nvrtcOptions.ptxOnly = ptxOnly;
  Expected<CompiledImage> image =
      compileImage(source, name + ".cu", nvrtcOptions, installedDriverVersion(),
                   processDiskCache());
  if (image)
    dumpModule(name, image->key, irText, source, image->nvrtc.ptx);
  return image;
}

/// A kernel plan compiled for `arch` as the runtime does (direct PTX or
/// CUDA source, KFUSE_CODEGEN), through the disk cache, and dumped.
static Expected<CompiledImage> compilePlan(StringRef irText,
                                           const KernelPlan &plan,
                                           const std::string &arch,
                                           bool ptxOnly) {
  NvrtcOptions nvrtcOptions;
  nvrtcOptions.arch = arch;
  nvrtcOptions.ptxOnly = ptxOnly;
  Expected<CompiledImage> image = compilePlanImage(
      {plan.source, plan.ptx, plan.ptxUnsupported}, plan.name + ".cu",
      nvrtcOptions, codegenModeFor(plan.multiTensor, PtxCompiler::nvJitLink),
      PtxCompiler::nvJitLink, installedDriverVersion(), processDiskCache());
  if (image)
    dumpModule(plan.name, image->key, irText, plan.source, image->nvrtc.ptx);
  return image;
}

/// The one JSON line of `--stats`.
static json::Object makeStats(const KernelPlan &plan, const NvrtcResult &nvrtc,
                              StringRef arch, double totalMs) {
  json::Array kernels;
  for (const KernelInfo &kernel : plan.kernels) {
    json::Object entry{{"name", kernel.name},
                       {"body_ops", kernel.numBodyOps},
                       {"vector_width", kernel.vectorWidth},
                       {"index_bits", kernel.indexBits},
                       {"shared_bytes", kernel.sharedBytes},
                       {"launch_blocks", kernel.launchBlocks}};
    for (const KernelResources &resources : nvrtc.resources)
      if (resources.name == kernel.name) {
        entry["registers"] = resources.registers;
        entry["spills"] = resources.spillStoreBytes + resources.spillLoadBytes;
        entry["stack_bytes"] = resources.stackBytes;
      }
    kernels.push_back(std::move(entry));
  }
  return json::Object{
      {"update", plan.name},
      {"arch", arch},
      {"kernels", static_cast<int64_t>(plan.kernels.size())},
      {"bytes_per_element", plan.bytesPerElement()},
      {"numel", plan.numel},
      {"temporaries", static_cast<int64_t>(plan.temporaries.size())},
      {"per_kernel", std::move(kernels)},
      {"compiler", nvrtc.compiler},
      {"nvrtc_ms", nvrtc.compileMs},
      {"total_ms", totalMs}};
}

/// The file `-o` names, binary for a cubin.
static Expected<std::unique_ptr<ToolOutputFile>>
openOutput(const std::string &output, const std::string &emit) {
  std::error_code ec;
  auto out = std::make_unique<ToolOutputFile>(
      output, ec, emit == "cubin" ? sys::fs::OF_None : sys::fs::OF_Text);
  if (ec)
    return createStringError("cannot open '" + output + "': " + ec.message());
  return std::move(out);
}

/// What every `kfuse compile` has done before it knows the kernel's kind:
/// the clock started, the driver probe begun, the text read and parsed.
struct ParsedInput {
  std::chrono::steady_clock::time_point start;
  bool compilesImage = false;
  std::string text;
  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
  StageTimes times;
  /// The plan cache's key (runtime/PlanCache) where this compile makes a
  /// cubin through a disk cache; empty otherwise.
  std::string planKey;
  /// resolveArch's answer, asked once (without --arch it asks the driver).
  std::string resolvedArch;
  const std::string &arch(const CommonOptions &options) {
    if (resolvedArch.empty())
      resolvedArch = resolveArch(options.arch);
    return resolvedArch;
  }
};

/// The image as --emit asks for it (mlir and cuda are written before).
static void writeImage(ToolOutputFile &out, const std::string &emit,
                       const CompiledImage &image) {
  if (emit == "ptx")
    out.os() << image.nvrtc.ptx;
  else if (emit == "cubin")
    out.os() << image.nvrtc.cubin;
}

/// The --stats line of an update, on stdout as its last line whatever -o
/// names; `planCache` is "hit", "miss" or empty (no plan cache in use).
static void writeUpdateStats(ToolOutputFile &out, const KernelPlan &plan,
                             const CompiledImage &image,
                             const std::string &arch, const ParsedInput &input,
                             StringRef planCache) {
  double totalMs = msSince(input.start);
  out.os().flush();
  json::Object line = makeStats(plan, image.nvrtc, arch, totalMs);
  for (auto &entry : input.times.toJson(&image))
    line[entry.first] = std::move(entry.second);
  if (!planCache.empty())
    line["plan_cache"] = planCache;
  outs() << json::Value(std::move(line)) << "\n";
}

/// The update's plan and cubin from the plan cache, written out as
/// compileUpdate would; none on a miss (the caller compiles).
static std::optional<int>
compileFromPlanCache(const std::string &emit, const std::string &output,
                     bool stats, const std::string &arch, ParsedInput &input) {
  std::string warning;
  std::optional<CachedPlan> cached =
      lookupPlan(*processDiskCache(), input.planKey, installedDriverVersion,
                 warning, /*wantCubin=*/true);
  if (!cached) {
    if (!warning.empty())
      logWarning(warning);
    return std::nullopt;
  }
  const KernelPlan &plan = cached->plan;
  const CompiledImage &image = cached->image;
  Expected<std::unique_ptr<ToolOutputFile>> opened = openOutput(output, emit);
  if (!opened)
    return reportError(opened.takeError());
  ToolOutputFile &out = **opened;
  if (emit == "cuda")
    out.os() << plan.source;
  writeImage(out, emit, image);
  dumpModule(plan.name, image.key, input.text, plan.source, image.nvrtc.ptx);
  if (stats)
    writeUpdateStats(out, plan, image, arch, input, "hit");
  out.keep();
  return 0;
}

static int compileUpdate(const CommonOptions &options, const std::string &emit,
                         const std::string &output, bool stats,
                         ParsedInput &input) {
  if (emit != "mlir" && emit != "cuda" && emit != "ptx" && emit != "cubin")
    return reportError(createStringError(
        "unknown --emit=" + emit + "; expected mlir, cuda, ptx or cubin"));
  auto stage = std::chrono::steady_clock::now();
  CommonOptions named = options;
  if (Error error =
          applyNamedDTypes(named, describeArgs(findUpdate(*input.module))))
    return reportError(std::move(error));
  if (Error error = runPipeline(*input.module, named.spec, options.pipeline))
    return reportError(std::move(error));
  input.times.passesMs = msSince(stage);
  stage = std::chrono::steady_clock::now();

  Expected<std::unique_ptr<ToolOutputFile>> opened = openOutput(output, emit);
  if (!opened)
    return reportError(opened.takeError());
  ToolOutputFile &out = **opened;

  if (emit == "mlir" && !stats) {
    input.module->print(out.os());
    out.keep();
    return 0;
  }

  // The direct PTX is written for the arch the image is for.
  std::string resolvedArch = input.arch(options);
  int ptxSm = 0;
  if (codegenModeFor(options.pipeline.multiTensor, PtxCompiler::nvJitLink) !=
          CodegenMode::cuda &&
      input.compilesImage) {
    Expected<int> sm = validateArch(resolvedArch);
    if (!sm)
      return reportError(sm.takeError());
    ptxSm = *sm;
  }
  DiagnosticErrors errors(input.context.get());
  PtxTarget ptxTarget{ptxSm};
  FailureOr<KernelPlan> plan =
      emitCuda(findUpdate(*input.module), ptxSm ? &ptxTarget : nullptr);
  if (failed(plan))
    return reportError(errors.takeError("code generation failed"));
  input.times.emitMs = msSince(stage);

  if (emit == "mlir")
    input.module->print(out.os());
  else if (emit == "cuda")
    out.os() << plan->source;

  std::optional<CompiledImage> image;
  if (input.compilesImage) {
    Expected<CompiledImage> compiled =
        compilePlan(input.text, *plan, resolvedArch, emit == "ptx" && !stats);
    if (!compiled)
      return reportError(compiled.takeError());
    image = std::move(*compiled);
    writeImage(out, emit, *image);
    // Where the image is on disk, its plan follows.
    if (!input.planKey.empty() && image->onDisk && !image->nvrtc.cubin.empty())
      storePlan(*processDiskCache(), input.planKey, *plan, image->key,
                installedDriverVersion());
  }
  if (stats)
    writeUpdateStats(out, *plan, *image, resolvedArch, input,
                     input.planKey.empty() ? "" : "miss");
  out.keep();
  return 0;
}

/// The one JSON line of `--stats` for a norm.
static json::Object makeNormStats(const KernelPlan &plan,
                                  const NvrtcResult &nvrtc, StringRef arch,
                                  double totalMs) {
  json::Array kernels;
  for (const KernelInfo &kernel : plan.kernels) {
    const std::string &name = kernel.name;
    json::Object entry{{"name", name}};
    for (const KernelResources &resources : nvrtc.resources)
      if (resources.name == name) {
        entry["registers"] = resources.registers;
        entry["spills"] = resources.spillStoreBytes + resources.spillLoadBytes;
        entry["stack_bytes"] = resources.stackBytes;
      }
    kernels.push_back(std::move(entry));
  }
  return json::Object{
      {"norm", plan.name},
      {"arch", arch},
      {"cols", plan.cols},
      {"kernels", static_cast<int64_t>(kernels.size())},
      {"vector_width", plan.rowKernel().vectorWidth},
      {"block_size", plan.rowKernel().blockSize},
      {"rows_per_block", plan.rowKernel().rowsPerBlock},
      {"threads_per_row", plan.rowKernel().threadsPerRow},
      {"items_per_thread", plan.rowKernel().itemsPerThread},
      {"launch_blocks", plan.rowKernel().launchBlocks},
      {"row_in_registers", plan.rowKernel().rowInRegisters},
      {"column_inputs_in_registers", plan.rowKernel().columnInputsInRegisters},
      {"stages", plan.rowKernel().stages},
      {"shared_bytes", plan.rowKernel().sharedBytes},
      {"column_outputs", static_cast<int64_t>(plan.columnOutputs.size())},
      {"max_grid_blocks", plan.rowKernel().maxGridBlocks},
      // What one more row moves: its full and row tensors.
      {"bytes_per_row",
       static_cast<int64_t>(plan.minimumBytes(2) - plan.minimumBytes(1))},
      {"per_kernel", std::move(kernels)},
      {"compiler", nvrtc.compiler},
      {"nvrtc_ms", nvrtc.compileMs},
      {"total_ms", totalMs}};
}

static int compileNorm(const CommonOptions &options,
                       const NormCompileOptions &norm, const std::string &emit,
                       const std::string &output, bool stats,
                       ParsedInput &input) {
  if (emit != "mlir" && emit != "ir" && emit != "cuda" && emit != "ptx" &&
      emit != "cubin")
    return reportError(createStringError(
        "unknown --emit=" + emit + "; expected ir, mlir, cuda, ptx or cubin"));
  int64_t cols = norm.cols;
  if (cols <= 0)
    return reportError(createStringError(
        "--cols N (the row length, > 0) is required to compile a norm"));
  auto parse = [](StringRef option, StringRef value) -> Expected<DType> {
    if (std::optional<DType> dtype = parseDType(value.str());
        dtype && *dtype != DType::pred)
      return *dtype;
    return createStringError("unknown dtype '" + value + "' for --" + option +
                             "; expected f32, bf16 or f16");
  };
  Expected<DType> fullDType = parse("input-dtype", norm.inputDType);
  if (!fullDType)
    return reportError(fullDType.takeError());
  Expected<DType> colDType =
      parse("weight-dtype",
            norm.weightDType.empty() ? norm.inputDType : norm.weightDType);
  if (!colDType)
    return reportError(colDType.takeError());
  auto stage = std::chrono::steady_clock::now();
  // Full tensors take the input dtype, per-column ones the weight dtype,
  // per-row statistics stay f32.
  Specialization spec;
  spec.cols = cols;
  spec.alignment = options.spec.alignment;
  for (Type type : findNorm(*input.module).getArgumentTypes()) {
    ArgLevel level = getValueLevel(type);
    spec.argDTypes.push_back(!isa<RankedTensorType>(type) ? DType::f32
                             : level == ArgLevel::element ? *fullDType
                             : level == ArgLevel::column  ? *colDType
                                                          : DType::f32);
  }
  NormEmitOptions emitOptions =
      getNormEmitOptions(findNorm(*input.module), spec.cols);
  stage = std::chrono::steady_clock::now();
  if (Error error = runPipeline(*input.module, spec, PipelineOptions()))
    return reportError(std::move(error));
  input.times.passesMs = msSince(stage);

  Expected<std::unique_ptr<ToolOutputFile>> opened = openOutput(output, emit);
  if (!opened)
    return reportError(opened.takeError());
  ToolOutputFile &out = **opened;
  bool emitIR = emit == "mlir" || emit == "ir";
  if (emitIR && !stats) {
    input.module->print(out.os());
    out.keep();
    return 0;
  }
  stage = std::chrono::steady_clock::now();
  Expected<KernelPlan> plan = emitNormPlan(*input.module, emitOptions);
  if (!plan)
    return reportError(plan.takeError());
  input.times.emitMs = msSince(stage);
  if (emitIR)
    input.module->print(out.os());
  else if (emit == "cuda")
    out.os() << plan->source;

  std::optional<CompiledImage> image;
  std::string resolvedArch = input.arch(options);
  if (input.compilesImage) {
    Expected<CompiledImage> compiled =
        compileSource(input.text, plan->source, plan->name, resolvedArch,
                      emit == "ptx" && !stats);
    if (!compiled)
      return reportError(compiled.takeError());
    image = std::move(*compiled);
    if (emit == "ptx")
      out.os() << image->nvrtc.ptx;
    else if (emit == "cubin")
      out.os() << image->nvrtc.cubin;
  }
  if (stats) {
    double totalMs = msSince(input.start);
    out.os().flush();
    json::Object line =
        makeNormStats(*plan, image->nvrtc, resolvedArch, totalMs);
    for (auto &entry : input.times.toJson(&*image))
      line[entry.first] = std::move(entry.second);
    outs() << json::Value(std::move(line)) << "\n";
  }
  out.keep();
  return 0;
}

int runCompile(const CommonOptions &options, const NormCompileOptions &norm,
               const std::string &emit, const std::string &output, bool stats) {
  // total_ms counts from here: the text read, parsed once, and compiled.
  ParsedInput input;
  input.start = std::chrono::steady_clock::now();
  input.compilesImage = emit == "ptx" || emit == "cubin" || stats;
  // The cache keys' driver version loads libcuda (~1.5 ms on the H200's
  // host): on another thread while the plan cache is read or, on a miss,
  // while the IR is lowered.
  std::future<int> driverProbe =
      input.compilesImage ? installedDriverVersionAsync() : std::future<int>();
  Expected<std::string> text = readInput(options);
  if (!text)
    return reportError(text.takeError());
  input.text = std::move(*text);

  // An update compiled to a cubin before: plan and image from the disk,
  // with no MLIR at all. (A norm's key would need its dtypes and cols; its
  // source is read as an update's here, finds no entry, and is parsed. So
  // would the dtypes --dtype names, known once the update is parsed.)
  bool makesCubin = input.compilesImage && !(emit == "ptx" && !stats);
  if (makesCubin && options.normOnly.empty() && options.namedDTypes.empty() &&
      processDiskCache()) {
    const std::string &arch = input.arch(options);
    input.planKey =
        planEntryKey(compileCacheKey(input.text, options.spec, arch,
                                     options.pipeline, PtxCompiler::nvJitLink));
    if (emit != "mlir")
      if (std::optional<int> done =
              compileFromPlanCache(emit, output, stats, arch, input))
        return *done;
  }

  auto stage = std::chrono::steady_clock::now();
  input.context = createContext();
  Expected<ParsedKernel> parsed =
      parseKernel(*input.context, input.text, options.input);
  if (!parsed)
    return reportError(parsed.takeError());
  if (Error error = checkOptionsApply(options, parsed->kind))
    return reportError(std::move(error));
  input.module = std::move(parsed->module);
  input.times.parseMs = msSince(stage);
  if (parsed->kind == KernelKind::norm)
    return compileNorm(options, norm, emit, output, stats, input);
  return compileUpdate(options, emit, output, stats, input);
}

} // namespace kfuse
