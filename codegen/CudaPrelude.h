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

/// Device helpers of `variance` reductions over rows: Chan et al.'s merge of
/// two parts' (count, mean, sum of squared deviations), its butterfly steps,
/// and a thread's part accumulated element by element (kfuse_moments).
llvm::StringRef getMomentsPrelude();

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAPRELUDE_H
