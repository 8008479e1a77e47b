//===- CacheKey.h - SHA-256 cache keys over fields --------------*- C++ -*-===//
//
// The keys of the in-memory module caches (Jit, Norm) and of the disk image
// cache: a SHA-256 over length-prefixed fields, so that no two field lists
// hash alike, as lowercase hex.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_CACHEKEY_H
#define KFUSE_RUNTIME_CACHEKEY_H

#include "runtime/Nvrtc.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <string>

namespace kfuse {

class CacheKeyHasher {
public:
  void field(llvm::StringRef text) {
    hash.update(std::to_string(text.size()) + ":");
    hash.update(text);
  }
  /// The NVRTC version and the command line NVRTC gets for `options` (it
  /// names the exact arch); the arch alone where this NVRTC rejects it.
  void nvrtcFields(const NvrtcOptions &options) {
    field(nvrtcVersion());
    if (llvm::Expected<int> number = validateArch(options.arch)) {
      for (const std::string &option : nvrtcCommandLine(options, *number))
        field(option);
    } else {
      llvm::consumeError(number.takeError());
      field(options.arch);
    }
  }
  std::string hex() { return llvm::toHex(hash.final(), /*LowerCase=*/true); }

private:
  llvm::SHA256 hash;
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_CACHEKEY_H
