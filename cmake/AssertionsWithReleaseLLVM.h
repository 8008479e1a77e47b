// Included first in every translation unit of a KFUSE_ASSERTIONS build
// (-include). kfuse's own code and the LLVM/MLIR templates it instantiates
// (cast<>, ArrayRef indexing...) keep their asserts, while the headers whose
// layout or symbols follow NDEBUG are read as the release libraries were
// built: statistics (NoopStatistic) and the debug-output macros.
#ifndef KFUSE_ASSERTIONS_WITH_RELEASE_LLVM_H
#define KFUSE_ASSERTIONS_WITH_RELEASE_LLVM_H
#ifndef NDEBUG
#define NDEBUG
#endif
#include "llvm/ADT/Statistic.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/DebugLog.h"
#undef NDEBUG
#include <cassert>
#endif
