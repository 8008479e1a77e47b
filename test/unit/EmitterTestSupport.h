//===- EmitterTestSupport.h - shared fixture of the emitter tests -*- C++ -*-//

#ifndef KFUSE_TEST_UNIT_EMITTERTESTSUPPORT_H
#define KFUSE_TEST_UNIT_EMITTERTESTSUPPORT_H

#include "codegen/CudaEmitter.h"
#include "dialect/KFuseDialect.h"
#include "dialect/KFuseUpdate.h"
#include "runtime/Nvrtc.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kfuse::testing {

inline bool contains(const std::string &text, llvm::StringRef part) {
  return text.find(part.str()) != std::string::npos;
}

/// PTX (for compute_XY when `ptxOnly`, else through ptxas for sm_XY) of
/// `source`; a compile error fails the test.
inline std::string compileSource(const std::string &source,
                                 const std::string &name,
                                 const std::string &arch, bool ptxOnly) {
  NvrtcOptions options;
  options.arch = arch;
  options.ptxOnly = ptxOnly;
  llvm::Expected<NvrtcResult> result =
      compileWithNvrtc(source, name + ".cu", options);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError()) << "\nsource:\n"
                  << source;
    return "";
  }
  return result->ptx;
}

/// Compiles a plan for sm_80 and sm_90 and returns the compute_90 PTX.
inline std::string compileAll(const KernelPlan &plan) {
  compileSource(plan.source, plan.name, "sm_80", /*ptxOnly=*/false);
  compileSource(plan.source, plan.name, "sm_90", /*ptxOnly=*/false);
  return compileSource(plan.source, plan.name, "sm_90",
                       /*ptxOnly=*/true);
}

inline bool hasVectorLoad(const std::string &ptx) {
  return contains(ptx, "ld.global.v4") || contains(ptx, "ld.global.nc.v4");
}

/// Parses hand-written updates and runs the code generator on them.
class EmitterTest : public ::testing::Test {
protected:
  EmitterTest() {
    context.loadDialect<KFuseDialect, mlir::arith::ArithDialect,
                        mlir::math::MathDialect, mlir::func::FuncDialect>();
  }

  /// Parses `source` and emits its update; diagnostics go to `diagnostics`.
  mlir::FailureOr<KernelPlan> emit(llvm::StringRef source) {
    mlir::ScopedDiagnosticHandler handler(&context,
                                          [&](mlir::Diagnostic &diag) {
                                            diagnostics += diag.str() + "\n";
                                            return mlir::success();
                                          });
    modules.push_back(
        mlir::parseSourceString<mlir::ModuleOp>(source, &context));
    if (!modules.back()) {
      ADD_FAILURE() << "cannot parse:\n" << source.str() << diagnostics;
      return mlir::failure();
    }
    mlir::func::FuncOp update = findUpdate(*modules.back());
    if (!update) {
      ADD_FAILURE() << "no update in:\n" << source.str();
      return mlir::failure();
    }
    return emitCuda(update);
  }

  mlir::MLIRContext context;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::string diagnostics;
};

} // namespace kfuse::testing

#endif // KFUSE_TEST_UNIT_EMITTERTESTSUPPORT_H
