//===- Cache.h - kfuse cache stats|clear|path -------------------*- C++ -*-===//

#ifndef KFUSE_TOOLS_KFUSE_CACHE_H
#define KFUSE_TOOLS_KFUSE_CACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace kfuse {

/// Runs `kfuse cache <args>` on the on-disk kernel cache the environment
/// names (KFUSE_CACHE_DIR, else $XDG_CACHE_HOME/kfuse, else
/// $HOME/.cache/kfuse):
///
///   stats [--json]  the directory, entry count, bytes and bound
///   clear           removes every entry (other files stay)
///   path            prints the directory
///
/// `args` are the words after "cache". Returns the exit code; reports
/// problems as "kfuse: error: ..." on `err`.
int runCacheCommand(llvm::ArrayRef<std::string> args,
                    llvm::raw_ostream &out = llvm::outs(),
                    llvm::raw_ostream &err = llvm::errs());

} // namespace kfuse

#endif // KFUSE_TOOLS_KFUSE_CACHE_H
