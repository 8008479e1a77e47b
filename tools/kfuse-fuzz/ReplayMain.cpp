//===- ReplayMain.cpp - run the fuzz target over saved inputs -------------===//
//
// The driver of builds without libFuzzer (any compiler): every file named on
// the command line, and every file in each directory named, goes through
// LLVMFuzzerTestOneInput once. The regression corpus runs this way in every
// build; a crash fails the run, as it would under libFuzzer.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (!llvm::sys::fs::is_directory(argv[i])) {
      files.push_back(argv[i]);
      continue;
    }
    for (llvm::sys::fs::directory_iterator it(argv[i], ec), end;
         !ec && it != end; it.increment(ec))
      if (llvm::sys::fs::is_regular_file(it->path()))
        files.push_back(it->path());
    if (ec) {
      llvm::errs() << "kfuse-fuzz-replay: cannot list " << argv[i] << ": "
                   << ec.message() << "\n";
      return 1;
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << "kfuse-fuzz-replay: cannot read " << file << ": "
                   << buffer.getError().message() << "\n";
      return 1;
    }
    LLVMFuzzerTestOneInput(
        reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
        (*buffer)->getBufferSize());
  }
  llvm::outs() << "kfuse-fuzz-replay: " << files.size()
               << " inputs, no crash\n";
  return 0;
}
