//===- Jit.cpp - compile and launch updates on the GPU --------------------===//

#include "runtime/Jit.h"
#include "codegen/DiagnosticErrors.h"
#include "dialect/SourceLimits.h"
#include "runtime/CacheKey.h"
#include "runtime/Dump.h"
#include "runtime/Errors.h"
#include "runtime/Log.h"
#include "runtime/PlanCache.h"

#include "dialect/KFuseUpdate.h"
#include "interpreter/Interpreter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <map>

namespace kfuse {

/// Bump when the generated code changes meaning for the same inputs.
static constexpr const char *kCodegenVersion = "kfuse-codegen-8";

unsigned commonAlignment(llvm::ArrayRef<const void *> pointers) {
  unsigned alignment = 16;
  for (const void *pointer : pointers) {
    auto address = reinterpret_cast<uintptr_t>(pointer);
    while (alignment > 1 && address % alignment != 0)
      alignment /= 2;
  }
  return alignment;
}

llvm::Error checkTensorLevelArg(const ArgInfo &info, const LaunchArg &arg,
                                const llvm::Twine &where) {
  if (arg.numel == 1 && arg.data && arg.dtype == DType::f32)
    return llvm::Error::success();
  return makeError(ErrorCode::InvalidArgument,
                   where + "'" + info.name +
                       "' is a state at the tensor level: one f32, got " +
                       llvm::Twine(arg.numel) + " elements of " +
                       dtypeName(arg.dtype));
}

void setStorageDTypes(Specialization &spec, llvm::ArrayRef<ArgInfo> infos,
                      llvm::ArrayRef<LaunchArg> args) {
  spec.argDTypes.assign(infos.size(), DType::f32);
  bool roleSet[static_cast<unsigned>(ArgRole::model) + 1] = {};
  for (auto [index, info, arg] : llvm::enumerate(infos, args)) {
    if (info.role == ArgRole::hyper || info.perTensor())
      continue;
    spec.argDTypes[index] = arg.dtype;
    // Each role's first tensor names the role's dtype (the shorthands the
    // arguments a pass adds take).
    bool &set = roleSet[static_cast<unsigned>(info.role)];
    if (set)
      continue;
    set = true;
    (info.role == ArgRole::param   ? spec.paramDType
     : info.role == ArgRole::grad  ? spec.gradDType
     : info.role == ArgRole::model ? spec.modelDType
                                   : spec.stateDType) = arg.dtype;
  }
}

llvm::Error checkHyperArg(const ArgInfo &info, const LaunchArg &arg) {
  if (!arg.data)
    return llvm::Error::success();
  return makeError(ErrorCode::InvalidArgument,
                   "hyperparameter '" + info.name +
                       "' must be a scalar value, got a pointer");
}

llvm::Expected<Specialization> specializeFor(llvm::ArrayRef<ArgInfo> infos,
                                             llvm::ArrayRef<LaunchArg> args,
                                             bool specializeNumel) {
  auto invalid = [](const llvm::Twine &message) {
    return makeError(ErrorCode::InvalidArgument, message);
  };
  if (args.size() != infos.size())
    return invalid("expected " + llvm::Twine(infos.size()) +
                   " arguments, got " + llvm::Twine(args.size()));

  Specialization spec;
  std::optional<int64_t> numel;
  const char *numelArg = nullptr;
  std::vector<const void *> pointers;
  for (auto [info, arg] : llvm::zip_equal(infos, args)) {
    const std::string &name = info.name;
    if (info.role == ArgRole::hyper) {
      if (llvm::Error error = checkHyperArg(info, arg))
        return std::move(error);
      continue;
    }
    if (arg.dtype == DType::pred)
      return invalid("tensor '" + name + "' has unsupported dtype pred");
    if (info.perTensor()) {
      // One f32 per tensor, not of the state dtype or the element count.
      if (llvm::Error error = checkTensorLevelArg(info, arg))
        return error;
      continue;
    }
    if (arg.numel < 0)
      return invalid("tensor '" + name + "' has negative numel " +
                     llvm::Twine(arg.numel));
    if (!arg.data && arg.numel != 0)
      return invalid("tensor '" + name + "' is a null pointer");
    if (numel && *numel != arg.numel)
      return invalid("tensor '" + name + "' has " + llvm::Twine(arg.numel) +
                     " elements but '" + numelArg + "' has " +
                     llvm::Twine(*numel));
    if (!numel) {
      numel = arg.numel;
      numelArg = name.c_str();
    }
    if (arg.data)
      pointers.push_back(arg.data);
  }
  setStorageDTypes(spec, infos, args);
  spec.numel = specializeNumel ? numel.value_or(0) : -1;
  spec.alignment = commonAlignment(pointers);
  // The power of two (up to the widest vector, 8 elements) that divides a
  // dynamic count: the common multiple of 8 compiles without a scalar tail.
  if (spec.numel < 0 && numel.value_or(0) > 0)
    while (spec.numelMultiple < 8 && *numel % (2 * spec.numelMultiple) == 0)
      spec.numelMultiple *= 2;
  return spec;
}

std::string compileCacheKey(llvm::StringRef irText, const Specialization &spec,
                            llvm::StringRef arch,
                            const PipelineOptions &options,
                            PtxCompiler ptxCompiler) {
  CacheKeyHasher hash;
  hash.field(kCodegenVersion);
  hash.field(irText);
  hash.field(spec.key());
  hash.field(arch);
  if (llvm::Expected<NvrtcOptions> nvrtc = nvrtcOptionsForDevice(arch))
    hash.nvrtcFields(*nvrtc);
  else
    llvm::consumeError(nvrtc.takeError());
  hash.field(options.fuse ? "fuse" : "nofuse");
  hash.field(std::to_string(options.maxGroupSize));
  CodegenMode mode = codegenModeFor(options.multiTensor, ptxCompiler);
  hash.field(codegenModeName(mode));
  if (mode != CodegenMode::cuda)
    hash.field(ptxCompiler == PtxCompiler::driverAtLoad ? "driver-jit"
                                                        : "nvjitlink");
  // Only when set, so that the keys of plain plans stay as they were.
  if (options.multiTensor)
    hash.field("multi-tensor");
  if (options.gradScaling)
    hash.field("grad-scaling");
  if (options.masterWeights)
    hash.field("master-weights");
  if (options.clipGradNorm)
    hash.field("clip-grad-norm");
  if (!options.gridBarrier)
    hash.field("separate-phases");
  if (options.clipNormExternal)
    hash.field("clip-external-norm");
  return hash.hex();
}

llvm::Expected<NvrtcOptions> nvrtcOptionsForDevice(llvm::StringRef arch) {
  NvrtcOptions options;
  options.arch = arch.str();
  llvm::Expected<int> number = validateArch(arch);
  if (number)
    return options;
  llvm::Error unsupported = number.takeError();
  // A device newer than this NVRTC: PTX for the newest arch below it.
  int device = 0;
  llvm::StringRef digits = arch;
  if (digits.consume_front("sm_") &&
      !digits.take_while(llvm::isDigit).getAsInteger(10, device)) {
    int best = 0;
    for (int known : nvrtcSupportedArchs())
      if (known <= device)
        best = std::max(best, known);
    if (best) {
      llvm::consumeError(std::move(unsupported));
      options.arch = "sm_" + std::to_string(best);
      options.ptxOnly = true;
      return options;
    }
  }
  return withCode(std::move(unsupported), ErrorCode::Compile);
}

unsigned gridSize(int64_t n, unsigned vectorWidth, unsigned blockSize,
                  int smCount, unsigned blocksPerSm) {
  if (n <= 0)
    return 1;
  vectorWidth = std::max(vectorWidth, 1u);
  blockSize = std::max(blockSize, 1u);
  int64_t vectors = (n + vectorWidth - 1) / vectorWidth;
  int64_t blocks = (vectors + blockSize - 1) / blockSize;
  int64_t cap = std::max<int64_t>(int64_t(smCount) * blocksPerSm, 1);
  return static_cast<unsigned>(std::max<int64_t>(std::min(blocks, cap), 1));
}

unsigned defaultBlocksPerSm() {
  // Read once: KFUSE_BLOCKS_PER_SM overrides the measured default.
  static const unsigned value = [] {
    if (const char *text = std::getenv("KFUSE_BLOCKS_PER_SM")) {
      unsigned parsed = 0;
      if (!llvm::StringRef(text).getAsInteger(10, parsed) && parsed > 0)
        return parsed;
    }
    return kDefaultBlocksPerSm;
  }();
  return value;
}

llvm::Error Update::checkSingleTensorLaunch() const {
  if (!matrix)
    return llvm::Error::success();
  return makeError(ErrorCode::InvalidArgument,
                   "'" + name +
                       "' is a 2-D update (params as matrices, states per row "
                       "or per column): it runs as a multi-tensor plan, "
                       "whose table gives each tensor its row length "
                       "(kfuse_plan_create_matrix), not as a launch over one "
                       "tensor");
}

llvm::Expected<std::shared_ptr<CompiledUpdate>>
Update::compile(const Specialization &spec, const PipelineOptions &options,
                bool *built) {
  if (built)
    *built = false;
  llvm::Expected<CudaDriver::Current> current = CudaDriver::getCurrent();
  if (!current)
    return current.takeError();
  const DeviceInfo *device = &current->device;

  if (std::shared_ptr<CompiledUpdate> loaded =
          launchEntries.find(spec, options, device->context))
    return loaded;
  llvm::Expected<std::shared_ptr<CompiledUpdate>> compiled =
      compileUncached(spec, options, current->driver, *device, built);
  if (!compiled)
    return compiled.takeError();
  launchEntries.add(spec, options, device->context, *compiled);
  return compiled;
}

llvm::Expected<PlannedImage> compilePlannedImage(
    const std::string &key, llvm::StringRef irText,
    const NvrtcOptions &nvrtcOptions, CodegenMode mode,
    llvm::function_ref<llvm::Expected<KernelPlan>(int ptxSm)> makePlan,
    llvm::function_ref<int()> driverVersion) {
  // Direct PTX for the device's arch; none for a device newer than the
  // toolkit (its image is NVRTC's PTX of an older arch, for the driver).
  int ptxSm = 0;
  if (mode != CodegenMode::cuda && !nvrtcOptions.ptxOnly) {
    llvm::Expected<int> sm = validateArch(nvrtcOptions.arch);
    if (!sm)
      return sm.takeError();
    ptxSm = *sm;
  }
  // A plan entry on disk skips parse, passes and emit (runtime/PlanCache);
  // not kept for NVRTC's PTX of an older arch (a device newer than the
  // toolkit).
  DiskCache *cache = processDiskCache();
  bool usePlanCache = cache && !nvrtcOptions.ptxOnly;
  std::string planKey = usePlanCache ? planEntryKey(key) : "";
  PlannedImage result;
  std::optional<CompiledImage> image;
  if (usePlanCache) {
    std::string warning;
    if (std::optional<CachedPlan> cached =
            lookupPlan(*cache, planKey, driverVersion, warning,
                       /*wantCubin=*/false)) {
      result.plan = std::move(cached->plan);
      image = std::move(cached->image);
    } else if (!warning.empty()) {
      logWarning(warning);
    }
  }
  if (!image) {
    llvm::Expected<KernelPlan> plan = makePlan(ptxSm);
    if (!plan)
      return withCode(plan.takeError(), ErrorCode::Compile);
    result.plan = std::move(*plan);
    llvm::Expected<CompiledImage> made = compilePlanImage(
        {result.plan.source, result.plan.ptx, result.plan.ptxUnsupported},
        result.plan.name + ".cu", nvrtcOptions, mode, PtxCompiler::driverAtLoad,
        driverVersion(), cache);
    if (!made)
      return withCode(made.takeError(), ErrorCode::Compile);
    image = std::move(*made);
    // Where the image is on disk, its plan follows.
    if (usePlanCache && image->onDisk)
      storePlan(*cache, planKey, result.plan, image->key, driverVersion());
  }
  dumpModule(result.plan.name, image->key, irText, result.plan.source,
             image->nvrtc.ptx);
  result.image = std::move(*image);
  return result;
}

llvm::Expected<PlannedImage>
Update::compileImage(const std::string &key, const Specialization &spec,
                     const PipelineOptions &options, llvm::StringRef arch,
                     llvm::function_ref<int()> driverVersion) const {
  llvm::Expected<NvrtcOptions> nvrtcOptions = nvrtcOptionsForDevice(arch);
  if (!nvrtcOptions)
    return nvrtcOptions.takeError();
  return compilePlannedImage(
      key, irText, *nvrtcOptions,
      codegenModeFor(options.multiTensor, PtxCompiler::driverAtLoad),
      [&](int ptxSm) {
        return compileToPlan(irText, name, spec, options, ptxSm);
      },
      driverVersion);
}

llvm::Expected<PlannedImage>
Update::compileForArch(const Specialization &spec,
                       const PipelineOptions &options,
                       llvm::StringRef arch) const {
  return compileImage(compileCacheKey(irText, spec, arch, options), spec,
                      options, arch, installedDriverVersion);
}

llvm::Error Update::interpret(llvm::ArrayRef<LaunchArg> args, int64_t rows,
                              int64_t cols,
                              std::vector<std::vector<double>> &tensors) const {
  if (args.size() != argInfos.size())
    return makeError(ErrorCode::InvalidArgument,
                     "expected " + llvm::Twine(argInfos.size()) +
                         " arguments, got " + llvm::Twine(args.size()));
  if (tensors.size() != args.size())
    return makeError(ErrorCode::InvalidArgument,
                     "expected " + llvm::Twine(args.size()) +
                         " value arrays, got " + llvm::Twine(tensors.size()));
  bool given = rows != 0 || cols != 0;
  if (matrix != given)
    return makeError(ErrorCode::InvalidArgument,
                     "'" + name +
                         (matrix ? "' is a 2-D update; run it with "
                                   "kfuse_update_interpret_matrix, which "
                                   "takes its rows and columns"
                                 : "' is a 1-D update; run it with "
                                   "kfuse_update_interpret"));
  Specialization spec;
  if (matrix) {
    if (rows <= 0 || cols <= 0)
      return makeError(ErrorCode::InvalidArgument,
                       "a 2-D update runs over at least 1 x 1, got " +
                           llvm::Twine(rows) + " x " + llvm::Twine(cols));
    for (auto [info, arg, values] : llvm::zip_equal(argInfos, args, tensors)) {
      if (info.role == ArgRole::hyper)
        continue;
      int64_t expected = info.level == ArgLevel::tensor   ? 1
                         : info.level == ArgLevel::row    ? rows
                         : info.level == ArgLevel::column ? cols
                                                          : rows * cols;
      if (arg.numel != expected ||
          static_cast<int64_t>(values.size()) != expected)
        return makeError(ErrorCode::InvalidArgument,
                         "argument '" + info.name + "' has " +
                             llvm::Twine(arg.numel) + " elements; over " +
                             llvm::Twine(rows) + " x " + llvm::Twine(cols) +
                             " it needs " + llvm::Twine(expected));
    }
    setStorageDTypes(spec, argInfos, args);
  } else {
    llvm::Expected<Specialization> specialized = specialize(args);
    if (!specialized)
      return specialized.takeError();
    spec = std::move(*specialized);
    rows = 0;
    for (auto [info, arg] : llvm::zip_equal(argInfos, args))
      if (info.role != ArgRole::hyper && !info.perTensor())
        rows = arg.numel;
    cols = 1;
  }
  // The kernel's storage rounding, as specialized for these arguments; no
  // fusion, so each op rounds where the generated code does.
  mlir::MLIRContext &context = threadContext();
  auto module = parseKernelModule(context, irText, name, KernelKind::update);
  if (!module)
    return withCode(module.takeError(), ErrorCode::Parse);
  PipelineOptions unfused;
  unfused.fuse = false;
  if (llvm::Error error = runPipeline(**module, spec, unfused))
    return withCode(std::move(error), ErrorCode::Compile);
  ArgValues values(argInfos.size());
  for (auto [index, info] : llvm::enumerate(argInfos)) {
    if (info.role == ArgRole::hyper) {
      values.scalars[index] = args[index].value;
      continue;
    }
    if (info.perTensor()) {
      values.scalars[index] = tensors[index].front();
      continue;
    }
    HostTensor tensor(info.level == ArgLevel::column ? 1 : rows,
                      info.level == ArgLevel::row ? 1 : cols);
    tensor.elements = tensors[index];
    values.tensors[index] = std::move(tensor);
  }
  DiagnosticErrors errors(&context);
  mlir::FailureOr<ArgValues> written =
      kfuse::interpret(findUpdate(**module), rows, values, Precision::F32);
  if (mlir::failed(written))
    return withCode(errors.takeError("the interpreter failed"),
                    ErrorCode::InvalidArgument);
  for (unsigned index = 0; index < argInfos.size(); ++index) {
    if (written->tensors[index])
      tensors[index] = std::move(written->tensors[index]->elements);
    else if (written->scalars[index] && argInfos[index].perTensor())
      tensors[index] = {*written->scalars[index]};
  }
  return llvm::Error::success();
}

/// The function `kernelName` of `module`, checked to run `blockSize`
/// threads with `sharedBytes` of dynamic shared memory.
static llvm::Expected<CUfunction>
loadKernel(CudaDriver &driver, CUmodule module, const std::string &kernelName,
           const std::string &where, unsigned blockSize, unsigned sharedBytes) {
  CUfunction function = nullptr;
  if (llvm::Error error = driver.check(
          driver.cuModuleGetFunction(&function, module, kernelName.c_str()),
          "cuModuleGetFunction of kernel '" + kernelName + "' (" + where + ")"))
    return std::move(error);
  int maxThreads = 0;
  if (llvm::Error error = driver.check(
          driver.cuFuncGetAttribute(
              &maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
          "cuFuncGetAttribute"))
    return std::move(error);
  if (maxThreads < static_cast<int>(blockSize))
    return makeError(ErrorCode::Launch,
                     "kernel '" + kernelName + "' (" + where + ") allows " +
                         llvm::Twine(maxThreads) +
                         " threads per block, its plan asks for " +
                         llvm::Twine(blockSize));
  // The 48 KiB default covers static and dynamic shared memory together, so
  // a dynamic size near it may still need the opt-in: always opt in.
  if (sharedBytes > 0)
    if (llvm::Error error = driver.check(
            driver.cuFuncSetAttribute(
                function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                static_cast<int>(sharedBytes)),
            "kernel '" + kernelName + "' (" + where + ") asking for " +
                llvm::Twine(sharedBytes) + " bytes of shared memory"))
      return std::move(error);
  return function;
}

/// `image`'s PTX compiled by the driver's JIT into `module`, with ptxas'
/// report and its errors read back.
static llvm::Error jitPtx(CudaDriver &driver, NvrtcResult &image,
                          llvm::StringRef name, llvm::StringRef arch,
                          CUmodule &module) {
  auto start = std::chrono::steady_clock::now();
  std::string infoLog(16384, '\0'), errorLog(16384, '\0');
  CUjit_option options[] = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_LOG_VERBOSE};
  // Sizes and flags travel as the pointers' values, as the driver reads them.
  void *values[] = {
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(infoLog.size())),
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(errorLog.size())),
      reinterpret_cast<void *>(uintptr_t(1))};
  CUresult status = driver.cuModuleLoadDataEx(
      &module, image.ptx.c_str(), std::size(options), options, values);
  auto logText = [](const std::string &log) {
    return llvm::StringRef(log.c_str()).rtrim().str();
  };
  if (status != CUDA_SUCCESS) {
    auto [code, message] = takeMessage(driver.check(
        status, "the driver's JIT of the PTX of '" + name + "' for " + arch));
    std::string log = logText(errorLog);
    return makeError(ErrorCode::Compile,
                     message + (log.empty() ? "" : ":\n" + log));
  }
  image.log = logText(infoLog);
  image.resources = parsePtxasLog(image.log);
  image.compileMs += compileMsSince(start);
  return llvm::Error::success();
}

llvm::Error loadPlan(CudaDriver &driver, NvrtcResult &image,
                     llvm::StringRef name, llvm::StringRef arch,
                     LoadedPlan &loaded) {
  if (image.cubin.empty()) {
    llvm::Error error = jitPtx(driver, image, name, arch, loaded.module);
    // Under auto, direct PTX the driver cannot compile falls back to the
    // plan's CUDA source, which always exists.
    if (error && image.compiler == kDriverCompiler &&
        codegenModeFor(loaded.plan.multiTensor, PtxCompiler::driverAtLoad) ==
            CodegenMode::automatic) {
      logWarning(loaded.plan.name + ": the driver could not compile the " +
                 "direct PTX, compiling the CUDA source instead: " +
                 llvm::toString(std::move(error)));
      llvm::Expected<NvrtcOptions> options = nvrtcOptionsForDevice(arch);
      if (!options)
        return options.takeError();
      llvm::Expected<CompiledImage> fallback =
          compileImage(loaded.plan.source, loaded.plan.name + ".cu", *options,
                       driver.driverVersion(), processDiskCache());
      if (!fallback)
        return fallback.takeError();
      image = std::move(fallback->nvrtc);
      return loadPlan(driver, image, name, arch, loaded);
    }
    if (error)
      return error;
  } else if (llvm::Error error = driver.check(
                 driver.cuModuleLoadData(&loaded.module, image.cubin.c_str()),
                 "cuModuleLoadData of '" + name + "' for " + arch)) {
    return error;
  }
  for (const KernelInfo &kernel : loaded.plan.kernels) {
    llvm::Expected<CUfunction> function =
        loadKernel(driver, loaded.module, kernel.name, kernel.location,
                   kernel.blockSize, kernel.sharedBytes);
    if (!function)
      return function.takeError();
    loaded.functions.push_back(*function);
  }
  return llvm::Error::success();
}

llvm::Expected<std::shared_ptr<CompiledUpdate>>
Update::buildModule(const std::string &key, const Specialization &spec,
                    const PipelineOptions &options, CudaDriver *driver,
                    const DeviceInfo *device) {
  auto start = std::chrono::steady_clock::now();
  auto compiled = std::make_shared<CompiledUpdate>();
  compiled->key = key;
  compiled->context = device->context;
  llvm::Expected<PlannedImage> made =
      compileImage(key, spec, options, device->arch,
                   [&] { return driver->driverVersion(); });
  if (!made)
    return made.takeError();
  compiled->plan = std::move(made->plan);
  compiled->nvrtc = std::move(made->image.nvrtc);
  compiled->cacheSource = made->image.source;
  double diskMs = made->image.diskMs;
  double codegenMs = compileMsSince(start) - diskMs - compiled->nvrtc.compileMs;

  if (llvm::Error error =
          loadPlan(*driver, compiled->nvrtc, name, device->arch, *compiled))
    return std::move(error);
  logInfo("compiled @" + compiled->plan.name + " (" + name + ") for " +
          device->arch + ": " + cacheSourceName(compiled->cacheSource) +
          llvm::formatv(", codegen {0:f1} ms, {1} {2:f1} ms, disk cache "
                        "{3:f1} ms, total {4:f1} ms",
                        codegenMs, compiled->nvrtc.compiler,
                        compiled->nvrtc.compileMs, diskMs,
                        compileMsSince(start))
              .str());
  return compiled;
}

std::future<llvm::Expected<std::shared_ptr<CompiledUpdate>>>
Update::compileAsync(Specialization spec, PipelineOptions options) {
  return std::async(std::launch::async, [this, spec = std::move(spec), options,
                                         context = callerContext()] {
    adoptContext(context);
    return compile(spec, options);
  });
}

llvm::Expected<std::shared_ptr<CompiledUpdate>>
Update::compileUncached(const Specialization &spec,
                        const PipelineOptions &options, CudaDriver &driverRef,
                        const DeviceInfo &deviceRef, bool *made) {
  CudaDriver *driver = &driverRef;
  const DeviceInfo *device = &deviceRef;
  std::string key = compileCacheKey(irText, spec, device->arch, options);
  auto &cache = ModuleCache<CompiledUpdate>::get();
  return cache.getOrCompile(
      key, device->context,
      [&] { return buildModule(key, spec, options, driver, device); }, made);
}

/// Makes sure every temporary holds `numel` elements.
static llvm::Error prepareTemporaries(CudaDriver &driver,
                                      CompiledUpdate &compiled, int64_t numel) {
  if (compiled.plan.temporaries.empty() || numel <= compiled.temporaryNumel)
    return llvm::Error::success();
  // Earlier launches may still read the buffers being replaced.
  if (llvm::Error error =
          driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize"))
    return error;
  compiled.temporaries.clear();
  for (DType dtype : compiled.plan.temporaries) {
    llvm::Expected<DeviceBuffer> buffer =
        DeviceBuffer::allocate(driver, size_t(numel) * dtypeSize(dtype));
    if (!buffer)
      return buffer.takeError();
    compiled.temporaries.push_back(std::move(*buffer));
  }
  compiled.temporaryNumel = numel;
  return llvm::Error::success();
}

llvm::Error Update::launch(llvm::ArrayRef<LaunchArg> args, CUstream stream,
                           const PipelineOptions &options) {
  if (options.multiTensor || options.gradScaling || options.clipGradNorm)
    return makeError(ErrorCode::InvalidArgument,
                     "multi-tensor and grad-scaling updates run through a "
                     "MultiTensorPlan, not Update::launch");
  if (options.masterWeights)
    return makeError(ErrorCode::InvalidArgument,
                     "master-weight updates add model-copy arguments that "
                     "launches do not take yet; compile them with kfuse "
                     "compile --master-weights");
  llvm::Expected<Specialization> spec = specialize(args);
  if (!spec)
    return spec.takeError();
  int64_t numel = 0;
  for (auto [info, arg] : llvm::zip_equal(argInfos, args))
    if (info.role != ArgRole::hyper)
      numel = arg.numel;
  if (numel == 0)
    return llvm::Error::success();

  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  llvm::Expected<std::shared_ptr<CompiledUpdate>> compiled =
      compile(*spec, options);
  if (!compiled)
    return compiled.takeError();
  const KernelPlan &plan = (*compiled)->plan;
  if (plan.multiTensor)
    return makeError(ErrorCode::InvalidArgument,
                     "'" + name +
                         "' reduces whole tensors or keeps states per tensor, "
                         "which run only as a multi-tensor plan "
                         "(kfuse_plan_create), not as a single launch");
  if (plan.numel != -1 && plan.numel != numel)
    return makeError(ErrorCode::Internal,
                     "plan for '" + name + "' is specialized on " +
                         llvm::Twine(plan.numel) + " elements, launched on " +
                         llvm::Twine(numel));
  if (plan.numel == -1 && numel % plan.numelMultiple != 0)
    return makeError(ErrorCode::Internal,
                     "plan for '" + name + "' needs a multiple of " +
                         llvm::Twine(plan.numelMultiple) +
                         " elements, launched on " + llvm::Twine(numel));
  llvm::Expected<DeviceInfo> device = driver->currentDevice();
  if (!device)
    return device.takeError();

  std::unique_lock<std::mutex> temporariesLock((*compiled)->temporariesMutex);
  if (llvm::Error error = prepareTemporaries(*driver, **compiled, numel))
    return error;

  static const bool syncEachKernel = std::getenv("KFUSE_SYNC_LAUNCH");
  // The arguments' values, indexed as the host uniform programs read them.
  llvm::SmallVector<double, 16> argValues;
  for (const LaunchArg &arg : args)
    argValues.push_back(arg.value);
  for (auto [kernel, function] :
       llvm::zip_equal(plan.kernels, (*compiled)->functions)) {
    // Values first, then the pointer array into them; sized up front so
    // that nothing moves.
    std::vector<uint64_t> pointerValues(kernel.params.size());
    std::vector<double> scalarValues(kernel.params.size());
    std::vector<void *> params;
    // The uniform struct, computed here from the hypers (a struct of
    // floats: its bytes are the float array).
    llvm::SmallVector<float, 16> uniforms;
    if (kernel.hostUniforms && !kernel.hostUniforms->fields.empty()) {
      uniforms.resize(kernel.hostUniforms->fields.size());
      kernel.hostUniforms->evaluate(argValues.data(), uniforms.data());
      params.push_back(uniforms.data());
    }
    for (auto [index, param] : llvm::enumerate(kernel.params)) {
      switch (param.kind) {
      case KernelParam::Kind::Tensor:
        if (param.index >= args.size())
          return makeError(ErrorCode::Internal,
                           "kernel '" + kernel.name + "' (" + kernel.location +
                               ") reads argument " + llvm::Twine(param.index) +
                               " of " + llvm::Twine(args.size()));
        pointerValues[index] =
            reinterpret_cast<uintptr_t>(args[param.index].data);
        params.push_back(&pointerValues[index]);
        break;
      case KernelParam::Kind::Scalar:
        if (param.index >= args.size())
          return makeError(ErrorCode::Internal,
                           "kernel '" + kernel.name + "' (" + kernel.location +
                               ") reads argument " + llvm::Twine(param.index) +
                               " of " + llvm::Twine(args.size()));
        // Hyperparameters are double in every kernel (see CudaEmitter).
        scalarValues[index] = args[param.index].value;
        params.push_back(&scalarValues[index]);
        break;
      case KernelParam::Kind::TensorValue:
        return makeError(ErrorCode::Internal,
                         "kernel '" + kernel.name + "' (" + kernel.location +
                             ") keeps a state per tensor, which only a "
                             "multi-tensor plan binds");
      case KernelParam::Kind::Temporary:
        if (param.index >= (*compiled)->temporaries.size())
          return makeError(ErrorCode::Internal,
                           "kernel '" + kernel.name + "' (" + kernel.location +
                               ") uses temporary " + llvm::Twine(param.index) +
                               " of " +
                               llvm::Twine((*compiled)->temporaries.size()));
        pointerValues[index] = (*compiled)->temporaries[param.index].get();
        params.push_back(&pointerValues[index]);
        break;
      }
    }
    long long n = numel;
    if (plan.numel == -1)
      params.push_back(&n);

    unsigned grid = gridSize(numel, kernel.vectorWidth, kernel.blockSize,
                             device->smCount, defaultBlocksPerSm());
    std::string where =
        "kernel '" + kernel.name + "' (" + kernel.location + ")";
    if (llvm::Error error = driver->check(
            driver->launchKernel(
                function, grid, 1, kernel.blockSize, 0, stream, params.data(),
                CudaDriver::kernelLaunchMode(device->computeMajor)),
            "launch of " + where))
      return error;
    if (syncEachKernel)
      if (llvm::Error error = driver->check(driver->cuStreamSynchronize(stream),
                                            "execution of " + where))
        return error;
  }
  return llvm::Error::success();
}

} // namespace kfuse
