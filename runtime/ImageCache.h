//===- ImageCache.h - NVRTC output through the on-disk cache ----*- C++ -*-===//
//
// The generated CUDA source of a kernel compiles to the same PTX and cubin
// every time for one NVRTC, option list and arch, so the image is kept on
// disk (runtime/DiskCache) under a key over exactly those inputs: the code
// generator's version, the source, the NVRTC version, its full command line
// (which names the exact arch) and the driver version (which JITs PTX-only
// images). A hit skips NVRTC; a miss compiles and stores. The disk is only
// an accelerator: an unusable cache directory, a read-only or full disk, or
// a corrupt entry is a miss (with a warning for the log), never an error.
//
// KFUSE_CACHE=0 turns the disk cache off for the process; KFUSE_CACHE_DIR
// and KFUSE_CACHE_MAX_BYTES configure it (DiskCacheOptions).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_IMAGECACHE_H
#define KFUSE_RUNTIME_IMAGECACHE_H

#include "runtime/DiskCache.h"
#include "runtime/NvJitLink.h"
#include "runtime/Nvrtc.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <optional>
#include <string>

namespace kfuse {

/// Where a compiled image came from.
enum class CacheSource { miss, hitMemory, hitDisk };

/// "miss", "hit-memory" or "hit-disk".
const char *cacheSourceName(CacheSource source);

struct CompiledImage {
  NvrtcResult nvrtc;
  std::string key; // imageCacheKey of the compile
  CacheSource source = CacheSource::miss;
  /// Why the disk did not help (unusable directory, failed store, corrupt
  /// entry), for the log; empty otherwise.
  std::string warning;
  /// Time spent in the disk cache (lookup, and the store on a miss).
  double diskMs = 0;
  /// Whether the disk cache holds the image under `key` (read or stored).
  bool onDisk = false;
};

/// Milliseconds since `start` (for compile timings).
double compileMsSince(std::chrono::steady_clock::time_point start);

/// The key of the image of `source` compiled with `options`, for a driver of
/// version `driverVersion` (0: none loaded). Lowercase hex SHA-256.
std::string imageCacheKey(llvm::StringRef source, const NvrtcOptions &options,
                          int driverVersion);

/// The process's disk cache, configured from the environment on first use;
/// null when KFUSE_CACHE=0 or no directory can be named (warned once).
DiskCache *processDiskCache();

/// `source` compiled with NVRTC (as compileWithNvrtc), read from `cache`
/// instead where it holds the image, and stored there after a compile.
/// `cache` may be null (no disk cache). Only NVRTC failures are errors; a
/// cache problem is logged as a warning (runtime/Log.h) and returned.
llvm::Expected<CompiledImage> compileImage(const std::string &source,
                                           const std::string &programName,
                                           const NvrtcOptions &options,
                                           int driverVersion, DiskCache *cache);

/// The image `cache` holds under `key`, verified and decoded, with a cubin
/// (`wantCubin`) or PTX; none where it holds no such entry, with `warning`
/// set where an entry was there but unusable.
std::optional<CompiledImage> lookupImage(DiskCache &cache, llvm::StringRef key,
                                         bool wantCubin, std::string &warning);

/// NvrtcResult::compiler of direct PTX that the driver compiles at load.
inline constexpr llvm::StringLiteral kDriverCompiler = "driver";

/// What a kernel plan compiles from: its CUDA source, and its direct PTX
/// where the emitter covers it (else why not).
struct PlanSources {
  const std::string &cuda;
  const std::string &ptx;
  const std::string &ptxUnsupported;
};

/// The key of the image of direct `ptx` for sm_`arch` made by `compiler`:
/// for the driver, the PTX alone (the image is the PTX); for nvJitLink, the
/// PTX, the toolkit's version (NVRTC's), nvJitLink's options and the driver.
std::string ptxImageCacheKey(llvm::StringRef ptx, int arch, int driverVersion,
                             PtxCompiler compiler);

/// A kernel plan's image: its direct PTX (mode auto or ptx, the PTX
/// present) for `compiler`, else its CUDA source through compileImage. A
/// PTX image for the driver is the PTX; one for nvJitLink is linked now,
/// where a failed link falls back to NVRTC with a warning in mode auto and
/// is the error in mode ptx, as is a plan without PTX. With
/// options.ptxOnly the PTX path returns the PTX unlinked.
llvm::Expected<CompiledImage>
compilePlanImage(const PlanSources &sources, const std::string &programName,
                 const NvrtcOptions &options, CodegenMode mode,
                 PtxCompiler compiler, int driverVersion, DiskCache *cache);

/// The bytes a disk entry holds for `nvrtc`, and back. Decoding fails on
/// anything that is not such an encoding (a cache entry from another
/// format passes DiskCache's checksum but not this).
std::string encodeImage(const NvrtcResult &nvrtc);
llvm::Expected<NvrtcResult> decodeImage(llvm::StringRef bytes);

} // namespace kfuse

#endif // KFUSE_RUNTIME_IMAGECACHE_H
