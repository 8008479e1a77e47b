//===- Commands.h - the kfuse subcommands -----------------------*- C++ -*-===//

#ifndef KFUSE_TOOLS_KFUSE_COMMANDS_H
#define KFUSE_TOOLS_KFUSE_COMMANDS_H

#include "codegen/Pipeline.h"

#include "llvm/Support/Error.h"

#include <string>

namespace kfuse {

/// Options every subcommand shares: the input and its specialization.
struct CommonOptions {
  std::string input;
  Specialization spec;
  PipelineOptions pipeline;
  std::string arch; // empty: the local GPU's, else sm_90
};

/// Reads the file named by `options.input` ("-" for stdin).
llvm::Expected<std::string> readInput(const CommonOptions &options);

/// The arch to compile for: the option, else the local GPU's, else sm_90.
std::string resolveArch(const std::string &requested);

/// What `kfuse compile` takes for a norm (an update ignores it).
struct NormCompileOptions {
  int64_t cols = 0;
  bool colsGiven = false; // --cols: the source must hold a norm
  std::string inputDType = "f32";
  std::string weightDType; // empty: the input dtype
};

/// Parses the input once and compiles the update or norm it holds.
int runCompile(const CommonOptions &options, const NormCompileOptions &norm,
               const std::string &emit, const std::string &output, bool stats);
int runCheck(const CommonOptions &options, int64_t numel, int steps,
             double tolerance, uint64_t seed);
int runBench(const CommonOptions &options, int64_t numel, int iterations,
             int warmup);

/// Prints "kfuse: error: <message>" to stderr and returns 1.
int reportError(llvm::Error error);

} // namespace kfuse

#endif // KFUSE_TOOLS_KFUSE_COMMANDS_H
