//===- kfuse-opt.cpp - mlir-opt for the kfuse dialect --------------------===//
//
// Registers only what kfuse uses: its dialect, arith, math, func, the kfuse
// passes and the generic cleanups (canonicalize, cse).
//
//===----------------------------------------------------------------------===//

#include "dialect/KFuseDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<kfuse::KFuseDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  kfuse::registerKFusePasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kfuse optimizer driver\n", registry));
}
