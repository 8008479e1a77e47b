//===- CheckNorm.cpp - kfuse check on norm functions ---------------------===//
//
// `kfuse check FILE` on a module whose function is marked kfuse.norm runs
// the norm in the interpreter, rounding as the GPU does, against float64
// over a fixed matrix: rows 1, 3 and 64 times columns 1, 1000, 1024, 5128
// and 12289 (a static row length replaces the columns), with the declared
// storage dtypes and, for an f32 norm, with emulated bf16 storage of the
// full-shape tensors (see NormCheckOptions). --seed and --tolerance apply;
// the update options (--numel, --steps, the dtypes, the pipeline flags) do
// not.
//
//===----------------------------------------------------------------------===//

#include "tools/kfuse/Commands.h"

#include "dialect/KFuseUpdate.h"
#include "interpreter/NormCheck.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace llvm;
using namespace mlir;

namespace kfuse {

std::optional<int> runNormCheckIfNorm(const CommonOptions &options,
                                      StringRef text, double tolerance,
                                      uint64_t seed) {
  std::unique_ptr<MLIRContext> context = createContext();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      MemoryBuffer::getMemBufferCopy(text, options.input), SMLoc());
  OwningOpRef<ModuleOp> module;
  {
    // A file that does not parse takes the update path, which reports its
    // errors as for any input.
    ScopedDiagnosticHandler quiet(context.get(),
                                  [](Diagnostic &) { return success(); });
    module = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(context.get()));
  }
  if (!module || findUpdate(*module))
    return std::nullopt;

  // Diagnostics as FILE:LINE:COL: error: ..., like the update path's,
  // without the op dump MLIR attaches by default.
  context->printOpOnDiagnostic(false);
  ScopedDiagnosticHandler report(context.get(), [](Diagnostic &diag) {
    errs() << formatLocation(diag.getLocation()) << ": "
           << (diag.getSeverity() == DiagnosticSeverity::Error ? "error"
                                                               : "note")
           << ": " << diag << "\n";
    for (Diagnostic &note : diag.getNotes())
      errs() << formatLocation(note.getLocation()) << ": note: " << note
             << "\n";
    return success();
  });
  func::FuncOp norm = findNorm(*module);
  if (!norm) {
    emitError(module->getLoc())
        << "no func.func with the 'kfuse.update' or 'kfuse.norm' attribute";
    return 1;
  }

  if (options.spec.paramDType != DType::f32 ||
      options.spec.gradDType != DType::f32 ||
      options.spec.stateDType != DType::f32)
    WithColor::warning(errs(), "kfuse")
        << "--param-dtype, --grad-dtype and --state-dtype do not apply to a "
           "norm; its check covers the declared dtypes and bf16 storage\n";

  NormCheckOptions checkOptions;
  checkOptions.seed = seed;
  checkOptions.toleranceOverride = tolerance;
  FailureOr<NormCheckReport> result = runNormCheck(norm, checkOptions);
  if (failed(result))
    return 1;
  outs() << "kfuse check: " << options.input << " (norm '" << norm.getSymName()
         << "', device rounding vs float64, seed " << seed << ")\n";
  printNormCheckReport(*result, outs());
  outs() << "gpu: skipped (norms are checked in the interpreter only)\n";
  return result->passed() ? 0 : 1;
}

} // namespace kfuse
