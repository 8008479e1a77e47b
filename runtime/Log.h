//===- Log.h - the runtime's log lines on stderr ----------------*- C++ -*-===//
//
// KFUSE_LOG picks what the runtime writes to stderr: `off`, `warning` (the
// default: things that cost time but not correctness, such as an unusable
// kernel cache) or `info` (also one line per compile or cache hit, with
// where its time went). Read once per process; lines from many threads do
// not interleave.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_LOG_H
#define KFUSE_RUNTIME_LOG_H

#include "llvm/ADT/Twine.h"

namespace kfuse {

enum class LogLevel { off, warning, info };

/// The level KFUSE_LOG asks for.
LogLevel logLevel();

/// "kfuse: warning: MESSAGE" where the level allows.
void logWarning(const llvm::Twine &message);
/// "kfuse: MESSAGE" at level info.
void logInfo(const llvm::Twine &message);

} // namespace kfuse

#endif // KFUSE_RUNTIME_LOG_H
