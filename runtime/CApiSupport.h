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
#include "runtime/Jit.h"
#include "runtime/Kernel.h"
#include "runtime/Norm.h"
#include "runtime/kfuse.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <exception>
#include <optional>
#include <string>

/// The handles of kfuse.h. An update or norm handle owns its object, or,
/// inside a kfuse_kernel (kfuse_kernel_update, kfuse_kernel_norm), views the
/// kernel's: destroying a view does nothing.
struct kfuse_update {
  std::unique_ptr<kfuse::Update> owned;
  kfuse::Update *update = nullptr;
};

struct kfuse_norm {
  std::unique_ptr<kfuse::Norm> owned;
  kfuse::Norm *norm = nullptr;
};

struct kfuse_kernel {
  std::unique_ptr<kfuse::Kernel> kernel;
  kfuse_update updateView; // update set when the kernel is an update
  kfuse_norm normView;     // norm set when it is a norm
};

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

/// The one body of the *_create and *_create_from_file functions: checks
/// `out` and `text` (IR text named `sourceName`, or with `fromFile` a path),
/// parses a kernel of `kind` (none: either) and stores the handle `wrap`
/// makes of it in *out.
template <typename Handle, typename Wrap>
kfuse_status createKernelHandle(const char *text, const char *sourceName,
                                bool fromFile, std::optional<KernelKind> kind,
                                Handle **out, Wrap wrap) {
  return guarded([&] {
    if (!out)
      return fail(KFUSE_INVALID_ARGUMENT, "out is null");
    *out = nullptr;
    if (!text)
      return fail(KFUSE_INVALID_ARGUMENT,
                  fromFile ? "path is null" : "ir_text is null");
    const char *name = sourceName                   ? sourceName
                       : kind == KernelKind::update ? "<update>"
                       : kind == KernelKind::norm   ? "<norm>"
                                                    : "<kernel>";
    llvm::Expected<std::unique_ptr<Kernel>> kernel =
        fromFile ? Kernel::createFromFile(text, kind)
                 : Kernel::create(text, name, kind);
    if (!kernel)
      return fail(kernel.takeError());
    *out = wrap(std::move(*kernel));
    return succeed();
  });
}

/// Fills `out` with argument `index` of `args` (of a kernel, an update or a
/// plan: the role and level as kfuse_arg_info has them); `owner` names what
/// has them in the out-of-range message.
inline kfuse_status describeArg(llvm::ArrayRef<ArgInfo> args, size_t index,
                                const char *owner, kfuse_arg_info *out) {
  if (index >= args.size())
    return fail(KFUSE_INVALID_ARGUMENT,
                "argument index " + std::to_string(index) +
                    " out of range: the " + owner + " has " +
                    std::to_string(args.size()) + " arguments");
  const ArgInfo &info = args[index];
  out->name = info.name.c_str();
  out->role = static_cast<int32_t>(info.role);
  out->has_default = info.defaultValue.has_value();
  out->default_value = info.defaultValue.value_or(0.0);
  out->level = static_cast<int32_t>(info.level);
  return succeed();
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
