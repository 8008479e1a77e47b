//===- Jit.h - compile and launch updates on the GPU ------------*- C++ -*-===//
//
// An Update holds one parsed update. Each launch checks its arguments, derives
// the specialization they call for (dtypes per role, alignment), and looks the
// compiled module up in a process-wide cache before generating, compiling
// with NVRTC and loading anything.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_JIT_H
#define KFUSE_RUNTIME_JIT_H

#include "codegen/KernelPlan.h"
#include "codegen/Pipeline.h"
#include "runtime/CudaDriver.h"
#include "runtime/ImageCache.h"
#include "runtime/Kernel.h"
#include "runtime/ModuleCache.h"
#include "runtime/Nvrtc.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kfuse {

/// One argument of a launch, in the update's argument order: a device
/// pointer with its element count and dtype for a tensor, `value` for a
/// hyperparameter (whose `data` must be null).
struct LaunchArg {
  const void *data = nullptr;
  int64_t numel = 0;
  DType dtype = DType::f32;
  double value = 0;
};

/// The largest power of two, at most 16, dividing every address.
unsigned commonAlignment(llvm::ArrayRef<const void *> pointers);

/// Checks what `arg` binds to `info`, a state at the tensor level: one f32
/// at a non-null address. `where` starts the message ("tensor group 3: ").
llvm::Error checkTensorLevelArg(const ArgInfo &info, const LaunchArg &arg,
                                const llvm::Twine &where = "");

/// Checks that `arg`, bound to the hyperparameter `info`, is a value, not a
/// pointer.
llvm::Error checkHyperArg(const ArgInfo &info, const LaunchArg &arg);

/// Sets `spec`'s storage dtypes from `args`, bound to the update's
/// `infos`: each tensor argument's own, and each role's first as the role's
/// (what arguments a pass adds, such as model copies, take).
void setStorageDTypes(Specialization &spec, llvm::ArrayRef<ArgInfo> infos,
                      llvm::ArrayRef<LaunchArg> args);

/// Checks `args` against the update's `infos` (count, non-null tensors of
/// one size, scalar hyperparameters) and derives the specialization they
/// call for, a storage dtype per tensor among them. Needs no GPU.
llvm::Expected<Specialization> specializeFor(llvm::ArrayRef<ArgInfo> infos,
                                             llvm::ArrayRef<LaunchArg> args,
                                             bool specializeNumel = false);

/// The SHA-256 (hex) naming one compiled module: codegen version, IR,
/// specialization, arch, NVRTC version and options, pipeline options, and
/// who compiles a direct PTX image (the runtime's driver; `kfuse compile`'s
/// cubins, nvJitLink).
std::string
compileCacheKey(llvm::StringRef irText, const Specialization &spec,
                llvm::StringRef arch, const PipelineOptions &options,
                PtxCompiler ptxCompiler = PtxCompiler::driverAtLoad);

/// NVRTC options for a device of `arch`: cubin when this NVRTC knows the
/// arch, else PTX for the newest older arch it knows (the driver JITs it).
llvm::Expected<NvrtcOptions> nvrtcOptionsForDevice(llvm::StringRef arch);

/// Blocks per SM the grid is capped at. Large: on the H200 a grid of one
/// vector per thread beat persistent grids of 4 to 32 blocks per SM by 3 to
/// 10 %, so the grid-stride loop runs only past 512 blocks per SM.
constexpr unsigned kDefaultBlocksPerSm = 512;

/// kDefaultBlocksPerSm, or KFUSE_BLOCKS_PER_SM where set (for measuring).
unsigned defaultBlocksPerSm();

/// Blocks for `n` elements: ceil(ceil(n / vectorWidth) / blockSize), capped
/// at smCount * blocksPerSm, at least 1.
unsigned gridSize(int64_t n, unsigned vectorWidth, unsigned blockSize,
                  int smCount, unsigned blocksPerSm = kDefaultBlocksPerSm);

/// A plan compiled and loaded into one context, of either kind of kernel.
struct LoadedPlan {
  std::string key;
  KernelPlan plan;
  NvrtcResult nvrtc;
  /// Whether NVRTC ran or the image came from the disk cache.
  CacheSource cacheSource = CacheSource::miss;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions; // one per plan.kernels entry

  /// The function of `kernel`, an entry of plan.kernels.
  CUfunction functionOf(const KernelInfo &kernel) const {
    return functions[&kernel - plan.kernels.data()];
  }
};

/// Loads `image`, the image of `loaded.plan` compiled for `arch`, into the
/// current context as `loaded.module`, and the function of each of its
/// kernels into `loaded.functions`, each checked to run its block size with
/// its dynamic shared memory. An image without a cubin is PTX that the
/// driver compiles now: its time joins `image.compileMs`, its ptxas report
/// `image.log` and `image.resources` (none where the driver's own JIT cache
/// held it). Under codegen auto, direct PTX the driver rejects is replaced
/// by NVRTC's image of the plan's CUDA source, with a warning. `name` names
/// the source in errors.
llvm::Error loadPlan(CudaDriver &driver, NvrtcResult &image,
                     llvm::StringRef name, llvm::StringRef arch,
                     LoadedPlan &loaded);

/// An update's plan compiled and loaded, with its temporaries.
struct CompiledUpdate : LoadedPlan {
  std::mutex temporariesMutex;
  std::vector<DeviceBuffer> temporaries; // plan.temporaries, grown on demand
  int64_t temporaryNumel = 0;
};

/// A kernel plan and its compiled image, not loaded.
struct PlannedImage {
  KernelPlan plan;
  CompiledImage image;
};

/// The plan and image of a kernel (an update or a norm) under compile key
/// `key`: both from the disk cache's plan entry where it holds them
/// (runtime/PlanCache), else `makePlan` for the direct PTX of sm_`ptxSm`
/// (0: none; chosen from `mode` and the device) and its image (NVRTC's
/// cubin, or the direct PTX for the driver to compile when it loads it),
/// the plan then stored beside the image.
/// KFUSE_DUMP_DIR receives the module (dumpModule).
llvm::Expected<PlannedImage> compilePlannedImage(
    const std::string &key, llvm::StringRef irText,
    const NvrtcOptions &nvrtcOptions, CodegenMode mode,
    llvm::function_ref<llvm::Expected<KernelPlan>(int ptxSm)> makePlan,
    llvm::function_ref<int()> driverVersion);

/// The runtime object of an update (a Kernel of kind update).
class Update : public KernelOfKind<Update, KernelKind::update> {
public:
  /// Specializes on the element count too (one module per size) instead of
  /// passing it at launch.
  void setSpecializeNumel(bool enable) { specializeNumel = enable; }

  /// Whether the update is 2-D (isMatrixUpdate): it runs as a plan, and
  /// interpret takes its rows and columns.
  bool isMatrix() const { return matrix; }
  /// The row length its argument types fix (getStaticRowLength), or 0: a
  /// plan then views every group's tensors as rows of it.
  int64_t rowLength() const { return fixedRowLength; }
  /// Fails for a 2-D update, which only a plan launches (its table gives
  /// each tensor's row length).
  llvm::Error checkSingleTensorLaunch() const;

  /// specializeFor on this update's arguments.
  llvm::Expected<Specialization>
  specialize(llvm::ArrayRef<LaunchArg> args) const {
    if (llvm::Error error = checkSingleTensorLaunch())
      return std::move(error);
    return specializeFor(argInfos, args, specializeNumel);
  }

  /// The module for `spec` in the current context, compiled on a cache miss.
  /// `*built` (where given) says whether this call made it (a miss or a
  /// disk hit) rather than finding it in memory. Thread-safe: compiles of
  /// different modules run alongside.
  llvm::Expected<std::shared_ptr<CompiledUpdate>>
  compile(const Specialization &spec, const PipelineOptions &options,
          bool *built = nullptr);

  /// The plan and image for `spec` on a device of `arch` ("sm_90"), through
  /// the disk cache, without a device or driver: nothing is loaded. A
  /// warm-up for another machine's arch, and the self-test of a build.
  llvm::Expected<PlannedImage> compileForArch(const Specialization &spec,
                                              const PipelineOptions &options,
                                              llvm::StringRef arch) const;
  /// Runs the update once on host memory in the reference interpreter, as
  /// a launch with `args` would on the GPU (f32 arithmetic, the storage
  /// dtypes of `args`), with fusion off. `args` are as for launch(), with
  /// host pointers; `tensors` holds each argument's values in doubles
  /// (indexed like `args`, empty for hypers, one value for a state at the
  /// tensor level), replaced where the update writes them. A 2-D update
  /// runs over `rows` x `cols` (each tensor holding what its level needs:
  /// rows * cols, rows per row, cols per column); a 1-D one takes 0 x 0
  /// and its tensors' length. No GPU needed: the oracle of the self-test.
  llvm::Error interpret(llvm::ArrayRef<LaunchArg> args, int64_t rows,
                        int64_t cols,
                        std::vector<std::vector<double>> &tensors) const;
  /// compile() on a new thread, in the calling thread's CUDA context (none:
  /// the one compile() would take). This Update must outlive the future.
  std::future<llvm::Expected<std::shared_ptr<CompiledUpdate>>>
  compileAsync(Specialization spec, PipelineOptions options);

  /// Validates `args`, then launches every kernel of the plan on `stream`
  /// in order. Nothing is launched when validation fails or numel is 0.
  llvm::Error launch(llvm::ArrayRef<LaunchArg> args, CUstream stream,
                     const PipelineOptions &options = {});

private:
  friend class Kernel;
  Update(llvm::StringRef text, llvm::StringRef sourceName,
         std::vector<ArgInfo> args, bool matrix, int64_t rowLength)
      : KernelOfKind(text, sourceName, std::move(args)), matrix(matrix),
        fixedRowLength(rowLength) {}
  llvm::Expected<std::shared_ptr<CompiledUpdate>>
  compileUncached(const Specialization &spec, const PipelineOptions &options,
                  CudaDriver &driver, const DeviceInfo &device, bool *made);
  /// Generates and compiles the plan and image for `spec` on `arch` under
  /// the cache key `key`, through the disk cache (plan entries included);
  /// `driverVersion` is part of the disk keys.
  llvm::Expected<PlannedImage>
  compileImage(const std::string &key, const Specialization &spec,
               const PipelineOptions &options, llvm::StringRef arch,
               llvm::function_ref<int()> driverVersion) const;
  /// compileImage, then loads the module for `spec` under the process-wide
  /// cache key `key`.
  llvm::Expected<std::shared_ptr<CompiledUpdate>>
  buildModule(const std::string &key, const Specialization &spec,
              const PipelineOptions &options, CudaDriver *driver,
              const DeviceInfo *device);
  bool matrix = false;
  int64_t fixedRowLength = 0;
  bool specializeNumel = false;
  /// Modules already looked up, by specialization, options and context.
  LaunchEntries<Specialization, PipelineOptions, CompiledUpdate> launchEntries;
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_JIT_H
