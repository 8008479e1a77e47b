//===- Dump.h - per-kernel dumps for KFUSE_DUMP -----------------*- C++ -*-===//
//
// KFUSE_DUMP=ir,cuda,ptx (any of them, comma-separated, or `all`) writes
// what the runtime compiles into KFUSE_DUMP_DIR (default ./kfuse-dump), one
// file per kernel module and kind: NAME-KEY.mlir (the IR as given), .cu (the
// generated source), .ptx, where KEY is the first 12 digits of the image's
// cache key (imageCacheKey), the same from the runtime and `kfuse compile`.
// A failed write is a warning, never an error.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_DUMP_H
#define KFUSE_RUNTIME_DUMP_H

#include "llvm/ADT/StringRef.h"

namespace kfuse {

/// What KFUSE_DUMP asks for (read once per process).
struct DumpKinds {
  bool ir = false, cuda = false, ptx = false;
  bool any() const { return ir || cuda || ptx; }
};
DumpKinds dumpKinds();

/// Parses a KFUSE_DUMP value; unknown words are ignored.
DumpKinds parseDumpKinds(llvm::StringRef value);

/// Writes the dumps KFUSE_DUMP asks for of one compiled module.
void dumpModule(llvm::StringRef name, llvm::StringRef key, llvm::StringRef ir,
                llvm::StringRef cuda, llvm::StringRef ptx);

} // namespace kfuse

#endif // KFUSE_RUNTIME_DUMP_H
