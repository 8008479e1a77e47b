//===- kfuse-opt.cpp - mlir-opt for the kfuse dialect --------------------===//
//
// Registers only what kfuse uses: its dialect, arith, math, func, the kfuse
// passes and the generic cleanups (canonicalize, cse). The input is read
// and held to kfuse's source limits (dialect/SourceLimits.h) before MLIR
// parses it, as every kfuse front end does.
//
//===----------------------------------------------------------------------===//

#include "dialect/KFuseDialect.h"
#include "dialect/SourceLimits.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<kfuse::KFuseDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  kfuse::registerKFusePasses();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "kfuse optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // These read no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  auto fail = [](llvm::Error error) {
    llvm::handleAllErrors(std::move(error), [](const llvm::ErrorInfoBase &e) {
      // A message rendered at its source location says "error:" already.
      if (llvm::StringRef(e.message()).contains(": error: "))
        llvm::errs() << e.message() << "\n";
      else
        llvm::WithColor::error(llvm::errs(), "kfuse-opt")
            << e.message() << "\n";
    });
    return 1;
  };
  llvm::Expected<std::string> text = kfuse::readKernelSource(inputFilename);
  if (!text)
    return fail(text.takeError());
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      llvm::MemoryBuffer::getMemBufferCopy(*text, inputFilename);
  {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(buffer->getMemBufferRef()),
        llvm::SMLoc());
    if (llvm::Error error = kfuse::checkSourceLimits(sourceMgr))
      return fail(std::move(error));
  }
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &message);
  if (!output)
    return fail(llvm::createStringError(message));
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(buffer), registry, config)))
    return 1;
  output->keep();
  return 0;
}
