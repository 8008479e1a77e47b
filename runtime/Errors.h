//===- Errors.h - runtime errors that carry a category ----------*- C++ -*-===//
//
// The C API turns each failure into a kfuse_status code; the category travels
// with the message in the llvm::Error so no caller has to parse text.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_ERRORS_H
#define KFUSE_RUNTIME_ERRORS_H

#include "llvm/Support/Error.h"

namespace kfuse {

enum class ErrorCode {
  InvalidArgument,
  Parse,
  Compile,
  NoDriver,
  NoDevice,
  Launch,
  Internal,
};

class RuntimeError : public llvm::ErrorInfo<RuntimeError> {
public:
  static char ID;
  RuntimeError(ErrorCode code, std::string message)
      : code(code), message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  ErrorCode getCode() const { return code; }
  const std::string &getMessage() const { return message; }

private:
  ErrorCode code;
  std::string message;
};

inline llvm::Error makeError(ErrorCode code, const llvm::Twine &message) {
  return llvm::make_error<RuntimeError>(code, message.str());
}

/// Gives a plain error (from codegen or NVRTC) the category `code`; keeps the
/// category of an error that already has one.
llvm::Error withCode(llvm::Error error, ErrorCode code);

/// The message and category of `error`, consuming it (Internal when it
/// carries none).
std::pair<ErrorCode, std::string> takeMessage(llvm::Error error);

} // namespace kfuse

#endif // KFUSE_RUNTIME_ERRORS_H
