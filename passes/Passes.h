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
mlir::Type parseStorageType(mlir::MLIRContext *context, llvm::StringRef name);

} // namespace kfuse

#endif // KFUSE_PASSES_PASSES_H
