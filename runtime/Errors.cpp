//===- Errors.cpp - runtime errors that carry a category ------------------===//

#include "runtime/Errors.h"

namespace kfuse {

char RuntimeError::ID = 0;

llvm::Error withCode(llvm::Error error, ErrorCode code) {
  if (!error)
    return error;
  std::string message;
  llvm::Error rest = llvm::handleErrors(
      std::move(error),
      [](std::unique_ptr<RuntimeError> typed) -> llvm::Error {
        return llvm::Error(std::move(typed));
      },
      [&](const llvm::ErrorInfoBase &other) -> llvm::Error {
        message += (message.empty() ? "" : "\n") + other.message();
        return llvm::Error::success();
      });
  if (rest)
    return rest;
  return makeError(code, message);
}

std::pair<ErrorCode, std::string> takeMessage(llvm::Error error) {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
  llvm::handleAllErrors(
      std::move(error),
      [&](const RuntimeError &typed) {
        code = typed.getCode();
        message += (message.empty() ? "" : "\n") + typed.getMessage();
      },
      [&](const llvm::ErrorInfoBase &other) {
        message += (message.empty() ? "" : "\n") + other.message();
      });
  return {code, message};
}

} // namespace kfuse
