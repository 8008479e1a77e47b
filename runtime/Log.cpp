//===- Log.cpp - the runtime's log lines on stderr ------------------------===//

#include "runtime/Log.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <mutex>

namespace kfuse {

LogLevel logLevel() {
  static const LogLevel level = [] {
    const char *text = std::getenv("KFUSE_LOG");
    if (!text)
      return LogLevel::warning;
    return llvm::StringSwitch<LogLevel>(text)
        .Case("off", LogLevel::off)
        .Case("info", LogLevel::info)
        .Default(LogLevel::warning);
  }();
  return level;
}

static void writeLine(const llvm::Twine &line) {
  static std::mutex mutex;
  std::string text = line.str();
  text += "\n";
  std::lock_guard<std::mutex> lock(mutex);
  llvm::errs() << text;
  llvm::errs().flush();
}

void logWarning(const llvm::Twine &message) {
  if (logLevel() >= LogLevel::warning)
    writeLine("kfuse: warning: " + message);
}

void logInfo(const llvm::Twine &message) {
  if (logLevel() >= LogLevel::info)
    writeLine("kfuse: " + message);
}

} // namespace kfuse
