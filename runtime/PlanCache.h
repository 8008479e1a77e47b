//===- PlanCache.h - compiled updates on disk, plan and image ---*- C++ -*-===//
//
// A disk hit of the image cache (runtime/ImageCache) still parses, lowers
// and emits the update, since its key is over the generated code: in a
// fresh process that is most of the hit (creating the first MLIR context
// alone takes about 2 ms). The plan cache keys one more entry on what
// produced that code instead: the update's compile key (its IR text, the
// specialization, the pipeline options, the arch, NVRTC and the codegen
// mode) and the compiler's own build (a hash of its sources,
// compilerBuildId). The entry holds the kernel plan, the key of its image
// and the driver version the image was keyed on; a later process with that
// driver reads both: `kfuse compile` then runs no MLIR at all, and the
// runtime only the parse that describes an update's arguments (Update::create),
// not the compile's own parse, passes and emit. (The driver is checked in the
// entry rather than hashed into its key so that a lookup need not wait for
// libcuda to load: a miss goes on to parse at once.)
//
// The image stays under its own key, verified as any image is; a plan entry
// whose image is gone, or that fails to decode, is a miss that the full
// compile replaces.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_PLANCACHE_H
#define KFUSE_RUNTIME_PLANCACHE_H

#include "codegen/KernelPlan.h"
#include "runtime/DiskCache.h"
#include "runtime/ImageCache.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace kfuse {

/// A hash of the sources of the dialect, the passes, the code generator and
/// this encoding, made at build time (cmake/HashSources.cmake).
const char *compilerBuildId();

/// The key of the plan entry for an update compiled under `compileKey`
/// (compileCacheKey).
std::string planEntryKey(llvm::StringRef compileKey);

/// The bytes of a plan entry, and back.
std::string encodePlanEntry(const KernelPlan &plan, llvm::StringRef imageKey,
                            int driverVersion);
struct PlanEntry {
  KernelPlan plan;
  std::string imageKey;
  int driverVersion = 0;
};
llvm::Expected<PlanEntry> decodePlanEntry(llvm::StringRef bytes);

/// A plan and its image, both read from the disk cache.
struct CachedPlan {
  KernelPlan plan;
  CompiledImage image;
};

/// The plan under `planKey` and its image (a cubin, or with !`wantCubin`
/// also direct PTX for the driver), where `cache` holds both, both verify
/// and the entry is for the driver `driverVersion` returns (asked only once
/// an entry is found); none otherwise, with `warning` set where an entry was
/// there but unusable.
std::optional<CachedPlan> lookupPlan(DiskCache &cache, llvm::StringRef planKey,
                                     llvm::function_ref<int()> driverVersion,
                                     std::string &warning, bool wantCubin);

/// Stores `plan` under `planKey` with the key of its image, which the image
/// cache holds already, for driver `driverVersion`. A failed store is a
/// warning for the log.
void storePlan(DiskCache &cache, llvm::StringRef planKey,
               const KernelPlan &plan, llvm::StringRef imageKey,
               int driverVersion);

} // namespace kfuse

#endif // KFUSE_RUNTIME_PLANCACHE_H
