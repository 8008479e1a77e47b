//===- Commands.h - the kfuse subcommands -----------------------*- C++ -*-===//

#ifndef KFUSE_TOOLS_KFUSE_COMMANDS_H
#define KFUSE_TOOLS_KFUSE_COMMANDS_H

#include "codegen/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kfuse {

/// Options every subcommand shares: the input and its specialization.
struct CommonOptions {
  std::string input;
  Specialization spec;
  PipelineOptions pipeline;
  std::string arch; // empty: the local GPU's, else sm_90
  /// The options given that apply to one kind of kernel only ("--cols"),
  /// refused when the source holds the other kind.
  std::vector<std::string> updateOnly, normOnly;
  /// --dtype NAME=DTYPE, in the order given: applied to spec.argDTypes by
  /// applyNamedDTypes once the update's arguments are known.
  std::vector<std::pair<std::string, DType>> namedDTypes;
};

/// Sets `options.spec.argDTypes` from `options.namedDTypes` over the
/// update's arguments `args` (the others by role); an unknown name, or one
/// of a hyper or a state at the tensor level, is an error.
llvm::Error applyNamedDTypes(CommonOptions &options,
                             llvm::ArrayRef<ArgInfo> args);

/// Fails when `options` name an option of the other kind than `kind`.
llvm::Error checkOptionsApply(const CommonOptions &options, KernelKind kind);

/// Reads the file named by `options.input` ("-" for stdin).
llvm::Expected<std::string> readInput(const CommonOptions &options);

/// The arch to compile for: the option, else the local GPU's, else sm_90.
std::string resolveArch(const std::string &requested);

/// What `kfuse compile` takes for a norm (an update refuses it).
struct NormCompileOptions {
  int64_t cols = 0;
  std::string inputDType = "f32";
  std::string weightDType; // empty: the input dtype
};

/// Parses the input once and compiles the update or norm it holds.
int runCompile(const CommonOptions &options, const NormCompileOptions &norm,
               const std::string &emit, const std::string &output, bool stats);
/// The most steps `kfuse check` runs.
constexpr int kMaxCheckSteps = 1000;
/// `kfuse check`; `numel` (dynamic shapes' element count) defaults to a
/// static shape's, else CheckOptions' default.
int runCheck(const CommonOptions &options, std::optional<int64_t> numel,
             int steps, double tolerance, uint64_t seed);
int runBench(const CommonOptions &options, int64_t numel, int iterations,
             int warmup);

/// Prints "kfuse: error: <message>" to stderr and returns 1.
int reportError(llvm::Error error);

/// While alive, prints the diagnostics of `context` to stderr as
/// FILE:LINE:COL: error: ... (and their notes), as the parse errors are.
class DiagnosticPrinter {
public:
  explicit DiagnosticPrinter(mlir::MLIRContext &context);

private:
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace kfuse

#endif // KFUSE_TOOLS_KFUSE_COMMANDS_H
