//===- KFuseOps.h - kfuse operations ----------------------------*- C++ -*-===//

#ifndef KFUSE_DIALECT_KFUSEOPS_H
#define KFUSE_DIALECT_KFUSEOPS_H

#include "dialect/KFuseDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialect/KFuseOps.h.inc"

#endif // KFUSE_DIALECT_KFUSEOPS_H
