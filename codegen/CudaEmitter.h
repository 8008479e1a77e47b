//===- CudaEmitter.h - CUDA C++ for fused updates ---------------*- C++ -*-===//

#ifndef KFUSE_CODEGEN_CUDAEMITTER_H
#define KFUSE_CODEGEN_CUDAEMITTER_H

#include "codegen/CudaOps.h"
#include "codegen/KernelPlan.h"
#include "codegen/PtxEmitter.h"
#include "dialect/KFuseOps.h"

namespace kfuse {

/// Emits one kernel per kfuse.fused region of a specialized, fused update.
/// Fails with a diagnostic at the offending op for anything it cannot emit.
/// With `ptxTarget`, also writes the kernels as PTX for that GPU into
/// KernelPlan::ptx where the direct PTX emitter covers them all, and why not
/// into KernelPlan::ptxUnsupported otherwise.
mlir::FailureOr<KernelPlan> emitCuda(mlir::func::FuncOp update,
                                     const PtxTarget *ptxTarget = nullptr);

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAEMITTER_H
