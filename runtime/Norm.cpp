//===- Norm.cpp - compile and launch norm kernels on the GPU --------------===//

#include "runtime/Norm.h"
#include "codegen/Pipeline.h"
#include "dialect/SourceLimits.h"
#include "runtime/CacheKey.h"
#include "runtime/Errors.h"
#include "runtime/Log.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <climits>
#include <cstdlib>

namespace kfuse {

/// Bump when the generated norm code changes meaning for the same inputs.
static constexpr const char *kNormCodegenVersion = "kfuse-norm-codegen-2";

static llvm::Error invalid(const llvm::Twine &message) {
  return makeError(ErrorCode::InvalidArgument, message);
}

llvm::Expected<Specialization> specializeNormFor(llvm::ArrayRef<ArgInfo> infos,
                                                 llvm::ArrayRef<LaunchArg> args,
                                                 int64_t rows, int64_t cols) {
  if (args.size() != infos.size()) {
    std::string names;
    for (const ArgInfo &info : infos)
      names += (names.empty() ? "" : ", ") + info.name;
    return invalid("expected " + llvm::Twine(infos.size()) + " arguments (" +
                   names + "), got " + llvm::Twine(args.size()));
  }
  if (rows < 0)
    return invalid("rows is " + llvm::Twine(rows) + "; it must be at least 0");
  if (cols < 1)
    return invalid("cols is " + llvm::Twine(cols) + "; it must be at least 1");
  if (rows > INT64_MAX / cols)
    return invalid(llvm::Twine(rows) + " rows of " + llvm::Twine(cols) +
                   " columns overflow a 64-bit element count");

  Specialization spec;
  spec.cols = cols;
  spec.argDTypes.assign(infos.size(), DType::f32);
  unsigned alignment = 16;
  auto alignTo = [&](uint64_t value) {
    while (alignment > 1 && value % alignment != 0)
      alignment /= 2;
  };
  for (auto [index, info, arg] : llvm::enumerate(infos, args)) {
    const std::string &name = info.name;
    if (info.role == ArgRole::hyper) {
      if (llvm::Error error = checkHyperArg(info, arg))
        return std::move(error);
      continue;
    }
    if (arg.dtype != DType::f32 && arg.dtype != DType::bf16 &&
        arg.dtype != DType::f16)
      return invalid("tensor '" + name + "' has unsupported dtype " +
                     dtypeName(arg.dtype) + " (f32, bf16 or f16)");
    int64_t expected = info.level == ArgLevel::element  ? rows * cols
                       : info.level == ArgLevel::row    ? rows
                       : info.level == ArgLevel::column ? cols
                                                        : -1;
    if (expected < 0)
      return makeError(ErrorCode::Internal,
                       "tensor argument '" + name + "' has a scalar shape");
    // The message is built only for a mismatch: this runs at every launch.
    if (arg.numel != expected) {
      std::string needs =
          info.level == ArgLevel::element
              ? "a full tensor of a " + std::to_string(rows) + " x " +
                    std::to_string(cols) + " norm needs "
          : info.level == ArgLevel::row
              ? "a row tensor of a " + std::to_string(rows) + "-row norm needs "
              : "a column tensor of a " + std::to_string(cols) +
                    "-column norm needs ";
      return invalid("tensor '" + name + "' has " + llvm::Twine(arg.numel) +
                     " elements; " + needs + llvm::Twine(expected));
    }
    if (!arg.data && arg.numel > 0)
      return invalid("tensor '" + name + "' is a null pointer");
    spec.argDTypes[index] = arg.dtype;
    if (arg.data)
      alignTo(reinterpret_cast<uintptr_t>(arg.data));
    // Row r of a full tensor starts r * pitch bytes after the first.
    if (info.level == ArgLevel::element)
      alignTo(uint64_t(cols) * dtypeSize(arg.dtype));
  }
  spec.alignment = alignment;
  return spec;
}

std::string normCompileCacheKey(llvm::StringRef irText,
                                const Specialization &spec,
                                llvm::StringRef arch) {
  CacheKeyHasher hash;
  hash.field(kNormCodegenVersion);
  hash.field(irText);
  hash.field(spec.key());
  hash.field(normTuningKey());
  hash.field(arch);
  if (llvm::Expected<NvrtcOptions> nvrtc = nvrtcOptionsForDevice(arch))
    hash.nvrtcFields(*nvrtc);
  else
    llvm::consumeError(nvrtc.takeError());
  return hash.hex();
}

/// KFUSE_NORM_BLOCKS_PER_SM as a positive number, else 0.
static unsigned readBlocksPerSmOverride() {
  if (const char *text = std::getenv("KFUSE_NORM_BLOCKS_PER_SM")) {
    unsigned parsed = 0;
    if (!llvm::StringRef(text).getAsInteger(10, parsed) && parsed > 0)
      return parsed;
  }
  return 0;
}

unsigned normBlocksPerSmOverride() {
  // Read at every launch only where a measuring process changes it.
  if (normLiveKnobs())
    return readBlocksPerSmOverride();
  static const unsigned value = readBlocksPerSmOverride();
  return value;
}

unsigned normGridSize(const KernelPlan &plan, int64_t rows, int smCount,
                      unsigned blocksPerSm) {
  if (rows <= 0)
    return 1;
  int64_t rowsPerBlock = std::max(plan.rowKernel().rowsPerBlock, 1u);
  int64_t blocks = (rows + rowsPerBlock - 1) / rowsPerBlock;
  if (plan.rowKernel().maxGridBlocks)
    blocks = std::min<int64_t>(blocks, plan.rowKernel().maxGridBlocks);
  // Column partials are per block, and prefetching blocks run several row
  // groups: one wave of resident blocks.
  if (!plan.columnOutputs.empty() || plan.rowKernel().stages >= 2)
    blocks = std::min<int64_t>(
        blocks, std::max<int64_t>(int64_t(smCount) * blocksPerSm, 1));
  // The grid's x dimension holds at most 2^31 - 1 blocks.
  blocks = std::min<int64_t>(blocks, INT32_MAX);
  return static_cast<unsigned>(std::max<int64_t>(blocks, 1));
}

//===----------------------------------------------------------------------===//
// The workspace pools
//===----------------------------------------------------------------------===//

namespace {

/// One kfuse-private memory pool per device for column-reduction
/// workspaces (null where the device has no memory pools). Never destroyed,
/// like the modules.
struct WorkspacePools {
  std::mutex mutex;
  std::map<CUdevice, CUmemoryPool> pools;

  static WorkspacePools &get() {
    static WorkspacePools *pools = new WorkspacePools();
    return *pools;
  }

  llvm::Expected<CUmemoryPool> poolFor(CudaDriver &driver, CUdevice device) {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = pools.find(device);
    if (found != pools.end())
      return found->second;
    int supported = 0;
    if (llvm::Error error = driver.check(
            driver.cuDeviceGetAttribute(
                &supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device),
            "cuDeviceGetAttribute"))
      return std::move(error);
    CUmemoryPool pool = nullptr;
    if (supported) {
      CUmemPoolProps props = {};
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
      props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      props.location.id = device;
      if (llvm::Error error = driver.check(
              driver.cuMemPoolCreate(&pool, &props), "cuMemPoolCreate"))
        return std::move(error);
      // Keep freed memory in the pool: the next launch's workspace then
      // costs no system call, and timing loops that synchronize often do
      // not pay for remapping it.
      cuuint64_t threshold = UINT64_MAX;
      if (llvm::Error error = driver.check(
              driver.cuMemPoolSetAttribute(
                  pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
              "cuMemPoolSetAttribute"))
        return std::move(error);
    }
    pools[device] = pool;
    return pool;
  }
};

/// A column-reduction workspace, freed on the launch stream (stream
/// ordered) when it goes out of scope.
class Workspace {
public:
  static llvm::Expected<std::unique_ptr<Workspace>>
  allocate(CudaDriver &driver, const DeviceInfo &device, CUstream stream,
           uint64_t bytes) {
    std::unique_ptr<Workspace> workspace(new Workspace(driver, stream));
    llvm::Expected<CUmemoryPool> pool =
        WorkspacePools::get().poolFor(driver, device.device);
    if (!pool)
      return pool.takeError();
    if (*pool) {
      if (llvm::Error error = driver.check(
              driver.cuMemAllocFromPoolAsync(&workspace->pointer, bytes, *pool,
                                             stream),
              "cuMemAllocFromPoolAsync of a " + llvm::Twine(bytes) +
                  "-byte column-reduction workspace"))
        return std::move(error);
      workspace->pooled = true;
      return std::move(workspace);
    }
    llvm::Expected<bool> capturing = driver.isCapturing(stream);
    if (!capturing)
      return capturing.takeError();
    if (*capturing)
      return makeError(ErrorCode::Launch,
                       "norms with column reductions need stream-ordered "
                       "memory pools to be captured, and this device has "
                       "none");
    if (llvm::Error error =
            driver.check(driver.cuMemAlloc(&workspace->pointer, bytes),
                         "cuMemAlloc of a " + llvm::Twine(bytes) +
                             "-byte column-reduction workspace"))
      return std::move(error);
    return std::move(workspace);
  }

  ~Workspace() {
    if (!pointer)
      return;
    if (pooled) {
      driver.cuMemFreeAsync(pointer, stream);
      return;
    }
    // Without pools the kernels reading the workspace must finish first.
    driver.cuStreamSynchronize(stream);
    driver.cuMemFree(pointer);
  }

  CUdeviceptr get() const { return pointer; }

private:
  Workspace(CudaDriver &driver, CUstream stream)
      : driver(driver), stream(stream) {}
  CudaDriver &driver;
  CUstream stream;
  CUdeviceptr pointer = 0;
  bool pooled = false;
};

} // namespace

//===----------------------------------------------------------------------===//
// Norm
//===----------------------------------------------------------------------===//

bool Norm::hasColumnOutputs() const {
  return llvm::any_of(argInfos, [](const ArgInfo &info) {
    return info.role == ArgRole::output && info.level == ArgLevel::column;
  });
}

llvm::Expected<std::shared_ptr<CompiledNorm>>
Norm::compile(const Specialization &spec, bool *built) {
  if (built)
    *built = false;
  llvm::Expected<CudaDriver::Current> current = CudaDriver::getCurrent();
  if (!current)
    return current.takeError();
  return compileFor(spec, current->driver, current->device, built);
}

std::shared_ptr<CompiledNorm> Norm::findLoaded(const Specialization &spec,
                                               CUcontext context) {
  return launchEntries.find(spec, normTuningKey(), context);
}

llvm::Expected<std::shared_ptr<CompiledNorm>>
Norm::compileFor(const Specialization &spec, CudaDriver &driver,
                 const DeviceInfo &device, bool *built) {
  if (std::shared_ptr<CompiledNorm> loaded = findLoaded(spec, device.context))
    return loaded;
  llvm::Expected<std::shared_ptr<CompiledNorm>> compiled =
      compileUncached(spec, driver, device, built);
  if (!compiled)
    return compiled.takeError();
  launchEntries.add(spec, normTuningKey(), device.context, *compiled);
  return compiled;
}

/// Checks that `plan` is one this runtime can launch for `infos`: what the
/// launch ABI relies on, so that a code generator bug becomes an error
/// instead of a wrong launch.
static llvm::Error checkPlan(const KernelPlan &plan,
                             llvm::ArrayRef<ArgInfo> infos,
                             const Specialization &spec) {
  auto internal = [&](const llvm::Twine &message) {
    return makeError(ErrorCode::Internal,
                     "norm plan '" + plan.name + "': " + message);
  };
  if (plan.kind != KernelKind::norm || plan.kernels.empty() ||
      plan.kernels.size() > 2 ||
      plan.rowKernel().role != KernelInfo::Role::NormRows ||
      (plan.finishKernel() &&
       plan.finishKernel()->role != KernelInfo::Role::NormColumnFinish))
    return internal("is not a row kernel and at most a finish kernel");
  if (plan.args.size() != infos.size())
    return internal("has " + llvm::Twine(plan.args.size()) +
                    " arguments, the function " + llvm::Twine(infos.size()));
  if (plan.cols != spec.cols)
    return internal("is for " + llvm::Twine(plan.cols) + " columns, not " +
                    llvm::Twine(spec.cols));
  if (plan.rowKernel().name.empty() || plan.rowKernel().blockSize == 0)
    return internal("has no row kernel");
  if (plan.columnOutputs.empty() != !plan.finishKernel())
    return internal("has column reductions without a finish kernel or the "
                    "reverse");
  if (const KernelInfo *finish = plan.finishKernel();
      finish && (finish->columnsPerBlock == 0 ||
                 finish->blockSize % finish->columnsPerBlock != 0))
    return internal("has a finish kernel of " + llvm::Twine(finish->blockSize) +
                    " threads, not a multiple of its " +
                    llvm::Twine(finish->columnsPerBlock) + " columns");
  for (unsigned index : plan.columnOutputs)
    if (index >= infos.size() || infos[index].role != ArgRole::output ||
        infos[index].level != ArgLevel::column)
      return internal("reduces into argument " + llvm::Twine(index) +
                      ", not a column output");
  return llvm::Error::success();
}

llvm::Expected<std::shared_ptr<CompiledNorm>>
Norm::buildModule(const std::string &key, const Specialization &spec,
                  CudaDriver &driver, const DeviceInfo &device) {
  auto start = std::chrono::steady_clock::now();
  auto compiled = std::make_shared<CompiledNorm>();
  compiled->key = key;
  compiled->context = device.context;
  llvm::Expected<NvrtcOptions> nvrtcOptions =
      nvrtcOptionsForDevice(device.arch);
  if (!nvrtcOptions)
    return nvrtcOptions.takeError();
  // Norms compile through NVRTC: the direct PTX does not cover them.
  llvm::Expected<PlannedImage> planned = compilePlannedImage(
      key, irText, *nvrtcOptions, CodegenMode::cuda,
      [&](int) { return compileToPlan(irText, name, spec); },
      [&] { return driver.driverVersion(); });
  if (!planned)
    return planned.takeError();
  compiled->plan = std::move(planned->plan);
  const KernelPlan &normPlan = compiled->plan;
  if (llvm::Error error = checkPlan(normPlan, argInfos, spec))
    return std::move(error);
  CompiledImage *compiledImage = &planned->image;
  compiled->nvrtc = std::move(compiledImage->nvrtc);
  compiled->cacheSource = compiledImage->source;
  double diskMs = compiledImage->diskMs;
  double codegenMs = compileMsSince(start) - diskMs - compiled->nvrtc.compileMs;

  if (llvm::Error error =
          loadPlan(driver, compiled->nvrtc, name, device.arch, *compiled))
    return std::move(error);
  const KernelInfo &rowKernel = normPlan.rowKernel();
  int resident = 0;
  if (llvm::Error error = driver.check(
          driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
              &resident, compiled->functionOf(rowKernel), rowKernel.blockSize,
              rowKernel.sharedBytes),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor of kernel '" +
              rowKernel.name + "' (" + rowKernel.location + ")"))
    return std::move(error);
  if (resident < 1)
    return makeError(ErrorCode::Launch, "kernel '" + rowKernel.name + "' (" +
                                            rowKernel.location +
                                            ") fits no block of " +
                                            llvm::Twine(rowKernel.blockSize) +
                                            " threads on an SM");
  compiled->residentBlocksPerSm = static_cast<unsigned>(resident);
  logInfo("compiled @" + normPlan.name + " (" + name + ", " +
          llvm::Twine(spec.cols) + " columns) for " + device.arch + ": " +
          cacheSourceName(compiled->cacheSource) +
          llvm::formatv(", codegen {0:f1} ms, nvrtc {1:f1} ms, disk cache "
                        "{2:f1} ms, total {3:f1} ms",
                        codegenMs, compiled->nvrtc.compileMs, diskMs,
                        compileMsSince(start))
              .str());
  return compiled;
}

std::future<llvm::Expected<std::shared_ptr<CompiledNorm>>>
Norm::compileAsync(Specialization spec) {
  return std::async(std::launch::async,
                    [this, spec = std::move(spec), context = callerContext()] {
                      adoptContext(context);
                      return compile(spec);
                    });
}

llvm::Expected<std::shared_ptr<CompiledNorm>>
Norm::compileUncached(const Specialization &spec, CudaDriver &driver,
                      const DeviceInfo &device, bool *made) {
  std::string key = normCompileCacheKey(irText, spec, device.arch);
  auto &cache = ModuleCache<CompiledNorm>::get();
  return cache.getOrCompile(
      key, device.context,
      [&] { return buildModule(key, spec, driver, device); }, made);
}

llvm::Error Norm::launch(llvm::ArrayRef<LaunchArg> args, int64_t rows,
                         int64_t cols, CUstream stream, bool *ready) {
  static const bool syncEachKernel = std::getenv("KFUSE_SYNC_LAUNCH");
  if (ready)
    *ready = true;
  llvm::Expected<Specialization> spec = specialize(args, rows, cols);
  if (!spec)
    return spec.takeError();
  if (rows == 0 && !hasColumnOutputs())
    return llvm::Error::success();

  llvm::Expected<CudaDriver::Current> current = CudaDriver::getCurrent();
  if (!current)
    return current.takeError();
  CudaDriver *driver = &current->driver;
  const DeviceInfo *device = &current->device;

  if (rows == 0) {
    // A sum over no rows is zero (all-zero bits in every storage dtype).
    for (auto [info, arg] : llvm::zip_equal(argInfos, args))
      if (info.role == ArgRole::output && info.level == ArgLevel::column)
        if (llvm::Error error = driver->check(
                driver->cuMemsetD8Async(
                    reinterpret_cast<CUdeviceptr>(arg.data), 0,
                    size_t(arg.numel) * dtypeSize(arg.dtype), stream),
                "zeroing column output '" + info.name + "'"))
          return error;
    return llvm::Error::success();
  }

  std::shared_ptr<CompiledNorm> compiled = findLoaded(*spec, device->context);
  if (ready && (syncEachKernel || !compiled)) {
    *ready = false;
    return llvm::Error::success();
  }
  if (!compiled) {
    llvm::Expected<std::shared_ptr<CompiledNorm>> made =
        compileFor(*spec, *driver, *device);
    if (!made)
      return made.takeError();
    compiled = std::move(*made);
  }
  const KernelPlan &plan = compiled->plan;
  unsigned blocksPerSm = normBlocksPerSmOverride();
  if (!blocksPerSm)
    blocksPerSm = compiled->residentBlocksPerSm;
  unsigned grid = normGridSize(plan, rows, device->smCount, blocksPerSm);

  std::unique_ptr<Workspace> workspace;
  if (!plan.columnOutputs.empty()) {
    llvm::Expected<std::unique_ptr<Workspace>> allocated = Workspace::allocate(
        *driver, *device, stream, plan.partialFloats(grid) * sizeof(float));
    if (!allocated)
      return allocated.takeError();
    workspace = std::move(*allocated);
  }

  // Values first, then the pointer array into them; sized up front so that
  // nothing moves. Tensors in argument order, then hypers in argument order.
  llvm::SmallVector<uint64_t, 16> pointerValues(args.size());
  llvm::SmallVector<double, 16> hyperValues(args.size());
  llvm::SmallVector<void *, 20> params;
  for (auto [index, info, arg] : llvm::enumerate(argInfos, args)) {
    if (info.role == ArgRole::hyper)
      continue;
    pointerValues[index] = reinterpret_cast<uintptr_t>(arg.data);
    params.push_back(&pointerValues[index]);
  }
  for (auto [index, info, arg] : llvm::enumerate(argInfos, args)) {
    if (info.role != ArgRole::hyper)
      continue;
    hyperValues[index] = arg.value;
    params.push_back(&hyperValues[index]);
  }
  long long rowsParam = rows;
  params.push_back(&rowsParam);
  uint64_t partials = workspace ? workspace->get() : 0;
  params.push_back(&partials);

  // Hopper and later overlap a norm kernel's launch with the drain of the
  // kernel before it; the kernels wait for it before touching memory.
  const CudaDriver::LaunchMode launchMode =
      CudaDriver::kernelLaunchMode(device->computeMajor, normLiveKnobs());
  auto run = [&](CUfunction function, const std::string &kernelName,
                 unsigned blocks, unsigned blocksY, unsigned threads,
                 unsigned sharedBytes, void **kernelParams) -> llvm::Error {
    // The kernel's name and IR location, as text only for an error.
    auto where = [&](const char *what) {
      return (llvm::Twine(what) + " kernel '" + kernelName + "' (" +
              plan.rowKernel().location + ")")
          .str();
    };
    if (CUresult result =
            driver->launchKernel(function, blocks, blocksY, threads,
                                 sharedBytes, stream, kernelParams, launchMode))
      return driver->check(result, where("launch of"));
    if (syncEachKernel)
      if (CUresult result = driver->cuStreamSynchronize(stream))
        return driver->check(result, where("execution of"));
    return llvm::Error::success();
  };

  if (llvm::Error error =
          run(compiled->functionOf(plan.rowKernel()), plan.rowKernel().name,
              grid, 1, plan.rowKernel().blockSize, plan.rowKernel().sharedBytes,
              params.data()))
    return error;
  if (plan.columnOutputs.empty())
    return llvm::Error::success();

  int gridParam = static_cast<int>(grid);
  llvm::SmallVector<uint64_t, 8> outputValues;
  outputValues.reserve(plan.columnOutputs.size());
  for (unsigned index : plan.columnOutputs)
    outputValues.push_back(reinterpret_cast<uintptr_t>(args[index].data));
  llvm::SmallVector<void *, 10> finishParams = {&partials, &gridParam};
  for (uint64_t &value : outputValues)
    finishParams.push_back(&value);
  unsigned finishGrid =
      static_cast<unsigned>((cols + plan.finishKernel()->columnsPerBlock - 1) /
                            plan.finishKernel()->columnsPerBlock);
  // `workspace` goes out of scope after this: freed on `stream`, so after
  // the finish kernel has read it.
  return run(compiled->functionOf(*plan.finishKernel()),
             plan.finishKernel()->name, finishGrid,
             static_cast<unsigned>(plan.columnOutputs.size()),
             plan.finishKernel()->blockSize, 0, finishParams.data());
}

} // namespace kfuse
