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

} // namespace kfuse

#endif // KFUSE_PASSES_PASSES_H
