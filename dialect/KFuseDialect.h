//===- KFuseDialect.h - kfuse dialect ---------------------------*- C++ -*-===//

#ifndef KFUSE_DIALECT_KFUSEDIALECT_H
#define KFUSE_DIALECT_KFUSEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "dialect/KFuseDialect.h.inc"
#include "dialect/KFuseEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/KFuseAttrs.h.inc"

#endif // KFUSE_DIALECT_KFUSEDIALECT_H
