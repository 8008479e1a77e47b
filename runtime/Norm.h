//===- Norm.h - compile and launch norm kernels on the GPU ------*- C++ -*-===//
//
// A Norm holds one parsed norm function (LayerNorm, RMSNorm, forward or
// backward). Each launch checks its arguments against the function's (count,
// element counts per shape, dtypes, pointers), derives the specialization
// they call for (a dtype per tensor, the row length, the alignment), looks
// the compiled module up in a process-wide cache before generating and
// compiling anything, and launches the row kernel, then the finish kernel of
// the column reductions (see codegen/KernelPlan.h for the launch ABI).
//
// Grid: one block per rowsPerBlock rows, and with column reductions at most
// one full wave (the blocks every SM holds at once; KFUSE_NORM_BLOCKS_PER_SM
// overrides the blocks per SM), each block looping over its rows: the grid
// depends only on rows, the kernel and the device, so column sums have the
// same bits run to run.
//
// Column-reduction workspace: partialFloats(grid) floats allocated with
// cuMemAllocFromPoolAsync on the launch stream and freed with cuMemFreeAsync
// right after the finish kernel, from a kfuse-private memory pool per device
// that keeps freed memory (release threshold: unlimited). Stream ordered, so
// launches on different streams never share a workspace; capturable (a CUDA
// graph gets its own allocation node); and, once the pool has grown, an
// allocation costs no system call. On a device without memory pools the
// runtime falls back to cuMemAlloc and a stream synchronization (not
// capturable).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_NORM_H
#define KFUSE_RUNTIME_NORM_H

#include "codegen/KernelPlan.h"
#include "runtime/CudaDriver.h"
#include "runtime/ImageCache.h"
#include "runtime/Jit.h"
#include "runtime/Kernel.h"
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

/// Checks `args` against the norm's `infos` for a launch over `rows` rows of
/// `cols` columns and derives the specialization they call for: count;
/// rows >= 0 and cols >= 1; each tensor's element count for its shape
/// (rows * cols, rows or cols), a storage dtype and a non-null pointer when
/// it has elements; hypers without a pointer. The alignment is the largest
/// power of two, at most 16, dividing every pointer and the row pitch (cols
/// times the element size) of every full tensor. Needs no GPU.
llvm::Expected<Specialization> specializeNormFor(llvm::ArrayRef<ArgInfo> infos,
                                                 llvm::ArrayRef<LaunchArg> args,
                                                 int64_t rows, int64_t cols);

/// The SHA-256 (hex) naming one compiled norm module: codegen version, IR,
/// specialization, arch, NVRTC version and options.
std::string normCompileCacheKey(llvm::StringRef irText,
                                const Specialization &spec,
                                llvm::StringRef arch);

/// Blocks per SM a row kernel with column reductions is capped at when
/// KFUSE_NORM_BLOCKS_PER_SM is unset: as many as the SM holds at once
/// (cuOccupancyMaxActiveBlocksPerMultiprocessor), so that the grid is one
/// full wave looping over the rows. Few blocks keep the partials (grid *
/// cols floats per reduction, written once and read once more by the
/// finish kernel) small beside the tensors; a full wave keeps enough loads
/// in flight.
/// KFUSE_NORM_BLOCKS_PER_SM where set to a positive number, else 0. Read
/// once per process, or at every call with KFUSE_NORM_LIVE_KNOBS=1 (for
/// measuring).
unsigned normBlocksPerSmOverride();

/// The row kernel's grid for `rows` rows: ceil(rows / rowsPerBlock), capped
/// by the plan's maxGridBlocks (when nonzero) and, with column reductions,
/// by smCount * blocksPerSm; at least 1. It depends only on the plan, rows
/// and the device, so column sums have the same bits run to run.
unsigned normGridSize(const KernelPlan &plan, int64_t rows, int smCount,
                      unsigned blocksPerSm);

/// A norm's plan compiled and loaded, with its row kernel's occupancy.
struct CompiledNorm : LoadedPlan {
  /// Row-kernel blocks an SM holds at once (at least 1).
  unsigned residentBlocksPerSm = 1;
};

/// The runtime object of a norm (a Kernel of kind norm).
class Norm : public KernelOfKind<Norm, KernelKind::norm> {
public:
  /// Whether a launch runs a finish kernel: the norm writes a column output
  /// (a sum over rows).
  bool hasColumnOutputs() const;
  /// Kernels one launch with rows > 0 runs: 1, or 2 with column outputs.
  unsigned launchesPerCall() const { return hasColumnOutputs() ? 2 : 1; }

  /// specializeNormFor on this norm's arguments.
  llvm::Expected<Specialization> specialize(llvm::ArrayRef<LaunchArg> args,
                                            int64_t rows, int64_t cols) const {
    return specializeNormFor(argInfos, args, rows, cols);
  }

  /// The module for `spec` in the current context, compiled on a cache miss.
  /// `*built` (where given) says whether this call made it (a miss or a
  /// disk hit) rather than finding it in memory. Thread-safe: compiles of
  /// different modules run alongside.
  llvm::Expected<std::shared_ptr<CompiledNorm>>
  compile(const Specialization &spec, bool *built = nullptr);

  /// compile() on a new thread, in the calling thread's CUDA context (none:
  /// the one compile() would take). This Norm must outlive the future.
  std::future<llvm::Expected<std::shared_ptr<CompiledNorm>>>
  compileAsync(Specialization spec);

  /// Validates `args`, then launches the row kernel and, with column
  /// reductions, the finish kernel on `stream`. Nothing is launched when
  /// validation fails. With rows == 0 nothing is compiled or launched, but
  /// column outputs (sums over no rows) are set to zero on `stream`.
  /// With `ready` given, launches only what runs without waiting on the
  /// compiler or the device (the module already loaded by this Norm, no
  /// KFUSE_SYNC_LAUNCH): otherwise sets *ready to false and launches
  /// nothing, so that a caller holding a lock can drop it and launch again.
  llvm::Error launch(llvm::ArrayRef<LaunchArg> args, int64_t rows, int64_t cols,
                     CUstream stream, bool *ready = nullptr);

private:
  friend class Kernel;
  Norm(llvm::StringRef text, llvm::StringRef sourceName,
       std::vector<ArgInfo> args)
      : KernelOfKind(text, sourceName, std::move(args)) {}
  /// compile() in `device`, which the caller looked up.
  llvm::Expected<std::shared_ptr<CompiledNorm>>
  compileFor(const Specialization &spec, CudaDriver &driver,
             const DeviceInfo &device, bool *built = nullptr);
  /// The module this Norm already loaded for `spec` in `context`, or null.
  std::shared_ptr<CompiledNorm> findLoaded(const Specialization &spec,
                                           CUcontext context);
  llvm::Expected<std::shared_ptr<CompiledNorm>>
  compileUncached(const Specialization &spec, CudaDriver &driver,
                  const DeviceInfo &device, bool *made);
  /// Generates, compiles (through the disk cache) and loads the module for
  /// `spec` under the process-wide cache key `key`.
  llvm::Expected<std::shared_ptr<CompiledNorm>>
  buildModule(const std::string &key, const Specialization &spec,
              CudaDriver &driver, const DeviceInfo &device);
  /// Modules already looked up, by specialization, layout knobs
  /// (normTuningKey) and context.
  LaunchEntries<Specialization, std::string, CompiledNorm> launchEntries;
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_NORM_H
