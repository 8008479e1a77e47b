//===- CApiSupport.h - shared plumbing of the C API files -------*- C++ -*-===//
//
// The C API is split by concern (CApi.cpp: updates and plans, CApiNorm.cpp:
// norms); all of them report through one per-thread message, the one
// kfuse_last_error() returns.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_CAPISUPPORT_H
#define KFUSE_RUNTIME_CAPISUPPORT_H

#include "runtime/Errors.h"
#include "runtime/ImageCache.h"
#include "runtime/kfuse.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <exception>
#include <string>

namespace kfuse::capi {

/// This thread's last failure message.
std::string &lastError();

kfuse_status statusOf(ErrorCode code);

inline kfuse_status fail(llvm::Error error) {
  auto [code, message] = takeMessage(std::move(error));
  lastError() = std::move(message);
  return statusOf(code);
}

inline kfuse_status fail(kfuse_status status, std::string message) {
  lastError() = std::move(message);
  return status;
}

inline kfuse_status succeed() {
  lastError().clear();
  return KFUSE_OK;
}

/// Runs `body`, turning any escaping C++ exception into KFUSE_INTERNAL: none
/// may cross the C boundary.
/// The C code of a cache source.
inline int32_t cacheSourceCode(CacheSource source) {
  switch (source) {
  case CacheSource::miss:
    return KFUSE_CACHE_MISS;
  case CacheSource::hitMemory:
    return KFUSE_CACHE_HIT_MEMORY;
  case CacheSource::hitDisk:
    return KFUSE_CACHE_HIT_DISK;
  }
  return KFUSE_CACHE_MISS;
}

/// Fills `info` (where given) for a compile that started at `start`: from
/// memory unless this call `built` the module, else from where its image
/// came (`source`).
inline void reportCompile(kfuse_compile_info *info, bool built,
                          CacheSource source,
                          std::chrono::steady_clock::time_point start) {
  if (!info)
    return;
  info->cache = cacheSourceCode(built ? source : CacheSource::hitMemory);
  info->ms = compileMsSince(start);
}

template <typename Body> kfuse_status guarded(Body body) {
  try {
    return body();
  } catch (const std::exception &exception) {
    return fail(KFUSE_INTERNAL,
                std::string("internal error: ") + exception.what());
  } catch (...) {
    return fail(KFUSE_INTERNAL, "internal error: unknown exception");
  }
}

} // namespace kfuse::capi

#endif // KFUSE_RUNTIME_CAPISUPPORT_H
