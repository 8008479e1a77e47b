//===- CudaPrelude.h - fixed device helpers of generated CUDA ---*- C++ -*-===//

#ifndef KFUSE_CODEGEN_CUDAPRELUDE_H
#define KFUSE_CODEGEN_CUDAPRELUDE_H

#include "llvm/ADT/StringRef.h"

#include <string>

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

/// The device functions kfuse_pow_f64, kfuse_exp_f64 and kfuse_log_f64
/// (codegen/UniformMath.h) that `source` calls: the double pow, exp and log
/// of uniform values, the same bits as the host's and the direct PTX's.
std::string getCudaUniformMathFunctions(llvm::StringRef source);

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAPRELUDE_H
