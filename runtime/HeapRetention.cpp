//===- HeapRetention.cpp - keep NVRTC's heap between compiles -------------===//

#include "runtime/HeapRetention.h"
#include "runtime/Log.h"

#include "llvm/ADT/StringRef.h"

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kfuse {

static constexpr size_t kDefaultPadMiB = 64;
static constexpr size_t kMaxPadMiB = 1024;

std::optional<size_t> chooseHeapPad(const char *kfuseValue,
                                    const char *mallocValue) {
  if (mallocValue && *mallocValue)
    return std::nullopt;
  size_t mebibytes = kDefaultPadMiB;
  if (kfuseValue) {
    llvm::StringRef text = llvm::StringRef(kfuseValue).trim();
    if (text.getAsInteger(10, mebibytes) || mebibytes > kMaxPadMiB) {
      logWarning("KFUSE_HEAP_PAD_MB='" + text +
                 "' is not a number of MiB from 0 to 1024; malloc is left "
                 "alone");
      return std::nullopt;
    }
  }
  if (mebibytes == 0)
    return std::nullopt;
  return mebibytes << 20;
}

size_t retainHeapBetweenCompiles() {
  static size_t applied = [] {
    std::optional<size_t> pad = chooseHeapPad(std::getenv("KFUSE_HEAP_PAD_MB"),
                                              std::getenv("MALLOC_TOP_PAD_"));
    if (!pad)
      return size_t(0);
#if defined(__GLIBC__)
    if (mallopt(M_TOP_PAD, static_cast<int>(*pad)) != 1) {
      logWarning("mallopt(M_TOP_PAD) failed; compiles fault their heap in "
                 "again each time");
      return size_t(0);
    }
    logInfo("keeping " + llvm::Twine(*pad >> 20) +
            " MiB of free heap between compiles (M_TOP_PAD)");
    return *pad;
#else
    return size_t(0);
#endif
  }();
  return applied;
}

} // namespace kfuse
