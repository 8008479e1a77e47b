//===- CudaPrelude.h - fixed device helpers of generated CUDA ---*- C++ -*-===//

#ifndef KFUSE_CODEGEN_CUDAPRELUDE_H
#define KFUSE_CODEGEN_CUDAPRELUDE_H

#include "llvm/ADT/StringRef.h"

namespace kfuse {

/// Device helpers every generated source starts with: bf16/f16 storage
/// conversions, IEEE min/max, and correctly rounded division and square root
/// that compile faster than ptxas' own. Self-contained: NVRTC needs no
/// headers.
llvm::StringRef getCudaPrelude();

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAPRELUDE_H
