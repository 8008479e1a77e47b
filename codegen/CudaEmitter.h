//===- CudaEmitter.h - CUDA C++ for fused updates ---------------*- C++ -*-===//

#ifndef KFUSE_CODEGEN_CUDAEMITTER_H
#define KFUSE_CODEGEN_CUDAEMITTER_H

#include "codegen/CudaNorm.h"
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

/// Emits a norm's plan (KernelKind::norm, the launch ABI under "Norm plans"
/// in codegen/KernelPlan.h) from `update`, a specialized and fused 2-D
/// function of one phase over rows of a static length: its row kernel is
/// the register-row loop of 2-D updates, called with pointers and a row
/// count instead of a table, its layout chosen under `options`; a second
/// phase that stores column sums becomes the finish kernel. Anything else,
/// and what the loop does not generate, fails with a diagnostic.
mlir::FailureOr<KernelPlan> emitRowsCuda(mlir::func::FuncOp update,
                                         const NormEmitOptions &options);

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAEMITTER_H
