//===- Passes.h - kfuse passes ----------------------------------*- C++ -*-===//

#ifndef KFUSE_PASSES_PASSES_H
#define KFUSE_PASSES_PASSES_H

#include "dialect/KFuseOps.h"
#include "mlir/Pass/Pass.h"

namespace kfuse {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The MLIR element type of a storage dtype name (f32, bf16, f16 and their
/// long forms), or null if unknown: the specialization passes' dtype options.
/// The hyper kfuse-clip-grad-norm adds, and the name of its list reduction.
inline constexpr llvm::StringLiteral kMaxGradNormName = "max_grad_norm";
inline constexpr llvm::StringLiteral kGradNormSqName = "grad_norm_sq";
/// A hyper of an update that clips by its own rule (LAMB's): with
/// kfuse-clip-grad-norm, the norm computed in the plan instead.
inline constexpr llvm::StringLiteral kGlobalGradNormName = "global_grad_norm";

mlir::Type parseStorageType(mlir::MLIRContext *context, llvm::StringRef name);

/// Gives tensor argument `arg` the type `storageType` while the body keeps
/// computing in `computeType` (the same shape): reads, if any, go through one
/// kfuse.convert to the compute type at `builder`'s point, and every
/// kfuse.write of `arg` gets a convert back. Returns the converts made.
unsigned bindStorageType(mlir::OpBuilder &builder, mlir::BlockArgument arg,
                         mlir::RankedTensorType computeType,
                         mlir::RankedTensorType storageType);

} // namespace kfuse

#endif // KFUSE_PASSES_PASSES_H
