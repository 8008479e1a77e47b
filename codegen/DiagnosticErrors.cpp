//===- DiagnosticErrors.cpp - MLIR errors as an llvm::Error --------------===//

#include "codegen/DiagnosticErrors.h"

#include "dialect/KFuseUpdate.h"

using namespace mlir;

namespace kfuse {

DiagnosticErrors::DiagnosticErrors(MLIRContext *context)
    : stream(text), handler(context, [this](Diagnostic &diag) {
        if (diag.getSeverity() != DiagnosticSeverity::Error)
          return success(); // dropped: warnings are not errors
        stream << formatLocation(diag.getLocation()) << ": error: " << diag
               << "\n";
        for (Diagnostic &note : diag.getNotes())
          if (!llvm::StringRef(note.str()).starts_with("see current operation"))
            stream << formatLocation(note.getLocation()) << ": note: " << note
                   << "\n";
        return success();
      }) {}

llvm::Error DiagnosticErrors::takeError(llvm::StringRef fallback) {
  stream.flush();
  llvm::StringRef message = llvm::StringRef(text).rtrim();
  return llvm::createStringError(message.empty() ? fallback : message);
}

} // namespace kfuse
