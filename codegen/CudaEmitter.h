//===- CudaEmitter.h - CUDA C++ for fused updates ---------------*- C++ -*-===//

#ifndef KFUSE_CODEGEN_CUDAEMITTER_H
#define KFUSE_CODEGEN_CUDAEMITTER_H

#include "codegen/KernelPlan.h"
#include "dialect/KFuseOps.h"

namespace kfuse {

/// Emits one kernel per kfuse.fused region of a specialized, fused update.
/// Fails with a diagnostic at the offending op for anything it cannot emit.
mlir::FailureOr<KernelPlan> emitCuda(mlir::func::FuncOp update);

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAEMITTER_H
