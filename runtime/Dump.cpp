//===- Dump.cpp - per-kernel dumps for KFUSE_DUMP -------------------------===//

#include "runtime/Dump.h"
#include "runtime/Log.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace kfuse {

DumpKinds parseDumpKinds(llvm::StringRef value) {
  DumpKinds kinds;
  llvm::SmallVector<llvm::StringRef> words;
  value.split(words, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef word : words) {
    word = word.trim();
    bool all = word == "all";
    kinds.ir |= all || word == "ir";
    kinds.cuda |= all || word == "cuda";
    kinds.ptx |= all || word == "ptx";
  }
  return kinds;
}

DumpKinds dumpKinds() {
  static const DumpKinds kinds = [] {
    const char *value = std::getenv("KFUSE_DUMP");
    return value ? parseDumpKinds(value) : DumpKinds();
  }();
  return kinds;
}

void dumpModule(llvm::StringRef name, llvm::StringRef key, llvm::StringRef ir,
                llvm::StringRef cuda, llvm::StringRef ptx) {
  DumpKinds kinds = dumpKinds();
  if (!kinds.any())
    return;
  const char *dirValue = std::getenv("KFUSE_DUMP_DIR");
  std::string dir = dirValue && *dirValue ? dirValue : "kfuse-dump";
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    logWarning("KFUSE_DUMP: cannot create " + dir + ": " + ec.message());
    return;
  }
  std::string stem = (name + "-" + key.take_front(12)).str();
  auto write = [&](llvm::StringRef extension, llvm::StringRef text) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, stem + extension);
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_Text);
    if (!ec) {
      out << text;
      out.close();
      ec = out.error();
    }
    if (ec)
      logWarning("KFUSE_DUMP: cannot write " + path + ": " + ec.message());
    else
      logInfo("dumped " + path);
  };
  if (kinds.ir)
    write(".mlir", ir);
  if (kinds.cuda)
    write(".cu", cuda);
  if (kinds.ptx)
    write(".ptx", ptx);
}

} // namespace kfuse
