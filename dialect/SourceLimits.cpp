//===- SourceLimits.cpp - bounds on what the front end accepts -----------===//

#include "dialect/SourceLimits.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace kfuse {

namespace {
/// Where a source is over a limit (a pointer into it), and why.
struct SourceLimitViolation {
  const char *where;
  std::string message;
};
} // namespace

static std::optional<SourceLimitViolation>
findSourceLimitViolation(llvm::StringRef text) {
  if (text.size() > kMaxSourceBytes)
    return SourceLimitViolation{text.data(),
                                ("the source is " + llvm::Twine(text.size()) +
                                 " bytes, longer than the " +
                                 llvm::Twine(kMaxSourceBytes) + " kfuse reads")
                                    .str()};
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    switch (c) {
    case '"':
      // A string literal, escapes included, up to its end (or the text's).
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '/':
      if (i + 1 < e && text[i + 1] == '/')
        while (i < e && text[i] != '\n')
          ++i;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (++depth > kMaxNestingDepth)
        return SourceLimitViolation{text.data() + i,
                                    ("brackets nest deeper than " +
                                     llvm::Twine(kMaxNestingDepth) +
                                     " levels, the most kfuse reads")
                                        .str()};
      break;
    case '>':
      if (i > 0 && text[i - 1] == '-')
        break;
      [[fallthrough]];
    case ')':
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

llvm::Error checkSourceLimits(const llvm::SourceMgr &sourceMgr) {
  std::optional<SourceLimitViolation> violation = findSourceLimitViolation(
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer());
  if (!violation)
    return llvm::Error::success();
  std::string text;
  llvm::raw_string_ostream stream(text);
  sourceMgr.PrintMessage(stream, llvm::SMLoc::getFromPointer(violation->where),
                         llvm::SourceMgr::DK_Error, violation->message);
  return llvm::createStringError(llvm::StringRef(text).rtrim());
}

llvm::Expected<std::string> readKernelSource(llvm::StringRef path) {
  namespace fs = llvm::sys::fs;
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError("cannot read '" + path + "': " + why);
  };
  fs::file_t file = fs::getStdinHandle();
  bool owned = path != "-";
  if (owned) {
    llvm::Expected<fs::file_t> opened = fs::openNativeFileForRead(path);
    if (!opened)
      return fail(llvm::toString(opened.takeError()));
    file = *opened;
  }
  std::string text;
  llvm::Error error = llvm::Error::success();
  char chunk[1 << 16];
  while (true) {
    llvm::Expected<size_t> read = fs::readNativeFile(file, chunk);
    if (!read) {
      error = fail(llvm::toString(read.takeError()));
      break;
    }
    if (*read == 0)
      break;
    text.append(chunk, *read);
    if (text.size() > kMaxSourceBytes) {
      error = fail("longer than " + llvm::Twine(kMaxSourceBytes) +
                   " bytes, the most kfuse reads");
      break;
    }
  }
  if (owned)
    (void)fs::closeFile(file);
  if (error)
    return std::move(error);
  return text;
}

} // namespace kfuse
