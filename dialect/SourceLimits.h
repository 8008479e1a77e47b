//===- SourceLimits.h - bounds on what the front end accepts ----*- C++ -*-===//
//
// kfuse parses IR inside training processes, so an input may not crash, hang
// or exhaust the process. MLIR's parser recurses once per level of nesting,
// and the code generator's and ptxas's time grows faster than the op count:
// these limits, far above any real optimizer or norm, turn such inputs into
// errors before they reach either (docs/Fuzzing.md).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_DIALECT_SOURCELIMITS_H
#define KFUSE_DIALECT_SOURCELIMITS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace kfuse {

/// The longest kernel source, in bytes.
constexpr size_t kMaxSourceBytes = size_t(1) << 20;
/// The deepest nesting of brackets ((), [], {}, <>) in a kernel source.
constexpr unsigned kMaxNestingDepth = 64;
/// The most operations in a kernel function, nested ones included.
constexpr int64_t kMaxKernelOps = 4096;

/// Fails when the main buffer of `sourceMgr` is over a source limit, with
/// the message rendered at its place in the buffer (FILE:LINE:COL: error:
/// and the source line). Brackets in string literals and comments do not
/// count, nor the `>` of `->`.
llvm::Error checkSourceLimits(const llvm::SourceMgr &sourceMgr);

/// The contents of the kernel source at `path` ("-": standard input), read
/// up to kMaxSourceBytes: a longer file (or an endless one, such as a
/// device) is an error, never an allocation of its size.
llvm::Expected<std::string> readKernelSource(llvm::StringRef path);

} // namespace kfuse

#endif // KFUSE_DIALECT_SOURCELIMITS_H
