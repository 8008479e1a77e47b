//===- DiagnosticErrors.h - MLIR errors as an llvm::Error -------*- C++ -*-===//
//
// Passes and code generators report errors as MLIR diagnostics at an IR
// location; the runtime, the C API and the CLI hand them on as one
// llvm::Error. This is the one place that makes one from the other.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_DIAGNOSTICERRORS_H
#define KFUSE_CODEGEN_DIAGNOSTICERRORS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace kfuse {

/// While alive, collects the error diagnostics of `context` as
/// FILE:LINE:COL: error: text, each followed by its notes (without the IR
/// dump MLIR attaches to op errors); it drops the other severities.
class DiagnosticErrors {
public:
  explicit DiagnosticErrors(mlir::MLIRContext *context);

  /// What was collected, or `fallback` when nothing was.
  llvm::Error takeError(llvm::StringRef fallback);

private:
  std::string text;
  llvm::raw_string_ostream stream;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace kfuse

#endif // KFUSE_CODEGEN_DIAGNOSTICERRORS_H
